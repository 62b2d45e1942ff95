"""Compiled per-leaf work of the shogi adapter (:mod:`engine.games.shogi`): the 362 input planes written
straight into a caller's buffer, and the policy indices of a legal-move array.

cshogi does the rules in C++; what is left per leaf is moving numbers between cshogi and the network's
arrays, and that is done here with numba instead of numpy calls on small arrays.  The compiled search
tree (:mod:`engine.search.compiled_shogi`) draws its leaves with :func:`encode_position_over` from the
board codes of the compiled rules (:mod:`engine.games.shogi_rules_kernel`), over each buffer row's
previous encoding.

Encoding without a cache of per-position planes: the kernel reads the *current* position only (cshogi's
``piece_planes`` one-hot buffer and the two hands) and rebuilds the up to seven history positions by
taking back the last moves on its own 81-square array.  A cshogi move ``int`` carries everything an undo
needs: bits 0-6 the to-square, 7-13 the from-square (``80 + piece type`` for a drop), 14 the promotion
flag, 16-19 the type of the moving piece before the move and 20-23 the type of the captured piece (0 for
none; cshogi's own ``push`` reads these bits, so every move the board accepts has them).

Board codes inside: 0 empty, ``colour * 16 + piece type`` (cshogi's codes: colour 0 sente, 1 gote; piece
types PAWN=1 .. ROOK=6, GOLD=7, KING=8, PROM_PAWN=9 .. PROM_ROOK=14).

Every compiled function is ``@njit(cache=True)``: the first call in a fresh cache compiles (about a
second), later processes load the machine code from ``__pycache__``.  :mod:`engine.games.shogi` imports
this module on first use, so importing the rules does not import numba.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.jit import njit as _njit
from engine.jit import njit_no_alloc as _njit_no_alloc

_SQUARES = 81
_PIECE_TYPES = 14
_STEP_PLANES = 45
_REPETITION_OFFSET = 28
_HAND_OFFSET = 31
_HAND_KINDS = 7
_HISTORY_STEPS = 8
_COLOUR_PLANE = 360
_MOVE_COUNT_PLANE = 361
_MOVE_KEY_MASK = 0x7FFF

#: Our piece plane (0..13: P L N S G B R K +P +L +N +S +B +R) of each cshogi piece type (index 0 unused).
_PLANE_OF_TYPE = np.array([-1, 0, 1, 2, 3, 5, 6, 4, 7, 8, 9, 10, 11, 12, 13], dtype=np.int64)
#: Hand slot (P L N S G B R, cshogi's ``pieces_in_hand`` order) of each unpromoted cshogi piece type.
_HAND_SLOT_OF_TYPE = np.array([-1, 0, 1, 2, 3, 5, 6, 4], dtype=np.int64)


@_njit_no_alloc
def _oriented_pos(square: int, side: int) -> int:
    """Oriented position ``row * 9 + col`` of cshogi square ``square`` seen by ``side`` (``shogi.square_to_pos``)."""
    pos = (square % 9) * 9 + 8 - square // 9
    return pos if side == 0 else _SQUARES - 1 - pos


@_njit_no_alloc
def _read_board(piece_planes: npt.NDArray[np.float32], board: npt.NDArray[np.int64]) -> None:
    """Fill ``board`` (int64 ``[81]``, board codes) from cshogi's one-hot ``piece_planes`` (float32, at
    least ``28 * 81``: sente's 14 piece types then gote's, ``[plane][square]``) and clear those planes
    (cshogi only writes the ones, so the buffer must be zero before its next use)."""
    board[:] = 0
    for colour in range(2):
        for piece in range(1, _PIECE_TYPES + 1):
            base = (colour * _PIECE_TYPES + piece - 1) * _SQUARES
            for square in range(_SQUARES):
                if piece_planes[base + square] != 0.0:
                    board[square] = colour * 16 + piece
                    piece_planes[base + square] = 0.0


@_njit_no_alloc
def _undo_move(board: npt.NDArray[np.int64], hands: npt.NDArray[np.int64], move: int, mover: int) -> None:
    """Take ``move`` (made by ``mover``) back on ``board`` (int64 ``[81]``) and ``hands`` (int64 ``[2, 7]``)."""
    to = move & 0x7F
    frm = (move >> 7) & 0x7F
    if frm >= _SQUARES:  # a drop of piece type frm - 80
        board[to] = 0
        hands[mover, _HAND_SLOT_OF_TYPE[frm - _SQUARES + 1]] += 1
        return
    moved = (move >> 16) & 15
    captured = (move >> 20) & 15
    board[frm] = mover * 16 + moved
    if captured:
        board[to] = (1 - mover) * 16 + captured
        base = captured - 8 if captured > 8 else captured
        hands[mover, _HAND_SLOT_OF_TYPE[base]] -= 1
    else:
        board[to] = 0


#: Entries of a row's record for :func:`encode_position_over`: a count, then the flat offsets of the
#: piece planes' ones (40 pieces on the board at most, in each of the 8 steps).
MARKS_WIDTH = 1 + _HISTORY_STEPS * 40
#: Planes of an encoding (the flags of :func:`encode_position_over`).
NUM_PLANES = _MOVE_COUNT_PLANE + 1


@_njit
def encode_planes(
    piece_planes: npt.NDArray[np.float32],
    history: npt.NDArray[np.int64],
    steps: int,
    side: int,
    move_count: float,
    hand_scale: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32],
) -> None:
    """Write the 362 input planes (layout: :mod:`engine.games.shogi`'s docstring) into ``out``.

    Args:
        piece_planes: float32 ``[>= 28 * 81]``, cshogi's ``piece_planes`` of the current position;
            its first 28 planes are cleared (left zero for the next call).
        history: int64 ``[14 + 2 * steps - 1]``: the current hands (sente's 7 then gote's 7, cshogi's
            ``pieces_in_hand`` order), then the repetition counts of the ``steps`` newest positions
            (newest first), then the ``steps - 1`` newest moves (newest first; move ``i`` led to
            position ``i``).
        steps: history steps to draw, 1..8 (positions since the state's first one, capped at 8).
        side: 0 sente to move, 1 gote.
        move_count: the value of the total-move-count plane.
        hand_scale: float32 ``[7]``: ``1 / max`` of each hand kind.
        out: float32 ``[362, 9, 9]``, C-contiguous: every value is written.
    """
    board = np.empty(_SQUARES, dtype=np.int64)
    _read_board(piece_planes, board)
    hands = history[: 2 * _HAND_KINDS].copy().reshape(2, _HAND_KINDS)
    reps = history[2 * _HAND_KINDS : 2 * _HAND_KINDS + steps]
    moves = history[2 * _HAND_KINDS + steps :]
    out[...] = 0.0  # a fresh row, with a record that says so
    marks = np.zeros(MARKS_WIDTH, np.int64)
    flags = np.zeros(NUM_PLANES, np.bool_)
    encode_position_over(
        board, hands, reps, moves, steps, side, move_count, hand_scale, out, marks, flags, 0.0, 0.0
    )


@_njit_no_alloc
def stored_value(value: float, qscale: float, qzero: float) -> float:
    """What a row of planes holds for ``value``: ``value`` as float32 (``qscale`` 0: float planes), or its
    uint8 quantization as onnxruntime's ``QuantizeLinear`` makes it (the float32 value divided by the
    float32 scale, rounded half to even, plus the zero point, saturated to 0..255;
    :class:`~engine.uint8_io.Uint8Quantization`)."""
    if qscale == 0.0:
        return float(np.float32(value))
    q = float(np.rint(np.float32(value) / np.float32(qscale))) + qzero
    return min(max(q, 0.0), 255.0)


@_njit_no_alloc
def encode_position_over(
    board: npt.NDArray[np.int64],
    hands: npt.NDArray[np.int64],
    reps: npt.NDArray[np.int64],
    moves: npt.NDArray[np.int64],
    steps: int,
    side: int,
    move_count: float,
    hand_scale: npt.NDArray[np.float32],
    out: npt.NDArray[np.float32],
    marks: npt.NDArray[np.int64],
    flags: npt.NDArray[np.bool_],
    qscale: float,
    qzero: float,
) -> None:
    """Write the 362 input planes of the current position, given as board codes, into ``out`` (float32
    ``[362, 9, 9]``, C-contiguous) over what this function wrote there before, or over zeros: only what
    differs from zero is written, about a tenth of the stores.  With ``qscale`` > 0, ``out`` is uint8
    ``[9, 9, 362]`` (channels last, as an int8 network's convolutions read them) and holds every value
    quantized (:func:`stored_value`; "zero" is then the zero point).

    Most of a row is zero (a step's 28 piece planes hold at most 40 ones among 2,268 entries), and
    zeroing all of it (117 KB a leaf) was the search's largest cost in shogi.  ``marks`` (int64
    ``[MARKS_WIDTH]``: a count, then the flat offsets of the piece planes' ones) and ``flags`` (bool
    ``[362]``: which planes of constant value, repetitions, hands, colour and move count, are not
    zero) describe what ``out`` holds; only those entries are cleared, and both are updated to the new
    encoding.  ``out`` must hold zeros where they say nothing (a new row: zeros, count 0, no flag).

    Args:
        board: int64 ``[81]``, the current position's board codes (taken back to the oldest drawn step:
            the caller's scratch).
        hands: int64 ``[2, 7]``, the current hands (sente's then gote's, ``pieces_in_hand`` order;
            taken back too).
        reps: int64 ``[>= steps]``, the repetition counts of the newest positions, newest first.
        moves: int64 ``[>= steps - 1]``, the newest moves, newest first (move ``i`` led to position ``i``).
        steps, side, move_count, hand_scale: as :func:`encode_planes`.
        out, marks, flags: the row and its record.
        qscale, qzero: the uint8 planes' scale and zero point; ``qscale`` 0: float planes.
    """
    flat = out.reshape(NUM_PLANES * _SQUARES)
    last = qscale != 0.0  # channels last: plane p of square q at q * 362 + p
    zero = stored_value(0.0, qscale, qzero)
    one = stored_value(1.0, qscale, qzero)
    for i in range(marks[0]):
        flat[marks[1 + i]] = zero
    n = 0
    for t in range(steps):
        base = t * _STEP_PLANES
        for square in range(_SQUARES):
            code = board[square]
            if code != 0:
                plane = base + _PLANE_OF_TYPE[code & 15] + (0 if (code >> 4) == side else _PIECE_TYPES)
                q = _oriented_pos(square, side)
                offset = q * NUM_PLANES + plane if last else plane * _SQUARES + q
                flat[offset] = one
                marks[1 + n] = offset
                n += 1
        for k in range(3):
            value = one if reps[t] > k else zero
            _fill(flat, flags, base + _REPETITION_OFFSET + k, value, zero, last)
        for i in range(_HAND_KINDS):
            value = stored_value(np.float32(hands[side, i]) * hand_scale[i], qscale, qzero)
            _fill(flat, flags, base + _HAND_OFFSET + i, value, zero, last)
            value = stored_value(np.float32(hands[1 - side, i]) * hand_scale[i], qscale, qzero)
            _fill(flat, flags, base + _HAND_OFFSET + _HAND_KINDS + i, value, zero, last)
        if t + 1 < steps:
            _undo_move(board, hands, moves[t], side ^ (t & 1) ^ 1)
    marks[0] = n
    for t in range(steps, _HISTORY_STEPS):  # steps not drawn: zero (their piece planes are, above)
        for p in range(t * _STEP_PLANES + _REPETITION_OFFSET, (t + 1) * _STEP_PLANES):
            _fill(flat, flags, p, zero, zero, last)
    _fill(flat, flags, _COLOUR_PLANE, one if side else zero, zero, last)
    _fill(flat, flags, _MOVE_COUNT_PLANE, stored_value(move_count, qscale, qzero), zero, last)


@_njit_no_alloc
def _fill(
    flat: npt.NDArray[np.float32],
    flags: npt.NDArray[np.bool_],
    plane: int,
    value: float,
    zero: float,
    last: bool,
) -> None:
    """Plane ``plane`` of a row (``flat``: its 362 x 81 values, float32 planes first or uint8 channels
    last) set to ``value`` (as the row stores it, :func:`stored_value`; ``zero`` is what it stores for
    0); a plane that holds it already is left alone (its flag says it is not zero and its first square
    has the value: this function fills whole planes, so the rest have it too; a row's next leaf is
    mostly its previous one's game a few plies on, with the same hands).  ``flags[plane]``: whether it
    is not zero now."""
    start = plane if last else plane * _SQUARES
    if value != zero:
        if flags[plane] and flat[start] == value:
            return
        flags[plane] = True
    elif flags[plane]:
        flags[plane] = False
    else:
        return
    if last:
        for q in range(_SQUARES):
            flat[start + q * NUM_PLANES] = value
    else:  # contiguous: the compiler's vector stores
        for q in range(start, start + _SQUARES):
            flat[q] = value


def board_codes(piece_planes: npt.NDArray[np.float32]) -> npt.NDArray[np.int64]:
    """int64 ``[81]``: the board codes of cshogi's ``piece_planes`` (float32 ``[>= 28 * 81]``; its first
    28 planes are cleared), by the compiled reader."""
    board = np.empty(_SQUARES, dtype=np.int64)
    _read_board(piece_planes, board)
    return board


@_njit
def policy_indices(moves: npt.NDArray[np.int64], table: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """int64 ``[L]``: ``table[move & 0x7fff]`` of each move (``table``: ``shogi.MOVE_INDEX[side]``)."""
    out = np.empty(len(moves), dtype=np.int64)
    for i in range(len(moves)):
        out[i] = table[moves[i] & _MOVE_KEY_MASK]
    return out
