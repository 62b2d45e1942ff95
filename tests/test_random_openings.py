"""benchmarks/random_openings.py: random opening lines, replayable, distinct and kept near balance."""

from __future__ import annotations

import chess
import pytest

from benchmarks import random_openings
from tests.process import find_program

pytestmark = pytest.mark.skipif(find_program("stockfish") is None, reason="needs Stockfish (apt-get)")


def test_random_openings_replay_to_their_positions_and_are_distinct() -> None:
    lines = random_openings.random_openings(count=5, plies=6, depth=4, cp=80, seed=3)
    assert len(lines) == 5
    positions = set()
    for line in lines:
        epd, rest = line.split(" id ", 1)
        moves = rest.split('"')[1].split()
        assert len(moves) == 6
        board = chess.Board()
        for move in moves:
            board.push_uci(move)  # raises on an illegal move
        assert board.epd() == epd
        score = int(rest.split('"')[3].split()[1])
        assert abs(score) <= 80
        positions.add(epd)
    assert len(positions) == 5
    assert random_openings.random_openings(5, 6, 4, 80, 3) == lines  # the seed fixes the suite


@pytest.mark.skipif(find_program("fairy-stockfish") is None, reason="needs Fairy-Stockfish (apt-get)")
def test_random_shogi_openings_are_legal_distinct_cshogi_lines() -> None:
    import cshogi

    lines = random_openings.random_shogi_openings(count=4, plies=6, depth=4, cp=200, seed=2)
    assert len(lines) == 4
    positions = set()
    for line in lines:
        assert line.startswith("startpos moves ")
        board = cshogi.Board()
        for usi in line.split()[2:]:
            move = board.move_from_usi(usi)
            assert board.is_legal(move)
            board.push(move)
        assert board.move_number == 7
        positions.add(board.sfen())
    assert len(positions) == 4
    assert random_openings.random_shogi_openings(4, 6, 4, 200, 2) == lines
