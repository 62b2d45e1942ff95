"""A batch of leaves and its network call, at once or in flight on a helper thread: :class:`DenseBatch`,
the one form every search tree hands the network (:class:`~engine.search.tree_protocol.LeafBatch`).

A batch is arrays, no Python object per leaf: the leaves' planes and their legal policy indices
(:class:`~engine.evaluator.LegalRows`), evaluated through ``Evaluator.infer_dense`` / ``finish_dense``
into priors aligned with those rows and values.  The engine's search (one tree) and self-play (many
trees, one call for all their leaves, :mod:`engine.search.many_trees`) share it.  A pipelined caller
starts a batch on an executor and walks its trees for the next batch while the network runs: only
``infer_dense`` runs on the helper (with ``OnnxEvaluator``, onnxruntime alone, which holds no GIL), the
softmax (``finish_dense``) runs back on the caller's thread when it asks for the result.  A caller with
nothing else to do can :meth:`DenseBatch.take_over` a call still queued and make it itself.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from engine.evaluator import Evaluator, LegalRows


def _done_within(future: Future[Any] | None, timeout: float | None) -> bool:
    """``True`` once ``future`` is done (at once when there is none), waiting up to ``timeout`` seconds
    (``None``: for good); an exception of the call is raised here.  A poll (``timeout`` 0) of a call
    still running asks ``done()`` only: ``result(timeout=0)`` makes a lock and raises to say no, which
    the search loop would pay on every pass (``Searcher._take_over_queued``)."""
    if future is None:
        return True
    if timeout is not None and timeout <= 0 and not future.done():
        return False
    try:
        future.result(timeout=timeout)
    except FutureTimeout:
        return False
    return True


class DenseBatch:
    """A batch as arrays (:class:`~engine.search.tree_protocol.LeafBatch`): planes float32
    ``[B, C, H, W]`` and the legal policy indices (:class:`~engine.evaluator.LegalRows`, ``[B, M]``),
    evaluated to priors ``[B, M]`` aligned with them and values ``[B]``.  Only
    ``Evaluator.infer_dense`` runs on the executor; ``finish_dense`` runs on the thread that asks
    for :meth:`result`.  The arrays must not change until the result is taken."""

    def __init__(self, planes: np.ndarray, legal: LegalRows) -> None:
        self.planes = planes
        self.legal = legal
        self._evaluator: Evaluator | None = None
        self._future: Future[Any] | None = None
        self._result: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return int(self.planes.shape[0])

    @property
    def in_flight(self) -> bool:
        return self._future is not None

    def start(self, evaluator: Evaluator, executor: Executor | None) -> None:
        self._evaluator = evaluator
        if executor is None:
            self._result = evaluator.evaluate_dense(self.planes, self.legal)
        else:
            self._future = executor.submit(evaluator.infer_dense, self.planes, self.legal)

    def wait(self, timeout: float | None = None) -> bool:
        return _done_within(self._future, timeout)

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the network call is done (on the thread that ends it; here and now
        when it is done or was never started on an executor).  A driver of many stepped searches
        sleeps until one of their calls is back (``protocols/analysis/driver.py``)."""
        future = self._future
        if future is None:
            callback()
        else:
            future.add_done_callback(lambda _done: callback())

    def withdraw(self) -> None:
        if self._future is not None:
            self._future.cancel()

    def take_over(self) -> bool:
        """The call made on this thread instead (``evaluate_dense``: network and softmax) when it is
        still queued on the executor; ``False`` when it has begun there or is not in flight."""
        if self._future is None or not self._future.cancel():
            return False
        assert self._evaluator is not None
        self._future = None
        self._result = self._evaluator.evaluate_dense(self.planes, self.legal)
        return True

    def provide(self, priors: np.ndarray, values: np.ndarray) -> None:
        """Hand over ``priors [B, M]`` and ``values [B]`` computed elsewhere (one call for many trees'
        batches, :mod:`engine.search.many_trees`): the batch is done without being started."""
        if priors.shape[0] != len(self) or values.shape[0] != len(self):
            raise ValueError(f"{priors.shape[0]} priors and {values.shape[0]} values for {len(self)} leaves")
        self._result = (priors, values)

    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """``(priors [B, M], values [B])`` (waits for the call).

        Raises:
            RuntimeError: the batch was never started.
        """
        if self._result is None:
            if self._evaluator is None:
                raise RuntimeError("the batch was not started")
            assert self._future is not None
            self._result = self._evaluator.finish_dense(self._future.result(), self.legal)
        return self._result
