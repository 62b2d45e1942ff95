"""Where a network's time goes inside onnxruntime: its profiler's kernel times per node, on this machine.

    python benchmarks/network_ops.py weights/shogi.int8.onnx            # batch 64, one thread
    python benchmarks/network_ops.py weights/chess.int8.onnx --batch 16 --threads 2

Runs ``--calls`` calls of ``--batch`` positions (input planes with ``--density`` of ones, the rest zeros,
like the games' piece planes) through the session options the engine uses on the CPU
(``engine.inference.session_options``), with onnxruntime's profiler on, and prints each node's kernel
time per call, its share, and the sum.  What it is for: a network's cost beside its convolutions, for
example an int8 copy's input ``QuantizeLinear`` (float planes to uint8), the layout ``Transpose`` nodes
onnxruntime puts around its NHWC int8 convolutions, and the ``DequantizeLinear`` of a large policy
output, which a caller that handed over uint8 planes or read the quantized policy would not pay
(``docs/design.md``, "Where an int8 network's CPU time goes").  Figures, not assertions; pause other work.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from engine.inference import InferenceSettings, session_options


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("network", type=Path, help="an .onnx file")
    parser.add_argument("--batch", type=int, default=64, help="positions a call")
    parser.add_argument("--calls", type=int, default=50, help="profiled calls (after 5 not counted)")
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    parser.add_argument("--density", type=float, default=0.05, help="share of ones in the input planes")
    parser.add_argument("--top", type=int, default=20, help="nodes printed")
    args = parser.parse_args()

    import onnxruntime as ort

    so = session_options(InferenceSettings(backend="cpu", threads=args.threads, batch_size=args.batch))
    warm = 5
    with tempfile.TemporaryDirectory() as tmp:
        so.enable_profiling = True
        so.profile_file_prefix = str(Path(tmp) / "ops")
        session = ort.InferenceSession(str(args.network), so, providers=["CPUExecutionProvider"])
        inp = session.get_inputs()[0]
        shape = [args.batch, *(int(d) for d in inp.shape[1:])]
        planes = (np.random.default_rng(0).random(shape) < args.density).astype(np.float32)
        for _ in range(warm + args.calls):
            session.run(None, {inp.name: planes})
        events = json.loads(Path(session.end_profiling()).read_text())
    # the calls after the warm ones: node events from the start of the first timed model_run on
    runs = sorted(int(e["ts"]) for e in events if e.get("name") == "model_run")
    start = runs[warm] if len(runs) > warm else 0
    times: collections.Counter[str] = collections.Counter()
    for event in events:
        name = str(event.get("name", ""))
        if event.get("cat") == "Node" and name.endswith("_kernel_time") and int(event["ts"]) >= start:
            op = event.get("args", {}).get("op_name", "?")
            times[f"{op} {name.removesuffix('_kernel_time')}"] += int(event["dur"])
    total = sum(times.values())
    print(
        f"{args.network.name}: batch {args.batch}, {args.threads} thread(s), {args.calls} calls, "
        f"input density {args.density}: {total / args.calls / 1000:.3f} ms a call in the nodes"
    )
    by_op: collections.Counter[str] = collections.Counter()
    for key, us in times.items():
        by_op[key.split(" ", 1)[0]] += us
    for key, us in times.most_common(args.top):
        print(f"{us / args.calls / 1000:8.3f} ms {100 * us / total:5.1f}%  {key}")
    print("by operator:")
    for op, us in by_op.most_common():
        print(f"{us / args.calls / 1000:8.3f} ms {100 * us / total:5.1f}%  {op}")


if __name__ == "__main__":
    main()
