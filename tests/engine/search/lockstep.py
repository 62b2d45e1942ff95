"""What the lockstep tests of the compiled trees share (``test_compiled_chess.py``,
``test_compiled_shogi.py``): one batch on both trees, the roots compared bit for bit, a search through
the engine's loop."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.search.compiled_indexed import IndexedCompiledTree
from engine.search.limits import SearchLimits
from engine.search.searcher import Searcher, SearchResult
from engine.search.time_manager import TimeBudget
from engine.search.tree_protocol import SearchTree, SelfPlayTree
from tests.engine.search.reference_tree import Tree


def assert_same_root(tree: Tree, compiled: IndexedCompiledTree[Any]) -> None:
    """The roots of ``tree`` and ``compiled`` are equal: moves, visits, value sums, priors, proof, Q,
    counters, and once expanded the best move, ranking, PV and every slot's statistics."""
    moves, visits = compiled.root_visits()
    expected_moves, expected_visits = tree.root_visits()
    assert moves == list(expected_moves)
    np.testing.assert_array_equal(visits, expected_visits)
    np.testing.assert_array_equal(compiled.root_values(), tree.root.child_w)
    np.testing.assert_array_equal(compiled.root_priors(), tree.root.prior)
    assert compiled.root_proof() == (int(tree.root.proven), tree.root.proven_plies)
    assert compiled.root_q == tree.root_q
    assert (compiled.playouts, compiled.evaluations) == (tree.playouts, tree.evaluations)
    assert (compiled.depth_sum, compiled.max_depth) == (tree.depth_sum, tree.max_depth)
    for visits, fresh in ((1, 1), (8, 1), (8, 4), (10**9, 0)):
        expected = search_done_by_properties(tree, visits, fresh)
        assert tree.search_done(visits, fresh) == expected
        assert compiled.search_done(visits, fresh) == expected
    if tree.root.expanded:
        assert compiled.best_move() == tree.best_move()
        assert compiled.best_root_slot() == tree.best_root_slot() == tree.ranked_root_slots()[0]
        np.testing.assert_array_equal(compiled.root_policy_indices(), tree.root_policy_indices())
        assert compiled.ranked_root_slots() == tree.ranked_root_slots()
        np.testing.assert_array_equal(compiled.root_slot_proofs(), tree.root_slot_proofs())
        assert compiled.principal_variation() == tree.principal_variation()
        for slot in range(len(tree.root.moves)):
            assert compiled.slot_stats(slot) == tuple(
                int(x) if i == 2 else x for i, x in enumerate(tree.slot_stats(slot))
            )


def search_done_by_properties(tree: SelfPlayTree[Any], visits: float, fresh: int) -> bool:
    """``SelfPlayTree.search_done`` spelled out with the search tree's properties (self-play's check before
    the trees answered it themselves)."""
    if tree.root_terminal or tree.full or tree.root_proof()[0] != 0:
        return True
    if tree.root_move_count == 1 and tree.root_visit_count >= 1:
        return True
    return tree.root_visit_count >= visits and tree.playouts >= fresh


def lockstep_step(tree: Tree, compiled: Any, evaluator: Evaluator, batch: int, count_nodes: bool) -> None:
    """One batch on both trees (``compiled``: any compiled tree, with its ``select_leaves`` and
    ``backup`` pair): the same leaves (planes and legal indices), the same backup."""
    leaves = tree.select_leaves(batch)
    planes, legal = compiled.select_leaves(batch)
    assert len(legal) == len(leaves)
    if leaves:
        np.testing.assert_array_equal(planes, np.stack([leaf.planes for leaf in leaves]))
        for got, leaf in zip(legal, leaves, strict=True):
            np.testing.assert_array_equal(got, leaf.legal)
    evaluations = evaluator.evaluate(planes, legal)
    tree.backup(leaves, evaluations)
    compiled.backup(evaluations)
    if count_nodes:
        assert compiled.node_count == tree.node_count


def search_nodes(
    tree: SearchTree[Any], evaluator: Evaluator, nodes: int, executor: ThreadPoolExecutor
) -> SearchResult:
    """``tree`` searched by the engine's loop for ``nodes`` playouts (two PV lines)."""
    limits = SearchLimits(nodes=nodes)
    return Searcher(
        tree, evaluator, limits, TimeBudget(None, None, False), executor=executor, multipv=2
    ).run()


def assert_array_path_same_as_evaluation_path(
    make_tree: Callable[[], IndexedCompiledTree[Any]], evaluator: Evaluator
) -> None:
    """Two trees from ``make_tree``: ``select_leaves_arrays`` / ``backup_arrays`` with float32 or float64
    prior rows make the same search as ``select_leaves`` / ``backup`` (30 batches of 8)."""
    by_evaluations, by_arrays = make_tree(), make_tree()
    for k in range(30):
        planes, legal = by_evaluations.select_leaves(8)
        array_planes, rows = by_arrays.select_leaves_arrays(8)
        np.testing.assert_array_equal(array_planes, planes)
        assert [x.tolist() for x in rows.lists()] == [x.tolist() for x in legal]
        assert not rows.indices.flags.writeable and not rows.counts.flags.writeable
        evaluations = evaluator.evaluate(planes, legal)
        by_evaluations.backup(evaluations)
        priors = np.zeros(rows.indices.shape, np.float32 if k % 2 else np.float64)
        for row, ev in zip(priors, evaluations, strict=True):
            row[: len(ev.priors)] = ev.priors
        by_arrays.backup_arrays(priors, [ev.value for ev in evaluations])
        assert by_arrays.node_count == by_evaluations.node_count
        np.testing.assert_array_equal(by_arrays.root_values(), by_evaluations.root_values())
    assert by_arrays.node_count > 150
