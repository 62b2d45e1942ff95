"""Opening suites (trainer/evaluate/opening_suites.py): the shipped suites, each file format, bad suites, and the
pair starts an evaluation plays (trainer/evaluate/evaluate.py's suite_pairs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.games import get_game
from trainer.evaluate.evaluate import EXTRA_PLIES_PER_ROUND, suite_pairs
from trainer.evaluate.opening_suites import Opening, SuiteError, read_suite, shipped_suite


@pytest.mark.parametrize(("label", "at_least"), [("chess", 20), ("shogi", 10), ("go9", 8), ("go19", 8)])
def test_every_shipped_suite_reads_and_is_legal(label: str, at_least: int) -> None:
    game = get_game(label)
    path = shipped_suite(game.info)
    assert path is not None
    openings = read_suite(path, game)
    assert len(openings) >= at_least and len({o.moves for o in openings}) == len(openings)
    for o in openings:
        assert o.position is None and o.state(game).outcome() is None


def test_no_suite_is_shipped_for_other_go_sizes() -> None:
    assert shipped_suite(get_game("go13").info) is None


def test_text_lines_fen_sfen_startpos_and_move_lists(tmp_path: Path) -> None:
    chess_file = tmp_path / "chess.epd"
    chess_file.write_text(
        "# a comment, then a blank line\n\n"
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1\n"
        'rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id "e4";\n'
        "fen rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves d2d4 d7d5\n"
        "startpos moves c2c4\n"
        "g1f3 g8f6\n"
    )
    chess = get_game("chess")
    openings = read_suite(chess_file, chess)
    assert [o.moves for o in openings] == [(), (), ("d2d4", "d7d5"), ("c2c4",), ("g1f3", "g8f6")]
    assert openings[0].position == openings[1].position + " 0 1"  # a FEN and an EPD line of one position
    assert openings[1].state(chess).side_to_move == 1
    shogi_file = tmp_path / "shogi.txt"
    shogi_file.write_text(
        "sfen lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2 moves 3c3d\n"
        "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2\n"
        "position startpos moves 7g7f 3c3d\n"
    )
    shogi = get_game("shogi")
    openings = read_suite(shogi_file, shogi)
    assert [o.moves for o in openings] == [("3c3d",), (), ("7g7f", "3c3d")]
    assert openings[0].state(shogi).side_to_move == 0


def test_sgf_file_with_several_games_and_a_pass(tmp_path: Path) -> None:
    path = tmp_path / "go5.sgf"
    path.write_text("(;GM[1]SZ[5]C[a [bracket\\] inside];B[cc];W[bb])\n(;SZ[5];B[cc];W[])\n")
    openings = read_suite(path, get_game("go5"))
    assert [o.moves for o in openings] == [("C3", "B4"), ("C3", "pass")]


@pytest.mark.parametrize(
    ("name", "text", "label", "message"),
    [
        ("bad.txt", "e2e4\ne2e5\n", "chess", "bad.txt:2: "),
        ("bad.txt", "fen not/a/fen w - - 0 1\n", "chess", "bad.txt:1: "),
        ("mate.txt", "f2f3 e7e5 g2g4 d8h4\n", "chess", "mate.txt:1: the game is over"),
        ("size.sgf", "(;SZ[9];B[cc])", "go5", "board size 9, not 5"),
        ("setup.sgf", "(;SZ[5]AB[aa];W[cc])", "go5", "setup stones"),
        ("off.sgf", "(;SZ[5];B[zz])", "go5", "off the 5x5 board"),
        ("empty.txt", "# nothing\n", "chess", "no openings"),
        ("chess.pgn", "1. e4 e5 *\n", "go9", "a PGN suite is for chess"),
    ],
)
def test_a_bad_suite_names_its_file_and_line(
    tmp_path: Path, name: str, text: str, label: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SuiteError, match=message.replace("(", r"\(")):
        read_suite(path, get_game(label))


def test_suite_pairs_cycle_the_suite_then_add_random_plies() -> None:
    game = get_game("go9")
    suite = [Opening("a", ("E5", "C4")), Opening("b", ("D4", "F6"))]
    starts = suite_pairs(game, suite, 7, np.random.default_rng(1))
    assert starts[:2] == suite
    assert len({s.moves for s in starts}) == 7  # no pair is replayed
    for k, start in enumerate(starts):
        assert start.moves[:2] == suite[k % 2].moves
        assert len(start.moves) == 2 + EXTRA_PLIES_PER_ROUND * (k // 2)
        assert "pass" not in start.moves and start.state(game).outcome() is None
