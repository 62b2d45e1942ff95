"""Syzygy root probes (engine.chess_tablebase) against python-chess's own answers, on the small tables
of python-chess's test data (tests/data/syzygy: KRvK and KQvK, WDL and DTZ)."""

from __future__ import annotations

from pathlib import Path

import chess
import chess.syzygy
import pytest

from engine.chess_tablebase import SyzygyTables
from engine.games.chess import ChessState
from engine.search.proof import Proof
from engine.search.root_verdicts import TABLEBASE_PLIES
from engine.search.score import Score

SYZYGY = Path(__file__).resolve().parents[1] / "data" / "syzygy"
#: KRvK, white to move: a win; three rook moves leave the rook to the black king (draws).
KRK_WIN = "8/8/8/8/8/2k5/1R6/1K6 w - - 0 1"
#: KRvK, black to move: every move loses.
KRK_LOST = "8/8/8/8/8/2k5/1R6/1K6 b - - 0 1"
#: KRvK, black to move: Kxb3 draws, every other move loses.
KRK_DRAW_BY_CAPTURE = "8/8/8/8/8/1Rk5/8/1K6 b - - 1 1"
#: KQvK: Qg8 mates, Kc7 stalemates.
KQK_MATE = "k7/8/1K6/8/8/8/8/6Q1 w - - 0 1"
#: KRvKN (no table here): Rxc4 wins into KRvK; the other moves' tables are missing.
KRKN = "8/8/8/8/2n5/8/1k6/2R1K3 w - - 0 1"
#: KQvKR, white to move: a win in 47 plies to the next capture; 17 of the 22 moves win, two of them
#: (Kd2, Ke2) by the shortest way.
KQKR_WIN = "8/8/4k3/8/2r5/8/8/1Q2K3 w - - 0 1"
#: KQvKQ (no table here), no capture.
KQKQ = "8/8/3k4/7q/8/8/3K4/Q7 w - - 0 1"


@pytest.fixture(scope="module")
def tables() -> SyzygyTables:
    return SyzygyTables(str(SYZYGY))


@pytest.fixture(scope="module")
def reference() -> chess.syzygy.Tablebase:
    return chess.syzygy.open_tablebase(str(SYZYGY))


def _state(fen: str) -> ChessState:
    return ChessState(chess.Board(fen))


def _root_dtz(reference: chess.syzygy.Tablebase, board: chess.Board, move: chess.Move) -> int:
    """Plies from ``board`` to the next capture or pawn move after ``move`` (python-chess)."""
    after = board.copy()
    after.push(move)
    return 1 if board.is_zeroing(move) else 1 + abs(reference.probe_dtz(after))


def test_opens_folders_and_refuses_missing_ones(tables: SyzygyTables, tmp_path: Path) -> None:
    assert (tables.files, tables.max_pieces) == (6, 4)
    assert tables.describe() == f"Syzygy: 6 table files (up to 4 pieces) in {SYZYGY}"
    assert SyzygyTables(f"{tmp_path}:{SYZYGY}").files == 6  # os.pathsep between folders
    with pytest.raises(ValueError, match="no such folder"):
        SyzygyTables(str(tmp_path / "missing"))


def test_won_root_ranks_wins_by_distance_to_zeroing(
    tables: SyzygyTables, reference: chess.syzygy.Tablebase
) -> None:
    board = chess.Board(KRK_WIN)
    verdicts = tables.probe_root(_state(KRK_WIN))
    assert verdicts is not None
    assert set(verdicts.moves) == set(board.legal_moves)
    assert verdicts.hits == 1 + board.legal_moves.count()  # the root, then every move
    for move, verdict in verdicts.moves.items():
        after = board.copy()
        after.push(move)
        wdl = -reference.probe_wdl(after)
        assert verdict.result == (Proof.WIN if wdl == 2 else Proof.DRAW), move
        if verdict.result == Proof.WIN:
            assert verdict.plies == TABLEBASE_PLIES + _root_dtz(reference, board, move)
            assert verdict.score == Score(cp=20000)  # the root itself is in the tables
        else:
            assert verdict.score == Score(cp=0)
    draws = {m.uci() for m, v in verdicts.moves.items() if v.result == Proof.DRAW}
    assert draws == {"b2b4", "b2b3", "b2d2"}


def test_lost_root_prefers_the_longest_defence(
    tables: SyzygyTables, reference: chess.syzygy.Tablebase
) -> None:
    board = chess.Board(KRK_LOST)
    verdicts = tables.probe_root(_state(KRK_LOST))
    assert verdicts is not None
    assert all(v.result == Proof.LOSS and v.score == Score(cp=-20000) for v in verdicts.moves.values())
    longest = max(verdicts.moves, key=lambda m: verdicts.moves[m].plies)
    assert _root_dtz(reference, board, longest) == max(
        _root_dtz(reference, board, m) for m in board.legal_moves
    )


def test_capture_that_draws_and_moves_that_lose(tables: SyzygyTables) -> None:
    verdicts = tables.probe_root(_state(KRK_DRAW_BY_CAPTURE))
    assert verdicts is not None
    results = {m.uci(): v.result for m, v in verdicts.moves.items()}
    assert results == {"c3b3": Proof.DRAW, "c3d4": Proof.LOSS, "c3c4": Proof.LOSS, "c3d2": Proof.LOSS}


def test_mate_and_stalemate_are_the_rules_verdicts(tables: SyzygyTables) -> None:
    verdicts = tables.probe_root(_state(KQK_MATE))
    assert verdicts is not None
    mate = verdicts.moves[chess.Move.from_uci("g1g8")]
    assert (mate.result, mate.plies, mate.score) == (Proof.WIN, 1, Score(cp=12800, mate=1))
    assert verdicts.moves[chess.Move.from_uci("b6c7")].result == Proof.DRAW  # stalemate


def test_fifty_move_clock_turns_slow_wins_into_draws(
    tables: SyzygyTables, reference: chess.syzygy.Tablebase
) -> None:
    """With 70 plies on the clock only the wins whose next zeroing move comes within 29 plies are
    wins (Stockfish's margin: clock + DTZ <= 99)."""
    fen = KRK_WIN.replace(" 0 1", " 70 80")
    board = chess.Board(fen)
    verdicts = tables.probe_root(_state(fen))
    assert verdicts is not None
    wins = {m for m, v in verdicts.moves.items() if v.result == Proof.WIN}
    assert wins == {
        m
        for m in board.legal_moves
        if _root_dtz(reference, board, m) <= 29 and m.uci() not in ("b2b4", "b2b3", "b2d2")
    }
    assert {m.uci() for m in wins} == {"b2a2", "b1c1"}


def test_missing_tables_leave_a_capture_into_the_tables(tables: SyzygyTables) -> None:
    verdicts = tables.probe_root(_state(KRKN))
    assert verdicts is not None
    capture = chess.Move.from_uci("c1c4")
    assert set(verdicts.moves) == {capture}  # the other moves' tables (KRvKN, KvKN) are missing
    assert verdicts.moves[capture].result == Proof.WIN
    assert verdicts.moves[capture].plies == TABLEBASE_PLIES + 1


def test_positions_outside_the_tables_are_not_probed(tables: SyzygyTables) -> None:
    assert tables.probe_root(_state(KQKQ)) is None  # 4 pieces, no table, no capture
    assert tables.probe_root(ChessState()) is None  # 32 pieces
    assert tables.probe_root(_state(KRK_WIN), probe_limit=2) is None  # SyzygyProbeLimit
    assert tables.probe_root(_state(KRK_WIN), probe_limit=0) is None


def test_castling_rights_keep_the_root_out_of_the_tables(tables: SyzygyTables) -> None:
    """A root with castling rights is not in the tables; the positions after its moves (which lose
    the rights) are, found one ply below the root (``cp 19999``)."""
    verdicts = tables.probe_root(_state("4k3/8/8/8/8/8/8/R3K3 w Q - 0 1"))
    assert verdicts is not None
    assert verdicts.hits == len(verdicts.moves)  # no probe of the root
    castle = chess.Move.from_uci("e1c1")
    assert verdicts.moves[castle].result == Proof.WIN
    assert verdicts.moves[castle].score == Score(cp=19999)
