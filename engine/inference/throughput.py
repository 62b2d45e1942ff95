"""Raw network throughput (positions per second through an evaluator, network and masked softmax) for
``tabula bench`` and the benchmarks.
"""

from __future__ import annotations

import time

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
    evaluator.evaluate(planes, legal)
    calls = 0
    start = time.perf_counter()
    while True:
        evaluator.evaluate(planes, legal)
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * batch_size / elapsed
