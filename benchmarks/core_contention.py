"""What the second core's work costs the network: raw evaluations per second of each shipped network
(the engine's settings: one onnxruntime thread, batch 16, the copy the engine runs) alone, and while the
other core runs compiled code the way the search does (a numba loop with the GIL released, streaming a
cache-sized array and a memory-sized one), then alone again.

    python benchmarks/core_contention.py
    python benchmarks/core_contention.py --games chess go19 --seconds 3 --precision fp32

`tabula bench` compares the engine's network evaluations per second with the network's raw throughput
measured alone.  The engine runs its tree on the main thread while the network runs on a worker thread,
so both cores are busy; where two cores share execution resources (SMT siblings, a host's shared cache
or memory bandwidth, a VM's CPU budget) the network itself may slow down while the tree works.  This
prints by how much on the machine at hand (figures by date: docs/benchmarks.md, "The search on the CPU, and self-play's trees").  Figures, not assertions; pause other work (training) first.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.games import get_game
from engine.inference import InferenceSettings, OnnxEvaluator, Precision, raw_throughput
from engine.jit import njit
from engine.network_loading import with_precision
from weights import default_network


@njit
def _stream(a: np.ndarray, rounds: int) -> float:
    """Read ``a`` (float64) ``rounds`` times with a dependent sum: compiled work that keeps a core busy."""
    s = 0.0
    for _ in range(rounds):
        for j in range(a.shape[0]):
            s += a[j] * 1.0000001
    return s


class BusyCore:
    """A thread running :func:`_stream` over ``array`` until stopped (numba releases the GIL)."""

    def __init__(self, array: np.ndarray) -> None:
        self._array = array
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            _stream(self._array, 1)

    def __enter__(self) -> BusyCore:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", nargs="+", default=["chess", "shogi", "go9", "go19"])
    parser.add_argument("--seconds", type=float, default=2.0, help="per measurement")
    parser.add_argument("--precision", choices=["auto", "fp32", "int8"], default="auto")
    args = parser.parse_args()
    precision: Precision = args.precision
    cache_sized = np.random.default_rng(0).random(1 << 16)  # 512 KB: within a core's L2
    memory_sized = np.random.default_rng(1).random(1 << 25)  # 256 MB: from memory, as a big tree
    _stream(cache_sized, 1)  # compiled (or loaded from the cache) before any clock
    print(
        f"{'game':6} {'alone':>9} {'busy L2':>9} {'ratio':>6} {'busy mem':>9} {'ratio':>6} {'alone':>9}  network"
    )
    for label in args.games:
        game = get_game(label)
        path = default_network(label)
        if path is None:
            print(f"{label:6} no shipped network")
            continue
        evaluator = OnnxEvaluator(path, game.info, InferenceSettings(threads=1, batch_size=16))
        evaluator, _ = with_precision(evaluator, precision)
        alone = raw_throughput(evaluator, 16, args.seconds)
        with BusyCore(cache_sized):
            busy_cache = raw_throughput(evaluator, 16, args.seconds)
        with BusyCore(memory_sized):
            busy_memory = raw_throughput(evaluator, 16, args.seconds)
        again = raw_throughput(evaluator, 16, args.seconds)
        best = max(alone, again)
        print(
            f"{label:6} {alone:9,.0f} {busy_cache:9,.0f} {busy_cache / best:6.2f} {busy_memory:9,.0f} "
            f"{busy_memory / best:6.2f} {again:9,.0f}  {evaluator.description}"
        )
        evaluator.close()


if __name__ == "__main__":
    main()
