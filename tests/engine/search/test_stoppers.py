"""engine.search.stoppers: each stopping rule on its own, and the chain a search asks."""

from __future__ import annotations

import numpy as np

from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.proof import Proof
from engine.search.stoppers import (
    ChainedStopper,
    DepthStopper,
    HardTimeStopper,
    ManagedTimeStopper,
    MateStopper,
    NodesStopper,
    SearchProgress,
    StopReason,
    stopper_for,
)
from engine.search.time_manager import TimeBudget
from tests.engine.search.reference_tree import Tree
from tests.engine.search.toy_game import ToyEvaluator, ToyState, wavy_value


def searched_tree(playouts: int, branching: int = 3) -> Tree:
    tree = Tree(ToyState(branching), SearchConfig(batch_size=1))
    evaluator = ToyEvaluator(lambda _p: [1.0 / branching] * branching, wavy_value)
    for _ in range(playouts):
        leaves = tree.select_leaves(1)
        tree.backup(
            leaves, evaluator.evaluate(np.stack([x.planes for x in leaves]), [x.legal for x in leaves])
        )
    return tree


def at(tree: Tree, elapsed_ms: float) -> SearchProgress:
    return SearchProgress(tree, elapsed_ms)


def test_nothing_stops_a_search_before_the_root_is_expanded() -> None:
    tree = Tree(ToyState(3), SearchConfig())
    chain = ChainedStopper([NodesStopper(0), HardTimeStopper(0.0)])
    assert chain.should_stop(at(tree, 1e9)) is None
    assert chain.should_stop(at(searched_tree(1), 1e9)) is StopReason.NODES


def test_nodes_depth_and_mate_limits() -> None:
    tree = searched_tree(10)
    assert NodesStopper(10).should_stop(at(tree, 0)) is StopReason.NODES
    assert NodesStopper(11).should_stop(at(tree, 0)) is None
    depth = at(tree, 0).depth
    assert depth == max(1, round(tree.depth_sum / tree.playouts))
    assert DepthStopper(depth).should_stop(at(tree, 0)) is StopReason.DEPTH
    assert DepthStopper(depth + 1).should_stop(at(tree, 0)) is None
    tree.root.proven, tree.root.proven_plies = Proof.WIN, 5  # mate in 3 moves
    assert MateStopper(3).should_stop(at(tree, 0)) is StopReason.MATE
    assert MateStopper(2).should_stop(at(tree, 0)) is None


def test_hard_time_limit() -> None:
    tree = searched_tree(2)
    assert HardTimeStopper(100.0).should_stop(at(tree, 99.9)) is None
    assert HardTimeStopper(100.0).should_stop(at(tree, 100.0)) is StopReason.TIME


def test_a_single_legal_move_is_played_at_once_under_a_clock() -> None:
    assert (
        ManagedTimeStopper(1000.0).should_stop(at(searched_tree(2, branching=1), 0.0)) is StopReason.ONLY_MOVE
    )


def test_soft_limit_is_stretched_while_the_best_move_changes() -> None:
    tree = searched_tree(4)
    tree.root.child_n[:] = [5.0, 1.0, 1.0]  # a lead that a fast search could still overturn
    tree.playouts = 10_000
    stopper = ManagedTimeStopper(100.0)
    assert stopper.should_stop(at(tree, 10.0)) is None  # best move seen first at 10 ms
    tree.root.child_n[:] = [5.0, 9.0, 1.0]
    assert stopper.should_stop(at(tree, 90.0)) is None  # changed at 90 ms
    # past the soft limit, but the best move changed within the last quarter of the time spent
    assert stopper.should_stop(at(tree, 110.0)) is None
    assert stopper.should_stop(at(tree, 120.0)) is StopReason.TIME
    # (before this rule was an object, the early stop below fired here at once: any lead beat the
    # zero playouts left before the soft limit, and the stretch never happened)


def test_early_stop_when_the_best_move_cannot_be_overtaken() -> None:
    tree = searched_tree(4)
    tree.playouts = 1000
    tree.root.child_n[:] = [900.0, 50.0, 49.0]
    # 1000 playouts in 50 ms: 1000 more before the soft limit of 100 ms could overturn a lead of 850
    assert ManagedTimeStopper(100.0).should_stop(at(tree, 50.0)) is None
    # at 95 ms only about 53 more fit: the lead of 850 stands
    assert ManagedTimeStopper(100.0).should_stop(at(tree, 95.0)) is StopReason.DECIDED
    # not before a tenth of the soft limit
    assert ManagedTimeStopper(100_000.0).should_stop(at(tree, 5.0)) is None
    # nor when the time is lost unless used (byo-yomi with no main time): on to the soft limit
    assert ManagedTimeStopper(100.0, stop_decided=False).should_stop(at(tree, 95.0)) is None
    byoyomi = stopper_for(SearchLimits(), TimeBudget(100.0, 100.0, True, use_all=True)).stoppers[-1]
    assert isinstance(byoyomi, ManagedTimeStopper) and not byoyomi.stop_decided


def test_stopper_for_chains_the_limits_in_order() -> None:
    chain = stopper_for(SearchLimits(nodes=5, depth=3, mate=2), TimeBudget(50.0, 150.0, True))
    kinds = [type(s) for s in chain.stoppers]
    assert kinds == [NodesStopper, DepthStopper, MateStopper, HardTimeStopper, ManagedTimeStopper]
    fixed = stopper_for(SearchLimits(movetime_ms=100.0), TimeBudget(100.0, 100.0, False))
    assert [type(s) for s in fixed.stoppers] == [HardTimeStopper]
    assert stopper_for(SearchLimits(infinite=True), TimeBudget(None, None, False)).stoppers == []
