"""``decide_genmove``: what ``genmove`` answers, decided from the search result before anything changes."""

from __future__ import annotations

from typing import Any

from engine.games import get_game
from engine.games.go import GoState
from engine.search.score import Score
from engine.search.searcher import PVLine, SearchInfo, SearchResult
from protocols.gtp import GenmoveAction, GenmoveDecision, decide_genmove
from protocols.gtp_format import BLACK, WHITE

SIZE = 5
PASS = SIZE * SIZE


def position(text: str | None = None) -> GoState:
    game = get_game("go", board_size=SIZE, komi=7.5)
    state = game.state_from_text(text) if text else game.new_state()
    assert isinstance(state, GoState)
    return state


def result(best: Any | None, q: float = 0.0) -> SearchResult:
    lines = [] if best is None else [PVLine(best, Score(cp=0), 10, q, 0.5, [best])]
    return SearchResult(best, None, SearchInfo(1, 1, 10, 10, 1, 10, 0, lines), "nodes")


def test_plays_the_chosen_move() -> None:
    state = position()
    assert decide_genmove(result(12), BLACK, state, 0.95) == GenmoveDecision(GenmoveAction.PLAY, 12)


def test_resigns_below_minus_the_threshold_and_never_at_zero() -> None:
    state = position()
    assert decide_genmove(result(12, q=-0.96), BLACK, state, 0.95).action is GenmoveAction.RESIGN
    assert decide_genmove(result(12, q=-0.96), BLACK, state, 0.95).point is None
    assert decide_genmove(result(12, q=-0.94), BLACK, state, 0.95).action is GenmoveAction.PLAY
    assert decide_genmove(result(12, q=-1.0), BLACK, state, 0.0).action is GenmoveAction.PLAY


def test_passes_without_a_move_or_for_one_the_history_forbids() -> None:
    state = position()
    assert decide_genmove(None, BLACK, state, 0.95) == GenmoveDecision(GenmoveAction.PASS, PASS)
    assert decide_genmove(result(None), BLACK, state, 0.95) == GenmoveDecision(GenmoveAction.PASS, PASS)
    assert decide_genmove(result(PASS), WHITE, state, 0.95) == GenmoveDecision(GenmoveAction.PASS, PASS)
    state.push(12)
    assert decide_genmove(result(12), WHITE, state, 0.95) == GenmoveDecision(GenmoveAction.PASS, PASS)


def test_decides_without_changing_the_position() -> None:
    state = position()
    state.push(6)
    before = (state.to_text(), list(state.move_stack))
    decide_genmove(result(7), WHITE, state, 0.95)
    assert (state.to_text(), list(state.move_stack)) == before
