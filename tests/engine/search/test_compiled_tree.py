"""engine.search.compiled_tree: the pool of tree arrays (a gone tree's arrays serve the next tree, which
searches exactly as on fresh arrays; growth moves the tree and pools the old arrays; the pool's size
is bounded)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba")

from engine.games import get_game
from engine.games.go import GoState
from engine.search.compiled_go import CompiledGoTree
from engine.search.compiled_tree import (
    EDGE_BYTES,
    NODE_BYTES,
    POOL,
    ArrayPool,
    allocate,
    new_sum_scratch,
    pairwise_sum_into,
    used_bytes,
)
from engine.search.config import SearchConfig
from engine.search.many_trees import ManyTreesBatch
from engine.search.tree_protocol import root_rank

from .evaluators import stone_balance


def _search(tree: CompiledGoTree, playouts: int) -> None:
    evaluator = stone_balance(9)  # through Evaluator's dense default
    while tree.playouts < playouts:
        ManyTreesBatch([(tree, tree.select_batch(8))], evaluator).backup()


def _position(moves: list[str]) -> GoState:
    state = get_game("go", board_size=9).new_state()
    for text in moves:
        state.push(state.parse_move(text))
    return state


def test_a_gone_trees_arrays_serve_the_next_tree_which_searches_as_on_fresh_ones() -> None:
    POOL.clear()
    first = CompiledGoTree(_position(["e5", "c3"]), SearchConfig())
    _search(first, 300)
    arrays = first._arrays
    del first
    reused = CompiledGoTree(_position(["d4"]), SearchConfig())
    assert reused._arrays.visits is arrays.visits  # the pool's set, stale contents and all
    assert reused.node_count == 1 and reused.playouts == 0
    POOL.clear()
    fresh = CompiledGoTree(_position(["d4"]), SearchConfig())
    assert fresh._arrays.visits is not arrays.visits
    _search(reused, 300)
    _search(fresh, 300)
    assert np.array_equal(reused.root_child_visits(), fresh.root_child_visits())
    assert reused.root_q == fresh.root_q and reused.best_move() == fresh.best_move()


def test_growth_moves_the_tree_and_pools_the_old_arrays() -> None:
    POOL.clear()
    tree = CompiledGoTree(_position([]), SearchConfig())
    _search(tree, 100)
    before = tree._arrays
    visits = tree.root_child_visits()
    nodes = tree.node_count
    grown = tree._grow(2 * before.visits.shape[0], 2 * before.move.shape[0])
    assert grown is tree._arrays and grown.visits.shape[0] >= 2 * before.visits.shape[0]
    assert tree.node_count == nodes and np.array_equal(tree.root_child_visits(), visits)
    _search(tree, 200)  # the search goes on in the new arrays
    assert tree.playouts >= 200
    again = POOL.take(2, 2, before.root_allowed.shape[0])
    assert again.visits is before.visits and again.counts.sum() == 0 and again.root_allowed.all()


def test_the_pool_keeps_at_most_its_limit() -> None:
    sets = [allocate(1000, 10000, 82) for _ in range(2)] + [allocate(1000, 11000, 82)]
    pool = ArrayPool(sum(a.nbytes for t in sets[1:] for a in t))  # room for the last two
    for t in sets:
        pool.give(t)
    pool.give(sets[-1])  # given twice: kept once
    assert pool.take(1000, 10000, 82).visits is sets[2].visits  # the largest that fits
    assert pool.take(1000, 10000, 82).visits is sets[1].visits  # the oldest went first (the limit)
    assert pool.take(1000, 10000, 82).visits is not sets[0].visits  # empty: new arrays
    assert pool.take(1000, 10000, 81).root_allowed.shape == (81,)  # root slots must match


def test_reserve_makes_a_touched_set_once_and_the_first_tree_takes_it() -> None:
    pool = ArrayPool(1 << 30)
    assert pool.reserve(1000, 50_000, 82)  # none fits: made and touched
    assert not pool.reserve(800, 40_000, 82)  # the pooled set fits: nothing new
    assert pool.reserve(1000, 50_000, 362)  # other root slots: another set
    t = pool.take(1000, 50_000, 82)
    assert t.move.shape[0] >= 50_000 and t.counts.sum() == 0 and t.root_allowed.all()
    assert t.move.dtype == np.int32 and t.child.dtype == np.int32  # 32 bytes an edge


def test_reserve_memory_sizes_the_set_by_the_budget_and_edges_per_node() -> None:
    from engine.search import compiled_go
    from engine.search.compiled_tree import EDGE_BYTES, NODE_BYTES, reserve_memory

    assert sum(a.itemsize for a in allocate(1, 1, 1)[14:19]) == EDGE_BYTES
    assert sum(a.itemsize for a in allocate(1, 1, 1)[:14]) == NODE_BYTES
    POOL.clear()
    budget = 64 << 20
    first = (100, 1000, 82)
    assert reserve_memory(first, 82, budget)
    fit = budget // (NODE_BYTES + 82 * EDGE_BYTES)
    t = POOL.take(*first)
    assert t.visits.shape[0] == fit and t.move.shape[0] == fit * 82
    POOL.give(t)
    # A Go tree on that board takes the reserved set: its search starts on touched memory.
    config = SearchConfig(node_budget=99)
    POOL.clear()
    assert compiled_go.reserve(_position([]), config, budget)
    reserved = POOL.take(100, 1, 82)
    POOL.give(reserved)
    tree = CompiledGoTree(_position([]), config)
    assert tree._arrays.visits is reserved.visits
    POOL.clear()


def test_reserve_memory_touches_at_most_its_limit() -> None:
    from engine.search.compiled_tree import EDGE_BYTES, NODE_BYTES, RESERVE_LIMIT_BYTES, reserve_memory

    POOL.clear()
    assert reserve_memory((2, 2, 82), 82, 16 * RESERVE_LIMIT_BYTES)  # a huge Hash
    t = POOL.take(2, 2, 82)
    assert t.visits.shape[0] == RESERVE_LIMIT_BYTES // (NODE_BYTES + 82 * EDGE_BYTES)
    POOL.clear()


def test_a_memory_budget_fills_the_tree_to_its_bytes_and_bounds_its_arrays() -> None:
    """``memory_budget_bytes`` (the engine's ``Hash``): the walks stop once the nodes and edges in use
    reach it, not at a node count estimated for the Python tree; growth stops at what it can fill."""
    POOL.clear()
    budget = 400_000
    tree = CompiledGoTree(_position(["e5"]), SearchConfig(memory_budget_bytes=budget))
    evaluator = stone_balance(9)
    while not tree.full:
        batch = tree.select_batch(8)
        assert len(batch) > 0
        ManyTreesBatch([(tree, batch)], evaluator).backup()
    used = int(used_bytes(tree._arrays, tree._params))
    assert used == tree.node_count * NODE_BYTES + int(tree._arrays.counts[1]) * EDGE_BYTES
    assert budget <= used < budget + 8 * (NODE_BYTES + 82 * EDGE_BYTES)  # the last batch's leaves
    assert tree.fill == 1.0 and len(tree.select_batch(8)) == 0
    # 400 KB hold about 150 nodes of 80 edges: far fewer than SearchConfig's node budget
    assert 100 < tree.node_count < 200
    arrays = tree._arrays
    assert arrays.move.shape[0] * EDGE_BYTES <= 2 * budget + 8 * 82 * EDGE_BYTES


def test_without_a_memory_budget_the_node_budget_alone_fills_the_tree() -> None:
    tree = CompiledGoTree(_position(["e5"]), SearchConfig(node_budget=50))
    evaluator = stone_balance(9)
    while not tree.full:
        ManyTreesBatch([(tree, tree.select_batch(8))], evaluator).backup()
    assert tree.node_count == 50 and tree.fill == 1.0


def _ranked_by_root_rank(tree: CompiledGoTree) -> list[int]:
    """The root's order by :func:`~engine.search.tree_protocol.root_rank`, one tuple a move (the
    definition the compiled trees' vectorised ranking must match)."""
    t = tree._arrays
    first = int(t.first_edge[0])
    keys = []
    for slot in range(tree.root_move_count):
        e = first + slot
        n, c = float(t.child_n[e]), int(t.child[e])
        proof = tree._child_proof(c)
        plies = int(t.proven_plies[c]) if c >= 0 else 0
        q = float(t.child_w[e]) / n if n > 0 else -2.0
        keys.append((root_rank(proof == 1, proof == -1, bool(t.root_allowed[slot]), plies, n, q), slot))
    return [slot for _, slot in sorted(keys)]


def test_ranked_root_slots_orders_as_root_rank_with_proofs_ties_and_searchmoves() -> None:
    POOL.clear()
    tree = CompiledGoTree(_position(["e5", "c3"]), SearchConfig())
    assert tree.best_root_slot() is None and tree.best_move() is None  # not expanded yet
    _search(tree, 200)
    assert tree.ranked_root_slots() == _ranked_by_root_rank(tree)
    t = tree._arrays
    first = int(t.first_edge[0])
    made = [s for s in range(tree.root_move_count) if t.child[first + s] >= 0]
    rng = np.random.default_rng(3)
    for trial in range(30):
        # proofs of every kind and length, equal visits and values, moves outside searchmoves
        for s in rng.choice(made, size=min(len(made), 6), replace=False):
            child = int(t.child[first + s])
            t.proven[child] = rng.choice([0, 1, -1, 2])
            t.proven_plies[child] = rng.integers(1, 4)
        tied = rng.choice(tree.root_move_count, size=5, replace=False)
        t.child_n[first + tied] = t.child_n[first + tied[0]]
        t.child_w[first + tied] = t.child_w[first + tied[0]] if trial % 2 else -t.child_w[first + tied[0]]
        t.root_allowed[: tree.root_move_count] = rng.random(tree.root_move_count) > 0.2 * (trial % 3)
        ranked = _ranked_by_root_rank(tree)
        assert tree.ranked_root_slots() == ranked, trial
        assert tree.best_root_slot() == ranked[0], trial  # the compiled one-pass minimum


def test_pairwise_sum_into_is_numpys_sum_bit_for_bit_with_reused_scratch() -> None:
    rng = np.random.default_rng(5)
    scratch = new_sum_scratch(600)
    for n in [*range(40), 127, 128, 129, 255, 256, 257, 300, 511, 593, 600]:
        a = rng.random(n + 7) * rng.choice([1e-9, 1.0, 1e6], n + 7)
        for start in (0, 7):
            assert pairwise_sum_into(a, start, n, scratch) == np.sum(a[start : start + n]), (n, start)
