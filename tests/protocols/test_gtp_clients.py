"""GTP against a real Go program: a full 9x9 game Tabula vs GNU Go, refereed here.

The referee starts both programs as GTP subprocesses (every read has a timeout), gives both the same
board size and komi, and alternates ``genmove`` / ``play`` until two passes in a row, a resignation or
the move cap.  Every move is also played on the project's own rules (:mod:`engine.games.go`), which
must accept it.  The result is then counted twice: Tromp-Taylor on the final position (the project's
``GoState.score``, and Tabula's ``final_score``, which must be identical) and GNU Go's ``final_score``
(Chinese area counting with its dead-stone judgement).  GNU Go runs with ``--capture-all-dead`` so
it removes the dead stones before it passes, which makes the two counts comparable; they must agree
on the winner.
"""

from __future__ import annotations

import dataclasses

import pytest

from engine.games import get_game
from tests.process import GtpPlayer, find_program, tabula_command

GNUGO = find_program("gnugo")
KOMI = 7.5
SIZE = 9
MOVE_CAP = 200

pytestmark = pytest.mark.skipif(GNUGO is None, reason="gnugo is not installed (apt-get install gnugo)")


@dataclasses.dataclass
class GameRecord:
    moves: list[str]
    end: str  # "two passes", "B resigned", "W resigned", "move cap"
    tromp_taylor: str  # the project's count of the final position
    tabula_score: str
    gnugo_score: str


def winner(result: str) -> str:
    """``B``, ``W`` or ``0`` from ``B+3.5`` / ``W+R`` / ``0``."""
    return result[0] if result[:1] in ("B", "W") else "0"


def play_game(tabula: GtpPlayer, gnugo: GtpPlayer, tabula_colour: str) -> GameRecord:
    """Referee one game; Tabula plays ``tabula_colour`` (``b``/``w``)."""
    for player in (tabula, gnugo):
        player.must(f"boardsize {SIZE}")
        player.must("clear_board")
        player.must(f"komi {KOMI}")
    state = get_game("go", board_size=SIZE, komi=KOMI).new_state()
    players = {tabula_colour: tabula, ("w" if tabula_colour == "b" else "b"): gnugo}
    moves: list[str] = []
    colour = "b"
    passes = 0
    end = "move cap"
    while len(moves) < MOVE_CAP:
        mover = players[colour]
        other = players["w" if colour == "b" else "b"]
        move = mover.must(f"genmove {colour}", timeout=60).upper()
        if move == "RESIGN":
            end = f"{colour.upper()} resigned"
            break
        state.play_as(0 if colour == "b" else 1, state.vertex_to_point(move))  # the rules accept it
        other.must(f"play {colour} {move}")
        moves.append(f"{colour.upper()} {move}")
        passes = passes + 1 if move == "PASS" else 0
        if passes == 2:
            end = "two passes"
            break
        colour = "w" if colour == "b" else "b"
    return GameRecord(
        moves, end, state.result_string(), tabula.must("final_score"), gnugo.must("final_score", 120)
    )


@pytest.mark.slow
@pytest.mark.parametrize("tabula_colour", ["b", "w"])
def test_full_game_against_gnugo(tabula_colour: str) -> None:
    assert GNUGO is not None
    tabula = GtpPlayer(
        "tabula", [*tabula_command(), "--boardsize", str(SIZE), "--resign-threshold", "0", "gtp"]
    )
    gnugo = GtpPlayer(
        "gnugo", [GNUGO, "--mode", "gtp", "--chinese-rules", "--capture-all-dead", "--level", "1"]
    )
    try:
        assert tabula.must("protocol_version") == "2" and gnugo.must("protocol_version") == "2"
        assert tabula.must("name") == "Tabula"
        tabula.must("time_settings 0 0.5 1")  # half a second per move
        record = play_game(tabula, gnugo, tabula_colour)
    finally:
        tabula.close()
        gnugo.close()
    sides = ("black", "white") if tabula_colour == "b" else ("white", "black")
    print(
        f"\nTabula ({sides[0]}) vs GNU Go --level 1 ({sides[1]}), 9x9, komi {KOMI}: {len(record.moves)} moves, "
        f"ended by {record.end}"
    )
    print("moves:", " ".join(m.split()[1] for m in record.moves))
    print(
        f"Tromp-Taylor (engine.games.go): {record.tromp_taylor}; Tabula final_score: {record.tabula_score}; "
        f"GNU Go final_score: {record.gnugo_score}"
    )
    assert record.tabula_score == record.tromp_taylor
    if record.end.endswith("resigned"):
        return
    assert winner(record.tromp_taylor) == winner(record.gnugo_score), record
