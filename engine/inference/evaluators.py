"""Evaluators: :class:`OnnxEvaluator` runs a network under the contract of :mod:`engine.network` with
onnxruntime (its session from :func:`~engine.inference.onnx_session.create_session`);
:class:`UniformEvaluator` needs no network.

No torch, no onnx here: only numpy and onnxruntime.  onnxruntime is imported inside the functions that
make sessions (heavy: 0.4 s here, more where its GPU build finds drivers), so the protocol
handshake (``uciok``, ``usiok``) and ``UniformEvaluator`` never wait for it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import numpy as np

from engine.evaluator import Evaluation, Evaluator, LegalRows, uniform_rows
from engine.games.base import GameInfo
from engine.host_pinning import HostPinning
from engine.inference.onnx_session import create_session, session_options
from engine.inference.settings import CPU, CUDA, TENSORRT, InferenceSettings, batch_buckets
from engine.inference.softmax import masked_softmax, masked_softmax_rows
from engine.network import (
    INPUT_NAME,
    KEY_PLANES_QUANTIZATION,
    KEY_POLICY_QUANTIZATION,
    KEY_UINT8_PLANES_OF,
    OWNERSHIP_NAME,
    POLICY_NAME,
    SCORE_NAME,
    VALUE_NAME,
    WDL_NAME,
    NetworkFormatError,
    NetworkMetadata,
    check_compatible,
    read_metadata,
)
from engine.uint8_io import Uint8Quantization


@dataclasses.dataclass(frozen=True)
class RawOutput:
    """Network outputs of a batch, unmasked.

    Attributes:
        policy: float32 ``[B, P]`` logits, or uint8 ones (``policy_quantization``).
        value: float32 ``[B]`` values from the side to move.
        wdl: float32 ``[B, 3]`` win/draw/loss probabilities, or ``None``.
        policy_quantization: what uint8 ``policy`` values stand for (a uint8-input model's call,
            :meth:`OnnxEvaluator.accept_uint8_planes`); ``None``: float32 logits.
    """

    policy: np.ndarray
    value: np.ndarray
    wdl: np.ndarray | None
    policy_quantization: Uint8Quantization | None = None

    @property
    def float_policy(self) -> np.ndarray:
        """float32 ``[B, P]`` logits, dequantized when they came as uint8."""
        q = self.policy_quantization
        return self.policy if q is None else q.dequantize(self.policy)


class OnnxEvaluator(Evaluator):
    """Runs one network file with onnxruntime.

    Attributes:
        path: the network file.
        info: the game it evaluates for.
        metadata: the file's :class:`~engine.network.NetworkMetadata` (checked against ``info``).
        settings: the :class:`InferenceSettings` used.
        provider: the execution provider really in use (``CPUExecutionProvider``, ...).
        shares_cores: whether it runs on the CPU (``Evaluator.shares_cores``).
        probe_log: what onnxruntime printed while providers were tried ("" if none was).
        has_wdl: whether the network has a ``wdl`` output.
        description: one line for logs and ``info string``.

    Raises (at construction):
        FileNotFoundError, NetworkFormatError, NetworkMismatchError.
    """

    def __init__(
        self, path: str | os.PathLike[str], game_info: GameInfo, settings: InferenceSettings | None = None
    ):
        self.path = Path(path)
        self.info = game_info
        self.settings = settings or InferenceSettings()
        if not self.path.is_file():
            raise FileNotFoundError(f"network file not found: {self.path}")
        self.metadata: NetworkMetadata = read_metadata(self.path)
        check_compatible(self.metadata, game_info, source=f"the network {self.path.name}")
        self._session, self.provider, self.probe_log = create_session(
            self.path, self.settings, game_info.input_shape
        )
        self._check_signature()
        self.shares_cores = self.provider == CPU
        self.has_wdl = WDL_NAME in self._output_names
        self._outputs = [POLICY_NAME, VALUE_NAME] + ([WDL_NAME] if self.has_wdl else [])
        self._buffer = np.zeros((self.settings.batch_size, *game_info.input_shape), np.float32)
        self._lock = threading.Lock()
        self._lock_runs = threading.Lock()  # guards _active_runs
        pad = self.settings.pad_batches
        if pad is None:
            pad = self.provider != CPU
        #: The batch sizes the session is called with (padded up to); empty: every size as it comes.
        self.buckets: tuple[int, ...] = batch_buckets(self.settings.batch_size, self.provider) if pad else ()
        pin = self.settings.pin_host_memory
        if pin is None:
            pin = self.provider in (CUDA, TENSORRT)
        #: Registers the buffers each call reads (``None``: not asked for, or no CUDA runtime here).
        self.pinning: HostPinning | None = HostPinning.load() if pin else None
        self._warm_threads: set[int] = set()  # threads that have run every bucket (warm_up_here)
        #: Seconds spent at load running each bucket once (cuDNN's algorithm search, TensorRT's shapes).
        self.warmup_s = self._warm_up_buckets()
        import onnxruntime as ort

        self._run_options_class = ort.RunOptions
        #: onnxruntime.RunOptions of the calls in flight (untyped library), for :meth:`cancel`.
        self._active_runs: set[Any] = set()
        #: What uint8 planes given to :meth:`run` stand for (:meth:`accept_uint8_planes`); ``None``: none
        #: are taken.
        self.planes_quantization: Uint8Quantization | None = None
        self._uint8_session: Any = None  # the network without its input QuantizeLinear, or None
        self._uint8_policy: Uint8Quantization | None = None  # its policy's, when that comes as uint8
        short = self.provider.removesuffix("ExecutionProvider")
        preset = f" {self.metadata.preset}" if self.metadata.preset else ""
        self.description = (
            f"{self.path.name} ({self.metadata.label}{preset}, step {self.metadata.step}) on {short}"
            + (", pinned inputs" if self.pinning is not None else "")
        )

    def _warm_up_buckets(self) -> float:
        """Run every bucket size once on this thread, so that no search pays for a batch size's first
        call."""
        start = time.perf_counter()
        for size in self.buckets:
            self._pin(self._buffer)
            self._session.run(self._outputs, {INPUT_NAME: self._buffer[:size]})
        self._warm_threads.add(threading.get_ident())
        return time.perf_counter() - start

    def warm_up_here(self) -> float:
        """Run every bucket size once on the calling thread unless it has done so: call it on the thread
        that will make the search's network calls (the engine's and self-play's helper), before the
        first search.  Seconds spent (0 on the CPU, where calls are not padded).

        Why: the CUDA provider makes a thread's own cuDNN and cuBLAS handles at that thread's first
        call, and the searches call from a helper thread, not the one that loaded the network.  It
        was first suspected of the per-search stall on GPUs; an H100 showed a new thread's first
        calls costing what the loading thread's did, and the stall was the change of batch size
        (:func:`batch_buckets`, ``docs/gpu.md``).  Kept: one padded call per thread, once."""
        if not self.buckets or threading.get_ident() in self._warm_threads:
            return 0.0
        with self._lock:
            return self._warm_up_buckets()

    def accept_uint8_planes(
        self,
        quantization: Uint8Quantization,
        model: bytes | None = None,
        policy_quantization: Uint8Quantization | None = None,
    ) -> bool:
        """Take uint8 planes quantized with ``quantization`` in :meth:`run` from now on, besides float32
        ones (``engine/uint8_io.py``).

        Args:
            quantization: what the uint8 planes stand for.
            model: this network with its input ``QuantizeLinear`` cut off, the graph's input ``planes``
                uint8 ``[B, H, W, C]`` (``trainer.network.uint8_planes.uint8_input_model``), run on the CPU with this evaluator's
                session options; ``None``: the planes are dequantized here and run through the float
                input (correct, and no faster).
            policy_quantization: that model's ``policy`` output is uint8 logits quantized so (its final
                ``DequantizeLinear`` cut off too); the calls' :class:`RawOutput` say so.

        Returns:
            whether a uint8-input session runs them (``False``: dequantized, also when this evaluator
            runs on a GPU provider, whose calls keep the float input).

        Raises:
            NetworkFormatError (or onnxruntime's errors): ``model`` is not a uint8-planes model; nothing
            is changed then.
        """
        session = None
        if model is not None and self.provider == CPU:
            session = self._uint8_planes_session(model)
        self._use_uint8_planes(quantization, session, policy_quantization)
        return session is not None

    @property
    def runs_uint8_planes(self) -> bool:
        """uint8 planes given to :meth:`run` go through a uint8-input session (not dequantized first)."""
        return self._uint8_session is not None and not self.buckets

    def accept_uint8_planes_file(self, path: str | os.PathLike[str]) -> Uint8Quantization | None:
        """:meth:`accept_uint8_planes` with the uint8-planes model at ``path``
        (:func:`~engine.network.uint8_planes_sibling` of this int8 copy, written by ``tabula-train
        quantize`` or ``uint8-planes``), the quantizations read from its metadata; returns the planes'
        quantization, or ``None`` when nothing changed: not on the CPU, or the model was made from
        another file than this evaluator's (``tabula.uint8_planes_of``).

        Raises:
            OSError, NetworkFormatError (or onnxruntime's errors): the file is missing, not a
                uint8-planes model, or its metadata are incomplete; nothing is changed then.
        """
        if self.provider != CPU:
            return None
        session = self._uint8_planes_session(os.fspath(path))
        meta = session.get_modelmeta().custom_metadata_map
        if meta.get(KEY_UINT8_PLANES_OF) != hashlib.sha256(self.path.read_bytes()).hexdigest():
            return None
        try:
            planes = Uint8Quantization.from_text(meta[KEY_PLANES_QUANTIZATION])
            policy_text = meta.get(KEY_POLICY_QUANTIZATION)
            policy = Uint8Quantization.from_text(policy_text) if policy_text is not None else None
        except (KeyError, ValueError) as exc:
            raise NetworkFormatError(
                f"{Path(path).name}: no valid quantization in its metadata ({exc})"
            ) from exc
        self._use_uint8_planes(planes, session, policy)
        return planes

    def _use_uint8_planes(
        self, planes: Uint8Quantization, session: Any, policy: Uint8Quantization | None
    ) -> None:
        """Take uint8 planes quantized with ``planes`` from now on, run by ``session`` (``None``:
        dequantized), whose policy comes out quantized with ``policy`` (``None``: as floats)."""
        self.planes_quantization = planes
        self._uint8_session = session
        self._uint8_policy = policy if session is not None else None

    def _uint8_planes_session(self, model: bytes | str) -> Any:
        """An onnxruntime CPU session of a uint8-planes model (bytes or a path), with this evaluator's
        session options.

        Raises:
            NetworkFormatError: its one input is not uint8 ``planes``.
        """
        import onnxruntime as ort

        session = ort.InferenceSession(model, sess_options=session_options(self.settings), providers=[CPU])
        inputs = session.get_inputs()
        if [i.name for i in inputs] != [INPUT_NAME] or inputs[0].type != "tensor(uint8)":
            raise NetworkFormatError(f"{self.path.name}: the uint8-input model's inputs are not uint8 planes")
        return session

    def _check_signature(self) -> None:
        inputs = self._session.get_inputs()
        self._output_names = {o.name for o in self._session.get_outputs()}
        if [i.name for i in inputs] != [INPUT_NAME]:
            raise NetworkFormatError(
                f"{self.path.name}: inputs {[i.name for i in inputs]}, the contract wants one input "
                f"{INPUT_NAME!r}"
            )
        shape = list(inputs[0].shape)
        if len(shape) != 4 or tuple(shape[1:]) != self.info.input_shape:
            raise NetworkFormatError(
                f"{self.path.name}: input shape {shape}, expected [batch, {', '.join(map(str, self.info.input_shape))}]"
            )
        missing = {POLICY_NAME, VALUE_NAME} - self._output_names
        if missing:
            raise NetworkFormatError(f"{self.path.name}: missing outputs {sorted(missing)}")

    def run(self, planes: np.ndarray) -> RawOutput:
        """Raw network outputs, splitting batches larger than ``settings.batch_size``.

        Args:
            planes: float32 ``[B, C, H, W]``, or uint8 ones ``[B, H, W, C]`` quantized as
                :meth:`accept_uint8_planes` was told (run by the uint8-input session when there is
                one, else dequantized).

        Returns:
            :class:`RawOutput` with ``policy [B, P]``, ``value [B]``, ``wdl [B, 3]`` or ``None``.

        Raises:
            ValueError: wrong shape, or uint8 planes without a quantization.
        """
        session = self._session
        policy_quantization = None
        if planes.dtype != np.uint8:
            if planes.ndim != 4 or planes.shape[1:] != self.info.input_shape:
                raise ValueError(f"planes shape {planes.shape}, expected [B, {self.info.input_shape}]")
        else:
            c, h, w = self.info.input_shape
            if planes.ndim != 4 or planes.shape[1:] != (h, w, c):
                raise ValueError(f"uint8 planes shape {planes.shape}, expected [B, {h}, {w}, {c}]")
            if self.planes_quantization is None:
                raise ValueError("uint8 planes, but no quantization given (accept_uint8_planes)")
            if self._uint8_session is None or self.buckets:
                planes = self.planes_quantization.dequantize_channels_last(planes)
            else:
                session = self._uint8_session
                policy_quantization = self._uint8_policy
                planes = np.ascontiguousarray(planes)
        n = planes.shape[0]
        bs = self.settings.batch_size
        direct = planes.dtype == np.uint8 or (planes.dtype == np.float32 and planes.flags.c_contiguous)
        policies, values, wdls = [], [], []
        options = self._run_options_class()
        if direct and 0 < n <= bs and not self.buckets and self.pinning is None:
            # the search's call: one batch as it comes, nothing to split, pad or pin, and no shared
            # buffer, so calls from several threads run side by side (the search's calls in flight)
            with self._running(options):
                out = session.run(self._outputs, {INPUT_NAME: planes}, options)
            wdl = out[2] if self.has_wdl else None
            return RawOutput(out[0], out[1].reshape(n), wdl, policy_quantization)
        with self._lock, self._running(options):
            for start in range(0, n, bs):
                k = min(bs, n - start)
                size = next((b for b in self.buckets if b >= k), k)
                if direct and size == k:
                    chunk = planes[start : start + k]
                else:
                    # Rows k..size of the buffer hold an earlier batch: padding whose outputs are dropped.
                    np.copyto(self._buffer[:k], planes[start : start + k], casting="unsafe")
                    chunk = self._buffer[:size]
                self._pin(chunk)
                out = session.run(self._outputs, {INPUT_NAME: chunk}, options)
                policies.append(out[0][:k])
                values.append(out[1].reshape(size)[:k])
                if self.has_wdl:
                    wdls.append(out[2][:k])
        if n == 0:
            p = self.info.policy_size
            return RawOutput(
                np.zeros((0, p), np.float32),
                np.zeros(0, np.float32),
                np.zeros((0, 3), np.float32) if self.has_wdl else None,
            )
        cat = (lambda xs: xs[0]) if len(policies) == 1 else np.concatenate
        return RawOutput(cat(policies), cat(values), cat(wdls) if self.has_wdl else None, policy_quantization)

    @contextlib.contextmanager
    def _running(self, options: Any) -> Iterator[None]:
        """Keep ``options`` (a call's ``RunOptions``) among the calls :meth:`cancel` ends while it runs."""
        with self._lock_runs:
            self._active_runs.add(options)
        try:
            yield
        finally:
            with self._lock_runs:
                self._active_runs.discard(options)

    def _pin(self, planes: np.ndarray) -> None:
        """Pin the buffer ``planes`` lies in once it shows itself long-lived (:class:`HostPinning`)."""
        if self.pinning is not None:
            self.pinning.pin(planes)

    def ownership(self, planes: np.ndarray) -> np.ndarray | None:
        """See :meth:`engine.evaluator.Evaluator.ownership`: the ``ownership`` output of networks that
        have one (asked for by name only here, so searches never pay for it)."""
        if OWNERSHIP_NAME not in self._output_names:
            return None
        if planes.ndim != 4 or planes.shape[1:] != self.info.input_shape:
            raise ValueError(f"planes shape {planes.shape}, expected [B, {self.info.input_shape}]")
        with self._lock:
            (out,) = self._session.run(
                [OWNERSHIP_NAME], {INPUT_NAME: np.ascontiguousarray(planes, np.float32)}
            )
        return np.asarray(out, np.float32)

    def score(self, planes: np.ndarray) -> np.ndarray | None:
        """See :meth:`engine.evaluator.Evaluator.score`: the ``score`` output of networks that have one
        (asked for by name only here, as :meth:`ownership`)."""
        if SCORE_NAME not in self._output_names:
            return None
        if planes.ndim != 4 or planes.shape[1:] != self.info.input_shape:
            raise ValueError(f"planes shape {planes.shape}, expected [B, {self.info.input_shape}]")
        (out,) = self._session.run([SCORE_NAME], {INPUT_NAME: np.ascontiguousarray(planes, np.float32)})
        return np.asarray(out, np.float32).reshape(planes.shape[0])

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """See :meth:`engine.evaluator.Evaluator.evaluate`: priors are the softmax of the policy logits
        over each position's legal indices (at the settings' ``policy_temperature``); values are floats
        in [-1, 1]."""
        if len(legal) != planes.shape[0]:
            raise ValueError(f"{planes.shape[0]} positions but {len(legal)} legal-index arrays")
        if planes.shape[0] == 0:
            return []
        raw = self.run(planes)
        priors = masked_softmax(raw.float_policy, legal, self.settings.policy_temperature)
        values = raw.value.tolist()
        if raw.wdl is None:
            return [Evaluation(p, v) for p, v in zip(priors, values, strict=True)]
        return [
            Evaluation(p, v, raw.wdl[i].copy()) for i, (p, v) in enumerate(zip(priors, values, strict=True))
        ]

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """See :meth:`engine.evaluator.Evaluator.evaluate_dense`: the masked softmax of the policy
        logits over each row of ``legal`` (:func:`masked_softmax_rows`) and the values, float32."""
        return self.finish_dense(self.run(planes), legal)

    def infer_dense(self, planes: np.ndarray, legal: LegalRows) -> RawOutput:
        """The network call alone (:meth:`run`); :meth:`finish_dense` makes the priors."""
        return self.run(planes)

    def finish_dense(self, inferred: RawOutput, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """``(priors float32 [B, M], values float32 [B])`` from the raw outputs (vectorised numpy)."""
        if len(legal) != inferred.policy.shape[0]:
            raise ValueError(f"{len(legal)} legal rows for {inferred.policy.shape[0]} positions")
        priors = masked_softmax_rows(
            inferred.policy, legal, inferred.policy_quantization, self.settings.policy_temperature
        )
        return priors, inferred.value

    def cancel(self) -> None:
        """End the network calls running on other threads early (onnxruntime's ``RunOptions.terminate``);
        those calls raise.  Used by the search to drop batches it no longer needs (``stop``, deadline)."""
        with self._lock_runs:
            for options in self._active_runs:
                options.terminate = True

    def close(self) -> None:
        self._session = None


def warm_up_network_thread(evaluator: Evaluator, executor: Executor) -> None:
    """Run the network's padded batch sizes once on ``executor``'s thread, the one that makes the
    searches' network calls (:meth:`OnnxEvaluator.warm_up_here`; nothing on the CPU)."""
    warm = getattr(evaluator, "warm_up_here", None)
    if warm is not None:
        executor.submit(warm).result()


class UniformEvaluator(Evaluator):
    """Uniform priors over the legal moves and value 0: for tests, for measuring the search alone, and
    the (loud) fallback when no network is available."""

    overlaps = False  # nothing to overlap: the search evaluates on its own thread

    def __init__(self, game_info: GameInfo):
        self.info = game_info
        self.has_wdl = False
        self.provider = "none"
        self.description = "uniform priors, value 0 (no network)"

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """``B`` evaluations with priors ``1/L_i`` and value 0."""
        return [Evaluation(np.full(len(x), 1.0 / len(x) if len(x) else 0.0, np.float32), 0.0) for x in legal]

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """Priors ``1/L_i`` on each row's legal entries (float32 ``[B, M]``, as :meth:`evaluate`'s),
        values 0 (float32 ``[B]``)."""
        return uniform_rows(legal), np.zeros(len(legal), np.float32)
