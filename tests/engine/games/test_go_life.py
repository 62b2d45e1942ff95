"""engine.games.go_life: Benson's pass-alive chains and chains dead in atari, on hand-made positions and
on the final position of a real game against GNU Go, counted as its referee counted it."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.games import get_game
from engine.games.go import GoState
from engine.games.go_life import dead_in_atari_points, pass_alive_points
from engine.games.go_ownership import judge
from protocols.sgf import read_game

DATA = Path(__file__).resolve().parents[2] / "data"


def position(rows: str, side: str = "b", komi: float = 7.5) -> GoState:
    lines = rows.split()
    return GoState.from_text(f"{len(lines)} {komi} {side} {'/'.join(lines)}")


def points(state: GoState, *vertices: str) -> set[int]:
    return {state.vertex_to_point(x) for x in vertices}


def test_two_eyes_are_pass_alive_one_eye_is_not() -> None:
    # Black's corner chain has two single-point eyes (A5, C5); the white chain on the right has one (E1).
    state = position(
        """
        .X.X.
        XXXX.
        .....
        ...OO
        ...O.
        """
    )
    black = pass_alive_points(state, 0)
    assert black == points(state, "B5", "D5", "A4", "B4", "C4", "D4")
    assert pass_alive_points(state, 1) == set()


def test_a_big_open_area_is_not_an_eye() -> None:
    state = position(
        """
        .....
        .....
        XXXXX
        .....
        .....
        """
    )
    assert pass_alive_points(state, 0) == set()  # the opponent can live in either region


def test_a_chain_in_atari_with_no_way_out_is_dead() -> None:
    # Black A1-B1 has one liberty (C1); a black stone at C1 would have none: dead.
    state = position(
        """
        .....
        .....
        .....
        OOO..
        XX.O.
        """
    )
    assert dead_in_atari_points(state) == points(state, "A1", "B1")


def test_a_chain_in_atari_that_can_extend_is_left_to_the_estimate() -> None:
    # Black A1-B1 has one liberty (C1), but a black stone there has two (C2, D1).
    state = position(
        """
        .....
        .....
        .....
        OO...
        XX...
        """
    )
    assert dead_in_atari_points(state) == set()


def test_a_stone_taken_in_a_ko_is_not_dead_while_the_retake_is_forbidden() -> None:
    # Black C1 captures white B1; black C1 is then in atari (its liberty B1), but white may not retake
    # at once (ko), so it is not dead by the rule.
    state = position(
        """
        .....
        .....
        .....
        .XO..
        XO.O.
        """
    )
    state.play_as(0, state.vertex_to_point("C1"))
    assert state.board_array()[4].tolist() == [1, 0, 1, 2, 0]  # B1 captured
    assert not state.is_legal_for(1, state.vertex_to_point("B1"))
    assert dead_in_atari_points(state) == set()


def test_the_pass_in_atari_game_is_counted_as_gnu_gos_referee_counted_it() -> None:
    """The final position of ``tests/data/go9-pass-in-atari.sgf``: Black's 12-stone chain on the first
    two rows has one liberty (A1) and no way out.  An estimate that called it alive counted B+21.5;
    the referee (GNU Go) counted W+4.5 with exactly these stones dead."""
    game = read_game((DATA / "go9-pass-in-atari.sgf").read_text())
    state = get_game("go", board_size=9, komi=7.5).new_state()
    assert isinstance(state, GoState)
    for colour, point in game.moves:
        state.play_as(colour, 81 if point is None else point[1] * 9 + point[0], superko=False)
    gnugo_dead = points(state, "A2", "B2", "C2", "D2", "B1", "C1", "D1", "E1", "F1", "G1", "H1", "J1")
    assert dead_in_atari_points(state) == gnugo_dead
    everything_alive = np.sign(state.point_owners()).astype(np.float64)  # the estimate that went wrong
    judgement = judge(state, everything_alive)
    assert set(judgement.dead) == gnugo_dead
    assert judgement.score == -4.5  # W+4.5
    assert not judgement.settled
    # Black has nothing left to gain by playing on (its dead chain cannot be saved, no neutral point
    # is left): it passes rather than throwing stones into White's area; White could still capture.
    assert judgement.neutral == []
    assert not judgement.work_left(state, 0) and judgement.work_left(state, 1)
