"""Network throughput for ``tabula bench`` and the benchmarks, in positions per second.

* :func:`default_session_throughput`: what the hardware gives a network, the same model file in
  onnxruntime's default session (its own thread count, idle threads spinning) called back to back with
  nothing else: the reference of `tabula bench`'s share (docs/benchmarks.md, "Share of the machine").
* :func:`parallel_sessions_throughput`: the other way to give a small network the machine, one
  one-thread call per core side by side (what ``Threads 0`` does, ``engine.network_loading``); the
  share's reference is the better of the two.
* :func:`raw_throughput`: back-to-back calls of an evaluator on one thread (network and masked softmax).
"""

from __future__ import annotations

import os
import threading
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
    session, feed = _session_and_feed(path, provider, batch_size, seed, None)
    return _positions_per_s(lambda: session.run(None, feed), batch_size, seconds)


def parallel_sessions_throughput(
    path: str | os.PathLike[str],
    provider: str,
    batch_size: int,
    calls: int,
    seconds: float = 2.0,
    seed: int = 0,
) -> float:
    """Positions per second through the network at ``path`` with ``calls`` threads calling one
    one-intra-op-thread session back to back side by side (arguments as
    :func:`default_session_throughput`)."""
    session, feed = _session_and_feed(path, provider, batch_size, seed, 1)
    session.run(None, feed)
    counts = [0] * calls
    start = time.perf_counter()
    stop = start + seconds

    def work(i: int) -> None:
        while time.perf_counter() < stop:
            session.run(None, feed)
            counts[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) * batch_size / (time.perf_counter() - start)


def _session_and_feed(
    path: str | os.PathLike[str], provider: str, batch_size: int, seed: int, threads: int | None
) -> tuple[Any, dict[str, np.ndarray]]:
    """A session on ``provider`` (onnxruntime's defaults, or ``threads`` intra-op threads without
    spinning) and a random binary batch of ``batch_size`` for its input."""
    import onnxruntime as ort

    providers = [provider] + ([] if provider == "CPUExecutionProvider" else ["CPUExecutionProvider"])
    options = None
    if threads is not None:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session: Any = ort.InferenceSession(os.fspath(path), options, providers=providers)
    given = session.get_inputs()[0]
    shape = [batch_size, *(int(d) for d in given.shape[1:])]
    dtype = np.uint8 if "uint8" in given.type else np.float32
    feed = {given.name: (np.random.default_rng(seed).random(shape) < 0.1).astype(dtype)}
    return session, feed


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
