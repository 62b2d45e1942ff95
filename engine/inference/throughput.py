"""Network throughput for ``tabula bench`` and the benchmarks, in positions per second.

* :func:`default_session_throughput`: what the hardware gives a network, the same model file in
  onnxruntime's default session (its own thread count, idle threads spinning) called back to back with
  nothing else: the reference of `tabula bench`'s share (docs/benchmarks.md, "Share of the machine").
* :func:`raw_throughput`: back-to-back calls of an evaluator on one thread (network and masked softmax).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.games.base import GameInfo


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
    return _positions_per_s(lambda: evaluator.evaluate(planes, legal), batch_size, seconds)


def default_session_throughput(
    path: str | os.PathLike[str], provider: str, batch_size: int, seconds: float = 2.0, seed: int = 0
) -> float:
    """Positions per second through the network at ``path`` in onnxruntime's default session.

    Args:
        path: the ONNX model (input ``[B, C, H, W]`` float32, or ``[B, H, W, C]`` uint8 for a
            uint8-planes model).
        provider: the execution provider to run on (the engine evaluator's), the CPU provider behind it.
        batch_size: positions per call.
        seconds: measuring time, after one untimed warm-up call.
        seed: for the random binary planes (about a tenth of them set, like real encodings).
    """
    import onnxruntime as ort

    providers = [provider] + ([] if provider == "CPUExecutionProvider" else ["CPUExecutionProvider"])
    session: Any = ort.InferenceSession(os.fspath(path), providers=providers)
    given = session.get_inputs()[0]
    shape = [batch_size, *(int(d) for d in given.shape[1:])]
    dtype = np.uint8 if "uint8" in given.type else np.float32
    feed = {given.name: (np.random.default_rng(seed).random(shape) < 0.1).astype(dtype)}
    return _positions_per_s(lambda: session.run(None, feed), batch_size, seconds)


def _positions_per_s(call: Callable[[], object], batch_size: int, seconds: float) -> float:
    """``batch_size`` times the calls a second of ``call``, over ``seconds`` after one untimed call."""
    call()
    calls = 0
    start = time.perf_counter()
    while True:
        call()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * batch_size / elapsed
