"""USI against real clients: cshogi's match runner (``python -m cshogi.cli``) playing full games between
`tabula` and Debian's Fairy-Stockfish, and cshogi's Python USI client (``cshogi.usi.Engine``).

cshogi's client has no timeouts at all (a silent engine hangs it forever), so every use here runs under
a hard deadline: the match runner in its own process group, killed when the deadline passes; the Python
client on a helper thread, its engine process killed when the deadline passes.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.process import find_program, tabula_command

FAIRY = find_program("fairy-stockfish")
TSUME = "1n1p1p+B2/lr6l/pp+Bg1s1p1/2s1pPk1p/P1P1P3P/3P5/2NSN1+l1N/1P1K1GRP1/L2GS4 b G2Pp 99"
TSUME_PV = "3h3g P*3e G*2e 3d4d 2e3e 4d3c 1g2e"

#: cshogi.cli result lines (Japanese): "まで<N>手で<side>の<result>".
RESULT_RE = re.compile(r"まで(\d+)手で(.*)")
LOG_LINE_RE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) tabula\.protocol DEBUG (<<|>>) (.*)$")


def tabula_wrapper(directory: Path, log_file: Path) -> Path:
    """An executable that starts `tabula usi` (cshogi starts engines with no arguments, cwd = its folder)."""
    script = directory / "tabula-usi"
    command = " ".join(f"'{part}'" for part in tabula_command())
    script.write_text(f"#!/bin/sh\nexec {command} --threads 1 --log '{log_file}' usi\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def run_match(args: list[str], timeout: float) -> str:
    """``python -m cshogi.cli ARGS`` with a hard deadline (the whole process group is killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cshogi.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"cshogi.cli did not finish within {timeout}s:\n{out.decode('utf-8', 'replace')[-3000:]}")
    text = out.decode("utf-8", "replace")
    assert proc.returncode == 0, text[-3000:]
    return text


def think_times_ms(log_file: Path) -> list[tuple[str, float]]:
    """(go line, milliseconds from reading it to writing its bestmove) from the engine's debug log."""
    pending: tuple[str, dt.datetime] | None = None
    times: list[tuple[str, float]] = []
    for line in log_file.read_text(errors="replace").splitlines():
        m = LOG_LINE_RE.match(line)
        if not m:
            continue
        stamp = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
        if m.group(2) == "<<" and m.group(3).startswith("go"):
            pending = (m.group(3), stamp)
        elif m.group(2) == ">>" and m.group(3).startswith("bestmove") and pending is not None:
            times.append((pending[0], (stamp - pending[1]).total_seconds() * 1000))
            pending = None
    return times


def game_result(text: str) -> str:
    m = RESULT_RE.search(text)
    assert m, text[-2000:]
    return m.group(0)


def csa_ending(csa_dir: Path) -> str:
    """The end marker cshogi.cli wrote to the game's CSA record: ``%TORYO`` (mate or resignation),
    ``%ILLEGAL_MOVE`` (an illegal move), ``ILLEGAL_MOVE`` (perpetual check: a rules loss, not a
    protocol fault), ``%TIME_UP``, ``%SENNICHITE``, ``%JISHOGI``, ``%KACHI`` ..."""
    records = list(csa_dir.glob("*.csa"))
    assert len(records) == 1, records
    lines = [line.strip() for line in records[0].read_text(errors="replace").splitlines()]
    return next(
        line
        for line in reversed(lines)
        if line.lstrip("%").isupper() and not line.startswith(("+", "-", "T"))
    )


def assert_no_fault(text: str, ending: str, loser_is_tabula: Callable[[str], bool]) -> None:
    """No illegal move and no time loss by tabula (``loser_is_tabula(result line)``)."""
    if ending in ("%ILLEGAL_MOVE", "%TIME_UP"):
        assert not loser_is_tabula(game_result(text)), f"tabula lost by {ending}: {game_result(text)}"


@pytest.mark.slow
@pytest.mark.skipif(FAIRY is None, reason="fairy-stockfish is not installed")
def test_cshogi_match_against_fairy_stockfish_byoyomi(tmp_path: Path) -> None:
    log_file = tmp_path / "tabula.log"
    engine = tabula_wrapper(tmp_path, log_file)
    byoyomi = 300
    text = run_match(
        [
            str(engine),
            str(FAIRY),
            "--games",
            "1",
            "--byoyomi",
            str(byoyomi),
            "--draw",
            "160",
            "--name1",
            "tabula",
            "--name2",
            "fairy-stockfish",
            "--csa",
            str(tmp_path / "csa"),
            "--options2",
            "Skill Level:-20,Threads:1,Hash:16",
        ],
        timeout=420,
    )
    result, ending = game_result(text), csa_ending(tmp_path / "csa")
    print(f"\ncshogi.cli tabula (sente) vs fairy-stockfish, byoyomi {byoyomi} ms: {result} ({ending})")
    assert_no_fault(text, ending, lambda line: "先手の" in line and "負け" in line)
    times = think_times_ms(log_file)
    assert len(times) >= 5, "tabula played too few moves"
    ms = sorted(t for _, t in times)
    in_time = sum(t < byoyomi for t in ms) / len(ms)
    print(
        f"tabula moves: {len(ms)}, go -> bestmove median {ms[len(ms) // 2]:.0f} ms, slowest {ms[-1]:.0f} ms, "
        f"{100 * in_time:.0f}% within the byoyomi of {byoyomi} ms"
    )
    # The engine plans byoyomi - MoveOverhead (100 ms).  On a machine shared by many processes a move
    # can still run late (CPU starvation); cshogi's client forgives up to 1 s when it keeps clocks.
    assert ms[len(ms) // 2] < byoyomi - 50 and in_time >= 0.9 and ms[-1] < byoyomi + 1000, times


@pytest.mark.slow
def test_cshogi_match_with_ponder_and_main_time(tmp_path: Path) -> None:
    """Pondering (``ponderhit`` on a hit, ``stop`` + ``bestmove`` on a miss, ``gameover`` while a
    ponder search runs) with main time plus byo-yomi, tabula against itself (Fairy-Stockfish 11.1
    overspends its main time when it ponders under cshogi's client and loses on time, which would end
    the game before pondering is exercised)."""
    logs = [tmp_path / "a" / "tabula.log", tmp_path / "b" / "tabula.log"]
    engines = []
    for log_file in logs:
        log_file.parent.mkdir()
        engines.append(str(tabula_wrapper(log_file.parent, log_file)))
    text = run_match(
        [
            *engines,
            "--games",
            "1",
            "--time",
            "6000",
            "--byoyomi",
            "200",
            "--draw",
            "60",
            "--ponder",
            "--name1",
            "tabula-a",
            "--name2",
            "tabula-b",
            "--csa",
            str(tmp_path / "csa"),
        ],
        timeout=420,
    )
    result, ending = game_result(text), csa_ending(tmp_path / "csa")
    print(f"\ncshogi.cli tabula vs tabula, 6 s + byoyomi 200 ms, ponder: {result} ({ending})")
    assert_no_fault(text, ending, lambda line: True)
    both = "".join(log.read_text(errors="replace") for log in logs)
    print(f"ponderhits {both.count('<< ponderhit')}, stops (ponder misses) {both.count('<< stop')}")
    assert "<< go ponder" in both and "<< stop" in both and "<< gameover" in both
    for log in logs:  # every go got its bestmove (ponder searches included)
        text_log = log.read_text(errors="replace")
        assert text_log.count("<< go") == text_log.count(">> bestmove"), log


# ---- cshogi.usi.Engine (the Python client) --------------------------------------------------------
def within(seconds: float, engine: Any, work: Callable[[], Any]) -> Any:
    """Run ``work`` on a thread; past the deadline kill the engine process and fail."""
    box: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            box.append(work())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        if engine.proc is not None:
            engine.proc.kill()
        pytest.fail(f"cshogi.usi.Engine call did not return within {seconds}s")
    if errors:
        raise errors[0]
    return box[0]


def test_cshogi_python_client(tmp_path: Path) -> None:
    from cshogi.usi import Engine, InfoListener, MultiPVListener

    engine = Engine(str(tabula_wrapper(tmp_path, tmp_path / "tabula.log")), connect=False)
    within(30, engine, engine.connect)
    try:
        assert engine.name == "Tabula"
        lines = within(10, engine, engine.usi)
        assert "option name USI_Hash type spin default 256 min 1 max 1048576" in lines
        engine.setoption("USI_Hash", 64)
        engine.setoption("USI_Ponder", "false")
        within(60, engine, engine.isready)
        engine.usinewgame()
        engine.position(["7g7f", "3c3d"])
        listener = InfoListener()
        best, ponder = within(30, engine, lambda: engine.go(byoyomi=400, listener=listener.listen()))
        assert best == listener.bestmove and re.fullmatch(
            r"[1-9][a-i][1-9][a-i]\+?|[PLNSGBR]\*[1-9][a-i]", best
        )
        assert listener.score is not None and listener.pv and listener.pv[0] == best
        assert ponder is None or ponder == listener.pv[1]
        engine.position(sfen=f"sfen {TSUME}")
        assert within(30, engine, lambda: engine.go_mate(byoyomi=5000)) == TSUME_PV
        engine.setoption("MultiPV", 2)
        engine.position(["2g2f"])
        multipv = MultiPVListener()
        within(30, engine, lambda: engine.go(nodes=150, listener=multipv.listen()))
        infos = multipv.info
        assert len(infos) == 2 and infos[0]["multipv"] == 1 and infos[1]["multipv"] == 2
        engine.gameover()
        within(30, engine, engine.isready)
    finally:
        within(20, engine, engine.quit)
