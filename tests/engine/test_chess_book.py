"""Polyglot books (engine.chess_book) on small books written by tests/polyglot.py, and the session's
OwnBook / BookFile / SyzygyPath settings."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import chess
import chess.polyglot
import pytest

from engine.chess_book import PolyglotBook
from engine.options import EngineOptions
from engine.session import Session
from tests.engine.test_chess_tablebase import SYZYGY
from tests.polyglot import write_book

E4, D4 = chess.Move.from_uci("e2e4"), chess.Move.from_uci("d2d4")


@pytest.fixture
def book(tmp_path: Path) -> Path:
    return write_book(
        tmp_path / "book.bin",
        [
            ([], "e2e4", 3),
            ([], "d2d4", 1),
            ([], "a2a3", 0),  # weight 0: a deleted entry
            (["e2e4"], "e7e5", 1),
            (["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"], "e1g1", 1),  # castling (king takes rook)
            (["d2d4"], "e2e5", 5),  # not legal there: never played
        ],
    )


def test_written_books_read_back_with_python_chess(book: Path) -> None:
    with chess.polyglot.open_reader(book) as reader:
        assert {(e.move, e.weight) for e in reader.find_all(chess.Board())} == {(E4, 3), (D4, 1)}


def test_pick_follows_the_weights(book: Path) -> None:
    opened = PolyglotBook(str(book))
    assert opened.describe() == f"book {book}: 6 entries"
    rng = random.Random(1)
    picks = [opened.pick(chess.Board(), rng=rng) for _ in range(400)]
    assert all(p is not None and p.total == 4 for p in picks)
    counts = Counter(p.move for p in picks if p is not None)
    assert set(counts) == {E4, D4}  # never the deleted a2a3
    assert 240 <= counts[E4] <= 360  # 3 in 4 of the picks (expected 300, sd 8.7)
    first = opened.pick(chess.Board(), allowed=[D4])
    assert first is not None and (first.move, first.weight, first.total) == (D4, 1, 1)


def test_out_of_book_illegal_entries_and_castling(book: Path) -> None:
    opened = PolyglotBook(str(book))
    board = chess.Board()
    board.push_uci("d2d4")
    assert opened.pick(board) is None  # its only entry is illegal
    board = chess.Board()
    for move in ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]:
        board.push_uci(move)
    castle = opened.pick(board)
    assert castle is not None and castle.move == chess.Move.from_uci("e1g1")  # standard notation
    assert opened.pick(chess.Board(), allowed=[chess.Move.from_uci("g1f3")]) is None


def test_bad_books_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no such file"):
        PolyglotBook(str(tmp_path / "missing.bin"))
    broken = tmp_path / "broken.bin"
    broken.write_bytes(b"\x00" * 17)
    with pytest.raises(ValueError, match="not a Polyglot book"):
        PolyglotBook(str(broken))


def test_session_book_and_tables_follow_the_options(book: Path, tmp_path: Path) -> None:
    session = Session("chess", EngineOptions())
    assert session.book_move() is None  # no book
    session.set_options(book_file=str(book))
    assert session.book_move() is None  # OwnBook off
    session.set_options(own_book=True)
    choice = session.book_move()
    assert choice is not None and choice.move in (E4, D4)
    session.set_position(None, ["e2e4", "e7e5", "g1f3"])
    assert session.book_move() is None  # out of book
    with pytest.raises(ValueError, match="no such file"):
        session.set_options(book_file=str(tmp_path / "missing.bin"), syzygy_path=str(SYZYGY))
    assert session.options.book_file == str(book) and session.book is not None
    assert session.tablebases is None  # nothing changed
    session.set_options(syzygy_path=str(SYZYGY))
    assert session.tablebases is not None and session.tablebases.files == 6
    session.set_options(syzygy_path="", book_file="")
    assert session.tablebases is None and session.book is None
    session.set_game("shogi")
    session.set_options(book_file=str(book))
    assert session.book_move() is None  # chess only
    session.close()


def test_session_started_with_a_missing_file_plays_on_without(tmp_path: Path) -> None:
    session = Session(
        "chess", EngineOptions(book_file=str(tmp_path / "missing.bin"), syzygy_path=str(SYZYGY))
    )
    assert session.book is None and session.tablebases is None
    assert (session.options.book_file, session.options.syzygy_path) == ("", "")
    session.set_options(hash_mb=64)  # other options still change
    session.close()
