"""UCI transcripts with Syzygy tablebases (``SyzygyPath``, ``SyzygyProbeLimit``) through the real program,
on python-chess's small test tables (tests/data/syzygy: KRvK, KQvK, KQvKR)."""

from __future__ import annotations

import re

import chess
import chess.syzygy
import pytest

from tests.engine.test_chess_tablebase import (
    KQKQ,
    KQKR_WIN,
    KRK_DRAW_BY_CAPTURE,
    KRK_LOST,
    KRK_WIN,
    KRKN,
    SYZYGY,
)
from tests.process import EngineProcess
from tests.protocols.test_uci import bestmove, go, ready, start

#: What varies between two runs of the same node-limited search.
_CLOCK_FIELDS = re.compile(r" (nps|time) \d+")


def _last_info(lines: list[str]) -> str:
    return [line for line in lines if line.startswith("info depth")][-1]


def _with_tables(engine: EngineProcess) -> None:
    engine.send(f"setoption name SyzygyPath value {SYZYGY}")
    assert ready(engine)[0] == f"info string Syzygy: 6 table files (up to 4 pieces) in {SYZYGY}"


def _dtz_best(fen: str) -> set[str]:
    """The winning moves that reach the next capture or pawn move soonest (python-chess's prober)."""
    board = chess.Board(fen)
    lengths: dict[str, int] = {}
    with chess.syzygy.open_tablebase(str(SYZYGY)) as tables:
        for move in board.legal_moves:
            board.push(move)
            dtz = tables.probe_dtz(board)
            board.pop()
            if dtz < 0:
                lengths[move.uci()] = -dtz
    best = min(lengths.values())
    return {m for m, n in lengths.items() if n == best}


def test_tablebase_moves_and_scores(engine_process) -> None:
    """Won: the DTZ-best move at once with ``score cp 20000`` and ``tbhits`` (as Stockfish writes a
    tablebase win); drawn: the one drawing move, ``cp 0``; lost: the longest defence, ``cp -20000``;
    a capture into the tables from a position beyond the probe limit: the win, one ply below the root
    (``cp 19999``)."""
    engine = start(engine_process)
    _with_tables(engine)
    cases = [
        (KRK_WIN, _dtz_best(KRK_WIN), "cp 20000", 17),  # the root and its 16 moves
        (KRK_DRAW_BY_CAPTURE, {"c3b3"}, "cp 0", 4),  # Kxb3 leaves a bare-kings draw: no probe
        (KRK_LOST, {"c3d4"}, "cp -20000", 4),
        # KRvKN's own table is missing, but the capture Rxc4 into KRvK proves the root won
        (KRKN, {"c1c4"}, "cp 20000", 2),
        (KQKR_WIN, _dtz_best(KQKR_WIN), "cp 20000", 23),  # the root and its 22 moves
    ]
    for fen, moves, score, hits in cases:
        engine.send(f"position fen {fen}")
        lines = go(engine, "go nodes 300")
        assert bestmove(lines)[0] in moves, (fen, lines)
        assert f" score {score} " in _last_info(lines) and f" tbhits {hits} " in _last_info(lines), lines
    # at most 3 pieces probed: the 4-piece root is not, its capture into KRvK is (one ply below the root)
    engine.send("setoption name SyzygyProbeLimit value 3")
    engine.send(f"position fen {KRKN}")
    lines = go(engine, "go nodes 300")
    assert bestmove(lines)[0] == "c1c4" and " score cp 19999 " in _last_info(lines), lines
    assert " tbhits 1 " in _last_info(lines), lines
    assert _dtz_best(KRK_WIN) == {"b2a2", "b1c1"}  # a real choice: 13 of the 16 moves win
    assert _dtz_best(KQKR_WIN) == {"e1d2", "e1e2"}  # 17 of the 22 moves win


def test_positions_outside_the_tables_search_as_before(engine_process) -> None:
    """Too many pieces, a missing table, or ``SyzygyProbeLimit`` below the position's pieces: the same
    search, move and report (no ``tbhits``) as without tables."""
    engine = start(engine_process)
    ready(engine)
    positions = [chess.STARTING_FEN, KQKQ, KRK_WIN]
    without = []
    for fen in positions:
        engine.send("ucinewgame")
        engine.send(f"position fen {fen}")
        lines = go(engine, "go nodes 120")
        without.append((_CLOCK_FIELDS.sub("", _last_info(lines)), lines[-1]))
    _with_tables(engine)
    engine.send("setoption name SyzygyProbeLimit value 2")  # KRvK has 3 pieces
    for fen, expected in zip(positions, without, strict=True):
        engine.send("ucinewgame")
        engine.send(f"position fen {fen}")
        lines = go(engine, "go nodes 120")
        assert (_CLOCK_FIELDS.sub("", _last_info(lines)), lines[-1]) == expected
        assert not any(" tbhits " in line for line in lines)
    engine.send("setoption name SyzygyProbeLimit value 3")
    engine.send(f"position fen {KRK_WIN}")
    assert " tbhits 17 " in _last_info(go(engine, "go nodes 120"))


@pytest.mark.parametrize(
    "line, message",
    [
        (
            "setoption name SyzygyPath value /no/such/folder",
            "info string option SyzygyPath unchanged: no such folder '/no/such/folder'",
        ),
        (
            "setoption name SyzygyProbeLimit value 8",
            "info string option SyzygyProbeLimit unchanged: SyzygyProbeLimit must be within 0..7, not 8",
        ),
    ],
)
def test_bad_values_keep_the_engine_working(engine_process, line: str, message: str) -> None:
    engine = start(engine_process)
    _with_tables(engine)
    engine.send(line)
    assert message in ready(engine)
    engine.send(f"position fen {KRK_LOST}")
    lines = go(engine, "go nodes 50")
    assert bestmove(lines)[0] == "c3d4" and " tbhits 4 " in _last_info(lines)  # the old tables still


def test_options_are_declared_and_do_nothing_under_shogi(engine_process) -> None:
    engine = engine_process("uci")
    engine.send("uci")
    lines = engine.read_until(lambda line: line == "uciok", timeout=35)
    assert "option name SyzygyPath type string default <empty>" in lines
    assert "option name SyzygyProbeLimit type spin default 7 min 0 max 7" in lines
    _with_tables(engine)
    engine.send("setoption name UCI_Variant value shogi")
    lines = go(engine, "go nodes 30")
    assert not any(" tbhits " in line for line in lines)
