"""The compiled shogi encoder that writes only what changed (``encode_position_over``) against the full
encoding (``ShogiState.encode``), one row reused across many positions."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("numba")

from engine.games import shogi_kernel as sk
from engine.games.base import HISTORY_STEPS
from engine.games.shogi import _CS_PLANES_BUFFER, _HAND_SCALE, MOVE_COUNT_SCALE, ShogiState


def _positions(games: int, plies: int, seed: int) -> list[ShogiState]:
    """Every position of ``games`` random games of up to ``plies`` plies (start positions included)."""
    rng = random.Random(seed)
    out = []
    for _ in range(games):
        state = ShogiState()
        out.append(state.copy())
        for _ in range(plies):
            moves = state.legal_moves()
            if not moves or state.outcome() is not None:
                break
            state.push(rng.choice(moves))
            out.append(state.copy())
    return out


def _encode_over(state: ShogiState, out: np.ndarray, marks: np.ndarray, flags: np.ndarray) -> None:
    """``state``'s planes by ``encode_position_over``, from the inputs ``ShogiState.encode_into`` gives
    ``encode_planes``."""
    board = state._board
    reps = state._reps
    steps = min(len(reps), HISTORY_STEPS)
    scratch = np.zeros(_CS_PLANES_BUFFER, np.float32)
    board.piece_planes(scratch)
    black, white = board.pieces_in_hand
    sk.encode_position_over(
        sk.board_codes(scratch),
        np.array([black, white], np.int64),
        np.array(reps[-1 : -steps - 1 : -1], np.int64),
        np.array([*state._moves[-1:-steps:-1], 0], np.int64),
        steps,
        board.turn,
        (board.move_number - 1) / MOVE_COUNT_SCALE,
        _HAND_SCALE,
        out,
        marks,
        flags,
    )


@pytest.mark.parametrize("order", ["shuffled", "played"])
def test_writing_over_an_earlier_encoding_gives_the_full_encoding(order: str) -> None:
    """One row written over and over, positions in random order or as played (a plane that holds its
    value already is not written again: the hands from one ply to the next; history of 1 to 8 steps,
    hands full and empty, either side to move): every value equal to ``ShogiState.encode``'s, and the
    record says where the ones are."""
    positions = _positions(6, 160, seed=4)
    if order == "shuffled":
        random.Random(5).shuffle(positions)
    out = np.zeros((362, 9, 9), np.float32)
    marks = np.zeros(sk.MARKS_WIDTH, np.int64)
    flags = np.zeros(sk.NUM_PLANES, np.bool_)
    steps_seen = set()
    for state in positions:
        _encode_over(state, out, marks, flags)
        expected = state.encode()
        assert out.tobytes() == expected.tobytes()
        constant = (np.arange(362) % 45 >= 28) | (np.arange(362) >= 360)  # repetitions, hands, colour, count
        np.testing.assert_array_equal(flags, expected.reshape(362, 81).any(axis=1) & constant)
        ones = np.flatnonzero(expected.reshape(-1) * ~np.repeat(constant, 81))
        assert sorted(marks[1 : 1 + marks[0]].tolist()) == ones.tolist()
        steps_seen.add(min(len(state._reps), HISTORY_STEPS))
    assert steps_seen == set(range(1, HISTORY_STEPS + 1))
