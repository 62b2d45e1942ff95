"""The compiled shogi encoder that writes only what changed (``encode_position_over``) against the full
encoding (``ShogiState.encode``), one row reused across many positions."""

from __future__ import annotations

import random

import numpy as np
import pytest

from engine.games import shogi_kernel as sk
from engine.games.base import HISTORY_STEPS
from engine.games.shogi import CS_PLANES_BUFFER, HAND_SCALE, MOVE_COUNT_SCALE, ShogiState
from engine.uint8_io import FLOAT_PLANES, Uint8Quantization


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


def _encode_over(
    state: ShogiState,
    out: np.ndarray,
    marks: np.ndarray,
    flags: np.ndarray,
    quantization: np.ndarray = FLOAT_PLANES,
) -> None:
    """``state``'s planes by ``encode_position_over``, from the inputs ``ShogiState.encode_into`` gives
    ``encode_planes``."""
    board = state._board
    reps = state._reps
    steps = min(len(reps), HISTORY_STEPS)
    scratch = np.zeros(CS_PLANES_BUFFER, np.float32)
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
        HAND_SCALE,
        out,
        marks,
        flags,
        quantization[0],
        quantization[1],
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


def _onnxruntime_quantize(planes: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """``planes`` through onnxruntime's own ``QuantizeLinear`` (a one-node model), the node an int8
    network starts with."""
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["q"])],
        "quantize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(planes.shape))],
        [helper.make_tensor_value_info("q", TensorProto.UINT8, list(planes.shape))],
        [
            helper.make_tensor("scale", TensorProto.FLOAT, [], [scale]),
            helper.make_tensor("zero", TensorProto.UINT8, [], [zero_point]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (q,) = session.run(None, {"x": planes})
    return np.asarray(q)


@pytest.mark.parametrize(
    ("scale", "zero_point"),
    [(0.0049803923, 0), (1 / 255, 0), (0.0123, 7), (0.2, 0)],  # the shipped copies' two, and odd ones
)
def test_uint8_rows_are_what_onnxruntime_makes_of_the_float_rows(scale: float, zero_point: int) -> None:
    """The encoder writing uint8 (one row over and over, positions shuffled) gives exactly the bytes
    onnxruntime's ``QuantizeLinear`` makes of the float encoding, channels last, and
    ``Uint8Quantization.quantize`` does too (channels first): hands (fractions of a kind's most), repetitions, the move count (past the top of the
    range at 0.2: saturated), and the zero point where the float is 0."""
    q = Uint8Quantization(np.float32(scale).item(), zero_point)
    positions = _positions(4, 200, seed=11)
    random.Random(12).shuffle(positions)
    out = np.full((9, 9, 362), zero_point, np.uint8)  # channels last
    marks = np.zeros(sk.MARKS_WIDTH, np.int64)
    flags = np.zeros(sk.NUM_PLANES, np.bool_)
    floats = np.stack([state.encode() for state in positions])
    expected = _onnxruntime_quantize(floats, q.scale, zero_point)
    np.testing.assert_array_equal(q.quantize(floats), expected)
    assert len(np.unique(expected)) > 4  # not only the zero point and the ones
    for i, state in enumerate(positions):
        _encode_over(state, out, marks, flags, q.kernel_args)
        assert out.tobytes() == expected[i].transpose(1, 2, 0).tobytes(), f"position {i}: {state.to_text()}"
