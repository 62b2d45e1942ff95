"""The compiled trees driven one batch at a time, as the reference ``Tree`` is, for the tests that compare
the two or craft a search batch by batch.

The engine and self-play drive a tree through :meth:`select_batch` / :meth:`backup_batch` (or
:meth:`backup_batch_arrays`), with batches in flight (``engine.search.tree_protocol``).  The tests also
want the one-batch pairs that need no evaluator thread: :meth:`OneBatch.select_leaves` /
:meth:`OneBatch.backup` on :class:`~engine.evaluator.Evaluation` lists and
:meth:`OneBatch.select_leaves_arrays` / :meth:`OneBatch.backup_arrays` on arrays, the root's visits by
move and its priors, and the tree's size.  They live here, built on the tree's batch methods, so that
the production tree carries only what its callers use.

:class:`GoTree`, :class:`ChessTree` and :class:`ShogiTree` are the compiled trees with the pairs;
:func:`root_visits`, :func:`root_priors` and :func:`node_count` read any compiled tree (one made by
``new_tree`` or a session too).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.evaluator import Evaluation, LegalRows, rows_of_evaluations
from engine.games.base import GameState
from engine.search.compiled_chess import CompiledChessTree
from engine.search.compiled_go import CompiledGoTree
from engine.search.compiled_indexed import IndexedCompiledTree, IndexedLeafBatch
from engine.search.compiled_shogi import CompiledShogiTree
from engine.search.config import SearchConfig
from engine.search.tree_factory import COMPILED_TREES

__all__ = [
    "ChessTree",
    "GoTree",
    "OneBatch",
    "ShogiTree",
    "new_one_batch_tree",
    "node_count",
    "root_priors",
    "root_visits",
]


def root_visits(tree: IndexedCompiledTree[Any]) -> tuple[Any, npt.NDArray[np.float64]]:
    """``(moves, visits)`` as the reference ``Tree.root_visits``: the root's moves in slot order (Go: its
    points, int64 ``[L]``; chess and shogi: a list of native moves) and ``N(s, a)`` float64 ``[L]``
    (empty before the root is expanded)."""
    visits = np.array(tree.root_child_visits(), np.float64)
    if tree._moves_are_indices:
        return tree.root_policy_indices(), visits
    return tree._root_moves(), visits


def root_priors(tree: IndexedCompiledTree[Any]) -> npt.NDArray[np.float64]:
    """float64 ``[L]``: ``P(s, a)`` of the root moves (noise included)."""
    return np.array(tree._arrays.prior[tree._root_edges()], np.float64)


def node_count(tree: IndexedCompiledTree[Any]) -> int:
    """Nodes in the tree (exact after tree reuse)."""
    return int(tree._arrays.counts[0])


class OneBatch:
    """The one-batch-at-a-time pairs over a compiled tree's batch methods (module docstring); mixed in
    before the tree's class.  A selection must be backed up before the next."""

    _current: IndexedLeafBatch | None = None

    def select_leaves_arrays(self, count: int) -> tuple[npt.NDArray[np.float32], LegalRows]:
        """Up to ``count`` walks: the leaves' planes float32 ``[m, ...]`` and legal index rows
        (:class:`~engine.evaluator.LegalRows` ``[m, M]``, read-only), views of buffers that a later call
        overwrites.

        Raises:
            RuntimeError: the previous selection has not been backed up.
        """
        if self._current is not None:
            raise RuntimeError("back up the previous batch before selecting more leaves")
        batch = self._tree.select_batch(count)
        self._current = batch
        legal = batch.legal
        legal.indices.flags.writeable = False
        legal.counts.flags.writeable = False
        return batch.planes, legal

    def backup_arrays(self, priors: npt.ArrayLike, values: npt.ArrayLike) -> None:
        """Back up the last selection with priors ``[m, M]`` aligned with its legal index rows and values
        ``[m]`` (:meth:`~engine.search.compiled_tree.CompiledTree.backup_batch_arrays`).

        Raises:
            RuntimeError: no selection is waiting.
            ValueError: the shapes do not match the leaves.
        """
        batch = self._take_current()
        try:
            self._tree.backup_batch_arrays(batch, priors, values)
        except ValueError:
            self._current = batch  # still waiting, as before the call
            raise

    def select_leaves(self, count: int) -> tuple[npt.NDArray[np.float32], list[npt.NDArray[np.int64]]]:
        """:meth:`select_leaves_arrays` for an :class:`~engine.evaluator.Evaluator`: the planes and ``m``
        int64 arrays ``[L_i]`` of the leaves' legal policy indices (the reference ``Leaf.legal``)."""
        planes, legal = self.select_leaves_arrays(count)
        return planes, legal.lists()

    def backup(self, evaluations: Sequence[Evaluation]) -> None:
        """Back up the last selection with one evaluation a leaf (priors ``[L_i]`` in its legal order,
        value from the leaf's side to move).

        Raises:
            RuntimeError: no selection is waiting.
            ValueError: the evaluations do not match the leaves.
        """
        if self._current is None:
            raise RuntimeError("no leaves to back up")
        legal = self._current.legal.lists()
        if len(evaluations) != len(legal):
            raise ValueError(f"{len(evaluations)} evaluations for {len(legal)} leaves")
        if any(len(ev.priors) != len(idx) for ev, idx in zip(evaluations, legal, strict=True)):
            raise ValueError("an evaluation's priors do not match its leaf's legal moves")
        width = self._current.legal.indices.shape[1]
        priors, values = rows_of_evaluations(evaluations, legal, (len(legal), width))
        self.backup_arrays(priors, values)

    def root_visits(self) -> tuple[Any, npt.NDArray[np.float64]]:
        """:func:`root_visits` of this tree."""
        return root_visits(self._tree)

    def root_priors(self) -> npt.NDArray[np.float64]:
        """:func:`root_priors` of this tree."""
        return root_priors(self._tree)

    @property
    def node_count(self) -> int:
        """:func:`node_count` of this tree."""
        return node_count(self._tree)

    @property
    def _tree(self) -> IndexedCompiledTree[Any]:
        assert isinstance(self, IndexedCompiledTree)
        return self

    def _take_current(self) -> IndexedLeafBatch:
        batch = self._current
        if batch is None:
            raise RuntimeError("no leaves to back up")
        self._current = None
        return batch


class GoTree(OneBatch, CompiledGoTree):
    """:class:`~engine.search.compiled_go.CompiledGoTree` with the one-batch pairs."""


class ChessTree(OneBatch, CompiledChessTree):
    """:class:`~engine.search.compiled_chess.CompiledChessTree` with the one-batch pairs."""


class ShogiTree(OneBatch, CompiledShogiTree):
    """:class:`~engine.search.compiled_shogi.CompiledShogiTree` with the one-batch pairs."""


_WITH_ONE_BATCH: dict[type, type] = {
    CompiledGoTree: GoTree,
    CompiledChessTree: ChessTree,
    CompiledShogiTree: ShogiTree,
}


def new_one_batch_tree(
    state: GameState[Any], config: SearchConfig, rng: np.random.Generator | None = None
) -> Any:
    """:func:`~engine.search.tree_factory.new_tree`'s tree of ``state``'s game, with the one-batch pairs
    (the matching subclass here)."""
    tree_class = importlib.import_module(COMPILED_TREES[state.info.name]).TREE
    return _WITH_ONE_BATCH[tree_class](state, config, rng)
