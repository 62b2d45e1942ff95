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

    def ownership(self, planes: np.ndarray) -> np.ndarray | None:
        """Go: the network's ownership output, float32 ``[B, N*N]`` in [-1, 1], each point's final owner
        from each position's side to move; ``None`` when the network has no ownership head (the
        default)."""
        return None

    def cancel(self) -> None:  # noqa: B027 - optional hook, a no-op unless the implementation can cancel
        """End a call running on another thread early, if the implementation can (default: no)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op for evaluators that hold nothing
        """Release sessions and threads (default: nothing)."""
