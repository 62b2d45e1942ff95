"""engine.search.many_trees: one network call for the batches of many trees, each tree backed up with
its own share, as if each had been evaluated alone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from engine.evaluator import rows_of_evaluations
from engine.games import get_game
from engine.inference import UniformEvaluator
from engine.search.config import SearchConfig
from engine.search.many_trees import ManyTreesBatch
from engine.search.tree_factory import new_tree
from tests.engine.search.reference_tree import Tree

from .evaluators import stone_balance


class CountingDense(UniformEvaluator):
    """Uniform priors, a value from the stone balance (through ``evaluate``), and a log of the calls'
    sizes on both paths."""

    def __init__(self, info: Any) -> None:
        super().__init__(info)
        self._value = stone_balance(info.board_size)
        self.calls: list[int] = []

    def evaluate(self, planes, legal):
        self.calls.append(len(legal))
        out = super().evaluate(planes, legal)
        values = self._value.evaluate(planes, legal)
        return [type(e)(e.priors, v.value) for e, v in zip(out, values, strict=True)]

    def evaluate_dense(self, planes, legal):
        lists = legal.lists()
        return rows_of_evaluations(self.evaluate(planes, lists), lists, legal.indices.shape)


def _positions(moves_list: list[list[str]]) -> list[Any]:
    game = get_game("go", board_size=5)
    states = []
    for moves in moves_list:
        state = game.new_state()
        for text in moves:
            state.push(state.parse_move(text))
        states.append(state)
    return states


OPENINGS = [[], ["c3"], ["c3", "b2", "d4"], ["a1", "e5"]]


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("threaded", [False, True])
def test_one_call_for_many_trees_backs_each_up_as_alone(compiled: bool, threaded: bool) -> None:
    # the compiled trees and the reference tree (whose batches are the same dense form)
    config = SearchConfig(seed=1)
    states = _positions(OPENINGS)

    def tree(state: Any) -> Any:
        return new_tree(state, config) if compiled else Tree(state.copy(), config)

    together = [tree(s) for s in states]
    alone = [tree(s) for s in states]
    info = get_game("go", board_size=5).info
    shared, single = CountingDense(info), CountingDense(info)
    pool = ThreadPoolExecutor(1) if threaded else None
    for _ in range(6):
        parts = [(t, t.select_batch(3)) for t in together]
        call = ManyTreesBatch(parts, shared, pool)
        assert call.in_flight == threaded and call.size == sum(len(b) for _, b in parts)
        call.backup()
        for t in alone:
            batch = t.select_batch(3)
            ManyTreesBatch([(t, batch)], single).backup()
    if pool is not None:
        pool.shutdown()
    assert len(shared.calls) == 6 and len(single.calls) == 6 * len(states)
    assert sum(shared.calls) == sum(single.calls)
    for a, b in zip(together, alone, strict=True):
        assert a.playouts == b.playouts > 0
        assert np.array_equal(a.root_child_visits(), b.root_child_visits())
        assert a.root_q == pytest.approx(b.root_q)
        assert a.best_move() == b.best_move()


def test_one_call_takes_the_trees_dense_batches_only() -> None:
    config = SearchConfig(seed=1)
    states = _positions(OPENINGS[:2])
    compiled_tree = new_tree(states[0], config)
    reference = Tree(states[1].copy(), config)
    ev = UniformEvaluator(get_game("go", board_size=5).info)
    # a compiled tree's batch and the reference tree's share one call
    call = ManyTreesBatch(
        [(compiled_tree, compiled_tree.select_batch(2)), (reference, reference.select_batch(2))], ev
    )
    call.backup()
    assert compiled_tree.playouts == reference.playouts == 1  # each root evaluated once (the rest collided)
    with pytest.raises(ValueError, match="dense batches"):
        ManyTreesBatch([(reference, [object()])], ev)  # type: ignore[list-item]


def test_consecutive_shared_rows_go_to_the_network_without_a_copy() -> None:
    from engine.evaluator import LegalRows
    from engine.search.batch import DenseBatch
    from engine.search.many_trees import SharedRows

    info = get_game("go", board_size=3).info  # planes (17, 3, 3), policy 10
    got: list[tuple[np.ndarray, LegalRows]] = []

    class Recording(UniformEvaluator):
        def infer_dense(self, planes, legal):
            got.append((planes, legal))
            return super().infer_dense(planes, legal)

    def call(batches: list[DenseBatch], shared: SharedRows) -> tuple[np.ndarray, LegalRows]:
        ManyTreesBatch([(None, b) for b in batches], Recording(info), shared=shared)  # type: ignore[misc]
        return got[-1]

    rows = SharedRows(10, info.input_shape)
    parts = []
    for k in (3, 1, 4):
        taken = rows.take(k, 5, 2, 3)
        assert taken is not None
        planes, indices, counts = taken["planes"], taken["indices"], taken["nlegal"]
        assert taken["marks"].shape == (k, 2) and taken["flags"].shape == (k, 3)
        planes[...] = np.arange(rows.used, rows.used + k, dtype=np.float32)[:, None, None, None]
        indices[:, 0] = k
        counts[:] = 1
        parts.append(DenseBatch(planes, LegalRows(indices, counts)))
        rows.advance(k)
    assert rows.take(3, 5, 2, 3) is None  # 8 of 10 rows used
    assert rows.take(1, 7) is None  # rows of another game while some are used
    joined, legal = call(parts, rows)
    assert np.shares_memory(joined, rows.planes) and joined.shape == (8, *info.input_shape)
    np.testing.assert_array_equal(joined, np.concatenate([b.planes for b in parts]))
    assert np.shares_memory(legal.indices, rows.index) and legal.indices[:, 0].tolist() == [
        3,
        3,
        3,
        1,
        4,
        4,
        4,
        4,
    ]
    assert np.shares_memory(legal.counts, rows.count)
    # batches that are not all the rows the trees used (a batch of other rows, rows left out) are copied
    other = DenseBatch(
        np.ones((2, *info.input_shape), np.float32),
        LegalRows(np.zeros((2, 5), np.int64), np.ones(2, np.int64)),
    )
    copied, _ = call([*parts, other], rows)
    assert not np.shares_memory(copied, rows.planes) and copied.shape[0] == 10
    copied, _ = call(parts[:2], rows)
    assert not np.shares_memory(copied, rows.planes)
    np.testing.assert_array_equal(copied, np.concatenate([b.planes for b in parts[:2]]))
    rows.reset()
    assert rows.take(2, 5, 2, 3)["planes"].any()  # the same game's rows keep what they hold
    taken = rows.take(2, 7)  # another game's: fresh rows, planes and records together
    assert taken is not None and taken["indices"].shape == (2, 7) and not rows.planes.any()
    rows.reset()
    assert rows.used == 0


def test_the_same_rows_come_as_the_same_views_until_made_anew() -> None:
    from engine.search.many_trees import SharedRows

    info = get_game("go", board_size=3).info
    rows = SharedRows(6, info.input_shape)
    first = rows.take(2, 5)
    assert first is not None
    rows.advance(2)
    second = rows.take(3, 5)
    assert second is not None and second is not first
    rows.reset()
    assert rows.take(2, 5) is first  # the same rows: the same views
    rows.advance(2)
    assert rows.take(3, 5) is second
    rows.reset()
    other = rows.take(2, 7)  # another game's rows: made anew, new views
    assert other is not None and other is not first and other["indices"].shape == (2, 7)


@pytest.mark.parametrize("game", ["chess", "shogi"])
def test_a_tree_on_shared_rows_reuses_its_batch_buffers_and_searches_as_alone(game: str) -> None:
    """Step after step on the same shared rows, a compiled tree hands out the same buffers (made once)
    and backs up what each step wrote: visits equal those of the same tree on its own buffers."""
    from engine.search.config import SearchConfig
    from engine.search.many_trees import SharedRows
    from engine.search.tree_factory import new_tree

    g = get_game(game)
    ev = UniformEvaluator(g.info)
    config = SearchConfig(batch_size=2, seed=0)
    alone = new_tree(g.new_state(), config, np.random.default_rng(0))
    shared_tree = new_tree(g.new_state(), config, np.random.default_rng(0))
    rows = SharedRows(4, g.info.input_shape)
    seen = []
    for _ in range(12):
        rows.reset()
        rows.advance(2)  # another tree's rows first, as in self-play
        setattr(shared_tree, "shared_rows", rows)  # noqa: B010
        batch = shared_tree.select_batch(2)
        rows.advance(len(batch))
        seen.append(batch.buffers)
        ManyTreesBatch([(shared_tree, batch)], ev, shared=rows).backup()
        own = alone.select_batch(2)
        ManyTreesBatch([(alone, own)], ev).backup()
    assert len({id(b) for b in seen[1:]}) <= 2  # the same buffers over the same rows, not new ones
    np.testing.assert_array_equal(shared_tree.root_child_visits(), alone.root_child_visits())
    assert shared_tree.root_q == alone.root_q
