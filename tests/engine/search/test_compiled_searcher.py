"""The engine's search loop (engine/search/searcher.py) on the compiled Go tree makes the choices it makes
on the Python ``Tree``: at fixed node counts with a fixed evaluator, the same best move, root visit
counts, value sums, info lines and counters, with the network call pipelined on a worker thread; also
after tree reuse (``advance``), with ``searchmoves``, with root Dirichlet noise, after a cancelled
batch, and through ``Session`` with the shipped 9x9 network (the dense masked softmax included).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from engine.evaluator import Evaluator
from engine.games.go import GoRules, GoState
from engine.inference import UniformEvaluator
from engine.options import EngineOptions
from engine.search.compiled_go import CompiledGoTree, warm_up
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.searcher import Searcher, SearchResult
from engine.search.time_manager import TimeBudget
from engine.search.tree_factory import new_tree
from engine.search.tree_protocol import SearchTree
from engine.session import Session
from tests.engine.search.one_batch import GoTree
from tests.engine.search.reference_tree import Tree
from tests.engine.search.test_compiled_go import PlaneHashEvaluator
from weights import default_network

NO_CLOCK = TimeBudget(None, None, False)


@pytest.fixture(scope="module")
def executor() -> Iterator[ThreadPoolExecutor]:
    warm_up()
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield pool


def _position(size: int, plies: int, seed: int) -> GoState:
    """``plies`` random board moves (no pass) from the empty board."""
    rng = random.Random(seed)
    state = GoState(GoRules(board_size=size))
    for _ in range(plies):
        state.push(rng.choice(state.legal_moves()[:-1]))
    return state


def _search(
    tree: SearchTree[Any],
    evaluator: Evaluator,
    limits: SearchLimits,
    executor: ThreadPoolExecutor | None,
    multipv: int = 3,
) -> SearchResult:
    return Searcher(tree, evaluator, limits, NO_CLOCK, executor=executor, multipv=multipv).run()


def _assert_same(tree: Tree, compiled: CompiledGoTree, got: SearchResult, expected: SearchResult) -> None:
    """Same move, same root statistics, same report (lines, depth, counters)."""
    assert got.best_move == expected.best_move and got.ponder_move == expected.ponder_move
    assert got.stop_reason == expected.stop_reason
    moves, visits = compiled.root_visits()
    expected_moves, expected_visits = tree.root_visits()
    assert moves.tolist() == list(expected_moves)
    np.testing.assert_array_equal(visits, expected_visits)
    np.testing.assert_array_equal(compiled.root_values(), tree.root.child_w)
    np.testing.assert_array_equal(compiled.root_priors(), tree.root.prior)
    a, b = got.info, expected.info
    assert (a.depth, a.seldepth, a.nodes, a.evaluations) == (b.depth, b.seldepth, b.nodes, b.evaluations)
    assert a.lines == b.lines


@pytest.mark.parametrize(("plies", "seed", "batch"), [(0, 0, 8), (12, 1, 16), (30, 2, 4), (45, 3, 8)])
def test_searcher_same_choices_as_tree(
    executor: ThreadPoolExecutor, plies: int, seed: int, batch: int
) -> None:
    state = _position(9, plies, seed)
    config = SearchConfig(batch_size=batch)
    evaluator = PlaneHashEvaluator(82, seed)
    limits = SearchLimits(nodes=400)
    tree, compiled = Tree(state.copy(), config), GoTree(state, config)
    expected = _search(tree, evaluator, limits, executor)
    got = _search(compiled, evaluator, limits, executor)
    _assert_same(tree, compiled, got, expected)
    assert got.info.nodes == 400 and len(got.info.lines) == 3


def test_tree_reuse_same_as_tree(executor: ThreadPoolExecutor) -> None:
    """Search, play the best move and the reply, search again on the kept subtree: same as ``Tree``."""
    state = _position(9, 10, 4)
    config = SearchConfig(batch_size=8)
    evaluator = PlaneHashEvaluator(82, 4)
    tree, compiled = Tree(state.copy(), config), GoTree(state, config)
    for _ in range(3):
        expected = _search(tree, evaluator, SearchLimits(nodes=300), executor)
        got = _search(compiled, evaluator, SearchLimits(nodes=300), executor)
        _assert_same(tree, compiled, got, expected)
        reply = tree.principal_variation()[1]
        for move in (expected.best_move, reply):
            kept = tree.root.children[tree.root.moves.index(move)]
            tree.advance(move)
            compiled.advance(move)
            assert compiled.root_expanded == tree.root_expanded
            if kept is not None and kept.expanded:
                assert compiled.node_count == _subtree_size(kept)
                np.testing.assert_array_equal(compiled.root_child_visits(), tree.root_child_visits())


def _subtree_size(node: Any) -> int:
    return 1 + sum(_subtree_size(child) for child in node.children if child is not None)


def test_advance_to_a_fresh_root() -> None:
    """A move whose child was never expanded starts a fresh tree on the new position."""
    state = _position(9, 6, 5)
    compiled = GoTree(state, SearchConfig())
    _search(compiled, UniformEvaluator(state.info), SearchLimits(nodes=50), None)
    unvisited = next(int(m) for m, n in zip(*compiled.root_visits(), strict=True) if n == 0)
    compiled.advance(unvisited)
    state.push(unvisited)
    assert compiled.node_count == 1 and not compiled.root_expanded
    fresh = GoTree(state, SearchConfig())
    for t in (compiled, fresh):
        _search(t, UniformEvaluator(state.info), SearchLimits(nodes=60), None)
    np.testing.assert_array_equal(compiled.root_visits()[1], fresh.root_visits()[1])


def test_searchmoves_same_as_tree(executor: ThreadPoolExecutor) -> None:
    state = _position(9, 8, 6)
    allowed = tuple(state.legal_moves()[5:9])
    config = SearchConfig(batch_size=8)
    evaluator = PlaneHashEvaluator(82, 6)
    limits = SearchLimits(nodes=200, searchmoves=allowed)
    tree, compiled = Tree(state.copy(), config), GoTree(state, config)
    expected = _search(tree, evaluator, limits, executor)
    got = _search(compiled, evaluator, limits, executor)
    _assert_same(tree, compiled, got, expected)
    assert got.best_move in allowed
    moves, visits = compiled.root_visits()
    assert visits[~np.isin(moves, allowed)].sum() == 0


def test_root_noise_same_as_tree(executor: ThreadPoolExecutor) -> None:
    """Dirichlet noise at the root: the same draws from the same seed, the same search (also at the
    kept root after ``advance``)."""
    state = _position(9, 4, 7)
    config = SearchConfig(batch_size=8, dirichlet_alpha=0.15, dirichlet_epsilon=0.25, seed=11)
    evaluator = PlaneHashEvaluator(82, 7)
    tree, compiled = Tree(state.copy(), config), GoTree(state, config)
    for _ in range(2):
        expected = _search(tree, evaluator, SearchLimits(nodes=300), executor)
        got = _search(compiled, evaluator, SearchLimits(nodes=300), executor)
        _assert_same(tree, compiled, got, expected)
        tree.advance(expected.best_move)
        compiled.advance(expected.best_move)


def test_cancelled_batch_leaves_the_tree_as_before() -> None:
    """``cancel_batch`` takes the virtual loss back (as ``Tree.cancel``); two batches may be out."""
    state = _position(9, 10, 8)
    config = SearchConfig(batch_size=8)
    evaluator = PlaneHashEvaluator(82, 8)
    tree, compiled = Tree(state.copy(), config), GoTree(state, config)
    _search(tree, evaluator, SearchLimits(nodes=100), None)
    _search(compiled, evaluator, SearchLimits(nodes=100), None)
    before = compiled.root_visits()[1], compiled.root_values()
    first, second = compiled.select_batch(8), compiled.select_batch(8)
    assert len(first) == 8 and len(second) > 0
    assert not np.array_equal(compiled.root_visits()[1], before[0])
    compiled.cancel_batch(second)
    compiled.cancel_batch(first)
    np.testing.assert_array_equal(compiled.root_visits()[1], before[0])
    np.testing.assert_array_equal(compiled.root_values(), before[1])
    expected = _search(tree, evaluator, SearchLimits(nodes=200), None)
    got = _search(compiled, evaluator, SearchLimits(nodes=200), None)
    _assert_same(tree, compiled, got, expected)


def test_new_tree_picks_the_compiled_tree_for_go() -> None:
    go = GoState(GoRules(board_size=9))
    assert isinstance(new_tree(go, SearchConfig()), CompiledGoTree)
    assert isinstance(new_tree(go, SearchConfig(forced_playouts=2.0)), CompiledGoTree)


def test_new_tree_picks_the_compiled_tree_for_chess_and_shogi() -> None:
    from engine.games import get_game
    from engine.search.compiled_chess import CompiledChessTree
    from engine.search.compiled_shogi import CompiledShogiTree

    chess_state = get_game("chess").new_state()
    assert isinstance(new_tree(chess_state, SearchConfig()), CompiledChessTree)
    shogi_state = get_game("shogi").new_state()
    assert isinstance(new_tree(shogi_state, SearchConfig()), CompiledShogiTree)


@pytest.mark.skipif(default_network("go9") is None, reason="no shipped 9x9 network")
@pytest.mark.parametrize("moves", [[], ["E5", "C3", "G7"]])
def test_session_plays_the_same_with_either_tree(moves: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Through ``Session`` with the shipped network, the compiled tree and the reference tree (put in
    the session's place): the same move and the same report at a fixed node count, the second search
    reusing the tree."""
    import engine.session

    compiled_trees = engine.session.new_tree
    results = []
    for compiled in (True, False):
        tree_maker = (
            compiled_trees
            if compiled
            else lambda state, config, quantization=None: Tree(state.copy(), config)
        )
        monkeypatch.setattr(engine.session, "new_tree", tree_maker)
        options = EngineOptions(threads=1, batch_size=8)
        session = Session("go9", options)
        try:
            assert session.wait_for_compiled_search(120)
            session.set_position(None, moves)
            first = session.search(SearchLimits(nodes=200))
            assert first.best_move is not None
            session.push_move(first.best_move)
            second = session.search(SearchLimits(nodes=200))
            results.append((type(session._tree).__name__, first, second))
        finally:
            session.close()
    (kind_a, first_a, second_a), (kind_b, first_b, second_b) = results
    assert (kind_a, kind_b) == ("CompiledGoTree", "Tree")
    for a, b in ((first_a, first_b), (second_a, second_b)):
        assert a.best_move == b.best_move
        assert a.info.lines == b.info.lines
        assert (a.info.nodes, a.info.evaluations, a.info.depth) == (
            b.info.nodes,
            b.info.evaluations,
            b.info.depth,
        )
