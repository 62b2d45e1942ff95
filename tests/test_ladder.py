"""benchmarks/ladder.py: the rung tables and the OpenSpiel opponents' protocol (no full games here)."""

from __future__ import annotations

import chess
import pytest

pytest.importorskip("pyspiel")

from benchmarks.ladder import Game, RungResult, selected
from benchmarks.openspiel_bots import ChessMcts, GoMctsGtp
from engine.games import get_game


def test_rung_result_line_and_summary_row() -> None:
    result = RungResult(
        "go9 1 s/move vs GNU Go --level 0", [Game(1.0, "W+3.5", 60), Game(0.0, "resigned", 80)]
    )
    assert result.line() == f"go9 1 s/move vs GNU Go --level 0: Tabula {result.match.describe()} over 2 games"
    row = result.row()
    assert row.startswith("| go9 1 s/move vs GNU Go --level 0 | 2 | +1 =0 -1 | 50% | +0 [")
    assert row.endswith("| 70 |")


def test_selected_keeps_ladder_order_and_refuses_unknown_keys() -> None:
    rungs = {"a": 1, "b": 2, "c": 3}
    assert list(selected(rungs, ["c", "a"])) == ["a", "c"]
    assert selected(rungs, None) == rungs
    with pytest.raises(SystemExit, match="unknown rungs z"):
        selected(rungs, ["z"])


def test_openspiel_chess_bot_answers_a_legal_move_in_san() -> None:
    board = chess.Board("r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3")
    move = board.parse_san(ChessMcts(10, seed=1).move_san(board.fen()))
    assert move in board.legal_moves


def test_openspiel_go_bot_speaks_the_ladders_gtp() -> None:
    bot = GoMctsGtp(10, seed=2)
    for command in ("boardsize 5", "clear_board", "komi 7.5", "play b C3"):
        assert bot.must(command) == ""
    state = get_game("go", board_size=5, komi=7.5).new_state()
    state.play_as(0, state.vertex_to_point("C3"))
    for colour in ("w", "b", "w"):
        vertex = bot.must(f"genmove {colour}")
        point = state.vertex_to_point(vertex)
        assert point in state.legal_moves()  # the same vertex names, legal under Tabula's rules
        state.play_as(0 if colour == "b" else 1, point)
    with pytest.raises(ValueError, match="illegal"):
        bot.must("play b C3")  # occupied


def test_the_rungs_above_the_lowest_skill_climb_in_single_levels() -> None:
    """Chess ends Skill Level 1, 2, 3 after the lowest settings; shogi has -3 and -1 between -5 and 0."""
    from benchmarks.ladder import chess_rungs, shogi_rungs
    from tests.process import find_program

    if find_program("stockfish") is not None:
        rungs = chess_rungs()
        assert list(rungs)[-4:] == ["sf-elo", "sf-skill1", "sf-skill2", "sf-skill3"]
        assert rungs["sf-skill2"].options == {"Skill Level": 2}
    if find_program("fairy-stockfish") is not None:
        assert [k for k in shogi_rungs() if k.startswith("fairy")][-4:] == [
            "fairy-5",
            "fairy-3",
            "fairy-1",
            "fairy0",
        ]
