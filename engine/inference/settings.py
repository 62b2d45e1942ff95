"""How to run a network: the backends (execution providers) and precisions one may ask for,
:class:`InferenceSettings`, and the batch sizes a padded session is called with (:func:`batch_buckets`).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Literal

Backend = Literal["auto", "cpu", "cuda", "tensorrt"]
BACKENDS: tuple[str, ...] = ("auto", "cpu", "cuda", "tensorrt")
#: Which copy of a network runs: its int8 sibling on the CPU (``auto``), always (``int8``), never (``fp32``).
Precision = Literal["auto", "fp32", "int8"]
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "int8")

TENSORRT = "TensorrtExecutionProvider"
CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


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
        policy_temperature: the priors are the softmax of the legal logits divided by this (Leela
            Chess Zero's ``PolicyTemperature``, dlshogi's ``Softmax_Temperature``).  Above 1 flattens the
            policy of a network trained towards sharp visit counts, so the search tries its second and
            third choices sooner (docs/experiments.md, "Policy temperature"); 1 is the network's own.
    """

    backend: Backend = "auto"
    threads: int = 0
    batch_size: int = 64
    allow_spinning: bool = False
    device_id: int = 0
    trt_cache_dir: str | None = None
    pad_batches: bool | None = None
    pin_host_memory: bool | None = None
    policy_temperature: float = 1.0

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"backend {self.backend!r}: expected one of {', '.join(BACKENDS)}")
        if self.threads < 0:
            raise ValueError("threads must be >= 0")
        if self.batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        if not (self.policy_temperature > 0.0 and math.isfinite(self.policy_temperature)):
            raise ValueError("policy_temperature must be a positive number")


def batch_buckets(batch_size: int, provider: str = "") -> tuple[int, ...]:
    """The batch sizes a padded network session is called with.

    On the CUDA provider one size, ``batch_size``: onnxruntime's CUDA convolutions (cuDNN's frontend,
    since onnxruntime 1.20) build their execution plans again whenever a call's input shape differs
    from the previous call's, whatever shapes came before (onnxruntime issue #23006), so a search that
    alternated sizes stalled at every change (``docs/gpu.md``).
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
