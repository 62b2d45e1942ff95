"""A compiled PUCT tree for chess: the reference ``Tree``'s search (``tests/engine/search/reference_tree.py``),
node for node, in numba.

The chess counterpart of :mod:`engine.search.compiled_go`: the tree lives in preallocated numpy arrays
(struct of arrays, :class:`TreeArrays`) and the whole walk runs in compiled code on the compiled chess
rules (:mod:`engine.games.chess_kernel`).  The root's :class:`~engine.games.chess_kernel.KernelState`
is a copy-make stack, so a walk needs no copy of the root: it pushes its path onto the rows above the
root and rewinds to the root afterwards.  Each leaf's 119 planes are written by ``encode_into``
straight into a batch buffer, its legal moves (python-chess's order) and their policy indices into
index buffers (the batch's :class:`~engine.evaluator.LegalRows`).  Python is entered once per batch for
the selection and once for the backup (:meth:`~CompiledChessTree.select_batch` /
:meth:`~CompiledChessTree.backup_batch`, the engine's search loop's
:class:`~engine.search.tree_protocol.SearchTree`).

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
* ``config.mate_check``'s mate in one at every leaf (``Tree._prove_mate`` with
  ``ChessState.mate_in_one``: a leaf whose side to move can checkmate is expanded with all its prior
  on the first such move in python-chess's order and proven won, the mated child terminal, no network
  call; :func:`~engine.games.chess_kernel.mating_slot`), a mate at the root included;
* root Dirichlet noise (``dirichlet_alpha``; the same ``rng`` draws as ``Tree``), ``searchmoves``
  (:meth:`~CompiledChessTree.set_root_moves`), tree reuse (:meth:`~CompiledChessTree.advance`).

What differs from ``Tree``: there is no network cache (``Tree``'s ``cache`` argument; a cache hit there
saves a network call and is counted as a playout, so with a cache the two searches differ), and after
tree reuse the tree holds exactly the kept subtree's nodes (``Tree`` estimates its size from the new
root's visits).
Gumbel root search and forced playouts choose the root child of each walk in Python
(:mod:`engine.search.root_plan`; the walk below it is this module's).

Moves: the public methods take and return ``chess.Move`` as ``ChessState`` does (standard castling
``e1g1``, Chess960 king-takes-rook), so the tree is a drop-in for ``Tree`` in the search loop; inside,
moves are the kernel's ints.

Priors and values are used as float64 (exactly, for float32 priors: dense float32 priors are read as
they are, float64 ones too, anything else is converted to float64).  ``Tree`` uses values as given,
so an evaluator returning ``np.float32`` values makes ``Tree`` add the virtual loss back in float32 and
the two trees can then differ in the last bits (the engine's evaluators return Python floats).
The game-independent core (the arrays, PUCT, backup, proofs, tree reuse, the shared Python side) is
:mod:`engine.search.compiled_tree`, whose docstring gives the layout; here are the walk on the chess
kernel, the leaves' encoding, expansion from the generated legal moves, repetitions, the root mate
search and :class:`CompiledChessTree`.  A node's edges are its legal moves in python-chess's order (the
kernel's ints); ``root_allowed`` has 256 slots.
"""

from __future__ import annotations

import chess
import numpy as np
import numpy.typing as npt

from engine import softmax_kernel
from engine.evaluator import uniform_rows
from engine.games.chess import NUM_PLANES, ChessRules, ChessState
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
    mating_slot,
    order_legal,
    ordered_legal_into,
    outcome_code_given,
    push,
    repetition_count,
    rewind,
    to_chess_move,
)
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
from engine.search.kernel_build import compile_for, literal

__all__ = ["ChessLeafBatch", "CompiledChessTree", "TreeArrays", "warm_up"]

_TOP = 0  # KernelState.meta[0]: the row of the current position

#: Free kernel rows the tree keeps above ``max(root row, max_plies)`` (the mate search plays 3 plies
#: from a root below ``max_plies``; walks never go past ``max_plies``, where every position is over).
_SPARE_ROWS = 5


# ---- compiled kernels: nodes, repetitions -----------------------------------------------------------


@_njit_no_alloc
def _init_root(t: TreeArrays, root: KernelState, buf: I8) -> None:
    """Node 0 for ``root``, the tree's only node: terminal only when it has no legal move (checkmate
    -1, stalemate 0; ``Tree._init_root_terminal``).  ``buf`` int64 ``[256]`` scratch."""
    n = legal_moves_into(root, buf)
    value = (-1.0 if in_check(root) else 0.0) if n == 0 else 0.0
    init_root(t, n == 0, value)


@_njit_no_alloc
def _new_child(t: TreeArrays, prm: Params, node: int, edge: int, s: KernelState, buf: I8) -> tuple[int, int]:
    """``Tree._new_child``: create the child behind ``edge`` of ``node`` (its position is ``s``): terminal
    when the game is over there, or (with a repetition penalty) when the position occurred before,
    valued against the move's mover (marked ``repeated``: the caller moves the move's prior to the
    other moves, :func:`~engine.search.compiled_tree.drop_prior_into`).  Returns the child's index and
    its number of legal moves, which are left in ``buf`` (int64 ``[256]``) as the generator lists them."""
    n = legal_moves_into(s, buf)
    code = outcome_code_given(s, n)
    if code != NOT_OVER:
        child = add_child(t, node, edge, True, -1.0 if code == CHECKMATE else 0.0)
    elif prm.repetition_penalty != 0.0 and repetition_count(s) > 0:
        child = add_child(t, node, edge, True, prm.repetition_penalty)
        t.repeated[child] = True
    else:
        child = add_child(t, node, edge, False, 0.0)
    return child, n


# ---- compiled kernels: selection and backup ----------------------------------------------------------


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
    """:func:`~engine.search.compiled_tree.walk`'s ``step`` for chess: push ``edge``'s move onto ``s``; a
    child made now (:func:`_new_child`) brings its number of legal moves, left in ``scratch[0]``
    (int64 ``[256]``), and a penalised repetition's prior goes to the other moves
    (:func:`~engine.search.compiled_tree.drop_prior_into`, in ``scratch[1]``)."""
    buf, sums = scratch
    push(s, t.move[edge])
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
    """``Tree._walk`` on the chess kernel (:func:`~engine.search.compiled_tree.walk`): the path pushed
    onto ``s`` (the root's state; the caller rewinds it); at the root into slot ``root_slot`` when it is
    not -1; ``sums``: scratch for a penalised repetition's prior sums.  Returns the leaf's node index
    (now pending; its position on ``s``), or :data:`BACKED_UP` or :data:`COLLISION`; and when the leaf
    was created by this walk, its number of legal moves, left in ``buf`` (int64 ``[256]``) by
    :func:`_new_child` (-1 otherwise)."""
    return walk(t, prm, s, (buf, sums), root_slot, _step)


@_njit_no_alloc
def _write_leaf(
    s: KernelState, m: int, fresh: int, planes: npt.NDArray[np.float32], moves: I8, indices: I8
) -> int:
    """Row ``m`` of the batch for the position on ``s``: its planes ``planes[m]`` (float32 ``[119, 8,
    8]``), its legal moves ``moves[m]`` and policy indices ``indices[m]`` (int64 ``[256]``,
    python-chess's order).  ``fresh`` is the number of legal moves already generated into ``moves[m]``
    by the walk, or -1.  Returns the move count."""
    n = fresh if fresh >= 0 else legal_moves_into(s, moves[m])
    order_legal(s, moves[m], n, indices[m])
    encode_into(s, planes[m])
    return n


@_njit_no_alloc
def _prove_mate(t: TreeArrays, prm: Params, node: int, moves: I8, n: int, slot: int) -> None:
    """``Tree._prove_mate``: expand ``node`` with its ``n`` legal ``moves`` (python-chess's order) and all
    its prior on the checkmating ``slot``, make the mated child terminal (-1 for its side to move) and
    proven lost, prove ``node`` won in one and back +1 up.  The node and edge arrays must have room."""
    expand_proven_mate(t, node, moves, n, slot, -1.0)
    finish_exact(t, prm, node, 1.0)


#: What chess's selection passes its walk and leaf functions: the root's state (the walks' stack), the
#: batch's planes, moves, policy indices, the prior sums' scratch, ``mate_check``, a move buffer and the
#: root's row.
_ChessArgs = tuple[KernelState, npt.NDArray[np.float32], I8, I8, SumScratch, bool, I8, int]


@njit_no_alloc_inline
def _walk_once(t: TreeArrays, prm: Params, game: _ChessArgs, m: int, root_slot: int) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.select_leaves`'s walk for chess (:func:`_walk`): the path pushed
    onto the root's state, a new leaf's legal moves generated into row ``m`` of the moves."""
    s, _, moves, _, sums, _, _, _ = game
    return _walk(t, prm, s, moves[m], sums, root_slot)


@njit_no_alloc_inline
def _leaf_row(t: TreeArrays, prm: Params, game: _ChessArgs, m: int, found: int, fresh: int) -> int:
    """Row ``m`` of the batch for leaf ``found`` (:func:`_write_leaf`); with ``mate_check`` a leaf whose
    side to move can checkmate at once is proven won instead (:func:`_prove_mate`, no network call):
    -1."""
    s, planes, moves, indices, _, mate_check, buf, _ = game
    n = _write_leaf(s, m, fresh, planes, moves, indices)
    slot = mating_slot(s, moves[m], n, buf) if mate_check else -1
    if slot >= 0:
        _prove_mate(t, prm, found, moves[m], n, slot)
        return -1
    return n


@njit_no_alloc_inline
def _end_walk(game: _ChessArgs) -> None:
    """Take the walk's moves back: the root's state at the root again."""
    s = game[0]
    rewind(s, game[7])


@_njit_no_alloc
def _select_leaves(
    t: TreeArrays,
    prm: Params,
    s: KernelState,
    count: int,
    planes: npt.NDArray[np.float32],
    moves: I8,
    indices: I8,
    nlegal: I8,
    leaves: I8,
    sums: SumScratch,
    mate_check: bool,
    buf: I8,
    root_slots: I8,
) -> int:
    """``Tree.select_leaves(count)`` (:func:`~engine.search.compiled_tree.select_leaves` on the chess
    kernel): walk ``k`` into root slot ``root_slots[k]`` (int64 ``[>= count]``; -1: PUCT's choice);
    leaf ``m``'s node goes to ``leaves[m]``, its planes, moves and indices to row ``m`` of the buffers
    (:func:`_write_leaf`), its move count to ``nlegal[m]``; ``sums``: :func:`_walk`'s scratch.  With
    ``mate_check`` a leaf whose side to move can checkmate at once is proven won instead
    (:func:`_prove_mate`; ``buf`` int64 ``[256]`` scratch).  Returns the number of leaves.  The node
    arrays must have room for ``2 * count`` more nodes and the edge arrays for ``count * MAX_MOVES``
    more edges; ``s`` (the root) is left as it was."""
    root_top = s.meta[_TOP]
    game = (s, planes, moves, indices, sums, mate_check, buf, root_top)
    found: int = select_leaves(
        t, prm, game, count, nlegal, leaves, root_slots, _walk_once, _leaf_row, _end_walk
    )
    return found


# ---- Python wrapper -------------------------------------------------------------------------------


#: A batch of :class:`CompiledChessTree` (the first ``m`` rows of its buffers).
ChessLeafBatch = IndexedLeafBatch


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


class CompiledChessTree(IndexedCompiledTree[chess.Move]):
    """A PUCT tree over a chess position searched in compiled code; the same search as ``Tree`` (module
    docstring) and a :class:`~engine.search.tree_protocol.SearchTree` for the engine's search loop.

    Batches go through :meth:`select_batch` / :meth:`backup_batch` (dense arrays, at most two batches
    at a time: one in flight while the next is selected) or :meth:`backup_batch_arrays` (priors and
    values computed elsewhere); both give the same search for the same priors and values.

    Args:
        state: the root position with its history (not kept: the tree copies it into a kernel state).
        config: search settings (root noise drawn as ``Tree`` draws it: the same ``rng`` draws give the
            same priors).
        rng: random generator for the root noise and the Gumbel sample (default: seeded with
            ``config.seed``).
    """

    def __init__(
        self, state: ChessState, config: SearchConfig, rng: np.random.Generator | None = None
    ) -> None:
        self.config = config  # and the compiled search's params
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self.rules: ChessRules = state.rules
        self._root = _kernel_state(state)
        self._width = MAX_MOVES
        self._arrays = POOL.take(*first_room(config, _FIRST_EDGES_PER_NODE, MAX_MOVES))
        self._buf = np.empty(MAX_MOVES, np.int64)
        self._sums = new_sum_scratch(MAX_MOVES)
        _init_root(self._arrays, self._root, self._buf)
        self._init_batches(_select_leaves)

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> ChessLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`ChessLeafBatch` (empty when none needs the network)."""
        self._reserve(2 * count)  # a walk makes two nodes at most: a leaf and its mated child
        t = self._arrays
        mate_check = self.config.mate_check
        if mate_check and int(t.counts[1]) + count * MAX_MOVES > t.move.shape[0]:
            t = self._grow(0, int(t.counts[1]) + count * MAX_MOVES)  # a mate proof expands its leaf
        root_was_expanded = bool(t.expanded[ROOT])
        b = self._take_buffers(count)
        args = (t, self._params, self._root, int(count), b.planes, b.moves, b.indices)
        slots = self._root_slots(count)
        m = int(self._select(*args, b.nlegal, b.leaves, self._sums, mate_check, self._buf, slots))
        batch = ChessLeafBatch(b, m)
        if m == 0:
            self._release(batch)
        if not root_was_expanded and self._arrays.expanded[ROOT]:
            self._root_expanded()  # a mate in one at the root, proven by the selection
        return batch

    def advance(self, move: chess.Move) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges are
        moved to the front of the arrays in one compiled pass; a fresh root when the move's child was
        never expanded.  Then root noise and the root mate search, as ``Tree`` does.

        Raises:
            ValueError: ``move`` is not legal at the root.
        """
        t = self._arrays
        kernel_move = from_chess_move(self._root, move)
        keep = self._root_child_of(kernel_move)
        top = int(self._root.meta[_TOP])
        self._root = _with_rows(self._root, max(top + 1, self.rules.max_plies) + _SPARE_ROWS + 1)
        push(self._root, kernel_move)
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root, self._buf)
        else:
            reroot(t, keep)
        self._new_root_search()

    # ---- results (SearchTree) ------------------------------------------------------------------------
    # ---- one batch at a time ---------------------------------------------------------------------------
    # ---- internals -----------------------------------------------------------------------------------
    def _search_root_mate(self) -> None:
        """``Tree._search_root_mate``: prove the expanded root won when the rules' mate search
        (:func:`~engine.games.chess_kernel.find_mate`) finds a forced mate; nothing when it is already
        proven, off, none is found, or searchmoves excludes the mating move."""
        t = self._arrays
        nodes = self.config.root_mate_nodes
        if nodes <= 0 or t.proven[ROOT] != UNPROVEN or t.terminal[ROOT] or not self._root_edges_count():
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
        prove_root_mate(self._arrays, slot, int(plies))

    def _root_edges_count(self) -> int:
        edges = self._root_edges()
        return int(edges.stop - edges.start)

    def _root_moves(self) -> list[chess.Move]:
        """The root's moves as ``ChessState`` lists them (empty before the root is expanded)."""
        chess960 = self.rules.chess960
        return [to_chess_move(int(m), chess960) for m in self._arrays.move[self._root_edges()]]

    def root_policy_indices(self) -> I8:
        """int64 ``[L]``: the root moves' policy indices, from the rules kernel (the root's edges are its
        legal moves in python-chess's order, as :func:`~engine.games.chess_kernel.ordered_legal_into`
        lists them), without a ``chess.Move`` per move."""
        n = self._root_edges_count()
        if n == 0:
            return np.zeros(0, np.int64)
        indices = np.empty(MAX_MOVES, np.int64)
        moves = np.empty(MAX_MOVES, np.int64)
        if ordered_legal_into(self._root, moves, indices) != n:
            raise RuntimeError("the root's edges are not its legal moves")
        return indices[:n].copy()

    def _to_move(self, move: int) -> chess.Move:
        """A kernel move as ``ChessState`` writes it."""
        return to_chess_move(move, self.rules.chess960)

    def _new_buffers(self, count: int) -> IndexedBuffers:
        return new_indexed_buffers(count, (NUM_PLANES, 8, 8), MAX_MOVES)


#: A mate in one (Ra8#) for :func:`warm_up`'s root mate search.
_WARM_UP_MATE = "6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1"


#: Edges a node has on average: among a new tree's first arrays (most nodes never expanded), and in a
#: tree grown to ``Hash`` (a chess position's usual number of legal moves).
_FIRST_EDGES_PER_NODE, _EDGES_PER_NODE = 10, 40


#: Claims a tree's memory before a search (``kernel_loading.reserve_search_memory``).
reserve = fixed_width_reserve(_FIRST_EDGES_PER_NODE, _EDGES_PER_NODE, MAX_MOVES)


def warm_up() -> None:
    """Load (or, with an empty numba cache, compile) every kernel a search uses, with a few walks from
    the start position (float32 and float64 priors, a cancelled batch, tree reuse, the mate search), a
    root proven by a mate in one and root moves proven from outside (tablebases).
    Call it before the first search so no move pays for compilation."""
    softmax_kernel.warm_up()  # the dense batches' priors (OnnxEvaluator.finish_dense)
    exercise(CompiledChessTree(ChessState(), SearchConfig(node_budget=64)))
    mate = CompiledChessTree(ChessState(chess.Board(_WARM_UP_MATE)), SearchConfig(node_budget=8))
    batch = mate.select_batch(1)  # the root: its backup finds the mate and proves the root
    mate._backup_dense(batch, uniform_rows(batch.legal), np.zeros(len(batch), np.float32))
    mate.prove_root_moves({mate.root_move(0): (-1, 2)})  # a proof from outside (tablebases)


def _small_tree() -> tuple[CompiledChessTree, IndexedBuffers]:
    """A small tree of the engine's kind (its root expanded: the move generator compiled or loaded) and
    batch buffers of it."""
    tree = CompiledChessTree(ChessState(), SearchConfig(node_budget=64))
    return tree, tree._take_buffers(4)


def _compile_walk() -> None:
    """Compile :func:`_walk` (PUCT, the moves made, terminal positions and repetitions, backups of exact
    values: about half of the kernels), then :func:`_select_leaves` for the engine's trees."""
    tree, b = _small_tree()
    t, prm, s = tree._arrays, tree._params, tree._root
    compile_for(_walk, t, prm, s, b.moves[0], tree._sums, -1)
    # the join: by now the other part has cached what it calls beside _walk (that part's first kernels)
    args = (t, prm, s, 4, b.planes, b.moves, b.indices, b.nlegal, b.leaves, tree._sums, True, tree._buf)
    compile_for(_select_leaves, *args, tree._root_slots(4))


def _compile_leaves_and_the_rest() -> None:
    """Compile what :func:`_select_leaves` calls beside :func:`_walk` (the leaf's row, the mate check and
    proof), the root's mate search, tree reuse and the kernels the tree calls from Python."""
    tree, b = _small_tree()
    t, prm, s = tree._arrays, tree._params, tree._root
    for m in (literal(0), 0):  # the first row's index is typed as the literal
        compile_for(_write_leaf, s, m, 0, b.planes, b.moves, b.indices)
    compile_for(is_full, t, prm)
    compile_for(rewind, s, 0)
    compile_for(mating_slot, s, b.moves[0], 0, tree._buf)
    compile_for(_prove_mate, t, prm, 0, b.moves[0], 0, 0)
    compile_for(push, s, 0)
    compile_for(find_mate, s, 0)
    compile_for(reroot, t, 0)
    compile_python_calls(tree, b)


#: Independent parts of :func:`warm_up`'s compilation, for
#: :func:`~engine.search.kernel_build.load_kernels` to compile at once on an empty cache.
COMPILE_PARTS = (_compile_walk, _compile_leaves_and_the_rest)
#: The kernel whose cached machine code says the rest is cached too (it calls both parts' kernels;
#: compiled last).
COMPILED_ENTRY = _select_leaves

#: The game's tree class, as :func:`~engine.search.tree_factory.new_tree` finds it.
TREE = CompiledChessTree
