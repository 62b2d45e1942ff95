"""A compiled PUCT tree for chess: :class:`engine.search.tree.Tree`'s search, node for node, in numba.

The chess counterpart of :mod:`engine.search.compiled_go`: the tree lives in preallocated numpy arrays
(struct of arrays, :class:`TreeArrays`) and the whole walk runs in compiled code on the compiled chess
rules (:mod:`engine.games.chess_kernel`).  The root's :class:`~engine.games.chess_kernel.KernelState`
is a copy-make stack, so a walk needs no copy of the root: it pushes its path onto the rows above the
root and rewinds to the root afterwards.  Each leaf's 119 planes are written by ``encode_into``
straight into a batch buffer, its legal moves (python-chess's order) and their policy indices into
index buffers and a bool mask over the 4,672 policy entries.  Python is entered once per batch for
the selection and once for the backup: :meth:`CompiledChessTree.select_leaves_arrays` returns the
batch's planes and legal masks and :meth:`CompiledChessTree.backup_arrays` takes dense priors and
values; :meth:`~CompiledChessTree.select_leaves` / :meth:`~CompiledChessTree.backup` wrap them for an
:class:`~engine.evaluator.Evaluator`, and :meth:`~CompiledChessTree.select_batch` /
:meth:`~CompiledChessTree.backup_batch` serve the engine's search loop
(:class:`~engine.search.tree_protocol.SearchTree`).

It makes exactly the choices of ``Tree`` on a :class:`~engine.games.chess.ChessState` (same arithmetic,
same order of floating-point operations, the legal moves in python-chess's generation order so that
ties go the same way):

* PUCT with ``c(s)``, first-play urgency (``fpu_reduction_root`` at the root), the first maximum wins;
  virtual loss, collisions (``max_collisions``), the node budget;
* terminal nodes valued as ``ChessState.outcome()``: checkmate -1, stalemate, insufficient material,
  threefold repetition, the fifty-move rule and ``ChessRules.max_plies`` 0; the root is terminal only
  when it has no legal move (``Tree._init_root_terminal``);
* the MCTS-solver proofs (``Tree._finish_exact`` / ``_update_proof``);
* ``config.repetition_penalty``: a child whose position occurred before (and is not over) is terminal
  with the penalty as its value for its side to move, unproven, and the move's prior goes to the others
  (``_drop_prior``, with numpy's pairwise summation so the renormalised priors are bit-equal);
* the root mate search (``config.root_mate_nodes``, ``Tree._search_root_mate``): at every newly
  expanded root, :func:`~engine.games.chess_kernel.find_mate` (``ChessState.find_mate``: a mate in one,
  else a checking mate in two within the node budget, the same moves in the same order); a mate makes
  the root a proven win with all its prior on the mating move;
* ``config.mate_check`` is accepted and does nothing, as in ``Tree`` for chess (``ChessState`` has no
  ``mate_in_one``);
* root Dirichlet noise (``dirichlet_alpha``; the same ``rng`` draws as ``Tree``), ``searchmoves``
  (:meth:`~CompiledChessTree.set_root_moves`), tree reuse (:meth:`~CompiledChessTree.advance`).

What differs from ``Tree``: there is no network cache (``Tree``'s ``cache`` argument; a cache hit there
saves a network call and is counted as a playout, so with a cache the two searches differ), and after
tree reuse ``node_count`` is the kept subtree's exact size (``Tree`` takes the new root's visits).
Gumbel root search and forced playouts raise ``ValueError`` (:func:`supports`).

Moves: the public methods take and return ``chess.Move`` as ``ChessState`` does (standard castling
``e1g1``, Chess960 king-takes-rook), so the tree is a drop-in for ``Tree`` in the search loop; inside,
moves are the kernel's ints.

Priors and values are used as float64 (exactly, for float32 priors: dense float32 priors are read as
they are, float64 ones too, anything else is converted to float64).  ``Tree`` uses values as given,
so an evaluator returning ``np.float32`` values makes ``Tree`` add the virtual loss back in float32 and
the two trees can then differ in the last bits (the engine's evaluators return Python floats).

Layout (``C`` node capacity, ``E`` edge capacity, both grown by doubling between calls; node 0 is the
root; a node's edges are ``first_edge .. first_edge + num_edges - 1``, its legal moves in python-chess's
order)::

    per node  [C]: visits N(s), value_sum W(s), visited_prior, first_edge, num_edges, expanded, pending,
                   terminal, terminal_value, proven, proven_plies, parent, parent_edge, repeated
    per edge  [E]: move (kernel int), prior P(s, a), child (-1 until created), child_n N(s, a),
                   child_w W(s, a)
    counts    [2]: nodes used, edges used
    stats     [4]: playouts, evaluations, depth_sum, max_depth of the current search
    root_allowed [256]: per root slot, whether searchmoves allows it
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar, cast

import chess
import numba
import numpy as np
import numpy.typing as npt

from engine.evaluator import Evaluation, dense_evaluations
from engine.games.chess import NUM_PLANES, POLICY_SIZE, ChessRules, ChessState
from engine.games.chess_kernel import (
    CHECKMATE,
    MAX_MOVES,
    NOT_OVER,
    KernelState,
    encode_into,
    find_mate,
    from_chess_move,
    from_chess_state,
    in_check,
    legal_moves_into,
    order_legal,
    outcome_code_given,
    push,
    repetition_count,
    rewind,
    to_chess_move,
)
from engine.search.batch import DenseBatch
from engine.search.config import SearchConfig

__all__ = ["ChessLeafBatch", "CompiledChessTree", "TreeArrays", "supports", "warm_up"]

F = TypeVar("F", bound=Callable[..., Any])

F8 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]


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

_ROOT = 0
_TOP = 0  # KernelState.meta[0]: the row of the current position

#: Free kernel rows the tree keeps above ``max(root row, max_plies)`` (the mate search plays 3 plies
#: from a root below ``max_plies``; walks never go past ``max_plies``, where every position is over).
_SPARE_ROWS = 5


class TreeArrays(NamedTuple):
    """The tree (see the module docstring): node arrays ``[C]``, edge arrays ``[E]``, ``counts[2]``,
    ``stats[4]``, ``root_allowed[256]``."""

    visits: F8
    value_sum: F8
    visited_prior: F8
    first_edge: I8
    num_edges: I8
    expanded: B1
    pending: B1
    terminal: B1
    terminal_value: F8
    proven: npt.NDArray[np.int8]
    proven_plies: I8
    parent: I8
    parent_edge: I8
    repeated: B1
    move: I8
    prior: F8
    child: I8
    child_n: F8
    child_w: F8
    counts: I8
    stats: I8
    root_allowed: B1


_NODE_FIELDS = 14  # TreeArrays: 14 node arrays, then 5 edge arrays, then counts, stats, root_allowed
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
    repetition_penalty: float


def _allocate(nodes: int, edges: int) -> TreeArrays:
    """Arrays for ``nodes`` nodes and ``edges`` edges, none used yet (uninitialised: every field of a
    node or an edge is written when it is made), zero counters, every root slot allowed."""
    f8, i8, b1 = np.float64, np.int64, np.bool_
    return TreeArrays(
        visits=np.empty(nodes, f8),
        value_sum=np.empty(nodes, f8),
        visited_prior=np.empty(nodes, f8),
        first_edge=np.empty(nodes, i8),
        num_edges=np.empty(nodes, i8),
        expanded=np.empty(nodes, b1),
        pending=np.empty(nodes, b1),
        terminal=np.empty(nodes, b1),
        terminal_value=np.empty(nodes, f8),
        proven=np.empty(nodes, np.int8),
        proven_plies=np.empty(nodes, i8),
        parent=np.empty(nodes, i8),
        parent_edge=np.empty(nodes, i8),
        repeated=np.empty(nodes, b1),
        move=np.empty(edges, i8),
        prior=np.empty(edges, f8),
        child=np.empty(edges, i8),
        child_n=np.empty(edges, f8),
        child_w=np.empty(edges, f8),
        counts=np.zeros(2, i8),
        stats=np.zeros(4, i8),
        root_allowed=np.ones(MAX_MOVES, b1),
    )


def _grown(t: TreeArrays, nodes: int, edges: int) -> TreeArrays:
    """``t`` copied into arrays with room for at least ``nodes`` nodes and ``edges`` edges."""
    bigger = _allocate(max(nodes, t.visits.shape[0]), max(edges, t.move.shape[0]))
    used = [int(t.counts[0])] * _NODE_FIELDS + [int(t.counts[1])] * _EDGE_FIELDS + [2, 4, MAX_MOVES]
    arrays = cast(tuple[npt.NDArray[Any], ...], t)  # every field is an array
    for old, new, n in zip(arrays, cast(tuple[npt.NDArray[Any], ...], bigger), used, strict=True):
        new[:n] = old[:n]
    return bigger


# ---- compiled kernels: nodes, PUCT, proofs ---------------------------------------------------------


@_njit
def _init_node(t: TreeArrays, node: int, parent: int, edge: int, terminal: bool, value: float) -> None:
    """Make ``node`` a fresh unexpanded node reached by ``edge`` of ``parent`` (-1, -1 for the root),
    terminal with exact ``value`` when ``terminal``."""
    t.visits[node] = 0.0
    t.value_sum[node] = 0.0
    t.visited_prior[node] = 0.0
    t.first_edge[node] = 0
    t.num_edges[node] = 0
    t.expanded[node] = False
    t.pending[node] = False
    t.terminal[node] = terminal
    t.terminal_value[node] = value
    t.proven[node] = _UNPROVEN
    t.proven_plies[node] = 0
    t.parent[node] = parent
    t.parent_edge[node] = edge
    t.repeated[node] = False


@_njit
def _init_root(t: TreeArrays, root: KernelState, buf: I8) -> None:
    """Node 0 for ``root``, the tree's only node: terminal only when it has no legal move (checkmate
    -1, stalemate 0; ``Tree._init_root_terminal``).  ``buf`` int64 ``[256]`` scratch."""
    n = legal_moves_into(root, buf)
    value = (-1.0 if in_check(root) else 0.0) if n == 0 else 0.0
    _init_node(t, _ROOT, -1, -1, n == 0, value)
    t.counts[0] = 1
    t.counts[1] = 0


@_njit
def _block_sum(a: F8, start: int, n: int) -> float:
    """numpy's pairwise sum of ``a[start : start + n]`` for ``n <= 128``: a plain loop below 8, else 8
    accumulators added pairwise, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(start, start + n):
            res += a[i]
        return res
    r = np.empty(8, np.float64)
    for j in range(8):
        r[j] = a[start + j]
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += a[start + i + j]
        i += 8
    res = float(((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])))
    while i < n:
        res += a[start + i]
        i += 1
    return res


@_njit
def _pairwise_sum(a: F8, start: int, n: int) -> float:
    """numpy's sum of ``a[start : start + n]`` (float64, contiguous), bit for bit: blocks of up to 128
    (:func:`_block_sum`), longer ranges split in two halves (a multiple of 8 first) and added.  The
    halving is walked with an explicit stack (numba's cache mishandles recursive functions)."""
    seg_start = np.empty(64, np.int64)
    seg_n = np.empty(64, np.int64)
    stage = np.zeros(64, np.int64)  # 0: left half to do, 1: right half to do, 2: both done
    left = np.empty(64, np.float64)
    sp = 0
    seg_start[0], seg_n[0] = start, n
    result = 0.0
    while sp >= 0:
        s0, n0 = seg_start[sp], seg_n[sp]
        half = n0 // 2 - (n0 // 2) % 8
        if n0 <= 128:
            result = _block_sum(a, s0, n0)
            sp -= 1
        elif stage[sp] == 0:
            stage[sp] = 1
            sp += 1
            seg_start[sp], seg_n[sp], stage[sp] = s0, half, 0
        elif stage[sp] == 1:
            left[sp] = result
            stage[sp] = 2
            sp += 1
            seg_start[sp], seg_n[sp], stage[sp] = s0 + half, n0 - half, 0
        else:
            result = left[sp] + result
            sp -= 1
    return result


@_njit
def _drop_prior(t: TreeArrays, node: int, edge: int) -> None:
    """``tree._drop_prior``: the prior of ``edge`` to 0, the others renormalised (when they sum above
    0), the visited prior sum recounted; numpy's sums, so the result equals ``Tree``'s bit for bit."""
    first, count = t.first_edge[node], t.num_edges[node]
    t.prior[edge] = 0.0
    total = _pairwise_sum(t.prior, first, count)
    if total > 0:
        for e in range(first, first + count):
            t.prior[e] = t.prior[e] / total
    visited = np.empty(count, np.float64)
    k = 0
    for e in range(first, first + count):
        if t.child_n[e] > 0:
            visited[k] = t.prior[e]
            k += 1
    t.visited_prior[node] = _pairwise_sum(visited, 0, k)


@_njit
def _new_child(t: TreeArrays, prm: _Params, node: int, edge: int, s: KernelState, buf: I8) -> tuple[int, int]:
    """``Tree._new_child``: create the child behind ``edge`` of ``node`` (its position is ``s``): terminal
    when the game is over there, or (with a repetition penalty) when the position occurred before,
    valued against the move's mover, whose prior goes to the other moves.  Returns the child's index
    and its number of legal moves, which are left in ``buf`` (int64 ``[256]``) as the generator
    lists them."""
    child = t.counts[0]
    t.counts[0] = child + 1
    t.child[edge] = child
    n = legal_moves_into(s, buf)
    code = outcome_code_given(s, n)
    if code != NOT_OVER:
        _init_node(t, child, node, edge, True, -1.0 if code == CHECKMATE else 0.0)
    elif prm.repetition_penalty != 0.0 and repetition_count(s) > 0:
        _init_node(t, child, node, edge, True, prm.repetition_penalty)
        t.repeated[child] = True
        _drop_prior(t, node, edge)
    else:
        _init_node(t, child, node, edge, False, 0.0)
    return int(child), n


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
    """The edge of expanded ``node`` with the first highest PUCT score (``Tree.puct_scores``; root
    slots outside ``searchmoves`` skipped)."""
    parent_n = t.visits[node]
    c = np.log((1.0 + parent_n + prm.c_base) / prm.c_base) + prm.c_init
    reduction = prm.fpu_root if node == _ROOT else prm.fpu
    q = t.value_sum[node] / parent_n if parent_n > 0 else 0.0
    fpu = q - reduction * np.sqrt(max(0.0, t.visited_prior[node]))
    scale = c * np.sqrt(parent_n)
    child_n, child_w, prior, allowed = t.child_n, t.child_w, t.prior, t.root_allowed
    at_root = node == _ROOT
    first = t.first_edge[node]
    best = first
    best_score = -np.inf
    for e in range(first, first + t.num_edges[node]):
        if at_root and not allowed[e - first]:
            continue  # outside searchmoves: score -inf
        n = child_n[e]
        score = child_w[e] / n if n > 0 else fpu
        score += scale * prior[e] / (1.0 + n)
        if score > best_score:
            best_score = score
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
    elif all_lost and t.num_edges[node] > 0:
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
    """``Tree._finish_exact``: a terminal node (not a penalised repetition) becomes proven by its value;
    back ``value`` up."""
    if t.terminal[node] and t.proven[node] == _UNPROVEN and not t.repeated[node]:
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


# ---- compiled kernels: selection and backup ----------------------------------------------------------


@_njit
def _walk(t: TreeArrays, prm: _Params, s: KernelState, buf: I8) -> tuple[int, int]:
    """``Tree._walk``: one walk down from the root, pushing the path onto ``s`` (the root's state; the
    caller rewinds it).  Returns the leaf's node index (now pending; its position on ``s``), or
    :data:`_BACKED_UP` (a terminal or proven node, backed up) or :data:`_COLLISION` (reverted); and
    when the leaf was created by this walk, its number of legal moves, left in ``buf`` (int64
    ``[256]``) by :func:`_new_child` (-1 otherwise)."""
    vl = prm.virtual_loss
    node = _ROOT
    depth = 0
    fresh = -1
    while True:
        if t.terminal[node]:
            _finish_exact(t, prm, node, t.terminal_value[node])
            return _BACKED_UP, -1
        if node != _ROOT and _is_decided(t.proven[node]):
            _finish_exact(t, prm, node, float(t.proven[node]))
            return _BACKED_UP, -1
        if not t.expanded[node]:
            break
        if t.num_edges[node] == 0:  # no legal move but not terminal: cannot happen with sane rules
            _finish_exact(t, prm, node, 0.0)
            return _BACKED_UP, -1
        edge = _select(t, prm, node)
        _add_visits(t, node, edge, vl, -vl)
        push(s, t.move[edge])
        depth += 1
        parent = node
        node = t.child[edge]
        fresh = -1
        if node < 0:
            node, fresh = _new_child(t, prm, parent, edge, s, buf)
    if t.pending[node]:
        _revert(t, prm, node)
        return _COLLISION, -1
    _note_depth(t, depth)
    t.pending[node] = True
    return node, fresh


@_njit
def _write_leaf(
    s: KernelState, m: int, fresh: int, planes: npt.NDArray[np.float32], mask: B1, moves: I8, indices: I8
) -> int:
    """Row ``m`` of the batch for the position on ``s``: its planes ``planes[m]`` (float32 ``[119, 8,
    8]``), its legal moves ``moves[m]`` and policy indices ``indices[m]`` (int64 ``[256]``,
    python-chess's order) and their mask ``mask[m]`` (bool ``[4672]``).  ``fresh`` is the number of
    legal moves already generated into ``moves[m]`` by the walk, or -1.  Returns the move count."""
    n = fresh if fresh >= 0 else legal_moves_into(s, moves[m])
    order_legal(s, moves[m], n, indices[m])
    encode_into(s, planes[m])
    row = mask[m]
    for p in range(row.shape[0]):
        row[p] = False
    for j in range(n):
        row[indices[m, j]] = True
    return n


@_njit
def _select_leaves(
    t: TreeArrays,
    prm: _Params,
    s: KernelState,
    count: int,
    planes: npt.NDArray[np.float32],
    mask: B1,
    moves: I8,
    indices: I8,
    nlegal: I8,
    leaves: I8,
) -> int:
    """``Tree.select_leaves(count)``: up to ``count`` walks; leaf ``m``'s node goes to ``leaves[m]``,
    its planes, moves, indices and mask to row ``m`` of the buffers (:func:`_write_leaf`), its move
    count to ``nlegal[m]``.  Returns the number of leaves.  The node arrays must have room for
    ``count`` more nodes; ``s`` (the root) is left as it was."""
    if t.terminal[_ROOT]:
        return 0
    root_top = s.meta[_TOP]
    m = 0
    collisions = 0
    for _ in range(count):
        if t.counts[0] >= prm.node_budget:
            break
        found, fresh = _walk(t, prm, s, moves[m])
        if found >= 0:
            nlegal[m] = _write_leaf(s, m, fresh, planes, mask, moves, indices)
            leaves[m] = found
            m += 1
        elif found == _COLLISION:
            collisions += 1
        rewind(s, root_top)
        if collisions > prm.max_collisions:
            break
    return m


@_njit
def _expand(t: TreeArrays, node: int, moves: I8, indices: I8, n: int, priors: npt.NDArray[Any]) -> None:
    """Attach the ``n`` moves ``moves`` to ``node`` with the entries ``priors[indices]`` of its dense
    priors (float ``[4672]``) unless it is expanded already, and clear its pending mark.  The edge
    arrays must have room."""
    t.pending[node] = False
    if t.expanded[node]:
        return
    first = t.counts[1]
    for j in range(n):
        e = first + j
        t.move[e] = moves[j]
        t.prior[e] = np.float64(priors[indices[j]])
        t.child[e] = -1
        t.child_n[e] = 0.0
        t.child_w[e] = 0.0
    t.counts[1] = first + n
    t.first_edge[node] = first
    t.num_edges[node] = n
    t.expanded[node] = True
    t.visited_prior[node] = 0.0


@_njit
def _backup(
    t: TreeArrays,
    prm: _Params,
    m: int,
    leaves: I8,
    moves: I8,
    indices: I8,
    nlegal: I8,
    priors: npt.NDArray[Any],
    values: F8,
) -> None:
    """``Tree.backup`` of the first ``m`` leaves: expand leaf ``i`` (node ``leaves[i]``, its
    ``nlegal[i]`` moves and indices, rows of ``[_, 256]``) with its dense priors ``priors[i]`` (float32
    or float64 ``[_, 4672]``) and back up ``values[i]``.  The edge arrays must have room."""
    for i in range(m):
        _expand(t, leaves[i], moves[i], indices[i], nlegal[i], priors[i])
        t.stats[_DEPTH_SUM] += _backup_value(t, prm, leaves[i], values[i])
    t.stats[_EVALUATIONS] += m


@_njit
def _cancel(t: TreeArrays, prm: _Params, m: int, leaves: I8) -> None:
    """``Tree.cancel`` of the first ``m`` leaves: no longer pending, virtual loss taken back."""
    for i in range(m):
        t.pending[leaves[i]] = False
        _revert(t, prm, leaves[i])


@_njit
def _prove_root_mate(t: TreeArrays, slot: int, plies: int) -> None:
    """``Tree._search_root_mate`` once a mate of ``plies`` starting with root ``slot`` is found: the
    move's child (created unexpanded if missing; the node arrays must have room) a proven loss in
    ``plies - 1``, all the root prior on the move, the root a proven win in ``plies``."""
    first = t.first_edge[_ROOT]
    edge = first + slot
    child = t.child[edge]
    if child < 0:
        child = t.counts[0]
        t.counts[0] = child + 1
        _init_node(t, child, _ROOT, edge, False, 0.0)
        t.child[edge] = child
    t.proven[child] = _LOSS
    t.proven_plies[child] = plies - 1
    for e in range(first, first + t.num_edges[_ROOT]):
        t.prior[e] = 0.0
    t.prior[edge] = 1.0
    t.visited_prior[_ROOT] = 1.0 if t.child_n[edge] > 0 else 0.0
    t.proven[_ROOT] = _WIN
    t.proven_plies[_ROOT] = plies


# ---- compiled kernels: tree reuse ------------------------------------------------------------------


@_njit
def _keep_subtree(t: TreeArrays, keep_root: int) -> I8:
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
def _move_nodes(t: TreeArrays, remap: I8) -> int:
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
        t.repeated[j] = t.repeated[i]
        t.parent[j] = remap[t.parent[i]] if j > 0 else -1
        t.parent_edge[j] = t.parent_edge[i] if j > 0 else -1
        kept += 1
    return kept


@_njit
def _order_by(keys: I8, n: int) -> I8:
    """The indices ``0 .. n-1`` ordered by ``keys`` (``np.argsort(keys[:n])``, equal keys in any order),
    by heapsort: numba's argsort costs seconds of compilation on a cold start, this a few loops."""
    order = np.arange(n)
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(keys, order, start, n)
    for end in range(n - 1, 0, -1):
        order[0], order[end] = order[end], order[0]
        _sift_down(keys, order, 0, end)
    return order


@_njit
def _sift_down(keys: I8, order: I8, root: int, size: int) -> None:
    """Restore the max-heap of ``order[:size]`` (by ``keys``) below ``root``."""
    while True:
        child = 2 * root + 1
        if child >= size:
            return
        if child + 1 < size and keys[order[child + 1]] > keys[order[child]]:
            child += 1
        if keys[order[root]] >= keys[order[child]]:
            return
        order[root], order[child] = order[child], order[root]
        root = child


@_njit
def _move_edges(t: TreeArrays, kept: int, remap: I8) -> int:
    """Pack the edge blocks of the first ``kept`` (moved) nodes to the front in the order of their old
    offsets (so a block never moves up over one not yet moved; unexpanded nodes, whose offset is 0,
    have no block), renumbering children and their parent edges; returns the edges used."""
    order = _order_by(t.first_edge, kept)
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
        raise ValueError("CompiledChessTree has no Gumbel root search and no forced playouts")
    return _Params(
        c_init=float(config.c_init),
        c_base=float(config.c_base),
        fpu_root=float(config.fpu_reduction_root),
        fpu=float(config.fpu_reduction),
        virtual_loss=float(config.virtual_loss),
        max_collisions=int(config.max_collisions),
        node_budget=int(config.node_budget),
        repetition_penalty=float(config.repetition_penalty),
    )


def supports(config: SearchConfig) -> bool:
    """Whether :class:`CompiledChessTree` searches with ``config`` (not with Gumbel or forced playouts)."""
    return config.gumbel is None and config.forced_playouts <= 0


class _Bound:
    """A compiled kernel called straight through its machine-code entry point (as in
    :mod:`engine.search.compiled_go`: numba's per-call typing of the tree's arrays costs more than a
    batch of walks).  The first call goes through the dispatcher and records the overload for those
    argument types; later calls must pass arguments of the same types."""

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
    """One batch's arrays (``K`` leaves at most): planes float32 ``[K, 119, 8, 8]``, legal mask bool
    ``[K, 4672]``, legal moves and their policy indices int64 ``[K, 256]`` (python-chess's order),
    move counts and leaf nodes int64 ``[K]``."""

    planes: npt.NDArray[np.float32]
    legal: B1
    moves: I8
    indices: I8
    nlegal: I8
    leaves: I8


class ChessLeafBatch(DenseBatch):
    """A batch of :class:`CompiledChessTree` (:class:`~engine.search.batch.DenseBatch`): the first ``m``
    rows of its buffers."""

    def __init__(self, buffers: _Buffers, m: int) -> None:
        super().__init__(buffers.planes[:m], buffers.legal[:m])
        self.buffers = buffers
        self.size = m
        self.done = False  # backed up or cancelled: the buffers are free again

    def legal_indices(self) -> list[I8]:
        """Each leaf's legal policy indices, int64 ``[L_i]`` in python-chess's move order (``Tree``'s
        ``Leaf.legal``)."""
        b = self.buffers
        return [b.indices[i, : b.nlegal[i]].copy() for i in range(self.size)]


def _kernel_state(state: ChessState) -> KernelState:
    """The kernel state of ``state`` with room for any walk (see :data:`_SPARE_ROWS`)."""
    ply = len(state.board.move_stack)
    return from_chess_state(state, room=max(state.rules.max_plies, ply) - ply + _SPARE_ROWS)


def _with_rows(s: KernelState, rows: int) -> KernelState:
    """``s`` itself when it has ``rows`` rows, else a copy with ``rows`` (the history kept)."""
    if s.bb.shape[0] >= rows:
        return s
    top = int(s.meta[_TOP])
    bb = np.zeros((rows, s.bb.shape[1]), np.uint64)
    st = np.zeros((rows, s.st.shape[1]), np.int64)
    bb[: top + 1] = s.bb[: top + 1]
    st[: top + 1] = s.st[: top + 1]
    return KernelState(bb, st, s.meta.copy())


class CompiledChessTree:
    """A PUCT tree over a chess position searched in compiled code; the same search as ``Tree`` (module
    docstring) and a :class:`~engine.search.tree_protocol.SearchTree` for the engine's search loop.

    Batches go through :meth:`select_batch` / :meth:`backup_batch` (dense arrays, at most two batches
    at a time: one in flight while the next is selected), or one at a time through the pairs
    :meth:`select_leaves` / :meth:`backup` (:class:`Evaluation` lists) and :meth:`select_leaves_arrays`
    / :meth:`backup_arrays` (arrays).  All give the same search for the same priors and values.

    Args:
        state: the root position with its history (not kept: the tree copies it into a kernel state).
        config: search settings (root noise drawn as ``Tree`` draws it: the same ``rng`` draws give the
            same priors).
        rng: random generator for the root noise (default: seeded with ``config.seed``).

    Raises:
        ValueError: the config asks for Gumbel or forced playouts.
    """

    def __init__(
        self, state: ChessState, config: SearchConfig, rng: np.random.Generator | None = None
    ) -> None:
        self.config = config
        self._params = _params(config)
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self.rules: ChessRules = state.rules
        self._root = _kernel_state(state)
        # Room for a first 65,536 nodes, a quarter of them expanded with ~40 moves: np.empty leaves the
        # pages untouched until used, so this costs address space only.
        nodes = max(2, min(config.node_budget + 1, 1 << 16))
        self._arrays = _allocate(nodes, nodes * 10)
        self._buf = np.empty(MAX_MOVES, np.int64)
        _init_root(self._arrays, self._root, self._buf)
        self._noise_pending = config.dirichlet_alpha is not None
        self._allowed: list[chess.Move] | None = None  # searchmoves
        self.root_mask: B1 | None = None  # bool [L]: root slots searchmoves allows (None: all)
        self._select = _Bound(_select_leaves)
        self._backups = {np.dtype(np.float32): _Bound(_backup), np.dtype(np.float64): _Bound(_backup)}
        self._cancel = _Bound(_cancel)
        self._free: list[_Buffers] = []
        self._current: ChessLeafBatch | None = None  # the batch of the one-at-a-time methods

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

    def set_root_moves(self, allowed: Sequence[chess.Move] | None) -> None:
        """Restrict the root to ``allowed`` moves (UCI ``searchmoves``); ``None``, empty, or no legal
        move among them: all moves (``Tree.set_root_moves``)."""
        self._allowed = list(allowed) if allowed else None
        self._apply_root_mask()

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> ChessLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`ChessLeafBatch` (empty when none needs the network)."""
        self._reserve(count)
        b = self._take_buffers(count)
        args = (self._arrays, self._params, self._root, int(count), b.planes, b.legal, b.moves, b.indices)
        m = int(self._select(*args, b.nlegal, b.leaves))
        batch = ChessLeafBatch(b, m)
        if m == 0:
            self._release(batch)
        return batch

    def backup_batch(self, batch: ChessLeafBatch) -> None:
        """Back up a started batch with its dense priors and values (waits for the network call)."""
        if batch.done:
            return
        priors, values = batch.result()
        self._backup_dense(batch, np.asarray(priors), np.asarray(values))

    def cancel_batch(self, batch: ChessLeafBatch) -> None:
        """Abandon a batch: its leaves are no longer pending and their virtual loss is taken back."""
        if batch.done:
            return
        self._cancel(self._arrays, self._params, batch.size, batch.buffers.leaves)
        self._release(batch)

    def advance(self, move: chess.Move) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges are
        moved to the front of the arrays in one compiled pass; a fresh root when the move's child was
        never expanded.  Then root noise and the root mate search, as ``Tree`` does.

        Raises:
            ValueError: ``move`` is not legal at the root.
        """
        t = self._arrays
        kernel_move = from_chess_move(self._root, move)
        keep = -1
        edges = self._root_edges()
        for e in range(edges.start, edges.stop):
            if t.move[e] == kernel_move:
                keep = int(t.child[e])
                break
        top = int(self._root.meta[_TOP])
        self._root = _with_rows(self._root, max(top + 1, self.rules.max_plies) + _SPARE_ROWS + 1)
        push(self._root, kernel_move)
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root, self._buf)
        else:
            _reroot(t, keep)
        t.root_allowed[:] = True
        self._allowed = None
        self.root_mask = None
        self._noise_pending = self.config.dirichlet_alpha is not None
        if t.expanded[_ROOT]:
            self._apply_root_noise()
            self._search_root_mate()

    # ---- results (SearchTree) ------------------------------------------------------------------------
    def root_child_visits(self) -> F8:
        """float64 ``[L]``: the root's ``N(s, a)`` (a view: read only)."""
        return self._arrays.child_n[self._root_edges()]

    def root_move(self, slot: int) -> chess.Move:
        """The move of root ``slot`` as ``ChessState`` writes it."""
        return to_chess_move(int(self._arrays.move[self._root_edge(slot)]), self.rules.chess960)

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
            allowed = self.root_mask is None or bool(self.root_mask[slot])
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

    def best_move(self) -> chess.Move | None:
        """The move to play (``Tree.best_move``), ``None`` before the root is expanded."""
        slots = self.ranked_root_slots()
        return self.root_move(slots[0]) if slots else None

    def principal_variation(self, first_slot: int | None = None, max_len: int = 64) -> list[chess.Move]:
        """``Tree.principal_variation``: the most visited line (starting with ``first_slot``)."""
        t = self._arrays
        pv: list[chess.Move] = []
        node = _ROOT
        slot = first_slot
        while t.expanded[node] and len(pv) < max_len:
            first, count = int(t.first_edge[node]), int(t.num_edges[node])
            if slot is None:
                visits = t.child_n[first : first + count]
                if count == 0 or visits.max() <= 0:
                    break
                slot = int(np.argmax(visits))
            pv.append(to_chess_move(int(t.move[first + slot]), self.rules.chess960))
            child = int(t.child[first + slot])
            if child < 0:
                break
            node = child
            slot = None
        return pv

    def root_visits(self) -> tuple[list[chess.Move], F8]:
        """``(moves, visits)``: the root's legal moves (python-chess's order) and their visit counts
        ``N(s, a)`` float64 ``[L]`` (``Tree.root_visits``; empty before the root is expanded)."""
        return self._root_moves(), self._arrays.child_n[self._root_edges()].copy()

    def pruned_root_visits(self) -> F8:
        """float64 ``[L]``: ``Tree.pruned_root_visits`` without forced playouts (never on here): a copy of
        the root visits."""
        return self._arrays.child_n[self._root_edges()].copy()

    def root_values(self) -> F8:
        """float64 ``[L]``: ``W(s, a)`` of the root moves, from the root player's point of view."""
        return self._arrays.child_w[self._root_edges()].copy()

    def root_priors(self) -> F8:
        """float64 ``[L]``: ``P(s, a)`` of the root moves (noise and the mate search included)."""
        return self._arrays.prior[self._root_edges()].copy()

    # ---- one batch at a time ---------------------------------------------------------------------------
    def select_leaves_arrays(self, count: int) -> tuple[npt.NDArray[np.float32], B1]:
        """Walk down ``count`` times (fewer on collisions or a full tree), as ``Tree.select_leaves``.

        Returns:
            ``(planes, legal)``: float32 ``[m, 119, 8, 8]``, the ``m`` leaves' encoded positions, and
            bool ``[m, 4672]``, their legal policy indices.  Both are views of buffers that a later
            call overwrites; ``legal`` is read-only.

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

    def select_leaves(self, count: int) -> tuple[npt.NDArray[np.float32], list[I8]]:
        """:meth:`select_leaves_arrays` for an :class:`~engine.evaluator.Evaluator`.

        Returns:
            ``(planes, legal)``: float32 ``[m, 119, 8, 8]`` (a view of a buffer that a later call
            overwrites) and ``m`` int64 arrays ``[L_i]`` of the leaves' legal policy indices in
            python-chess's move order (``Tree``'s ``Leaf.legal``).

        Raises:
            RuntimeError: the previous batch has not been backed up.
        """
        planes, _ = self.select_leaves_arrays(count)
        assert self._current is not None
        return planes, self._current.legal_indices()

    def backup_arrays(self, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Expand the leaves of the last selection with dense priors and back the values up, removing
        the virtual loss; one compiled call for the batch.

        Args:
            priors: float ``[m, 4672]``, each leaf's priors over the whole policy, already normalised
                over its legal moves (e.g. a masked softmax written back densely); the entries of
                illegal moves are ignored.  Used as float64 (exactly, for float32 priors).
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
        """Expand the leaves of the last :meth:`select_leaves` with their evaluations (priors ``[L_i]``
        in the order of the legal indices, value from the leaf's side to move) and back the values up
        (through the compiled call of :meth:`backup_arrays`).

        Raises:
            RuntimeError: no batch is waiting.
            ValueError: the evaluations do not match the leaves.
        """
        if self._current is None:
            raise RuntimeError("no leaves to back up")
        batch = self._current
        if len(evaluations) != batch.size:
            raise ValueError(f"{len(evaluations)} evaluations for {batch.size} leaves")
        legal = batch.legal_indices()
        if any(len(ev.priors) != len(idx) for ev, idx in zip(evaluations, legal, strict=True)):
            raise ValueError("an evaluation's priors do not match its leaf's legal moves")
        priors, values = dense_evaluations(evaluations, legal, (batch.size, POLICY_SIZE))
        self._backup_dense(self._take_current(), priors, values)

    # ---- internals -----------------------------------------------------------------------------------
    def _take_current(self) -> ChessLeafBatch:
        batch = self._current
        if batch is None:
            raise RuntimeError("no leaves to back up")
        self._current = None
        return batch

    def _backup_dense(
        self, batch: ChessLeafBatch, priors: npt.NDArray[Any], values: npt.NDArray[Any]
    ) -> None:
        """The compiled backup of ``batch`` with priors ``[m, 4672]`` and values ``[m]`` (priors read as
        they are when float32 or float64, C-contiguous and writeable, else copied to float64); makes
        room for the leaves' edges first, then treats a newly expanded root as ``Tree._expand`` does
        (noise, searchmoves, the mate search)."""
        m = batch.size
        self._check_shapes(m, priors, values)
        if batch.done:  # an empty selection: nothing to back up, its buffers are free already
            return
        kernel = self._backups.get(priors.dtype)
        if kernel is None or not (priors.flags.c_contiguous and priors.flags.writeable):
            priors = np.array(priors, np.float64 if kernel is None else priors.dtype, order="C")
            kernel = self._backups[priors.dtype]
        b = batch.buffers
        t = self._arrays
        need = int(t.counts[1]) + int(b.nlegal[:m].sum())
        if need > t.move.shape[0]:
            self._arrays = t = _grown(t, 0, 2 * need)
        root_was_expanded = bool(t.expanded[_ROOT])
        kernel(
            t, self._params, m, b.leaves, b.moves, b.indices, b.nlegal, priors, np.array(values, np.float64)
        )
        self._release(batch)
        if not root_was_expanded and t.expanded[_ROOT]:
            self._apply_root_noise()
            self._apply_root_mask()
            self._search_root_mate()

    def _check_shapes(self, m: int, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """``ValueError`` unless priors are ``[m, 4672]`` and values ``[m]``."""
        if priors.shape != (m, POLICY_SIZE) or values.shape != (m,):
            raise ValueError(
                f"priors {priors.shape} and values {values.shape} for {m} leaves "
                f"(expected ({m}, {POLICY_SIZE}) and ({m},))"
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

    def _apply_root_mask(self) -> None:
        """``Tree._apply_root_mask``: the searchmoves mask over the expanded root's slots (``None`` when
        there are no searchmoves or none of them is legal)."""
        t = self._arrays
        t.root_allowed[:] = True
        self.root_mask = None
        if not t.expanded[_ROOT] or not self._allowed:
            return
        allowed = self._allowed
        mask = np.array([m in allowed for m in self._root_moves()], dtype=bool)
        if mask.any():
            self.root_mask = mask
            t.root_allowed[: mask.shape[0]] = mask

    def _search_root_mate(self) -> None:
        """``Tree._search_root_mate``: prove the expanded root won when the rules' mate search
        (:func:`~engine.games.chess_kernel.find_mate`) finds a forced mate; nothing when it is already
        proven, off, none is found, or searchmoves excludes the mating move."""
        t = self._arrays
        nodes = self.config.root_mate_nodes
        if nodes <= 0 or t.proven[_ROOT] != _UNPROVEN or t.terminal[_ROOT] or not self._root_edges_count():
            return
        move, plies = find_mate(self._root, nodes)
        if move < 0:
            return
        edges = self._root_edges()
        slots = np.flatnonzero(t.move[edges] == move)
        if slots.shape[0] == 0:
            return
        slot = int(slots[0])
        if self.root_mask is not None and not self.root_mask[slot]:
            return  # not among the moves the GUI allowed
        self._reserve(1)
        _prove_root_mate(self._arrays, slot, int(plies))

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

    def _root_edges_count(self) -> int:
        edges = self._root_edges()
        return int(edges.stop - edges.start)

    def _root_edge(self, slot: int) -> int:
        edges = self._root_edges()
        if not 0 <= slot < edges.stop - edges.start:
            raise IndexError(f"root slot {slot} of {edges.stop - edges.start}")
        return int(edges.start) + slot

    def _root_moves(self) -> list[chess.Move]:
        """The root's moves as ``ChessState`` lists them (empty before the root is expanded)."""
        chess960 = self.rules.chess960
        return [to_chess_move(int(m), chess960) for m in self._arrays.move[self._root_edges()]]

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
            np.zeros((count, NUM_PLANES, 8, 8), np.float32),
            np.zeros((count, POLICY_SIZE), np.bool_),
            np.zeros((count, MAX_MOVES), np.int64),
            np.zeros((count, MAX_MOVES), np.int64),
            np.zeros(count, np.int64),
            np.zeros(count, np.int64),
        )

    def _release(self, batch: ChessLeafBatch) -> None:
        """Give ``batch``'s buffers back (it is done)."""
        batch.done = True
        batch.buffers.legal.flags.writeable = True
        self._free.append(batch.buffers)


#: A mate in one (Ra8#) for :func:`warm_up`'s root mate search.
_WARM_UP_MATE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"


def warm_up() -> None:
    """Load (or, with an empty numba cache, compile) every kernel a search uses, with a few walks from
    the start position (float32 and float64 priors, a cancelled batch, tree reuse, the mate search) and
    a root proven by a mate in one.
    Call it before the first search so no move pays for compilation."""
    tree = CompiledChessTree(ChessState(), SearchConfig(node_budget=64))
    for dtype in (np.float32, np.float64, np.float32):
        batch = tree.select_batch(4)
        if len(batch):
            uniform = batch.legal_mask / batch.legal_mask.sum(axis=1, keepdims=True)
            tree._backup_dense(batch, uniform.astype(dtype), np.zeros(len(batch), np.float32))
    tree.cancel_batch(tree.select_batch(2))
    best = tree.best_move()
    if best is not None:
        tree.advance(best)
    mate = CompiledChessTree(ChessState(chess.Board(_WARM_UP_MATE)), SearchConfig(node_budget=8))
    batch = mate.select_batch(1)  # the root: its backup finds the mate and proves the root
    mate._backup_dense(batch, batch.legal_mask.astype(np.float32), np.zeros(len(batch), np.float32))
