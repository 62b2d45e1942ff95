"""What the compiled trees share on the Python side: a node's edges are its legal moves, each with its
policy index, in the order the game's ``GameState`` lists them (Go's points are their own indices).

:class:`IndexedBuffers` are one batch's arrays, :class:`IndexedLeafBatch` a batch of them, and
:class:`IndexedCompiledTree` the methods that only read those arrays and the tree's: ``searchmoves``
(:meth:`~IndexedCompiledTree.set_root_moves`) and the dense backup (one compiled call of
:func:`~engine.search.compiled_tree.backup_indexed`, then what ``Tree._expand`` does to a root just
expanded: noise, searchmoves, the game's root mate search).  A game's tree
(:class:`~engine.search.compiled_go.CompiledGoTree`,
:class:`~engine.search.compiled_chess.CompiledChessTree`,
:class:`~engine.search.compiled_shogi.CompiledShogiTree`) adds its walk, its rules and
:meth:`~IndexedCompiledTree._root_moves`, :meth:`~IndexedCompiledTree._search_root_mate`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, TypeVar

import numpy as np
import numpy.typing as npt

from engine import softmax_kernel
from engine.evaluator import uniform_rows
from engine.search.compiled_tree import (
    B1,
    I8,
    ROOT,
    Bound,
    CompiledLeafBatch,
    CompiledTree,
    backup_indexed,
    best_root_slot,
    cancel,
    prove_root_children,
    prove_root_mate,
    root_lcb,
)
from engine.search.kernel_build import compile_for
from engine.search.lcb import quantile_table

MoveT = TypeVar("MoveT")


class IndexedBuffers(NamedTuple):
    """One batch's arrays (``K`` leaves at most, ``M`` the most legal moves of a position): planes
    float32 ``[K, C, H, W]`` (or uint8: :class:`~engine.uint8_io.Uint8Quantization`), legal moves (the game's kernel moves, in its ``GameState`` order) and
    their policy indices int64 ``[K, M]``, move counts and leaf nodes int64 ``[K]``.  ``indices`` and
    ``nlegal`` are the batch's :class:`~engine.evaluator.LegalRows`.  ``marks`` (int64 ``[K, _]``) and
    ``flags`` (bool ``[K, _]``) describe what each row of ``planes`` holds, for a game that writes only
    what changed (shogi, :func:`~engine.games.shogi_kernel.encode_position_over`; rows lent by
    :class:`~engine.search.many_trees.SharedRows` come with the shared rows' record); zero columns
    (chess): every value of a row is written."""

    planes: npt.NDArray[np.float32]
    moves: I8
    indices: I8
    nlegal: I8
    leaves: I8
    marks: I8
    flags: B1


def new_indexed_buffers(
    count: int,
    input_shape: tuple[int, int, int],
    max_moves: int,
    marks: int = 0,
    flags: int = 0,
    planes_dtype: type[np.generic] = np.float32,
    zero: int = 0,
    moves: bool = True,
) -> IndexedBuffers:
    """Zeroed :class:`IndexedBuffers` for ``count`` leaves (``marks`` and ``flags`` columns a row); the
    planes ``planes_dtype`` (float32, or uint8 planes quantized with the zero point ``zero``, what the
    planes hold for 0), ``input_shape`` the shape of a row (``(H, W, C)`` for uint8 rows).  ``moves``
    ``False``: no columns of moves (a game whose moves are their policy indices, Go)."""
    return IndexedBuffers(
        np.full((count, *input_shape), zero, planes_dtype),
        np.zeros((count, max_moves if moves else 0), np.int64),
        np.zeros((count, max_moves), np.int64),
        np.zeros(count, np.int64),
        np.zeros(count, np.int64),
        np.zeros((count, marks), np.int64),
        np.zeros((count, flags), np.bool_),
    )


class IndexedLeafBatch(CompiledLeafBatch[IndexedBuffers]):
    """A batch of an :class:`IndexedCompiledTree` (:class:`~engine.search.batch.DenseBatch`): the first
    ``m`` rows of its buffers; ``legal.lists()`` are its leaves' legal policy indices in the game's
    move order (``Tree``'s ``Leaf.legal``)."""


class IndexedCompiledTree(CompiledTree[IndexedBuffers, IndexedLeafBatch, MoveT]):
    """The Python side shared by the compiled trees of every game (module docstring).  Besides
    :class:`~engine.search.compiled_tree.CompiledTree`'s attributes a tree sets ``_allowed`` (``None``),
    ``root_mask`` and ``_backups`` with :meth:`_init_batches` in its ``__init__``."""

    _allowed: list[MoveT] | None  # searchmoves
    root_mask: B1 | None  # bool [L]: root slots searchmoves allows (None: all)
    _backups: dict[np.dtype[Any], Bound]
    _select: Bound
    #: A move is its policy index (Go's points): the batch's legal index rows are the edges' moves, and
    #: the buffers have no columns of moves.
    _moves_are_indices = False

    def _init_batches(self, select: Any) -> None:
        """What every indexed tree sets once its arrays and root are made: no searchmoves, root noise
        pending when configured, ``select`` (the game's compiled selection) and the shared backup and
        cancel kernels through their compiled entry points, no batch buffers yet."""
        self._noise_pending = self.config.dirichlet_alpha is not None
        self._allowed = None
        self.root_mask = None
        self._select = Bound(select)
        self._backups = {
            np.dtype(np.float32): Bound(backup_indexed),
            np.dtype(np.float64): Bound(backup_indexed),
        }
        self._cancel = Bound(cancel)
        self._free = []
        self._lent = {}
        self._lent_made = {}

    # ---- what the game provides ------------------------------------------------------------------------
    def advance(self, move: MoveT) -> None:
        """Play ``move`` at the root and keep its subtree (``Tree.advance``)."""
        raise NotImplementedError

    def _root_moves(self) -> list[MoveT]:
        """The root's moves as the game's ``GameState`` lists them (empty before the root is expanded)."""
        raise NotImplementedError

    def _search_root_mate(self) -> None:
        """``Tree._search_root_mate`` with the game's mate search."""
        raise NotImplementedError

    # ---- shared ------------------------------------------------------------------------------------------
    def set_root_moves(self, allowed: Sequence[MoveT] | None) -> None:
        """Restrict the root to ``allowed`` moves (``searchmoves``); ``None``, empty, or no legal move
        among them: all moves (``Tree.set_root_moves``)."""
        self._allowed = list(allowed) if allowed else None
        self._apply_root_mask()

    def _backup_dense(
        self, batch: IndexedLeafBatch, priors: npt.NDArray[Any], values: npt.NDArray[Any]
    ) -> None:
        """The compiled backup of ``batch`` with priors ``[m, M]`` (aligned with its legal moves) and
        values ``[m]`` (priors read as they are when float32 or float64, C-contiguous and writeable,
        else copied to float64); makes room for the leaves' edges first, then treats a newly expanded root as ``Tree._expand`` does (noise,
        searchmoves, the root mate search)."""
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
        used = int(t.counts[1])
        if used + m * self._width > t.move.shape[0]:  # the exact count only when the bound does not fit
            need = used + int(b.nlegal[:m].sum())
            if need > t.move.shape[0]:
                t = self._grow(0, need)
        root_was_expanded = bool(t.expanded[ROOT])
        if values.dtype != np.float64 or not values.flags.c_contiguous:
            values = np.array(values, np.float64)
        moves = b.indices if self._moves_are_indices else b.moves
        kernel(t, self._params, m, b.leaves, moves, b.nlegal, priors, values)
        self._release(batch)
        if not root_was_expanded and t.expanded[ROOT]:
            self._root_expanded()

    def _root_child_of(self, move: int) -> int:
        """The root's child behind the edge of kernel move ``move`` (-1: no such edge, or never made)."""
        t = self._arrays
        edges = self._root_edges()
        for e in range(edges.start, edges.stop):
            if t.move[e] == move:
                return int(t.child[e])
        return -1

    def _new_root_search(self) -> None:
        """What ``Tree.advance`` resets once the root has moved on: every root slot allowed, no
        searchmoves, no Gumbel decisions, root noise pending when configured; then, when the new root
        is expanded already (a kept subtree), its noise and the game's root mate search."""
        t = self._arrays
        t.root_allowed[:] = True
        self._allowed = None
        self.root_mask = None
        self.gumbel_root = None
        self._noise_pending = self.config.dirichlet_alpha is not None
        if t.expanded[ROOT]:
            self._apply_root_noise()
            self._search_root_mate()

    def _root_expanded(self) -> None:
        """``Tree._expand`` of a root just expanded: noise, searchmoves, the root mate search."""
        self._apply_root_noise()
        self._apply_root_mask()
        self._search_root_mate()

    def _apply_root_mask(self) -> None:
        """``Tree._apply_root_mask``: the searchmoves mask over the expanded root's slots (``None`` when
        there are no searchmoves or none of them is legal)."""
        t = self._arrays
        t.root_allowed[:] = True
        self.root_mask = None
        if not t.expanded[ROOT] or not self._allowed:
            return
        allowed = self._allowed
        mask = np.array([m in allowed for m in self._root_moves()], dtype=bool)
        if mask.any():
            self.root_mask = mask
            t.root_allowed[: mask.shape[0]] = mask


def exercise(tree: IndexedCompiledTree[Any], batches: int = 3, size: int = 4) -> None:
    """Run what a search runs on ``tree``, so that its kernels are compiled (or loaded) before a first
    search: ``batches`` selections of ``size`` leaves backed up with uniform priors (float32 and float64
    rows in turns), a cancelled batch and tree reuse (the most visited move played)."""
    for i in range(batches):
        batch = tree.select_batch(size)
        if len(batch):
            dtype = np.float64 if i % 2 else np.float32
            tree._backup_dense(batch, uniform_rows(batch.legal, dtype), np.zeros(len(batch), np.float32))
    tree.cancel_batch(tree.select_batch(2))
    best = tree.best_move()
    if best is not None:
        tree.advance(best)


def compile_python_calls(tree: IndexedCompiledTree[Any], b: IndexedBuffers) -> None:
    """Compile (or load) the kernels an indexed tree calls from Python, for the types of ``tree``'s
    arrays and its batch buffers ``b``: the backups of float32 and float64 priors, cancel, the best root
    slot, the root's mate proof, the root's proofs from outside (tablebases) and the priors' softmax (for a game's
    ``COMPILE_PARTS``, :mod:`engine.search.kernel_build`)."""
    t, prm = tree._arrays, tree._params
    for dtype in (np.float32, np.float64):
        priors = np.zeros((b.moves.shape[0], tree._width), dtype)
        compile_for(backup_indexed, t, prm, 0, b.leaves, b.moves, b.nlegal, priors, np.zeros(len(priors)))
    compile_for(cancel, t, prm, 0, b.leaves)
    quantiles = quantile_table(tree._config.lcb_alpha)
    compile_for(best_root_slot, t, 0.0, quantiles)
    compile_for(root_lcb, t, 0, quantiles)
    compile_for(prove_root_mate, t, 0, 1)
    marks = np.zeros(1, np.int64)
    compile_for(prove_root_children, t, marks, marks, marks, 0)
    softmax_kernel.warm_up()
