"""Strength limiting through the real program: UCI and USI ``UCI_LimitStrength`` / ``UCI_Elo`` transcripts
(the search stops at the node cap), GTP's ``--elo`` flag, and bad values (docs/strength.md)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from engine.options import EngineOptions
from engine.strength import CalibrationPoint, StrengthTable, Weakening
from protocols import uci_format as fmt
from tests.process import EngineProcess, tabula_command
from weights import strength_table_path

NODES = re.compile(r"^info depth .* nodes (\d+) ")


def write_table(path: Path, game: str) -> Path:
    """Caps 4 and 16 at 800 and 1000, full strength at 1400."""
    points = (
        CalibrationPoint(Weakening(4, 1.0, 0.3), 800, 600, 1000, 800, 10),
        CalibrationPoint(Weakening(16, 0.5, 0.2), 1000, 850, 1150, 1000, 10),
        CalibrationPoint(Weakening(1024), 1400, 1300, 1500, 1400, 10, full=True),
    )
    StrengthTable(game, points, time_control="5+0.05", scale="Stockfish 15.1 UCI_Elo").write(path)
    return path


def last_nodes(lines: list[str]) -> int:
    counts = [int(m.group(1)) for line in lines if (m := NODES.match(line))]
    assert counts, lines
    return counts[-1]


# ---- declarations --------------------------------------------------------------------------------
def test_uci_declares_the_strength_options_with_the_tables_range() -> None:
    specs = {s.name: s for s in fmt.option_specs(EngineOptions(), (800, 1400))}
    assert (
        specs["UCI_LimitStrength"].declaration() == "option name UCI_LimitStrength type check default false"
    )
    assert specs["UCI_Elo"].declaration() == "option name UCI_Elo type spin default 800 min 800 max 1400"
    assert specs["UCI_Elo"].parse_value("500") == 500  # outside: passed on to be clamped, not refused
    with pytest.raises(fmt.OptionValueError):
        specs["UCI_Elo"].parse_value("strong")
    from_flag = {
        s.name: s for s in fmt.option_specs(EngineOptions(limit_strength=True, elo=1000), (800, 1400))
    }
    assert from_flag["UCI_LimitStrength"].default is True and from_flag["UCI_Elo"].default == 1000
    assert "UCI_Elo" not in {s.name for s in fmt.option_specs(EngineOptions())}


def test_the_shipped_table_sets_the_declared_range(engine_process) -> None:
    path = strength_table_path("chess")
    assert path is not None
    table = StrengthTable.load(path)
    engine: EngineProcess = engine_process("uci")
    engine.send("uci")
    lines = engine.read_until(lambda line: line == "uciok", timeout=35)
    expected = (
        f"option name UCI_Elo type spin default {table.min_elo} min {table.min_elo} max {table.max_elo}"
    )
    assert expected in lines
    assert "option name UCI_LimitStrength type check default false" in lines


# ---- UCI transcript ------------------------------------------------------------------------------
def test_uci_limit_strength_caps_the_nodes_and_keeps_state_on_bad_values(
    engine_process, tmp_path: Path
) -> None:
    table = write_table(tmp_path / "chess.json", "chess")
    engine: EngineProcess = engine_process("--threads", "1", "--strength-table", str(table), "uci")
    engine.send("uci")
    engine.read_until(lambda line: line == "uciok", timeout=35)
    engine.send("debug on")
    engine.send("setoption name UCI_Elo value 1000")
    engine.send("setoption name UCI_Elo value strong")  # refused: 1000 stays
    engine.send("setoption name UCI_LimitStrength value maybe")  # refused: still off
    engine.send("isready")
    lines = engine.read_until(lambda line: line == "readyok", timeout=60)
    said = [line for line in lines if line.startswith("info string option")]
    assert said == [
        "info string option UCI_Elo unchanged: UCI_Elo takes an integer, not 'strong'",
        "info string option UCI_LimitStrength unchanged: UCI_LimitStrength takes true or false, not 'maybe'",
    ]
    engine.send("setoption name UCI_LimitStrength value true")
    line = engine.read_line(timeout=30)
    assert line.startswith(
        "info string strength limited to Elo 1000 [850, 1150] (nodes 16, temperature 0.50"
    ), line
    engine.send("position startpos moves e2e4")
    engine.send("go wtime 60000 btime 60000 winc 1000 binc 1000")
    lines = engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)
    assert last_nodes(lines) == 16  # the node cap, long before the clock's budget
    assert "info string search ended: nodes" in lines
    engine.send("setoption name UCI_Elo value 100")
    line = engine.read_line(timeout=30)
    assert "UCI_Elo 100 is below the calibrated range 800..1400" in line and "playing at 800" in line
    engine.send("go nodes 200")
    assert last_nodes(engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)) == 4
    engine.send("setoption name UCI_Elo value 3000")  # above: full strength
    assert "above the calibrated range" in engine.read_line(timeout=30)
    engine.send("go nodes 60")
    assert last_nodes(engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)) == 60
    engine.send("setoption name UCI_Elo value 800")
    engine.send("setoption name UCI_LimitStrength value false")
    engine.send("go nodes 60")
    assert last_nodes(engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)) == 60
    assert engine.close() == 0


# ---- USI -----------------------------------------------------------------------------------------
def test_usi_takes_the_same_options_when_there_is_a_table(engine_process, tmp_path: Path) -> None:
    table = write_table(tmp_path / "shogi.json", "shogi")
    engine: EngineProcess = engine_process("--threads", "1", "--strength-table", str(table), "usi")
    engine.send("usi")
    lines = engine.read_until(lambda line: line == "usiok", timeout=35)
    assert "option name UCI_LimitStrength type check default false" in lines
    assert "option name UCI_Elo type spin default 800 min 800 max 1400" in lines
    engine.send("setoption name UCI_Elo value 12x")
    assert engine.read_line(timeout=30).startswith("info string bad value for UCI_Elo")
    engine.send("setoption name UCI_LimitStrength value true")
    assert engine.read_line(timeout=30).startswith(
        "info string strength limited to Elo 800 [600, 1000] (nodes 4"
    )
    engine.send("setoption name UCI_Elo value 1000")
    engine.send("isready")
    engine.read_until(lambda line: line == "readyok", timeout=60)
    engine.send("position startpos")
    engine.send("go btime 0 wtime 0 byoyomi 20000")
    assert last_nodes(engine.read_until(lambda line: line.startswith("bestmove"), timeout=60)) == 16
    assert engine.close() == 0


def test_usi_without_a_table_declares_no_strength_options(engine_process) -> None:
    if strength_table_path("shogi") is not None:
        pytest.skip("a shogi table is shipped")
    engine: EngineProcess = engine_process("usi")
    engine.send("usi")
    lines = engine.read_until(lambda line: line == "usiok", timeout=35)
    assert not any("UCI_Elo" in line for line in lines)
    engine.send("setoption name UCI_Elo value 1000")
    assert engine.read_line(timeout=30) == "info string unknown option UCI_Elo: ignored"
    assert engine.close() == 0


# ---- GTP and the flags ---------------------------------------------------------------------------
def test_gtp_elo_flag_limits_the_search_and_says_when_clamped(tmp_path: Path) -> None:
    table = write_table(tmp_path / "go9.json", "go9")
    flags = ["--threads", "1", "--boardsize", "9", "--elo", "100", "--strength-table", str(table), "gtp"]
    done = subprocess.run(
        tabula_command() + flags,
        input="genmove b\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert re.match(r"= [A-HJ]\d\n", done.stdout), done.stdout
    assert "UCI_Elo 100 is below the calibrated range 800..1400" in done.stderr
    assert "nodes 4" in done.stderr


def test_gtp_elo_without_a_table_warns_and_plays(tmp_path: Path) -> None:
    flags = ["--threads", "1", "--boardsize", "9", "--elo", "1000", "gtp"]
    done = subprocess.run(
        tabula_command() + flags,
        input="name\nquit\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("= Tabula")
    assert "no strength calibration for go9" in done.stderr


@pytest.mark.parametrize(
    ("flags", "name"),
    [
        (["--elo", "-5"], "--elo"),
        (["--elo", "high"], "--elo"),
        (["--weakening", "0,1,0.2"], "--weakening"),
        (["--weakening", "64,hot"], "--weakening"),
        (["--strength-table", "/no/such.json"], "--strength-table"),
    ],
)
def test_bad_strength_flags_are_one_error_line_and_exit_status_2(flags: list[str], name: str) -> None:
    done = subprocess.run(
        [*tabula_command(), *flags, "gtp"],
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].startswith(f"Error: Invalid value for '{name}': "), done.stderr
    assert "Traceback" not in done.stderr


def test_a_table_that_is_not_monotone_is_refused_at_the_command_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    data = json.loads(write_table(tmp_path / "t.json", "chess").read_text())
    data["points"][1]["elo"] = 700  # below the weaker setting's 800
    bad.write_text(json.dumps(data))
    done = subprocess.run(
        [*tabula_command(), "--strength-table", str(bad), "uci"],
        input="quit\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "not monotone" in done.stderr, done.stderr
