"""Int8 against float32: what a network's int8 copy (``NAME.int8.onnx``, ``tabula-train quantize``) gains in
speed and loses in accuracy, for each shipped network that has one.

    python benchmarks/int8.py                       # every shipped network with an int8 copy
    python benchmarks/int8.py --games go9 --seconds 5

Accuracy, on positions the float32 network meets when it plays itself from its raw policy (seed 1; the
copies in ``weights/`` were calibrated on seed 0's or on their run's shards): the policy's mean and 99th
percentile KL divergence (float32 || int8) over the legal moves, how often both pick the same top move, and
the mean and largest difference of the value.  Speed: raw evaluations per second of each file on one
onnxruntime thread of the CPU provider at batch 16 (the engine's) and 128 (self-play's), the two files
measured in turns so that both see the same machine, and their ratio.  Figures, not assertions.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games import get_game
from engine.inference import InferenceSettings, OnnxEvaluator
from engine.network import int8_sibling
from trainer.network.quantize import calibration_planes_from_play
from weights import default_network


def accuracy(fp32: OnnxEvaluator, int8: OnnxEvaluator, planes: np.ndarray) -> str:
    """Policy KL / top-move agreement / value difference of ``int8`` against ``fp32`` on ``planes``."""
    a, b = fp32.run(planes), int8.run(planes)

    def log_softmax(x: np.ndarray) -> np.ndarray:
        x = x - x.max(axis=1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=1, keepdims=True))

    la, lb = log_softmax(a.policy), log_softmax(b.policy)
    kl = (np.exp(la) * (la - lb)).sum(axis=1)
    agree = float((la.argmax(axis=1) == lb.argmax(axis=1)).mean())
    dv = np.abs(a.value.reshape(-1) - b.value.reshape(-1))
    return (
        f"policy KL mean {kl.mean():.4f} p99 {np.quantile(kl, 0.99):.4f}, same top move {agree:.1%}; "
        f"value |diff| mean {dv.mean():.4f} max {dv.max():.4f}"
    )


def throughput(evaluator: OnnxEvaluator, planes: np.ndarray, seconds: float) -> float:
    """Evaluations per second of ``evaluator`` on ``planes`` for ``seconds``."""
    evaluator.run(planes)
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        evaluator.run(planes)
        n += 1
    return n * len(planes) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", nargs="+", default=["go9", "go19", "chess", "shogi"])
    parser.add_argument("--positions", type=int, default=512, help="held-out positions for accuracy")
    parser.add_argument("--seconds", type=float, default=3.0, help="per throughput sample")
    parser.add_argument("--rounds", type=int, default=2, help="turns of fp32 / int8 per batch size")
    args = parser.parse_args()
    for label in args.games:
        path = default_network(label)
        if path is None or not int8_sibling(path).is_file():
            print(f"{label}: no network with an int8 copy in weights/")
            continue
        game = get_game(label)
        planes = calibration_planes_from_play(path, game, args.positions, seed=1)
        evaluators = {}
        for name, file in (("fp32", path), ("int8", int8_sibling(path))):
            settings = InferenceSettings(backend="cpu", threads=1, batch_size=max(128, args.positions))
            evaluators[name] = OnnxEvaluator(file, game.info, settings)
        print(f"{label}: {accuracy(evaluators['fp32'], evaluators['int8'], planes)}", flush=True)
        for batch in (16, 128):
            rates: dict[str, list[float]] = {"fp32": [], "int8": []}
            for _ in range(args.rounds):
                for name, evaluator in evaluators.items():
                    rates[name].append(throughput(evaluator, planes[:batch], args.seconds))
            fp32, int8 = np.mean(rates["fp32"]), np.mean(rates["int8"])
            print(
                f"{label}: batch {batch:3d}: fp32 {fp32:8,.0f} evals/s, int8 {int8:8,.0f} evals/s, "
                f"int8/fp32 {int8 / fp32:.2f}x",
                flush=True,
            )
        for evaluator in evaluators.values():
            evaluator.close()


if __name__ == "__main__":
    main()
