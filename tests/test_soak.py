"""``benchmarks/soak.py``: reading the engine's process from /proc and judging a soak's figures."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import ladder, soak

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")


def test_reads_a_process_and_finds_the_engine_by_its_command_line(tmp_path: Path) -> None:
    me = soak.read_process(os.getpid(), 3)
    assert me is not None and me.games == 3 and me.rss_mb > 1.0 and me.fds >= 3 and me.threads >= 1
    program = tmp_path / "tabula"
    program.write_text("import time\ntime.sleep(30)\n")
    engine = subprocess.Popen([sys.executable, str(program), "usi"])
    other = subprocess.Popen([sys.executable, str(program), "gtp"])
    try:
        deadline = time.monotonic() + 10
        while engine.pid not in soak.engine_pids(str(program), "usi") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert soak.engine_pids(str(program), "usi") == [engine.pid]  # not the gtp one
    finally:
        for proc in (engine, other):
            proc.kill()
            proc.wait()
    assert soak.read_process(engine.pid, 1) is None  # gone


def _result(faults: list[str | None]) -> ladder.RungResult:
    games = [
        ladder.Game(i + 1, i % 2 == 0, 0.5, "draw", fault=f, faulty=ladder.TABULA if f else None)
        for i, f in enumerate(faults)
    ]
    return ladder.RungResult("t", "client", "cmd", games)


def _readings(last_mb: float, pid: int = 7) -> list[soak.Reading]:
    return [soak.Reading(g, pid, 100.0 if g < 20 else last_mb, 12, 9) for g in range(1, 21)]


def test_verdict_holds_memory_to_the_tenth_game_and_counts_faults() -> None:
    quiet = soak.verdict(_result([None] * 20), _readings(109.0), 0.10)
    assert quiet.ok and quiet.growth == pytest.approx(0.09) and quiet.pids == 1
    assert not soak.verdict(_result([None] * 20), _readings(111.0), 0.10).ok  # grew 11%
    timed_out = soak.verdict(_result([None] * 19 + ["time"]), _readings(100.0), 0.10)
    assert (timed_out.faults, timed_out.time_losses, timed_out.ok) == (0, 1, False)
    crashed = soak.verdict(_result(["crash"] + [None] * 19), _readings(100.0), 0.10)
    assert (crashed.faults, crashed.ok) == (1, False)
    short = soak.verdict(_result([None] * 5), _readings(100.0)[:5], 0.10)
    assert short.growth is None and short.ok  # fewer than ten games: no memory verdict
