"""Running networks.  :class:`OnnxEvaluator` runs a network under the contract of :mod:`engine.network`
with onnxruntime; :class:`UniformEvaluator` needs no network.

settings       ``InferenceSettings``, backends, precisions, ``batch_buckets``
onnx_session   ``create_session``: the best execution provider that works, nothing on stdout
softmax        ``masked_softmax``, ``masked_softmax_rows``: priors over the legal moves
evaluators     ``OnnxEvaluator``, ``UniformEvaluator``, ``RawOutput``, ``warm_up_network_thread``
throughput     ``raw_throughput`` for ``tabula bench``

The names others import are re-exported here (``from engine.inference import OnnxEvaluator``).  No
torch, no onnx: only numpy and onnxruntime, which is imported inside the functions that make sessions
(heavy), so the protocol handshake and ``UniformEvaluator`` never wait for it.
"""

from engine.inference.evaluators import OnnxEvaluator, RawOutput, UniformEvaluator, warm_up_network_thread
from engine.inference.onnx_session import STDOUT_REDIRECT_LOCK, create_session, session_options
from engine.inference.settings import (
    BACKENDS,
    CPU,
    CUDA,
    PRECISIONS,
    TENSORRT,
    Backend,
    InferenceSettings,
    Precision,
    batch_buckets,
)
from engine.inference.softmax import masked_softmax, masked_softmax_rows
from engine.inference.throughput import raw_throughput

__all__ = [
    "BACKENDS",
    "CPU",
    "CUDA",
    "PRECISIONS",
    "STDOUT_REDIRECT_LOCK",
    "TENSORRT",
    "Backend",
    "InferenceSettings",
    "OnnxEvaluator",
    "Precision",
    "RawOutput",
    "UniformEvaluator",
    "batch_buckets",
    "create_session",
    "masked_softmax",
    "masked_softmax_rows",
    "raw_throughput",
    "session_options",
    "warm_up_network_thread",
]
