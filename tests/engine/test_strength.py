"""engine/strength.py: the weakened move choice, the calibration table's mapping, and a session searching
at a limited strength (node cap honoured; no move into a mate in one)."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import chess
import numpy as np
import pytest

from engine.options import EngineOptions
from engine.search.limits import SearchLimits
from engine.session import Session
from engine.strength import (
    CalibrationError,
    CalibrationPoint,
    StrengthTable,
    Weakening,
    choose_root_slot,
    monotone_fit,
)
from weights import strength_table_path


def point(
    nodes: int,
    elo: float,
    temperature: float = 0.0,
    margin: float = 0.0,
    full: bool = False,
    low: float | None = None,
    high: float | None = None,
) -> CalibrationPoint:
    return CalibrationPoint(Weakening(nodes, temperature, margin), elo, low, high, elo, 10, full=full)


def table(game: str = "chess") -> StrengthTable:
    """Caps 4, 16, 64 at 800, 1000, 1200; full strength (anchor 1024) at 1400."""
    return StrengthTable(
        game,
        (
            point(4, 800, 1.5, 0.5, low=600, high=1000),
            point(16, 1000, 1.0, 0.3, low=850, high=1150),
            point(64, 1200, 0.5, 0.1, low=1100, high=None),
            point(1024, 1400, full=True, low=1300, high=1500),
        ),
        time_control="5+0.05",
        scale="Stockfish 15.1 UCI_Elo",
    )


# ---- the move choice ---------------------------------------------------------------------------------
def choose(visits, q, proofs=None, allowed=None, best=0, weakening=None, seed=0) -> int:
    visits = np.asarray(visits, np.float64)
    proofs = np.zeros(len(visits), np.int64) if proofs is None else np.asarray(proofs, np.int64)
    allowed = np.ones(len(visits), bool) if allowed is None else np.asarray(allowed, bool)
    weakening = weakening or Weakening(100, 1.0, 0.2)
    rng = np.random.default_rng(seed)
    return choose_root_slot(visits, np.asarray(q, np.float64), proofs, allowed, best, weakening, rng)


def test_temperature_zero_plays_the_most_visited_move() -> None:
    for seed in range(20):
        assert choose([50, 30, 20], [0.1, 0.1, 0.1], weakening=Weakening(100, 0.0, 1.0), seed=seed) == 0


def test_temperature_spreads_over_the_candidates_by_visits() -> None:
    picks = [
        choose([60, 30, 10], [0.0, 0.0, 0.0], weakening=Weakening(100, 1.0, 1.0), seed=s) for s in range(600)
    ]
    counts = np.bincount(picks, minlength=3) / 600
    assert counts[0] > counts[1] > counts[2] > 0  # about 0.6, 0.3, 0.1
    assert abs(counts[0] - 0.6) < 0.08


def test_proven_losses_unvisited_moves_and_far_worse_q_are_never_chosen() -> None:
    visits = [40, 30, 20, 0, 10]
    q = [0.3, -0.9, 0.25, 0.9, 0.2]  # slot 1 far below; slot 3 unvisited
    proofs = [0, 0, 0, 0, -1]  # slot 4 is a proven loss (a move into a mate in one)
    picks = {choose(visits, q, proofs, weakening=Weakening(100, 5.0, 0.2), seed=s) for s in range(300)}
    assert picks == {0, 2}


def test_searchmoves_limit_the_candidates_and_a_proven_win_is_always_played() -> None:
    picks = {choose([40, 40, 40], [0, 0, 0], allowed=[True, False, True], seed=s) for s in range(200)}
    assert picks == {0, 2}
    won = {choose([1, 40, 40], [1.0, 0, 0], proofs=[1, 0, 0], best=0, seed=s) for s in range(50)}
    assert won == {0}


def test_weakening_parses_the_flag_form() -> None:
    assert Weakening.parse("64,0.7,0.2") == Weakening(64, 0.7, 0.2)
    assert Weakening.parse("8") == Weakening(8)
    assert Weakening.parse(Weakening(16, 1.5, 0.3).text()) == Weakening(16, 1.5, 0.3)
    for bad in ("", "x", "0", "1", "8,-1", "8,1,2,3", "8,nan"):
        with pytest.raises(ValueError):
            Weakening.parse(bad)


# ---- the table ---------------------------------------------------------------------------------------
def test_mapping_interpolates_log_nodes_and_is_monotone() -> None:
    t = table()
    assert t.min_elo == 800 and t.max_elo == 1400
    assert t.weakening_at(800) == Weakening(4, 1.5, 0.5)
    middle = t.weakening_at(900)  # halfway from 4 to 16 nodes in log(nodes): 8
    assert middle.nodes == 8
    assert middle.temperature == pytest.approx(1.25) and middle.q_margin == pytest.approx(0.4)
    assert t.weakening_at(1300).nodes == round(math.sqrt(64 * 1024))
    settings = [t.weakening_at(e) for e in range(800, 1400, 10)]
    assert all(a.nodes <= b.nodes for a, b in itertools.pairwise(settings))
    assert all(a.temperature >= b.temperature for a, b in itertools.pairwise(settings))


def test_resolve_clamps_outside_the_range_and_says_so() -> None:
    t = table()
    low = t.resolve(500)
    assert low.elo == 800 and low.weakening == Weakening(4, 1.5, 0.5)
    assert low.note is not None and "below the calibrated range 800..1400" in low.note
    high = t.resolve(2000)
    assert high.weakening is None and high.elo == 1400 and "above" in (high.note or "")
    top = t.resolve(1400)
    assert top.weakening is None and top.note is None  # the full-strength Elo: no limit
    inside = t.resolve(1000)
    assert inside.weakening == Weakening(16, 1.0, 0.3) and inside.note is None


def test_interval_interpolates_offsets_and_keeps_unbounded_sides() -> None:
    t = table()
    assert t.interval_at(800) == (600, 1000)
    low, high = t.interval_at(900)
    assert low == pytest.approx(900 - 175) and high == pytest.approx(900 + 175)
    assert t.interval_at(1100)[1] == math.inf


def test_tables_that_are_not_monotone_or_lack_full_strength_are_refused(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="monotone"):
        StrengthTable("chess", (point(4, 900), point(16, 850), point(1024, 1400, full=True)))
    with pytest.raises(CalibrationError, match="full-strength"):
        StrengthTable("chess", (point(4, 900), point(16, 1000)))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CalibrationError):
        StrengthTable.load(bad)
    bad.write_text(json.dumps({"game": "chess", "points": [{"nodes": 4}]}))
    with pytest.raises(CalibrationError, match="malformed"):
        StrengthTable.load(bad)


def test_table_round_trips_through_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    table().write(path)
    assert StrengthTable.load(path) == table()


def test_the_shipped_chess_table_loads_and_says_what_it_is() -> None:
    path = strength_table_path("chess")
    assert path is not None
    shipped = StrengthTable.load(path)
    assert shipped.game == "chess" and shipped.time_control
    assert shipped.status in ("measured", "placeholder")
    assert shipped.points[-1].full


def test_monotone_fit_pools_violators_by_weight() -> None:
    assert monotone_fit([800, 1000, 1200], [1, 1, 1]) == [800, 1000, 1200]
    assert monotone_fit([800, 1100, 1000, 1300], [1, 1, 1, 1]) == [800, 1050, 1050, 1300]
    assert monotone_fit([900, 800], [3, 1]) == [875, 875]


# ---- a session at limited strength ---------------------------------------------------------------------
#: White to move; Black threatens Re1#.  a3, a4, b3, b4, Na3 and Nc3 allow it; h3, g3, h4, g4, f3, f4 and
#: Nd2 (which blocks on f1) do not.
BACK_RANK = "4r1k1/5ppp/8/8/8/8/PP3PPP/1N4K1 w - - 0 1"


def allows_mate_in_one(fen: str, uci: str) -> bool:
    board = chess.Board(fen)
    board.push_uci(uci)
    for reply in list(board.legal_moves):
        board.push(reply)
        mate = board.is_checkmate()
        board.pop()
        if mate:
            return True
    return False


def test_a_weakened_search_never_moves_into_a_mate_in_one() -> None:
    blunders = {m.uci() for m in chess.Board(BACK_RANK).legal_moves if allows_mate_in_one(BACK_RANK, m.uci())}
    assert blunders >= {"a2a3", "b2b3", "b1c3"}
    # a hot choice with no Q floor: only the proofs of visited moves keep the blunders out
    session = Session("chess", EngineOptions(weakening=Weakening(64, 5.0, 2.0), threads=1))
    try:
        played = set()
        for _ in range(8):
            session.new_game()
            session.set_position(BACK_RANK, [])
            result = session.search(SearchLimits(movetime_ms=20_000))
            assert result.info.nodes <= 64
            played.add(session.state.move_to_text(result.best_move))
        assert not played & blunders, played
    finally:
        session.close()


def test_session_resolves_the_table_and_caps_nodes_for_any_game(tmp_path: Path) -> None:
    path = tmp_path / "go9.json"
    table("go9").write(path)
    options = EngineOptions(limit_strength=True, elo=900, strength_table=str(path), threads=1)
    session = Session("go", options, {"board_size": 9})
    try:
        assert session.weakening() == Weakening(8, 1.25, 0.4)
        assert "strength limited to Elo 900" in session.strength_note()
        result = session.search(SearchLimits(movetime_ms=20_000, nodes=500))
        assert result.info.nodes <= 8
        session.set_options(limit_strength=False)
        assert session.weakening() is None
        assert session.search(SearchLimits(nodes=40)).info.nodes >= 40
    finally:
        session.close()


def test_session_without_a_table_plays_at_full_strength_and_says_why() -> None:
    session = Session("go", EngineOptions(limit_strength=True, elo=1000), {"board_size": 9})
    try:
        assert session.weakening() is None
        assert "no strength calibration for go9" in session.strength_note()
    finally:
        session.close()
