"""The Go root rules of self-play and matches (trainer/selfplay/root_rules.py): the pass rules (``go_pass_rule``):
``tromp-taylor`` (never pass behind, pass back when ahead after the opponent's pass) and ``settled``
(also no pass before every empty point is someone's); and ``go_root_moves``' kept eyes (no move into
one's own true eye)."""

from __future__ import annotations

import pytest

from engine.games import get_game
from engine.games.go import GoState
from trainer.config import SelfPlaySettings
from trainer.selfplay.root_rules import GoRootRules, go_pass_rule, go_root_moves, pass_rule_of, root_rules_of

PASS = 25  # 5x5


def _position(komi: float, moves: list[str]) -> GoState:
    state = get_game("go5", komi=komi).new_state()
    for text in moves:
        state.push(state.parse_move(text))
    assert isinstance(state, GoState)
    return state


def test_behind_never_passes_under_either_rule() -> None:
    state = _position(7.5, [])  # black to move on the empty board, komi 7.5: behind
    legal = [m for m in state.legal_moves() if m != PASS]
    assert go_pass_rule(state, "tromp-taylor") == legal == go_pass_rule(state, "settled")
    assert go_pass_rule(state, "off") is None


def test_ahead_after_the_opponents_pass_passes_back() -> None:
    state = _position(7.5, ["c3", "pass"])  # black's stone owns the board: black far ahead
    assert go_pass_rule(state, "tromp-taylor") == [PASS] == go_pass_rule(state, "settled")


def test_ahead_on_an_unsettled_board_plays_on_only_under_settled() -> None:
    state = _position(-2.5, [])  # black ahead by the (negative) komi, nothing settled yet
    assert go_pass_rule(state, "tromp-taylor") is None  # may pass
    allowed = go_pass_rule(state, "settled")
    assert allowed is not None and PASS not in allowed and len(allowed) == 25


def test_ahead_on_a_settled_board_may_pass() -> None:
    walls = []
    for row in "12345":
        walls += [f"c{row}", f"d{row}"]  # black's wall on c, white's on d: a, b black's; e white's
    state = _position(0.5, walls)  # black to move, 15 against 10 points
    assert state.score() == pytest.approx(4.5)
    assert go_pass_rule(state, "settled") is None and go_pass_rule(state, "tromp-taylor") is None


def test_the_setting_picks_the_rule() -> None:
    assert pass_rule_of(SelfPlaySettings()) == "tromp-taylor"
    assert pass_rule_of(SelfPlaySettings(go_pass_settled=True)) == "settled"
    assert pass_rule_of(SelfPlaySettings(go_pass_rule=False, go_pass_settled=True)) == "off"


def test_kept_eyes_leave_out_the_movers_true_eyes_only() -> None:
    # black to move; black's true eye at A5, white's at E1; black behind (komi 30.5): no pass
    state = GoState.from_text("5 30.5 b .X.../X..../...../....O/...O.")
    a5, e1 = state.vertex_to_point("A5"), state.vertex_to_point("E1")
    plain = go_pass_rule(state, "tromp-taylor")
    assert plain is not None and a5 in plain and PASS not in plain
    kept = go_root_moves(state, GoRootRules("tromp-taylor", keep_eyes=True))
    assert kept == [m for m in plain if m != a5]
    assert e1 not in kept  # white's eye: illegal for black anyway (suicide)
    assert go_root_moves(state, GoRootRules("tromp-taylor")) == plain  # eyes not kept: the pass rule's


def test_a_player_left_with_its_own_eyes_only_passes() -> None:
    # white to move, every empty point a true eye of white's (black has no stone): pass, though white
    # is behind with komi -40 and the pass rule alone would forbid it
    state = GoState.from_text("5 -40.5 w O.O.O/.O.O./O.O.O/.O.O./O.O.O")
    plain = go_pass_rule(state, "tromp-taylor")
    assert plain is not None and PASS not in plain and len(plain) == 12
    assert go_root_moves(state, GoRootRules("tromp-taylor", keep_eyes=True)) == [PASS]
    assert go_root_moves(state, GoRootRules("off", keep_eyes=True)) == [PASS]


def test_the_settings_pick_the_root_rules() -> None:
    assert root_rules_of(SelfPlaySettings()) == GoRootRules("tromp-taylor", keep_eyes=False)
    assert root_rules_of(SelfPlaySettings(go_keep_eyes=True, go_pass_settled=True)) == GoRootRules(
        "settled", keep_eyes=True
    )
