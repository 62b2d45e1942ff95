"""engine.games.go_ownership: Monte-Carlo ownership, dead stones, seki and the area score with the dead
removed, on positions whose answer a referee would give.  (Checked beside GNU Go's
``final_status_list dead`` on six games against it: the same dead stones in five of them.)"""

from __future__ import annotations

import numpy as np

from engine.games.go import GoState
from engine.games.go_ownership import judge, ownership


def position(rows: str, komi: float = 7.5) -> GoState:
    lines = rows.split()
    return GoState.from_text(f"{len(lines)} {komi} b {'/'.join(lines)}")


#: Two walls; a white stone dead in black's area (A4) and a black one dead in white's (F4).
DEAD_INSIDE = """
..XO...
..XO...
..XO...
O.XO.X.
..XO...
..XO...
..XO...
"""

#: Every point owned, every group with two eyes, nothing dead: a finished game.
FINISHED = """
.X.XO.O
XXXXOOO
.X.XO.O
XXXXOOO
.X.XO.O
XXXXOOO
.X.XO.O
"""


def test_dead_stones_are_removed_before_counting() -> None:
    state = position(DEAD_INSIDE)
    own = ownership(state, 128, np.random.default_rng(1))
    assert own.shape == (49,) and np.all(np.abs(own) <= 1.0)
    judgement = judge(state, own)
    assert [state.point_to_vertex(p) for p in judgement.dead] == ["A4", "F4"]
    # area: black A-C (21 points) against white D-G (28), komi 7.5; Tromp-Taylor counts both stones
    assert judgement.score == -14.5 and state.score() == -7.5
    assert not judgement.settled  # dead stones are on the board: not the time to pass
    assert len(judgement.alive) == 14 and not judgement.seki


def test_a_finished_game_is_settled_and_scores_as_tromp_taylor() -> None:
    state = position(FINISHED)
    judgement = judge(state, ownership(state, 64, np.random.default_rng(2)))
    assert judgement.dead == [] and judgement.settled
    assert judgement.score == state.score() == -0.5


def test_judge_reads_dead_seki_and_settled_from_an_ownership_map() -> None:
    state = position(DEAD_INSIDE)
    own = np.where(state.board_array().reshape(-1) == 2, -1.0, 1.0)  # as if black owned all but white
    own[np.arange(49) % 7 >= 3] = -1.0  # ... white owns its side
    a4, f4 = state.vertex_to_point("A4"), state.vertex_to_point("F4")
    own[a4] = 0.1  # the white stone at A4: neither side owns it (seki-like)
    own[f4] = -1.0  # the black stone at F4: white's
    judgement = judge(state, own)
    assert judgement.dead == [f4]
    assert judgement.seki == [a4] and a4 in judgement.alive
    # the empty points next to A4 are seki liberties, everything else is owned: settled but for F4
    assert not judgement.settled
    without_f4 = judge(state, np.where(np.arange(49) == f4, 1.0, own))  # F4 alive now
    assert without_f4.dead == [] and without_f4.settled


def test_the_estimate_is_reproducible_with_a_seed() -> None:
    state = position(DEAD_INSIDE)
    a = ownership(state, 16, np.random.default_rng(7))
    b = ownership(state, 16, np.random.default_rng(7))
    assert np.array_equal(a, b)
    assert state.to_text() == position(DEAD_INSIDE).to_text()  # the state itself is unchanged
