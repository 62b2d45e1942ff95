"""The evaluator interface the search calls: a batch of encoded positions in, priors over each
position's legal moves and values out.  Implementations live in ``engine/inference.py``
(``OnnxEvaluator``, ``UniformEvaluator``); the search never knows which one it has."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import numpy as np


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """One position's network output, restricted to its legal moves.

    Attributes:
        priors: float32 ``[L]``, softmax of the policy logits over the legal moves only (illegal
            moves masked, renormalised), aligned with the ``legal`` indices that were passed in.
        value: expected outcome in [-1, 1] from the side to move.
        wdl: float32 ``[3]`` win/draw/loss probabilities from the side to move, or ``None`` when the
            network has no WDL head.
    """

    priors: np.ndarray
    value: float
    wdl: np.ndarray | None = None


class Evaluator(abc.ABC):
    """Evaluates batches of positions.  Thread-safe for one caller at a time."""

    #: Human-readable description for logs and ``info string`` (network path, provider).
    description: str = ""

    #: Whether a network call is worth running on a helper thread while the search walks its tree
    #: (a real network releases the GIL); ``False`` for evaluators that do no work worth overlapping
    #: (``UniformEvaluator``): the search then evaluates on its own thread, without a thread hand-off.
    overlaps: bool = True

    @abc.abstractmethod
    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """Evaluate a batch.

        Args:
            planes: float32 ``[B, C, H, W]`` encoded positions (``GameState.encode()``).
            legal: ``B`` int64 arrays ``[L_i]`` of legal policy indices per position (``L_i`` may be 0
                for a terminal position; its priors are then empty).

        Returns:
            ``B`` evaluations, in order.
        """

    def infer(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> Any:
        """The first half of :meth:`evaluate`, the network call: what a pipelined search runs on a
        helper thread while its own thread walks the trees.  ``finish(infer(p, legal), legal)`` equals
        ``evaluate(p, legal)``.  The default does all the work here (``evaluate``) and :meth:`finish`
        none; ``OnnxEvaluator`` keeps only the network call here (onnxruntime releases the GIL) and
        the softmax in ``finish`` (Python, which on the helper would wait for the GIL).

        Args:
            planes: float32 ``[B, C, H, W]``.
            legal: ``B`` int64 arrays of legal policy indices.

        Returns:
            whatever :meth:`finish` takes.
        """
        return self.evaluate(planes, legal)

    def finish(self, inferred: Any, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """The second half of :meth:`evaluate`, on the caller's thread: the ``B`` evaluations from what
        :meth:`infer` returned (default: ``inferred`` itself)."""
        return cast(list[Evaluation], inferred)

    def evaluate_dense(self, planes: np.ndarray, legal_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`evaluate` with dense arrays, no Python object per position.

        Args:
            planes: float32 ``[B, C, H, W]`` encoded positions.
            legal_mask: bool ``[B, A]``, the legal policy indices of each position (``A`` the policy
                size).

        Returns:
            ``(priors, values)``: float32 ``[B, A]`` (the default: wider when :meth:`evaluate`'s priors
            are), the masked softmax of each position (zero on
            illegal indices; the entries of the legal ones equal :meth:`evaluate`'s priors, in increasing
            index order), and float ``[B]`` values from the side to move (float32 from a network; the
            default keeps :meth:`evaluate`'s values as float64).  The default goes through
            :meth:`evaluate`; evaluators override it with vectorised code.
        """
        legal = [np.flatnonzero(row) for row in legal_mask]
        return dense_evaluations(self.evaluate(planes, legal), legal, legal_mask.shape)

    def infer_dense(self, planes: np.ndarray, legal_mask: np.ndarray) -> Any:
        """The network-call half of :meth:`evaluate_dense`, for a helper thread (as :meth:`infer`):
        ``finish_dense(infer_dense(p, m), m)`` equals ``evaluate_dense(p, m)``.  The default does all
        the work here."""
        return self.evaluate_dense(planes, legal_mask)

    def finish_dense(self, inferred: Any, legal_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The caller's half of :meth:`evaluate_dense` (as :meth:`finish`): ``(priors [B, A], values
        [B])`` from what :meth:`infer_dense` returned (default: ``inferred`` itself)."""
        return cast(tuple[np.ndarray, np.ndarray], inferred)

    def ownership(self, planes: np.ndarray) -> np.ndarray | None:
        """Go: the network's ownership output, float32 ``[B, N*N]`` in [-1, 1], each point's final owner
        from each position's side to move; ``None`` when the network has no ownership head (the
        default)."""
        return None

    def cancel(self) -> None:  # noqa: B027 - optional hook, a no-op unless the implementation can cancel
        """End a call running on another thread early, if the implementation can (default: no)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op for evaluators that hold nothing
        """Release sessions and threads (default: nothing)."""


def dense_evaluations(
    evaluations: Sequence[Evaluation], legal: Sequence[np.ndarray], shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``B`` evaluations over their ``legal`` indices written densely: priors ``[B, A]`` (zero off the
    legal indices; ``shape`` is ``(B, A)``), float32 unless an evaluation's priors are wider (then
    that dtype, so no prior is rounded), and values float64 ``[B]``."""
    dtype = np.result_type(np.float32, *(np.asarray(ev.priors).dtype for ev in evaluations))
    priors = np.zeros(shape, dtype)
    values = np.zeros(shape[0], np.float64)
    for i, (ev, idx) in enumerate(zip(evaluations, legal, strict=True)):
        priors[i, idx] = ev.priors
        values[i] = ev.value
    return priors, values
