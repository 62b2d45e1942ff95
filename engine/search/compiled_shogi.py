"""A compiled PUCT tree for shogi: the reference ``Tree``'s search (``tests/engine/search/reference_tree.py``),
node for node, in numba on the compiled shogi rules (:mod:`engine.games.shogi_rules_kernel`).

The shogi counterpart of :mod:`engine.search.compiled_chess`, built the same way: the root's
:class:`~engine.games.shogi_rules_kernel.KernelState` is a copy-make stack, a walk pushes its path onto
the rows above the root and rewinds afterwards, and the whole selection of a batch is one compiled call
(:func:`~engine.search.compiled_tree.select_leaves` with shogi's walk and leaf row).  A position's rows
hold everything the rules need beside the board (the Zobrist key, the repetition count, check, the game
ply), so repetitions, sennichite and perpetual check, the entering-king declaration and the length limit
are all decided in compiled code.

It makes exactly the choices of ``Tree`` on a :class:`~engine.games.shogi.ShogiState` (same arithmetic,
same order of floating-point operations, a node's edges its legal moves in cshogi's order, which the
kernel's generator reproduces):

* PUCT with ``c(s)``, first-play urgency (``fpu_reduction_root`` at the root), the first maximum wins;
  virtual loss, collisions (``max_collisions``), the node budget;
* terminal nodes valued as ``ShogiState.outcome()``, in its order: fourfold repetition (a draw, or a
  loss for the side that gave check with every move since the first occurrence), an entering-king
  declaration (with ``ShogiRules.entering_king``), no legal move (a loss), the length limit; the root is
  terminal only when it has no legal move;
* the MCTS-solver proofs; ``config.mate_check``'s mate in one at every leaf (``Tree._prove_mate`` with
  ``ShogiState.mate_in_one``, the first move in cshogi's order after which the opponent has lost:
  :func:`~engine.games.shogi_rules_kernel.mating_slot`) and the root's df-pn mate search
  (``config.root_mate_nodes``, ``ShogiState.find_mate``, cshogi's solver called from Python once per
  root);
* ``config.repetition_penalty`` (a repeated position terminal with the penalty, the move's prior
  dropped, as in chess);
* root Dirichlet noise, ``searchmoves`` and tree reuse (:meth:`CompiledShogiTree.advance`).

Leaves' planes: :func:`~engine.games.shogi_rules_kernel.encode_over` from the top row's board and
hands and the history rows' moves and repetition counts, written over the batch row's previous encoding
(float32, or uint8 channels last for an int8 network's uint8-planes model).  What differs from ``Tree``
is what differs for chess: no network cache, and after tree reuse the tree holds exactly the kept
subtree's nodes.  Moves are cshogi's move ints, as ``ShogiState``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine import softmax_kernel
from engine.evaluator import uniform_rows
from engine.games import shogi_rules_kernel as sk
from engine.games.shogi import MOVE_INDEX, NUM_PLANES, ShogiRules, ShogiState
from engine.games.shogi_kernel import MARKS_WIDTH
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
    F8,
    I8,
    POOL,
    ROOT,
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
    reroot,
    select_leaves,
    walk,
)
from engine.search.config import SearchConfig
from engine.search.kernel_build import compile_for
from engine.uint8_io import FLOAT_PLANES, Uint8Quantization

__all__ = ["CompiledShogiTree", "ShogiLeafBatch", "warm_up"]

KernelState = sk.KernelState

#: Edges a node may have and moves a batch row holds: the kernel's move buffers (they hold the
#: pseudo-legal moves before the illegal ones are removed).
MAX_MOVES = sk.MAX_MOVES

_MOVE_KEY_MASK = 0x7FFF

#: Free kernel rows the tree keeps above the deepest row a walk reaches (a mate check plays one more).
_SPARE_ROWS = 4


# ---- compiled kernels: outcomes, nodes ----------------------------------------------------------------


@_njit_no_alloc
def _code_value(code: int) -> float:
    """``ShogiState.outcome().value`` of a kernel outcome code (from the side to move)."""
    if code == sk.PERPETUAL_WIN or code == sk.ENTERING_KING:
        return 1.0
    if code == sk.PERPETUAL_LOSS or code == sk.CHECKMATE:
        return -1.0
    return 0.0


@_njit_no_alloc
def _init_root(t: TreeArrays, root: KernelState, buf: I8) -> None:
    """Node 0 for ``root``, the tree's only node: terminal only when it has no legal move, then valued as
    its outcome (``Tree._init_root_terminal``).  ``buf`` int64 ``[MAX_MOVES]`` scratch."""
    n = sk.legal_moves_into(root, buf)
    if n == 0:
        init_root(t, True, _code_value(sk.outcome_code_given(root, 0)))
    else:
        init_root(t, False, 0.0)


@_njit_no_alloc
def _new_child(t: TreeArrays, prm: Params, node: int, edge: int, s: KernelState, buf: I8) -> tuple[int, int]:
    """``Tree._new_child``: create the child behind ``edge`` of ``node`` (its position is ``s``): terminal
    when the game is over there, or (with a repetition penalty) when the position occurred before
    (marked ``repeated``).  Returns the child's index and its number of legal moves, left in ``buf``
    (int64 ``[MAX_MOVES]``) in cshogi's order."""
    n = sk.legal_moves_into(s, buf)
    code = sk.outcome_code_given(s, n)
    if code != sk.NOT_OVER:
        child = add_child(t, node, edge, True, _code_value(code))
    elif prm.repetition_penalty != 0.0 and sk.repetition_count(s) > 0:
        child = add_child(t, node, edge, True, prm.repetition_penalty)
        t.repeated[child] = True
    else:
        child = add_child(t, node, edge, False, 0.0)
    return child, n


# ---- compiled kernels: selection ------------------------------------------------------------------------


@njit_no_alloc_inline
def _step(
    t: TreeArrays,
    prm: Params,
    node: int,
    edge: int,
    depth: int,
    s: KernelState,
    scratch: tuple[I8, SumScratch],
) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.walk`'s ``step`` for shogi: push ``edge``'s move onto ``s``; a
    child made now (:func:`_new_child`) brings its number of legal moves, left in ``scratch[0]``, and a
    penalised repetition's prior goes to the other moves (in ``scratch[1]``)."""
    buf, sums = scratch
    sk.push(s, t.move[edge])
    child = t.child[edge]
    if child >= 0:
        return child, -1
    child, fresh = _new_child(t, prm, node, edge, s, buf)
    if t.repeated[child]:
        drop_prior_into(t, node, edge, sums)
    return child, fresh


@_njit_no_alloc
def _walk(
    t: TreeArrays, prm: Params, s: KernelState, buf: I8, sums: SumScratch, root_slot: int
) -> tuple[int, int]:
    """``Tree._walk`` on the shogi kernel (:func:`~engine.search.compiled_tree.walk`): the path pushed onto
    ``s`` (the root's state; the caller rewinds it); at the root into slot ``root_slot`` when it is not
    -1.  Returns the leaf's node (now pending; its position on ``s``), or ``BACKED_UP`` or
    ``COLLISION``; and when the leaf was made by this walk, its number of legal moves, left in ``buf``
    (-1 otherwise)."""
    return walk(t, prm, s, (buf, sums), root_slot, _step)


#: What shogi's selection passes its walk and leaf functions (:func:`_select_leaves`).
_ShogiArgs = tuple[KernelState, IndexedBuffers, SumScratch, bool, I8, I8, I8, I8, I8, F8, I8, int]


@njit_no_alloc_inline
def _walk_once(t: TreeArrays, prm: Params, game: _ShogiArgs, m: int, root_slot: int) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.select_leaves`'s walk for shogi (:func:`_walk`): the path pushed
    onto the root's state, a new leaf's legal moves generated into row ``m`` of the batch's moves."""
    s, b, sums = game[0], game[1], game[2]
    return _walk(t, prm, s, b.moves[m], sums, root_slot)


@njit_no_alloc_inline
def _leaf_row(t: TreeArrays, prm: Params, game: _ShogiArgs, m: int, found: int, fresh: int) -> int:
    """Row ``m`` of the batch for leaf ``found`` (its legal moves, their policy indices, its planes); with
    ``mate_check`` a leaf whose side to move mates at once is proven won instead (``Tree._prove_mate``:
    expanded with all its prior on the mate, the mated child terminal, no network call): -1."""
    s, b, _, mate_check, buf, board, hands, reps, moves, quant, table, _ = game
    row = b.moves[m]
    n = fresh if fresh >= 0 else sk.legal_moves_into(s, row)
    if mate_check:
        slot = sk.mating_slot(s, row, n, buf)
        if slot >= 0:
            expand_proven_mate(t, found, row, n, slot, -1.0)
            finish_exact(t, prm, found, 1.0)
            return -1
    side = s.st[s.meta[sk.TOP], sk.TURN]
    indices = b.indices[m]
    for j in range(n):
        indices[j] = table[side, row[j] & _MOVE_KEY_MASK]
    sk.encode_over(s, board, hands, reps, moves, b.planes[m], b.marks[m], b.flags[m], quant[0], quant[1])
    return n


@njit_no_alloc_inline
def _end_walk(game: _ShogiArgs) -> None:
    """Take the walk's moves back: the root's state at the root again."""
    sk.rewind(game[0], game[11])


@_njit_no_alloc
def _select_leaves(
    t: TreeArrays,
    prm: Params,
    s: KernelState,
    count: int,
    b: IndexedBuffers,
    sums: SumScratch,
    mate_check: bool,
    buf: I8,
    scratch: tuple[I8, I8, I8, I8],
    quant: F8,
    table: I8,
    root_slots: I8,
) -> int:
    """``Tree.select_leaves(count)`` (:func:`~engine.search.compiled_tree.select_leaves` on the shogi
    kernel): walk ``k`` into root slot ``root_slots[k]`` (int64 ``[>= count]``; -1: PUCT's choice); leaf
    ``m``'s node, planes, legal moves (cshogi's order), policy indices (``table``: ``MOVE_INDEX`` int64
    ``[2, 32768]``) and move count go to row ``m`` of ``b``; with ``mate_check`` a mate in one proves its
    leaf instead.  ``buf`` int64 ``[MAX_MOVES]`` and ``scratch`` (board, hands, repetitions, moves: see
    :func:`~engine.games.shogi_rules_kernel.encode_over`) are scratch, ``quant`` the rows' (scale, zero point).  Returns the number of
    leaves.  The node arrays must have room for ``2 * count`` more nodes and the edge arrays for
    ``count * MAX_MOVES`` more edges; ``s`` (the root) is left as it was."""
    board, hands, reps, moves = scratch
    game = (s, b, sums, mate_check, buf, board, hands, reps, moves, quant, table, s.meta[sk.TOP])
    found: int = select_leaves(
        t, prm, game, count, b.nlegal, b.leaves, root_slots, _walk_once, _leaf_row, _end_walk
    )
    return found


# ---- Python wrapper -------------------------------------------------------------------------------


#: A batch of :class:`CompiledShogiTree` (the first ``m`` rows of its buffers).
ShogiLeafBatch = IndexedLeafBatch


def _kernel_state(state: ShogiState) -> KernelState:
    """The kernel state of ``state`` with room for any walk: every position up to its length limit."""
    return sk.from_shogi_state(state, room=max(state.length_limit - state.ply, 0) + _SPARE_ROWS)


def _with_rows(s: KernelState, rows: int) -> KernelState:
    """``s`` itself when it has ``rows`` rows, else a copy with ``rows`` (the history kept)."""
    if s.pos.shape[0] >= rows:
        return s
    top = int(s.meta[sk.TOP])
    pos = np.zeros((rows, s.pos.shape[1]), s.pos.dtype)
    st = np.zeros((rows, s.st.shape[1]), s.st.dtype)
    keys = np.zeros(rows, s.keys.dtype)
    pos[: top + 1] = s.pos[: top + 1]
    st[: top + 1] = s.st[: top + 1]
    keys[: top + 1] = s.keys[: top + 1]
    return KernelState(pos, st, keys, s.meta.copy())


class CompiledShogiTree(IndexedCompiledTree[int]):
    """A PUCT tree over a shogi position searched in compiled code; the same search as ``Tree`` (module
    docstring) and a :class:`~engine.search.tree_protocol.SearchTree` for the engine's search loop.

    Args:
        state: the root position with its history (not kept: the tree copies it).
        config: search settings.
        rng: random generator for the root noise (default: seeded with ``config.seed``).
        quantization: write the leaves' planes as uint8 so, channels last (for a network that takes them,
            ``OnnxEvaluator.accept_uint8_planes``); ``None``: float32.  Fixed for the tree's life.
    """

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
        self._state = state.copy()  # the root with its history, for cshogi's df-pn mate search
        self._root = _kernel_state(state)
        self._width = MAX_MOVES
        self._arrays = POOL.take(*first_room(config, _FIRST_EDGES_PER_NODE, MAX_MOVES))
        self._buf = np.empty(MAX_MOVES, np.int64)
        self._sums = new_sum_scratch(MAX_MOVES)
        self._scratch = sk.encode_scratch()
        _init_root(self._arrays, self._root, self._buf)
        self._init_batches(_select_leaves)

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> ShogiLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`ShogiLeafBatch` (empty when none needs the network)."""
        self._reserve(2 * count)  # a walk makes two nodes at most: a leaf and its mated child
        t = self._arrays
        if int(t.counts[1]) + count * MAX_MOVES > t.move.shape[0]:
            t = self._grow(0, int(t.counts[1]) + count * MAX_MOVES)  # a mate proof expands its leaf
        root_was_expanded = bool(t.expanded[ROOT])
        b = self._take_buffers(count)
        args = (t, self._params, self._root, int(count), b, self._sums, self.config.mate_check, self._buf)
        slots = self._root_slots(count)
        m = int(self._select(*args, self._scratch, self._quant, MOVE_INDEX, slots))
        batch = ShogiLeafBatch(b, m)
        if m == 0:
            self._release(batch)
        if not root_was_expanded and self._arrays.expanded[ROOT]:
            self._root_expanded()  # a mate in one at the root, proven by the selection
        return batch

    def advance(self, move: int) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges moved to
        the front of the arrays in one compiled pass; a fresh root when the move's child was never
        expanded.  Then root noise and the root mate search, as ``Tree`` does.

        Raises:
            ValueError: ``move`` is not legal at the root.
        """
        if move not in sk.legal_moves(self._root):
            raise ValueError(f"illegal move {move} at the root")
        t = self._arrays
        keep = self._root_child_of(move)
        self._state.push(move)
        top = int(self._root.meta[sk.TOP])
        self._root = _with_rows(
            self._root, top + max(self._state.length_limit - self._state.ply, 1) + _SPARE_ROWS
        )
        sk.push(self._root, move)
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root, self._buf)
        else:
            reroot(t, keep)
        self._new_root_search()

    # ---- internals -----------------------------------------------------------------------------------
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
        side = int(self._root.st[int(self._root.meta[sk.TOP]), sk.TURN])
        indices: I8 = MOVE_INDEX[side][moves & _MOVE_KEY_MASK]
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
    planes) and a position with a mate in one (proven at the root by the selection, and by the df-pn
    search without the mate check).  Call it before the first search so no move pays for compilation."""
    softmax_kernel.warm_up()  # the dense batches' priors (OnnxEvaluator.finish_dense)
    exercise(CompiledShogiTree(ShogiState(), SearchConfig(node_budget=64)))
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
) -> tuple[CompiledShogiTree, IndexedBuffers, tuple[Any, ...]]:
    """A small tree of the engine's kind (float32 planes, or uint8 ones with ``quantization``), batch
    buffers of it and the arguments it passes :func:`_select_leaves`."""
    tree = CompiledShogiTree(ShogiState(), SearchConfig(node_budget=64), quantization=quantization)
    b = tree._take_buffers(4)
    args = (tree._arrays, tree._params, tree._root, 4, b, tree._sums, True, tree._buf, tree._scratch)
    return tree, b, (*args, tree._quant, MOVE_INDEX, tree._root_slots(4))


def _compile_walk() -> None:
    """Compile :func:`_walk` (PUCT, the moves made, terminal positions and repetitions, backups of exact
    values: about half of the kernels), then :func:`_select_leaves` for the engine's trees (both kinds of
    rows)."""
    for quantization in _ROW_KINDS:
        tree, b, args = _select_arguments(quantization)
        t, prm, s = tree._arrays, tree._params, tree._root
        compile_for(_walk, t, prm, s, b.moves[0], tree._sums, -1)
        compile_for(_select_leaves, *args)  # the join: by now the other part has cached its kernels


def _compile_leaves_and_the_rest() -> None:
    """Compile what :func:`_select_leaves` calls beside :func:`_walk` (the leaf's planes, the mate check),
    tree reuse and the kernels the tree calls from Python, for both kinds of rows."""
    for quantization in _ROW_KINDS:
        tree, b, _ = _select_arguments(quantization)
        t, s = tree._arrays, tree._root
        quant = tree._quant
        compile_for(
            sk.encode_over, s, *tree._scratch, b.planes[0], b.marks[0], b.flags[0], quant[0], quant[1]
        )
        compile_for(is_full, t, tree._params)
        compile_for(sk.rewind, s, 0)
        compile_for(sk.mating_slot, s, b.moves[0], 0, tree._buf)
        compile_for(sk.push, s, 0)
        compile_for(reroot, t, 0)
        compile_python_calls(tree, b)


#: Independent parts of :func:`warm_up`'s compilation, for
#: :func:`~engine.search.kernel_build.load_kernels` to compile at once on an empty cache.
COMPILE_PARTS = (_compile_walk, _compile_leaves_and_the_rest)
#: The kernel whose cached machine code says the rest is cached too (it calls both parts' kernels;
#: compiled last).
COMPILED_ENTRY = _select_leaves

#: The game's tree class, as :func:`~engine.search.tree_factory.new_tree` finds it.
TREE = CompiledShogiTree

#: The tree takes ``quantization`` (uint8 planes for an int8 network's uint8-planes model).
WRITES_UINT8_PLANES = True
