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
    program = tmp_path / "tabula-soak-test"
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


def test_a_process_that_exited_but_is_not_reaped_reads_as_gone() -> None:
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 10
        while "zombie" not in Path(f"/proc/{zombie.pid}/status").read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "zombie" in Path(f"/proc/{zombie.pid}/status").read_text()  # exited, not waited for
        assert soak.read_process(zombie.pid, 1) is None
    finally:
        zombie.wait()


def _result(faults: list[str | None]) -> ladder.RungResult:
    games = [
        ladder.Game(i + 1, i % 2 == 0, 0.5, "draw", fault=f, faulty=ladder.TABULA if f else None)
        for i, f in enumerate(faults)
    ]
    return ladder.RungResult("t", "client", "cmd", games)


def _watched(last_mb: float, pid: int = 7) -> soak.Watched:
    after = [soak.Reading(g, pid, 100.0 if g < 20 else last_mb, 12, 9) for g in range(1, 21)]
    return soak.Watched(after, {pid: after[-1]}, 1)


def test_verdict_holds_memory_to_the_tenth_game_and_counts_faults() -> None:
    quiet = soak.verdict(_result([None] * 20), _watched(109.0), 0.10)
    assert quiet.ok and quiet.growth == pytest.approx(0.09) and quiet.pids == 1
    assert not soak.verdict(_result([None] * 20), _watched(111.0), 0.10).ok  # grew 11%
    timed_out = soak.verdict(_result([None] * 19 + ["time"]), _watched(100.0), 0.10)
    assert (timed_out.faults, timed_out.time_losses, timed_out.ok) == (0, 1, False)
    crashed = soak.verdict(_result(["crash"] + [None] * 19), _watched(100.0), 0.10)
    assert (crashed.faults, crashed.ok) == (1, False)
    five = _watched(100.0)
    short = soak.verdict(_result([None] * 5), soak.Watched(five.after_games[:5], {}, 1), 0.10)
    assert short.growth is None and short.ok  # fewer than ten games: no memory verdict
    left = soak.verdict(_result([None] * 20), _watched(100.0), 0.10, left_running=1)
    assert not left.ok and "left running 1" in left.line()


def _restarted(end_mb: dict[int, float]) -> soak.Watched:
    """A client that starts new engines on the way: pid 100 + k plays games 2k+1 and 2k+2.

    Each process is read small as it starts (after the game before its first), then at the end of its life.
    """
    seen = soak.Watched(most_alive=1)
    for k in range(10):
        pid = 100 + k
        seen.after_games.append(soak.Reading(2 * k, pid, 10.0, 4, 1))  # just started
        seen.last_of[pid] = soak.Reading(2 * k + 1, pid, end_mb.get(pid, 400.0), 6, 5)
    return seen


def test_a_client_that_restarts_the_engine_is_judged_on_each_process_at_the_end_of_its_life() -> None:
    steady = soak.verdict(_result([None] * 20), _restarted({104: 400.0, 109: 430.0}), 0.10)
    assert (steady.rss_tenth_mb, steady.rss_last_mb) == (400.0, 430.0)  # pid 104 played games 9-10
    assert steady.ok and steady.pids == 10 and steady.threads == (1, 5)
    assert not soak.verdict(_result([None] * 20), _restarted({104: 400.0, 109: 450.0}), 0.10).ok


def test_engines_left_running_after_the_match_are_found(tmp_path: Path) -> None:
    program = tmp_path / "tabula-soak-test"
    program.write_text("import time\ntime.sleep(30)\n")
    engine = subprocess.Popen([sys.executable, str(program), "gtp"])
    try:
        deadline = time.monotonic() + 10
        while engine.pid not in soak.engine_pids(str(program), "gtp") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert soak.engines_left(str(program), "gtp", grace_s=0.3) == [engine.pid]
    finally:
        engine.kill()
        engine.wait()
    assert soak.engines_left(str(program), "gtp", grace_s=2.0) == []
