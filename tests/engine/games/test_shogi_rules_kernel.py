"""The compiled shogi rules (engine/games/shogi_rules_kernel.py) against cshogi and ShogiState: perft on
30+ positions (drops, promotions, checks, pins, pawn-drop mate, dead-end drops, nifu), the legal moves
(cshogi's ints in cshogi's order), check, repetitions, outcomes, the entering-king declaration, the
input planes, the policy indices and the first mating move on every position of seeded random games."""

from __future__ import annotations

import random

import cshogi
import numpy as np
import pytest

from engine.games import shogi_rules_kernel as rk
from engine.games.base import Outcome
from engine.games.shogi import STARTING_SFEN, ShogiRules, ShogiState
from engine.perft import perft_divide

#: Hand-made positions ``(sfen, depth)``: the start, cshogi's most-moves position (593), a famous
#: middlegame full of drops and promotions, pawn-drop mate (1b is mate, so illegal) and its legal twin,
#: nifu with pawns in hand, dead-end drops (pawn/lance on the last rank, knight on the last two), a
#: pinned rook and bishop, a double check, checks by a lance, a knight and a dragon (interpositions by
#: drops included), promotions of every piece kind in and out of the zone, kings in the enemy camp.
HAND_MADE: list[tuple[str, int]] = [
    (STARTING_SFEN, 3),
    ("R8/2K1S1SSk/4B4/9/9/9/9/9/1L1L1L3 b RBGSNLP3g3n17p 1", 2),
    ("l6nl/5+P1gk/2np1S3/p1p4Pp/3P2Sp1/1PPb2P1P/P5GS1/R8/LN4bKL w RGgsn5p 1", 2),
    ("8k/9/6N1G/9/9/9/9/9/4K4 b P 1", 3),
    ("8k/9/8G/9/9/9/9/9/4K4 b P 1", 3),
    ("8k/9/6N1G/9/9/9/9/9/4K4 w P 1", 3),
    ("4k4/9/PPPP1PPPP/9/9/9/9/9/4K4 b 2P 1", 3),
    ("4k4/9/9/9/9/9/9/9/4K4 b LNP 1", 3),
    ("4k4/9/9/9/9/9/9/9/4K4 w lnp 1", 3),
    ("4k4/4r4/9/9/4R3b/9/6S2/9/4K4 b - 1", 3),
    ("4k4/9/9/9/9/7b1/3R5/5S3/4K1r2 b - 1", 3),
    ("4k4/9/9/9/9/9/3n5/9/4K3r b - 1", 3),
    ("4k4/9/9/9/4l4/9/9/9/4K4 b G 1", 3),
    ("4k4/9/9/9/9/9/3n5/9/4K4 b S 1", 3),
    ("4k4/9/9/9/9/9/9/3+r5/4K4 b BG 1", 3),
    ("4k4/1P1L3S1/2N6/9/9/9/9/9/4K4 b - 1", 3),
    ("4k4/2B3R2/9/9/9/9/9/9/4K4 b - 1", 3),
    ("4k4/9/9/1P1L3N1/9/9/9/9/4K4 b - 1", 3),
    ("4k4/9/9/9/9/9/9/9/K8 b 2R2B4G4S4N4L18P 1", 2),
    ("1GGGG1K2/RRBB5/SSSS5/9/9/9/9/9/4k4 b - 1", 2),
    ("9/R3k4/9/9/9/9/9/9/4K4 w - 1", 3),
]


def _random_sfens(count: int, seed: int) -> list[str]:
    """Positions of seeded random games that prefer captures (so hands fill up), half of them in check."""
    rng = random.Random(seed)
    checks: list[str] = []
    quiet: list[str] = []
    while len(checks) < count // 2 or len(quiet) < count - count // 2:
        board = cshogi.Board()
        for ply in range(rng.randrange(40, 160)):
            moves = list(board.legal_moves)
            if not moves:
                break
            captures = [m for m in moves if m >> 20 & 15]
            board.push(rng.choice(captures) if captures and rng.random() < 0.7 else rng.choice(moves))
            if ply > 30 and rng.random() < 0.05:
                (checks if board.is_check() else quiet).append(board.sfen())
    return checks[: count // 2] + quiet[: count - count // 2]


PERFT_POSITIONS: list[tuple[str, int]] = HAND_MADE + [(s, 2) for s in _random_sfens(16, seed=7)]


def _kernel(state: ShogiState, room: int = 64) -> rk.KernelState:
    return rk.from_shogi_state(state, room=room)


@pytest.mark.parametrize(("sfen", "depth"), PERFT_POSITIONS)
def test_perft_divide_equals_cshogi(sfen: str, depth: int) -> None:
    """The same root moves (ints and order) and the same leaf count below each as ShogiState's perft."""
    state = ShogiState(sfen=sfen)
    assert rk.perft_divide(_kernel(state), depth) == perft_divide(state, depth)


def test_perft_positions_cover_checks_and_drops() -> None:
    """The perft set holds positions in check and positions with drops (so it tests evasions and drops)."""
    boards = [cshogi.Board(sfen) for sfen, _ in PERFT_POSITIONS]
    assert len(PERFT_POSITIONS) >= 30
    assert sum(b.is_check() for b in boards) >= 8
    drops = [sum(m >> 7 & 127 >= 81 for m in b.legal_moves) for b in boards]
    assert sum(d > 0 for d in drops) >= 15


def test_start_position_perft_figures() -> None:
    """Published figures: 30, 900, 25470, 719731."""
    s = _kernel(ShogiState())
    assert [rk.perft(s, d) for d in range(5)] == [1, 30, 900, 25470, 719731]


def test_pawn_drop_mate_is_not_generated() -> None:
    """P*1b mates (the gold guards 1b and 2b, the knight 2a): not legal; without the knight it is."""
    mate = _kernel(ShogiState(sfen="8k/9/6N1G/9/9/9/9/9/4K4 b P 1"))
    free = _kernel(ShogiState(sfen="8k/9/8G/9/9/9/9/9/4K4 b P 1"))
    assert "P*1b" not in [rk.to_usi(m) for m in rk.legal_moves(mate)]
    assert "P*1b" in [rk.to_usi(m) for m in rk.legal_moves(free)]
    assert "P*2b" in [rk.to_usi(m) for m in rk.legal_moves(mate)]


def test_dead_end_drops_and_nifu() -> None:
    """No pawn or lance drop on the last rank, no knight drop on the last two, no second pawn on a file."""
    s = _kernel(ShogiState(sfen="4k4/9/PPPP1PPPP/9/9/9/9/9/4K4 b LNP 1"))
    drops = [rk.to_usi(m) for m in rk.legal_moves(s) if m >> 7 & 127 >= 81]
    pawn = {d[2:] for d in drops if d[0] == "P"}
    assert pawn == {"5" + r for r in "bcdefgh"}
    assert not any(d[0] == "L" and d[3] == "a" for d in drops)
    assert not any(d[0] == "N" and d[3] in "ab" for d in drops)
    assert any(d[0] == "N" and d[3] == "c" for d in drops)


# ---- every position of random games ------------------------------------------------------------


def _playout_states(games: int, seed: int, rules: ShogiRules) -> list[ShogiState]:
    """Copies of every position of seeded random games: captures preferred (so hands fill up), a mate in
    one (cshogi's) played half the time it is there (so games end by mate, and positions before a mate
    are common)."""
    rng = random.Random(seed)
    out: list[ShogiState] = []
    for _ in range(games):
        state = ShogiState(rules)
        out.append(state.copy())
        while state.outcome() is None:
            moves = state.legal_moves()
            captures = [m for m in moves if m >> 20 & 15]
            mate = state.mate_in_one() if rng.random() < 0.5 else None
            if mate is not None:
                state.push(mate)
            else:
                state.push(rng.choice(captures) if captures and rng.random() < 0.6 else rng.choice(moves))
            out.append(state.copy())
    return out


@pytest.fixture(scope="module")
def playouts() -> list[ShogiState]:
    return _playout_states(44, seed=11, rules=ShogiRules(max_plies=160))


def test_playouts_are_varied(playouts: list[ShogiState]) -> None:
    """Enough positions, many in check, many with pieces in hand, several games decided by mate."""
    assert len(playouts) >= 5000
    assert sum(s.board.is_check() for s in playouts) >= 300
    assert sum(sum(s.board.pieces_in_hand[s.side_to_move]) >= 4 for s in playouts) >= 1000
    reasons = [o.reason for s in playouts if (o := s.outcome()) is not None]
    assert reasons.count("checkmate") >= 10


def test_playout_moves_checks_repetitions_outcomes(playouts: list[ShogiState]) -> None:
    """Per position: the legal moves (cshogi's ints and order), check, repetitions, the policy indices,
    the declaration and the outcome, from one kernel state pushed along each game."""
    moves = np.empty(rk.MAX_MOVES, dtype=np.int64)
    indices = np.empty(rk.MAX_MOVES, dtype=np.int64)
    s = _kernel(playouts[0], room=200)
    for state in playouts:
        if state.ply == 0:
            s = _kernel(state, room=200)
        else:
            rk.push(s, state.move_stack[-1])
        ref_moves, ref_indices = state.legal_moves_and_indices()
        n = rk.legal_indices_into(s, moves, indices)
        assert moves[:n].tolist() == ref_moves, state.to_text()
        assert indices[:n].tolist() == ref_indices.tolist()
        assert rk.legal_moves_into(s, moves) == n
        rk.order_legal(s, moves, n, indices)
        assert indices[:n].tolist() == ref_indices.tolist()
        assert rk.in_check(s) == state.board.is_check()
        assert rk.repetition_count(s) == state.repetition_count()
        assert rk.can_declare(s) == bool(state.board.is_nyugyoku())
        assert rk.outcome(s) == state.outcome()
        assert rk.outcome_code_given(s, n) == rk.outcome_code(s)


def test_playout_planes(playouts: list[ShogiState]) -> None:
    """encode_into writes ShogiState.encode()'s planes bit for bit (history, repetitions, hands)."""
    out = np.empty((362, 9, 9), dtype=np.float32)
    for state in playouts[::3]:
        rk.encode_into(_kernel(state, room=1), out)
        assert np.array_equal(out, state.encode()), state.to_text()
        assert out.tobytes() == state.encode().tobytes()


def _first_mate(state: ShogiState) -> int:
    """Python reference of mating_slot: the first legal move that gives check and after which outcome()
    says checkmate."""
    for i, move in enumerate(state.legal_moves()):
        state.push(move)
        outcome = state.outcome()
        check = state.board.is_check()
        state.pop()
        if check and outcome is not None and outcome.reason == "checkmate":
            return i
    return -1


def test_mating_slot_equals_reference(playouts: list[ShogiState]) -> None:
    """The first mating move of every fourth position (and of every position one ply before a mate)."""
    moves = np.empty(rk.MAX_MOVES, dtype=np.int64)
    buf = np.empty(rk.MAX_MOVES, dtype=np.int64)
    found = 0
    for i, state in enumerate(playouts):
        before_end = i + 1 < len(playouts) and playouts[i + 1].outcome() is not None
        if i % 4 and not before_end:
            continue
        s = _kernel(state, room=2)
        n = rk.legal_moves_into(s, moves)
        ref = _first_mate(state)
        assert rk.mating_slot(s, moves, n, buf) == ref, state.to_text()
        assert rk.repetition_count(s) == state.repetition_count()  # the state is unchanged
        found += ref >= 0
    assert found >= 20


def test_gives_check_equals_the_check_after_the_move(playouts: list[ShogiState]) -> None:
    """mating_slot plays only the moves its test says check: the test is exact (every legal move of every
    third playout position, direct, sliding through the square left, discovered, by drops and
    promotions)."""
    moves = np.empty(rk.MAX_MOVES, dtype=np.int64)
    checks = 0
    for state in playouts[::3]:
        s = _kernel(state, room=2)
        n = rk.legal_moves_into(s, moves)
        top = int(s.meta[rk.TOP])
        us = int(s.st[top, rk.TURN])
        eksq = int(s.st[top, rk._KSQ + 1 - us])
        dlo, dhi = rk._discoverers(s.pos, top, us, eksq)
        for move in moves[:n]:
            rk.push(s, int(move))
            expected = rk.in_check(s)
            rk.pop(s)
            assert rk._gives_check(s.pos, top, us, eksq, int(move), dlo, dhi) == expected, (
                state.to_text(),
                rk.to_usi(int(move)),
            )
            checks += expected
    assert checks >= 500


def test_a_move_that_leaves_no_move_out_of_check_is_no_mate_in_one() -> None:
    """ShogiState.outcome() calls a position without legal moves "checkmate" even out of check: 8f7h+
    leaves sente's king (7f) no move though it gives no check.  A mate in one gives check, so
    mating_slot (and ShogiState.mate_in_one) pass it by; the search finds the position lost when it
    makes the child."""
    sfen = "l1b3+b1p/n7r/pp4s2/1r6s/g5p2/1nK1k1lng/5s3/l6l1/3g5 w gsn14p 194"
    state = ShogiState(sfen=sfen)
    s = _kernel(state)
    moves = np.empty(rk.MAX_MOVES, dtype=np.int64)
    n = rk.legal_moves_into(s, moves)
    slot = rk.mating_slot(s, moves, n, np.empty(rk.MAX_MOVES, dtype=np.int64))
    assert slot == _first_mate(state)
    stalemating = [i for i in range(n) if rk.to_usi(int(moves[i])) == "8f7h+"]
    assert len(stalemating) == 1 and slot != stalemating[0]
    rk.push(s, int(moves[stalemating[0]]))
    assert not rk.in_check(s)
    assert rk.legal_moves(s) == []
    assert rk.outcome(s) == Outcome(-1.0, "checkmate")
    assert state.mate_in_one() == (None if slot < 0 else int(moves[slot]))


# ---- state handling, repetitions, outcomes -----------------------------------------------------------


def _line(
    sfen: str | None, usi: list[str], rules: ShogiRules | None = None
) -> tuple[ShogiState, rk.KernelState]:
    """A ShogiState and a kernel state (built at the start, then pushed) after the ``usi`` moves."""
    state = ShogiState(rules, sfen=sfen)
    s = _kernel(state)
    for text in usi:
        move = state.parse_move(text)
        assert rk.from_usi(s, text) == move
        state.push(move)
        rk.push(s, move)
    return state, s


def test_plain_sennichite_is_a_draw() -> None:
    state, s = _line(None, ["5i5h", "5a5b", "5h5i", "5b5a"] * 3)
    assert rk.repetition_count(s) == 3 == state.repetition_count()
    assert rk.outcome_code(s) == rk.REPETITION_DRAW
    assert rk.outcome(s) == state.outcome() == Outcome(0.0, "repetition")
    rk.pop(s)
    assert rk.outcome(s) is None


def test_perpetual_check_loses_for_the_checker() -> None:
    """Sente's rook checks on every move: at the fourth occurrence sente (to move) loses; one ply earlier
    on the line gote, to move and in check, wins."""
    cycle = ["9c9b", "5b5c", "9b9c", "5c5b"]
    state, s = _line("9/4k4/R8/9/9/9/9/9/4K4 b - 1", cycle * 3)
    assert rk.outcome_code(s) == rk.PERPETUAL_LOSS
    assert rk.outcome(s) == state.outcome() == Outcome(-1.0, "perpetual-check")
    state, s = _line("9/R3k4/9/9/9/9/9/9/4K4 w - 1", (cycle[1:] + cycle[:1]) * 3)
    assert rk.in_check(s)
    assert rk.outcome_code(s) == rk.PERPETUAL_WIN
    assert rk.outcome(s) == state.outcome() == Outcome(1.0, "perpetual-check")


def test_max_length_and_draw_game_ply() -> None:
    moves = ["7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e"]
    state, s = _line(None, moves, ShogiRules(max_plies=6))
    assert rk.outcome(s) == state.outcome() == Outcome(0.0, "max-length")
    rk.pop(s)
    assert rk.outcome(s) is None
    sfen = STARTING_SFEN.replace(" 1", " 97")
    state, s = _line(sfen, moves[:4], ShogiRules(draw_game_ply=100))
    assert state.length_limit == 4
    assert rk.outcome(s) == state.outcome() == Outcome(0.0, "max-length")


@pytest.mark.parametrize(
    ("sfen", "declares"),
    [
        ("1GGGG1K2/RRBB5/SSSS5/9/9/9/9/9/4k4 b - 1", True),  # 12 pieces, 28 points
        ("1GGGG1K2/RRBB5/SSS6/9/9/9/9/9/4k4 b - 1", False),  # 27 points: sente needs 28
        ("1GGGG1K2/RRBB5/SSS6/9/9/9/9/9/4k4 b S 1", True),  # the hand counts
        ("1GGGG1K2/RRBB5/S8/9/9/9/9/9/4k4 b 3S 1", False),  # 9 pieces in the camp
        ("4K4/9/9/9/9/9/6sss/5bbrr/2k1gggg1 w - 1", True),  # gote needs 27
        ("4K4/9/9/9/9/9/7ss/5bbrr/2k1gggg1 w - 1", False),  # 10 pieces, 26 points
        ("1GGGG1K2/RRBB5/SSSS5/9/9/9/9/9/4k4 w - 1", False),  # not the declarer's turn
    ],
)
def test_entering_king_declaration(sfen: str, declares: bool) -> None:
    state = ShogiState(sfen=sfen)
    s = _kernel(state)
    assert rk.can_declare(s) == declares == bool(state.board.is_nyugyoku())
    assert rk.outcome(s) == state.outcome()
    assert (rk.outcome_code(s) == rk.ENTERING_KING) == declares
    off = ShogiState(ShogiRules(entering_king=False), sfen=sfen)
    assert rk.outcome(_kernel(off)) == off.outcome()
    assert rk.outcome_code(_kernel(off)) != rk.ENTERING_KING


def test_push_pop_rewind_copy() -> None:
    state, s = _line(None, ["7g7f", "3c3d", "8h2b+", "3a2b"])
    assert rk.pop(s) == state.move_stack[-1]
    top = int(s.meta[0])
    copy = rk.copy_state(s)
    rk.push(s, rk.from_usi(s, "4a3b"))
    assert rk.zobrist_hash(copy) != rk.zobrist_hash(s)
    rk.rewind(s, top)
    assert rk.zobrist_hash(copy) == rk.zobrist_hash(s)
    assert rk.legal_moves(copy) == rk.legal_moves(s)
    rk.rewind(s, 0)
    assert rk.pop(s) == -1
    assert rk.legal_moves(s) == list(cshogi.Board().legal_moves)


def test_transpositions_share_a_key_and_count_as_repetitions() -> None:
    _, a = _line(None, ["7g7f", "3c3d", "2g2f"])
    _, b = _line(None, ["2g2f", "3c3d", "7g7f"])
    _, c = _line(None, ["2g2f", "8c8d", "7g7f"])
    assert rk.zobrist_hash(a) == rk.zobrist_hash(b) != rk.zobrist_hash(c)
    _, d = _line(None, ["2h3h", "8b7b", "3h2h", "7b8b"])
    assert rk.zobrist_hash(d) == rk.zobrist_hash(_kernel(ShogiState()))
    assert rk.repetition_count(d) == 1


def test_from_shogi_state_replays_a_line_from_its_first_position() -> None:
    """A state made from an SFEN keeps that first position as row 0 and its moves as the history."""
    state, s = _line("4k4/9/9/9/9/9/9/9/4K4 b G 1", ["G*5c", "5a4a", "5c4c"])
    again = rk.from_shogi_state(state, room=3)
    assert int(again.meta[0]) == 3 and again.pos.shape[0] == 7
    assert rk.zobrist_hash(again) == rk.zobrist_hash(s)
    assert np.array_equal(rk.encode(again), state.encode())
    assert rk.legal_moves(again) == list(state.board.legal_moves)
    assert [rk.pop(again) for _ in range(3)] == list(state.move_stack[::-1])
