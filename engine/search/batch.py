"""Network calls for batches of leaves: at once, or in flight on a helper thread.

Two forms of batch meet :class:`~engine.search.tree_protocol.LeafBatch`: :class:`TreeLeafBatch`, the
Python tree's :class:`~engine.search.tree.Leaf` objects evaluated through ``Evaluator.infer`` /
``finish`` (one :class:`~engine.evaluator.Evaluation` per leaf), and :class:`DenseBatch`, planes and a
legal-move mask evaluated through ``Evaluator.infer_dense`` / ``finish_dense`` (dense arrays, no Python
per leaf: the compiled tree's).

The engine's search (one tree) and self-play (many trees, one call for all their leaves) share these
two forms.  A pipelined caller starts a :class:`PendingBatch` on an executor and walks its trees for the
next batch while the network runs: only :meth:`Evaluator.infer` runs on the helper (with
``OnnxEvaluator``, onnxruntime alone, which holds no GIL), the softmax (:meth:`Evaluator.finish`) runs
back on the caller's thread when it asks for the evaluations.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.evaluator import Evaluation, Evaluator, LegalRows

if TYPE_CHECKING:  # tree.py imports this module (its batches)
    from engine.search.tree import Leaf

#: The network call of a batch: ``(planes [B, C, H, W], B legal index arrays) -> inferred``.
InferFunction = Callable[[np.ndarray, list[np.ndarray]], Any]


def _done_within(future: Future[Any] | None, timeout: float | None) -> bool:
    """``True`` once ``future`` is done (at once when there is none), waiting up to ``timeout`` seconds
    (``None``: for good); an exception of the call is raised here."""
    if future is None:
        return True
    try:
        future.result(timeout=timeout)
    except FutureTimeout:
        return False
    return True


def evaluate_leaves(evaluator: Evaluator, leaves: Sequence[Leaf]) -> list[Evaluation]:
    """One network call for a batch of leaves (planes stacked to ``[B, C, H, W]``), on this thread."""
    planes = np.stack([leaf.planes for leaf in leaves])
    return evaluator.evaluate(planes, [leaf.legal for leaf in leaves])


class PendingBatch:
    """A batch of leaves and its network call: in flight on ``executor``, or already done when there is
    none.

    Args:
        evaluator: the network (its :meth:`~Evaluator.finish` makes the evaluations).
        leaves: the batch, in the order of the evaluations.
        executor: runs the network call; ``None`` evaluates the batch here and now.
        infer: the call run on the executor (default ``evaluator.infer``; a wrapper may time it).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        leaves: Sequence[Leaf],
        executor: Executor | None = None,
        infer: InferFunction | None = None,
    ) -> None:
        self.leaves = list(leaves)
        self._evaluator = evaluator
        self._legal = [leaf.legal for leaf in self.leaves]
        self._future: Future[Any] | None = None
        self._evaluations: list[Evaluation] | None = None
        if executor is None:
            self._evaluations = evaluate_leaves(evaluator, self.leaves)
        else:
            planes = np.stack([leaf.planes for leaf in self.leaves])
            self._future = executor.submit(infer or evaluator.infer, planes, self._legal)

    @property
    def in_flight(self) -> bool:
        """True when the call runs on a helper thread (it may have finished there already)."""
        return self._future is not None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (``None``: for good); ``True`` once the network call is done.
        An exception of the call is raised here."""
        return _done_within(self._future, timeout)

    def withdraw(self) -> None:
        """Cancel the call if it is still queued on the executor (it will not run)."""
        if self._future is not None:
            self._future.cancel()

    def evaluations(self) -> list[Evaluation]:
        """The batch's evaluations, in the order of :attr:`leaves` (waits for the call)."""
        if self._evaluations is None:
            assert self._future is not None
            self._evaluations = self._evaluator.finish(self._future.result(), self._legal)
        return self._evaluations


class TreeLeafBatch:
    """The Python tree's batch (:class:`~engine.search.tree_protocol.LeafBatch`): its leaves, and their
    :class:`PendingBatch` once started."""

    def __init__(self, leaves: Sequence[Leaf]) -> None:
        self.leaves = list(leaves)
        self._pending: PendingBatch | None = None
        self._provided: list[Evaluation] | None = None

    def __len__(self) -> int:
        return len(self.leaves)

    @property
    def in_flight(self) -> bool:
        return self._pending is not None and self._pending.in_flight

    def start(self, evaluator: Evaluator, executor: Executor | None) -> None:
        self._pending = PendingBatch(evaluator, self.leaves, executor)

    def wait(self, timeout: float | None = None) -> bool:
        return self._pending is None or self._pending.wait(timeout)

    def withdraw(self) -> None:
        if self._pending is not None:
            self._pending.withdraw()

    def provide(self, evaluations: Sequence[Evaluation]) -> None:
        """Hand over the leaves' evaluations, computed elsewhere (one call for many trees' batches,
        :mod:`engine.search.many_trees`): the batch is done without being started."""
        if len(evaluations) != len(self.leaves):
            raise ValueError(f"{len(evaluations)} evaluations for {len(self.leaves)} leaves")
        self._provided = list(evaluations)

    def evaluations(self) -> list[Evaluation]:
        """The leaves' evaluations, in order (waits for the call).

        Raises:
            RuntimeError: the batch was never started (nor given its evaluations).
        """
        if self._provided is not None:
            return self._provided
        if self._pending is None:
            raise RuntimeError("the batch was not started")
        return self._pending.evaluations()


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

    def withdraw(self) -> None:
        if self._future is not None:
            self._future.cancel()

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
