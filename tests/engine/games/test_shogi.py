"""Tests of the shogi adapter (engine/games/shogi.py): rules, policy indices, input planes, notation."""

from __future__ import annotations

import random

import cshogi
import numpy as np
import pytest

from engine.games import GameInfo, IllegalMoveError, InvalidPositionError, Outcome, get_game
from engine.games.shogi import (
    ENCODING_VERSION,
    INDEX_MOVE,
    MOVE_INDEX,
    STARTING_SFEN,
    ShogiGame,
    ShogiRules,
    ShogiState,
    normalize_sfen,
    parse_square,
    square_name,
    square_to_pos,
)

GAME = ShogiGame()
STEP = 45  # planes per history step


def play(state: ShogiState, usi: str) -> ShogiState:
    for text in usi.split():
        state.push(state.parse_move(text))
    return state


def texts(state: ShogiState) -> set[str]:
    return {state.move_to_text(m) for m in state.legal_moves()}


def random_states(games: int, max_plies: int, seed: int):
    """Yield the state at every ply of seeded random games (the same object, mutated)."""
    rng = random.Random(seed)
    for _ in range(games):
        state = GAME.new_state()
        for _ in range(max_plies):
            if state.outcome() is not None:
                break
            yield state
            state.push(rng.choice(state.legal_moves()))


# ---- game object, registry ---------------------------------------------------------------------
def test_info_and_registry() -> None:
    assert ENCODING_VERSION == 1
    assert GAME.info == GameInfo("shogi", 9, 362, 11259, ENCODING_VERSION)
    assert GAME.info.input_shape == (362, 9, 9)
    game = get_game("shogi", max_plies=100, entering_king=False)
    assert isinstance(game, ShogiGame)
    assert game.rules == ShogiRules(max_plies=100, entering_king=False)
    assert ShogiRules() == ShogiRules(max_plies=512, entering_king=True)
    with pytest.raises(ValueError):
        ShogiRules(max_plies=0)


def test_coordinate_helpers() -> None:
    assert square_name(0) == "1a" and square_name(80) == "9i"
    assert parse_square("7g") == cshogi.G7 == 60
    assert all(parse_square(square_name(sq)) == sq for sq in range(81))
    # sente: 7g -> row 6 (rank g), col 2 (file 7 is the third column from the left)
    assert square_to_pos(parse_square("7g"), 0) == 6 * 9 + 2
    # gote: rotated 180 degrees
    assert square_to_pos(parse_square("3c"), 1) == 6 * 9 + 2
    assert square_to_pos(parse_square("9a"), 0) == 0 and square_to_pos(parse_square("1i"), 1) == 0


def test_move_tables_are_bijective() -> None:
    for side in (0, 1):
        valid = MOVE_INDEX[side][MOVE_INDEX[side] >= 0]
        assert len(valid) == len(set(valid.tolist()))
        assert valid.min() >= 0 and valid.max() < 11259
        codes = INDEX_MOVE[side][valid]
        assert np.array_equal(MOVE_INDEX[side][codes], valid)


# ---- state basics ------------------------------------------------------------------------------
def test_start_position() -> None:
    state = GAME.new_state()
    assert state.to_text() == STARTING_SFEN
    assert state.side_to_move == 0 and state.ply == 0 and state.game_ply == 0
    assert len(state.legal_moves()) == 30
    assert state.outcome() is None
    assert state.move_stack == ()
    assert state.history_keys() == ()
    assert isinstance(state.board, cshogi.Board)
    with pytest.raises(IndexError):
        state.pop()


def test_push_pop_ply_side_and_keys() -> None:
    state = GAME.new_state()
    start_key = state.key()
    play(state, "7g7f")
    assert state.side_to_move == 1 and state.ply == 1 and state.game_ply == 1
    assert state.history_keys() == (start_key,)
    k1 = state.key()
    play(state, "3c3d 2g2f")
    assert state.history_keys()[0] != state.key()
    assert state.history_keys()[1] == k1
    assert [state.move_to_text(m) for m in state.move_stack] == ["7g7f", "3c3d", "2g2f"]
    assert state.move_to_text(state.pop()) == "2g2f"
    assert state.ply == 2 and state.side_to_move == 0
    # transpositions have equal keys; hands and side to move change the key
    other = play(GAME.new_state(), "2g2f 3c3d 7g7f")
    again = play(GAME.new_state(), "7g7f 3c3d 2g2f")
    assert other.key() == again.key()
    assert (
        GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 b - 1").key()
        != GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 w - 1").key()
    )
    assert (
        GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 b P 1").key()
        != GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 b p 1").key()
    )
    # at most 7 history keys, newest first
    for text in ["8h2b+", "3a2b", "8i7g", "2b3c", "7i8h", "4a3b", "3i4h"]:
        play(state, text)
    assert len(state.history_keys()) == 7


def test_copy_is_independent_with_same_history() -> None:
    state = play(GAME.new_state(), "7g7f 3c3d 8h2b+ 3a2b")
    before = (state.to_text(), state.key(), state.history_keys(), state.encode())
    twin = state.copy()
    assert twin.to_text() == before[0] and twin.history_keys() == before[2]
    assert np.array_equal(twin.encode(), before[3])
    play(twin, "B*5e 5a4b")
    assert state.to_text() == before[0] and state.key() == before[1] and state.ply == 4
    assert np.array_equal(state.encode(), before[3])
    for _ in range(6):
        twin.pop()
    assert twin.to_text() == STARTING_SFEN
    state.pop()
    assert state.ply == 3  # the original still pops its own history
    # the copy keeps repetition counts
    rep = play(GAME.new_state(), "2h3h 8b7b 3h2h 7b8b 2h3h 8b7b 3h2h 7b8b 2h3h 8b7b 3h2h")
    twin = rep.copy()
    play(twin, "7b8b")
    assert twin.outcome() == Outcome(0.0, "repetition")
    assert rep.outcome() is None


# ---- SFEN ----------------------------------------------------------------------------------------
ROUND_TRIP_SFENS = [
    STARTING_SFEN,
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/2P6/PP1PPPPPP/1B5R1/LNSGKGSNL w - 2",
    "4k4/9/9/9/9/9/9/9/4K4 b RBGSNL2P3gp 1",
    "ln1g3+Rl/1ks4s1/pppp1p1pp/4p4/9/2P1P4/PP1P1PP1P/1+b1S2S2/LN1GKG1NL w BNPgp 40",
]


@pytest.mark.parametrize("sfen", ROUND_TRIP_SFENS)
def test_sfen_round_trip(sfen: str) -> None:
    state = GAME.state_from_text(sfen)
    assert state.to_text() == sfen
    assert GAME.state_from_text(state.to_text()).key() == state.key()


def test_sfen_round_trip_random_positions() -> None:
    for i, state in enumerate(random_states(games=4, max_plies=150, seed=7)):
        if i % 10:
            continue
        text = state.to_text()
        again = GAME.state_from_text(text)
        assert again.to_text() == text and again.key() == state.key()


def test_sfen_move_count_optional_and_spaces_normalised() -> None:
    assert normalize_sfen("4k4/9/9/9/9/9/9/9/4K4  b   -") == "4k4/9/9/9/9/9/9/9/4K4 b - 1"
    assert GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 w - 31").game_ply == 30


MALFORMED_SFENS = [
    "",
    "garbage",
    "startpos",
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1 b - 1",  # 8 ranks
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNLL b - 1",  # 10 squares
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSN b - 1",  # 8 squares
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL x - 1",  # side
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 0",  # move count
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - x",
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1 extra",
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b 2P 1",  # 20 pawns
    "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b K 1",  # king in hand
    "4k4/9/9/9/9/9/9/9/4K4 b 0P 1",
    "4k4/9/9/9/9/9/9/9/4K4 b P2 1",
    "4k4/9/9/9/9/9/9/9/4K4 b PP 1",  # repeated hand entry
    "4k4/9/9/9/9/9/9/9/4K4 b +P 1",
    "4k4/9/9/9/9/9/9/9/9 b - 1",  # no sente king
    "4k4/9/9/9/9/9/9/9/3KK4 b - 1",  # two sente kings
    "4k4/9/9/9/9/9/9/9/4+K4 b - 1",
    "4k4/9/9/9/9/9/9/9/4+G3K b - 1",
    "4k4/9/9/9/9/9/9/9/4K3+ b - 1",  # dangling +
    "P3k4/9/9/9/9/9/9/9/4K4 b - 1",  # sente pawn on its last rank
    "4k4/N8/9/9/9/9/9/9/4K4 b - 1",  # sente knight on rank b
    "4k4/9/9/9/9/9/9/9/l3K4 b - 1",  # gote lance on its last rank
    "4k4/9/9/9/4P4/9/4P4/9/4K4 b - 1",  # nifu
    "4k4/4R4/9/9/9/9/9/9/4K4 b - 1",  # gote (not to move) in check
    "4k4/9/9/9/9/9/9/9/4K4 b \u0663P 1",  # a non-ASCII digit
    "4k4/9/9/9/9/9/9/9/4K\u0664 b - 1",
    "4k4/9/9/9/9/9/9/9/4K4 b - 1\u0661",
    "4k4/9/9/9/9/9/9/9/4K0 b - 1",
]


@pytest.mark.parametrize("sfen", MALFORMED_SFENS)
def test_malformed_sfen_raises(sfen: str) -> None:
    with pytest.raises(InvalidPositionError):
        GAME.state_from_text(sfen)


# ---- moves and policy indices --------------------------------------------------------------------
def test_random_play_moves_and_indices() -> None:
    """Thousands of positions: each legal move has a distinct index in range and maps back."""
    positions = drops = promotions = gote_positions = 0
    for state in random_states(games=24, max_plies=200, seed=1):
        moves, indices = state.legal_moves_and_indices()
        assert indices.dtype == np.int64 and len(indices) == len(moves)
        assert moves == state.legal_moves()
        assert len(set(indices.tolist())) == len(moves)
        assert indices.min() >= 0 and indices.max() < 11259
        assert [state.move_to_index(m) for m in moves] == indices.tolist()
        for move, index in zip(moves, indices.tolist(), strict=True):
            assert state.index_to_move(index) == move
            drops += cshogi.move_is_drop(move)
            promotions += cshogi.move_is_promotion(move)
        positions += 1
        gote_positions += state.side_to_move
    assert positions >= 3000
    assert drops > 1000 and promotions > 1000 and gote_positions > 1000


def test_random_play_notation_round_trip() -> None:
    for i, state in enumerate(random_states(games=6, max_plies=200, seed=3)):
        if i % 3:
            continue
        for move in state.legal_moves():
            text = state.move_to_text(move)
            assert state.parse_move(text) == move


def test_hand_computed_indices() -> None:
    state = GAME.new_state()
    assert state.move_to_index(state.parse_move("7g7f")) == 0 * 81 + 56  # N, distance 1, from row 6 col 2
    assert state.move_to_index(state.parse_move("2g2f")) == 0 * 81 + 6 * 9 + 7
    assert state.move_to_index(state.parse_move("5i4h")) == 1 * 8 * 81 + 8 * 9 + 4  # NE
    play(state, "7g7f")
    # gote's 3c3d is rotated onto the same plane and square as sente's 7g7f
    assert state.move_to_index(state.parse_move("3c3d")) == 56
    play(state, "3c3d")
    # bishop 8h -> 2b, promoting, NE distance 6: plane 66 + 1*8 + 5, from 8h = row 7 col 1
    assert state.move_to_index(state.parse_move("8h2b+")) == (66 + 13) * 81 + 7 * 9 + 1
    assert state.move_to_index(state.parse_move("8h2b")) == 13 * 81 + 7 * 9 + 1
    # knight 8i -> 7g: (-2, +1) = plane 65, from 8i = row 8 col 1
    assert state.move_to_index(state.parse_move("8i7g")) == 65 * 81 + 73
    play(state, "8i7g")
    # gote knight 2a -> 3c: rotated, the same (-2, +1) jump from row 8 col 1
    assert state.move_to_index(state.parse_move("2a3c")) == 65 * 81 + 73
    # drops: at the oriented to-square
    drop = GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 b P 1")
    assert drop.move_to_index(drop.parse_move("P*5e")) == 132 * 81 + 40
    assert drop.move_to_index(drop.parse_move("P*9b")) == 132 * 81 + 1 * 9 + 0
    gote_drop = GAME.state_from_text("4k4/9/9/9/9/9/9/9/4K4 w r2g 1")
    assert gote_drop.move_to_index(gote_drop.parse_move("G*5e")) == 136 * 81 + 40
    assert gote_drop.move_to_index(gote_drop.parse_move("R*9b")) == 138 * 81 + 80 - 9
    # promoting knight (-2, +1) = plane 131; from 3e = row 4 col 6
    knight = GAME.state_from_text("4k4/9/9/9/6N2/9/9/9/4K4 b - 1")
    assert knight.move_to_index(knight.parse_move("3e2c+")) == 131 * 81 + 42
    assert knight.move_to_index(knight.parse_move("3e4c+")) == 130 * 81 + 42
    assert knight.move_to_index(knight.parse_move("3e4c")) == 64 * 81 + 42
    # distance 8: rook 9i -> 1i is E 8 (plane 23); gote's rook 1a -> 9a is the same after rotation
    rook = GAME.state_from_text("4k4/9/9/9/9/9/9/4K4/R8 b - 1")
    assert rook.move_to_index(rook.parse_move("9i1i")) == 23 * 81 + 72
    gote_rook = GAME.state_from_text("8r/4k4/9/9/9/9/9/9/4K4 w - 1")
    assert gote_rook.move_to_index(gote_rook.parse_move("1a9a")) == 23 * 81 + 72


def test_gote_rook_north_plane() -> None:
    gote_rook = GAME.state_from_text("8r/4k4/9/9/9/9/9/9/4K4 w - 1")
    # 1a -> 1h for gote is "north" (toward sente) distance 7: plane 6; from row 8 col 0
    assert gote_rook.move_to_index(gote_rook.parse_move("1a1h")) == 6 * 81 + 72
    assert gote_rook.move_to_index(gote_rook.parse_move("1a1b")) == 0 * 81 + 72


def test_index_to_move_errors() -> None:
    state = GAME.new_state()
    with pytest.raises(IllegalMoveError):
        state.index_to_move(132 * 81 + 40)  # a pawn drop: nothing in hand
    with pytest.raises(IllegalMoveError):
        state.index_to_move(0)  # 9a north: no such move
    with pytest.raises(IllegalMoveError):
        state.index_to_move(11259)
    with pytest.raises(IllegalMoveError):
        state.index_to_move(-1)
    assert state.move_to_text(state.index_to_move(56)) == "7g7f"


BAD_MOVES = [
    "0000",
    "resign",
    "win",
    "",
    "7g7",
    "7g7f7",
    "7z7f",
    "0g7f",
    "p*5e",
    "K*5e",
    "+P*5e",
    "P*5j",
    "7g7e",
    "7g7f+",
    "8h2b",
    "P*5e",
    " 7g7f",
    "\uff17g7f",
]


@pytest.mark.parametrize("text", BAD_MOVES)
def test_parse_move_rejects(text: str) -> None:
    with pytest.raises(IllegalMoveError):
        GAME.new_state().parse_move(text)


def test_move_text_forms() -> None:
    state = play(GAME.new_state(), "7g7f 3c3d")
    assert state.move_to_text(state.parse_move("8h2b+")) == "8h2b+"
    play(state, "8h2b+ 3a2b")
    assert state.move_to_text(state.parse_move("B*5e")) == "B*5e"
    assert "B*5e" in texts(state) and "7i8h" in texts(state)


# ---- rules from cshogi's generator -------------------------------------------------------------
PAWN_DROP_MATE = "7nk/7s1/7G1/9/9/9/9/9/4K4 b GP 1"  # P*1b would mate the king on 1a


def test_pawn_drop_mate_is_illegal_but_gold_drop_mate_is_checkmate() -> None:
    state = GAME.state_from_text(PAWN_DROP_MATE)
    legal = texts(state)
    assert "P*1b" not in legal and "P*5e" in legal and "G*1b" in legal
    with pytest.raises(IllegalMoveError):
        state.parse_move("P*1b")
    play(state, "G*1b")
    assert state.legal_moves() == []
    assert state.outcome() == Outcome(-1.0, "checkmate")


def test_no_moves_without_check_is_a_loss() -> None:
    state = GAME.state_from_text("8k/6S2/7G1/9/9/9/9/9/4K4 w - 1")
    assert not state.board.is_check() and state.legal_moves() == []
    assert state.outcome() == Outcome(-1.0, "checkmate")


def test_nifu() -> None:
    state = GAME.state_from_text("4k4/9/9/9/9/9/4P4/9/4K4 b P 1")
    legal = texts(state)
    assert not any(t.startswith("P*5") for t in legal)
    assert "P*4e" in legal
    with pytest.raises(IllegalMoveError):
        state.parse_move("P*5e")
    tokin = GAME.state_from_text("4k4/9/9/9/9/9/4+P4/9/4K4 b P 1")  # a promoted pawn does not count
    assert "P*5e" in texts(tokin)


def test_forced_promotion_and_no_drops_to_dead_squares() -> None:
    state = GAME.state_from_text("4k4/6P2/6N2/1N7/L8/9/9/9/4K4 b PLN 1")
    legal = texts(state)
    assert "3b3a+" in legal and "3b3a" not in legal  # pawn to the last rank
    assert {"3c2a+", "3c4a+"} <= legal and not {"3c2a", "3c4a"} & legal  # knight to rank a
    assert {"8d7b+", "8d9b+"} <= legal and not {"8d7b", "8d9b"} & legal  # knight to rank b
    assert "9e9a+" in legal and "9e9a" not in legal  # lance to rank a
    assert {"9e9b", "9e9b+", "9e9c", "9e9c+"} <= legal  # optional promotion
    assert not {"P*1a", "L*1a", "N*1a", "N*1b"} & legal and {"P*1b", "L*1b", "N*1c"} <= legal
    with pytest.raises(IllegalMoveError):
        state.parse_move("3b3a")
    # gote's last ranks are h and i
    gote = GAME.state_from_text("4k4/9/9/9/9/9/2p6/9/4K4 w p 1")
    legal = texts(gote)
    assert "7g7h+" in legal and "7g7h" in legal  # rank h: optional for a pawn
    assert "P*1i" not in legal and "P*1h" in legal


# ---- outcomes ------------------------------------------------------------------------------------
def test_sennichite_fourfold_draw() -> None:
    state = GAME.new_state()
    cycle = ["2h3h", "8b7b", "3h2h", "7b8b"]
    for i, text in enumerate(cycle * 3):
        assert state.outcome() is None, i
        play(state, text)
    assert state.to_text() == STARTING_SFEN.replace(" 1", " 13")
    assert state.repetition_count() == 3  # the start position occurs for the fourth time
    assert state.outcome() == Outcome(0.0, "repetition")
    state.pop()
    assert state.outcome() is None


PERPETUAL_SETUP = "5g5f 5c5d 2h5h 5a5b 5f5e 5b5c 5h5f 5c6d"  # gote king on 6d, sente rook on 5f


def test_perpetual_check_loses_for_the_checker() -> None:
    state = play(GAME.new_state(), PERPETUAL_SETUP)
    cycle = ["5f6f", "6d7d", "6f7f", "7d6d"] + ["7f6f", "6d7d", "6f7f", "7d6d"] * 2 + ["7f6f"]
    for i, text in enumerate(cycle):
        assert state.outcome() is None, i
        play(state, text)
        assert state.board.is_check() == (i % 2 == 0)  # every sente move checks
    # rook 6f / king 6d with gote to move, for the fourth time: sente (the checker) loses
    assert state.repetition_count() == 3
    assert state.outcome() == Outcome(1.0, "perpetual-check")
    assert state.board.is_draw() == cshogi.REPETITION_WIN  # cshogi agrees (side to move wins)
    # from the side of the checker: start where the checker is to move
    checker = GAME.state_from_text(play(GAME.new_state(), PERPETUAL_SETUP + " 5f6f 6d7d 6f7f 7d6d").to_text())
    for text in ["7f6f", "6d7d", "6f7f", "7d6d"] * 3:
        assert checker.outcome() is None
        play(checker, text)
    assert checker.side_to_move == 0 and checker.repetition_count() == 3
    assert checker.outcome() == Outcome(-1.0, "perpetual-check")
    assert checker.board.is_draw() == cshogi.REPETITION_LOSE


def test_repetition_with_checks_only_in_later_cycles_is_a_draw() -> None:
    """The checks must cover every move of the checker since the position first occurred (cshogi's
    is_draw only looks at the last cycle and disagrees)."""
    state = play(GAME.new_state(), PERPETUAL_SETUP + " 5f6f 6d7d 6f7f 7d6d")  # position D, 1st time
    play(state, "7f8f 6d5c 8f7f 5c6d")  # back to D without a check
    for text in ["7f6f", "6d7d", "6f7f", "7d6d"] * 2:
        assert state.outcome() is None
        play(state, text)
    assert state.repetition_count() == 3
    assert state.outcome() == Outcome(0.0, "repetition")
    assert state.board.is_draw() == cshogi.REPETITION_LOSE


ENTERING_KING = "+L+NSG1GS+N+L/1R2K2B1/9/9/9/9/9/9/8k b 10P 1"  # 10 pieces in camp, 28 points


def test_entering_king_declaration() -> None:
    state = GAME.state_from_text(ENTERING_KING)
    assert state.can_declare_win()
    assert state.outcome() == Outcome(1.0, "entering-king")
    short = GAME.state_from_text(ENTERING_KING.replace("10P", "9P"))  # 27 points: sente needs 28
    assert not short.can_declare_win() and short.outcome() is None
    other_side = GAME.state_from_text(ENTERING_KING.replace(" b ", " w "))
    assert not other_side.can_declare_win() and other_side.outcome() is None
    off = ShogiGame(ShogiRules(entering_king=False)).state_from_text(ENTERING_KING)
    assert not off.can_declare_win() and off.outcome() is None


def test_max_plies_draw() -> None:
    game = ShogiGame(ShogiRules(max_plies=4))
    state = play(game.new_state(), "7g7f 3c3d 2g2f")
    assert state.outcome() is None
    play(state, "8c8d")
    assert state.outcome() == Outcome(0.0, "max-length")
    # checkmate on the last ply still counts as checkmate
    mate = ShogiGame(ShogiRules(max_plies=1)).state_from_text(PAWN_DROP_MATE)
    play(mate, "G*1b")
    assert mate.outcome() == Outcome(-1.0, "checkmate")


def test_draw_at_a_game_ply() -> None:
    """``draw_game_ply`` (USI MaxMovesToDraw) counts the game's plies by the SFEN move number, not the
    state's own: the position at that game ply is drawn, and one past it too."""
    game = ShogiGame(ShogiRules(draw_game_ply=4))
    state = play(game.new_state(), "7g7f 3c3d 2g2f")
    assert state.outcome() is None and state.plies_left() == 1
    play(state, "8c8d")
    assert state.outcome() == Outcome(0.0, "max-length") and state.plies_left() == 0
    # an SFEN at move number 4 (game ply 3): one ply to go, whatever the state's own ply
    sfen = ShogiState(sfen=None)
    play(sfen, "7g7f 3c3d 2g2f")
    late = game.state_from_text(sfen.to_text())
    assert late.game_ply == 3 and late.ply == 0 and late.outcome() is None and late.length_limit == 1
    play(late, "8c8d")
    assert late.outcome() == Outcome(0.0, "max-length")
    past = ShogiGame(ShogiRules(draw_game_ply=2)).state_from_text(sfen.to_text())
    assert past.outcome() == Outcome(0.0, "max-length") and past.plies_left() == -1
    # without it, the self-play bound alone
    assert ShogiGame(ShogiRules(max_plies=4)).state_from_text(sfen.to_text()).plies_left() == 4
    with pytest.raises(ValueError):
        ShogiRules(draw_game_ply=-1)


# ---- input planes --------------------------------------------------------------------------------
def plane(enc: np.ndarray, step: int, offset: int) -> np.ndarray:
    return enc[step * STEP + offset]


def ones_at(*cells: tuple[int, int]) -> np.ndarray:
    out = np.zeros((9, 9), np.float32)
    for r, c in cells:
        out[r, c] = 1.0
    return out


def test_encode_start_position() -> None:
    enc = GAME.new_state().encode()
    assert enc.shape == (362, 9, 9) and enc.dtype == np.float32
    assert np.array_equal(plane(enc, 0, 0), ones_at(*[(6, c) for c in range(9)]))  # P1 pawns on rank g
    assert np.array_equal(plane(enc, 0, 1), ones_at((8, 0), (8, 8)))  # lances
    assert np.array_equal(plane(enc, 0, 4), ones_at((8, 3), (8, 5)))  # golds 6i, 4i
    assert np.array_equal(plane(enc, 0, 5), ones_at((7, 1)))  # bishop 8h
    assert np.array_equal(plane(enc, 0, 6), ones_at((7, 7)))  # rook 2h
    assert np.array_equal(plane(enc, 0, 7), ones_at((8, 4)))  # king 5i
    assert np.array_equal(plane(enc, 0, 14 + 5), ones_at((1, 7)))  # P2 bishop 2b
    assert np.array_equal(plane(enc, 0, 14 + 6), ones_at((1, 1)))  # P2 rook 8b
    assert enc[0:28].sum() == 40 and not enc[8:14].any() and not enc[22:28].any()
    assert not enc[28:45].any()  # no repetitions, nothing in hand
    assert not enc[45:360].any()  # history before the first position is zero
    assert not enc[360].any() and not enc[361].any()


def test_encode_rotated_for_gote_after_one_move() -> None:
    state = play(GAME.new_state(), "7g7f")
    enc = state.encode()
    # P1 = gote, board turned 180 degrees: gote's king 5a -> row 8 col 4, bishop 2b -> (7, 1)
    assert np.array_equal(plane(enc, 0, 7), ones_at((8, 4)))
    assert np.array_equal(plane(enc, 0, 5), ones_at((7, 1)))
    assert np.array_equal(plane(enc, 0, 6), ones_at((7, 7)))  # gote rook 8b
    assert np.array_equal(plane(enc, 0, 0), ones_at(*[(6, c) for c in range(9)]))
    # P2 = sente: pawn 7f -> row 8-5=3, col 7-1=6; the other pawns on rank g -> row 2
    assert np.array_equal(plane(enc, 0, 14), ones_at((3, 6), *[(2, c) for c in range(9) if c != 6]))
    assert np.array_equal(plane(enc, 0, 14 + 5), ones_at((1, 7)))  # sente bishop 8h -> (1, 7)
    # step 1 = the start position seen by gote: sente's pawn 7g -> (2, 6)
    assert np.array_equal(plane(enc, 1, 14), ones_at(*[(2, c) for c in range(9)]))
    assert np.array_equal(plane(enc, 1, 7), ones_at((8, 4)))
    assert not enc[2 * STEP : 360].any()  # steps 2..7 zero
    assert enc[360].min() == 1.0  # gote to move
    assert np.allclose(enc[361], 1 / 100)


def test_encode_rotation_asymmetric_position() -> None:
    sfen = "8k/9/9/9/9/9/9/1S5+r1/4K4 {} - 1"
    sente = GAME.state_from_text(sfen.format("b")).encode()
    gote = GAME.state_from_text(sfen.format("w")).encode()
    # sente view: silver 8h = (7, 1), gote dragon 2h = (7, 7), gote king 1a = (0, 8), king 5i = (8, 4)
    assert np.array_equal(plane(sente, 0, 3), ones_at((7, 1)))
    assert np.array_equal(plane(sente, 0, 7), ones_at((8, 4)))
    assert np.array_equal(plane(sente, 0, 14 + 13), ones_at((7, 7)))
    assert np.array_equal(plane(sente, 0, 14 + 7), ones_at((0, 8)))
    assert sente[0:28].sum() == 4
    # gote view: everything rotated 180 degrees and the colours swapped
    assert np.array_equal(plane(gote, 0, 13), ones_at((1, 1)))
    assert np.array_equal(plane(gote, 0, 7), ones_at((8, 0)))
    assert np.array_equal(plane(gote, 0, 14 + 3), ones_at((1, 7)))
    assert np.array_equal(plane(gote, 0, 14 + 7), ones_at((0, 4)))
    assert np.array_equal(gote[0:14], sente[14:28, ::-1, ::-1])
    assert np.array_equal(gote[14:28], sente[0:14, ::-1, ::-1])


def test_encode_prisoner_planes() -> None:
    sfen = "4k4/9/9/9/9/9/9/9/4K4 {} RBGSNL2P3gp 1"
    sente = GAME.state_from_text(sfen.format("b")).encode()
    mine = [2 / 18, 1 / 4, 1 / 4, 1 / 4, 1 / 4, 1 / 2, 1 / 2]  # P L N S G B R
    theirs = [1 / 18, 0, 0, 0, 3 / 4, 0, 0]
    for i in range(7):
        assert np.allclose(plane(sente, 0, 31 + i), mine[i])
        assert np.allclose(plane(sente, 0, 38 + i), theirs[i])
    gote = GAME.state_from_text(sfen.format("w")).encode()
    for i in range(7):
        assert np.allclose(plane(gote, 0, 31 + i), theirs[i])
        assert np.allclose(plane(gote, 0, 38 + i), mine[i])


def test_encode_repetition_planes() -> None:
    state = GAME.new_state()
    play(state, "2h3h 8b7b 3h2h 7b8b")  # the start position, second time
    enc = state.encode()
    assert enc[28].min() == 1.0 and not enc[29].any() and not enc[30].any()
    assert not enc[STEP + 28 : STEP + 31].any()  # one ply ago: first occurrence
    assert not enc[4 * STEP + 28 : 4 * STEP + 31].any()  # the original start position
    play(state, "2h3h 8b7b 3h2h 7b8b")  # third time
    enc = state.encode()
    assert enc[28].min() == 1.0 and enc[29].min() == 1.0 and not enc[30].any()
    assert plane(enc, 1, 28).min() == 1.0 and not plane(enc, 1, 29).any()  # seen once before
    assert plane(enc, 4, 28).min() == 1.0 and not plane(enc, 4, 29).any()
    play(state, "2h3h 8b7b 3h2h 7b8b")
    assert state.encode()[28:31].min() == 1.0


def test_encode_history_shifts_along_random_games() -> None:
    """Step t at ply n is step t-2 at ply n-2 (same side to move), and pop restores encode exactly."""
    rng = random.Random(5)
    for _ in range(3):
        state = GAME.new_state()
        encodings = [state.encode()]
        for _ in range(120):
            if state.outcome() is not None:
                break
            state.push(rng.choice(state.legal_moves()))
            enc = state.encode()
            n = len(encodings)
            if n >= 2:
                assert np.array_equal(enc[2 * STEP : 8 * STEP], encodings[n - 2][0 : 6 * STEP])
            assert np.allclose(enc[361], state.game_ply / 100)
            encodings.append(enc)
        for enc in reversed(encodings[:-1]):
            state.pop()
            assert np.array_equal(state.encode(), enc)


def test_encode_of_a_replayed_state_matches_incremental() -> None:
    """A state that never encoded on its way (moves pushed, then one encode) gives the same planes as
    one encoded at every ply, and walking up and down again changes nothing."""
    rng = random.Random(2)
    incremental = GAME.new_state()
    for _ in range(25):
        incremental.push(rng.choice(incremental.legal_moves()))
        incremental.encode()
    fresh = ShogiState()
    for move in incremental.move_stack:
        fresh.push(move)
    assert np.array_equal(fresh.encode(), incremental.encode())
    assert fresh.to_text() == incremental.to_text()
    line = [fresh.pop() for _ in range(5)][::-1]
    for move in line:
        fresh.encode()
        fresh.push(move)
    assert np.array_equal(fresh.encode(), incremental.encode())


def test_eval_key_tracks_encode_inputs() -> None:
    a = play(GAME.new_state(), "2h3h 8b7b 3h2h 7b8b")
    b = GAME.new_state()
    assert a.key() == b.key()
    assert a.eval_key() != b.eval_key()


ROOK_AND_GOLDS_MATE = "8k/9/9/9/9/9/9/9/4K4 b R2G 1"  # no mate in one; a mate by checks with R, G, G


def _forced_mate(state, plies: int) -> bool:
    """Brute force, checks only: can the side to move mate within ``plies`` plies whatever the defence?"""
    if plies < 1:
        return False
    for move in state.legal_moves():
        state.push(move)
        try:
            outcome = state.outcome()
            if outcome is not None:
                if outcome.value < 0 and outcome.reason == "checkmate":
                    return True
                continue
            if not state.board.is_check() or plies < 3:
                continue
            replies = list(state.legal_moves())
            if all(_mates_after(state, reply, plies - 2) for reply in replies):
                return True
        finally:
            state.pop()
    return False


def _mates_after(state, reply, plies: int) -> bool:
    state.push(reply)
    try:
        return _forced_mate(state, plies)
    finally:
        state.pop()


def test_find_mate_proves_mates_the_one_ply_search_misses() -> None:
    state = GAME.state_from_text(ROOK_AND_GOLDS_MATE)
    assert state.mate_in_one() is None and not _forced_mate(state, 3)
    move, plies = state.find_mate(5000)
    assert plies % 2 == 1 and plies >= 5
    state.push(move)  # whatever gote answers, sente still mates in plies - 2 (checked by brute force)
    assert state.board.is_check()
    assert all(_mates_after(state, reply, plies - 2) for reply in state.legal_moves())
    state.pop()
    assert state.find_mate(0) is None  # no budget, no search
    assert GAME.new_state().find_mate(5000) is None
    mate = GAME.state_from_text("8k/9/8P/9/9/9/9/9/4K4 b G 1").find_mate(5000)
    assert mate is not None and mate[1] == 1
    in_check = GAME.state_from_text(
        "lns4n+B/3rg2sl/+Bppp3g1/2k1ppppP/5K3/1PP1P4/P2G1PPPN/3S3RL/LN2G1S2 b 3P 53"
    )
    assert in_check.find_mate(5000) is None


def test_mate_in_one() -> None:
    assert GAME.new_state().mate_in_one() is None
    state = GAME.state_from_text(PAWN_DROP_MATE)  # the pawn drop would mate but is illegal: the gold's
    assert state.move_to_text(state.mate_in_one()) == "G*1b"
    # In check (the gote pawn on 4d checks the king on 4e) cshogi's one-ply search would offer 9c7e,
    # which ignores the check; every legal move is tried here, and none mates.
    state = GAME.state_from_text("lns4n+B/3rg2sl/+Bppp3g1/2k1ppppP/5K3/1PP1P4/P2G1PPPN/3S3RL/LN2G1S2 b 3P 53")
    assert state.board.is_check() and state.mate_in_one() is None
    # Eight mates (six gold drops, two rook promotions): the first in cshogi's move order is the one.
    state = GAME.state_from_text("8k/7R1/9/9/9/9/9/9/K8 b G 1")
    mates = [m for m in state.legal_moves() if _mates(state, m)]
    assert len(mates) == 8 and state.mate_in_one() == mates[0]
    assert state.move_to_text(mates[0]) == "G*2a"


def _mates(state: ShogiState, move: int) -> bool:
    """Whether ``move`` leaves the opponent checkmated."""
    state.push(move)
    try:
        outcome = state.outcome()
        return outcome is not None and outcome.reason == "checkmate"
    finally:
        state.pop()
