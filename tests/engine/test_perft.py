"""engine.perft: the engine's move generation counted against published perft figures, python-chess
(chess, Chess960 included) and cshogi (shogi) on many positions."""

from __future__ import annotations

import random

import chess
import cshogi
import pytest

from engine.games import get_game
from engine.games.shogi_rules_kernel import perft_divide_state
from engine.perft import fast_perft_divide, format_divide, perft, perft_divide

#: Published perft figures (chessprogramming.org, "Perft Results").
KNOWN_CHESS = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", [20, 400, 8902, 197281]),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", [48, 2039, 97862]),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", [14, 191, 2812, 43238]),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", [6, 264, 9467]),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", [44, 1486, 62379]),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", [46, 2079, 89890]),
]
#: Chess960 starting arrays with castling both ways (published: 1st and 2nd positions of the 960 list).
KNOWN_960 = [
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", [21, 528, 12189]),
    ("2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9", [21, 807, 18002]),
]
#: Shogi from the start (published, e.g. YaneuraOu's and cshogi's perft).
KNOWN_SHOGI_START = [30, 900, 25470]


def reference_chess(board: chess.Board, depth: int) -> int:
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += reference_chess(board, depth - 1)
        board.pop()
    return total


def reference_shogi(board: cshogi.Board, depth: int) -> int:
    moves = list(board.legal_moves)
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        board.push(move)
        total += reference_shogi(board, depth - 1)
        board.pop()
    return total


def random_positions(start_fens: list[str], count: int, seed: int, chess960: bool = False) -> list[str]:
    """``count`` positions reached by random play from the starts (every kind of move turns up)."""
    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        board = chess.Board(rng.choice(start_fens), chess960=chess960)
        for _ in range(rng.randrange(1, 60)):
            moves = list(board.legal_moves)
            if not moves:
                break
            # prefer captures, promotions and castling now and then, so they are well represented
            special = [m for m in moves if board.is_capture(m) or m.promotion or board.is_castling(m)]
            board.push(rng.choice(special if special and rng.random() < 0.4 else moves))
            if board.legal_moves.count() and rng.random() < 0.08:
                found.append(board.fen())
                break
    return found


@pytest.mark.parametrize(("fen", "counts"), KNOWN_CHESS + KNOWN_960, ids=lambda x: str(x)[:20])
def test_chess_perft_matches_published_figures(fen: str, counts: list[int]) -> None:
    chess960 = any(fen == f for f, _ in KNOWN_960)
    state = get_game("chess", chess960=chess960).state_from_text(fen)
    for depth, expected in enumerate(counts, start=1):
        assert perft(state, depth) == expected
    assert state.to_text() == chess.Board(fen, chess960=chess960).fen()  # unchanged


def test_chess_perft_equals_python_chess_on_many_positions() -> None:
    starts = [fen for fen, _ in KNOWN_CHESS]
    positions = random_positions(starts, 200, seed=1)
    game = get_game("chess")
    kinds = {"ep": 0, "promotion": 0, "castling": 0, "check": 0}
    for fen in positions:
        board = chess.Board(fen)
        kinds["ep"] += board.has_legal_en_passant()
        kinds["promotion"] += any(m.promotion for m in board.legal_moves)
        kinds["castling"] += any(board.is_castling(m) for m in board.legal_moves)
        kinds["check"] += board.is_check()
        assert perft(game.state_from_text(fen), 2) == reference_chess(board, 2), fen
    assert len(positions) == 200 and all(n > 0 for n in kinds.values()), kinds
    for fen in positions[:12]:
        assert perft(game.state_from_text(fen), 3) == reference_chess(chess.Board(fen), 3), fen


def test_chess960_perft_equals_python_chess() -> None:
    starts = [chess.Board.from_chess960_pos(n).fen() for n in (0, 100, 518, 959)]
    positions = random_positions(starts, 30, seed=2, chess960=True)
    game = get_game("chess", chess960=True)
    for fen in positions:
        board = chess.Board(fen, chess960=True)
        assert perft(game.state_from_text(fen), 2) == reference_chess(board, 2), fen


def test_shogi_perft_matches_cshogi() -> None:
    game = get_game("shogi")
    start = game.new_state()
    assert [perft(start, d) for d in (1, 2, 3)] == KNOWN_SHOGI_START
    rng = random.Random(3)
    checked = 0
    while checked < 100:
        board = cshogi.Board()
        for _ in range(rng.randrange(10, 120)):
            moves = list(board.legal_moves)
            if not moves:
                break
            board.push(rng.choice(moves))
        if board.is_game_over():
            continue
        sfen = board.sfen()
        depth = 3 if checked < 5 else 2
        assert perft(game.state_from_text(sfen), depth) == reference_shogi(cshogi.Board(sfen), depth), sfen
        checked += 1


def test_shogi_fast_perft_is_the_compiled_rules_and_equals_cshogi() -> None:
    """``go perft`` in USI counts with the compiled shogi rules: the same moves, order and counts as the
    Python divide on cshogi."""
    game = get_game("shogi")
    rng = random.Random(5)
    for plies in (0, 15, 40, 70):
        state = game.new_state()
        for _ in range(plies):
            moves = state.legal_moves()
            if not moves:
                break
            state.push(rng.choice(moves))
        compiled = perft_divide_state(state, 2)
        assert fast_perft_divide(state, 2) == compiled == perft_divide(state, 2)


def test_divide_and_its_format() -> None:
    state = get_game("chess").new_state()
    counts = perft_divide(state, 2)
    assert len(counts) == 20 and sum(n for _, n in counts) == 400
    lines = format_divide([(state.move_to_text(m), n) for m, n in counts])
    assert "a2a3: 20" in lines and lines[-3:] == ["", "Nodes searched: 400", ""]
    assert perft(state, 0) == 1
