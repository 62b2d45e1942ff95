"""onnxruntime sessions on the best execution provider that really works (:func:`create_session`),
made without a byte on stdout.

Execution providers
-------------------
``backend="auto"`` tries TensorRT, then CUDA, then CPU, and keeps what really works.  onnxruntime-gpu
*lists* the GPU providers even on a machine without a GPU or CUDA libraries; asking for them then fails
and onnxruntime prints a multi-line "EP Error ... Falling back" banner on **stdout** (the protocol
channel) plus library-loading errors on stderr.  So session creation runs with file descriptor 1
pointed at a temporary file (and 2 as well), the session's real providers are read back with
``session.get_providers()``, and what the probe printed is logged (``logging``, logger
``engine.inference.onnx_session``) instead: at INFO level for ``auto``, as a WARNING when an explicitly
requested backend is unavailable.  onnxruntime's own run-time fallback (which also prints on stdout) is disabled.

While the descriptors are redirected, output of other threads goes to the temporary file too: create
evaluators before the protocol loop starts answering, or hold :data:`STDOUT_REDIRECT_LOCK` while writing
protocol output.  No redirection happens when only the CPU provider is asked for.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import os
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from engine.inference.settings import CPU, CUDA, TENSORRT, InferenceSettings
from engine.network import (
    INPUT_NAME,
)

log = logging.getLogger(__name__)


#: Held while file descriptors 1 and 2 are redirected during provider probing.  Protocol writers may
#: hold it too so that no reply is ever swallowed by a probe running on another thread.
STDOUT_REDIRECT_LOCK = threading.RLock()


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


def session_options(settings: InferenceSettings) -> Any:  # onnxruntime.SessionOptions (untyped)
    """The ``onnxruntime.SessionOptions`` of ``settings``: its intra-op threads (spinning only when
    allowed), one inter-op thread, sequential execution, every graph optimisation."""
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
    so = session_options(settings)
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
