"""The compiled chess rules (engine/games/chess_kernel.py) against python-chess and ChessState: perft on
published figures and on 200+ positions, legal moves, repetitions, the fifty-move rule, outcomes, the
119 input planes and the policy indices on every position of many random games."""

from __future__ import annotations

import random
from collections.abc import Iterator

import chess
import numpy as np
import pytest

from engine.games import chess_kernel as ck
from engine.games.chess import ChessRules, ChessState

#: Published perft figures: chessprogramming.org "Perft Results" positions 1-6, two Chess960 positions
#: of its Chess960 list, and the TalkChess suite of special cases (illegal e.p., e.p. giving check,
#: castling giving check, castling rights, promotions out of and into check, underpromotion to check,
#: stalemate and checkmate).  ``(fen, chess960, depth, perft)``.
PUBLISHED: list[tuple[str, bool, int, int]] = [
    ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", False, 5, 4865609),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", False, 4, 4085603),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", False, 5, 674624),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", False, 4, 422333),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", False, 4, 2103487),
    ("r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10", False, 4, 3894594),
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", True, 4, 326672),
    ("2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9", True, 4, 667366),
    ("3k4/3p4/8/K1P4r/8/8/8/8 b - - 0 1", False, 6, 1134888),
    ("8/8/4k3/8/2p5/8/B2P2K1/8 w - - 0 1", False, 6, 1015133),
    ("8/8/1k6/2b5/2pP4/8/5K2/8 b - d3 0 1", False, 6, 1440467),
    ("5k2/8/8/8/8/8/8/4K2R w K - 0 1", False, 6, 661072),
    ("3k4/8/8/8/8/8/8/R3K3 w Q - 0 1", False, 6, 803711),
    ("r3k2r/1b4bq/8/8/8/8/7B/R3K2R w KQkq - 0 1", False, 4, 1274206),
    ("r3k2r/8/3Q4/8/8/5q2/8/R3K2R b KQkq - 0 1", False, 4, 1720476),
    ("2K2r2/4P3/8/8/8/8/8/3k4 w - - 0 1", False, 6, 3821001),
    ("8/8/1P2K3/8/2n5/1q6/8/5k2 b - - 0 1", False, 5, 1004658),
    ("4k3/1P6/8/8/8/8/K7/8 w - - 0 1", False, 6, 217342),
    ("8/P1k5/K7/8/8/8/8/8 w - - 0 1", False, 6, 92683),
    ("K1k5/8/P7/8/8/8/8/8 w - - 0 1", False, 6, 2217),
    ("8/k1P5/8/1K6/8/8/8/8 w - - 0 1", False, 7, 567584),
    ("8/8/2k5/5q2/5n2/8/5K2/8 b - - 0 1", False, 4, 23527),
]
#: An en-passant capture that would expose the king along the rank (python-chess: illegal).
EP_DISCOVERED = "8/8/8/K1pP3r/8/8/8/7k w - c6 0 1"
#: Double checks (knight and rook, bishop and rook) where a capture of one checker is no answer.
DOUBLE_CHECKS = ["4k3/8/8/8/8/5n2/6B1/4K2r w - - 0 1", "4r1k1/8/8/8/Rb6/8/8/4K3 w - - 0 1"]


def reference_perft(board: chess.Board, depth: int) -> int:
    """python-chess's perft, the last ply bulk-counted."""
    if depth == 1:
        return board.legal_moves.count()
    total = 0
    for move in board.legal_moves:
        board.push(move)
        total += reference_perft(board, depth - 1)
        board.pop()
    return total


def _random_line(board: chess.Board, rng: random.Random, plies: int) -> Iterator[chess.Board]:
    """Yield copies of the positions of a random game from ``board``; captures, promotions and castling
    are preferred now and then so that every kind of move is well represented."""
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            return
        special = [m for m in moves if board.is_capture(m) or m.promotion or board.is_castling(m)]
        board.push(rng.choice(special if special and rng.random() < 0.4 else moves))
        if board.legal_moves.count():
            yield board.copy(stack=False)


def perft_positions(seed: int = 17) -> list[tuple[str, bool]]:
    """The perft set, ``(fen, chess960)``: the published positions, 40 Chess960 start positions, and
    positions of random games from the start, from the published positions and from Chess960 starts
    (about 220 in all)."""
    rng = random.Random(seed)
    found = [(fen, c960) for fen, c960, _, _ in PUBLISHED]
    found += [(fen, False) for fen in (EP_DISCOVERED, *DOUBLE_CHECKS)]
    numbers = [518, 0, 959, *rng.sample(range(960), 37)]
    found += [(chess.Board.from_chess960_pos(n).fen(), True) for n in numbers]
    starts = [(fen, c960) for fen, c960, _, _ in PUBLISHED[:8]] + [(found[-k][0], True) for k in range(1, 11)]
    while len(found) < 220:
        fen, c960 = rng.choice(starts)
        line = list(_random_line(chess.Board(fen, chess960=c960), rng, rng.randrange(4, 80)))
        picked = rng.sample(line, min(2, len(line))) + [b for b in line if b.has_legal_en_passant()][:1]
        found += [(b.fen(), c960) for b in picked]
    return found


def coverage(positions: list[tuple[str, bool]]) -> dict[str, int]:
    """How many positions offer each kind of move or feature the move generator must get right."""
    kinds = dict.fromkeys(
        (
            "a-side castling",
            "h-side castling",
            "960 castling",
            "ep",
            "promotion",
            "check",
            "double check",
            "pin",
        ),
        0,
    )
    for fen, c960 in positions:
        board = chess.Board(fen, chess960=c960)
        castles = [m for m in board.legal_moves if board.is_castling(m)]
        kinds["a-side castling"] += any(board.is_queenside_castling(m) for m in castles)
        kinds["h-side castling"] += any(board.is_kingside_castling(m) for m in castles)
        kinds["960 castling"] += c960 and bool(castles)
        kinds["ep"] += board.has_legal_en_passant()
        kinds["promotion"] += any(m.promotion for m in board.legal_moves)
        kinds["check"] += board.is_check()
        kinds["double check"] += len(board.checkers()) > 1
        kinds["pin"] += any(board.is_pinned(board.turn, sq) for sq in chess.SQUARES if board.piece_at(sq))
    return kinds


def kernel_moves(state: ck.KernelState, chess960: bool) -> set[chess.Move]:
    return {ck.to_chess_move(m, chess960) for m in ck.legal_moves(state)}


# ---- perft -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fen", "chess960", "depth", "count"), PUBLISHED, ids=lambda x: str(x)[:24])
def test_perft_matches_published_figures(fen: str, chess960: bool, depth: int, count: int) -> None:
    state = ck.from_board(chess.Board(fen, chess960=chess960))
    assert ck.perft(state, depth) == count
    assert ck.perft(state, 0) == 1


def test_perft_set_covers_every_kind_of_move() -> None:
    positions = perft_positions()
    kinds = coverage(positions)
    assert len(positions) >= 200 and all(n >= 2 for n in kinds.values()), kinds


def test_perft_equals_python_chess_on_the_perft_set() -> None:
    for k, (fen, c960) in enumerate(perft_positions()):
        board = chess.Board(fen, chess960=c960)
        state = ck.from_board(board)
        depth = 3 if k % 20 == 0 else 2
        assert ck.perft(state, depth) == reference_perft(board, depth), fen


@pytest.mark.slow
def test_perft_depth_3_equals_python_chess_on_the_whole_set() -> None:
    """Depth 4 on the whole set runs in ``benchmarks/chess_kernel.py --depth 4`` (python-chess takes minutes)."""
    for fen, c960 in perft_positions():
        board = chess.Board(fen, chess960=c960)
        assert ck.perft(ck.from_board(board), 3) == reference_perft(board, 3), fen


def test_divide_moves_and_counts() -> None:
    board = chess.Board("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1")
    state = ck.from_board(board)
    divide = {ck.to_chess_move(m, False): n for m, n in ck.perft_divide(state, 2)}
    assert set(divide) == set(board.legal_moves)
    for move, count in divide.items():
        board.push(move)
        assert count == board.legal_moves.count()
        board.pop()
    assert ck.perft_divide(state, 1) == [(m, 1) for m in ck.legal_moves(state)]


def test_perft_on_a_full_state_makes_room() -> None:
    state = ck.from_board(chess.Board(), room=1)
    assert ck.perft(state, 4) == 197281


# ---- legal moves, conversion, en passant, castling ----------------------------------------------


def test_ep_that_exposes_the_king_along_the_rank_is_illegal() -> None:
    board = chess.Board(EP_DISCOVERED)
    state = ck.from_board(board)
    assert kernel_moves(state, False) == set(board.legal_moves)
    assert chess.Move.from_uci("d5c6") not in kernel_moves(state, False)
    legal_ep = chess.Board("8/8/8/K1pP4/8/8/8/7k w - c6 0 1")
    assert chess.Move.from_uci("d5c6") in kernel_moves(ck.from_board(legal_ep), False)


def test_castling_forms_and_conversion() -> None:
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    state = ck.from_board(board)
    assert {chess.Move.from_uci("e1g1"), chess.Move.from_uci("e1c1")} <= kernel_moves(state, False)
    assert {chess.Move.from_uci("e1h1"), chess.Move.from_uci("e1a1")} <= kernel_moves(state, True)
    for text in ("e1g1", "e1h1"):  # either form reads as castling
        move = ck.from_chess_move(state, chess.Move.from_uci(text))
        assert ck.to_chess_move(move, False) == chess.Move.from_uci("e1g1")
    with pytest.raises(ValueError, match="not legal"):
        ck.from_chess_move(state, chess.Move.from_uci("e1e3"))
    # Chess960: king on f1, rook on g1: castling h-side is f1g1 in king-takes-rook form, and the king
    # step f1e1 is not castling; castling rights from Shredder-FEN.
    c960 = chess.Board("4k3/8/8/8/8/8/8/3RKR2 w FD - 0 1", chess960=True)
    state = ck.from_board(c960)
    assert kernel_moves(state, True) == set(c960.legal_moves)


def random_game_boards(rng: random.Random, chess960: bool, plies: int) -> Iterator[chess.Board]:
    """The positions of a random game (board with its move stack), the start included."""
    board = chess.Board.from_chess960_pos(rng.randrange(960)) if chess960 else chess.Board()
    board.chess960 = chess960
    yield board.copy()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            return
        board.push(rng.choice(moves))
        yield board.copy()


def test_legal_moves_equal_python_chess_on_random_games() -> None:
    rng = random.Random(5)
    positions = 0
    for game in range(30):
        c960 = game % 3 == 0
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if c960 else chess.Board()
        board.chess960 = c960
        state = ck.from_board(board, room=400)
        for _ in range(300):
            legal = list(board.legal_moves)
            assert kernel_moves(state, c960) == set(legal), board.fen()
            positions += 1
            if not legal:
                break
            move = rng.choice(legal)
            board.push(move)
            ck.push(state, ck.from_chess_move(state, move))
        while ck.pop(state) >= 0:  # unmake back to the root: every position again
            board.pop()
            assert kernel_moves(state, c960) == set(board.legal_moves)
    assert positions > 5000


# ---- ChessState agreement: repetitions, fifty moves, outcome, planes, policy ---------------------


def shuffle_game(rules: ChessRules, fen: str | None, rng: random.Random, plies: int) -> Iterator[ChessState]:
    """A random game as ChessState, half of the moves undoing the mover's previous move when that is legal
    (so positions repeat and games end by threefold repetition); yields the state after each move."""
    board = chess.Board(fen, chess960=rules.chess960) if fen else chess.Board(chess960=rules.chess960)
    state = ChessState(board, rules)
    yield state
    for _ in range(plies):
        if state.outcome() is not None:
            return
        moves = state.legal_moves()
        stack = state.move_stack
        back = chess.Move(stack[-2].to_square, stack[-2].from_square) if len(stack) >= 2 else None
        state.push(back if back in moves and rng.random() < 0.5 else rng.choice(moves))
        yield state


def assert_same(kernel: ck.KernelState, state: ChessState) -> None:
    """Everything observable agrees with ChessState."""
    assert ck.repetition_count(kernel) == state.repetition_count()
    assert ck.halfmove_clock(kernel) == state.board.halfmove_clock
    assert ck.outcome(kernel) == state.outcome(), state
    assert np.array_equal(ck.encode(kernel), state.encode()), state
    moves, indices = state.legal_moves_and_indices()
    kmoves = np.empty(ck.MAX_MOVES, dtype=np.int64)
    kindices = np.empty(ck.MAX_MOVES, dtype=np.int64)
    n = ck.legal_indices_into(kernel, kmoves, kindices)
    chess960 = state.rules.chess960
    mine = {ck.to_chess_move(int(m), chess960): int(i) for m, i in zip(kmoves[:n], kindices[:n], strict=True)}
    assert mine == dict(zip(moves, indices.tolist(), strict=True)), state


ENDGAMES = [
    "8/8/4k3/8/8/3K4/8/R7 w - - 90 120",  # the fifty-move rule within a few moves
    "8/8/4k3/8/8/3KB3/8/8 b - - 97 150",  # insufficient material, clock near 100
    "r3k2r/pppq1ppp/8/8/8/8/PPPQ1PPP/R3K2R w KQkq - 0 1",  # castling rights to lose by shuffling
    "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",  # a legal e.p. square that lapses
]


@pytest.mark.parametrize("chess960", [False, True])
def test_kernel_equals_chess_state_on_random_games(chess960: bool) -> None:
    rng = random.Random(11 + chess960)
    rules = ChessRules(max_plies=160, chess960=chess960)
    ends: dict[str, int] = {}
    fens: list[str | None] = [None, *ENDGAMES] if not chess960 else [None, ENDGAMES[0]]
    for game in range(24):
        fen = fens[game % len(fens)]
        for state in shuffle_game(rules, fen, rng, 200):
            if state.ply == 0:
                kernel = ck.from_chess_state(state)
            else:
                ck.push(kernel, ck.from_chess_move(kernel, state.move_stack[-1]))
            assert_same(kernel, state)
        over = state.outcome()
        ends[over.reason if over else "none"] = ends.get(over.reason if over else "none", 0) + 1
    assert ends.get("repetition", 0) >= 3 and ends.get("fifty-move", 0) >= 1, ends


def test_kernel_from_a_state_with_history() -> None:
    rng = random.Random(3)
    state = list(shuffle_game(ChessRules(), None, rng, 60))[-1]
    kernel = ck.from_chess_state(state)
    assert_same(kernel, state)
    copy = ck.copy_state(kernel)
    ck.pop(copy)
    state.pop()
    assert_same(copy, state)


def test_hash_equal_exactly_when_python_chess_keys_are() -> None:
    """Zobrist hashes group the positions of random games as python-chess's transposition keys do
    (the e.p. square counts only when a legal e.p. capture exists)."""
    rng = random.Random(8)
    for _ in range(20):
        by_hash: dict[int, set[object]] = {}
        by_key: dict[object, set[int]] = {}
        for state in shuffle_game(ChessRules(), rng.choice([None, ENDGAMES[3]]), rng, 120):
            if state.ply == 0:
                kernel = ck.from_chess_state(state)
            else:
                ck.push(kernel, ck.from_chess_move(kernel, state.move_stack[-1]))
            by_hash.setdefault(ck.zobrist_hash(kernel), set()).add(state.key())
            by_key.setdefault(state.key(), set()).add(ck.zobrist_hash(kernel))
        assert all(len(keys) == 1 for keys in by_hash.values())
        assert all(len(hashes) == 1 for hashes in by_key.values())


def test_encode_into_a_batch_row() -> None:
    state = ChessState(chess.Board("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 7 30"))
    batch = np.full((3, 119, 8, 8), 7.0, dtype=np.float32)
    ck.encode_into(ck.from_chess_state(state), batch[1])
    assert np.array_equal(batch[1], state.encode()) and (batch[0] == 7.0).all() and (batch[2] == 7.0).all()
