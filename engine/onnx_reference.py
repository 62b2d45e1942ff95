"""What the hardware gives a network: its evaluations per second in onnxruntime's default session.

The reference of `tabula bench`'s share figure (docs/benchmarks.md, "Share of the machine"): the same
model file the engine's evaluator runs (its int8 copy on the CPU, shogi's uint8-planes model where the
compiled tree hands it uint8 planes), at the same batch size, in an ``onnxruntime.InferenceSession``
with onnxruntime's own defaults (intra-op threads: one per physical core; idle threads spin), called
back to back with nothing else running: no tree, no softmax, no result objects.  The engine's network
evaluations per second during a search over this figure is the share of the machine it uses.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

__all__ = ["default_session_throughput"]


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
    planes = (np.random.default_rng(seed).random(shape) < 0.1).astype(dtype)
    feed = {given.name: planes}
    session.run(None, feed)
    calls = 0
    start = time.perf_counter()
    while True:
        session.run(None, feed)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * batch_size / elapsed
