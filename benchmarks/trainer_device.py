"""The trainer end to end on one device: a short ``tabula-train run`` and its throughput.

    python benchmarks/trainer_device.py --device cuda --minutes 4          # Go 9x9, b10c128 (medium)
    python benchmarks/trainer_device.py --device cpu --minutes 4           # the same run on the CPU
    python benchmarks/trainer_device.py --device cpu --preset tiny --minutes 1 --game go7

Runs ``tabula-train run --game GAME --preset PRESET --device DEVICE --minutes MINUTES`` in a fresh run
folder and prints, from the run's own log (``log.jsonl``): games per hour and positions per second of
self-play, learner steps per second (between its first and last training event), and, when
``nvidia-smi`` is on the PATH, the GPU's busy share (its ``utilization.gpu`` sampled every 0.5 s over
the run) and the most memory used.  Figures, not assertions; ``--out`` keeps the run folder.  The first
minute includes the workers' start and, on a GPU, onnxruntime's CUDA set-up: give it a few minutes.

``--device cuda``: the learner on the GPU (mixed precision) and self-play on the best onnxruntime
provider that works (CUDA there).  ``--device cpu``: the whole run on the CPU, the GPU hidden from both
(``CUDA_VISIBLE_DEVICES`` empty), the same machine's reference.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def sample_gpu(stop: threading.Event, samples: list[tuple[float, float]]) -> None:
    """Append ``(utilization %, memory MiB)`` of GPU 0 every half second until ``stop``."""
    command = [
        "nvidia-smi",
        "--query-gpu=utilization.gpu,memory.used",
        "--format=csv,noheader,nounits",
        "--id=0",
    ]
    while not stop.wait(0.5):
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=5).stdout
            busy, memory = (float(x) for x in out.strip().split(","))
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        samples.append((busy, memory))


def run_figures(folder: Path) -> dict[str, Any]:
    """Self-play and learner figures from the run's log (:meth:`RunFolder.read_events`): the newest
    training event's games per hour and positions per second, and steps per second between the first
    and last training event."""
    from trainer.store.runfolder import RunFolder

    events = RunFolder(folder).read_events()
    train = [e for e in events if e.get("kind") == "train"]
    stop = next((e for e in reversed(events) if e.get("kind") == "stop"), {})
    figures: dict[str, Any] = {
        "games": stop.get("games"),
        "positions": stop.get("positions"),
        "steps": stop.get("step"),
        "seconds": stop.get("seconds"),
        "cpu_hours": stop.get("cpu_hours"),
    }
    if train:
        figures["games_per_hour"] = train[-1].get("games_per_hour")
        figures["positions_per_s"] = train[-1].get("positions_per_s")
    if len(train) >= 2 and train[-1]["time"] > train[0]["time"]:
        figures["steps_per_s"] = (train[-1]["step"] - train[0]["step"]) / (
            train[-1]["time"] - train[0]["time"]
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda", help="the learner's device")
    parser.add_argument("--game", default="go9", help="game label (go9, go19, chess, shogi ...)")
    parser.add_argument("--preset", default="medium", help="run preset (medium = b10c128)")
    parser.add_argument("--minutes", type=float, default=4.0, help="wall time of the run")
    parser.add_argument("--set", dest="settings", action="append", default=[], help="SECTION.KEY=VALUE")
    parser.add_argument("--out", type=Path, default=None, help="keep the run folder here")
    parser.add_argument("--json", type=Path, default=None, help="write the figures here")
    args = parser.parse_args()

    folder = args.out or Path(tempfile.mkdtemp(prefix="tabula-trainer-device-")) / "run"
    program = Path(sys.executable).with_name("tabula-train")
    command = [
        str(program) if program.exists() else "tabula-train",
        "run",
        "--out",
        str(folder),
        "--game",
        args.game,
        "--preset",
        args.preset,
        "--device",
        args.device,
        "--minutes",
        str(args.minutes),
        "--no-progress",
    ]
    for setting in args.settings:
        command += ["--set", setting]
    print(" ".join(command), flush=True)
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    sampler = None
    if shutil.which("nvidia-smi"):
        sampler = threading.Thread(target=sample_gpu, args=(stop, samples), daemon=True)
        sampler.start()
    started = time.perf_counter()
    # on the CPU the whole run is: self-play's onnxruntime would otherwise take a GPU that works
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="") if args.device == "cpu" else None
    code = subprocess.call(command, env=env)
    wall = time.perf_counter() - started
    stop.set()
    if sampler is not None:
        sampler.join()
    if code != 0:
        raise SystemExit(f"Error: tabula-train run exited with {code}")
    figures = run_figures(folder)
    figures.update(device=args.device, game=args.game, preset=args.preset, wall_s=round(wall, 1))
    if samples:
        figures["gpu_busy_share"] = sum(b for b, _ in samples) / (100.0 * len(samples))
        figures["gpu_memory_mib"] = max(m for _, m in samples)
    for key in ("games_per_hour", "positions_per_s", "steps_per_s", "gpu_busy_share", "gpu_memory_mib"):
        value = figures.get(key)
        shown = "n/a (no nvidia-smi)" if value is None and key.startswith("gpu") else value
        print(f"{key:16s} {shown if not isinstance(shown, float) else f'{shown:,.2f}'}")
    print(f"{'run':16s} {figures['steps']} steps, {figures['games']} games, {figures['positions']} positions")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
