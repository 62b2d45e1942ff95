"""A compiled PUCT tree for Go: the reference ``Tree``'s search (``tests/engine/search/reference_tree.py``),
node for node, in numba.

The tree lives in preallocated numpy arrays (struct of arrays, :class:`TreeArrays`) and the whole walk
runs in compiled code on the compiled Go rules (:mod:`engine.games.go_kernel`): each walk copies the
root :class:`~engine.games.go_kernel.KernelState` into a scratch state and plays down the path, and each
leaf's 17 planes are written by ``encode_into`` straight into a batch buffer.  Python is entered once
per batch, not once per node: :meth:`CompiledGoTree.select_batch` returns a
:class:`~engine.search.batch.DenseBatch` of planes and legal index rows
(:class:`~engine.evaluator.LegalRows`: the legal points), evaluated by
``Evaluator.infer_dense`` / ``finish_dense`` into priors aligned with them and values that
:meth:`CompiledGoTree.backup_batch` takes in one compiled call.  It is a
:class:`~engine.search.tree_protocol.SearchTree`, so the engine's search loop
(:class:`~engine.search.searcher.Searcher`) drives it as it drives ``Tree``, with two batches out at a
time (one in flight on the worker thread while the next is selected);
``engine.search.tree_factory.new_tree`` picks it for Go.  The kernels are called through their compiled
entry points (``Bound``), skipping numba's per-call typing of the tree's arrays.

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
  to the front of the arrays in one compiled pass, so the root stays node 0 and the tree holds exactly
  the kept nodes, where ``Tree`` estimates their number), the statistics of the info lines (playouts,
  evaluations, depth sum, deepest walk).

Gumbel root search and forced playouts (self-play only) choose the root child of each walk in Python
with ``Tree``'s functions (:mod:`engine.search.root_plan`), handed to the walk as ``root_slots``.
Not here (the reference ``Tree`` has it): the network cache (with a fixed evaluator a cache changes
only when leaves are backed up, not their values).  Mate checks and repetition penalties are accepted
and have no effect, as in ``Tree`` for Go (no mate search; positional superko never repeats).

Priors and values handed to a backup are used as float64 (exactly, for float32 priors); ``Tree`` uses
values as given, so an evaluator returning ``np.float32`` values makes ``Tree`` add the virtual loss back
in float32 and the two trees can then differ in the last bits (the engine's evaluators return Python
floats).

The game-independent core (the arrays, PUCT, backup, proofs, tree reuse) is
:mod:`engine.search.compiled_tree`, whose docstring gives the layout, and the Python side every game's
tree shares (expansion and backup, searchmoves) is
:mod:`engine.search.compiled_indexed`; here are the walk on the Go kernel, the leaves' encoding and
:class:`CompiledGoTree`.  A node's
edges are its legal moves in ``GoState.legal_moves_and_indices()`` order (increasing points, pass
``N*N`` last); ``root_allowed`` has ``N*N+1`` slots; ``repeated`` is never set.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from engine import softmax_kernel
from engine.games.go import NUM_PLANES, WHITE, GoRules, GoState
from engine.games.go_kernel import (
    NOT_OVER,
    KernelState,
    copy_state,
    encode_into,
    legal_mask,
    legal_mask_into,
    outcome_code,
    play,
    score,
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
    POOL,
    Params,
    TreeArrays,
    add_child,
    first_room,
    init_root,
    is_full,
    reroot,
    reserve_memory,
    select_leaves,
    walk,
)
from engine.search.config import SearchConfig
from engine.search.kernel_build import compile_for

__all__ = ["CompiledGoTree", "GoLeafBatch", "TreeArrays"]

_TO_PLAY = 1  # slot of KernelState.meta holding the colour code to move (see KernelState)

#: What Go's selection passes its walk and leaf functions: the root, the walk's scratch copy of it, the
#: batch's planes, a legal-point mask (scratch) and the legal index rows.
_GoArgs = tuple[
    KernelState, KernelState, npt.NDArray[np.float32], npt.NDArray[np.bool_], npt.NDArray[np.int64]
]


# ---- compiled kernels -----------------------------------------------------------------------------


@_njit_no_alloc
def _copy_array(dst: npt.NDArray[Any], src: npt.NDArray[Any]) -> None:
    """``dst[:] = src`` for 1-D arrays of one length, as a plain loop: numba's slice assignment goes
    element by element through its broadcasting code, 2 to 4 times slower on the kernel state."""
    for i in range(src.shape[0]):
        dst[i] = src[i]


@_njit_no_alloc
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


@_njit_no_alloc
def _outcome_value(s: KernelState) -> float:
    """``GoState.outcome().value`` of a finished game: the sign of the score from the side to move."""
    v = score(s)
    if s.meta[_TO_PLAY] == WHITE:
        v = -v
    return 1.0 if v > 0 else -1.0 if v < 0 else 0.0


@_njit_no_alloc
def _init_root(t: TreeArrays, root: KernelState) -> None:
    """Node 0 for ``root``: the tree's only node, terminal with its exact value when the game is over."""
    over = outcome_code(root) != NOT_OVER
    init_root(t, over, _outcome_value(root) if over else 0.0)


@njit_no_alloc_inline
def _step(
    t: TreeArrays, prm: Params, node: int, edge: int, depth: int, s: KernelState, scratch: Any
) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.walk`'s ``step`` for Go: play ``edge``'s point on ``s``; a
    child made now is terminal with its exact value when the game is over there (``Tree._new_child``)."""
    play(s, t.move[edge])
    child = t.child[edge]
    if child < 0:
        over = outcome_code(s) != NOT_OVER
        child = add_child(t, node, edge, over, _outcome_value(s) if over else 0.0)
    return child, -1


@_njit_no_alloc
def _walk(t: TreeArrays, prm: Params, root: KernelState, s: KernelState, root_slot: int) -> int:
    """``Tree._walk`` on the Go kernel (:func:`~engine.search.compiled_tree.walk`): the path played on
    ``s``, a scratch copy of ``root``; at the root into slot ``root_slot`` when it is not -1.  Returns
    the leaf's node index (now pending; its position left on ``s``), or :data:`BACKED_UP` or
    :data:`COLLISION`."""
    _copy_into(s, root)
    found, _ = walk(t, prm, s, s, root_slot, _step)
    return found


@njit_no_alloc_inline
def _walk_once(t: TreeArrays, prm: Params, game: _GoArgs, m: int, root_slot: int) -> tuple[int, int]:
    """:func:`~engine.search.compiled_tree.select_leaves`'s walk for Go (:func:`_walk`)."""
    return _walk(t, prm, game[0], game[1], root_slot), -1


@njit_no_alloc_inline
def _write_leaf(t: TreeArrays, prm: Params, game: _GoArgs, m: int, found: int, fresh: int) -> int:
    """Row ``m`` of the batch for the leaf on the scratch state: its planes, its legal points
    (increasing, pass ``N*N`` last) as policy indices; returns their number."""
    _, scratch, planes, mask, indices = game
    encode_into(scratch, planes[m])
    legal_mask_into(scratch, mask)
    n = 0
    row = indices[m]
    for p in range(mask.shape[0]):
        if mask[p]:
            row[n] = p
            n += 1
    return n


@njit_no_alloc_inline
def _end_walk(game: _GoArgs) -> None:
    """Nothing: each walk starts from a fresh copy of the root (:func:`_walk`)."""


@_njit_no_alloc
def _select_leaves(
    t: TreeArrays,
    prm: Params,
    root: KernelState,
    scratch: KernelState,
    count: int,
    planes: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_],
    indices: npt.NDArray[np.int64],
    nlegal: npt.NDArray[np.int64],
    leaves: npt.NDArray[np.int64],
    root_slots: npt.NDArray[np.int64],
) -> int:
    """``Tree.select_leaves(count)`` (:func:`~engine.search.compiled_tree.select_leaves` on Go's rules):
    walk ``k`` into root slot ``root_slots[k]`` (int64 ``[>= count]``; -1: PUCT's choice); each leaf's
    planes go to ``planes[m]`` (float32 ``[count, 17, N, N]``), its legal points to ``indices[m]``
    (int64 ``[count, N*N+1]``) and their number to ``nlegal[m]``, its node to ``leaves[m]`` (int64
    ``[count]``); ``mask`` (bool ``[N*N+1]``) is scratch.  Returns the number of leaves.  The node
    arrays must have room for ``count`` more nodes."""
    game = (root, scratch, planes, mask, indices)
    found: int = select_leaves(
        t, prm, game, count, nlegal, leaves, root_slots, _walk_once, _write_leaf, _end_walk
    )
    return found


# ---- Python wrapper -------------------------------------------------------------------------------


#: A batch of :class:`CompiledGoTree` (the first ``m`` rows of its buffers).
GoLeafBatch = IndexedLeafBatch


class CompiledGoTree(IndexedCompiledTree[int]):
    """A PUCT tree over a Go position searched in compiled code; the same search as ``Tree`` and a
    :class:`~engine.search.tree_protocol.SearchTree` for the engine's search loop.  A node's edges are
    its legal points, which are their own policy indices: the batch's legal index rows are its moves
    (:attr:`~engine.search.compiled_indexed.IndexedCompiledTree._moves_are_indices`).

    Batches go through :meth:`select_batch` / :meth:`backup_batch` (dense arrays, several in flight)
    or :meth:`backup_batch_arrays` (priors and values computed elsewhere); both give the same search
    for the same priors and values.

    Args:
        state: the root position (not kept: the tree copies it into a kernel state).
        config: search settings (root Dirichlet noise when ``config.dirichlet_alpha`` is set, as
            ``Tree`` draws it: the same ``rng`` draws give the same priors).
        rng: random generator for the root noise and the Gumbel sample (default: seeded with
            ``config.seed``).
    """

    _moves_are_indices = True

    def __init__(self, state: GoState, config: SearchConfig, rng: np.random.Generator | None = None) -> None:
        self.config = config  # and the compiled search's params
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self._root = state.kernel_state()
        self._scratch = copy_state(self._root)
        self._size = state.rules.board_size
        self._width = self._size * self._size + 1  # a leaf's legal points: N*N+1 at most
        self._mask = np.zeros(self._width, np.bool_)  # the selection's scratch
        self._arrays = POOL.take(*_first_room(state, config))
        _init_root(self._arrays, self._root)
        self._init_batches(_select_leaves)

    # ---- batches (SearchTree) ------------------------------------------------------------------------
    def select_batch(self, count: int) -> GoLeafBatch:
        """Up to ``count`` walks (``Tree.select_leaves``): the leaves' planes and legal moves in a
        :class:`GoLeafBatch` (empty when none needs the network)."""
        self._reserve(count)
        b = self._take_buffers(count)
        args = (self._arrays, self._params, self._root, self._scratch, int(count), b.planes, self._mask)
        m = int(self._select(*args, b.indices, b.nlegal, b.leaves, self._root_slots(count)))
        batch = GoLeafBatch(b, m)
        if m == 0:
            self._release(batch)
        return batch

    def advance(self, move: int) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges are
        moved to the front of the arrays in one compiled pass; a fresh root when the move's child
        was never expanded."""
        t = self._arrays
        keep = self._root_child_of(int(move))
        play(self._root, int(move))
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root)
        else:
            reroot(t, keep)
        self._new_root_search()

    # ---- results (SelfPlayTree) ----------------------------------------------------------------------
    def root_policy_indices(self) -> npt.NDArray[np.int64]:
        """int64 ``[L]``: the root's points (a point's policy index is the point, pass ``N*N``)."""
        return self._arrays.move[self._root_edges()].astype(np.int64)

    # ---- what the indexed tree asks of the game ------------------------------------------------------
    def _root_moves(self) -> list[int]:
        return [int(p) for p in self._arrays.move[self._root_edges()]]

    def _search_root_mate(self) -> None:
        """Go has no mate search."""

    def _to_move(self, move: int) -> int:
        return move

    def _new_buffers(self, count: int) -> IndexedBuffers:
        return new_indexed_buffers(count, (NUM_PLANES, self._size, self._size), self._width, moves=False)


def _first_room(state: GoState, config: SearchConfig) -> tuple[int, int, int]:
    """A new tree's first arrays (:func:`~engine.search.compiled_tree.first_room`): a quarter of the
    nodes expanded, ``N*N+1`` root slots."""
    policy = state.rules.board_size**2 + 1
    return first_room(config, policy // 4, policy)


def reserve(state: GoState, config: SearchConfig, budget_bytes: int) -> bool:
    """Claim and touch the memory of a tree on ``state``'s board up to ``budget_bytes`` before a search
    (:func:`~engine.search.compiled_tree.reserve_memory`; every evaluated Go node has up to ``N*N+1``
    edges).  Returns whether new memory was touched."""
    first = _first_room(state, config)
    return reserve_memory(first, first[2], budget_bytes)  # N*N+1 edges a node at most, as root slots


def warm_up() -> None:
    """Load (or, with an empty numba cache, compile) every kernel a search uses, with a few walks on a
    small board: the kernels are typed by array types only, so this serves every board size.  Call it
    before the first search (``Session.ensure_ready``) so no move pays for compilation."""
    softmax_kernel.warm_up()  # the dense batches' priors (OnnxEvaluator.finish_dense)
    tree = CompiledGoTree(GoState(GoRules(board_size=5)), SearchConfig(node_budget=256))
    tree.set_root_moves([0, 1, 2])
    exercise(tree, batches=12)  # the most visited child is expanded: the subtree is moved (reroot)


def _small_tree() -> CompiledGoTree:
    """A small tree of the engine's kind (warm_up's 5x5 board: the kernels are typed by array types only)."""
    return CompiledGoTree(GoState(GoRules(board_size=5)), SearchConfig(node_budget=256))


def _compile_walk() -> None:
    """Compile :func:`_walk` (PUCT, the stones played, terminal positions, backups of exact values: most
    of the kernels), then :func:`_select_leaves` for the engine's trees."""
    tree = _small_tree()
    b = tree._take_buffers(4)
    compile_for(_walk, tree._arrays, tree._params, tree._root, tree._scratch, -1)
    # the join: by now the other part has cached what it calls beside _walk (that part's first kernels)
    slots = tree._root_slots(4)
    args = (tree._root, tree._scratch, 4, b.planes, tree._mask, b.indices, b.nlegal, b.leaves, slots)
    compile_for(_select_leaves, tree._arrays, tree._params, *args)


def _compile_leaves_and_the_rest() -> None:
    """Compile what :func:`_select_leaves` calls beside :func:`_walk` (the planes, the legal points), what
    the indexed trees call from Python (:func:`~engine.search.compiled_indexed.compile_python_calls`:
    the backup, cancel, the best root slot, the priors' softmax), tree reuse and the legal-point mask."""
    tree = _small_tree()
    t, prm = tree._arrays, tree._params
    b = tree._take_buffers(4)
    compile_for(encode_into, tree._scratch, b.planes[0])
    compile_for(legal_mask_into, tree._scratch, tree._mask)
    compile_for(is_full, t, prm)
    compile_python_calls(tree, b)
    compile_for(reroot, t, 0)
    compile_for(legal_mask, tree._root)
    compile_for(play, tree._root, 0)


#: Independent parts of :func:`warm_up`'s compilation, for
#: :func:`~engine.search.kernel_build.load_kernels` to compile at once on an empty cache.
COMPILE_PARTS = (_compile_walk, _compile_leaves_and_the_rest)
#: The kernel whose cached machine code says the rest is cached too (it calls both parts' kernels;
#: compiled last).
COMPILED_ENTRY = _select_leaves

#: The game's tree class, as :func:`~engine.search.tree_factory.new_tree` finds it.
TREE = CompiledGoTree
