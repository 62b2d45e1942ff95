"""Tests of the chess rules adapter (engine/games/chess.py): policy indices, input planes, rules, notation."""

from __future__ import annotations

import dataclasses
import random

import chess
import numpy as np
import pytest

from engine.games import HISTORY_STEPS, IllegalMoveError, InvalidPositionError, Outcome, get_game
from engine.games.chess import ENCODING_VERSION, ChessGame, ChessRules, ChessState

START = chess.STARTING_FEN
# Positions with promotions ready (both colours, captures both ways, en passant available).
PROMOTION_FENS = [
    "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1",
    "r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1",
    "1n1q2n1/PPP2PPP/4k3/3pP3/8/4K3/pppp1ppp/1N1Q2N1 w - d6 0 30",
    "2b1r3/3P2kP/8/8/8/8/K2p2p1/5B1R b - - 0 40",
]
CASTLING_FENS = [
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1",
    "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",
]


@pytest.fixture(scope="module")
def game() -> ChessGame:
    return ChessGame(ChessRules())


@pytest.fixture(scope="module")
def game960() -> ChessGame:
    return ChessGame(ChessRules(chess960=True))


def play(state: ChessState, *ucis: str) -> ChessState:
    for text in ucis:
        state.push(state.parse_move(text))
    return state


# ---- an independent statement of the policy layout (Table S2 as documented) -------------------------
DIRS = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1)]  # (dr, df): N NE E SE S SW W NW
KNIGHTS = [(2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)]


def reference_index(board: chess.Board, move: chess.Move) -> int:
    frm, to = move.from_square, move.to_square
    if board.is_castling(move) and not board.occupied_co[board.turn] & chess.BB_SQUARES[to]:
        # standard-form castling e1g1 / e1c1: the king goes onto its rook's square instead
        to = chess.square(7 if chess.square_file(to) == 6 else 0, chess.square_rank(to))
    if board.turn == chess.BLACK:
        frm, to = chess.square_mirror(frm), chess.square_mirror(to)
    dr = chess.square_rank(to) - chess.square_rank(frm)
    df = chess.square_file(to) - chess.square_file(frm)
    if move.promotion in (chess.KNIGHT, chess.BISHOP, chess.ROOK):
        plane = 64 + 3 * (df + 1) + [chess.KNIGHT, chess.BISHOP, chess.ROOK].index(move.promotion)
    elif (dr, df) in KNIGHTS:
        plane = 56 + KNIGHTS.index((dr, df))
    else:
        dist = max(abs(dr), abs(df))
        plane = DIRS.index((dr // dist, df // dist)) * 7 + dist - 1
    return plane * 64 + frm


def reference_piece_planes(board: chess.Board, turn: chess.Color) -> np.ndarray:
    """[12, 8, 8] piece planes of ``board`` oriented for ``turn``, square by square."""
    out = np.zeros((12, 8, 8), np.float32)
    for sq, piece in board.piece_map().items():
        osq = sq if turn == chess.WHITE else chess.square_mirror(sq)
        c = piece.piece_type - 1 + (0 if piece.color == turn else 6)
        out[c, chess.square_rank(osq), chess.square_file(osq)] = 1.0
    return out


def random_states(game: ChessGame, seed: int, games: int, max_plies: int, fens: list[str] | None = None):
    """Yield (state, python-chess board) at every ply of seeded random games."""
    rng = random.Random(seed)
    starts = [None] * games + list(fens or [])
    for fen in starts:
        state = game.new_state() if fen is None else game.state_from_text(fen)
        for _ in range(max_plies):
            yield state
            if state.outcome() is not None:
                break
            moves = state.legal_moves()
            # prefer castling and promotions a little so they occur often
            special = [
                m for m in moves if m.promotion or state.board.is_castling(m) or state.board.is_en_passant(m)
            ]
            state.push(rng.choice(special) if special and rng.random() < 0.5 else rng.choice(moves))


# ---- interface -----------------------------------------------------------------------------------
def test_info_registry_and_rules() -> None:
    g = get_game("chess")
    assert isinstance(g, ChessGame)
    assert g.info.input_shape == (119, 8, 8) and g.info.policy_size == 4672
    assert g.info.encoding_version == ENCODING_VERSION == 1
    assert g.rules == ChessRules(max_plies=512, chess960=False)
    assert get_game("chess", chess960=True, max_plies=100).rules == ChessRules(100, True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        g.rules.max_plies = 3
    s = g.new_state()
    assert s.info == g.info and s.ply == 0 and s.side_to_move == 0 and s.to_text() == START
    assert len(s.legal_moves()) == 20 and s.outcome() is None


# ---- policy indices ------------------------------------------------------------------------------
def test_every_legal_move_has_a_distinct_index_and_maps_back(game: ChessGame) -> None:
    positions = castles = promos = unders = eps = 0
    for state in random_states(game, seed=7, games=40, max_plies=300, fens=PROMOTION_FENS + CASTLING_FENS):
        board = state.board
        moves, indices = state.legal_moves_and_indices()
        assert moves == state.legal_moves() == list(board.legal_moves)
        assert indices.dtype == np.int64 and indices.shape == (len(moves),)
        assert len(set(indices.tolist())) == len(moves)
        assert ((indices >= 0) & (indices < 4672)).all()
        for move, index in zip(moves, indices.tolist(), strict=True):
            assert state.move_to_index(move) == index == reference_index(board, move)
            assert state.index_to_move(index) == move
            castles += board.is_castling(move)
            eps += board.is_en_passant(move)
            promos += move.promotion is not None
            unders += move.promotion in (chess.KNIGHT, chess.BISHOP, chess.ROOK)
        positions += 1
    assert positions >= 3000
    assert castles > 20 and eps > 10 and promos > 100 and unders > 50


def test_index_to_move_rejects_illegal_indices(game: ChessGame) -> None:
    s = game.new_state()
    _, indices = s.legal_moves_and_indices()
    for bad in [*sorted(set(range(4672)) - set(indices.tolist()))[:200], -1, 4672, 10**6]:
        with pytest.raises(IllegalMoveError):
            s.index_to_move(bad)
    with pytest.raises(IllegalMoveError):
        s.move_to_index(chess.Move.null())
    with pytest.raises(IllegalMoveError):
        s.move_to_index(chess.Move.from_uci("a1b4"))  # no queen or knight geometry


def test_geometric_index_table_is_injective(game: ChessGame) -> None:
    for fen in ("k7/8/8/8/8/8/8/7K w - - 0 1", "k7/8/8/8/8/8/8/7K b - - 0 1"):  # no castling
        s = game.state_from_text(fen)
        seen: dict[int, chess.Move] = {}
        for frm in range(64):
            for to in range(64):
                for promo in (None, chess.KNIGHT, chess.BISHOP, chess.ROOK):
                    move = chess.Move(frm, to, promo)
                    try:
                        index = s.move_to_index(move)
                    except IllegalMoveError:
                        continue
                    assert 0 <= index < 4672 and index not in seen, (move, seen.get(index))
                    seen[index] = move
        # 56 queen planes + 8 knight planes, minus off-board targets: 1792 + 336 queen/knight moves,
        # underpromotions: 8 straight + 14 captures, times 3 pieces.
        assert len(seen) == 1456 + 336 + 66


def test_policy_indices_by_hand(game: ChessGame) -> None:
    s = game.new_state()
    # e2e4: N (direction 0), distance 2 -> plane 1; from e2 = 12
    assert s.move_to_index(s.parse_move("e2e4")) == 1 * 64 + 12
    # g1f3: knight (dr +2, df -1) -> plane 63; from g1 = 6
    assert s.move_to_index(s.parse_move("g1f3")) == 63 * 64 + 6
    # b1c3: knight (dr +2, df +1) -> plane 56; from b1 = 1
    assert s.move_to_index(s.parse_move("b1c3")) == 56 * 64 + 1
    play(s, "e2e4")
    # black e7e5 mirrored: from o(e7) = e2 = 12, forward 2 -> same index as e2e4
    assert s.move_to_index(s.parse_move("e7e5")) == 1 * 64 + 12
    # black g8f6: o(g8) = g1 = 6, oriented (dr +2, df -1) -> plane 63
    assert s.move_to_index(s.parse_move("g8f6")) == 63 * 64 + 6
    # black d7d6: N distance 1 -> plane 0, from o(d7) = d2 = 11
    assert s.move_to_index(s.parse_move("d7d6")) == 0 * 64 + 11

    p = game.state_from_text("r3k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1")
    b7 = chess.B7  # 49
    assert p.move_to_index(p.parse_move("b7a8n")) == (64 + 0 * 3 + 0) * 64 + b7  # capture towards a, knight
    assert p.move_to_index(p.parse_move("b7b8r")) == (64 + 1 * 3 + 2) * 64 + b7  # straight, rook
    assert p.move_to_index(p.parse_move("b7b8b")) == (64 + 1 * 3 + 1) * 64 + b7  # straight, bishop
    assert p.move_to_index(p.parse_move("b7b8q")) == 0 * 64 + b7  # queen promotion = N distance 1
    assert p.move_to_index(p.parse_move("b7a8q")) == 7 * 7 * 64 + b7  # NW distance 1 -> plane 49
    play(p, "e1d2")
    # black g2g1n: o(g2) = g7 = 54, straight, knight; g2h1r: capture towards file h, rook
    assert p.move_to_index(p.parse_move("g2g1n")) == (64 + 3 + 0) * 64 + 54
    assert p.move_to_index(p.parse_move("g2h1r")) == (64 + 6 + 2) * 64 + 54
    assert p.move_to_index(p.parse_move("g2h1q")) == (1 * 7) * 64 + 54  # NE distance 1


def test_castling_indices_standard(game: ChessGame) -> None:
    s = game.state_from_text(CASTLING_FENS[0])
    short, long_ = s.parse_move("e1g1"), s.parse_move("e1c1")
    assert short == chess.Move.from_uci("e1g1") and s.parse_move("e1h1") == short  # both forms read
    assert s.parse_move("e1a1") == long_
    assert s.move_to_text(short) == "e1g1" and s.move_to_text(long_) == "e1c1"
    # king onto its rook: e1h1 = E (2) distance 3 -> plane 16; e1a1 = W (6) distance 4 -> plane 45
    assert s.move_to_index(short) == s.move_to_index(chess.Move.from_uci("e1h1")) == 16 * 64 + 4
    assert s.move_to_index(long_) == 45 * 64 + 4
    assert s.index_to_move(16 * 64 + 4) == short and s.index_to_move(45 * 64 + 4) == long_
    # a rook move along the back rank is a queen-like move of its own
    assert s.move_to_index(chess.Move.from_uci("h1f1")) == (6 * 7 + 1) * 64 + 7
    play(s, "e1g1")
    assert s.board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert s.board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)
    # black castles too, mirrored: the same indices
    assert s.move_to_index(s.parse_move("e8g8")) == 16 * 64 + 4
    assert s.move_to_index(s.parse_move("e8c8")) == 45 * 64 + 4
    assert s.index_to_move(16 * 64 + 4) == chess.Move.from_uci("e8g8")


def test_chess960_castling(game960: ChessGame, game: ChessGame) -> None:
    fen = "1r3kr1/pppppppp/8/8/8/8/PPPPPPPP/1R3KR1 w GBgb - 0 1"  # Shredder-FEN, king f1, rooks b1 g1
    s = game960.state_from_text(fen)
    h_side, a_side = chess.Move.from_uci("f1g1"), chess.Move.from_uci("f1b1")
    moves, indices = s.legal_moves_and_indices()
    assert h_side in moves and a_side in moves
    assert s.move_to_index(h_side) == 14 * 64 + 5  # E distance 1 from f1
    assert s.move_to_index(a_side) == 45 * 64 + 5  # W distance 4 from f1
    for m, i in zip(moves, indices.tolist(), strict=True):
        assert s.index_to_move(i) == m
    assert s.move_to_text(h_side) == "f1g1" and s.parse_move("f1g1") == h_side
    play(s, "f1g1")
    assert s.board.piece_at(chess.G1) == chess.Piece(chess.KING, chess.WHITE)
    assert s.board.piece_at(chess.F1) == chess.Piece(chess.ROOK, chess.WHITE)
    x = s.encode()  # black to move: P1 = black keeps both rights, P2 = white lost both
    assert (x[114] == 1).all() and (x[115] == 1).all() and not x[116:118].any()
    assert s.parse_move("f8b8") == chess.Move.from_uci("f8b8")  # black a-side castling
    assert s.move_to_index(chess.Move.from_uci("f8b8")) == 45 * 64 + 5
    # FEN round trip (X-FEN as python-chess writes it) and Shredder-FEN of the standard array
    again = game960.state_from_text(s.to_text())
    assert again.key() == s.key() and again.to_text() == s.to_text()
    std = game960.state_from_text("rnbqk2r/pppppppp/8/8/8/8/PPPPPPPP/RNBQK2R w HAha - 0 1")
    assert std.move_to_text(std.parse_move("e1h1")) == "e1h1"  # king takes rook in Chess960
    std_plain = game.state_from_text("rnbqk2r/pppppppp/8/8/8/8/PPPPPPPP/RNBQK2R w KQkq - 0 1")
    assert std_plain.move_to_text(std_plain.parse_move("e1h1")) == "e1g1"
    assert std.move_to_index(std.parse_move("e1h1")) == std_plain.move_to_index(std_plain.parse_move("e1g1"))
    # random Chess960 start positions: every legal move round-trips
    for n in (0, 1, 518, 959):
        st = game960.chess960_state(n)
        rng = random.Random(n)
        for _ in range(80):
            if st.outcome() is not None:
                break
            moves, indices = st.legal_moves_and_indices()
            assert len(set(indices.tolist())) == len(moves)
            for m, i in zip(moves, indices.tolist(), strict=True):
                assert st.index_to_move(i) == m and st.parse_move(st.move_to_text(m)) == m
            castles = [m for m in moves if st.board.is_castling(m)]
            st.push(rng.choice(castles or moves))
    with pytest.raises(ValueError):
        game.chess960_state(3)


# ---- input planes --------------------------------------------------------------------------------
def test_encode_matches_reference_over_random_games(game: ChessGame) -> None:
    checked = 0
    for state in random_states(game, seed=11, games=6, max_plies=120, fens=PROMOTION_FENS[:2]):
        x = state.encode()
        assert x.shape == (119, 8, 8) and x.dtype == np.float32 and x.flags.c_contiguous
        board = state.board
        turn = board.turn
        history = board.copy()
        for t in range(HISTORY_STEPS):
            block = x[14 * t : 14 * t + 14]
            if t <= state.ply:
                np.testing.assert_array_equal(block[:12], reference_piece_planes(history, turn))
                if t < state.ply:
                    history.pop()
            else:
                assert not block.any()
        assert (x[112] == (0.0 if turn else 1.0)).all()
        assert np.allclose(x[113], board.ply() / 100) and np.allclose(x[118], board.halfmove_clock / 100)
        checked += 1
    assert checked > 500


def test_history_zero_filled_and_flip_after_e4(game: ChessGame) -> None:
    s = game.new_state()
    x0 = s.encode()
    assert not x0[14:112].any()  # steps 1..7 empty at move 0
    assert x0[0, 1].sum() == 8 and x0[6, 6].sum() == 8  # P1 (white) pawns row 1, P2 pawns row 6
    assert x0[5, 0, 4] == 1 and x0[11, 7, 4] == 1  # kings e1 / e8
    assert x0[12:14].sum() == 0
    assert (x0[112] == 0).all() and (x0[113] == 0).all() and (x0[114:118] == 1).all() and (x0[118] == 0).all()

    play(s, "e2e4")
    x = s.encode()
    # Black to move: P1 = black, ranks mirrored. White's e4 pawn (rank 4) is seen on oriented rank 5:
    # row 4, col 4; the other white pawns (rank 2) on row 6; black pawns (rank 7) on row 1.
    assert x[6, 4, 4] == 1 and x[6, 3, 4] == 0 and x[6, 6, 4] == 0
    assert np.argwhere(x[6]).tolist() == [[4, 4]] + [[6, c] for c in range(8) if c != 4]
    assert x[0, 1].sum() == 8 and x[0].sum() == 8
    assert x[5, 0, 4] == 1 and x[11, 7, 4] == 1  # black king e8 -> row 0; white king e1 -> row 7
    assert x[4, 0, 3] == 1 and x[10, 7, 3] == 1  # queens on the d-file (files not mirrored)
    # step 1 = the start position, also from black's view: white e-pawn still on e2 -> row 6 col 4
    assert x[14 + 6, 6, 4] == 1 and x[14 + 6, 4, 4] == 0 and x[14 + 6].sum() == 8
    np.testing.assert_array_equal(x[14:26], x0[[6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5]][:, ::-1])
    assert not x[28:112].any()  # steps 2..7 zero
    assert (x[112] == 1).all() and np.allclose(x[113], 0.01) and (x[118] == 0).all()


def test_constant_planes_by_hand(game: ChessGame) -> None:
    s = game.state_from_text("r3k2r/8/8/8/8/8/8/R3K2R b Kq - 37 20")
    x = s.encode()
    assert (x[112] == 1).all()  # black to move
    assert np.allclose(x[113], (2 * 19 + 1) / 100)  # game ply 39
    assert np.allclose(x[118], 0.37)
    # P1 = black: king-side lost, queen-side held; P2 = white: king-side held, queen-side lost
    assert [float(x[c, 3, 3]) for c in range(114, 118)] == [0.0, 1.0, 1.0, 0.0]
    play(s, "a8b8")  # black loses queen-side too
    x = s.encode()
    assert (x[112] == 0).all() and np.allclose(x[118], 0.38)
    assert [float(x[c, 0, 0]) for c in range(114, 118)] == [1.0, 0.0, 0.0, 0.0]
    play(s, "e1f1")  # white king move: white loses all
    assert not s.encode()[114:118].any()
    play(s, "h8h1")  # a capture resets the no-progress count
    assert not s.encode()[118].any()


def test_castling_planes_after_rights_lost(game: ChessGame) -> None:
    s = game.state_from_text(CASTLING_FENS[0])
    assert (s.encode()[114:118] == 1).all()
    play(s, "h1g1")  # white loses king-side
    x = s.encode()  # black to move: P1 black K, Q; P2 white K, Q
    assert [float(x[c].mean()) for c in range(114, 118)] == [1.0, 1.0, 0.0, 1.0]
    play(s, "a8b8")
    x = s.encode()
    assert [float(x[c].mean()) for c in range(114, 118)] == [0.0, 1.0, 1.0, 0.0]
    play(s, "a2a3", "e8g8")  # black castles: black loses both
    x = s.encode()
    assert [float(x[c].mean()) for c in range(114, 118)] == [0.0, 1.0, 0.0, 0.0]


def test_repetition_planes_and_threefold(game: ChessGame) -> None:
    s = game.new_state()
    shuffle = ("g1f3", "g8f6", "f3g1", "f6g8")
    play(s, *shuffle)
    x = s.encode()
    assert s.ply == 4 and s.key() == game.new_state().key()
    assert (x[12] == 1).all() and not x[13].any()  # occurred once before
    assert not x[14 + 12].any() and not x[4 * 14 + 12].any()  # older steps: first occurrences
    assert s.outcome() is None
    play(s, *shuffle)
    x = s.encode()
    assert (x[12] == 1).all() and (x[13] == 1).all()  # twice before
    assert (x[4 * 14 + 12] == 1).all() and not x[4 * 14 + 13].any()  # step 4 is the ply-4 position
    assert (x[14 + 12] == 1).all() and not x[14 + 13].any()  # ply-7 position had occurred at ply 3
    assert s.outcome() is not None and s.outcome().value == 0.0 and s.outcome().reason == "repetition"
    assert s.board.is_repetition(3)
    s.pop()
    assert s.outcome() is None and not s.encode()[13].any()


def test_eval_key_separates_what_encode_reads(game: ChessGame) -> None:
    a = game.state_from_text("4k3/8/8/8/8/8/8/R3K3 w - - 0 1")
    b = game.state_from_text("4k3/8/8/8/8/8/8/R3K3 w - - 12 1")
    assert a.key() == b.key() and a.eval_key() != b.eval_key()
    assert a.history_keys() == () and len(play(a, "a1a2", "e8d8").history_keys()) == 2
    assert a.history_keys()[0] == play(game.state_from_text("4k3/8/8/8/8/8/8/R3K3 w - - 0 1"), "a1a2").key()
    c = game.new_state()
    for m in ("g1f3", "g8f6", "f3g1", "f6g8") * 2 + ("e2e4",):
        play(c, m)
        assert len(c.history_keys()) == min(c.ply, 7)


# ---- rules ---------------------------------------------------------------------------------------
def test_outcomes(game: ChessGame) -> None:
    fools = play(game.new_state(), "f2f3", "e7e5", "g2g4", "d8h4")
    assert fools.outcome() == Outcome(-1.0, "checkmate") and fools.legal_moves() == []
    stale = game.state_from_text("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1")
    assert stale.outcome().value == 0.0 and stale.outcome().reason == "stalemate"
    dead = (
        "8/8/4k3/8/8/3K4/8/8 w - - 0 1",
        "8/8/4k3/8/8/3KB3/8/8 b - - 0 1",  # K v K, KB v K
        "8/8/3nk3/8/8/3K4/8/8 w - - 0 1",
    )  # KN v K
    for fen in dead:
        o = game.state_from_text(fen).outcome()
        assert o.value == 0.0 and o.reason == "insufficient-material"
    assert game.state_from_text("8/8/3nk3/8/8/3KN3/8/8 w - - 0 1").outcome() is None  # python-chess: not dead
    fifty = game.state_from_text("4k3/8/8/8/8/8/8/R3K3 w - - 99 80")
    assert fifty.outcome() is None
    play(fifty, "a1a2")
    assert fifty.outcome().value == 0.0 and fifty.outcome().reason == "fifty-move"
    mate100 = game.state_from_text("6k1/5ppp/8/8/8/8/8/R5K1 w - - 99 80")
    play(mate100, "a1a8")
    assert mate100.board.halfmove_clock == 100 and mate100.outcome().reason == "checkmate"
    assert mate100.outcome().value == -1.0
    short = ChessGame(ChessRules(max_plies=4)).new_state()
    play(short, "e2e4", "e7e5", "g1f3")
    assert short.outcome() is None
    play(short, "b8c6")
    assert short.outcome().value == 0.0 and short.outcome().reason == "max-length"
    with pytest.raises(ValueError):
        ChessRules(max_plies=0)


def test_outcome_agrees_with_python_chess(game: ChessGame) -> None:
    seen: set[str] = set()
    for state in random_states(game, seed=3, games=12, max_plies=600):
        board = state.board
        o = state.outcome()
        expected = None
        if board.is_checkmate():
            expected = "checkmate"
        elif board.is_stalemate():
            expected = "stalemate"
        elif board.is_insufficient_material():
            expected = "insufficient-material"
        elif board.is_repetition(3):
            expected = "repetition"
        elif board.halfmove_clock >= 100:
            expected = "fifty-move"
        elif state.ply >= 512:
            expected = "max-length"
        assert (o.reason if o else None) == expected
        if o:
            seen.add(o.reason)
            assert o.value == (-1.0 if o.reason == "checkmate" else 0.0)
    assert len(seen) >= 2


def test_find_mate_finds_exactly_the_mates_in_one(game: ChessGame) -> None:
    positions = with_mate = 0
    for state in random_states(game, seed=11, games=30, max_plies=400):
        positions += 1
        fen, ply = state.board.fen(), state.ply
        mates = set()
        if state.outcome() is None:
            for move in state.legal_moves():  # by trying every move, not only the checking ones
                state.push(move)
                if state.outcome() == Outcome(-1.0, "checkmate"):
                    mates.add(move)
                state.pop()
        found = state.find_mate(1)
        assert (found is not None) == bool(mates), fen
        if found:
            with_mate += 1
            assert found[0] in mates and found[1] == 1
        assert state.board.fen() == fen and state.ply == ply  # left as it was
    assert positions > 5000 and with_mate >= 20
    mate = game.state_from_text("6k1/5ppp/8/8/8/8/5PPP/R5K1 w - - 0 1")
    assert mate.find_mate(1) == (chess.Move.from_uci("a1a8"), 1)
    assert mate.find_mate(0) is None  # off


def _mates_in_one(state) -> set:
    mates = set()
    for move in state.legal_moves():  # every move, not only the checking ones
        state.push(move)
        if state.outcome() == Outcome(-1.0, "checkmate"):
            mates.add(move)
        state.pop()
    return mates


def _checking_mates_in_two(state) -> set:
    """Brute force: checks after which the game goes on and every reply allows a mate in one."""
    found = set()
    for move in state.legal_moves():
        if not state.board.gives_check(move):
            continue
        state.push(move)
        forced = state.outcome() is None
        for reply in state.legal_moves() if forced else ():
            state.push(reply)
            forced = state.outcome() is None and bool(_mates_in_one(state))
            state.pop()
            if not forced:
                break
        state.pop()
        if forced:
            found.add(move)
    return found


def test_find_mate_finds_exactly_the_checking_mates_in_two(game: ChessGame) -> None:
    checked = with_mate = 0
    for k, state in enumerate(random_states(game, seed=12, games=6, max_plies=300)):
        if state.outcome() is not None or k % 3 or _mates_in_one(state):
            continue
        checked += 1
        fen = state.board.fen()
        expected = _checking_mates_in_two(state)
        found = state.find_mate(100_000)
        assert (found is not None) == bool(expected), fen
        if found:
            with_mate += 1
            assert found[0] in expected and found[1] == 3
        assert state.board.fen() == fen
    assert checked > 300 and with_mate >= 3
    # from a random game: 92... Rd1+ and every king move allows a mate in one; nothing else forces it
    state = game.state_from_text("8/3r4/k1P1r3/5p1p/2q4P/8/6R1/1b4K1 b - - 3 92")
    assert not _mates_in_one(state) and _checking_mates_in_two(state) == {chess.Move.from_uci("d7d1")}
    assert state.find_mate(5000) == (chess.Move.from_uci("d7d1"), 3)
    assert state.find_mate(1) is None  # the budget ends the search before a mate in two is proven


def test_copy_is_independent(game: ChessGame) -> None:
    s = play(game.new_state(), "e2e4", "c7c5", "g1f3")
    x, key, hist, fen = s.encode(), s.key(), s.history_keys(), s.to_text()
    c = s.copy()
    assert c.ply == s.ply and c.move_stack == s.move_stack and c.history_keys() == hist
    np.testing.assert_array_equal(c.encode(), x)
    play(c, "d7d6", "d2d4")
    assert s.ply == 3 and s.key() == key and s.to_text() == fen and s.history_keys() == hist
    np.testing.assert_array_equal(s.encode(), x)
    assert s.legal_moves() == list(chess.Board(fen).legal_moves)
    play(s, "b8c6")
    c.pop(), c.pop()
    np.testing.assert_array_equal(c.encode(), x)
    assert c.ply == 3 and s.ply == 4 and c.board.move_stack != s.board.move_stack


def test_pop_restores_everything(game: ChessGame) -> None:
    rng = random.Random(5)
    s = game.state_from_text(PROMOTION_FENS[2])
    snapshots = []
    for _ in range(60):
        if s.outcome() is not None:
            break
        snapshots.append(
            (
                s.encode(),
                s.key(),
                s.history_keys(),
                s.eval_key(),
                s.to_text(),
                s.outcome(),
                s.legal_moves_and_indices()[1],
            )
        )
        s.push(rng.choice(s.legal_moves()))
    pushed = list(s.move_stack)
    for snap in reversed(snapshots):
        assert s.pop() == pushed.pop()
        x, key, hist, ekey, fen, outcome, indices = snap
        np.testing.assert_array_equal(s.encode(), x)
        now = (s.key(), s.history_keys(), s.eval_key(), s.to_text(), s.outcome())
        assert now == (key, hist, ekey, fen, outcome)
        np.testing.assert_array_equal(s.legal_moves_and_indices()[1], indices)
    assert s.ply == 0
    with pytest.raises(IndexError):
        s.pop()


def test_state_from_board_replays_history() -> None:
    board = chess.Board()
    for uci in ("e2e4", "e7e5", "g1f3"):
        board.push_uci(uci)
    s = ChessState(board)
    assert s.ply == 3 and s.to_text() == board.fen() and s.encode()[14 * 3 + 5, 0, 4] == 1
    assert board.ply() == 3  # the caller's board is untouched


# ---- notation ------------------------------------------------------------------------------------
def test_notation(game: ChessGame) -> None:
    p = game.state_from_text(PROMOTION_FENS[0])
    assert p.parse_move("b7b8q") == chess.Move.from_uci("b7b8q")
    assert p.parse_move("b7b8Q") == p.parse_move(" B7B8Q ") == chess.Move.from_uci("b7b8q")
    assert p.move_to_text(p.parse_move("b7a8N")) == "b7a8n"
    for bad in ("0000", "", "e2", "e2e4e", "b7b8", "b7b8k", "z9z9", "e1e3", "b7c8q", "e1g1x", "Nf3", None):
        with pytest.raises(IllegalMoveError):
            p.parse_move(bad)
    for state in random_states(game, seed=2, games=3, max_plies=80, fens=PROMOTION_FENS):
        for m in state.legal_moves():
            assert state.parse_move(state.move_to_text(m)) == m and state.move_to_text(m) == m.uci()


def test_fen_round_trip_and_invalid_fen(game: ChessGame, game960: ChessGame) -> None:
    for state in random_states(game, seed=9, games=4, max_plies=100, fens=PROMOTION_FENS + CASTLING_FENS):
        fen = state.to_text()
        again = game.state_from_text(fen)
        assert again.to_text() == fen and again.key() == state.key()
        assert again.legal_moves() == state.legal_moves()
        np.testing.assert_array_equal(again.encode()[:12], state.encode()[:12])
        np.testing.assert_array_equal(again.encode()[112:], state.encode()[112:])
    for bad in (
        "",
        "garbage",
        "8/8/8/8/8/8/8/8 w - - 0 1",  # no kings
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1",
        "rnbqkbnr/pppppppp/9/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "Pnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",  # pawn on the back rank
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKKNR w - - 0 1",  # two white kings
        "4k3/8/8/8/8/8/4R3/4K3 w - - 0 1",  # side not to move is in check
        "4k3/8/8/8/8/8/8/4K3 w K - 0 1",  # castling right without a rook
        "4k3/8/8/8/8/8/8/4K3 w - e3 0 1",  # impossible en passant square
    ):
        with pytest.raises(InvalidPositionError):
            game.state_from_text(bad)
    with pytest.raises(InvalidPositionError):
        game960.state_from_text("4k3/8/8/8/8/8/8/4K3 w H - 0 1")
