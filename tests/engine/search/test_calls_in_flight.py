"""Several network calls in flight (``Searcher(calls_in_flight=N)``, the engine's default on a machine of
several cores: ``engine.network_loading.inference_plan``): the compiled trees still make exactly the
Python ``Tree``'s choices, node-limited searches stay deterministic (also when the search thread makes
queued calls itself, as with a network on the CPU), and a search cut by its clock with batches in
flight leaves every tree as it was before those batches."""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.games.base import GameState
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.searcher import Searcher, SearchResult
from engine.search.stoppers import StopReason
from engine.search.time_manager import TimeBudget
from engine.search.tree_factory import new_tree
from tests.engine.search.reference_tree import Tree
from tests.engine.search.test_compiled_go import PlaneHashEvaluator

NO_CLOCK = TimeBudget(None, None, False)

#: Positions: a game label and moves from its start.
POSITIONS = {
    "go9": ["E5", "C3", "G7", "D7"],
    "chess": ["e2e4", "c7c5", "g1f3", "d7d6"],
    "shogi": ["7g7f", "3c3d", "2g2f", "8c8d"],
}


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=3) as executor:
        yield executor


def _state(label: str) -> GameState[Any]:
    state = get_game(label).new_state()
    for text in POSITIONS[label]:
        state.push(state.parse_move(text))
    return state


def _search(
    tree: Any, evaluator: Evaluator, calls: int, pool: ThreadPoolExecutor, nodes: int
) -> SearchResult:
    searcher = Searcher(
        tree, evaluator, SearchLimits(nodes=nodes), NO_CLOCK, executor=pool, multipv=3, calls_in_flight=calls
    )
    return searcher.run()


@pytest.mark.parametrize("label", sorted(POSITIONS))
@pytest.mark.parametrize("calls", [2, 3])
def test_compiled_tree_makes_the_python_trees_choices(
    label: str, calls: int, pool: ThreadPoolExecutor
) -> None:
    state = _state(label)
    config = SearchConfig(batch_size=8)
    evaluator = PlaneHashEvaluator(state.info.policy_size, 5)
    python_tree = Tree(state.copy(), config)
    compiled = new_tree(state, config)
    assert not isinstance(compiled, Tree)
    for _ in range(2):  # and again on the same trees: nothing left under virtual loss
        expected = _search(python_tree, evaluator, calls, pool, 300)
        got = _search(compiled, evaluator, calls, pool, 300)
        assert got.best_move == expected.best_move
        assert got.info.nodes == expected.info.nodes == python_tree.playouts
        assert (got.info.depth, got.info.seldepth, got.info.evaluations) == (
            expected.info.depth,
            expected.info.seldepth,
            expected.info.evaluations,
        )
        assert got.info.lines == expected.info.lines
        np.testing.assert_array_equal(compiled.root_child_visits(), python_tree.root_child_visits())


@pytest.mark.parametrize("label", sorted(POSITIONS))
def test_deterministic_and_other_than_one_call(label: str, pool: ThreadPoolExecutor) -> None:
    """Two searches with two calls in flight visit alike; with one call the leaves differ (the second
    batch is chosen with the first one's leaves still under virtual loss), the node count does not."""
    state = _state(label)
    config = SearchConfig(batch_size=16)
    evaluator = PlaneHashEvaluator(state.info.policy_size, 7)
    runs = []
    for calls in (2, 2, 1):
        tree = new_tree(state, config)
        result = _search(tree, evaluator, calls, pool, 400)
        runs.append((result.info.nodes, tree.root_child_visits().tolist()))
    assert runs[0] == runs[1]
    assert runs[0][0] == runs[2][0] == 400


class CoreSharingEvaluator(PlaneHashEvaluator):
    """:class:`PlaneHashEvaluator` after a sleep of ``delay_s`` (the GIL released, as onnxruntime's
    calls), counting the calls made on each thread; ``shares_cores`` as asked."""

    def __init__(self, policy_size: int, seed: int, delay_s: float, shares_cores: bool) -> None:
        super().__init__(policy_size, seed)
        self.delay_s = delay_s
        self.shares_cores = shares_cores
        self.threads: collections.Counter[int] = collections.Counter()

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        time.sleep(self.delay_s)
        self.threads[threading.get_ident()] += 1
        return super().evaluate(planes, legal)


@pytest.mark.parametrize("label", sorted(POSITIONS))
def test_the_search_thread_makes_queued_calls_and_searches_alike(label: str) -> None:
    """With one helper and two calls in flight, a network that shares the search's cores has some calls
    made on the search thread (queued behind the one running), and the search visits exactly as
    with every call made by the helper."""
    state = _state(label)
    config = SearchConfig(batch_size=8)
    runs = []
    for shares in (True, False):
        evaluator = CoreSharingEvaluator(state.info.policy_size, 7, 0.004, shares)
        tree = new_tree(state, config)
        with ThreadPoolExecutor(max_workers=1) as helper:
            result = _search(tree, evaluator, 2, helper, 300)
        here = evaluator.threads[threading.get_ident()]
        assert (here > 0) == shares, evaluator.threads
        runs.append(
            (result.best_move, result.info.nodes, result.info.lines, tree.root_child_visits().tolist())
        )
    assert runs[0] == runs[1]


class SlowEvaluator(Evaluator):
    """Uniform priors and value 0 after ``delay_s`` (a sleep: the GIL is released, as onnxruntime's)."""

    def __init__(self, delay_s: float, shares_cores: bool = False) -> None:
        self.delay_s = delay_s
        self.shares_cores = shares_cores

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        time.sleep(self.delay_s)
        return [Evaluation(np.full(len(x), 1.0 / max(1, len(x)), np.float32), 0.0) for x in legal]


@pytest.mark.parametrize("label", sorted(POSITIONS))
@pytest.mark.parametrize("shares_cores", [False, True], ids=["helpers", "search thread too"])
def test_a_clock_cut_drops_every_batch_in_flight(
    label: str, shares_cores: bool, pool: ThreadPoolExecutor
) -> None:
    """A hard limit reached with three calls in flight: a move comes out on time and the dropped
    batches leave no visit behind (the root's children hold every playout but the root's own, then and
    after a node-limited search of the same tree); also when the search thread makes calls itself."""
    state = _state(label)
    tree = new_tree(state, SearchConfig(batch_size=4))
    searcher = Searcher(
        tree,
        SlowEvaluator(0.03, shares_cores),
        SearchLimits(movetime_ms=150),
        TimeBudget(150, 150, False),
        executor=pool,
        calls_in_flight=3,
    )
    start = time.perf_counter()
    result = searcher.run()
    assert time.perf_counter() - start < 1.0
    assert result.stop_reason is StopReason.TIME and result.best_move is not None
    before = tree.playouts
    assert int(tree.root_child_visits().sum()) == before - 1  # every playout but the root's own
    after = Searcher(tree, SlowEvaluator(0.0), SearchLimits(nodes=40), NO_CLOCK, executor=pool).run()
    assert after.info.nodes == 40 and int(tree.root_child_visits().sum()) == before - 1 + 40
