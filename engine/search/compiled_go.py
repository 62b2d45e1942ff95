"""A compiled PUCT tree for Go: :class:`engine.search.tree.Tree`'s search, node for node, in numba.

The tree lives in preallocated numpy arrays (struct of arrays, :class:`TreeArrays`) and the whole walk
runs in compiled code on the compiled Go rules (:mod:`engine.games.go_kernel`): each walk copies the
root :class:`~engine.games.go_kernel.KernelState` into a scratch state and plays down the path, and each
leaf's 17 planes are written by ``encode_into`` straight into a batch buffer.  Python is entered once
per batch, not once per node: :meth:`CompiledGoTree.select_batch` returns a
:class:`~engine.search.batch.DenseBatch` of planes and legal-move masks, evaluated by
``Evaluator.infer_dense`` / ``finish_dense`` into dense priors and values that
:meth:`CompiledGoTree.backup_batch` takes in one compiled call.  It is a
:class:`~engine.search.tree_protocol.SearchTree`, so the engine's search loop
(:class:`~engine.search.searcher.Searcher`) drives it as it drives ``Tree``, with two batches out at a
time (one in flight on the worker thread while the next is selected); ``engine.session.new_tree`` picks
it for Go.  The older one-batch pairs (``select_leaves`` / ``backup`` with evaluations,
``select_leaves_arrays`` / ``backup_arrays`` with arrays) stay for tests and benchmarks.  The kernels
are called through their compiled entry points (:class:`_Bound`), skipping numba's per-call typing of
the tree's arrays.

It makes exactly the choices of ``Tree`` (same arithmetic, same order of floating-point operations):

* PUCT ``Q(s, a) + c(s) P(s, a) sqrt(N(s)) / (1 + N(s, a))`` with ``c(s) = log((1 + N(s) + c_base) /
  c_base) + c_init``, first-play urgency ``Q(s) - reduction * sqrt(visited prior sum)``
  (``fpu_reduction_root`` at the root), the first maximum wins; root moves outside ``searchmoves``
  (:meth:`CompiledGoTree.set_root_moves`) are never selected;
* virtual loss (``virtual_loss`` visits and ``-virtual_loss`` value along the path until backup),
  collisions (a walk ending on a pending leaf is reverted; more than ``max_collisions`` end the batch),
  the node budget (``node_budget``; a new node per walk at most), cancelled batches;
* terminal nodes (two passes or the move limit) valued as ``GoState.outcome()``: the sign of the
  Tromp-Taylor score from the side to move; the MCTS-solver proofs of ``Tree._finish_exact`` /
  ``_update_proof``, proven non-root nodes ending the walk with their exact value;
* root Dirichlet noise (``dirichlet_alpha`` / ``dirichlet_epsilon``, the same draws from the same
  generator), tree reuse (:meth:`CompiledGoTree.advance`: the kept subtree's nodes and edges are moved
  to the front of the arrays in one compiled pass, so the root stays node 0 and ``node_count`` is
  exact, where ``Tree`` estimates it), the statistics of the info lines (playouts, evaluations, depth
  sum, deepest walk).

Not here (the Python ``Tree`` does these): Gumbel root search and forced playouts (a config asking for
either raises ``ValueError``; self-play only) and the network cache (``cache_hits`` is always 0; with a
fixed evaluator a cache changes only when leaves are backed up, not their values).  Mate checks and
repetition penalties are accepted and have no effect, as in ``Tree`` for Go (no mate search;
positional superko never repeats).

Priors and values handed to :meth:`CompiledGoTree.backup` or :meth:`~CompiledGoTree.backup_arrays` are
used as float64 (exactly, for float32 priors); ``Tree`` uses values as given, so an evaluator returning
``np.float32`` values makes ``Tree`` add the virtual loss back in float32 and the two trees can then
differ in the last bits (the engine's evaluators return Python floats).

Layout (``C`` node capacity, ``E`` edge capacity, both grown by doubling between calls (first room for
65,536 nodes and a quarter as many expansions: untouched pages cost address space only); node 0 is the
root; a node's edges are ``first_edge .. first_edge + num_edges - 1``, its legal moves in
``GoState.legal_moves_and_indices()`` order: increasing points, pass ``N*N`` last)::

    per node  [C]: visits N(s), value_sum W(s), visited_prior, first_edge, num_edges, expanded, pending,
                   terminal, terminal_value, proven, proven_plies, parent, parent_edge
    per edge  [E]: move, prior P(s, a), child (-1 until created), child_n N(s, a), child_w W(s, a)
    counts    [2]: nodes used, edges used
    stats     [4]: this search's playouts, evaluations, depth sum, deepest walk
    root_allowed [N*N+1]: the root moves that may be searched (``searchmoves``; all by default)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import numba
import numpy as np
import numpy.typing as npt

from engine.evaluator import Evaluation, dense_evaluations
from engine.games.go import NUM_PLANES, WHITE, GoRules, GoState
from engine.games.go_kernel import (
    NOT_OVER,
    KernelState,
    copy_state,
    encode_into,
    from_go_state,
    legal_mask,
    legal_mask_into,
    outcome_code,
    play,
    score,
)
from engine.search.batch import DenseBatch
from engine.search.config import SearchConfig
from engine.search.tree_protocol import compiled_go_supports

__all__ = ["CompiledGoTree", "GoLeafBatch", "TreeArrays", "supports"]

F = TypeVar("F", bound=Callable[..., Any])


def _njit(fn: F) -> F:
    """``numba.njit(cache=True)`` keeping ``fn``'s signature for the type checker."""
    return cast(F, numba.njit(cache=True)(fn))


# Proof states (engine.search.tree.Proof's values).
_UNPROVEN = 0
_WIN = 1
_LOSS = -1
_DRAW = 2

# What a walk brought back when it was not a leaf (a leaf is its node index, >= 0).
_BACKED_UP = -1
_COLLISION = -2

_TO_PLAY = 1  # slot of KernelState.meta holding the colour code to move (see KernelState)
_ROOT = 0


class TreeArrays(NamedTuple):
    """The tree (see the module docstring): node arrays ``[C]``, edge arrays ``[E]``, ``counts[2]``."""

    visits: npt.NDArray[np.float64]
    value_sum: npt.NDArray[np.float64]
    visited_prior: npt.NDArray[np.float64]
    first_edge: npt.NDArray[np.int64]
    num_edges: npt.NDArray[np.int64]
    expanded: npt.NDArray[np.bool_]
    pending: npt.NDArray[np.bool_]
    terminal: npt.NDArray[np.bool_]
    terminal_value: npt.NDArray[np.float64]
    proven: npt.NDArray[np.int8]
    proven_plies: npt.NDArray[np.int64]
    parent: npt.NDArray[np.int64]
    parent_edge: npt.NDArray[np.int64]
    move: npt.NDArray[np.int64]
    prior: npt.NDArray[np.float64]
    child: npt.NDArray[np.int64]
    child_n: npt.NDArray[np.float64]
    child_w: npt.NDArray[np.float64]
    counts: npt.NDArray[np.int64]
    stats: npt.NDArray[np.int64]
    root_allowed: npt.NDArray[np.bool_]


_NODE_FIELDS = 13  # TreeArrays: 13 node arrays, then 5 edge arrays, then counts, stats, root_allowed
_EDGE_FIELDS = 5

# Slots of TreeArrays.stats: the counters of the current search (Tree's attributes of these names).
_PLAYOUTS = 0
_EVALUATIONS = 1
_DEPTH_SUM = 2
_MAX_DEPTH = 3


class _Params(NamedTuple):
    """The :class:`SearchConfig` fields the compiled search reads."""

    c_init: float
    c_base: float
    fpu_root: float
    fpu: float
    virtual_loss: float
    max_collisions: int
    node_budget: int


def _allocate(nodes: int, edges: int, policy: int) -> TreeArrays:
    """Arrays for ``nodes`` nodes and ``edges`` edges, none used yet (left uninitialised: every field
    of a node or an edge is written when it is made), zero counters, every root move allowed
    (``policy`` = ``N*N+1`` entries)."""
    f8, i8 = np.float64, np.int64
    return TreeArrays(
        visits=np.empty(nodes, f8),
        value_sum=np.empty(nodes, f8),
        visited_prior=np.empty(nodes, f8),
        first_edge=np.empty(nodes, i8),
        num_edges=np.empty(nodes, i8),
        expanded=np.empty(nodes, np.bool_),
        pending=np.empty(nodes, np.bool_),
        terminal=np.empty(nodes, np.bool_),
        terminal_value=np.empty(nodes, f8),
        proven=np.empty(nodes, np.int8),
        proven_plies=np.empty(nodes, i8),
        parent=np.empty(nodes, i8),
        parent_edge=np.empty(nodes, i8),
        move=np.empty(edges, i8),
        prior=np.empty(edges, f8),
        child=np.empty(edges, i8),
        child_n=np.empty(edges, f8),
        child_w=np.empty(edges, f8),
        counts=np.zeros(2, i8),
        stats=np.zeros(4, i8),
        root_allowed=np.ones(policy, np.bool_),
    )


def _grown(t: TreeArrays, nodes: int, edges: int) -> TreeArrays:
    """``t`` copied into arrays with room for at least ``nodes`` nodes and ``edges`` edges."""
    bigger = _allocate(max(nodes, t.visits.shape[0]), max(edges, t.move.shape[0]), t.root_allowed.shape[0])
    used = [int(t.counts[0])] * _NODE_FIELDS + [int(t.counts[1])] * _EDGE_FIELDS
    used += [2, 4, t.root_allowed.shape[0]]
    arrays = cast(tuple[npt.NDArray[Any], ...], t)  # every field is an array
    for old, new, n in zip(arrays, cast(tuple[npt.NDArray[Any], ...], bigger), used, strict=True):
        new[:n] = old[:n]
    return bigger


# ---- compiled kernels -----------------------------------------------------------------------------


@_njit
def _copy_array(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None:
    """``dst[:] = src`` for 1-D arrays of one length, as a plain loop: numba's slice assignment goes
    element by element through its broadcasting code, 2 to 4 times slower on the kernel state."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@_njit
def _copy_into(dst: KernelState, src: KernelState) -> None:
    """Make ``dst`` equal to ``src`` (same board size; the shared read-only tables are not copied)."""
    _copy_array(dst.board, src.board)
    _copy_array(dst.head, src.head)
    _copy_array(dst.nxt, src.nxt)
    _copy_array(dst.libs, src.libs)
    _copy_array(dst.size, src.size)
    _copy_array(dst.history.reshape(-1), src.history.reshape(-1))
    _copy_array(dst.seen, src.seen)
    dst.zhash[0] = src.zhash[0]
    _copy_array(dst.meta, src.meta)


@_njit
def _outcome_value(s: KernelState) -> float:
    """``GoState.outcome().value`` of a finished game: the sign of the score from the side to move."""
    v = score(s)
    if s.meta[_TO_PLAY] == WHITE:
        v = -v
    return 1.0 if v > 0 else -1.0 if v < 0 else 0.0


@_njit
def _init_node(t: TreeArrays, node: int, parent: int, edge: int, s: KernelState) -> None:
    """Make ``node`` a fresh unexpanded node for position ``s``, reached by ``edge`` of ``parent``
    (-1, -1 for the root); terminal with its exact value when the game is over at ``s``."""
    t.visits[node] = 0.0
    t.value_sum[node] = 0.0
    t.visited_prior[node] = 0.0
    t.first_edge[node] = 0
    t.num_edges[node] = 0
    t.expanded[node] = False
    t.pending[node] = False
    t.proven[node] = _UNPROVEN
    t.proven_plies[node] = 0
    t.parent[node] = parent
    t.parent_edge[node] = edge
    over = outcome_code(s) != NOT_OVER
    t.terminal[node] = over
    t.terminal_value[node] = _outcome_value(s) if over else 0.0


@_njit
def _init_root(t: TreeArrays, root: KernelState) -> None:
    """Node 0 for ``root``: the tree's only node."""
    _init_node(t, _ROOT, -1, -1, root)
    t.counts[0] = 1
    t.counts[1] = 0


@_njit
def _new_child(t: TreeArrays, node: int, edge: int, s: KernelState) -> int:
    """Create the child behind ``edge`` of ``node`` (its position is ``s``); return its index."""
    child = t.counts[0]
    t.counts[0] = child + 1
    _init_node(t, child, node, edge, s)
    t.child[edge] = child
    return int(child)


@_njit
def _add_visits(t: TreeArrays, node: int, edge: int, dn: float, dw: float) -> None:
    """``Node.add_visits``: ``N(s, a) += dn; W(s, a) += dw; N(s) += dn`` with the visited prior sum."""
    before = t.child_n[edge]
    after = before + dn
    t.child_n[edge] = after
    t.child_w[edge] += dw
    t.visits[node] += dn
    if (before > 0) != (after > 0):
        p = t.prior[edge]
        t.visited_prior[node] += p if after > 0 else -p


@_njit
def _select(t: TreeArrays, prm: _Params, node: int) -> int:
    """The edge of expanded ``node`` with the first highest PUCT score (``Tree.puct_scores``)."""
    parent_n = t.visits[node]
    c = np.log((1.0 + parent_n + prm.c_base) / prm.c_base) + prm.c_init
    reduction = prm.fpu_root if node == _ROOT else prm.fpu
    q = t.value_sum[node] / parent_n if parent_n > 0 else 0.0
    fpu = q - reduction * np.sqrt(max(0.0, t.visited_prior[node]))
    scale = c * np.sqrt(parent_n)
    child_n, child_w, prior = t.child_n, t.child_w, t.prior  # locals: no reference counting per edge
    allowed, move = t.root_allowed, t.move
    at_root = node == _ROOT
    first = t.first_edge[node]
    best = first
    best_score = -np.inf
    for e in range(first, first + t.num_edges[node]):
        if at_root and not allowed[move[e]]:
            continue  # outside searchmoves: score -inf
        n = child_n[e]
        if n > 0:
            s = child_w[e] / n + scale * prior[e] / (1.0 + n)
        else:  # Tree's fpu + scale * prior / (1 + 0): the same value without the division by 1
            s = fpu + scale * prior[e]
        if s > best_score:
            best_score = s
            best = e
    return int(best)


@_njit
def _update_proof(t: TreeArrays, node: int) -> None:
    """``tree._update_proof``: a proven win when a child is lost for its mover (shortest such), a proven
    loss when every child is won for its mover (longest)."""
    best_win = -1
    all_lost = True
    worst = 0
    children, proven, proven_plies = t.child, t.proven, t.proven_plies
    first = t.first_edge[node]
    for e in range(first, first + t.num_edges[node]):
        c = children[e]
        if c < 0:
            all_lost = False
            continue
        if proven[c] == _LOSS:
            plies = proven_plies[c] + 1
            best_win = plies if best_win < 0 else min(best_win, plies)
        elif proven[c] == _WIN:
            worst = max(worst, proven_plies[c] + 1)
        else:
            all_lost = False
    if best_win >= 0:
        t.proven[node] = _WIN
        t.proven_plies[node] = best_win
    elif all_lost:
        t.proven[node] = _LOSS
        t.proven_plies[node] = worst


@_njit
def _is_decided(proof: int) -> bool:
    return proof in (_WIN, _LOSS)


@_njit
def _backup_value(t: TreeArrays, prm: _Params, leaf: int, value: float) -> int:
    """``Tree._backup_value``: add ``value`` (from ``leaf``'s side to move) up to the root, negated once
    per ply, removing the virtual loss and updating proofs; one playout.  Returns the leaf's depth."""
    vl = prm.virtual_loss
    t.visits[leaf] += 1.0
    t.value_sum[leaf] += value
    t.stats[_PLAYOUTS] += 1
    v = value
    child = leaf
    node = t.parent[leaf]
    depth = 0
    while node >= 0:
        depth += 1
        v = -v
        _add_visits(t, node, t.parent_edge[child], 1.0 - vl, v + vl)
        t.value_sum[node] += v
        if _is_decided(t.proven[child]) and t.proven[node] == _UNPROVEN:
            _update_proof(t, node)
        child = node
        node = t.parent[node]
    return depth


@_njit
def _note_depth(t: TreeArrays, depth: int) -> None:
    """Keep the deepest walk of the search (``Tree.max_depth``)."""
    if depth > t.stats[_MAX_DEPTH]:
        t.stats[_MAX_DEPTH] = depth


@_njit
def _finish_exact(t: TreeArrays, prm: _Params, node: int, value: float) -> None:
    """``Tree._finish_exact``: a terminal node becomes proven by its value; back ``value`` up."""
    if t.terminal[node] and t.proven[node] == _UNPROVEN:
        t.proven[node] = _WIN if value > 0 else _LOSS if value < 0 else _DRAW
    depth = _backup_value(t, prm, node, value)
    t.stats[_DEPTH_SUM] += depth
    _note_depth(t, depth)


@_njit
def _revert(t: TreeArrays, prm: _Params, leaf: int) -> None:
    """Take back the virtual loss of the path from the root to ``leaf``."""
    vl = prm.virtual_loss
    node = leaf
    while t.parent[node] >= 0:
        _add_visits(t, t.parent[node], t.parent_edge[node], -vl, vl)
        node = t.parent[node]


@_njit
def _walk(t: TreeArrays, prm: _Params, root: KernelState, s: KernelState) -> int:
    """``Tree._walk``: one walk down from the root, playing the path on ``s`` (a scratch copy of
    ``root``).  Returns the leaf's node index (now pending; its position left on ``s``), or
    :data:`_BACKED_UP` (a terminal or proven node, backed up) or :data:`_COLLISION` (reverted)."""
    _copy_into(s, root)
    vl = prm.virtual_loss
    node = _ROOT
    depth = 0
    while True:
        if t.terminal[node]:
            _finish_exact(t, prm, node, t.terminal_value[node])
            return _BACKED_UP
        if node != _ROOT and _is_decided(t.proven[node]):
            _finish_exact(t, prm, node, float(t.proven[node]))
            return _BACKED_UP
        if not t.expanded[node]:
            break
        edge = _select(t, prm, node)
        _add_visits(t, node, edge, vl, -vl)
        play(s, t.move[edge])
        depth += 1
        child = t.child[edge]
        node = child if child >= 0 else _new_child(t, node, edge, s)
    if t.pending[node]:
        _revert(t, prm, node)
        return _COLLISION
    _note_depth(t, depth)
    t.pending[node] = True
    return node


@_njit
def _select_leaves(
    t: TreeArrays,
    prm: _Params,
    root: KernelState,
    scratch: KernelState,
    count: int,
    planes: npt.NDArray[np.float32],
    legal: npt.NDArray[np.bool_],
    leaves: npt.NDArray[np.int64],
) -> int:
    """``Tree.select_leaves(count)``: up to ``count`` walks; each leaf's planes go to ``planes[m]``
    (float32 ``[count, 17, N, N]``), its legal moves to ``legal[m]`` (bool ``[count, N*N+1]``) and
    its node to ``leaves[m]`` (int64 ``[count]``).  Returns ``m``, the number of leaves.  The node
    arrays must have room for ``count`` more nodes."""
    if t.terminal[_ROOT]:
        return 0
    m = 0
    collisions = 0
    for _ in range(count):
        if t.counts[0] >= prm.node_budget:
            break
        found = _walk(t, prm, root, scratch)
        if found >= 0:
            encode_into(scratch, planes[m])
            legal_mask_into(scratch, legal[m])
            leaves[m] = found
            m += 1
        elif found == _COLLISION:
            collisions += 1
            if collisions > prm.max_collisions:
                break
    return m


@_njit
def _expand(t: TreeArrays, node: int, legal: npt.NDArray[np.bool_], priors: npt.NDArray[np.float64]) -> None:
    """Attach the moves of ``legal`` (bool ``[N*N+1]``) to ``node`` with their entries of ``priors``
    (float64 ``[N*N+1]``) unless it is expanded already, and clear its pending
    mark.  The edge arrays must have room."""
    t.pending[node] = False
    if t.expanded[node]:
        return
    first = t.counts[1]
    e = first
    move, prior, child, child_n, child_w = t.move, t.prior, t.child, t.child_n, t.child_w
    for p in range(legal.shape[0]):
        if legal[p]:
            move[e] = p
            prior[e] = priors[p]
            child[e] = -1
            child_n[e] = 0.0
            child_w[e] = 0.0
            e += 1
    t.counts[1] = e
    t.first_edge[node] = first
    t.num_edges[node] = e - first
    t.expanded[node] = True
    t.visited_prior[node] = 0.0


@_njit
def _backup(
    t: TreeArrays,
    prm: _Params,
    m: int,
    leaves: npt.NDArray[np.int64],
    legal: npt.NDArray[np.bool_],
    priors: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
) -> None:
    """``Tree.backup`` of the first ``m`` leaves: expand leaf ``i`` (node ``leaves[i]``, moves
    ``legal[i]``, bool ``[_, N*N+1]``) with its dense priors ``priors[i]`` (float64 ``[_, N*N+1]``)
    and back up ``values[i]`` (float64 ``[_]``).  The edge arrays must have room."""
    for i in range(m):
        _expand(t, leaves[i], legal[i], priors[i])
        t.stats[_DEPTH_SUM] += _backup_value(t, prm, leaves[i], values[i])
    t.stats[_EVALUATIONS] += m


@_njit
def _cancel(t: TreeArrays, prm: _Params, m: int, leaves: npt.NDArray[np.int64]) -> None:
    """``Tree.cancel`` of the first ``m`` leaves: no longer pending, virtual loss taken back."""
    for i in range(m):
        t.pending[leaves[i]] = False
        _revert(t, prm, leaves[i])


@_njit
def _keep_subtree(t: TreeArrays, keep_root: int) -> npt.NDArray[np.int64]:
    """int64 ``[nodes]``: the new index of each node of the subtree of ``keep_root`` (which becomes 0),
    numbered in the order of the old indices, -1 for the others.  A child's index is always above its
    parent's, so one ascending sweep finds the subtree and every new index is at most the old one."""
    used = t.counts[0]
    remap = np.full(used, -1, np.int64)
    remap[keep_root] = 0
    kept = 1
    parent = t.parent
    for i in range(keep_root + 1, used):
        if parent[i] >= 0 and remap[parent[i]] >= 0:
            remap[i] = kept
            kept += 1
    return remap


@_njit
def _move_nodes(t: TreeArrays, remap: npt.NDArray[np.int64]) -> int:
    """Move the kept nodes (``remap``, :func:`_keep_subtree`) to their new indices, ascending (a node
    never moves up, so nothing is overwritten before it is moved); returns how many were kept."""
    kept = 0
    for i in range(remap.shape[0]):
        j = remap[i]
        if j < 0:
            continue
        t.visits[j] = t.visits[i]
        t.value_sum[j] = t.value_sum[i]
        t.visited_prior[j] = t.visited_prior[i]
        t.first_edge[j] = t.first_edge[i]
        t.num_edges[j] = t.num_edges[i]
        t.expanded[j] = t.expanded[i]
        t.pending[j] = t.pending[i]
        t.terminal[j] = t.terminal[i]
        t.terminal_value[j] = t.terminal_value[i]
        t.proven[j] = t.proven[i]
        t.proven_plies[j] = t.proven_plies[i]
        t.parent[j] = remap[t.parent[i]] if j > 0 else -1
        t.parent_edge[j] = t.parent_edge[i] if j > 0 else -1
        kept += 1
    return kept


@_njit
def _move_edges(t: TreeArrays, kept: int, remap: npt.NDArray[np.int64]) -> int:
    """Pack the edge blocks of the first ``kept`` (moved) nodes to the front in the order of their old
    offsets (so a block never moves up over one not yet moved), renumbering children and their parent
    edges; returns the edges used."""
    order = np.argsort(t.first_edge[:kept])
    cursor = 0
    for k in range(kept):
        node = order[k]
        if not t.expanded[node]:
            continue
        first = t.first_edge[node]
        for e in range(first, first + t.num_edges[node]):
            d = cursor + e - first
            t.move[d] = t.move[e]
            t.prior[d] = t.prior[e]
            t.child_n[d] = t.child_n[e]
            t.child_w[d] = t.child_w[e]
            c = t.child[e]
            if c >= 0:
                c = remap[c]
                t.parent_edge[c] = d
            t.child[d] = c
        t.first_edge[node] = cursor
        cursor += t.num_edges[node]
    return cursor


@_njit
def _reroot(t: TreeArrays, keep_root: int) -> None:
    """Keep only the subtree of ``keep_root`` (tree reuse): its nodes and edges moved to the front, in
    place, ``keep_root`` becoming the root (node 0)."""
    remap = _keep_subtree(t, keep_root)
    kept = _move_nodes(t, remap)
    t.counts[0] = kept
    t.counts[1] = _move_edges(t, kept, remap)


# ---- Python wrapper -------------------------------------------------------------------------------


def _params(config: SearchConfig) -> _Params:
    """The compiled search's settings, or ``ValueError`` for what it does not do."""
    if not supports(config):
        raise ValueError("CompiledGoTree has no Gumbel root search and no forced playouts")
    return _Params(
        c_init=float(config.c_init),
        c_base=float(config.c_base),
        fpu_root=float(config.fpu_reduction_root),
        fpu=float(config.fpu_reduction),
        virtual_loss=float(config.virtual_loss),
        max_collisions=int(config.max_collisions),
        node_budget=int(config.node_budget),
    )


def supports(config: SearchConfig) -> bool:
    """Whether :class:`CompiledGoTree` searches with ``config`` (not with Gumbel or forced playouts)."""
    return compiled_go_supports(config)


class _Bound:
    """A compiled kernel called straight through its machine-code entry point.

    Numba's dispatcher works out the argument types on every call, which for the tree's arrays, two
    kernel states and the settings costs more than a whole batch of walks (about 12 us of 17 us for an
    empty call).  The first call goes through the dispatcher (compiling or loading the kernel) and
    records the overload for those argument types; later calls use its entry point directly.  The
    caller must pass arguments of the same types every time (here: the tree's own buffers).
    """

    def __init__(self, kernel: Any) -> None:
        self._kernel = kernel
        self._entry: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._entry is not None:
            return self._entry(*args)
        result = self._kernel(*args)
        signature = tuple(self._kernel.typeof_pyval(a) for a in args)
        self._entry = self._kernel.overloads[signature].entry_point
        return result


class _Buffers(NamedTuple):
    """One batch's arrays (``K`` leaves at most): planes float32 ``[K, 17, N, N]``, legal moves bool
    ``[K, N*N+1]``, leaf nodes int64 ``[K]``."""

    planes: npt.NDArray[np.float32]
    legal: npt.NDArray[np.bool_]
    leaves: npt.NDArray[np.int64]


class GoLeafBatch(DenseBatch):
    """A batch of :class:`CompiledGoTree` (:class:`~engine.search.batch.DenseBatch`): the first ``m``
    rows of its buffers."""

    def __init__(self, buffers: _Buffers, m: int) -> None:
        super().__init__(buffers.planes[:m], buffers.legal[:m])
        self.buffers = buffers
        self.size = m
        self.done = False  # backed up or cancelled: the buffers are free again


class CompiledGoTree:
    """A PUCT tree over a Go position searched in compiled code; the same search as ``Tree`` and a
    :class:`~engine.search.tree_protocol.SearchTree` for the engine's search loop.

    Batches go through :meth:`select_batch` / :meth:`backup_batch` (dense arrays, at most two batches
    at a time: one in flight while the next is selected), or one at a time through the older pairs
    :meth:`select_leaves` / :meth:`backup` (:class:`Evaluation` lists) and :meth:`select_leaves_arrays`
    / :meth:`backup_arrays` (arrays).  All give the same search for the same priors and values.

    Args:
        state: the root position (not kept: the tree copies it into a kernel state).
        config: search settings (root Dirichlet noise when ``config.dirichlet_alpha`` is set, as
            ``Tree`` draws it: the same ``rng`` draws give the same priors).
        rng: random generator for the root noise (default: seeded with ``config.seed``).

    Raises:
        ValueError: the config asks for Gumbel or forced playouts.
    """

    def __init__(self, state: GoState, config: SearchConfig, rng: np.random.Generator | None = None) -> None:
        self.config = config
        self._params = _params(config)
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self._root = from_go_state(state)
        self._scratch = copy_state(self._root)
        self._size = state.rules.board_size
        self._policy = self._size * self._size + 1
        # Room for a first 65,536 nodes, a quarter of them expanded: np.empty leaves the pages
        # untouched until used, so this costs address space only, and most searches never grow.
        nodes = max(2, min(config.node_budget + 1, 1 << 16))
        self._arrays = _allocate(nodes, nodes * self._policy // 4, self._policy)
        _init_root(self._arrays, self._root)
        self._noise_pending = config.dirichlet_alpha is not None
        self._select = _Bound(_select_leaves)
        self._backup = _Bound(_backup)
        self._cancel = _Bound(_cancel)
        self._free: list[_Buffers] = []
        self._priors = np.zeros((0, self._policy), np.float64)
        self._values = np.zeros(0, np.float64)
        self._current: GoLeafBatch | None = None  # the batch of the one-at-a-time methods

    # ---- counters and root state (SearchTree) --------------------------------------------------------
    @property
    def node_count(self) -> int:
        """Nodes in the tree (``Tree.node_count``; exact after tree reuse)."""
        return int(self._arrays.counts[0])

    @property
    def full(self) -> bool:
        """True when the node budget is used up (``Tree.full``)."""
        return self.node_count >= self.config.node_budget

    @property
    def playouts(self) -> int:
        return int(self._arrays.stats[_PLAYOUTS])

    @property
    def evaluations(self) -> int:
        return int(self._arrays.stats[_EVALUATIONS])

    @property
    def cache_hits(self) -> int:
        """Always 0: the compiled tree has no network cache."""
        return 0

    @property
    def depth_sum(self) -> int:
        return int(self._arrays.stats[_DEPTH_SUM])

    @property
    def max_depth(self) -> int:
        return int(self._arrays.stats[_MAX_DEPTH])

    @property
    def root_terminal(self) -> bool:
        return bool(self._arrays.terminal[_ROOT])

    @property
    def root_expanded(self) -> bool:
        return bool(self._arrays.expanded[_ROOT])

    def root_proof(self) -> tuple[int, int]:
        """``(proof, plies)`` of the root (``Tree.root.proven`` as an int: 0 unproven, 1 win, -1 loss,
        2 draw; ``Tree.root.proven_plies``)."""
        return int(self._arrays.proven[_ROOT]), int(self._arrays.proven_plies[_ROOT])

    def reset_stats(self) -> None:
        """Zero the per-search counters (the tree itself is kept)."""
        self._arrays.stats[:] = 0

    def set_root_moves(self, allowed: Sequence[Any] | None) -> None:
        """Restrict the root to ``allowed`` moves (``searchmoves``); ``None``, empty, or no legal move
        among them: all moves (as ``Tree``)."""
        mask = self._arrays.root_allowed
        mask[:] = True
        if not allowed:
            return
        wanted = np.zeros(self._policy, np.bool_)
        wanted[[int(m) for m in allowed if 0 <= int(m) < self._policy]] = True
        if (wanted & legal_mask(self._root)).any():
            mask[:] = wanted

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> GoLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`GoLeafBatch` (empty when none needs the network)."""
        self._reserve(count)
        buffers = self._take_buffers(count)
        m = int(
            self._select(
                self._arrays,
                self._params,
                self._root,
                self._scratch,
                int(count),
                buffers.planes,
                buffers.legal,
                buffers.leaves,
            )
        )
        batch = GoLeafBatch(buffers, m)
        if m == 0:
            self._release(batch)
        return batch

    def backup_batch(self, batch: GoLeafBatch) -> None:
        """Back up a started batch with its dense priors and values (waits for the network call)."""
        if batch.done:
            return
        priors, values = batch.result()
        self._backup_dense(batch, priors, values)

    def backup_batch_arrays(self, batch: GoLeafBatch, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Back up ``batch`` with priors ``[m, N*N+1]`` and values ``[m]`` computed elsewhere (not
        started: no network call), as :meth:`backup_arrays` does for the one-batch methods."""
        self._backup_dense(batch, np.asarray(priors), np.asarray(values))

    def cancel_batch(self, batch: GoLeafBatch) -> None:
        """Abandon a batch: its leaves are no longer pending and their virtual loss is taken back."""
        if batch.done:
            return
        self._cancel(self._arrays, self._params, batch.size, batch.buffers.leaves)
        self._release(batch)

    def advance(self, move: int) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges are
        moved to the front of the arrays in one compiled pass; a fresh root when the move's child
        was never expanded."""
        t = self._arrays
        keep = -1
        if t.expanded[_ROOT]:
            first = int(t.first_edge[_ROOT])
            for e in range(first, first + int(t.num_edges[_ROOT])):
                if t.move[e] == move:
                    keep = int(t.child[e])
                    break
        play(self._root, int(move))
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root)
        else:
            _reroot(t, keep)
        t.root_allowed[:] = True
        self._noise_pending = self.config.dirichlet_alpha is not None
        self._apply_root_noise()

    # ---- results (SearchTree) ------------------------------------------------------------------------
    def root_child_visits(self) -> npt.NDArray[np.float64]:
        """float64 ``[L]``: the root's ``N(s, a)`` (a view: read only)."""
        return self._arrays.child_n[self._root_edges()]

    def root_move(self, slot: int) -> int:
        return int(self._arrays.move[self._root_edge(slot)])

    def root_prior(self, slot: int) -> float:
        return float(self._arrays.prior[self._root_edge(slot)])

    def slot_stats(self, slot: int) -> tuple[float, float, int, int]:
        """``Tree.slot_stats``: ``(visits, q, proof, plies)`` of root ``slot``, root player's view."""
        t = self._arrays
        e = self._root_edge(slot)
        n = float(t.child_n[e])
        q = float(t.child_w[e]) / n if n > 0 else 0.0
        c = int(t.child[e])
        return n, q, self._child_proof(c), int(t.proven_plies[c]) + 1 if c >= 0 else 0

    def ranked_root_slots(self) -> list[int]:
        """``Tree.ranked_root_slots``: proven wins (shortest first), then visits, ties by Q; proven
        losses and moves outside ``searchmoves`` last."""
        t = self._arrays
        keys: list[tuple[tuple[int, int, float, float], int]] = []
        edges = self._root_edges()
        for slot, e in enumerate(range(edges.start, edges.stop)):
            n = float(t.child_n[e])
            q = float(t.child_w[e]) / n if n > 0 else -2.0
            c = int(t.child[e])
            proof = self._child_proof(c)
            allowed = bool(t.root_allowed[t.move[e]])
            plies = int(t.proven_plies[c]) if c >= 0 else 0
            if proof == _WIN:
                rank = (0 if allowed else 4, plies, 0.0, 0.0)
            elif proof == _LOSS:
                rank = (3 if allowed else 4, -plies, -n, -q)
            else:
                rank = (1 if allowed else 4, 0, -n, -q)
            keys.append((rank, slot))
        keys.sort()
        return [slot for _, slot in keys]

    def best_move(self) -> int | None:
        """The move to play (``Tree.best_move``), ``None`` before the root is expanded."""
        slots = self.ranked_root_slots()
        return self.root_move(slots[0]) if slots else None

    def principal_variation(self, first_slot: int | None = None, max_len: int = 64) -> list[int]:
        """``Tree.principal_variation``: the most visited line (starting with ``first_slot``)."""
        t = self._arrays
        pv: list[int] = []
        node = _ROOT
        slot = first_slot
        while t.expanded[node] and len(pv) < max_len:
            first, count = int(t.first_edge[node]), int(t.num_edges[node])
            if slot is None:
                visits = t.child_n[first : first + count]
                if count == 0 or visits.max() <= 0:
                    break
                slot = int(np.argmax(visits))
            pv.append(int(t.move[first + slot]))
            child = int(t.child[first + slot])
            if child < 0:
                break
            node = child
            slot = None
        return pv

    def root_visits(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """``(moves, visits)``: the root's legal moves int64 ``[L]`` and their visit counts ``N(s, a)``
        float64 ``[L]`` (``Tree.root_visits``; empty before the root is expanded)."""
        edges = self._root_edges()
        return self._arrays.move[edges].copy(), self._arrays.child_n[edges].copy()

    def root_values(self) -> npt.NDArray[np.float64]:
        """float64 ``[L]``: ``W(s, a)`` of the root moves, from the root player's point of view."""
        return self._arrays.child_w[self._root_edges()].copy()

    def root_priors(self) -> npt.NDArray[np.float64]:
        """float64 ``[L]``: ``P(s, a)`` of the root moves (noise included)."""
        return self._arrays.prior[self._root_edges()].copy()

    # ---- one batch at a time ---------------------------------------------------------------------------
    def select_leaves_arrays(self, count: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Walk down ``count`` times (fewer on collisions or a full tree), as ``Tree.select_leaves``.

        Returns:
            ``(planes, legal)``: float32 ``[m, 17, N, N]``, the ``m`` leaves' encoded positions, and
            bool ``[m, N*N+1]``, their legal moves (pass ``N*N`` last, always legal: leaves are
            never terminal).  Both are views of buffers that a later call overwrites; ``legal``
            is read-only.

        Raises:
            RuntimeError: the previous batch has not been backed up.
        """
        if self._current is not None:
            raise RuntimeError("back up the previous batch before selecting more leaves")
        batch = self.select_batch(count)
        self._current = batch
        legal = batch.legal_mask
        legal.flags.writeable = False
        return batch.planes, legal

    def select_leaves(self, count: int) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.int64]]]:
        """:meth:`select_leaves_arrays` for an :class:`~engine.evaluator.Evaluator`.

        Returns:
            ``(planes, legal)``: float32 ``[m, 17, N, N]``, the ``m`` leaves' encoded positions (a view
            of a buffer that a later call overwrites), and ``m`` int64 arrays ``[L_i]`` of their legal
            policy indices (increasing points, pass ``N*N`` last).

        Raises:
            RuntimeError: the previous batch has not been backed up.
        """
        planes, legal = self.select_leaves_arrays(count)
        return planes, [np.flatnonzero(row) for row in legal]

    def backup_arrays(self, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Expand the leaves of the last selection with dense priors and back the values up, removing
        the virtual loss; one compiled call for the batch.

        Args:
            priors: float ``[m, N*N+1]``, each leaf's priors over the whole policy, already normalised
                over its legal moves (e.g. a masked softmax written back densely); the entries of
                illegal moves are ignored.  Used as float64 (exactly, for float32
                priors), so that priors ``p`` give the same search as evaluations with priors
                ``p[legal]`` of the same dtype.  No checks (a sum, a sign) are made.
            values: float ``[m]``, each leaf's value from its side to move (used as float64).

        Raises:
            RuntimeError: no batch is waiting.
            ValueError: the shapes do not match the leaves.
        """
        if self._current is None:
            raise RuntimeError("no leaves to back up")
        p, v = np.asarray(priors), np.asarray(values)
        self._check_shapes(self._current.size, p, v)
        self._backup_dense(self._take_current(), p, v)

    def backup(self, evaluations: Sequence[Evaluation]) -> None:
        """Expand the leaves of the last :meth:`select_leaves` with their evaluations (priors float32
        ``[L_i]`` in the order of the legal indices, value from the leaf's side to move) and back the
        values up, removing the virtual loss (through the compiled call of :meth:`backup_arrays`).

        Raises:
            RuntimeError: no batch is waiting.
            ValueError: the evaluations do not match the leaves.
        """
        if self._current is None:
            raise RuntimeError("no leaves to back up")
        legal = self._current.legal_mask
        m = legal.shape[0]
        if len(evaluations) != m:
            raise ValueError(f"{len(evaluations)} evaluations for {m} leaves")
        sizes = legal.sum(axis=1)
        if any(len(ev.priors) != n for ev, n in zip(evaluations, sizes, strict=True)):
            raise ValueError("an evaluation's priors do not match its leaf's legal moves")
        priors, values = dense_evaluations(evaluations, [np.flatnonzero(r) for r in legal], legal.shape)
        self._backup_dense(self._take_current(), priors, values)

    # ---- internals -----------------------------------------------------------------------------------
    def _take_current(self) -> GoLeafBatch:
        batch = self._current
        if batch is None:
            raise RuntimeError("no leaves to back up")
        self._current = None
        return batch

    def _backup_dense(self, batch: GoLeafBatch, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """The compiled backup of ``batch`` with priors ``[m, N*N+1]`` and values ``[m]``; makes room
        for the leaves' edges first (at most ``N*N+1`` each), then applies pending root noise."""
        m = batch.size
        self._check_shapes(m, priors, values)
        if batch.done:  # an empty selection: nothing to back up, its buffers are free already
            return
        if self._priors.shape[0] < m:
            self._priors = np.zeros((m, self._policy), np.float64)
            self._values = np.zeros(m, np.float64)
        self._priors[:m] = priors
        self._values[:m] = values
        t = self._arrays
        need = int(t.counts[1]) + m * self._policy
        if need > t.move.shape[0]:
            self._arrays = _grown(t, 0, 2 * need)
        buffers = batch.buffers
        self._backup(self._arrays, self._params, m, buffers.leaves, buffers.legal, self._priors, self._values)
        self._release(batch)
        if self._noise_pending:
            self._apply_root_noise()

    def _check_shapes(self, m: int, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """``ValueError`` unless priors are ``[m, N*N+1]`` and values ``[m]``."""
        if priors.shape != (m, self._policy) or values.shape != (m,):
            raise ValueError(
                f"priors {priors.shape} and values {values.shape} for {m} leaves (expected ({m}, {self._policy}) and ({m},))"
            )

    def _apply_root_noise(self) -> None:
        """``Tree._apply_root_noise``: once the root is expanded, mix ``Dir(alpha)`` noise into its priors
        (``(1 - eps) P + eps noise``, the same draws as ``Tree``) and recount the visited prior."""
        t = self._arrays
        if not self._noise_pending or not t.expanded[_ROOT] or t.num_edges[_ROOT] == 0:
            return
        self._noise_pending = False
        alpha = self.config.dirichlet_alpha
        assert alpha is not None  # noise is pending only when configured
        eps = self.config.dirichlet_epsilon
        edges = self._root_edges()
        noise = self.rng.dirichlet(np.full(edges.stop - edges.start, alpha))
        prior = (1.0 - eps) * t.prior[edges] + eps * noise
        t.prior[edges] = prior
        t.visited_prior[_ROOT] = float(prior[t.child_n[edges] > 0].sum())

    def _child_proof(self, child: int) -> int:
        """``child_proof``: a move's proof from its mover's point of view (1 win, -1 loss, 0 else)."""
        if child < 0:
            return _UNPROVEN
        proof = int(self._arrays.proven[child])
        return _WIN if proof == _LOSS else _LOSS if proof == _WIN else _UNPROVEN

    def _root_edges(self) -> slice:
        t = self._arrays
        first = int(t.first_edge[_ROOT])
        return slice(first, first + int(t.num_edges[_ROOT]) if t.expanded[_ROOT] else first)

    def _root_edge(self, slot: int) -> int:
        edges = self._root_edges()
        if not 0 <= slot < edges.stop - edges.start:
            raise IndexError(f"root slot {slot} of {edges.stop - edges.start}")
        return int(edges.start) + slot

    def _reserve(self, count: int) -> None:
        """Room for ``count`` more nodes (a walk creates one at most)."""
        t = self._arrays
        if t.counts[0] + count > t.visits.shape[0]:
            self._arrays = _grown(t, 2 * int(t.counts[0] + count), 0)

    def _take_buffers(self, count: int) -> _Buffers:
        """Free batch buffers for ``count`` leaves (made when none is free: a tree holds two batches
        at most, so two sets are made, plus one per larger batch size)."""
        for i, buffers in enumerate(self._free):
            if buffers.leaves.shape[0] >= count:
                return self._free.pop(i)
        return _Buffers(
            np.zeros((count, NUM_PLANES, self._size, self._size), np.float32),
            np.zeros((count, self._policy), np.bool_),
            np.zeros(count, np.int64),
        )

    def _release(self, batch: GoLeafBatch) -> None:
        """Give ``batch``'s buffers back (it is done)."""
        batch.done = True
        batch.buffers.legal.flags.writeable = True
        self._free.append(batch.buffers)


def warm_up() -> None:
    """Load (or, with an empty numba cache, compile) every kernel a search uses, with a few walks on a
    small board: the kernels are typed by array types only, so this serves every board size.  Call it
    before the first search (``Session.ensure_ready``) so no move pays for compilation."""
    tree = CompiledGoTree(GoState(GoRules(board_size=5)), SearchConfig(node_budget=256))
    tree.set_root_moves([0, 1, 2])
    for _ in range(12):
        batch = tree.select_batch(4)
        if len(batch):
            uniform = batch.legal_mask / batch.legal_mask.sum(axis=1, keepdims=True)
            tree.backup_batch_arrays(batch, uniform.astype(np.float32), np.zeros(len(batch), np.float32))
    tree.cancel_batch(tree.select_batch(2))
    best = tree.best_move()
    if best is not None:
        tree.advance(best)  # the most visited child is expanded: the subtree is moved (_reroot)
