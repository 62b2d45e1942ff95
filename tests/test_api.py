"""The Python API (``tabula/``): analyse and play positions of the three games in-process."""

from __future__ import annotations

import dataclasses

import pytest

import tabula
from engine.games import IllegalMoveError, get_game
from engine.search.limits import SearchLimits
from engine.session import Session


def test_chess_analysis_returns_ranked_legal_moves_as_values() -> None:
    with tabula.Engine("chess") as engine:
        analysis = engine.analyse(moves=["e2e4", "e7e5"], visits=120, lines=4)
    state = get_game("chess").new_state()
    for text in ("e2e4", "e7e5"):
        state.push(state.parse_move(text))
    legal = {state.move_to_text(m) for m in state.legal_moves()}
    assert analysis.game == "chess" and analysis.position == state.to_text()
    assert analysis.visits >= 120 and analysis.stop_reason == "nodes"
    assert 1 <= len(analysis.moves) <= 4
    assert analysis.best_move == analysis.moves[0].move and analysis.best_move in legal
    visits = [m.visits for m in analysis.moves]
    assert visits == sorted(visits, reverse=True)
    first = analysis.moves[0]
    assert first.pv[0] == first.move and 0.0 <= first.winrate <= 1.0 and sum(first.wdl) == 1000
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.visits = 0  # type: ignore[misc]


def test_play_is_the_sessions_node_limited_search() -> None:
    moves = ["7g7f", "3c3d"]
    session = Session("shogi")
    try:
        session.ensure_ready()
        session.set_position(None, moves)
        want = session.state.move_to_text(session.search(SearchLimits(nodes=150)).best_move)
    finally:
        session.close()
    with tabula.Engine("shogi") as engine:
        assert engine.play(moves=moves, visits=150) == want


def test_go_game_analysis_has_one_answer_a_turn() -> None:
    with tabula.Engine("go9", komi=7.0) as engine:
        turns = engine.analyse_game(["E5", "C3", "G7"], visits=30, lines=2)
    assert len(turns) == 4
    assert [t.position.split()[2] for t in turns] == ["b", "w", "b", "w"]
    assert all(t.best_move is not None and len(t.moves) <= 2 for t in turns)


def test_a_mate_is_reported_and_an_illegal_move_refused() -> None:
    mate_in_one = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"
    analysis = tabula.analyse("chess", position=mate_in_one, visits=30)
    assert analysis.best_move == "a1a8" and analysis.moves[0].mate == 1
    with tabula.Engine("chess") as engine, pytest.raises(IllegalMoveError):
        engine.analyse(moves=["e2e5"])
