"""Self-play workers as Ray actors on a local Ray instance (slow: Ray takes seconds to start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")
pytest.importorskip("torch")

from tests.trainer.conftest import go5_args, set_flags
from trainer.store.shards import read_shard_meta


@pytest.mark.slow
def test_tiny_run_on_local_ray(tmp_path) -> None:
    out = tmp_path / "run"
    settings = [
        "selfplay.games_in_parallel=8",
        "selfplay.simulations=4",
        "selfplay.positions_per_shard=40",
        "replay.min_positions=40",
        "train.batch_size=16",
        "train.interval_steps=5",
        "train.steps_per_sample=0.2",
        "evaluate.games=2",
        "evaluate.simulations=4",
        "evaluate.every=2",
        "game.max_plies=30",
    ]
    args = [
        sys.executable,
        "-m",
        "trainer.cli",
        *go5_args("run", out),
        "--workers",
        "1",
        "--steps",
        "10",
        "--ray-address",
        "local",
        "--no-progress",
        *set_flags(settings),
    ]
    proc = subprocess.run(
        args,
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "step 10" in proc.stdout
    shards = sorted(p.name for p in (out / "shards").glob("*.npz"))
    assert shards and all("-w100-" in name for name in shards)  # written by the driver for actor 0
    events = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines()]
    assert events[0]["ray"] == "local" and events[-1]["kind"] == "stop"
    # every shard the driver wrote, the last poll's too, is in the stop event's counts
    metas = [read_shard_meta(p) for p in (out / "shards").glob("*.npz")]
    assert events[-1]["games"] == sum(int(m["games"]) for m in metas)
    assert events[-1]["positions"] == sum(int(m["positions"]) for m in metas)
    assert (out / "networks" / "net-00000010.onnx").is_file()


def test_without_ray_address_ray_is_not_imported() -> None:
    code = (
        "import sys, trainer.run.loop, trainer.selfplay.worker, trainer.cli; "
        "assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
