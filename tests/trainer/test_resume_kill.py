"""``kill -9`` safety: a run killed mid-way leaves no corrupt file and resumes where it was."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

torch = pytest.importorskip("torch")

import contextlib

from engine.games import get_game
from engine.inference import InferenceSettings, OnnxEvaluator
from tests.trainer.conftest import go5_args
from trainer.network.checkpoint import list_checkpoints, load_checkpoint
from trainer.store.shards import list_shards, read_shard

SETTINGS = [
    "selfplay.games_in_parallel=8",
    "selfplay.simulations=4",
    "selfplay.leaves_per_tree=2",
    "selfplay.positions_per_shard=40",
    "replay.min_positions=40",
    "train.batch_size=16",
    "train.interval_steps=5",
    "train.steps_per_sample=0.2",
    "evaluate.every=0",
    "game.max_plies=30",
]


def _run(out, steps: int) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "trainer.cli",
        *go5_args("run", out),
        "--workers",
        "1",
        "--steps",
        str(steps),
        "--no-progress",
    ]
    for item in SETTINGS:
        args += ["--set", item]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True
    )


def _check_files(out) -> int:
    """Every shard, checkpoint and network reads back; returns the newest checkpoint step."""
    info = get_game("go", board_size=5).info
    for path in list_shards(out / "shards"):
        assert len(read_shard(path, info)) > 0
    steps = [s for s, _ in list_checkpoints(out / "checkpoints")]
    for _, path in list_checkpoints(out / "checkpoints"):
        load_checkpoint(path)
    for net in (out / "networks").glob("*.onnx"):
        OnnxEvaluator(net, info, InferenceSettings(backend="cpu", threads=1))
    for line in (out / "log.jsonl").read_text().splitlines()[:-1]:
        json.loads(line)  # only the very last line may have been cut by the kill
    return max(steps, default=0)


def test_kill_minus_9_then_resume(tmp_path) -> None:
    out = tmp_path / "run"
    proc = _run(out, steps=1000)
    deadline = time.monotonic() + 240
    try:
        # wait until the run has a checkpoint past step 5, then kill the whole process group mid-way
        while time.monotonic() < deadline:
            if any(s >= 10 for s, _ in list_checkpoints(out / "checkpoints")):
                break
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
        else:
            pytest.fail("the run made no checkpoint in time")
        time.sleep(0.7)  # somewhere in the middle of the next interval
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    time.sleep(0.5)
    killed_at = _check_files(out)
    assert killed_at >= 10
    shards_before = len(list_shards(out / "shards"))
    # resume: it starts from the newest checkpoint and goes on
    proc = _run(out, steps=killed_at + 10)
    output, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0, output
    assert f"step {killed_at + 10}" in output
    assert _check_files(out) == killed_at + 10
    # No finished shard is lost (whether self-play also wrote new ones within 10 steps depends on timing).
    assert len(list_shards(out / "shards")) >= shards_before
    assert not list(out.rglob(".*.tmp"))  # leftovers of the kill were removed at the restart
    starts = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"start"' in x]
    assert starts[-1]["resumed"] is True and starts[-1]["step"] == killed_at


def test_a_second_driver_on_the_same_run_is_refused(tmp_path) -> None:
    from trainer.run.loop import RunLockedError, run_lock
    from trainer.store.runfolder import RunFolder

    folder = RunFolder(tmp_path)
    with run_lock(folder), pytest.raises(RunLockedError), run_lock(RunFolder(tmp_path)):
        pass


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc")
def test_workers_stop_when_the_driver_is_killed(tmp_path) -> None:
    out = tmp_path / "run"
    proc = _run(out, steps=1000)
    try:
        deadline = time.monotonic() + 120
        while not list_shards(out / "shards"):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.2)
        workers = _children(proc.pid)
        assert workers
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone: its worker must notice and stop
        proc.wait(10)
        deadline = time.monotonic() + 30
        while any(os.path.exists(f"/proc/{w}") and _state(w) != "Z" for w in workers):
            assert time.monotonic() < deadline, "a self-play worker outlived its driver"
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


def test_a_run_killed_between_checkpoint_and_export_exports_at_resume(tmp_path) -> None:
    """The kill ``benchmarks/chaos.py`` found: after the checkpoint of a run's last interval, before its
    export.  The resumed run (at its total steps already) installs the checkpoint's network."""
    from engine.network import read_metadata

    out = tmp_path / "run"
    output, _ = _run(out, steps=10).communicate(timeout=240)
    nets = out / "networks"
    assert read_metadata(nets / "latest.onnx").step == 10, output
    (nets / "net-00000010.onnx").unlink()  # as if killed before the export: net 10 missing, latest older
    (nets / "latest.onnx").write_bytes((nets / "net-00000005.onnx").read_bytes())
    for _ in range(2):
        proc = _run(out, steps=10)
        output, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0, output
        assert read_metadata(nets / "latest.onnx").step == 10
        assert read_metadata(nets / "net-00000010.onnx").step == 10
        # the second time: net 10 there, latest.onnx older (killed between the two writes)
        (nets / "latest.onnx").write_bytes((nets / "net-00000005.onnx").read_bytes())
    exported = [json.loads(x) for x in (out / "log.jsonl").read_text().splitlines() if '"exported"' in x]
    assert [e["step"] for e in exported] == [10]
