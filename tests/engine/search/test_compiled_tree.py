"""engine.search.compiled_tree: the pool of tree arrays (a gone tree's arrays serve the next tree, which
searches exactly as on fresh arrays; growth moves the tree and pools the old arrays; the pool's size
is bounded)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.games.go import GoState
from engine.search.compiled_go import CompiledGoTree
from engine.search.compiled_tree import (
    EDGE_BYTES,
    NODE_BYTES,
    POOL,
    ROOT,
    ArrayPool,
    Params,
    TreeArrays,
    add_child,
    add_visits,
    allocate,
    attach_edges,
    init_root,
    new_sum_scratch,
    pairwise_sum_into,
    params,
    select,
    used_bytes,
)
from engine.search.config import SearchConfig
from engine.search.many_trees import ManyTreesBatch
from engine.search.tree_protocol import root_rank
from tests.engine.search.one_batch import GoTree

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
    first = GoTree(_position(["e5", "c3"]), SearchConfig())
    _search(first, 300)
    arrays = first._arrays
    del first
    reused = GoTree(_position(["d4"]), SearchConfig())
    assert reused._arrays.visits is arrays.visits  # the pool's set, stale contents and all
    assert reused.node_count == 1 and reused.playouts == 0
    POOL.clear()
    fresh = GoTree(_position(["d4"]), SearchConfig())
    assert fresh._arrays.visits is not arrays.visits
    _search(reused, 300)
    _search(fresh, 300)
    assert np.array_equal(reused.root_child_visits(), fresh.root_child_visits())
    assert reused.root_q == fresh.root_q and reused.best_move() == fresh.best_move()


def test_growth_moves_the_tree_and_pools_the_old_arrays() -> None:
    POOL.clear()
    tree = GoTree(_position([]), SearchConfig())
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


@pytest.mark.parametrize("side", ["nodes", "edges"])
def test_growth_of_one_side_keeps_the_others_arrays_and_searches_alike(side: str) -> None:
    """Without a pooled set that fits, a tree short of nodes (or edges) alone gets new arrays for that
    side only: the other side's arrays are the same objects, nothing goes to the pool, and the search
    goes on exactly as in a tree that grew both sides."""
    trees = []
    for one_side in (True, False):
        POOL.clear()
        tree = GoTree(_position(["e5"]), SearchConfig())
        _search(tree, 100)
        before = tree._arrays
        n, e = before.visits.shape[0], before.move.shape[0]
        asked = (2 * n, 0) if side == "nodes" else (0, 2 * e)
        grown = tree._grow(*asked) if one_side else tree._grow(2 * n, 2 * e)
        if one_side:
            kept, new = (grown.move, grown.visits) if side == "nodes" else (grown.visits, grown.move)
            assert kept is (before.move if side == "nodes" else before.visits)
            assert new is not (before.visits if side == "nodes" else before.move)
            assert (
                grown.counts is before.counts and POOL.take_pooled(2, 2, before.root_allowed.shape[0]) is None
            )
        _search(tree, 400)
        trees.append(tree)
    assert np.array_equal(trees[0].root_child_visits(), trees[1].root_child_visits())
    assert trees[0].root_q == trees[1].root_q and trees[0].node_count == trees[1].node_count
    POOL.clear()


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
    assert (
        t.move.dtype == np.int32 and t.child.dtype == np.int32 and t.order.dtype == np.int16
    )  # 34 bytes an edge


def test_reserve_memory_sizes_the_set_by_the_budget_and_edges_per_node() -> None:
    from engine.search import compiled_go
    from engine.search.compiled_tree import EDGE_BYTES, NODE_BYTES, reserve_memory

    assert sum(a.itemsize for a in allocate(1, 1, 1)[16:22]) == EDGE_BYTES
    assert sum(a.itemsize for a in allocate(1, 1, 1)[:16]) == NODE_BYTES
    POOL.clear()
    budget = 64 << 20
    first = (100, 1000, 82)
    assert reserve_memory(first, 82, budget)
    fit = budget // (NODE_BYTES + 82 * EDGE_BYTES)
    t = POOL.take(*first)
    assert t.visits.shape[0] == fit and t.move.shape[0] == budget // EDGE_BYTES + 1  # edges: the budget
    POOL.give(t)
    # A Go tree on that board takes the reserved set: its search starts on touched memory.
    config = SearchConfig(node_budget=99)
    POOL.clear()
    assert compiled_go.reserve(_position([]), config, budget)
    reserved = POOL.take(100, 1, 82)
    POOL.give(reserved)
    tree = GoTree(_position([]), config)
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
    tree = GoTree(_position(["e5"]), SearchConfig(memory_budget_bytes=budget))
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
    tree = GoTree(_position(["e5"]), SearchConfig(node_budget=50))
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
    tree = GoTree(_position(["e5", "c3"]), SearchConfig())
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


class _HashedPriors(Evaluator):
    """Go: priors hashed from the planes and the point (unequal, some equal: ties by slot matter), so
    the scan order differs from the slot order in every node; value from the stone balance, or 0 (then
    siblings visited alike score alike: ties among the scanned edges)."""

    def __init__(self, zero_values: bool) -> None:
        self.zero_values = zero_values

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            prior = (1.0 + (h ^ (np.asarray(idx) * 40503)) % 7).astype(np.float32)  # 7 levels: many ties
            prior /= prior.sum()
            value = 0.0 if self.zero_values else float(np.tanh((p[0].sum() - p[1].sum()) / 4.0))
            out.append(Evaluation(prior, value))
        return out


def _full_scan_select(t: TreeArrays, prm: Params, node: int) -> int:
    """The PUCT selection over every edge in slot order (what :func:`select` did before its scan order):
    the first highest score."""
    parent_n = t.visits[node]
    c = np.log((1.0 + parent_n + prm.c_base) / prm.c_base) + prm.c_init
    q = t.value_sum[node] / parent_n if parent_n > 0 else 0.0
    fpu = q - prm.fpu * np.sqrt(max(0.0, t.visited_prior[node]))
    scale = c * np.sqrt(parent_n)
    first = int(t.first_edge[node])
    best, best_score = first, -np.inf
    for e in range(first, first + int(t.num_edges[node])):
        n = t.child_n[e]
        s = t.child_w[e] / n + scale * t.prior[e] / (1.0 + n) if n > 0 else fpu + scale * t.prior[e]
        if s > best_score:
            best, best_score = e, s
    return best


def _check_scan_order(tree: CompiledGoTree) -> int:
    """Every expanded node below the root: edges ever visited before its frontier, the unvisited edge of
    highest prior (lower slot on ties) at it, and :func:`select` choosing what the full scan chooses.
    Returns the nodes checked."""
    t, prm = tree._arrays, tree._params
    checked = 0
    for node in range(1, int(t.counts[0])):
        if not t.expanded[node] or t.num_edges[node] == 0:
            continue
        first, count, k = int(t.first_edge[node]), int(t.num_edges[node]), int(t.frontier[node])
        slots = t.order[first : first + count]
        assert sorted(slots.tolist()) == list(range(count))  # a permutation of the slots
        beyond = slots[k:]
        assert (t.child_n[first + beyond] == 0).all() and (t.child[first + beyond] < 0).all()
        if k < count:
            priors = t.prior[first + beyond]
            top = beyond[priors == priors.max()]
            assert beyond[0] == top.min()
        assert select(t, prm, node) == _full_scan_select(t, prm, node)
        checked += 1
    return checked


@pytest.mark.parametrize("zero_values", [False, True])
def test_select_scans_the_visited_edges_and_one_more_and_chooses_as_the_full_scan(zero_values: bool) -> None:
    config = SearchConfig(fpu_reduction=0.1)
    tree = GoTree(_position(["e5", "c3", "g7"]), config)
    evaluator = _HashedPriors(zero_values)
    checked = 0
    for size in (1, 4, 16, 64, 64, 64):
        batch = tree.select_batch(size)  # pending: virtual loss on its paths, collisions reverted
        checked += _check_scan_order(tree)
        ManyTreesBatch([(tree, batch)], evaluator).backup()
    assert checked > 100 and tree.node_count > 200
    t = tree._arrays
    scanned = [int(t.frontier[n]) + 1 for n in range(1, int(t.counts[0])) if t.expanded[n]]
    assert np.mean(scanned) < 0.25 * np.mean(
        [t.num_edges[n] for n in range(1, int(t.counts[0])) if t.expanded[n]]
    )
    tree.advance(int(t.move[t.first_edge[0] + tree.best_root_slot()]))  # tree reuse keeps the order
    assert _check_scan_order(tree) > 0
    for size in (16, 64, 64):
        batch = tree.select_batch(size)
        _check_scan_order(tree)
        ManyTreesBatch([(tree, batch)], evaluator).backup()
    assert _check_scan_order(tree) > 50


def test_the_frontier_takes_the_highest_prior_and_the_lower_slot_of_equal_ones() -> None:
    t = allocate(4, 8, 4)
    init_root(t, False, 0.0)
    t.move[0], t.prior[0], t.child[0], t.child_n[0], t.child_w[0] = 0, 1.0, -1, 0.0, 0.0
    attach_edges(t, ROOT, 0, 1)
    node = add_child(t, ROOT, 0, False, 0.0)
    priors = [0.2, 0.1, 0.1, 0.3]  # after two swaps slot 2 comes before slot 1 in the scan order
    for j, p in enumerate(priors):
        t.move[1 + j], t.prior[1 + j], t.child[1 + j], t.child_n[1 + j], t.child_w[1 + j] = j, p, -1, 0.0, 0.0
    attach_edges(t, node, 1, 5)
    t.visits[node] = 1.0
    prm = params(SearchConfig())
    for expected in (3, 0, 1, 2):  # the highest prior first, then the lower slot of the equal ones
        assert t.order[1 + t.frontier[node]] == expected
        assert select(t, prm, node) == 1 + expected == _full_scan_select(t, prm, node)
        add_visits(t, node, 1 + expected, 1.0, -0.5)  # each child a loss for its mover: the next one
    assert t.frontier[node] == 4
