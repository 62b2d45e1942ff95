"""The evaluator interface the search calls: a batch of encoded positions in, priors over each
position's legal moves and values out.  Implementations live in ``engine/inference/``
(``OnnxEvaluator``, ``UniformEvaluator``); the search never knows which one it has."""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt


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


@dataclasses.dataclass(frozen=True)
class LegalRows:
    """The legal policy indices of ``B`` positions as padded rows, the array form of ``evaluate``'s
    ``legal`` lists that the compiled trees write without a Python object per position.

    Attributes:
        indices: int64 ``[B, M]`` (``M`` at least every count): row ``i``'s first ``counts[i]``
            entries are position ``i``'s legal policy indices, in the order of its legal moves; the
            rest are unused.
        counts: int64 ``[B]``, each position's number of legal moves (0 for a terminal position).
    """

    indices: np.ndarray
    counts: np.ndarray

    def __len__(self) -> int:
        """The number of positions ``B``."""
        return int(self.counts.shape[0])

    @classmethod
    def from_lists(cls, legal: Sequence[np.ndarray], width: int | None = None) -> LegalRows:
        """The rows of ``B`` legal index arrays (:meth:`Evaluator.evaluate`'s ``legal``), ``width``
        entries a row (default: the longest array)."""
        counts = np.array([len(x) for x in legal], np.int64)
        indices = np.zeros((len(legal), int(counts.max(initial=0)) if width is None else width), np.int64)
        for row, x in zip(indices, legal, strict=True):
            row[: len(x)] = x
        return cls(indices, counts)

    def lists(self) -> list[np.ndarray]:
        """The ``B`` int64 arrays ``[L_i]`` of :meth:`Evaluator.evaluate` (copies)."""
        return [self.indices[i, :n].copy() for i, n in enumerate(self.counts.tolist())]


class Evaluator(abc.ABC):
    """Evaluates batches of positions.  Thread-safe for one caller at a time.

    The searches use the array forms (:meth:`evaluate_dense`, split into :meth:`infer_dense` and
    :meth:`finish_dense` for a pipelined call); :meth:`evaluate`, one :class:`Evaluation` per position,
    is what a simple evaluator implements (the array forms default to it) and what a single position
    asks (a move without a search, the tests' reference tree)."""

    #: Human-readable description for logs and ``info string`` (network path, provider).
    description: str = ""

    #: Whether a network call is worth running on a helper thread while the search walks its tree
    #: (a real network releases the GIL); ``False`` for evaluators that do no work worth overlapping
    #: (``UniformEvaluator``): the search then evaluates on its own thread, without a thread hand-off.
    overlaps: bool = True

    #: Whether its calls run on the cores the search runs on (a network on the CPU): a search thread
    #: that would wait for a call makes one still queued itself instead, so it has one helper thread
    #: fewer (``Searcher._take_over_queued``, ``InferencePlan.helpers``).
    shares_cores: bool = False

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

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`evaluate` with arrays, no Python object per position.

        Args:
            planes: float32 ``[B, C, H, W]`` encoded positions.
            legal: each position's legal policy indices as padded rows (:class:`LegalRows`).

        Returns:
            ``(priors, values)``: priors ``[B, M]`` aligned with ``legal.indices`` (entry ``[i, j]`` is
            :meth:`evaluate`'s ``priors[j]`` of position ``i``, bit for bit; zero beyond ``counts[i]``),
            float32 (the default: wider when :meth:`evaluate`'s priors are), and float ``[B]`` values
            from the side to move (float32 from a network; the default keeps :meth:`evaluate`'s
            values as float64).  The default goes through :meth:`evaluate`; evaluators override it
            with vectorised code.
        """
        lists = legal.lists()
        return rows_of_evaluations(self.evaluate(planes, lists), lists, legal.indices.shape)

    def infer_dense(self, planes: np.ndarray, legal: LegalRows) -> Any:
        """The first half of :meth:`evaluate_dense`, the network call: what a pipelined search runs on a
        helper thread while its own thread walks the tree.  ``finish_dense(infer_dense(p, legal),
        legal)`` equals ``evaluate_dense(p, legal)``.  The default does all the work here and
        :meth:`finish_dense` none; ``OnnxEvaluator`` keeps only the network call here (onnxruntime
        releases the GIL) and the softmax in ``finish_dense`` (numpy on the caller's thread)."""
        return self.evaluate_dense(planes, legal)

    def finish_dense(self, inferred: Any, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """The caller's half of :meth:`evaluate_dense`: ``(priors [B, M], values [B])`` from what
        :meth:`infer_dense` returned (default: ``inferred`` itself)."""
        return cast(tuple[np.ndarray, np.ndarray], inferred)

    def ownership(self, planes: np.ndarray) -> np.ndarray | None:
        """Go: the network's ownership output, float32 ``[B, N*N]`` in [-1, 1], each point's final owner
        from each position's side to move; ``None`` when the network has no ownership head (the
        default)."""
        return None

    def score(self, planes: np.ndarray) -> np.ndarray | None:
        """Go: the network's score output, float32 ``[B]``, the expected final area-score margin in
        points for each position's side to move, komi included; ``None`` when the network has no score
        head (the default)."""
        return None

    def cancel(self) -> None:  # noqa: B027 - optional hook, a no-op unless the implementation can cancel
        """End a call running on another thread early, if the implementation can (default: no)."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op for evaluators that hold nothing
        """Release sessions and threads (default: nothing)."""


_NARROW = 512  # legal index rows this wide or narrower are filled whole by uniform_rows


def uniform_rows(legal: LegalRows, dtype: npt.DTypeLike = np.float32) -> np.ndarray:
    """Priors ``1 / L_i`` on each row's legal entries of ``legal`` (``[B, M]`` of ``dtype``, zero beyond
    the counts): what ``UniformEvaluator`` gives, for warming up and testing the compiled trees."""
    counts = legal.counts
    share = (1.0 / np.maximum(counts, 1)).astype(dtype)
    width = legal.indices.shape[1]
    # a row's first counts[i] entries are legal: that mask times the share, over all the columns when
    # they are few (chess, Go), else over those any row uses (shogi: about 80 of 600); the search
    # takes this thousands of times a second, so as few numpy calls as can be
    if width <= _NARROW:
        every: np.ndarray = (np.arange(width) < counts[:, None]) * share[:, None]
        return every
    used = int(counts.max(initial=0))
    legal_share = (np.arange(used) < counts[:, None]) * share[:, None]
    priors = np.zeros((len(counts), width), dtype)
    priors[:, :used] = legal_share
    return priors


def rows_of_evaluations(
    evaluations: Sequence[Evaluation], legal: Sequence[np.ndarray], shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """``B`` evaluations as rows aligned with their ``legal`` indices (:class:`LegalRows`): priors
    ``[B, M]`` (``shape`` is ``(B, M)``; row ``i``'s first ``len(legal[i])`` entries are its priors, the
    rest zero), float32 unless an evaluation's priors are wider (then that dtype, so no prior is
    rounded), and values float64 ``[B]``."""
    dtype = np.result_type(np.float32, *(np.asarray(ev.priors).dtype for ev in evaluations))
    priors = np.zeros(shape, dtype)
    values = np.zeros(shape[0], np.float64)
    for i, (ev, idx) in enumerate(zip(evaluations, legal, strict=True)):
        priors[i, : len(idx)] = ev.priors
        values[i] = ev.value
    return priors, values
