"""What ``benchmarks/chaos.py`` found, fixed: a killed worker's int8 folders are removed by the next
one, a killed pack's temporaries by the next pack, and a run killed between a checkpoint and its export
exports the checkpoint's network when it resumes.  The slow test runs the chaos script in short: a tiny
run killed with SIGKILL in self-play and in training and resumed, then its pack killed and written
again, and every one of the script's checks passes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trainer.selfplay.worker import INT8_PREFIX, _locked_folder, remove_orphaned_int8_folders
from trainer.store.pack import pack_run

ROOT = Path(__file__).resolve().parents[2]


def test_the_int8_folders_of_dead_processes_are_removed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    code = (
        "import os, sys, time; sys.path.insert(0, sys.argv[1]);"
        "from trainer.selfplay.worker import _locked_folder; print(_locked_folder('tabula-int8-')[0], flush=True);"
        "time.sleep(60)"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(ROOT)], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    assert child.stdout is not None
    theirs = Path(child.stdout.readline().strip())
    mine, fd = _locked_folder(INT8_PREFIX)
    (Path(mine) / "int8.onnx").write_bytes(b"x")
    assert theirs.parent == tmp_path and theirs.is_dir()
    assert remove_orphaned_int8_folders() == 0  # both in use
    child.send_signal(signal.SIGKILL)
    child.wait(10)
    assert remove_orphaned_int8_folders() == 1
    assert not theirs.exists() and Path(mine).is_dir()
    os.close(fd)


def test_a_pack_removes_the_temporaries_a_killed_pack_left(tmp_path: Path) -> None:
    run, dest = tmp_path / "run", tmp_path / "pack"
    for name, data in [
        ("config.toml", b"[game]\n"),
        ("checkpoints/ckpt-00000010.pt", b"ckpt"),
        ("networks/net-00000000.onnx", b"net0"),
        ("networks/latest.onnx", b"net10"),
    ]:
        (run / name).parent.mkdir(parents=True, exist_ok=True)
        (run / name).write_bytes(data)
    leftover = dest / "checkpoints" / ".ckpt-00000010.pt.x1y2.tmp"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"cut")
    written = pack_run(run, dest)
    assert not leftover.exists()
    assert (dest / "checkpoints" / "ckpt-00000010.pt").read_bytes() == b"ckpt" and len(written) == 4


@pytest.mark.slow
def test_three_kills_lose_nothing(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    args = ["--kills", "3", "--pack-kills", "1", "--steps", "30", "--aim-seconds", "60"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "chaos.py"), *args, "--work", str(tmp_path / "chaos")],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert "kills per stage: self-play 1, training 1, export 0, quantize 0, pack 1" in out, out
    assert "violations: 0" in out
    assert re.search(r"^latest\.onnx step: 30$", out, re.M), out
    assert re.search(r"^engine \(pack's latest\.onnx, genmove b\): = [A-E][1-5]$", out, re.M), out
    assert not (tmp_path / "chaos").exists()  # the work folder is removed
