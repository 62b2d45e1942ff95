"""The compiled per-leaf path of the shogi adapter (``encode_into``, ``legal_move_arrays``, the legal-move
memo of ``outcome``) against the implementation it replaced, kept here as the reference: the planes
computed per position from cshogi's ``piece_planes`` and gathered with numpy, the indices by a numpy
table lookup, the outcome by ``is_game_over()``.  Every position of many random games is compared,
games steered into drops, promotions, captures of promoted pieces, sennichite, perpetual check,
entering-king declarations, checkmates and the length cap; positions are also compared while walking
back with ``pop`` and on copies."""

from __future__ import annotations

import random
from collections.abc import Iterator

import cshogi
import numpy as np
import pytest

from engine.games import shogi as shogi_module
from engine.games.base import HISTORY_STEPS, Outcome
from engine.games.shogi import (
    HAND_MAX,
    MOVE_INDEX,
    PLANE_PIECE_TYPES,
    STARTING_SFEN,
    ShogiGame,
    ShogiRules,
    ShogiState,
    encode_planes_numpy,
    policy_indices_numpy,
    square_to_pos,
    warm_up,
)

PIECE_PLANES = 14
NUM_PLANES = 362
STEP = 45
PIECE_BITS = 2 * PIECE_PLANES * 81


# ---- the reference: the implementation before the compiled kernel --------------------------------
def _piece_gather() -> np.ndarray:
    """``gather[side]``: flat indices into cshogi's ``piece_planes`` giving our 28 planes seen by ``side``."""
    gather = np.empty((2, 2 * PIECE_PLANES, 81), dtype=np.int64)
    for side in (0, 1):
        for plane in range(2 * PIECE_PLANES):
            colour = side if plane < PIECE_PLANES else 1 - side
            cs_plane = colour * PIECE_PLANES + PLANE_PIECE_TYPES[plane % PIECE_PLANES] - 1
            for square in range(81):
                gather[side, plane, square_to_pos(square, side)] = cs_plane * 81 + square
    return gather.reshape(2, -1)


GATHER = _piece_gather()
HAND_SCALE = np.array([1.0 / m for m in HAND_MAX] * 3, dtype=np.float32)


def reference_position_planes(board: cshogi.Board) -> tuple[bytes, bytes, bytes, bytes]:
    buf = np.zeros(104 * 81, dtype=np.float32)
    board.piece_planes(buf)
    packed = np.packbits(buf[GATHER] != 0, axis=1)
    black, white = board.pieces_in_hand
    hands = np.array(black + white + black, dtype=np.float32) * HAND_SCALE
    return (packed[0].tobytes(), packed[1].tobytes(), hands[:14].tobytes(), hands[7:].tobytes())


class ReferenceShogi:
    """The replaced ShogiState's move stacks, outcome, legal indices and encode (no plane cache: every
    history position is computed by walking the board back, as the old ``_fill_planes`` did on a miss)."""

    def __init__(self, sfen: str, rules: ShogiRules) -> None:
        self.board = cshogi.Board(sfen)
        self.rules = rules
        key = self.board.zobrist_hash()
        self.moves: list[int] = []
        self.keys = [key]
        self.reps = [0]
        self.counts = {key: 1}

    def push(self, move: int) -> None:
        self.board.push(move)
        key = self.board.zobrist_hash()
        seen = self.counts.get(key, 0)
        self.counts[key] = seen + 1
        self.moves.append(move)
        self.keys.append(key)
        self.reps.append(seen)

    def pop(self) -> None:
        key = self.keys.pop()
        self.counts[key] -= 1
        if not self.counts[key]:
            del self.counts[key]
        self.reps.pop()
        self.board.pop()
        self.moves.pop()

    def legal_moves_and_indices(self) -> tuple[list[int], np.ndarray]:
        moves = list(self.board.legal_moves)
        if not moves:
            return moves, np.empty(0, dtype=np.int64)
        return moves, MOVE_INDEX[self.board.turn][np.array(moves, dtype=np.int64) & 0x7FFF]

    def outcome(self) -> Outcome | None:
        if self.reps[-1] >= 3:
            return self._repetition_outcome()
        if self.rules.entering_king and self.board.is_nyugyoku():
            return Outcome(1.0, "entering-king")
        if self.board.is_game_over():
            return Outcome(-1.0, "checkmate")
        if len(self.moves) >= self.rules.max_plies:
            return Outcome(0.0, "max-length")
        return None

    def _repetition_outcome(self) -> Outcome:
        first = self.keys.index(self.keys[-1])
        checks = []
        for _ in range(len(self.keys) - 1 - first):
            checks.append(self.board.is_check())
            self.board.pop()
        for move in self.moves[first:]:
            self.board.push(move)
        if all(checks[0::2]):
            return Outcome(1.0, "perpetual-check")
        if all(checks[1::2]):
            return Outcome(-1.0, "perpetual-check")
        return Outcome(0.0, "repetition")

    def encode(self) -> np.ndarray:
        board = self.board
        side = board.turn
        steps = min(len(self.keys), HISTORY_STEPS)
        records = []
        for t in range(steps):
            records.append(reference_position_planes(board))
            if t + 1 < steps:
                board.pop()
        for t in range(steps - 1, 0, -1):
            board.push(self.moves[-t])
        out = np.zeros((NUM_PLANES, 81), dtype=np.float32)
        hist = out[: HISTORY_STEPS * STEP].reshape(HISTORY_STEPS, STEP, 81)
        packed = np.frombuffer(b"".join([r[side] for r in records]), dtype=np.uint8)
        bits = np.unpackbits(packed.reshape(steps, -1), axis=1, count=PIECE_BITS)
        hist[:steps, :28] = bits.reshape(steps, 28, 81)
        hands = np.frombuffer(b"".join([r[2 + side] for r in records]), dtype=np.float32)
        hist[:steps, 31:] = hands.reshape(steps, 14, 1)
        for t in range(steps):
            seen = self.reps[-1 - t]
            if seen:
                hist[t, 28 : 28 + min(seen, 3)] = 1.0
        if side:
            out[360] = 1.0
        out[361] = (board.move_number - 1) / 100.0
        return out.reshape(NUM_PLANES, 9, 9)


# ---- steered random games ------------------------------------------------------------------------
def _reversal(board: cshogi.Board, moves: list[int]) -> int | None:
    """A legal move taking the mover's own last move back (piece from its to-square to its from-square)."""
    history = board.history
    if len(history) < 2:
        return None
    last = history[-2]
    if cshogi.move_is_drop(last):
        return None
    for move in moves:
        if (
            not cshogi.move_is_drop(move)
            and cshogi.move_from(move) == cshogi.move_to(last)
            and cshogi.move_to(move) == cshogi.move_from(last)
            and not cshogi.move_is_promotion(move)
        ):
            return move
    return None


def _checking(board: cshogi.Board, moves: list[int]) -> list[int]:
    checks = []
    for move in moves:
        board.push(move)
        if board.is_check():
            checks.append(move)
        board.pop()
    return checks


def steered_move(board: cshogi.Board, moves: list[int], rng: random.Random) -> int:
    """A random legal move, often a take-back (repetitions), a check (perpetual checks) or a capture,
    promotion or drop."""
    roll = rng.random()
    if roll < 0.5:
        back = _reversal(board, moves)
        if back is not None:
            return back
    if roll < 0.65:
        checks = _checking(board, moves)
        if checks:
            return rng.choice(checks)
    if roll < 0.8:
        special = [
            m for m in moves if cshogi.move_cap(m) or cshogi.move_is_promotion(m) or cshogi.move_is_drop(m)
        ]
        if special:
            return rng.choice(special)
    return rng.choice(moves)


ENTERING_KING = "+L+NSG1GS+N+L/1R2K2B1/9/9/9/9/9/9/8k b 10P 1"
#: Gote king to 6d, sente rook to 5f; then the rook checks from 6f / 7f while the king shuffles.
PERPETUAL_SETUP = ["5g5f", "5c5d", "2h5h", "5a5b", "5f5e", "5b5c", "5h5f", "5c6d"]
CHECK_CYCLE = ["5f6f", "6d7d", "6f7f", "7d6d"]
CYCLE_AGAIN = ["7f6f", "6d7d", "6f7f", "7d6d"]
AFTER_ONE_CYCLE = "lnsg1gsnl/1r5b1/pppp1pppp/3kp4/4P4/2R6/PPPP1PPPP/1B7/LNSGKGSNL b - 13"
#: (start, rules, scripted first moves: the game goes on with steered random moves after them).
STARTS: list[tuple[str, ShogiRules, list[str]]] = [
    (STARTING_SFEN, ShogiRules(), []),
    (STARTING_SFEN, ShogiRules(max_plies=40), []),
    ("lnsg1g1nl/2k2rs2/ppppp1bpp/5pp2/9/2P1P4/PP1P1PP1P/1BK2S1R1/LNSG1G1NL w P 20", ShogiRules(), []),
    ("8k/9/9/9/9/9/9/9/4K4 b R2G 1", ShogiRules(), []),  # sparse material, drops
    (ENTERING_KING.replace("10P", "9P"), ShogiRules(), []),  # one point short of a declaration
    (ENTERING_KING, ShogiRules(), []),
    (ENTERING_KING, ShogiRules(entering_king=False), []),
    ("4k4/9/9/9/9/9/9/9/4K4 w RBGSNL2P3gp 31", ShogiRules(max_plies=60), []),
    # perpetual check: the checker loses, seen from the checked side and from the checker
    (STARTING_SFEN, ShogiRules(), PERPETUAL_SETUP + CHECK_CYCLE + CYCLE_AGAIN * 2 + ["7f6f"]),
    (AFTER_ONE_CYCLE, ShogiRules(), CYCLE_AGAIN * 3),
    # the checks began after the first occurrence: a plain repetition draw
    (
        STARTING_SFEN,
        ShogiRules(),
        PERPETUAL_SETUP + CHECK_CYCLE + ["7f8f", "6d5c", "8f7f", "5c6d"] + CYCLE_AGAIN * 2,
    ),
]


def lockstep_games(games: int, max_plies: int, seed: int) -> Iterator[tuple[ShogiState, ReferenceShogi]]:
    """Yield the new state and the reference at every position of steered random games (mutated in
    place between yields), ending each game at its outcome."""
    rng = random.Random(seed)
    for g in range(games):
        sfen, rules, script = STARTS[g % len(STARTS)]
        game = ShogiGame(rules)
        state = game.state_from_text(sfen)
        reference = ReferenceShogi(state.to_text(), rules)
        for ply in range(max_plies):
            yield state, reference
            if reference.outcome() is not None:
                break
            if ply < len(script):
                move = state.parse_move(script[ply])
            else:
                move = steered_move(reference.board, list(reference.board.legal_moves), rng)
            state.push(move)
            reference.push(move)


def assert_same(state: ShogiState, reference: ReferenceShogi) -> Outcome | None:
    """Every per-leaf answer of ``state`` equals the reference's; returns the outcome."""
    outcome = state.outcome()
    assert outcome == reference.outcome()
    moves, indices = state.legal_moves_and_indices()  # after outcome(): its remembered moves
    ref_moves, ref_indices = reference.legal_moves_and_indices()
    assert moves == ref_moves and indices.dtype == np.int64
    assert np.array_equal(indices, ref_indices)
    array, array_indices = state.legal_move_arrays()
    assert array.tolist() == ref_moves and np.array_equal(array_indices, ref_indices)
    assert state.legal_moves() == ref_moves
    assert np.array_equal(state.encode(), reference.encode())
    assert state.repetition_count() == reference.reps[-1] and state.key() == reference.keys[-1]
    assert state.to_text() == reference.board.sfen()
    return outcome


@pytest.fixture(scope="module", autouse=True)
def compiled() -> None:
    warm_up()


def test_every_position_of_steered_random_games_matches_the_reference() -> None:
    seen: dict[str, int] = {}
    positions = drops = promotions = promoted_captures = 0
    for state, reference in lockstep_games(games=48, max_plies=160, seed=17):
        outcome = assert_same(state, reference)
        positions += 1
        if outcome is not None:
            seen[outcome.reason] = seen.get(outcome.reason, 0) + 1
        if state.ply:
            last = state.move_stack[-1]
            drops += cshogi.move_is_drop(last)
            promotions += cshogi.move_is_promotion(last)
            promoted_captures += cshogi.move_cap(last) > 8
    assert positions > 3000
    assert drops > 100 and promotions > 100 and promoted_captures > 20
    for reason in ("repetition", "perpetual-check", "checkmate", "entering-king", "max-length"):
        assert seen.get(reason, 0) > 0, (reason, seen)


def test_numpy_fallback_matches_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without numba (the optional ``compiled`` extra) the numpy versions of the kernels serve: the
    same answers on every position."""
    fallback = shogi_module.Kernels(encode_planes_numpy, policy_indices_numpy)
    monkeypatch.setattr(shogi_module, "_kernels", lambda: fallback)
    reasons = set()
    for state, reference in lockstep_games(games=22, max_plies=80, seed=29):
        outcome = assert_same(state, reference)
        if outcome is not None:
            reasons.add(outcome.reason)
    assert {"repetition", "perpetual-check", "entering-king", "max-length"} <= reasons


def test_walking_back_and_copies_match_the_reference() -> None:
    """pop restores every answer; a copy answers as the original, then diverges independently."""
    rng = random.Random(3)
    for state, reference in lockstep_games(games=16, max_plies=120, seed=5):
        if state.ply < 12 or rng.random() > 0.05:
            continue
        twin = state.copy()
        assert np.array_equal(twin.encode(), state.encode())
        line = []
        for _ in range(rng.randrange(1, 10)):
            line.append(state.pop())
            reference.pop()
            assert_same(state, reference)
        for move in reversed(line):
            state.push(move)
            reference.push(move)
        assert np.array_equal(twin.encode(), state.encode())
        assert twin.eval_key() == state.eval_key()


def test_encode_into_writes_every_value_of_a_batch_row() -> None:
    states = [ShogiGame().new_state()]
    for text in ["7g7f", "3c3d", "8h2b+", "3a2b", "B*4e"]:
        state = states[-1].copy()
        state.push(state.parse_move(text))
        states.append(state)
    batch = np.full((len(states), NUM_PLANES, 9, 9), np.nan, dtype=np.float32)
    for i, state in enumerate(states):
        state.encode_into(batch[i])
    for i, state in enumerate(states):
        assert np.array_equal(batch[i], state.encode())
    # a strided destination (not C-contiguous) and a wrong shape
    wide = np.full((NUM_PLANES, 9, 18), np.nan, dtype=np.float32)
    states[-1].encode_into(wide[:, :, ::2])
    assert np.array_equal(wide[:, :, ::2], states[-1].encode())
    with pytest.raises(ValueError):
        states[0].encode_into(np.zeros((NUM_PLANES, 81), dtype=np.float32))
    with pytest.raises(ValueError):
        states[0].encode_into(np.zeros((NUM_PLANES, 9, 9), dtype=np.float64))


def test_outcome_remembers_moves_only_for_the_same_position() -> None:
    state = ShogiGame().new_state()
    assert state.outcome() is None
    first = state.legal_moves()
    first.clear()  # the caller's list: the state does not see the change
    assert len(state.legal_moves()) == 30
    state.outcome()
    state.push(state.parse_move("7g7f"))
    assert len(state.legal_moves()) == 30 and state.side_to_move == 1
    state.outcome()
    state.pop()
    assert [state.move_to_text(m) for m in state.legal_moves()][:3] == [
        state.move_to_text(m) for m in list(state.board.legal_moves)[:3]
    ]
