"""A compiled PUCT tree for Go: :class:`engine.search.tree.Tree`'s search, node for node, in numba.

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
time (one in flight on the worker thread while the next is selected); ``engine.search.tree_factory.new_tree`` picks
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

Gumbel root search and forced playouts (self-play only) choose the root child of each walk in Python
with ``Tree``'s functions (:mod:`engine.search.root_plan`), handed to the walk as ``root_slots``.
Not here (the Python ``Tree`` does it): the network cache (``cache_hits`` is always 0; with a fixed
evaluator a cache changes only when leaves are backed up, not their values).  Mate checks and
repetition penalties are accepted and have no effect, as in ``Tree`` for Go (no mate search;
positional superko never repeats).

Priors and values handed to :meth:`CompiledGoTree.backup` or :meth:`~CompiledGoTree.backup_arrays` are
used as float64 (exactly, for float32 priors); ``Tree`` uses values as given, so an evaluator returning
``np.float32`` values makes ``Tree`` add the virtual loss back in float32 and the two trees can then
differ in the last bits (the engine's evaluators return Python floats).

The game-independent core (the arrays, PUCT, backup, proofs, tree reuse, the shared Python side) is
:mod:`engine.search.compiled_tree`, whose docstring gives the layout; here are the walk on the Go
kernel, the leaves' encoding, expansion from the legal points and :class:`CompiledGoTree`.  A node's
edges are its legal moves in ``GoState.legal_moves_and_indices()`` order (increasing points, pass
``N*N`` last); ``root_allowed`` has ``N*N+1`` slots; ``repeated`` is never set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from engine import softmax_kernel
from engine.evaluator import Evaluation, rows_of_evaluations, uniform_rows
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
from engine.jit import njit_no_alloc as _njit_no_alloc
from engine.search.compiled_tree import (
    BACKED_UP,
    COLLISION,
    DEPTH_SUM,
    EVALUATIONS,
    POOL,
    ROOT,
    Bound,
    CompiledLeafBatch,
    CompiledTree,
    Params,
    TreeArrays,
    add_child,
    add_visits,
    attach_edges,
    backup_value,
    best_root_slot,
    cancel,
    exact_end,
    finish_exact,
    first_room,
    init_root,
    is_full,
    note_depth,
    reroot,
    reserve_memory,
    revert,
    select_step,
)
from engine.search.config import SearchConfig
from engine.search.kernel_build import compile_for

__all__ = ["CompiledGoTree", "GoLeafBatch", "TreeArrays"]

_TO_PLAY = 1  # slot of KernelState.meta holding the colour code to move (see KernelState)


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


@_njit_no_alloc
def _walk(t: TreeArrays, prm: Params, root: KernelState, s: KernelState, root_slot: int) -> int:
    """``Tree._walk``: one walk down from the root, playing the path on ``s`` (a scratch copy of
    ``root``); at the root into slot ``root_slot`` when it is not -1 (a choice made in Python: the
    Gumbel root, forced playouts).  Returns the leaf's node index (now pending; its position left on
    ``s``), or :data:`BACKED_UP` (a terminal or proven node, backed up) or :data:`COLLISION` (reverted)."""
    _copy_into(s, root)
    vl = prm.virtual_loss
    node = ROOT
    depth = 0
    while True:
        ends, value = exact_end(t, node)
        if ends:
            finish_exact(t, prm, node, value)
            return BACKED_UP
        if not t.expanded[node]:
            break
        edge = select_step(t, prm, node, depth, root_slot)
        add_visits(t, node, edge, vl, -vl)
        play(s, t.move[edge])
        depth += 1
        child = t.child[edge]
        if child < 0:  # Tree._new_child: terminal with its exact value when the game is over there
            over = outcome_code(s) != NOT_OVER
            child = add_child(t, node, edge, over, _outcome_value(s) if over else 0.0)
        node = child
    if t.pending[node]:
        revert(t, prm, node)
        return COLLISION
    note_depth(t, depth)
    t.pending[node] = True
    return node


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
    """``Tree.select_leaves(count)``: up to ``count`` walks, walk ``k`` into root slot ``root_slots[k]``
    (int64 ``[>= count]``; -1: PUCT's choice); each leaf's planes go to ``planes[m]``
    (float32 ``[count, 17, N, N]``), its legal points (increasing, pass ``N*N`` last) to
    ``indices[m]`` (int64 ``[count, N*N+1]``) and their number to ``nlegal[m]``, its node to
    ``leaves[m]`` (int64 ``[count]``); ``mask`` (bool ``[N*N+1]``) is scratch.  Returns ``m``, the
    number of leaves.  The node arrays must have room for ``count`` more nodes."""
    if t.terminal[ROOT]:
        return 0
    m = 0
    collisions = 0
    for k in range(count):
        if is_full(t, prm):
            break
        found = _walk(t, prm, root, scratch, root_slots[k])
        if found >= 0:
            encode_into(scratch, planes[m])
            legal_mask_into(scratch, mask)
            n = 0
            row = indices[m]
            for p in range(mask.shape[0]):
                if mask[p]:
                    row[n] = p
                    n += 1
            nlegal[m] = n
            leaves[m] = found
            m += 1
        elif found == COLLISION:
            collisions += 1
            if collisions > prm.max_collisions:
                break
    return m


@_njit_no_alloc
def _expand(
    t: TreeArrays, node: int, points: npt.NDArray[np.int64], n: int, priors: npt.NDArray[np.float64]
) -> None:
    """Attach the ``n`` legal points ``points[:n]`` to ``node`` with their priors ``priors[:n]`` (float64,
    aligned with the points) unless it is expanded already, and clear its pending mark.  The edge
    arrays must have room."""
    t.pending[node] = False
    if t.expanded[node]:
        return
    first = t.counts[1]
    move, prior, child, child_n, child_w = t.move, t.prior, t.child, t.child_n, t.child_w
    for j in range(n):
        e = first + j
        move[e] = points[j]
        prior[e] = priors[j]
        child[e] = -1
        child_n[e] = 0.0
        child_w[e] = 0.0
    attach_edges(t, node, first, first + n)


@_njit_no_alloc
def _backup(
    t: TreeArrays,
    prm: Params,
    m: int,
    leaves: npt.NDArray[np.int64],
    indices: npt.NDArray[np.int64],
    nlegal: npt.NDArray[np.int64],
    priors: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
) -> None:
    """``Tree.backup`` of the first ``m`` leaves: expand leaf ``i`` (node ``leaves[i]``, its ``nlegal[i]``
    legal points ``indices[i]``, int64 ``[_, N*N+1]``) with its priors ``priors[i]`` (float64 ``[_,
    N*N+1]``, aligned with the points) and back up ``values[i]`` (float64 ``[_]``).  The edge arrays
    must have room."""
    for i in range(m):
        _expand(t, leaves[i], indices[i], nlegal[i], priors[i])
        t.stats[DEPTH_SUM] += backup_value(t, prm, leaves[i], values[i])
    t.stats[EVALUATIONS] += m


# ---- Python wrapper -------------------------------------------------------------------------------


class _Buffers(NamedTuple):
    """One batch's arrays (``K`` leaves at most): planes float32 ``[K, 17, N, N]``, legal points int64
    ``[K, N*N+1]`` and their counts int64 ``[K]`` (the batch's :class:`~engine.evaluator.LegalRows`),
    leaf nodes int64 ``[K]``; no record of the planes (``marks``, ``flags``: no columns), which are
    written whole."""

    planes: npt.NDArray[np.float32]
    indices: npt.NDArray[np.int64]
    nlegal: npt.NDArray[np.int64]
    leaves: npt.NDArray[np.int64]
    marks: npt.NDArray[np.int64]
    flags: npt.NDArray[np.bool_]


class GoLeafBatch(CompiledLeafBatch[_Buffers]):
    """A batch of :class:`CompiledGoTree` (:class:`~engine.search.batch.DenseBatch`): the first ``m``
    rows of its buffers."""


class CompiledGoTree(CompiledTree[_Buffers, GoLeafBatch, int]):
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
        rng: random generator for the root noise and the Gumbel sample (default: seeded with
            ``config.seed``).
    """

    def __init__(self, state: GoState, config: SearchConfig, rng: np.random.Generator | None = None) -> None:
        self.config = config  # and the compiled search's params
        self.rng = rng if rng is not None else np.random.default_rng(config.seed)
        self._root = from_go_state(state)
        self._scratch = copy_state(self._root)
        self._size = state.rules.board_size
        self._policy = self._size * self._size + 1
        self._width = self._policy  # a leaf's prior row: its legal points, N*N+1 at most
        self._mask = np.zeros(self._policy, np.bool_)  # the selection's scratch
        self._arrays = POOL.take(*_first_room(state, config))
        _init_root(self._arrays, self._root)
        self._noise_pending = config.dirichlet_alpha is not None
        self._wanted: npt.NDArray[np.bool_] | None = None  # searchmoves over the policy (None: all)
        self.root_mask: npt.NDArray[np.bool_] | None = None  # bool [L]: root slots allowed (None: all)
        self._select = Bound(_select_leaves)
        self._backup = Bound(_backup)
        self._cancel = Bound(cancel)
        self._free: list[_Buffers] = []
        self._lent = {}
        self._lent_made = {}
        self._priors = np.zeros((0, self._policy), np.float64)
        self._values = np.zeros(0, np.float64)
        self._current: GoLeafBatch | None = None  # the batch of the one-at-a-time methods

    def set_root_moves(self, allowed: Sequence[Any] | None) -> None:
        """Restrict the root to ``allowed`` moves (``searchmoves``); ``None``, empty, or no legal move
        among them: all moves (as ``Tree``)."""
        self._wanted = None
        if allowed:
            wanted = np.zeros(self._policy, np.bool_)
            wanted[[int(m) for m in allowed if 0 <= int(m) < self._policy]] = True
            if (wanted & legal_mask(self._root)).any():
                self._wanted = wanted
        self._apply_root_mask()

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
                self._mask,
                buffers.indices,
                buffers.nlegal,
                buffers.leaves,
                self._root_slots(count),
            )
        )
        batch = GoLeafBatch(buffers, m)
        if m == 0:
            self._release(batch)
        return batch

    def advance(self, move: int) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``): its nodes and edges are
        moved to the front of the arrays in one compiled pass; a fresh root when the move's child
        was never expanded."""
        t = self._arrays
        keep = -1
        if t.expanded[ROOT]:
            first = int(t.first_edge[ROOT])
            for e in range(first, first + int(t.num_edges[ROOT])):
                if t.move[e] == move:
                    keep = int(t.child[e])
                    break
        play(self._root, int(move))
        if keep < 0 or not t.expanded[keep]:
            _init_root(t, self._root)
        else:
            reroot(t, keep)
        t.root_allowed[:] = True
        self._wanted = None
        self.root_mask = None
        self.gumbel_root = None
        self._noise_pending = self.config.dirichlet_alpha is not None
        self._apply_root_noise()

    # ---- results (SearchTree) ------------------------------------------------------------------------
    def root_visits(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
        """``(moves, visits)``: the root's legal moves int64 ``[L]`` and their visit counts ``N(s, a)``
        float64 ``[L]`` (``Tree.root_visits``; empty before the root is expanded)."""
        edges = self._root_edges()
        return self._arrays.move[edges].astype(np.int64), self._arrays.child_n[edges].copy()

    # ---- one batch at a time ---------------------------------------------------------------------------
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
        return planes, legal.lists()

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
        legal = self._current.legal
        m = len(legal)
        if len(evaluations) != m:
            raise ValueError(f"{len(evaluations)} evaluations for {m} leaves")
        lists = legal.lists()
        if any(len(ev.priors) != len(x) for ev, x in zip(evaluations, lists, strict=True)):
            raise ValueError("an evaluation's priors do not match its leaf's legal moves")
        priors, values = rows_of_evaluations(evaluations, lists, legal.indices.shape)
        self._backup_dense(self._take_current(), priors, values)

    # ---- internals -----------------------------------------------------------------------------------
    def _backup_dense(self, batch: GoLeafBatch, priors: npt.NDArray[Any], values: npt.NDArray[Any]) -> None:
        """The compiled backup of ``batch`` with priors ``[m, N*N+1]`` (aligned with its legal points) and
        values ``[m]``; makes room for the leaves' edges first, then applies searchmoves to a newly
        expanded root and pending root noise."""
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
        buffers = batch.buffers
        need = int(t.counts[1]) + m * self._policy  # N*N+1 edges a leaf at most
        if need > t.move.shape[0]:
            self._grow(0, need)
        root_was_expanded = bool(self._arrays.expanded[ROOT])
        self._backup(
            self._arrays,
            self._params,
            m,
            buffers.leaves,
            buffers.indices,
            buffers.nlegal,
            self._priors,
            self._values,
        )
        self._release(batch)
        if not root_was_expanded and self._arrays.expanded[ROOT]:
            self._apply_root_mask()
        if self._noise_pending:
            self._apply_root_noise()

    def _apply_root_mask(self) -> None:
        """The searchmoves mask (:meth:`set_root_moves`) over the slots of the expanded root (all
        allowed before it is expanded: the mask is applied when it is)."""
        t = self._arrays
        t.root_allowed[:] = True
        self.root_mask = None
        if self._wanted is not None and t.expanded[ROOT]:
            edges = self._root_edges()
            self.root_mask = self._wanted[t.move[edges]]
            t.root_allowed[: edges.stop - edges.start] = self.root_mask

    def _to_move(self, move: int) -> int:
        return move

    def root_policy_indices(self) -> npt.NDArray[np.int64]:
        """int64 ``[L]``: the root's points (a point's policy index is the point, pass ``N*N``)."""
        return self._arrays.move[self._root_edges()].astype(np.int64)

    def _new_buffers(self, count: int) -> _Buffers:
        return _Buffers(
            np.zeros((count, NUM_PLANES, self._size, self._size), np.float32),
            np.zeros((count, self._policy), np.int64),
            np.zeros(count, np.int64),
            np.zeros(count, np.int64),
            np.zeros((count, 0), np.int64),
            np.zeros((count, 0), np.bool_),
        )


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
    for _ in range(12):
        batch = tree.select_batch(4)
        if len(batch):
            tree.backup_batch_arrays(batch, uniform_rows(batch.legal), np.zeros(len(batch), np.float32))
    tree.cancel_batch(tree.select_batch(2))
    best = tree.best_move()
    if best is not None:
        tree.advance(best)  # the most visited child is expanded: the subtree is moved (_reroot)


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
    """Compile what :func:`_select_leaves` calls beside :func:`_walk` (the planes, the legal points), the
    backup, cancel, tree reuse, the best root slot, the legal-point mask and the priors' softmax."""
    tree = _small_tree()
    t, prm = tree._arrays, tree._params
    b = tree._take_buffers(4)
    compile_for(encode_into, tree._scratch, b.planes[0])
    compile_for(legal_mask_into, tree._scratch, tree._mask)
    compile_for(is_full, t, prm)
    priors = np.zeros((4, tree._policy), np.float64)
    compile_for(_backup, t, prm, 0, b.leaves, b.indices, b.nlegal, priors, np.zeros(4))
    compile_for(cancel, t, prm, 0, b.leaves)
    compile_for(reroot, t, 0)
    compile_for(best_root_slot, t)
    compile_for(legal_mask, tree._root)
    compile_for(play, tree._root, 0)
    softmax_kernel.warm_up()


#: Independent parts of :func:`warm_up`'s compilation, for
#: :func:`~engine.search.kernel_build.load_kernels` to compile at once on an empty cache.
COMPILE_PARTS = (_compile_walk, _compile_leaves_and_the_rest)
#: The kernel whose cached machine code says the rest is cached too (it calls both parts' kernels;
#: compiled last).
COMPILED_ENTRY = _select_leaves
