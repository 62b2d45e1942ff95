"""A compiled PUCT tree for shogi: the reference ``Tree``'s search (``tests/engine/search/reference_tree.py``),
node for node, in numba.

The shogi counterpart of :mod:`engine.search.compiled_chess`, with one difference of design: the rules
stay in cshogi (C++, already fast), which compiled code cannot call.  The tree, PUCT, virtual loss,
backup, proofs and reuse live in numba on :mod:`engine.search.compiled_tree`'s arrays; a walk runs in
compiled code down to a position it needs the rules of (a move's child made now, or a node made before
and never evaluated).  Whether such a walk ends on an ordinary leaf or on a terminal position (or a
mate in one) decides what the next walks do, so the selection is speculative and settled afterwards:

1. walks (:func:`_walks`) are made as if each such position were an ordinary leaf (the child made
   non-terminal and pending), each *recorded* with its path and the values it changed (``_Walks``);
   a walk that would back up an exact value while recorded walks wait ends the round instead;
2. Python plays each recorded path on one scratch ``cshogi.Board`` (push from the root, pop back) and
   collects cshogi's answers (:meth:`CompiledShogiTree._answer`): the Zobrist key, check, the
   entering-king declaration, the legal moves and, with ``config.mate_check``, a mate in one with the
   mated position's key, check, declaration and move count;
3. the next compiled call settles the records in order (:func:`_settle`): ordinary leaves get their
   batch rows (policy indices, the 362 planes); at the first that is not one, every walk
   after it is taken back bit for bit (its path's kept values restored, the children it made
   unlinked, the counters put back), its real end is applied (a terminal child backed up, a penalised
   repetition, a mate in one proven) and the walks go on from there.

Terminal positions and mates are rare among new leaves, so a batch of 16 leaves costs about two
compiled calls and one Python pass over cshogi; the backup of a batch is one compiled call
(:func:`~engine.search.compiled_tree.backup_indexed`).

Beside the tree the compiled side keeps, per node (:class:`NodeInfo`), the position's Zobrist key, its
repetition count and whether its side to move is in check, and for the root's game line
(:class:`RootLine`: the positions from the state's first one to the root) the same plus the moves
and the root's board codes and hands.  With these the compiled code counts repetitions
(``ShogiState.repetition_count``), decides sennichite and perpetual check
(``ShogiState._repetition_outcome``), the ply limit, and draws the leaves' planes
(:func:`~engine.games.shogi_kernel.encode_position_over`, the board reached by playing the path's moves on
the root's board codes with :func:`~engine.games.shogi_kernel.do_move`), all without cshogi.

It makes exactly the choices of ``Tree`` on a :class:`~engine.games.shogi.ShogiState` (same arithmetic,
same order of floating-point operations, a node's edges its legal moves in cshogi's order):

* PUCT with ``c(s)``, first-play urgency (``fpu_reduction_root`` at the root), the first maximum wins;
  virtual loss, collisions (``max_collisions``), the node budget;
* terminal nodes valued as ``ShogiState.outcome()``, in its order: fourfold repetition (a draw, or a
  loss for the side that gave check with every move since the first occurrence), an entering-king
  declaration (a win, with ``ShogiRules.entering_king``), no legal move (a loss), the length limit
  (``ShogiState.length_limit``: ``max_plies`` plies since the state's first position, or the game ply
  ``draw_game_ply``; a draw); the root is terminal only when it has no legal move;
* the MCTS-solver proofs; ``config.mate_check``'s mate in one at every leaf (``Tree._prove_mate``: the
  leaf expanded with all its prior on the mate and proven won, the mated child terminal, no network
  call) and the root's df-pn mate search (``config.root_mate_nodes``, ``ShogiState.find_mate``);
* ``config.repetition_penalty`` (a repeated position terminal with the penalty, the move's prior
  dropped, as in chess);
* root Dirichlet noise (the same ``rng`` draws as ``Tree``, also when a mate in one expands the root
  during a selection), ``searchmoves`` and tree reuse (:meth:`CompiledShogiTree.advance`).

What differs from ``Tree`` is what differs for chess: no network cache, and after tree reuse
``node_count`` is the kept subtree's exact size (``Tree`` takes the new root's visits).  Gumbel root
search and forced playouts choose the root child of each walk in Python
(:mod:`engine.search.root_plan`; a walk made again after a settlement keeps its planned root child).
Priors and values are used as
float64 (exactly, for float32 priors).  Moves are cshogi's move ints, as ``ShogiState``'s.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import cshogi
import numpy as np
import numpy.typing as npt

from engine import softmax_kernel
from engine.evaluator import uniform_rows
from engine.games.shogi import MOVE_INDEX, NUM_PLANES, ShogiRules, ShogiState
from engine.games.shogi_kernel import MARKS_WIDTH, board_codes, do_move, encode_position_over
from engine.jit import njit_no_alloc as _njit_no_alloc
from engine.jit import njit_no_alloc_inline
from engine.search.compiled_indexed import (
    IndexedBuffers,
    IndexedCompiledTree,
    IndexedLeafBatch,
    compile_python_calls,
    exercise,
    new_indexed_buffers,
)
from engine.search.compiled_tree import (
    B1,
    BACKED_UP,
    COLLISION,
    F8,
    I8,
    MAX_DEPTH,
    POOL,
    ROOT,
    STOP_WALK,
    UNPROVEN,
    Params,
    SumScratch,
    TreeArrays,
    add_child,
    drop_prior_into,
    expand_proven_mate,
    finish_exact,
    first_room,
    fixed_width_reserve,
    init_root,
    is_full,
    new_sum_scratch,
    prove_root_mate,
    reroot_mapped,
    walk,
)
from engine.search.config import SearchConfig
from engine.search.kernel_build import compile_for
from engine.uint8_io import FLOAT_PLANES, Uint8Quantization

__all__ = ["CompiledShogiTree", "NodeInfo", "RootLine", "ShogiLeafBatch", "warm_up"]

U8 = npt.NDArray[np.uint64]

#: The most legal moves a shogi position has (593 is the known maximum): edges per node, root slots.
MAX_MOVES = 600

_HISTORY_STEPS = 8  # positions drawn in a leaf's planes
_HAND_SCALE = np.array([1.0 / m for m in (18, 4, 4, 4, 4, 2, 2)], dtype=np.float32)
_MOVE_KEY_MASK = 0x7FFF

# What a compiled selection call returns.
_DONE = 0  # the batch is selected
_NEED = 1  # walks wait for cshogi's answers about the positions at the ends of their paths
_ROOT = 2  # a mate in one expanded the root: root noise and searchmoves before the next walk

# Slots of the selection's control array (int64 [8]).
_WALKS = 0  # walks made in this batch (speculative ones included)
_LEAVES = 1  # leaves settled for the network (the batch rows 0 .. _LEAVES - 1)
_COLLISIONS = 2
_COUNT = 3  # walks asked for
_RECORDS = 4  # walks recorded since the last settlement
_REQUESTS = 5  # of them, walks waiting for cshogi
_ROWS = 6  # batch rows given out (settled leaves and waiting walks)

# What a recorded walk ended on (_Walks.rec[:, _KIND]).
_NEW_CHILD = 1  # a child made for the first time (made, pending, valued as a leaf until settled)
_OLD_LEAF = 2  # a node made before and never evaluated (pending)
_COLLIDED = 3  # a pending node (reverted)

# Columns of _Walks.rec (int64 [K, 9]): the walk and the counters right after it.
_KIND = 0
_NODE = 1  # the new child or the old leaf
_EDGE = 2  # the edge into it
_DEPTH = 3
_ROW = 4  # the batch row of its leaf
_NODES_BEFORE = 5  # nodes in the tree before the walk
_WALKS_AFTER = 6
_COLLISIONS_AFTER = 7
_MAX_DEPTH_AFTER = 8

#: What :func:`_walk` returns when it met an exact node while speculating (taken back, to be made again).
_STOPPED = -3

#: The answers of a collided walk (none asked).
_NO_ANSWER = (0,) * 8

# Columns of the answers (_Walks.io, int64 [K, 8]) about a walk's position, and after its mate in one.
_CHECK = 0
_NYU = 1  # the side to move may declare an entering-king win (with the rule on)
_NLEGAL = 2  # legal moves (written into the batch's move row)
_MATE = 3  # cshogi's legal mate in one (0: none, or not asked)
_CHECK2 = 4
_NYU2 = 5
_NLEGAL2 = 6

# Slots of RootLine.meta.
_PLY = 0  # positions before the root (moves since the state's first position)
_SIDE = 1  # the root's side to move
_GAME_PLY = 2  # the SFEN move number - 1 of the root
_MAX_PLIES = 3
_ENTERING_KING = 4


class NodeInfo(NamedTuple):
    """Per node ``[C]`` (the tree's node capacity): the position's Zobrist key, its repetition count
    (occurrences before it on the game line, ``ShogiState.repetition_count``) and whether its side to
    move is in check."""

    key: U8
    reps: I8
    check: B1


class RootLine(NamedTuple):
    """The game line from the state's first position to the root (``H`` moves, ``H + 1`` positions):
    keys uint64, repetition counts int64 and check flags bool ``[H + 1]``; moves int64 ``[max(H, 1)]``
    (move ``i`` leads from position ``i`` to ``i + 1``); the root's board codes int64 ``[81]`` and hands
    int64 ``[2, 7]``; ``meta`` int64 ``[5]`` (``_PLY``, ``_SIDE``, ``_GAME_PLY``, ``_MAX_PLIES``,
    ``_ENTERING_KING``)."""

    keys: U8
    reps: I8
    check: B1
    moves: I8
    board: I8
    hands: I8
    meta: I8


class _Scratch(NamedTuple):
    """A leaf's encoding scratch: board codes int64 ``[81]``, hands ``[2, 7]``, the repetition counts
    and moves of its newest positions ``[8]``; and how the rows hold the planes, ``quant`` float64
    ``[2]``: scale and zero point of uint8 rows, scale 0 for float32 ones
    (:class:`~engine.uint8_io.Uint8Quantization`)."""

    board: I8
    hands: I8
    reps: I8
    moves: I8
    quant: F8


class _Walks(NamedTuple):
    """The walks of one selection since its last settlement (``K`` at most, ``D`` the longest path):
    ``rec`` int64 ``[K, 9]`` (columns ``_KIND`` .. ``_MAX_DEPTH_AFTER``); per step of each path the move
    ``paths``, node ``pnodes`` and edge ``pedges`` int64 ``[K, D]`` and the values it changed ``pvals``
    float64 ``[K, D, 4]``; cshogi's answers ``io`` int64 ``[K, 8]``, ``keys`` uint64 ``[K, 2]`` (the
    position's and the mated position's) and ``legal`` int64 ``[K * 600]`` (the legal moves of the
    walks that asked, one after the other, ``io[:, _NLEGAL]`` each); the encoding scratch and the
    prior sums' (:class:`~engine.search.compiled_tree.SumScratch`, a penalised repetition's prior
    dropped)."""

    rec: I8
    paths: I8
    pnodes: I8
    pedges: I8
    pvals: F8
    io: I8
    keys: U8
    legal: I8
    scratch: _Scratch
    sums: SumScratch


# ---- compiled kernels: the game line, outcomes --------------------------------------------------------


@_njit_no_alloc
def _count_reps(t: TreeArrays, x: NodeInfo, line: RootLine, node: int, key: np.uint64) -> int:
    """How many positions of the line up to ``node`` (included: its path, then the root's game line)
    have ``key``: the repetition count of a position with ``key`` reached from ``node``."""
    count = 0
    while node != ROOT:
        if x.key[node] == key:
            count += 1
        node = t.parent[node]
    keys = line.keys
    for i in range(keys.shape[0]):
        if keys[i] == key:
            count += 1
    return count


@_njit_no_alloc
def _repetition_value(
    t: TreeArrays, x: NodeInfo, line: RootLine, node: int, key: np.uint64, check: bool
) -> float:
    """``ShogiState._repetition_outcome`` of the position (``key``, ``check``) reached from ``node``: +1
    when the side to move was in check in every position since the first occurrence of ``key`` (the
    opponent checked perpetually), -1 when it gave check in all the others, else 0 (a draw).

    The positions are read newest first (this one, ``node`` and its ancestors below the root, then the
    root's game line from its newest position), in two passes: the oldest occurrence of ``key``, then the
    checks since (no scratch arrays: the kernel allocates nothing, see :mod:`engine.jit`)."""
    oldest = 0
    j = 1
    v = node
    while v != ROOT:
        if x.key[v] == key:
            oldest = j
        j += 1
        v = t.parent[v]
    for i in range(line.keys.shape[0] - 1, -1, -1):
        if line.keys[i] == key:
            oldest = j
        j += 1
    even = True  # in check at 0, 2, 4.. plies ago: checked after every move of the opponent
    odd = True
    j = 0
    v = node
    i = line.keys.shape[0] - 1
    while j < oldest:
        if j == 0:
            in_check = check
        elif v != ROOT:
            in_check = bool(x.check[v])
            v = t.parent[v]
        else:
            in_check = bool(line.check[i])
            i -= 1
        if not in_check:
            if j % 2 == 0:
                even = False
            else:
                odd = False
        j += 1
    if even:
        return 1.0
    if odd:
        return -1.0
    return 0.0


@_njit_no_alloc
def _outcome(
    t: TreeArrays,
    x: NodeInfo,
    line: RootLine,
    node: int,
    key: np.uint64,
    reps: int,
    check: bool,
    nyugyoku: bool,
    nlegal: int,
    ply: int,
) -> tuple[bool, float]:
    """``ShogiState.outcome()`` of the position (``key``, ``reps``, ``check``, ``nyugyoku``, ``nlegal``
    legal moves, ``ply`` moves since the state's first position) reached from ``node``: ``(over,
    value from its side to move)``."""
    if reps >= 3:
        return True, _repetition_value(t, x, line, node, key, check)
    if line.meta[_ENTERING_KING] != 0 and nyugyoku:
        return True, 1.0
    if nlegal == 0:
        return True, -1.0
    if ply >= line.meta[_MAX_PLIES]:
        return True, 0.0
    return False, 0.0


# ---- compiled kernels: walks, recorded and taken back --------------------------------------------------


@_njit_no_alloc
def _record_step(w: _Walks, r: int, depth: int, t: TreeArrays, node: int, edge: int) -> None:
    """Keep what step ``depth`` of recorded walk ``r`` is about to change (``N(s, a)``, ``W(s, a)``,
    ``N(s)`` and the visited prior of ``node``), so the walk can be taken back bit for bit."""
    w.pnodes[r, depth] = node
    w.pedges[r, depth] = edge
    v = w.pvals[r, depth]
    v[0], v[1], v[2], v[3] = t.child_n[edge], t.child_w[edge], t.visits[node], t.visited_prior[node]


@_njit_no_alloc
def _restore_steps(w: _Walks, r: int, depth: int, t: TreeArrays) -> None:
    """Take back the first ``depth`` steps of recorded walk ``r``, last first (exact: the values kept by
    :func:`_record_step`, not the arithmetic of :func:`~engine.search.compiled_tree.revert`)."""
    for i in range(depth - 1, -1, -1):
        node, edge = w.pnodes[r, i], w.pedges[r, i]
        v = w.pvals[r, i]
        t.child_n[edge], t.child_w[edge], t.visits[node], t.visited_prior[node] = v[0], v[1], v[2], v[3]


@njit_no_alloc_inline
def _before(t: TreeArrays, node: int, edge: int, depth: int, w: _Walks, scratch: tuple[int, bool]) -> None:
    """:func:`~engine.search.compiled_tree.walk`'s ``before`` for shogi: record the step in walk
    ``scratch[0]`` of ``w`` (its move, and the values it changes: :func:`_record_step`)."""
    r = scratch[0]
    _record_step(w, r, depth, t, node, edge)
    w.paths[r, depth] = t.move[edge]


@njit_no_alloc_inline
def _step(
    t: TreeArrays, prm: Params, node: int, edge: int, depth: int, w: _Walks, scratch: tuple[int, bool]
) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.walk`'s ``step`` for shogi: the walk ends on a child made now
    (pending, unexpanded, non-terminal until cshogi's answers settle it)."""
    child = t.child[edge]
    if child < 0:
        return add_child(t, node, edge, False, 0.0), STOP_WALK
    return child, -1


@njit_no_alloc_inline
def _exact(
    t: TreeArrays, prm: Params, node: int, value: float, depth: int, w: _Walks, scratch: tuple[int, bool]
) -> int:
    """:func:`~engine.search.compiled_tree.walk`'s ``exact`` for shogi: back the exact value up, or while
    speculating (``scratch[1]``) take the walk back (:data:`_STOPPED`)."""
    if scratch[1]:
        _restore_steps(w, scratch[0], depth, t)
        return _STOPPED
    finish_exact(t, prm, node, value)
    return BACKED_UP


@njit_no_alloc_inline
def _leaf(
    t: TreeArrays, node: int, edge: int, depth: int, kind: int, w: _Walks, scratch: tuple[int, bool]
) -> None:
    """:func:`~engine.search.compiled_tree.walk`'s ``leaf`` for shogi: record where walk ``scratch[0]``
    ended and how (``w.rec``)."""
    rec = w.rec[scratch[0]]
    rec[_NODE], rec[_EDGE], rec[_DEPTH] = node, edge, depth
    rec[_KIND] = _COLLIDED if kind == COLLISION else _NEW_CHILD if kind == STOP_WALK else _OLD_LEAF


@_njit_no_alloc
def _walk(t: TreeArrays, prm: Params, w: _Walks, r: int, speculating: bool, root_slot: int) -> int:
    """``Tree._walk`` recorded as walk ``r`` of ``w`` (:func:`~engine.search.compiled_tree.walk` with
    shogi's hooks): its path's moves, nodes, edges and old values; at the root into slot ``root_slot``
    when it is not -1 (a choice made in Python: the Gumbel root, forced playouts).
    Ends on a terminal or proven node (backed up: :data:`BACKED_UP`; or, while ``speculating``, taken
    back: :data:`_STOPPED`, the walk to be made again once the waiting walks are settled), on a pending node
    (reverted: :data:`COLLISION`), or on what needs cshogi: a child made now (pending, unexpanded,
    non-terminal until settled: ``_NEW_CHILD``) or an old unexpanded node (now pending: ``_OLD_LEAF``),
    written into ``w.rec[r]``."""
    found, fresh = walk(t, prm, w, (r, speculating), root_slot, _before, _step, _exact, _leaf)
    if found < 0:
        return found
    return _NEW_CHILD if fresh == STOP_WALK else _OLD_LEAF


@_njit_no_alloc
def _take_back(t: TreeArrays, w: _Walks, r: int) -> None:
    """Undo recorded walk ``r`` (the walks after it undone already): its leaf no longer pending, a child
    it made unlinked (the node count is restored by the caller), its path's values restored."""
    rec = w.rec[r]
    if rec[_KIND] == _NEW_CHILD:
        t.child[rec[_EDGE]] = -1
    elif rec[_KIND] == _OLD_LEAF:
        t.pending[rec[_NODE]] = False
    _restore_steps(w, r, rec[_DEPTH], t)


@_njit_no_alloc
def _walks(t: TreeArrays, prm: Params, ctl: I8, w: _Walks, root_slots: I8) -> int:
    """``Tree.select_leaves``' loop from where the batch is, walk ``k`` into root slot ``root_slots[k]``
    (int64 ``[>= count]``; -1: PUCT's choice): walks until the count, the node budget or
    the collisions end it (:data:`_DONE`), or until a walk meets an exact node while others wait for
    cshogi (:data:`_NEED`; the walk is made again after the settlement).  Walks that need cshogi are
    recorded (``w.rec``, with the counters after each) and the following ones go on as if each ended
    on an ordinary leaf; :func:`_settle` checks that against cshogi's answers."""
    while ctl[_WALKS] < ctl[_COUNT] and not is_full(t, prm) and ctl[_COLLISIONS] <= prm.max_collisions:
        r = ctl[_RECORDS]
        nodes = t.counts[0]
        found = _walk(t, prm, w, r, ctl[_REQUESTS] > 0, root_slots[ctl[_WALKS]])
        if found == _STOPPED:
            return _NEED
        ctl[_WALKS] += 1
        if found == BACKED_UP:
            continue
        rec = w.rec[r]
        if found == COLLISION:
            ctl[_COLLISIONS] += 1
        else:
            rec[_ROW] = ctl[_ROWS]
            ctl[_ROWS] += 1
            ctl[_REQUESTS] += 1
        rec[_NODES_BEFORE] = nodes
        rec[_WALKS_AFTER] = ctl[_WALKS]
        rec[_COLLISIONS_AFTER] = ctl[_COLLISIONS]
        rec[_MAX_DEPTH_AFTER] = t.stats[MAX_DEPTH]
        ctl[_RECORDS] = r + 1
    return _NEED if ctl[_REQUESTS] > 0 else _DONE


# ---- compiled kernels: settling the walks with cshogi's answers ------------------------------------------


@_njit_no_alloc
def _encode_leaf(
    t: TreeArrays,
    x: NodeInfo,
    line: RootLine,
    node: int,
    path: I8,
    depth: int,
    sc: _Scratch,
    out: npt.NDArray[np.float32],
    marks: I8,
    flags: B1,
) -> None:
    """``ShogiState.encode_into`` of ``node`` (``depth`` plies below the root by the moves ``path``) into
    ``out`` (float32 ``[362, 9, 9]``): the root's board with the path played, the newest repetition
    counts and moves from the node's ancestors and then the root's game line; written over the row's
    previous encoding, which ``marks`` (int64 ``[MARKS_WIDTH]``) and ``flags`` (bool ``[362]``)
    record (:func:`~engine.games.shogi_kernel.encode_position_over`)."""
    root_side = line.meta[_SIDE]
    for i in range(sc.board.shape[0]):  # loops, not slice assignment: that needs numba's NRT
        sc.board[i] = line.board[i]
    for i in range(sc.hands.shape[0]):
        for j in range(sc.hands.shape[1]):
            sc.hands[i, j] = line.hands[i, j]
    for i in range(depth):
        do_move(sc.board, sc.hands, path[i], (root_side + i) & 1)
    h = line.meta[_PLY]
    steps = min(h + 1 + depth, _HISTORY_STEPS)
    v = node
    for k in range(steps):
        if k < depth:
            sc.reps[k] = x.reps[v]
            sc.moves[k] = path[depth - 1 - k]
            v = t.parent[v]
        else:
            sc.reps[k] = line.reps[h - (k - depth)]
            if k + 1 < steps:
                sc.moves[k] = line.moves[h - 1 - (k - depth)]
    side = (root_side + depth) & 1
    move_count = (line.meta[_GAME_PLY] + depth) / 100.0
    encode_position_over(
        sc.board,
        sc.hands,
        sc.reps,
        sc.moves,
        steps,
        side,
        move_count,
        _HAND_SCALE,
        out,
        marks,
        flags,
        sc.quant[0],
        sc.quant[1],
    )


@_njit_no_alloc
def _write_leaf(m: int, n: int, side: int, table: I8, moves: I8, indices: I8) -> None:
    """Row ``m`` of the batch's policy side: the policy indices ``indices[m]`` (int64 ``[600]``) of the
    ``n`` legal moves in ``moves[m]`` (cshogi's order) for ``side`` to move (``table``: ``MOVE_INDEX``
    int64 ``[2, 32768]``)."""
    for j in range(n):
        indices[m, j] = table[side, moves[m, j] & _MOVE_KEY_MASK]


@_njit_no_alloc
def _mate_value(
    t: TreeArrays, x: NodeInfo, line: RootLine, node: int, depth: int, moves: I8, io: I8, key2: np.uint64
) -> tuple[int, int, float]:
    """The mate in one ``io[_MATE]`` of ``node`` checked as ``Tree._prove_mate`` does: ``(slot of the
    mate among the legal ``moves``, the mated position's repetition count, its value)``; slot -1 when
    the mate is not among the moves or the mated position is not over with a loss for its side to
    move (``key2`` and ``io``'s ``_CHECK2``, ``_NYU2``, ``_NLEGAL2`` describe it)."""
    mate = io[_MATE]
    if mate == 0:
        return -1, 0, 0.0
    slot = -1
    for j in range(io[_NLEGAL]):
        if moves[j] == mate:
            slot = j
            break
    if slot < 0:
        return -1, 0, 0.0
    reps2 = _count_reps(t, x, line, node, key2)
    ply2 = line.meta[_PLY] + depth + 1
    over, value = _outcome(
        t, x, line, node, key2, reps2, io[_CHECK2] != 0, io[_NYU2] != 0, io[_NLEGAL2], ply2
    )
    if not over or value >= 0:
        return -1, 0, 0.0
    return slot, reps2, value


@_njit_no_alloc
def _prove_mate(
    t: TreeArrays,
    prm: Params,
    x: NodeInfo,
    node: int,
    moves: I8,
    n: int,
    slot: int,
    reps2: int,
    value: float,
    io: I8,
    key2: np.uint64,
) -> None:
    """``Tree._prove_mate``: expand ``node`` with its ``n`` legal ``moves`` and all its prior on the mate
    ``slot``, make the mated child terminal (``value``) and proven lost, prove ``node`` won in one and
    back +1 up.  The node and edge arrays must have room."""
    child = expand_proven_mate(t, node, moves, n, slot, value)
    x.key[child], x.reps[child], x.check[child] = key2, reps2, io[_CHECK2] != 0
    finish_exact(t, prm, node, 1.0)


@_njit_no_alloc
def _child_outcome(
    t: TreeArrays, prm: Params, x: NodeInfo, line: RootLine, rec: I8, io: I8, key: np.uint64
) -> tuple[bool, float, bool]:
    """``Tree._new_child``'s verdict on recorded new child ``rec`` with cshogi's answers (``key``,
    ``io``), its key, repetition count and check stored: ``(terminal, value, a penalised
    repetition)``."""
    child, depth = rec[_NODE], rec[_DEPTH]
    parent = t.parent[child]
    reps = _count_reps(t, x, line, parent, key)
    check = io[_CHECK] != 0
    x.key[child], x.reps[child], x.check[child] = key, reps, check
    ply = line.meta[_PLY] + depth
    over, value = _outcome(t, x, line, parent, key, reps, check, io[_NYU] != 0, io[_NLEGAL], ply)
    if over:
        return True, value, False
    if prm.repetition_penalty != 0.0 and reps > 0:
        return True, prm.repetition_penalty, True
    return False, 0.0, False


@_njit_no_alloc
def _settle_one(
    t: TreeArrays,
    prm: Params,
    x: NodeInfo,
    line: RootLine,
    ctl: I8,
    w: _Walks,
    b: IndexedBuffers,
    r: int,
    table: I8,
) -> int:
    """Settle recorded walk ``r`` (a leaf request): 0 when it ends on an ordinary leaf, as the walks
    after it assumed (its row written: planes and indices); else, the walks after it taken
    back first, its real end (a terminal child backed up, a penalised repetition, a mate in one proven),
    and 1, or 2 when that expanded the root."""
    rec = w.rec[r]
    io = w.io[r]
    node, depth, row = rec[_NODE], rec[_DEPTH], rec[_ROW]
    terminal, value, repeated = False, 0.0, False
    if rec[_KIND] == _NEW_CHILD:
        terminal, value, repeated = _child_outcome(t, prm, x, line, rec, io, w.keys[r, 0])
    slot, reps2, value2 = -1, 0, 0.0
    if not terminal:
        slot, reps2, value2 = _mate_value(t, x, line, node, depth, b.moves[row], io, w.keys[r, 1])
    if not terminal and slot < 0:
        _write_leaf(row, io[_NLEGAL], (line.meta[_SIDE] + depth) & 1, table, b.moves, b.indices)
        _encode_leaf(
            t, x, line, node, w.paths[r], depth, w.scratch, b.planes[row], b.marks[row], b.flags[row]
        )
        b.nlegal[row] = io[_NLEGAL]
        b.leaves[row] = node
        ctl[_LEAVES] = row + 1
        return 0
    for q in range(ctl[_RECORDS] - 1, r, -1):
        _take_back(t, w, q)
    if r + 1 < ctl[_RECORDS]:
        t.counts[0] = w.rec[r + 1, _NODES_BEFORE]
    ctl[_WALKS], ctl[_COLLISIONS] = rec[_WALKS_AFTER], rec[_COLLISIONS_AFTER]
    t.stats[MAX_DEPTH] = rec[_MAX_DEPTH_AFTER]
    ctl[_ROWS] = row
    t.pending[node] = False
    if terminal:
        t.terminal[node] = True
        t.terminal_value[node] = value
        if repeated:
            t.repeated[node] = True
            drop_prior_into(t, t.parent[node], rec[_EDGE], w.sums)
        finish_exact(t, prm, node, value)
        return 1
    _prove_mate(t, prm, x, node, b.moves[row], io[_NLEGAL], slot, reps2, value2, io, w.keys[r, 1])
    return 2 if node == ROOT else 1


@_njit_no_alloc
def _settle(
    t: TreeArrays, prm: Params, x: NodeInfo, line: RootLine, ctl: I8, w: _Walks, b: IndexedBuffers, table: I8
) -> int:
    """Settle the recorded walks in order with cshogi's answers (``w.io``, ``w.keys``; the legal moves in
    the batch rows ``b.moves``) up to the first that did not end on an ordinary leaf (:func:`_settle_one`);
    returns :data:`_ROOT` when a mate in one expanded the root, else 0."""
    status = 0
    start = 0
    for r in range(ctl[_RECORDS]):  # the legal moves into the walks' batch rows
        if w.rec[r, _KIND] != _COLLIDED:
            n = w.io[r, _NLEGAL]
            row = w.rec[r, _ROW]
            for j in range(n):  # a loop, not a slice assignment: that needs numba's NRT
                b.moves[row, j] = w.legal[start + j]
            start += n
    for r in range(ctl[_RECORDS]):
        if w.rec[r, _KIND] != _COLLIDED:
            status = _settle_one(t, prm, x, line, ctl, w, b, r, table)
            if status != 0:
                break
    ctl[_RECORDS] = 0
    ctl[_REQUESTS] = 0
    return _ROOT if status == 2 else 0


@_njit_no_alloc
def _select(
    t: TreeArrays,
    prm: Params,
    x: NodeInfo,
    line: RootLine,
    ctl: I8,
    w: _Walks,
    b: IndexedBuffers,
    table: I8,
    root_slots: I8,
) -> int:
    """``Tree.select_leaves(ctl[_COUNT])``, resumable: the recorded walks settled with cshogi's answers
    (:func:`_settle`), then walks made until the batch is done (:data:`_DONE`: ``ctl[_LEAVES]`` leaves
    in rows of ``b``), walks wait for cshogi (:data:`_NEED`: their records ``w.rec[:ctl[_RECORDS]]``,
    paths ``w.paths``, legal moves to be written into ``b.moves[rec[_ROW]]``), or a mate in one expanded
    the root (:data:`_ROOT`).  The node arrays must have room for ``2 * count`` more nodes and the edge
    arrays for ``count * 600`` more edges."""
    if ctl[_RECORDS] > 0 and _settle(t, prm, x, line, ctl, w, b, table) == _ROOT:
        return _ROOT
    if t.terminal[ROOT]:
        return _DONE
    return _walks(t, prm, ctl, w, root_slots)


@_njit_no_alloc
def _move_info(x: NodeInfo, remap: I8) -> None:
    """Move the per-node infos of the nodes kept by tree reuse to their new indices (``remap``, from
    :func:`~engine.search.compiled_tree.reroot_mapped`; ascending, a node never moves up)."""
    for i in range(remap.shape[0]):
        j = remap[i]
        if j >= 0:
            x.key[j], x.reps[j], x.check[j] = x.key[i], x.reps[i], x.check[i]


# ---- Python wrapper -------------------------------------------------------------------------------


#: A batch of :class:`CompiledShogiTree` (the first ``m`` rows of its buffers).
ShogiLeafBatch = IndexedLeafBatch


def _root_line(state: ShogiState) -> RootLine:
    """The :class:`RootLine` of ``state``: its positions replayed from its first one (keys, repetition
    counts and checks as ``ShogiState`` counts them), its moves, the root's board codes and hands."""
    replay = state.copy()
    moves = list(replay.move_stack)
    while replay.ply:
        replay.pop()
    keys = [replay.board.zobrist_hash()]
    reps = [replay.repetition_count()]
    checks = [replay.board.is_check()]
    for move in moves:
        replay.push(move)
        keys.append(replay.board.zobrist_hash())
        reps.append(replay.repetition_count())
        checks.append(replay.board.is_check())
    line = RootLine(
        keys=np.array(keys, np.uint64),
        reps=np.array(reps, np.int64),
        check=np.array(checks, np.bool_),
        moves=np.array(moves or [0], np.int64),
        board=np.zeros(81, np.int64),
        hands=np.zeros((2, 7), np.int64),
        meta=np.zeros(5, np.int64),
    )
    return _with_root(line, state)


def _with_root(line: RootLine, state: ShogiState) -> RootLine:
    """``line`` with the root's board codes, hands and ``meta`` taken from ``state`` (its root)."""
    board = state.board
    planes = np.zeros(104 * 81, np.float32)
    board.piece_planes(planes)
    max_plies = min(state.length_limit, state.ply + SEARCH_HORIZON_PLIES)
    meta = [state.ply, int(board.turn), state.game_ply, max_plies, int(state.rules.entering_king)]
    return line._replace(
        board=board_codes(planes),
        hands=np.array(board.pieces_in_hand, np.int64),
        meta=np.array(meta, np.int64),
    )


def _extended_line(line: RootLine, state: ShogiState) -> RootLine:
    """``line`` of the old root followed by ``state``'s last move and position (the new root)."""
    board = state.board
    moves = np.append(line.moves[: state.ply - 1], np.int64(state.move_stack[-1]))
    longer = line._replace(
        keys=np.append(line.keys, np.uint64(board.zobrist_hash())),
        reps=np.append(line.reps, np.int64(state.repetition_count())),
        check=np.append(line.check, bool(board.is_check())),
        moves=moves,
    )
    return _with_root(longer, state)


#: The deepest a walk goes below the root: a position this many plies below it counts as drawn by
#: length, as one at ``max_plies`` does (a PUCT tree never grows a line this long: it would take as
#: many nodes in one line).  It bounds the walks' buffers: under a GUI ``max_plies`` is a million (the
#: GUI decides when a game is drawn), and buffers that deep (900 MB for a batch of 16) cost the first
#: search a fraction of a second in page faults (docs/benchmarks.md, "Costs behind the code's design").
SEARCH_HORIZON_PLIES = 1024


def _walk_depth(state: ShogiState) -> int:
    """Steps a walk from ``state`` may take, two spare: up to its length limit or the horizon."""
    return max(min(state.length_limit - state.ply, SEARCH_HORIZON_PLIES), 1) + 2


def _new_walks(count: int, depth: int, quant: F8) -> _Walks:
    """:class:`_Walks` for ``count`` walks of up to ``depth`` steps, encoding rows as ``quant`` says
    (:class:`_Scratch`)."""
    scratch = _Scratch(
        np.zeros(81, np.int64),
        np.zeros((2, 7), np.int64),
        np.zeros(8, np.int64),
        np.zeros(8, np.int64),
        quant.copy(),
    )
    return _Walks(
        rec=np.zeros((count, 9), np.int64),
        paths=np.zeros((count, depth), np.int64),
        pnodes=np.zeros((count, depth), np.int64),
        pedges=np.zeros((count, depth), np.int64),
        pvals=np.zeros((count, depth, 4), np.float64),
        io=np.zeros((count, 8), np.int64),
        keys=np.zeros((count, 2), np.uint64),
        legal=np.zeros(count * MAX_MOVES, np.int64),
        scratch=scratch,
        sums=new_sum_scratch(MAX_MOVES),
    )


def _node_info(nodes: int) -> NodeInfo:
    return NodeInfo(np.zeros(nodes, np.uint64), np.zeros(nodes, np.int64), np.zeros(nodes, np.bool_))


#: Bytes of :class:`NodeInfo` per node, counted against the memory budget beside the tree's arrays.
_NODE_INFO_BYTES = sum(int(a.itemsize) for a in _node_info(1))


class CompiledShogiTree(IndexedCompiledTree[int]):
    """A PUCT tree over a shogi position searched in compiled code with cshogi's answers; the same
    search as ``Tree`` (module docstring) and a :class:`~engine.search.tree_protocol.SearchTree` for
    the engine's search loop.

    Batches go through :meth:`select_batch` / :meth:`backup_batch` (dense arrays, at most two batches
    at a time), or one at a time through :meth:`select_leaves` / :meth:`backup` (:class:`Evaluation`
    lists) and :meth:`select_leaves_arrays` / :meth:`backup_arrays` (arrays).

    Args:
        state: the root position with its history (not kept: the tree copies it).
        config: search settings.
        rng: random generator for the root noise (default: seeded with ``config.seed``).
        quantization: write the leaves' planes as uint8 so, channels last (for a network that takes them,
            ``OnnxEvaluator.accept_uint8_planes``); ``None``: float32.  Fixed for the tree's life: its
            compiled selection is bound to one type of rows (``Bound``).
    """

    _extra_node_bytes = _NODE_INFO_BYTES  # NodeInfo per node, beside the tree's arrays

    def __init__(
        self,
        state: ShogiState,
        config: SearchConfig,
        rng: np.random.Generator | None = None,
        quantization: Uint8Quantization | None = None,
    ) -> None:
        self.config = config  # and the compiled search's params
        self.quantization = quantization
        self._quant = FLOAT_PLANES if quantization is None else quantization.kernel_args
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self.rules: ShogiRules = state.rules
        self._state = state.copy()  # the root with its history: outcome, find_mate, legality
        self._board = cshogi.Board(state.to_text())  # the walks' scratch board, at the root between walks
        self._line = _root_line(state)
        self._width = MAX_MOVES
        self._arrays = POOL.take(*first_room(config, _FIRST_EDGES_PER_NODE, MAX_MOVES))
        self._info = _node_info(self._arrays.visits.shape[0])
        self._ctl = np.zeros(8, np.int64)
        self._w = _new_walks(1, _walk_depth(state), self._quant)
        self._init_root()
        self._init_batches(_select)

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> ShogiLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`ShogiLeafBatch` (empty when none needs the network)."""
        self._reserve(2 * count)  # a walk makes two nodes at most: a leaf and its mated child
        t = self._arrays
        if int(t.counts[1]) + count * MAX_MOVES > t.move.shape[0]:
            self._grow(0, int(t.counts[1]) + count * MAX_MOVES)
        if self._w.rec.shape[0] < count:
            self._w = _new_walks(count, self._w.paths.shape[1], self._quant)
        b = self._take_buffers(count)
        ctl = self._ctl
        ctl[:] = 0
        ctl[_COUNT] = count
        slots = self._root_slots(count)
        while True:
            status = self._select(
                self._arrays, self._params, self._info, self._line, ctl, self._w, b, MOVE_INDEX, slots
            )
            if status == _DONE:
                break
            if status == _NEED:
                self._answer(b)
            else:
                self._root_expanded()
                slots = self._root_slots(count, int(ctl[_WALKS]))  # the root's choices from here on
        batch = ShogiLeafBatch(b, int(ctl[_LEAVES]))
        if batch.size == 0:
            self._release(batch)
        return batch

    def advance(self, move: int) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes, edges and node
        infos moved to the front of the arrays in one compiled pass; a fresh root when the move's child
        was never expanded.  Then root noise and the root mate search, as ``Tree`` does.

        Raises:
            ValueError: ``move`` is not legal at the root.
        """
        if not self._board.is_legal(move):
            raise ValueError(f"illegal move {move} at the root")
        t = self._arrays
        keep = self._root_child_of(move)
        self._state.push(move)
        self._board.push(move)
        self._line = _extended_line(self._line, self._state)
        if keep < 0 or not t.expanded[keep]:
            self._init_root()
        else:
            _move_info(self._info, reroot_mapped(t, keep))
        self._new_root_search()

    # ---- results (SearchTree) ------------------------------------------------------------------------
    # ---- one batch at a time ---------------------------------------------------------------------------
    # ---- internals -----------------------------------------------------------------------------------
    def _answer(self, b: IndexedBuffers) -> None:
        """cshogi's answers for the recorded walks that wait (``self._w``): each path played on the scratch
        board (and taken back), the position's key, check, declaration and legal moves (into the walk's
        batch row of ``b.moves``), and with ``mate_check`` a legal mate in one with the mated position's
        key, check, declaration and move count."""
        w = self._w
        board = self._board
        push, pop = board.push, board.pop
        entering = self.rules.entering_king
        mate_check = self.config.mate_check
        records = w.rec[: int(self._ctl[_RECORDS])].tolist()
        paths = w.paths
        answers: list[tuple[int, ...]] = []
        keys: list[tuple[int, int]] = []
        legal: list[int] = []
        for r, rec in enumerate(records):
            if rec[_KIND] == _COLLIDED:
                answers.append(_NO_ANSWER)
                keys.append((0, 0))
                continue
            path = paths[r, : rec[_DEPTH]].tolist()
            for move in path:
                push(move)
            check = board.is_check()
            moves = board.legal_moves
            legal.extend(moves)
            mate = check2 = nyugyoku2 = n2 = key2 = 0
            if mate_check and not check:
                found = board.mate_move_in_1ply()
                if found and board.is_legal(found):
                    mate = found
                    push(found)
                    key2 = board.zobrist_hash()
                    check2 = board.is_check()
                    nyugyoku2 = entering and board.is_nyugyoku()
                    n2 = len(board.legal_moves)
                    pop()
            answers.append(
                (check, entering and board.is_nyugyoku(), len(moves), mate, check2, nyugyoku2, n2, 0)
            )
            keys.append((board.zobrist_hash(), key2))
            for _ in path:
                pop()
        w.io[: len(answers)] = answers
        w.keys[: len(keys)] = keys
        w.legal[: len(legal)] = legal

    def _init_root(self) -> None:
        """Node 0 for the root, the tree's only node: terminal only when it has no legal move
        (``Tree._init_root_terminal``), with the root's key, repetition count and check."""
        state = self._state
        outcome = state.outcome()
        terminal = outcome is not None and not state.legal_moves()
        init_root(self._arrays, terminal, outcome.value if outcome is not None and terminal else 0.0)
        line = self._line
        x = self._info
        x.key[ROOT], x.reps[ROOT], x.check[ROOT] = line.keys[-1], line.reps[-1], line.check[-1]

    def _grow(self, nodes: int, edges: int) -> TreeArrays:
        """:meth:`CompiledTree._grow`, the node infos grown with the node arrays."""
        t = super()._grow(nodes, edges)
        x = self._info
        if t.visits.shape[0] > x.key.shape[0]:
            bigger = _node_info(t.visits.shape[0])
            used = int(t.counts[0])
            for src, dst in zip(x, bigger, strict=True):
                dst[:used] = src[:used]
            self._info = bigger
        return t

    def _search_root_mate(self) -> None:
        """``Tree._search_root_mate``: prove the expanded root won when ``ShogiState.find_mate`` (cshogi's
        df-pn) finds a forced mate; nothing when it is already proven, off, none is found, or
        searchmoves excludes the mating move."""
        t = self._arrays
        nodes = self.config.root_mate_nodes
        if nodes <= 0 or t.proven[ROOT] != UNPROVEN or t.terminal[ROOT] or not self.root_move_count:
            return
        found = self._state.find_mate(nodes)
        if found is None:
            return
        move, plies = found
        moves = self._root_moves()
        if move not in moves:
            return
        slot = moves.index(move)
        if self.root_mask is not None and not self.root_mask[slot]:
            return  # not among the moves the GUI allowed
        self._reserve(1)
        prove_root_mate(self._arrays, slot, int(plies))

    def root_policy_indices(self) -> I8:
        """int64 ``[L]``: the root moves' policy indices (``ShogiState.move_to_index``), looked up for all
        moves at once."""
        moves = self._arrays.move[self._root_edges()].astype(np.int64)
        indices: I8 = MOVE_INDEX[int(self._line.meta[_SIDE])][moves & _MOVE_KEY_MASK]
        if (indices < 0).any():  # cshogi's moves always have one: ShogiState.move_to_index would raise
            raise ValueError("a root move has no policy index")
        return indices

    def _root_moves(self) -> list[int]:
        """The root's moves as ``ShogiState`` lists them (empty before the root is expanded)."""
        return [int(m) for m in self._arrays.move[self._root_edges()]]

    def _to_move(self, move: int) -> int:
        return move

    def _new_buffers(self, count: int) -> IndexedBuffers:
        q = self.quantization
        if q is None:
            return new_indexed_buffers(count, (NUM_PLANES, 9, 9), MAX_MOVES, MARKS_WIDTH, NUM_PLANES)
        return new_indexed_buffers(
            count, (9, 9, NUM_PLANES), MAX_MOVES, MARKS_WIDTH, NUM_PLANES, np.uint8, q.zero_point
        )


#: A mate in one for :func:`warm_up` (G*5b mates the king on 5a).
_WARM_UP_MATE = "4k4/9/4P4/9/9/9/9/9/4K4 b G 1"


#: Edges a node has on average: among a new tree's first arrays (most nodes never expanded), and in a
#: tree grown to ``Hash`` (a shogi position's usual number of legal moves).
_FIRST_EDGES_PER_NODE, _EDGES_PER_NODE = 16, 80


#: Claims a tree's memory before a search (``kernel_loading.reserve_search_memory``).
reserve = fixed_width_reserve(_FIRST_EDGES_PER_NODE, _EDGES_PER_NODE, MAX_MOVES)


def warm_up() -> None:
    """Load (or, with an empty numba cache, compile) every kernel a search uses, with a few walks from
    the start position (float32 and float64 priors, a cancelled batch, tree reuse; float32 and uint8
    planes) and a position with
    a mate in one (proven at the root by the selection).  Call it before the first search so no move
    pays for compilation."""
    softmax_kernel.warm_up()  # the dense batches' priors (OnnxEvaluator.finish_dense)
    exercise(CompiledShogiTree(ShogiState(), SearchConfig(node_budget=64)))
    # the engine's tree on the CPU with the int8 network writes uint8 planes: its own selection overload
    packed = CompiledShogiTree(
        ShogiState(), SearchConfig(node_budget=64), quantization=Uint8Quantization(1.0, 0)
    )
    for _ in range(2):
        batch = packed.select_batch(4)
        if len(batch):
            packed._backup_dense(batch, uniform_rows(batch.legal), np.zeros(len(batch), np.float32))
    packed.cancel_batch(packed.select_batch(2))
    mate = CompiledShogiTree(ShogiState(sfen=_WARM_UP_MATE), SearchConfig(node_budget=8))
    mate.cancel_batch(mate.select_batch(2))  # a mate in one proves the root in the selection
    df_pn = CompiledShogiTree(ShogiState(sfen=_WARM_UP_MATE), SearchConfig(node_budget=8, mate_check=False))
    batch = df_pn.select_batch(1)  # the root: its backup's mate search proves it
    df_pn._backup_dense(batch, uniform_rows(batch.legal), np.zeros(len(batch), np.float32))


#: The kinds of rows the engine's trees write: float32 planes, and uint8 planes for the int8 network
#: on the CPU (each its own overload of the kernels that write planes).
_ROW_KINDS: tuple[Uint8Quantization | None, ...] = (None, Uint8Quantization(1.0, 0))


def _select_arguments(
    quantization: Uint8Quantization | None = None,
) -> tuple[CompiledShogiTree, tuple[Any, ...]]:
    """A small tree of the engine's kind (float32 planes, or uint8 ones with ``quantization``) and the
    arguments it passes :func:`_select`."""
    tree = CompiledShogiTree(ShogiState(), SearchConfig(node_budget=64), quantization=quantization)
    b = tree._take_buffers(4)
    args = (tree._arrays, tree._params, tree._info, tree._line, tree._ctl, tree._w, b, MOVE_INDEX)
    return tree, (*args, tree._root_slots(4))


def _compile_settling() -> None:
    """Compile :func:`_settle` (the leaves' planes, terminal children, mates in one, taking walks back:
    about half of the kernels), tree reuse, then :func:`_select` for the engine's trees (both kinds of
    rows)."""
    for quantization in _ROW_KINDS:
        _, args = _select_arguments(quantization)
        compile_for(_settle, *args[:-1])  # all but the root slots
        compile_for(reroot_mapped, args[0], 0)
        compile_for(_move_info, args[2], np.zeros(1, np.int64))
        compile_for(_select, *args)  # the join: by now the other part has cached _walks (its first kernel)


def _compile_walks_and_the_rest() -> None:
    """Compile :func:`_walks` and the kernels the tree calls from Python (the backups of float32 and
    float64 priors, cancel, the best root move, the root's mate proof, the priors' softmax) for the
    engine's trees (both kinds of rows)."""
    for quantization in _ROW_KINDS:
        tree, (t, prm, _, _, ctl, w, b, _, slots) = _select_arguments(quantization)
        compile_for(_walks, t, prm, ctl, w, slots)
        compile_python_calls(tree, b)


#: Independent parts of :func:`warm_up`'s compilation, for
#: :func:`~engine.search.kernel_build.load_kernels` to compile at once on an empty cache (each about
#: half of the work: docs/benchmarks.md, "Costs behind the code's design").
COMPILE_PARTS = (_compile_settling, _compile_walks_and_the_rest)
#: The kernel whose cached machine code says the rest is cached too (it calls :func:`_settle` and
#: :func:`_walks`; compiled last).
COMPILED_ENTRY = _select
