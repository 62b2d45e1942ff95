"""benchmarks/strength_calibration.py: its plan, the cutechess-cli command lines (built, not played), the
table it writes from results and the check's verdict."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from benchmarks.ladder import OPENINGS, Game, RungResult, Settings
from benchmarks.strength_calibration import (
    DEFAULT_PLAN,
    PlanPoint,
    check_command,
    check_plan,
    check_verdict,
    fitted_table,
    measured_point,
    point_command,
    stockfish_elo_range,
)
from engine.strength import CalibrationPoint, StrengthTable, Weakening
from tests.process import find_program

BOOK = OPENINGS / "chess.pgn"  # the suite the calibration plays


def settings(tmp_path: Path, games: int = 10) -> Settings:
    return Settings(games=games, tabula=["/venv/bin/tabula"], out=tmp_path, tc="5+0.05")


def games(points: list[float]) -> list[Game]:
    return [Game(k + 1, k % 2 == 0, p, "mate") for k, p in enumerate(points)]


def test_point_command_fixes_the_weakening_on_tabulas_command_line(tmp_path: Path) -> None:
    point = PlanPoint(Weakening(64, 0.6, 0.15), 1350)
    command = point_command(
        "/tools/cutechess-cli", settings(tmp_path), point, "/usr/games/stockfish", tmp_path, BOOK
    )
    assert command[:9] == [
        "/tools/cutechess-cli",
        "-engine",
        "name=Tabula",
        "cmd=/venv/bin/tabula",
        "arg=--weakening",
        "arg=64,0.6,0.15",
        "arg=uci",
        f"stderr={tmp_path / 'tabula.stderr'}",
        "-engine",
    ]
    tail = command[command.index("name=Stockfish UCI_Elo 1350") :]
    assert tail[:6] == [
        "name=Stockfish UCI_Elo 1350",
        "cmd=/usr/games/stockfish",
        "option.Threads=1",
        "option.Hash=16",
        "option.UCI_LimitStrength=true",
        "option.UCI_Elo=1350",
    ]
    assert "tc=5+0.05" in command and f"file={BOOK}" in command
    assert command[command.index("-repeat") :][:5] == ["-repeat", "-games", "2", "-rounds", "5"]
    full = point_command("c", settings(tmp_path), PlanPoint(None, 1500), "sf", tmp_path, BOOK)
    assert "arg=--weakening" not in full and "option.UCI_Elo=1500" in full


def test_check_command_sets_the_options_as_a_gui_does(tmp_path: Path) -> None:
    command = check_command("c", settings(tmp_path, 20), 1400, 1400, "sf", tmp_path, BOOK)
    tabula = command[: command.index("-engine", 2)]
    assert tabula[-3:] == [
        "option.UCI_LimitStrength=true",
        "option.UCI_Elo=1400",
        f"stderr={tmp_path / 'tabula.stderr'}",
    ]
    assert "option.UCI_Elo=1400" in command[len(tabula) :]
    assert command[command.index("-rounds") + 1] == "10"


def test_plan_points_parse_and_the_plan_is_checked() -> None:
    assert PlanPoint.parse("16,1,0.3@1350") == PlanPoint(Weakening(16, 1.0, 0.3), 1350)
    assert PlanPoint.parse("full@1500") == PlanPoint(None, 1500)
    assert PlanPoint.parse("full@1500").key == "full-sf1500"
    for bad in ("16,1,0.3", "16@x", "0@1350"):
        with pytest.raises(ValueError):
            PlanPoint.parse(bad)
    check_plan(DEFAULT_PLAN)
    with pytest.raises(ValueError, match="rise"):
        check_plan([PlanPoint(Weakening(16), 1350), PlanPoint(Weakening(4), 1350), PlanPoint(None, 1500)])
    with pytest.raises(ValueError, match="full"):
        check_plan([PlanPoint(Weakening(4), 1350), PlanPoint(Weakening(16), 1350)])


def test_measured_point_is_the_opponents_elo_plus_the_match_difference() -> None:
    result = RungResult("t", "cutechess-cli", "cutechess-cli ...", games([1, 0.5, 0, 0.5, 1, 0.5, 0.5, 0.5]))
    p = measured_point(PlanPoint(Weakening(16, 1, 0.3), 1350), result, "2026-11-29")
    diff, low, high, _ = result.elo()
    assert p.elo == pytest.approx(1350 + diff) and p.low == pytest.approx(1350 + low)
    assert p.high == pytest.approx(1350 + high) and p.games == 8 and not p.full
    assert p.command == "cutechess-cli ..." and p.date == "2026-11-29"
    lost = measured_point(PlanPoint(None, 1500), RungResult("t", "c", "c", games([0, 0])), "d")
    assert lost.full and lost.low is None and lost.elo < 1500  # a nil score: no lower bound


def test_fitted_table_is_monotone_and_keeps_full_strength() -> None:
    def measured(nodes: int, elo: float, full: bool = False) -> CalibrationPoint:
        return CalibrationPoint(Weakening(nodes, 1.0, 0.2), elo, elo - 150, elo + 150, elo, 10, full=full)

    points = [measured(4, 900), measured(16, 1150), measured(64, 1100), measured(1024, 1400, full=True)]
    table = fitted_table(points, "5+0.05", "Stockfish 15.1 UCI_Elo", "note")
    assert [p.weakening.nodes for p in table.points] == [4, 64, 1024]  # 16 tied with 64 at 1125: dropped
    assert [p.elo for p in table.points] == [900, 1125, 1400]
    assert table.points[1].measured_elo == 1100  # the measurement is kept beside the fit
    flat = [measured(4, 1400), measured(16, 1300), measured(1024, 1200, full=True)]
    with pytest.raises(ValueError, match="alike"):
        fitted_table(flat, "5+0.05", "s", "n")


def test_check_passes_within_the_calibrations_interval_only() -> None:
    table = StrengthTable(
        "chess",
        (
            CalibrationPoint(Weakening(4), 1200, 1100, 1300, 1200, 20),
            CalibrationPoint(Weakening(1024), 1600, 1500, 1700, 1600, 20, full=True),
        ),
    )
    even = check_verdict(table, 1400, 1400, games([1, 0] * 10))
    assert even.passed and even.low_score == pytest.approx(0.36, abs=0.01)
    crushed = check_verdict(table, 1400, 1400, games([0] * 20))
    assert not crushed.passed and "FAIL" in crushed.line()
    # Stockfish's lowest is above 1250: the table's [1150, 1350] there, as scores against 1350
    below = check_verdict(table, 1250, 1350, games([1, 0.5] * 10))
    assert below.opponent_elo == 1350 and math.isclose(below.high_score, 0.5) and not below.passed
    assert check_verdict(table, 1250, 1350, games([1, 0, 0, 0] * 5)).passed


@pytest.mark.skipif(find_program("stockfish") is None, reason="stockfish not installed")
def test_the_installed_stockfishs_elo_range_is_read() -> None:
    low, high = stockfish_elo_range(str(find_program("stockfish")))
    assert 1000 <= low < high
