"""Evaluators: :class:`OnnxEvaluator` runs a network under the contract of :mod:`engine.network` with
onnxruntime; :class:`UniformEvaluator` needs no network.  Also :class:`NNCache`, an LRU of evaluations
keyed by ``GameState.eval_key()``, and :func:`raw_throughput` for ``tabula bench``.

Execution providers
-------------------
``backend="auto"`` tries TensorRT, then CUDA, then CPU, and keeps what really works.  onnxruntime-gpu
*lists* the GPU providers even on a machine without a GPU or CUDA libraries; asking for them then fails
and onnxruntime prints a multi-line "EP Error ... Falling back" banner on **stdout** (the protocol
channel) plus library-loading errors on stderr.  So session creation runs with file descriptor 1
pointed at a temporary file (and 2 as well), the session's real providers are read back with
``session.get_providers()``, and what the probe printed is logged (``logging``, logger
``engine.inference``) instead: at INFO level for ``auto``, as a WARNING when an explicitly requested
backend is unavailable.  onnxruntime's own run-time fallback (which also prints on stdout) is disabled.

While the descriptors are redirected, output of other threads goes to the temporary file too: create
evaluators before the protocol loop starts answering, or hold :data:`STDOUT_REDIRECT_LOCK` while writing
protocol output.  No redirection happens when only the CPU provider is asked for.

No torch, no onnx here: only numpy and onnxruntime.  onnxruntime is imported inside the functions that
make sessions (heavy: 0.4 s here, more where its GPU build finds drivers), so the protocol
handshake (``uciok``, ``usiok``) and ``UniformEvaluator`` never wait for it.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dataclasses
import hashlib
import io
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Hashable, Iterator, Sequence
from concurrent.futures import Executor
from pathlib import Path
from typing import Any, Literal

import numpy as np

from engine.evaluator import Evaluation, Evaluator, LegalRows, uniform_rows
from engine.games.base import GameInfo
from engine.host_pinning import HostPinning
from engine.network import (
    INPUT_NAME,
    KEY_PLANES_QUANTIZATION,
    KEY_POLICY_QUANTIZATION,
    KEY_UINT8_PLANES_OF,
    OWNERSHIP_NAME,
    POLICY_NAME,
    VALUE_NAME,
    WDL_NAME,
    NetworkFormatError,
    NetworkMetadata,
    check_compatible,
    read_metadata,
)
from engine.uint8_io import Uint8Quantization

log = logging.getLogger(__name__)

Backend = Literal["auto", "cpu", "cuda", "tensorrt"]
BACKENDS: tuple[str, ...] = ("auto", "cpu", "cuda", "tensorrt")
#: Which copy of a network runs: its int8 sibling on the CPU (``auto``), always (``int8``), never (``fp32``).
Precision = Literal["auto", "fp32", "int8"]
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "int8")

TENSORRT = "TensorrtExecutionProvider"
CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"

#: Held while file descriptors 1 and 2 are redirected during provider probing.  Protocol writers may
#: hold it too so that no reply is ever swallowed by a probe running on another thread.
STDOUT_REDIRECT_LOCK = threading.RLock()


@dataclasses.dataclass(frozen=True)
class InferenceSettings:
    """How to run a network.

    Attributes:
        backend: ``auto`` (TensorRT > CUDA > CPU, what works), or ``cpu``, ``cuda``, ``tensorrt``
            (an unavailable explicit backend falls back to CPU with a warning on stderr).
        threads: onnxruntime intra-op threads; 0 lets onnxruntime choose (one per physical core).
        batch_size: the largest batch given to the network at once; larger batches are split.  Also the
            size of the preallocated input buffer and TensorRT's largest optimisation profile.
        allow_spinning: let idle intra-op threads spin (faster on a dedicated machine, burns CPU that
            the search and other programs could use, so off by default).
        device_id: GPU ordinal for CUDA / TensorRT.
        trt_cache_dir: folder for TensorRT engine caches (``None``: no cache, rebuilt at every start).
        pad_batches: call the network only with the batch sizes of :func:`batch_buckets` (a smaller
            batch is padded up to the next one, its padding rows' outputs dropped), each run once when
            the network loads.  ``None``: on GPU providers, where a new batch size costs plans or
            shapes (why, and the sizes per provider: :func:`batch_buckets`); off on the CPU, where a
            row costs its time.
        pin_host_memory: register the input buffers with the CUDA runtime (page-locked memory) so
            that the GPU's copy engine reads each call's planes directly, not through the driver's
            staging copy (:mod:`engine.host_pinning`).  ``None``: on the CUDA and TensorRT providers.
    """

    backend: Backend = "auto"
    threads: int = 0
    batch_size: int = 64
    allow_spinning: bool = False
    device_id: int = 0
    trt_cache_dir: str | None = None
    pad_batches: bool | None = None
    pin_host_memory: bool | None = None

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        if self.threads < 0:
            raise ValueError("threads must be >= 0")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")


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


def batch_buckets(batch_size: int, provider: str = "") -> tuple[int, ...]:
    """The batch sizes a padded network session is called with.

    On the CUDA provider one size, ``batch_size``: onnxruntime's CUDA convolutions (cuDNN's frontend,
    since onnxruntime 1.20) build their execution plans again whenever a call's input shape differs
    from the previous call's, whatever shapes came before (onnxruntime issue #23006).  On an H100
    with a 10x128 chess network a warmed size's first call after another size took 80-300 ms and its
    second 1.5-13 ms, so a search that alternated sizes stalled at every change (``docs/gpu.md``).
    Elsewhere (TensorRT's optimisation profile, the CPU when padding is asked for) the powers of two
    below ``batch_size``, then ``batch_size`` (16: ``(1, 2, 4, 8, 16)``; 24: ``(1, 2, 4, 8, 16, 24)``).
    """
    if provider == CUDA:
        return (batch_size,)
    sizes = []
    size = 1
    while size < batch_size:
        sizes.append(size)
        size *= 2
    sizes.append(batch_size)
    return tuple(sizes)


# ---- masked softmax ---------------------------------------------------------------------------------


def masked_softmax(policy: np.ndarray, legal: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Softmax of each row of ``policy`` over that row's legal indices only.

    Args:
        policy: float ``[B, P]`` logits.
        legal: ``B`` int arrays ``[L_i]`` of policy indices (may be empty).

    Returns:
        ``B`` float32 arrays ``[L_i]``, each summing to 1 (empty for ``L_i == 0``), aligned with
        ``legal[i]``.  Numerically stable (the row maximum over the legal logits is subtracted).
    """
    b = len(legal)
    lengths = np.fromiter((len(x) for x in legal), np.int64, b)
    if int(lengths.sum()) == 0:
        return [np.zeros(0, np.float32) for _ in range(b)]
    cols = np.concatenate([np.asarray(x, np.int64) for x in legal])
    probs = _segment_softmax(policy, cols, lengths)
    return np.split(probs, np.cumsum(lengths)[:-1])


def masked_softmax_rows(
    policy: np.ndarray, legal: LegalRows, quantization: Uint8Quantization | None = None
) -> np.ndarray:
    """:func:`masked_softmax` on :class:`~engine.evaluator.LegalRows`: float32 ``[B, M]``, row ``i``'s
    first ``counts[i]`` entries the softmax over its legal logits in the order of ``legal.indices``, bit
    for bit :func:`masked_softmax`'s on ``legal.lists()``, the rest zero (an empty row stays zero).
    uint8 logits with their ``quantization`` (:mod:`engine.uint8_io`): the legal ones dequantized as
    the network's ``DequantizeLinear`` would have, the same priors.

    Only the legal logits are read: ``B * M`` entries at most, not the policy's ``B * P`` (shogi: ``P`` 11,259,
    ``M`` 600, a usual position 80 legal moves).  The gather and scatter are compiled
    (:mod:`engine.softmax_kernel`, imported here on first use: the dense batches are the compiled
    trees', so numba is loaded already), with the same exp and sums as numpy's, so the same bits."""
    index, count = legal.indices, legal.counts
    out = np.zeros(index.shape, np.float32)
    width = int(count.max(initial=0))
    if width == 0:
        return out
    compiled = index.dtype == np.int64 and count.dtype == np.int64
    if quantization is not None and not (compiled and policy.dtype == np.uint8):
        policy, quantization = quantization.dequantize(policy), None
    if compiled and (policy.dtype == np.float32 or quantization is not None):
        from engine.softmax_kernel import softmax_rows_into

        softmax_rows_into(np.ascontiguousarray(policy), index, count, out, quantization)
        return out
    valid = np.arange(width) < count[:, None]
    cols = index[:, :width][valid]
    out[:, :width][valid] = _segment_softmax(policy, cols, count)
    return out


def _segment_softmax(policy: np.ndarray, cols: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """float32 ``[sum(lengths)]``: for each row ``i`` of ``policy`` (float ``[B, P]``) the softmax of its
    logits at the next ``lengths[i]`` entries of ``cols`` (int64, rows in order, at least one entry
    in all), the row maximum subtracted; the reductions run in the order of ``cols``."""
    b = lengths.shape[0]
    rows = np.repeat(np.arange(b), lengths)
    logits = policy[rows, cols].astype(np.float32, copy=False)
    nonempty = lengths > 0
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[nonempty]
    row_max = np.zeros(b, np.float32)
    row_max[nonempty] = np.maximum.reduceat(logits, starts)
    e = np.exp(logits - row_max[rows])
    row_sum = np.ones(b, np.float32)
    row_sum[nonempty] = np.add.reduceat(e, starts)
    probs: np.ndarray = e / row_sum[rows]
    return probs


# ---- provider probing -------------------------------------------------------------------------------


def _flush_c_stdio() -> None:
    with contextlib.suppress(
        OSError, AttributeError
    ):  # not on this platform: nothing buffered that we know of
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def _captured_fds() -> Iterator[list[str]]:
    """Point file descriptors 1 and 2 (and Python's ``sys.stdout``, which may not be fd 1) at a
    temporary file; yields a list that receives the text written meanwhile (after the block)."""
    captured: list[str] = []
    python_text = io.StringIO()
    with STDOUT_REDIRECT_LOCK, tempfile.TemporaryFile(mode="w+b") as tmp:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        _flush_c_stdio()
        try:
            saved = [os.dup(1), os.dup(2)]
        except OSError:  # no descriptors 1 / 2 (a windowless process): only Python's stdout to guard
            with contextlib.redirect_stdout(python_text):
                yield captured
            captured.append(python_text.getvalue())
            return
        try:
            os.dup2(tmp.fileno(), 1)
            os.dup2(tmp.fileno(), 2)
            try:
                with contextlib.redirect_stdout(python_text):
                    yield captured
            finally:
                for stream in (sys.stdout, sys.stderr):
                    if stream is not None:
                        stream.flush()
                _flush_c_stdio()
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            tmp.seek(0)
            captured.append(python_text.getvalue() + tmp.read().decode("utf-8", "replace"))


def _requested_providers(settings: InferenceSettings, available: Sequence[str]) -> list[str]:
    """The provider names to ask for, best first (CPU always last)."""
    wanted = {
        "auto": [TENSORRT, CUDA],
        "tensorrt": [TENSORRT, CUDA],
        "cuda": [CUDA],
        "cpu": [],
    }[settings.backend]
    return [p for p in wanted if p in available] + [CPU]


def _provider_options(
    name: str, settings: InferenceSettings, input_shape: tuple[int, int, int]
) -> dict[str, str]:
    if name == CUDA:
        return {"device_id": str(settings.device_id)}
    if name == TENSORRT:
        dims = "x".join(str(d) for d in input_shape)
        opt_batch = max(1, min(settings.batch_size, 16))
        options = {
            "device_id": str(settings.device_id),
            "trt_fp16_enable": "True",
            "trt_profile_min_shapes": f"{INPUT_NAME}:1x{dims}",
            "trt_profile_opt_shapes": f"{INPUT_NAME}:{opt_batch}x{dims}",
            "trt_profile_max_shapes": f"{INPUT_NAME}:{settings.batch_size}x{dims}",
        }
        if settings.trt_cache_dir:
            options["trt_engine_cache_enable"] = "True"
            options["trt_engine_cache_path"] = settings.trt_cache_dir
        return options
    return {}


def _session_options(settings: InferenceSettings) -> Any:  # onnxruntime.SessionOptions (untyped)
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = settings.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if settings.allow_spinning else "0")
    so.add_session_config_entry("session.inter_op.allow_spinning", "0")
    return so


def create_session(
    path: str | os.PathLike[str], settings: InferenceSettings, input_shape: tuple[int, int, int]
) -> tuple[Any, str, str]:
    """An ``onnxruntime.InferenceSession`` on the best provider that really works.

    Returns:
        ``(session, provider, probe_log)``: the session, the provider it actually runs on (read back
        from ``session.get_providers()``), and what onnxruntime printed while trying (``""`` if no GPU
        provider was tried).  Nothing reaches stdout.
    """
    import onnxruntime as ort

    requested = _requested_providers(settings, ort.get_available_providers())
    providers = [(p, _provider_options(p, settings, input_shape)) for p in requested]
    so = _session_options(settings)
    probe_log = ""
    if requested == [CPU]:
        session = ort.InferenceSession(os.fspath(path), sess_options=so, providers=providers)
    else:
        with _captured_fds() as captured:
            try:
                session = ort.InferenceSession(os.fspath(path), sess_options=so, providers=providers)
            except Exception:
                session = ort.InferenceSession(os.fspath(path), sess_options=so, providers=[CPU])
        probe_log = captured[0].strip()
    # onnxruntime's run-time fallback prints its banner on stdout: errors must raise instead.
    session.disable_fallback()
    actual = session.get_providers()[0]
    if actual != requested[0]:
        detail = f"asked for {', '.join(requested)}; running on {actual}"
        if settings.backend in ("auto", "cpu"):
            log.info("%s (GPU providers listed by onnxruntime do not work here)\n%s", detail, probe_log)
        else:
            log.warning("backend %r unavailable: %s\n%s", settings.backend, detail, probe_log)
    return session, actual, probe_log


# ---- evaluators -------------------------------------------------------------------------------------


class OnnxEvaluator(Evaluator):
    """Runs one network file with onnxruntime.

    Attributes:
        path: the network file.
        info: the game it evaluates for.
        metadata: the file's :class:`~engine.network.NetworkMetadata` (checked against ``info``).
        settings: the :class:`InferenceSettings` used.
        provider: the execution provider really in use (``CPUExecutionProvider``, ...).
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
        self.has_wdl = WDL_NAME in self._output_names
        self._outputs = [POLICY_NAME, VALUE_NAME] + ([WDL_NAME] if self.has_wdl else [])
        self._buffer = np.zeros((self.settings.batch_size, *game_info.input_shape), np.float32)
        self._lock = threading.Lock()
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
        self._run_options: Any = None  # onnxruntime.RunOptions of the call in flight (untyped library)
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

        session = ort.InferenceSession(model, sess_options=_session_options(self.settings), providers=[CPU])
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
        with self._lock:
            options = self._run_options_class()
            self._run_options = options
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

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """See :meth:`engine.evaluator.Evaluator.evaluate`: priors are the softmax of the policy logits
        over each position's legal indices; values are floats in [-1, 1]."""
        if len(legal) != planes.shape[0]:
            raise ValueError(f"{planes.shape[0]} positions but {len(legal)} legal-index arrays")
        if planes.shape[0] == 0:
            return []
        return self.finish(self.run(planes), legal)

    def infer(self, planes: np.ndarray, legal: Sequence[np.ndarray] = ()) -> RawOutput:
        """The network call alone (:meth:`run`; ``legal`` is not needed); :meth:`finish` makes the
        evaluations."""
        return self.run(planes)

    def finish(self, inferred: RawOutput, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """Masked softmax of the policy logits over each position's ``legal`` indices, and the values."""
        raw = inferred
        if len(legal) != raw.value.shape[0]:
            raise ValueError(f"{raw.value.shape[0]} positions but {len(legal)} legal-index arrays")
        priors = masked_softmax(raw.float_policy, legal)
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
        return masked_softmax_rows(inferred.policy, legal, inferred.policy_quantization), inferred.value

    def cancel(self) -> None:
        """End the network call running on another thread early (onnxruntime's ``RunOptions.terminate``);
        that call raises.  Used by the search to drop a batch it no longer needs (``stop``, deadline)."""
        options = self._run_options
        if options is not None:
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


# ---- cache ------------------------------------------------------------------------------------------


class NNCache:
    """A bounded LRU map ``GameState.eval_key()`` -> :class:`Evaluation`.  Thread-safe.

    Attributes:
        capacity: maximum number of entries (0 disables the cache).
        hits, misses: counters of :meth:`get`.
    """

    def __init__(self, capacity: int):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._data: collections.OrderedDict[Hashable, Evaluation] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Evaluation | None:
        """The cached evaluation (now the most recently used) or ``None``."""
        with self._lock:
            ev = self._data.get(key)
            if ev is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return ev

    def put(self, key: Hashable, evaluation: Evaluation) -> None:
        """Store (or refresh) an entry, evicting the least recently used beyond ``capacity``."""
        with self._lock:
            if self.capacity == 0:
                return
            self._data[key] = evaluation
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def resize(self, capacity: int) -> None:
        """Change the capacity, evicting the least recently used entries if it shrinks."""
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        with self._lock:
            self.capacity = capacity
            while len(self._data) > capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``, 0 before any lookup."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


# ---- throughput -------------------------------------------------------------------------------------


def raw_throughput(
    evaluator: Evaluator,
    batch_size: int,
    seconds: float = 2.0,
    *,
    game_info: GameInfo | None = None,
    legal_per_position: int = 32,
    seed: int = 0,
) -> float:
    """Positions per second through ``evaluator.evaluate`` on a random batch (network + masked softmax;
    uint8 planes for an ``OnnxEvaluator`` with a uint8-planes model, as the compiled tree hands it).

    Args:
        evaluator: an evaluator with an ``info`` attribute, or pass ``game_info``.
        batch_size: positions per call.
        seconds: measuring time (after one untimed warm-up call).
        game_info: the game (default ``evaluator.info``).
        legal_per_position: how many random legal indices each position gets.
        seed: for the random planes (binary 0/1 like real encodings) and indices.
    """
    info = game_info if game_info is not None else getattr(evaluator, "info", None)
    if not isinstance(info, GameInfo):
        raise TypeError("raw_throughput needs game_info for an evaluator without an info attribute")
    rng = np.random.default_rng(seed)
    planes: np.ndarray = (rng.random((batch_size, *info.input_shape)) < 0.1).astype(np.float32)
    quantization = getattr(evaluator, "planes_quantization", None)
    if getattr(evaluator, "runs_uint8_planes", False) and quantization is not None:
        planes = quantization.quantize(planes).transpose(0, 2, 3, 1).copy()  # what its searches hand it
    k = min(legal_per_position, info.policy_size)
    legal = [
        np.sort(rng.choice(info.policy_size, k, replace=False)).astype(np.int64) for _ in range(batch_size)
    ]
    evaluator.evaluate(planes, legal)
    calls = 0
    start = time.perf_counter()
    while True:
        evaluator.evaluate(planes, legal)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * batch_size / elapsed
