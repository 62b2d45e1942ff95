"""One network call for the batches of many trees: how self-play searches all its games at once.

Each tree selects its own batch (:meth:`~engine.search.tree_protocol.SearchTree.select_batch`, walks
with virtual loss); :class:`ManyTreesBatch` puts the batches' positions into one array, makes one
network call for all of them (here, or in flight on an executor while the caller walks other trees),
hands each batch its share of the results and backs every tree up
(:meth:`~engine.search.tree_protocol.SearchTree.backup_batch`).  The same select / evaluate / backup
steps as the engine's search loop (:mod:`engine.search.searcher`), on many trees.

The batches are the one form of :mod:`engine.search.batch` (planes and legal index rows,
``Evaluator.infer_dense`` / ``finish_dense``: no Python object per leaf).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from typing import Any

import numpy as np

from engine.evaluator import Evaluator, LegalRows
from engine.search.batch import DenseBatch
from engine.search.tree_protocol import LeafBatch, SearchTree
from engine.uint8_io import Uint8Quantization

#: One tree and the batch it selected (not started).
TreeBatch = tuple[SearchTree[Any], LeafBatch]


class SharedRows:
    """The planes and legal index rows of one network call, written by many compiled trees in turn, so
    the call takes them as they lie instead of concatenating each tree's rows (shogi self-play's 362
    planes a position copied again: docs/benchmarks.md, "Costs behind the code's design").

    A tree given these rows (``CompiledTree.shared_rows``) writes its next batch into :meth:`take`'s
    rows; the caller then keeps the rows it used (:meth:`advance`) before the next tree selects, and
    starts over (:meth:`reset`) only once the call that used them is backed up.  The rows keep, beside
    the planes, the record of what each row's planes hold (``marks`` and ``flags``, for a game that
    writes only what changed: ``IndexedBuffers``); every tree that writes them keeps it.

    Args:
        rows: the most leaves of one call.
        input_shape: a position's planes ``(C, H, W)``.
        quantization: uint8 planes quantized so (trees that write them:
            ``CompiledShogiTree(quantization=...)``); ``None``: float32 planes.  A tree whose rows are
            of the other kind uses its own buffers.

    Attributes:
        planes: float32 ``[rows, C, H, W]`` or uint8 ``[rows, H, W, C]``.
        index, count: the legal index rows (:class:`~engine.evaluator.LegalRows`), int64 ``[rows, M]``
            and ``[rows]``.
        marks, flags: int64 ``[rows, _]`` and bool ``[rows, _]``: the planes' record.  ``M`` and the
            record's widths are the first tree's (one game's trees share them).
    """

    def __init__(
        self, rows: int, input_shape: tuple[int, int, int], quantization: Uint8Quantization | None = None
    ) -> None:
        self._input_shape = input_shape
        self.quantization = quantization
        self._widths = (-1, -1, -1)
        self._allocate(rows, (0, 0, 0))
        self.used = 0

    def _allocate(self, rows: int, widths: tuple[int, int, int]) -> None:
        """Fresh zeroed rows (planes and records together: a record describes its planes)."""
        q = self.quantization
        if q is None:
            self.planes = np.zeros((rows, *self._input_shape), np.float32)
        else:
            c, h, w = self._input_shape
            self.planes = np.full((rows, h, w, c), q.zero_point, np.uint8)
        self.index = np.zeros((rows, widths[0]), np.int64)
        self.count = np.zeros(rows, np.int64)
        self.marks = np.zeros((rows, widths[1]), np.int64)
        self.flags = np.zeros((rows, widths[2]), np.bool_)
        self._widths = widths
        #: the views :meth:`take` handed out, by ``(start, count)``: the same trees take the same rows
        #: step after step, and a tree keeps its batch buffers made of them (``CompiledTree._take_buffers``)
        self._views: dict[tuple[int, int], dict[str, np.ndarray]] = {}

    def take(self, count: int, width: int, marks: int = 0, flags: int = 0) -> dict[str, np.ndarray] | None:
        """The next ``count`` rows (views), by the names of the batch buffers' fields: ``planes``
        ``[count, C, H, W]``, ``indices`` ``[count, width]``, ``nlegal`` ``[count]``, ``marks``
        ``[count, marks]`` and ``flags`` ``[count, flags]``; ``None`` when fewer rows are left or
        the rows are another game's (the tree then uses its own buffers).  The same rows come as the
        same dict (not to be changed) until the rows are made anew, so a caller may key on it."""
        rows = self.planes.shape[0]
        if self.used + count > rows:
            return None
        if self._widths != (width, marks, flags):
            if self.used:
                return None
            self._allocate(rows, (width, marks, flags))
        start, end = self.used, self.used + count
        views = self._views.get((start, count))
        if views is None:
            views = self._views[start, count] = {
                "planes": self.planes[start:end],
                "indices": self.index[start:end],
                "nlegal": self.count[start:end],
                "marks": self.marks[start:end],
                "flags": self.flags[start:end],
            }
        return views

    def advance(self, used: int) -> None:
        """Keep the ``used`` rows a tree's batch took."""
        self.used += used

    def reset(self) -> None:
        """Start the next call's rows (the last call's are backed up)."""
        self.used = 0


class ManyTreesBatch:
    """The batches of many trees and their one network call.

    Args:
        parts: each tree with the batch it selected (not started, not empty).
        evaluator: the network.
        executor: runs the network call (``Evaluator.infer_dense`` only; the rest runs on
            the thread that calls :meth:`backup`); ``None``: the call is made here and now.
        shared: the rows the batches' trees wrote into, in the order of ``parts`` (self-play); when
            every batch lies in them the call takes their first rows as they are, else the batches'
            rows are copied into one array.

    Attributes:
        size: the number of positions in the call.
        seconds: how long the network call itself took (set once it is done).

    Raises:
        ValueError: a batch is not a :class:`~engine.search.batch.DenseBatch`.
    """

    def __init__(
        self,
        parts: Sequence[TreeBatch],
        evaluator: Evaluator,
        executor: Executor | None = None,
        shared: SharedRows | None = None,
    ) -> None:
        self.parts = list(parts)
        self.size = sum(len(batch) for _, batch in self.parts)
        self.seconds = 0.0
        self._evaluator = evaluator
        dense_batches = [batch for _, batch in self.parts if isinstance(batch, DenseBatch)]
        if len(dense_batches) != len(self.parts):
            raise ValueError("a network call takes the trees' dense batches (engine.search.batch.DenseBatch)")
        if shared is not None and _all_in(dense_batches, shared, self.size):
            n = self.size
            self._planes = shared.planes[:n]
            self._legal = LegalRows(shared.index[:n], shared.count[:n])
        else:
            self._planes = _concatenate([b.planes for b in dense_batches])
            self._legal = LegalRows(
                _concatenate([b.legal.indices for b in dense_batches]),
                _concatenate([b.legal.counts for b in dense_batches]),
            )
        infer: Callable[[np.ndarray, Any], Any] = evaluator.infer_dense
        self._inferred: Any = None
        self._future: Future[Any] | None = None
        if executor is None:
            self._inferred = self._timed(infer)
        else:
            self._future = executor.submit(self._timed, infer)

    def _timed(self, infer: Callable[[np.ndarray, Any], Any]) -> Any:
        t0 = time.perf_counter()
        try:
            return infer(self._planes, self._legal)
        finally:
            self.seconds = time.perf_counter() - t0

    @property
    def in_flight(self) -> bool:
        """True when the call runs on the executor (it may have finished there already)."""
        return self._future is not None

    def wait(self) -> None:
        """Wait for the network call (an exception of the call is raised here)."""
        if self._future is not None:
            self._inferred = self._future.result()
            self._future = None

    def backup(self) -> None:
        """Wait for the call, hand each batch its results and back every tree up, in order."""
        self.wait()
        start = 0
        priors, values = self._evaluator.finish_dense(self._inferred, self._legal)
        # the trees' own entry for results computed elsewhere, values in their float64 once for all
        # trees (not the batch's provide/result round trip and a copy per tree)
        values = np.ascontiguousarray(values, np.float64)
        for tree, batch in self.parts:
            end = start + len(batch)
            tree.backup_batch_arrays(batch, priors[start:end], values[start:end])
            start = end


def _all_in(batches: Sequence[DenseBatch], shared: SharedRows, size: int) -> bool:
    """Whether ``batches`` (``size`` rows in all) are the first rows of ``shared``: each batch's planes a
    view of the shared planes and their rows the ones the trees used, which they took one after the
    other in this order (:meth:`SharedRows.take`, :meth:`SharedRows.advance`)."""
    planes = shared.planes
    return size == shared.used and all(b.planes.base is planes for b in batches)


def _concatenate(arrays: list[np.ndarray]) -> np.ndarray:
    """The rows of ``arrays`` in one array (the array itself when there is one: no copy)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
