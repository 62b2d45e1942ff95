"""The engine on a GPU: search evaluations per second against the network's in onnxruntime's default session.

    python benchmarks/gpu.py                                  # chess, shogi, Go 9x9 and 19x19; b10c128, b20c256
    python benchmarks/gpu.py --games chess --presets b10c128 --batches 16,256 --nodes 4000

For each game and network size, a randomly initialised network is exported with the trainer
(``tabula-train export --random``: random weights cost the GPU what trained ones do) into ``--nets``, then
``tabula bench``'s measurement (:func:`engine.bench.search_bench`) runs at each batch size: the bench
positions searched for ``--nodes`` playouts each on the engine's compiled tree with its pipelined network
calls, and the same network in onnxruntime's default session (``engine.inference.throughput.default_session_throughput``: back-to-back calls
of random batches of that size, the higher of a reading before and after the searches) in the same run.
The share is the ratio of the two.  The execution provider is the engine's choice (``--backend auto``:
TensorRT, then CUDA, then the CPU, whichever really works); the table prints the one each session ran on.
Figures, not assertions; run it on the machine whose GPU you want to know.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.bench import bench_search
from engine.inference import BACKENDS


def export_random(label: str, preset: str, folder: Path) -> Path:
    """A random-weight network of ``preset`` for ``label`` in ``folder`` (made once, then reused)."""
    import torch

    from engine.games import get_game
    from trainer.network.export import export_onnx
    from trainer.network.model import build_model

    path = folder / f"{label}-{preset}.onnx"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    game = get_game(label)
    torch.manual_seed(0)
    model = build_model(game.info, preset)
    komi = getattr(getattr(game, "rules", None), "komi", None)
    export_onnx(model, path, step=0, komi=komi, made_by=f"benchmarks/gpu.py: random init, {preset}")
    return path


def new_size_cost(label: str, net: Path, backend: str, sizes: tuple[int, ...] = (3, 5, 7, 11, 13)) -> str:
    """What a batch size's first network call costs over its later ones, unpadded (``pad_batches``
    off), and what the padded evaluator's load-time run of its buckets took: why the engine pads."""
    import numpy as np

    from engine.games import get_game
    from engine.inference import InferenceSettings, OnnxEvaluator

    info = get_game(label).info
    settings = InferenceSettings(backend=backend, batch_size=16, pad_batches=False)  # type: ignore[arg-type]
    evaluator = OnnxEvaluator(net, info, settings)
    first: list[float] = []
    later: list[float] = []
    for size in sizes:
        planes = np.zeros((size, *info.input_shape), np.float32)
        for times in (first, later):
            start = time.perf_counter()
            evaluator.run(planes)
            times.append(time.perf_counter() - start)
    evaluator.close()
    padded = OnnxEvaluator(net, info, InferenceSettings(backend=backend, batch_size=256, pad_batches=True))  # type: ignore[arg-type]
    line = (
        f"{label} {net.name} on {evaluator.provider}: a new batch size's first call {1000 * sum(first) / len(first):.1f} ms, "
        f"its second {1000 * sum(later) / len(later):.2f} ms (sizes {sizes}); padded to {padded.buckets}: "
        f"{padded.warmup_s:.2f} s at load"
    )
    padded.close()
    return line


class CallTrace:
    """Counts the search's network calls (``OnnxEvaluator.infer_dense``, which the raw readings do not
    use: rows and seconds inside), so a row of the table says whether the search fed the network full
    batches (rows a call) and for what share of the search's time the network was busy; and keeps each
    call (its place in the run, rows, seconds, thread), so the slowest calls can be named
    (:meth:`slowest`): where a search stalls, and on which calls."""

    def __init__(self) -> None:
        from engine.inference import OnnxEvaluator

        self.calls = 0
        self.rows = 0
        self.seconds = 0.0
        self.log: list[tuple[int, int, float, str]] = []  # (call number, rows, seconds, thread)
        infer = OnnxEvaluator.infer_dense

        def traced(evaluator: OnnxEvaluator, planes: Any, legal: Any) -> Any:
            start = time.perf_counter()
            try:
                return infer(evaluator, planes, legal)
            finally:
                seconds = time.perf_counter() - start
                self.log.append((self.calls, int(planes.shape[0]), seconds, threading.current_thread().name))
                self.calls += 1
                self.rows += int(planes.shape[0])
                self.seconds += seconds

        OnnxEvaluator.infer_dense = traced  # type: ignore[method-assign, assignment]

    def take(self) -> tuple[int, int, float]:
        """``(calls, rows, seconds)`` since the last take (the call log starts over too)."""
        out = (self.calls, self.rows, self.seconds)
        self.calls, self.rows, self.seconds = 0, 0, 0.0
        self.log = []
        return out

    def slowest(self, count: int) -> list[str]:
        """The ``count`` slowest calls since the last take, slowest first: ``call N of M: R rows, X ms
        (thread)``, and the median call's milliseconds beside them."""
        if not self.log:
            return []
        median = sorted(s for _, _, s, _ in self.log)[len(self.log) // 2]
        worst = sorted(self.log, key=lambda c: -c[2])[:count]
        return [
            f"  call {n} of {len(self.log)}: {rows} rows, {1000 * s:.1f} ms ({thread}; median {1000 * median:.2f} ms)"
            for n, rows, s, thread in worst
        ]


class SearchPhases:
    """Where the search's own thread spends its time (:class:`engine.search.searcher.Searcher`): selecting
    the next batch (walks, planes), backing the last one up (the priors' softmax included) and waiting
    for the network.  A search that keeps up with the GPU waits; one that does not shows here which
    step holds it back.  Microseconds per leaf in the table."""

    def __init__(self) -> None:
        from engine.search.searcher import Searcher

        self.seconds = {"select": 0.0, "backup": 0.0, "wait": 0.0}
        self.leaves = 0

        def timed(name: str, method: Any) -> Any:  # the search loop's steps are generators
            def run(searcher: Searcher, *args: Any) -> Any:
                start = time.perf_counter()
                try:
                    return (yield from method(searcher, *args))
                finally:
                    self.seconds[name] += time.perf_counter() - start

            return run

        Searcher._await_in_flight = timed("wait", Searcher._await_in_flight)  # type: ignore[method-assign]
        Searcher._back_up_in_flight = timed("backup", Searcher._back_up_in_flight)  # type: ignore[method-assign]
        search = Searcher._search

        def select_timed(searcher: Searcher) -> Any:
            tree = searcher.tree
            select = tree.select_batch

            def selecting(count: int) -> Any:
                start = time.perf_counter()
                batch = select(count)
                self.seconds["select"] += time.perf_counter() - start
                self.leaves += len(batch)
                return batch

            tree.select_batch = selecting  # type: ignore[method-assign]
            try:
                return (yield from search(searcher))
            finally:
                del tree.select_batch

        Searcher._search = select_timed  # type: ignore[method-assign, assignment]

    def take(self) -> tuple[str, float]:
        """``select / backup / wait`` in microseconds a leaf since the last take, and the seconds of
        the three together (the searches' time, every repeat counted)."""
        per = 1e6 / max(self.leaves, 1)
        out = "/".join(f"{self.seconds[k] * per:.1f}" for k in ("select", "backup", "wait"))
        total = sum(self.seconds.values())
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        self.leaves = 0
        return out, total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--games", default="chess,shogi,go9,go19")
    parser.add_argument("--presets", default="b10c128,b20c256")
    parser.add_argument(
        "--batches", default="16,64,256", help="Leaves per network call (the engine's Batch)."
    )
    parser.add_argument("--nodes", type=int, default=6000, help="Playouts per bench position.")
    parser.add_argument("--raw-seconds", type=float, default=3.0)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="Searches of each position (its fastest counts) and raw windows (2 * repeat, the best counts), "
        "as tabula bench --repeat.",
    )
    parser.add_argument("--backend", default="auto", choices=BACKENDS)
    parser.add_argument(
        "--pin",
        default="auto",
        choices=("auto", "on", "off", "both"),
        help="Page-locked input buffers (InferenceSettings.pin_host_memory; auto: on for GPU providers); "
        "both: each row twice, off then on.",
    )
    parser.add_argument("--nets", type=Path, default=Path("runs/gpu-nets"))
    parser.add_argument(
        "--new-sizes", action="store_true", help="First print what a new batch size's first call costs."
    )
    parser.add_argument("--json", type=Path, default=None, help="Also write every row here.")
    parser.add_argument(
        "--slow-calls",
        type=int,
        default=0,
        help="Under each row, the N slowest network calls of its searches (where a search stalls).",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")

    notes = []
    if args.new_sizes:
        label = args.games.split(",")[0]
        preset = args.presets.split(",")[0]
        notes.append(new_size_cost(label, export_random(label, preset, args.nets), args.backend))
        print(notes[-1], flush=True)
    rows: list[dict[str, object]] = []
    pins: dict[str, bool | None] = {"auto": None, "on": True, "off": False}
    choices = ["off", "on"] if args.pin == "both" else [args.pin]
    trace = CallTrace()
    phases = SearchPhases()
    header = (
        f"{'game':<6} {'network':<8} {'batch':>5} {'nodes/s':>9} {'evals/s':>9} {'ref evals/s':>11} "
        f"{'share':>10} {'rows/call':>9} {'net busy':>8} {'sel/bak/wait us':>16}  provider"
    )
    lines = [header]
    print(header, flush=True)
    for preset in args.presets.split(","):
        for label in args.games.split(","):
            start = time.perf_counter()
            net = export_random(label, preset, args.nets)
            print(f"# {net}: {net.stat().st_size:,} bytes ({time.perf_counter() - start:.1f} s)", flush=True)
            for batch, pin in ((int(b), p) for b in args.batches.split(",") for p in choices):
                trace.take()
                phases.take()
                f = bench_search(
                    label,
                    args.nodes,
                    "onnx",
                    str(net),
                    batch,
                    threads=0,
                    raw_seconds=args.raw_seconds,
                    precision="fp32",
                    backend=args.backend,
                    repeat=args.repeat,
                    pin_host_memory=pins[pin],
                )
                slow = trace.slowest(args.slow_calls)
                calls, fed, busy = trace.take()
                spent, searching = phases.take()
                line = (
                    f"{label:<6} {preset:<8} {batch:5d} {f.nodes_per_s:9,.0f} {f.evals_per_s:9,.0f} "
                    f"{f.alone.best if f.alone else 0:11,.0f} {f.share or 0:10.2f} "
                    f"{fed / max(calls, 1):9.1f} {busy / max(searching, 1e-9):8.2f} {spent:>16}  {f.evaluator}"
                )
                lines.extend([line, *slow])
                print("\n".join([line, *slow]), flush=True)
                rows.append(
                    {
                        "game": label,
                        "network": preset,
                        "batch": batch,
                        "nodes": f.nodes,
                        "seconds": f.seconds,
                        "evaluations": f.evaluations,
                        "machine_evals_per_s": f.alone.best if f.alone else None,
                        "share": f.share,
                        "evaluator": f.evaluator,
                        "pin": pin,
                        "network_calls": calls,
                        "network_rows": fed,
                        "network_seconds": busy,
                        "search_thread_us_per_leaf": spent,
                    }
                )
    print("\n".join(["", *notes, *lines]))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
