"""UCI transcripts with a Polyglot opening book (``OwnBook``, ``BookFile``) through the real program, and
a cutechess-cli game whose opening comes from the book."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import chess
import chess.pgn
import pytest

from benchmarks.ladder import find_tool
from tests.polyglot import write_book
from tests.protocols.test_uci import assert_legal, bestmove, go, infos, ready, start

REPO = Path(__file__).resolve().parents[2]
#: A Ruy Lopez, one book move for each side at each of its first six plies.
LINE = ["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6"]


@pytest.fixture
def book(tmp_path: Path) -> Path:
    return write_book(tmp_path / "ruy.bin", [(LINE[:i], move, 1) for i, move in enumerate(LINE)])


def test_book_moves_are_played_and_reported(engine_process, book: Path) -> None:
    engine = start(engine_process)
    engine.send("setoption name OwnBook value true")
    engine.send(f"setoption name BookFile value {book}")
    assert infos(ready(engine))[:2] == [
        "info string OwnBook is on but no BookFile is set: the search plays every move",
        f"info string book {book}: 6 entries",
    ]
    for i, move in enumerate(LINE):
        engine.send("position startpos moves " + " ".join(LINE[:i]) if i else "position startpos")
        lines = go(engine, "go wtime 60000 btime 60000")
        assert lines == [f"info string book move {move} (weight 1 of 1)", f"bestmove {move}"]


def test_out_of_book_and_analysis_search(engine_process, book: Path) -> None:
    """Out of book (and ``go infinite``, ``searchmoves`` outside the book) the search plays as before."""
    engine = start(engine_process)
    engine.send("setoption name OwnBook value true")
    engine.send(f"setoption name BookFile value {book}")
    ready(engine)
    engine.send("position startpos moves e2e4 c7c5")
    lines = go(engine, "go nodes 30")
    assert not any("book move" in line for line in lines) and any(
        line.startswith("info depth") for line in lines
    )
    board = chess.Board()
    board.push_uci("e2e4")
    board.push_uci("c7c5")
    assert_legal(board, bestmove(lines)[0])
    engine.send("position startpos")
    assert bestmove(go(engine, "go nodes 30 searchmoves d2d4"))[0] == "d2d4"  # not a book move: searched
    engine.send("go infinite")
    engine.read_until(lambda line: line.startswith("info depth"), timeout=30)
    engine.send("stop")
    assert not any(
        "book move" in line for line in engine.read_until(lambda line: line.startswith("bestmove"))
    )
    engine.send("setoption name OwnBook value false")
    assert not any("book move" in line for line in go(engine, "go nodes 30"))


def test_bad_book_files_keep_the_engine_working(engine_process, tmp_path: Path, book: Path) -> None:
    engine = start(engine_process)
    engine.send(f"setoption name BookFile value {book}")
    engine.send("setoption name OwnBook value true")
    ready(engine)
    broken = tmp_path / "broken.bin"
    broken.write_bytes(b"\x01" * 20)
    for path, message in [
        (tmp_path / "missing.bin", f"no such file '{tmp_path / 'missing.bin'}'"),
        (broken, f"'{broken}' is not a Polyglot book"),
    ]:
        engine.send(f"setoption name BookFile value {path}")
        reply = infos(ready(engine))
        assert len(reply) == 1 and reply[0].startswith(f"info string option BookFile unchanged: {message}"), (
            reply
        )
    engine.send("position startpos")
    assert bestmove(go(engine, "go nodes 30"))[0] == "e2e4"  # the old book is kept
    engine.send("setoption name BookFile value <empty>")
    lines = go(engine, "go nodes 30")
    assert not any("book move" in line for line in lines)
    assert_legal(chess.Board(), bestmove(lines)[0])


def test_options_are_declared(engine_process) -> None:
    engine = engine_process("uci")
    engine.send("uci")
    lines = engine.read_until(lambda line: line == "uciok", timeout=35)
    assert "option name OwnBook type check default false" in lines
    assert "option name BookFile type string default <empty>" in lines


@pytest.mark.slow
def test_cutechess_game_opens_from_the_book(tmp_path: Path, book: Path) -> None:
    """cutechess-cli 1.3.1 plays Tabula against itself with ``option.OwnBook=true option.BookFile=...``:
    the game's first six plies are the book's (played without a search: no evaluation comment), the
    rest searched."""
    cutechess = find_tool("cutechess-cli")
    if cutechess is None:
        pytest.skip("cutechess-cli not in ../shared/tools or on the PATH")
    pgn = tmp_path / "game.pgn"
    engine = f"cmd={sys.executable} arg=-m arg=protocols arg=uci dir={REPO}"
    command = [cutechess, "-engine", "name=A", *engine.split(), "-engine", "name=B", *engine.split()]
    command += ["-each", "proto=uci", "tc=inf", "nodes=30", "option.OwnBook=true", f"option.BookFile={book}"]
    command += ["-maxmoves", "6", "-games", "1", "-pgnout", str(pgn)]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(REPO)}
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    game = chess.pgn.read_game(io.StringIO(pgn.read_text()))
    assert game is not None and game.headers["Termination"] == "adjudication", pgn.read_text()
    nodes = list(game.mainline())
    assert [node.move.uci() for node in nodes[: len(LINE)]] == LINE
    assert all(not node.comment for node in nodes[: len(LINE)])  # book moves: no search
    searched = nodes[len(LINE) :]
    assert len(searched) == 6 and all(re.match(r"[+-]?\d+\.\d+/\d+ ", node.comment) for node in searched)
