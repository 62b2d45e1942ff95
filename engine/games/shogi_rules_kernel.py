"""Shogi rules compiled with numba: move generation equal to cshogi's, for a compiled search.

Every rule and convention is cshogi's as :class:`engine.games.shogi.ShogiState` uses it (read that
module's docstring for the coordinates, the planes and the policy): cshogi squares ``(file - 1) * 9 +
rank`` (``1a`` = 0, ``9i`` = 80; sente moves towards rank a, i.e. to lower squares of its file),
cshogi piece codes ``colour * 16 + piece type`` (PAWN=1 LANCE=2 KNIGHT=3 SILVER=4 BISHOP=5 ROOK=6
GOLD=7 KING=8, PROM_PAWN=9 .. PROM_ROOK=14, 0 empty) and cshogi move ints: bits 0-6 the to-square,
7-13 the from-square (``80 + piece type`` for a drop), bit 14 the promotion, 16-19 the moving piece's
type, 20-23 the captured piece's type (a drop carries neither).

State: a :class:`KernelState`, a named tuple of numpy arrays.  ``pos``, ``st`` and ``keys`` are stacks
with one row per position of the line (row 0 the state's first position); :func:`push` copies the top
row to the next and plays the move there (copy-make), :func:`pop` drops the top row (unmake is free),
so the rows below the top are the history that repetitions, the repetition outcome and the input
planes read.  A row holds:

* ``pos[row]``, int8 ``[96]``: the 81 squares' piece codes, then sente's hand and gote's hand (7 counts
  each, cshogi's ``pieces_in_hand`` order P L N S G B R) at 81..87 and 88..94;
* ``st[row]``, int64 ``[8]``: side to move (0 sente, 1 gote), repetitions (occurrences of the position
  earlier on the line: same board, side and hands), whether the side to move is in check, the move
  that reached it (-1 at row 0), the game ply (SFEN move number - 1), sente's and gote's king squares;
* ``keys[row]``, uint64: the Zobrist key of board, side to move and hands (not the move number).

``meta`` holds the top row (the current position), whether the entering-king declaration ends the
game (``ShogiRules.entering_king``) and the length limit (``ShogiState.length_limit`` of the first
position: the game is drawn when the top row reaches it).

Move order: :func:`legal_moves_into` lists the moves exactly as cshogi's ``Board.legal_moves``
(Apery's ``LegalAll``): the pseudo-legal moves are generated in Apery's order and the illegal ones are
removed as Apery removes them (the last move of the list takes the place of an illegal one).  Out of
check: drops first (a pawn drop in front of the enemy king first, then pawn drops by square; then
on the last rank silver, gold, bishop, rook drops, on the next rank lance to rook, elsewhere knight,
lance, silver, gold, bishop, rook, each square in turn), then pawn moves by destination (into the
promotion zone first), lances, knights, silvers, bishops, rooks, gold-likes with horses and dragons,
then the king; every piece by origin, its destinations ascending, a promotion before its
non-promotion.  In check: the king's steps (but those onto a square that a checker's reach, cshogi's
"banned" squares, covers), then captures of the checker and interpositions by pawns .. gold-likes as
above, then interposing drops.  Squares iterate ascending (cshogi's bitboard order).

Attacks are computed on the mailbox (rays walked square by square, step and knight squares from
tables); sets of squares (destinations, pins, checkers) are pairs of uint64 (squares 0-63 and 64-80).
Every compiled function is ``@njit(cache=True)`` through :mod:`engine.jit`; those that allocate
nothing are compiled without numba's reference counting (``njit_no_alloc``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import cshogi
import numpy as np
import numpy.typing as npt
from numba.cpython.unsafe.numbers import trailing_zeros as _ctz

from engine.games.base import HISTORY_STEPS, Outcome
from engine.games.shogi import (
    HAND_SCALE,
    MOVE_COUNT_SCALE,
    MOVE_INDEX,
    NUM_PLANES,
    ShogiState,
)
from engine.games.shogi_kernel import MARKS_WIDTH, encode_position_over
from engine.jit import njit as _njit
from engine.jit import njit_no_alloc as _njit_no_alloc

__all__ = [
    "CHECKMATE",
    "ENTERING_KING",
    "HAND",
    "LAST",
    "MAX_LENGTH",
    "MAX_MOVES",
    "NOT_OVER",
    "PERPETUAL_LOSS",
    "PERPETUAL_WIN",
    "PLY",
    "REP",
    "REPETITION_DRAW",
    "TOP",
    "TURN",
    "KernelState",
    "can_declare",
    "copy_state",
    "encode",
    "encode_into",
    "encode_over",
    "encode_scratch",
    "from_shogi_state",
    "from_usi",
    "in_check",
    "legal_indices_into",
    "legal_moves",
    "legal_moves_into",
    "mating_slot",
    "order_legal",
    "ordered_legal_into",
    "outcome",
    "outcome_code",
    "outcome_code_given",
    "perft",
    "perft_divide",
    "pop",
    "push",
    "repetition_count",
    "rewind",
    "to_usi",
    "zobrist_hash",
]

#: numba's count-trailing-zeros intrinsic (compiled code only), typed for the checker.
trailing_zeros = cast(Callable[[np.uint64], int], _ctz)

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]
F32 = npt.NDArray[np.float32]

#: Move buffers' length: more than the most legal moves a shogi position has (593 counting promotions
#: only; the non-promotions that cshogi lists too add fewer than 300) plus the few illegal pseudo-legal
#: moves that the generator removes afterwards.
MAX_MOVES = 1024

# Slots of a pos row.
_SQUARES = 81
_HAND = 81  # + colour * 7 + hand slot
_POS_SIZE = 96
# Slots of an st row.
_TURN = 0
_REP = 1
_CHECK = 2
_LAST = 3
_PLY = 4
_KSQ = 5  # + colour
_ST_SIZE = 8
# Slots of meta.
_TOP = 0
_ENTERING = 1
_LIMIT = 2
_META_SIZE = 4

#: The row layout for compiled code that reads positions off the stack itself (the search's leaf
#: encoding, :mod:`engine.search.compiled_shogi`): the top row's slot of ``meta``, the hands' first slot
#: of a ``pos`` row, and the side-to-move, repetition, last-move and game-ply slots of an ``st`` row.
TOP, HAND, TURN, REP, LAST, PLY = _TOP, _HAND, _TURN, _REP, _LAST, _PLY

# cshogi piece types.
_PAWN, _LANCE, _KNIGHT, _SILVER, _BISHOP, _ROOK, _GOLD, _KING = 1, 2, 3, 4, 5, 6, 7, 8
_HORSE, _DRAGON = 13, 14
_PROMOTE = 1 << 14

#: outcome_code values, in ShogiState.outcome()'s order of tests.
NOT_OVER, REPETITION_DRAW, PERPETUAL_WIN, PERPETUAL_LOSS, ENTERING_KING, CHECKMATE, MAX_LENGTH = range(7)
_OUTCOMES: dict[int, Outcome] = {
    REPETITION_DRAW: Outcome(0.0, "repetition"),
    PERPETUAL_WIN: Outcome(1.0, "perpetual-check"),
    PERPETUAL_LOSS: Outcome(-1.0, "perpetual-check"),
    ENTERING_KING: Outcome(1.0, "entering-king"),
    CHECKMATE: Outcome(-1.0, "checkmate"),
    MAX_LENGTH: Outcome(0.0, "max-length"),
}


# ---- tables (built once at import, read by the compiled code as constants) ----------------------

#: Directions as (d_file, d_rank): 0 rank - 1 (sente's forward), 1 rank + 1, 2 file - 1, 3 file + 1,
#: then the diagonals; ``_OPPOSITE[d]`` is the reverse of ``d``.
_DIRECTIONS = ((0, -1), (0, 1), (-1, 0), (1, 0), (-1, -1), (1, -1), (-1, 1), (1, 1))
_OPPOSITE_LIST = (1, 0, 3, 2, 7, 6, 5, 4)
_ORTHOGONAL = 0x0F
_DIAGONAL = 0xF0


def _sente_steps(piece: int) -> tuple[int, int]:
    """``(step directions, slide directions)`` bit masks of a sente piece type (directions above)."""
    forward, back, side = 1 << 0, 1 << 1, (1 << 2) | (1 << 3)
    gold = forward | back | side | (1 << 4) | (1 << 5)
    table = {
        _PAWN: (forward, 0),
        _LANCE: (0, forward),
        _KNIGHT: (0, 0),
        _SILVER: (forward | _DIAGONAL, 0),
        _BISHOP: (0, _DIAGONAL),
        _ROOK: (0, _ORTHOGONAL),
        _GOLD: (gold, 0),
        _KING: (0xFF, 0),
        _HORSE: (_ORTHOGONAL, _DIAGONAL),
        _DRAGON: (_DIAGONAL, _ORTHOGONAL),
    }
    for promoted in (9, 10, 11, 12):
        table[promoted] = (gold, 0)
    return table.get(piece, (0, 0))


def _mirror(mask: int) -> int:
    """The direction mask of a gote piece from a sente one (ranks reversed)."""
    swap = (1, 0, 2, 3, 6, 7, 4, 5)
    return sum(1 << swap[d] for d in range(8) if mask >> d & 1)


def _square(file_index: int, rank: int) -> int:
    return file_index * 9 + rank if 0 <= file_index < 9 and 0 <= rank < 9 else -1


def _set_bit(lo_hi: list[int], sq: int) -> None:
    lo_hi[sq >> 6] |= 1 << (sq & 63)


def _build_tables() -> dict[str, Any]:
    """All constant tables (neighbours, steps, lines, bit masks, Zobrist keys, policy)."""
    neigh = np.full((81, 8), -1, dtype=np.int64)
    direction = np.full((81, 81), -1, dtype=np.int64)
    between = np.zeros((81, 81, 2), dtype=np.uint64)
    for sq in range(81):
        f, r = divmod(sq, 9)
        for d, (df, dr) in enumerate(_DIRECTIONS):
            neigh[sq, d] = _square(f + df, r + dr)
            walk: list[int] = []
            t = _square(f + df, r + dr)
            while t >= 0:
                direction[sq, t] = d
                bits = [0, 0]
                for w in walk:
                    _set_bit(bits, w)
                between[sq, t] = bits
                walk.append(t)
                t = _square(t // 9 + df, t % 9 + dr)
    steps = np.zeros((2, 16), dtype=np.int64)
    slides = np.zeros((2, 16), dtype=np.int64)
    step_bb = np.zeros((2, 16, 81, 2), dtype=np.uint64)
    knight_to = np.full((2, 81, 2), -1, dtype=np.int64)
    knight_from = np.full((2, 81, 2), -1, dtype=np.int64)
    for colour in (0, 1):
        fwd = -1 if colour == 0 else 1
        for piece in range(16):
            st, sl = _sente_steps(piece)
            steps[colour, piece] = st if colour == 0 else _mirror(st)
            slides[colour, piece] = sl if colour == 0 else _mirror(sl)
        for sq in range(81):
            f, r = divmod(sq, 9)
            for i, df in enumerate((-1, 1)):
                knight_to[colour, sq, i] = _square(f + df, r + 2 * fwd)
                knight_from[colour, sq, i] = _square(f + df, r - 2 * fwd)
            for piece in range(16):
                bits = [0, 0]
                for d in range(8):
                    if steps[colour, piece] >> d & 1 and neigh[sq, d] >= 0:
                        _set_bit(bits, int(neigh[sq, d]))
                if piece == _KNIGHT:
                    for t in knight_to[colour, sq]:
                        if t >= 0:
                            _set_bit(bits, int(t))
                step_bb[colour, piece, sq] = bits
    square_bb = np.zeros((81, 2), dtype=np.uint64)
    rank_bb = np.zeros((9, 2), dtype=np.uint64)
    file_bb = np.zeros((9, 2), dtype=np.uint64)
    for sq in range(81):
        bits = [0, 0]
        _set_bit(bits, sq)
        square_bb[sq] = bits
        rank_bb[sq % 9] |= square_bb[sq]
        file_bb[sq // 9] |= square_bb[sq]
    zone = np.zeros((2, 2), dtype=np.uint64)
    zone[0] = rank_bb[0] | rank_bb[1] | rank_bb[2]
    zone[1] = rank_bb[6] | rank_bb[7] | rank_bb[8]
    rng = np.random.default_rng(0x5106)
    top = np.iinfo(np.uint64).max
    z_piece = rng.integers(1, top, size=(32, 81), dtype=np.uint64, endpoint=True)
    z_hand = rng.integers(1, top, size=(2, 7, 19), dtype=np.uint64, endpoint=True)
    z_hand[:, :, 0] = 0
    return {
        "neigh": neigh,
        "direction": direction,
        "between": between,
        "steps": steps,
        "slides": slides,
        "step_bb": step_bb,
        "knight_to": knight_to,
        "knight_from": knight_from,
        "square_bb": square_bb,
        "rank_bb": rank_bb,
        "file_bb": file_bb,
        "zone": zone,
        "z_piece": z_piece,
        "z_hand": z_hand,
        "z_turn": rng.integers(1, top, dtype=np.uint64, endpoint=True),
    }


_T = _build_tables()
_NEIGH: I64 = _T["neigh"]
_DIR: I64 = _T["direction"]
_BETWEEN: U64 = _T["between"]
_STEPS: I64 = _T["steps"]
_SLIDES: I64 = _T["slides"]
_STEP_BB: U64 = _T["step_bb"]
_KNIGHT_TO: I64 = _T["knight_to"]
_KNIGHT_FROM: I64 = _T["knight_from"]
_SQ_BB: U64 = _T["square_bb"]
_RANK_BB: U64 = _T["rank_bb"]
_FILE_BB: U64 = _T["file_bb"]
_ZONE: U64 = _T["zone"]
_Z_PIECE: U64 = _T["z_piece"]
_Z_HAND: U64 = _T["z_hand"]
_Z_TURN = np.uint64(_T["z_turn"])
_OPPOSITE = np.array(_OPPOSITE_LIST, dtype=np.int64)
#: Hand slot (P L N S G B R) of each unpromoted piece type, and the piece type of each slot.
_HAND_SLOT = np.array([-1, 0, 1, 2, 3, 5, 6, 4, -1], dtype=np.int64)
_SLOT_TYPE = np.array([_PAWN, _LANCE, _KNIGHT, _SILVER, _GOLD, _BISHOP, _ROOK], dtype=np.int64)
#: Drop order of the pieces other than the pawn (cshogi's: knight, lance, silver, gold, bishop, rook).
_DROP_ORDER = np.array([_KNIGHT, _LANCE, _SILVER, _GOLD, _BISHOP, _ROOK], dtype=np.int64)
_POLICY: I64 = np.ascontiguousarray(MOVE_INDEX, dtype=np.int64)
_HAND_SCALE: F32 = np.ascontiguousarray(HAND_SCALE, dtype=np.float32)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
del _T


# ---- the state -------------------------------------------------------------------------------------


class KernelState(NamedTuple):
    """One shogi game in progress for the compiled rules (``C`` rows of capacity).

    Attributes:
        pos: int8 ``[C, 96]``: per position of the line, the 81 squares' piece codes and both hands
            (layout in the module docstring).
        st: int64 ``[C, 8]``: per position, side to move, repetitions, in check, the move that reached
            it, game ply, the two kings' squares.
        keys: uint64 ``[C]``: per position, the Zobrist key.
        meta: int64 ``[4]``: the top row (the current position), 1 if the entering-king declaration
            ends the game, the length limit (rows since row 0 at which the game is drawn), unused.
    """

    pos: I8
    st: I64
    keys: U64
    meta: I64


# ---- square sets (pairs of uint64) -----------------------------------------------------------------


@_njit_no_alloc
def _has(lo: np.uint64, hi: np.uint64, sq: int) -> bool:
    """Whether square ``sq`` is in the set ``(lo, hi)``."""
    return bool((lo & _SQ_BB[sq, 0]) | (hi & _SQ_BB[sq, 1]))


@_njit_no_alloc
def _pop_lsb(lo: np.uint64, hi: np.uint64) -> tuple[int, np.uint64, np.uint64]:
    """The lowest square of the non-empty set ``(lo, hi)`` and the set without it."""
    if lo:
        return int(np.int64(trailing_zeros(lo))), lo & (lo - _ONE), hi
    return int(np.int64(trailing_zeros(hi))) + 64, lo, hi & (hi - _ONE)


# ---- attacks ---------------------------------------------------------------------------------------


@_njit_no_alloc
def _piece_attacks(pos: I8, row: int, sq: int, code: int, blocked: bool) -> tuple[np.uint64, np.uint64]:
    """Squares the piece ``code`` on ``sq`` attacks in position ``row``: its steps, and its slides up to
    and with their first blocker (``blocked``) or to the board's edge (not ``blocked``)."""
    colour, piece = code >> 4, code & 15
    lo, hi = _STEP_BB[colour, piece, sq, 0], _STEP_BB[colour, piece, sq, 1]
    slides = _SLIDES[colour, piece]
    for d in range(8):
        if slides >> d & 1:
            t = _NEIGH[sq, d]
            while t >= 0:
                lo |= _SQ_BB[t, 0]
                hi |= _SQ_BB[t, 1]
                if blocked and pos[row, t] != 0:
                    break
                t = _NEIGH[t, d]
    return lo, hi


@_njit_no_alloc
def _attackers(
    pos: I8, row: int, sq: int, by: int, block: int, stop_at_first: bool
) -> tuple[np.uint64, np.uint64]:
    """The pieces of colour ``by`` attacking ``sq`` in position ``row`` (``block``: an empty square taken
    as occupied, -1 none); only the first one found when ``stop_at_first``."""
    lo, hi = _ZERO, _ZERO
    for d in range(8):
        t = _NEIGH[sq, d]
        k = 1
        while t >= 0 and t != block:
            code = pos[row, t]
            if code != 0:
                if code >> 4 == by:
                    od = _OPPOSITE[d]
                    piece = code & 15
                    if _SLIDES[by, piece] >> od & 1 or (k == 1 and _STEPS[by, piece] >> od & 1):
                        lo |= _SQ_BB[t, 0]
                        hi |= _SQ_BB[t, 1]
                        if stop_at_first:
                            return lo, hi
                break
            t = _NEIGH[t, d]
            k += 1
    knight = by * 16 + _KNIGHT
    for i in range(2):
        f = _KNIGHT_FROM[by, sq, i]
        if f >= 0 and pos[row, f] == knight:
            lo |= _SQ_BB[f, 0]
            hi |= _SQ_BB[f, 1]
    return lo, hi


@_njit_no_alloc
def _attacked(pos: I8, row: int, sq: int, by: int, block: int) -> bool:
    """Whether colour ``by`` attacks ``sq`` in position ``row`` (``block`` as :func:`_attackers`)."""
    lo, hi = _attackers(pos, row, sq, by, block, True)
    return bool(lo | hi)


@_njit_no_alloc
def _pinned(pos: I8, row: int, colour: int, ksq: int) -> tuple[np.uint64, np.uint64]:
    """``colour``'s pieces pinned to its king on ``ksq`` by the other side's lances, bishops, rooks,
    horses and dragons."""
    them = 1 - colour
    lo, hi = _ZERO, _ZERO
    for d in range(8):
        t = _NEIGH[ksq, d]
        own = -1
        while t >= 0:
            code = pos[row, t]
            if code != 0:
                if own < 0:
                    if code >> 4 != colour:
                        break
                    own = t
                else:
                    if code >> 4 == them and _SLIDES[them, code & 15] >> _OPPOSITE[d] & 1:
                        lo |= _SQ_BB[own, 0]
                        hi |= _SQ_BB[own, 1]
                    break
            t = _NEIGH[t, d]
    return lo, hi


@_njit_no_alloc
def _in_check(st: I64, row: int) -> bool:
    return bool(st[row, _CHECK])


@_njit_no_alloc
def in_check(s: KernelState) -> bool:
    """Whether the side to move is in check."""
    return bool(s.st[s.meta[_TOP], _CHECK])


# ---- pseudo-legal moves in cshogi's order ----------------------------------------------------------


@_njit_no_alloc
def _move(pos: I8, row: int, piece: int, frm: int, to: int, promote: bool) -> int:
    """cshogi's int of a board move (the captured piece's type read from the board)."""
    m = int(to | frm << 7 | piece << 16 | (pos[row, to] & 15) << 20)
    return m | _PROMOTE if promote else m


@_njit_no_alloc
def _pawn_drop_mates(pos: I8, row: int, us: int, to: int, eksq: int) -> bool:
    """Whether ``us`` dropping a pawn on ``to`` (in front of the enemy king on ``eksq``) mates: no enemy
    piece but the king may take it (pins respected) and the king has no safe square."""
    them = 1 - us
    lo, hi = _attackers(pos, row, to, them, -1, False)
    if lo | hi:
        plo, phi = _pinned(pos, row, them, eksq)
        while lo | hi:
            f, lo, hi = _pop_lsb(lo, hi)
            if f != eksq and (not _has(plo, phi, f) or _DIR[eksq, f] == _DIR[eksq, to]):
                return False
    for d in range(8):
        t = _NEIGH[eksq, d]
        free = t >= 0 and (pos[row, t] == 0 or pos[row, t] >> 4 != them)
        if free and not _attacked(pos, row, t, us, to):
            return False
    return True


@_njit_no_alloc
def _drops(
    pos: I8,
    st: I64,
    row: int,
    us: int,
    plo: np.uint64,
    phi: np.uint64,
    tlo: np.uint64,
    thi: np.uint64,
    out: I64,
    n: int,
) -> int:
    """Append the drops onto the empty squares ``(tlo, thi)`` in cshogi's order (no nifu: ``(plo, phi)``
    are ``us``'s pawns; no pawn-drop mate, no dead piece)."""
    hand = _HAND + us * 7
    last = 0 if us == 0 else 8
    if pos[row, hand]:
        lo = tlo & ~_RANK_BB[last, 0]
        hi = thi & ~_RANK_BB[last, 1]
        while plo | phi:  # no second pawn on a file
            sq, plo, phi = _pop_lsb(plo, phi)
            f = sq // 9
            lo &= ~_FILE_BB[f, 0]
            hi &= ~_FILE_BB[f, 1]
        eksq = st[row, _KSQ + 1 - us]
        if eksq % 9 != (8 if us == 0 else 0):
            csq = eksq + 1 if us == 0 else eksq - 1
            if _has(lo, hi, csq) and pos[row, csq] == 0:
                if not _pawn_drop_mates(pos, row, us, csq, eksq):
                    out[n] = csq | (80 + _PAWN) << 7
                    n += 1
                lo &= ~_SQ_BB[csq, 0]
                hi &= ~_SQ_BB[csq, 1]
        while lo | hi:
            to, lo, hi = _pop_lsb(lo, hi)
            out[n] = to | (80 + _PAWN) << 7
            n += 1
    kinds = 0  # the hand's kinds other than the pawn, as bits of _DROP_ORDER
    for i in range(6):
        if pos[row, hand + _HAND_SLOT[_DROP_ORDER[i]]]:
            kinds |= 1 << i
    if kinds == 0:
        return n
    second = 1 if us == 0 else 7
    for band in range(3):  # the last rank, the rank before it, the others
        if band == 0:
            lo, hi = tlo & _RANK_BB[last, 0], thi & _RANK_BB[last, 1]
            allowed = kinds & ~3  # no knight, no lance
        elif band == 1:
            lo, hi = tlo & _RANK_BB[second, 0], thi & _RANK_BB[second, 1]
            allowed = kinds & ~1  # no knight
        else:
            lo = tlo & ~(_RANK_BB[last, 0] | _RANK_BB[second, 0])
            hi = thi & ~(_RANK_BB[last, 1] | _RANK_BB[second, 1])
            allowed = kinds
        if allowed == 0:
            continue
        while lo | hi:
            to, lo, hi = _pop_lsb(lo, hi)
            for i in range(6):
                if allowed >> i & 1:
                    out[n] = to | (80 + _DROP_ORDER[i]) << 7
                    n += 1
    return n


@_njit_no_alloc
def _pawn_moves(
    pos: I8,
    row: int,
    us: int,
    plo: np.uint64,
    phi: np.uint64,
    tlo: np.uint64,
    thi: np.uint64,
    out: I64,
    n: int,
) -> int:
    """Append the moves of ``us``'s pawns on ``(plo, phi)`` onto ``(tlo, thi)``: by destination, those
    into the promotion zone first (promotion, then the non-promotion unless on the last rank)."""
    step = -1 if us == 0 else 1
    lo, hi = _ZERO, _ZERO
    while plo | phi:
        frm, plo, phi = _pop_lsb(plo, phi)
        to = frm + step
        lo |= _SQ_BB[to, 0]
        hi |= _SQ_BB[to, 1]
    lo &= tlo
    hi &= thi
    zlo, zhi = lo & _ZONE[us, 0], hi & _ZONE[us, 1]
    last = 0 if us == 0 else 8
    while zlo | zhi:
        to, zlo, zhi = _pop_lsb(zlo, zhi)
        out[n] = _move(pos, row, _PAWN, to - step, to, True)
        n += 1
        if to % 9 != last:
            out[n] = _move(pos, row, _PAWN, to - step, to, False)
            n += 1
    lo &= ~_ZONE[us, 0]
    hi &= ~_ZONE[us, 1]
    while lo | hi:
        to, lo, hi = _pop_lsb(lo, hi)
        out[n] = _move(pos, row, _PAWN, to - step, to, False)
        n += 1
    return n


@_njit_no_alloc
def _promotions(us: int, piece: int, frm: int, to: int) -> int:
    """Which forms cshogi lists for ``piece`` moving ``frm -> to``: 1 the non-promotion only, 2 the
    promotion only, 3 both (promotion first)."""
    rank = to % 9
    in_zone = rank <= 2 if us == 0 else rank >= 6
    from_zone = frm % 9 <= 2 if us == 0 else frm % 9 >= 6
    rel = rank if us == 0 else 8 - rank  # 0: the last rank
    if piece == _LANCE:
        return (3 if rel >= 1 else 2) if in_zone else 1
    if piece == _KNIGHT:
        return (3 if rel >= 2 else 2) if in_zone else 1
    if piece in (_SILVER, _BISHOP, _ROOK):
        return 3 if in_zone or from_zone else 1
    return 1


@_njit_no_alloc
def _piece_moves(
    pos: I8, row: int, us: int, lo: np.uint64, hi: np.uint64, tlo: np.uint64, thi: np.uint64, out: I64, n: int
) -> int:
    """Append the moves of ``us``'s pieces on the squares ``(lo, hi)`` onto ``(tlo, thi)``: by origin
    (ascending), then by destination, a promotion before its non-promotion."""
    while lo | hi:
        frm, lo, hi = _pop_lsb(lo, hi)
        code = pos[row, frm]
        kind = code & 15
        alo, ahi = _piece_attacks(pos, row, frm, code, True)
        alo &= tlo
        ahi &= thi
        while alo | ahi:
            to, alo, ahi = _pop_lsb(alo, ahi)
            forms = _promotions(us, kind, frm, to)
            if forms & 2:
                out[n] = _move(pos, row, kind, frm, to, True)
                n += 1
            if forms & 1:
                out[n] = _move(pos, row, kind, frm, to, False)
                n += 1
    return n


#: A position's squares as :func:`_scan` sorts them: empty, the opponent's, then ``us``'s pieces in
#: cshogi's generation groups (pawns, lances, knights, silvers, bishops, rooks, gold-likes with horses
#: and dragons, the king), each a pair of uint64 (squares 0-63, 64-80).
Squares = tuple[
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
]

#: The generation group (0 pawns .. 7 king) of each piece type (index 0 unused).
_GROUP_OF = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 6, 6, 6, 6, 6, 6], dtype=np.int64)


@_njit_no_alloc
def _scan(
    pos: I8, row: int, us: int
) -> tuple[
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
    np.uint64,
]:  # Squares, spelled out: a no-alloc kernel returns scalars
    """One pass over the board: the empty squares, the opponent's and ``us``'s by group (:data:`Squares`)."""
    elo = ehi = olo = ohi = _ZERO
    g0l = g0h = g1l = g1h = g2l = g2h = g3l = g3h = _ZERO
    g4l = g4h = g5l = g5h = g6l = g6h = g7l = g7h = _ZERO
    for sq in range(_SQUARES):
        code = pos[row, sq]
        lo, hi = _SQ_BB[sq, 0], _SQ_BB[sq, 1]
        if code == 0:
            elo |= lo
            ehi |= hi
        elif code >> 4 != us:
            olo |= lo
            ohi |= hi
        else:
            g = _GROUP_OF[code & 15]
            if g == 0:
                g0l |= lo
                g0h |= hi
            elif g == 1:
                g1l |= lo
                g1h |= hi
            elif g == 2:
                g2l |= lo
                g2h |= hi
            elif g == 3:
                g3l |= lo
                g3h |= hi
            elif g == 4:
                g4l |= lo
                g4h |= hi
            elif g == 5:
                g5l |= lo
                g5h |= hi
            elif g == 6:
                g6l |= lo
                g6h |= hi
            else:
                g7l |= lo
                g7h |= hi
    return (
        elo,
        ehi,
        olo,
        ohi,
        g0l,
        g0h,
        g1l,
        g1h,
        g2l,
        g2h,
        g3l,
        g3h,
        g4l,
        g4h,
        g5l,
        g5h,
        g6l,
        g6h,
        g7l,
        g7h,
    )


@_njit_no_alloc
def _board_moves(
    pos: I8, row: int, us: int, sq: Squares, tlo: np.uint64, thi: np.uint64, out: I64, n: int
) -> int:
    """Append the moves of pawns, lances, knights, silvers, bishops, rooks and gold-likes (with horses
    and dragons), in that order, onto ``(tlo, thi)`` (``sq``: :func:`_scan`'s)."""
    n = _pawn_moves(pos, row, us, sq[4], sq[5], tlo, thi, out, n)
    n = _piece_moves(pos, row, us, sq[6], sq[7], tlo, thi, out, n)
    n = _piece_moves(pos, row, us, sq[8], sq[9], tlo, thi, out, n)
    n = _piece_moves(pos, row, us, sq[10], sq[11], tlo, thi, out, n)
    n = _piece_moves(pos, row, us, sq[12], sq[13], tlo, thi, out, n)
    n = _piece_moves(pos, row, us, sq[14], sq[15], tlo, thi, out, n)
    return _piece_moves(pos, row, us, sq[16], sq[17], tlo, thi, out, n)


@_njit_no_alloc
def _non_evasions(pos: I8, st: I64, row: int, us: int, out: I64) -> int:
    """cshogi's ``NonEvasion`` list (not in check): drops, board moves, king moves (pseudo-legal)."""
    sq = _scan(pos, row, us)
    elo, ehi, olo, ohi = sq[0], sq[1], sq[2], sq[3]
    n = _drops(pos, st, row, us, sq[4], sq[5], elo, ehi, out, 0)
    n = _board_moves(pos, row, us, sq, elo | olo, ehi | ohi, out, n)
    return _piece_moves(pos, row, us, sq[18], sq[19], elo | olo, ehi | ohi, out, n)


@_njit_no_alloc
def _banned(pos: I8, row: int, checker: int, ksq: int) -> tuple[np.uint64, np.uint64]:
    """The squares cshogi bars the king from when ``checker`` gives check: the checker's reach on an
    empty board (a dragon checking diagonally: its reach on the board); none for pawns and knights."""
    code = pos[row, checker]
    piece = code & 15
    if piece in (_PAWN, _KNIGHT):
        return _ZERO, _ZERO
    blocked = piece == _DRAGON and _DIR[checker, ksq] >= 4
    return _piece_attacks(pos, row, checker, code, blocked)


@_njit_no_alloc
def _evasions(pos: I8, st: I64, row: int, us: int, out: I64) -> int:
    """cshogi's ``Evasion`` list (in check): king steps off the banned squares, then (single check)
    captures of the checker and interpositions, then interposing drops (pseudo-legal)."""
    them = 1 - us
    ksq = st[row, _KSQ + us]
    clo, chi = _attackers(pos, row, ksq, them, -1, False)
    blo, bhi = _ZERO, _ZERO
    checker, count = -1, 0
    lo, hi = clo, chi
    while lo | hi:
        checker, lo, hi = _pop_lsb(lo, hi)
        count += 1
        a, b = _banned(pos, row, checker, ksq)
        blo |= a
        bhi |= b
    klo, khi = _STEP_BB[us, _KING, ksq, 0] & ~blo, _STEP_BB[us, _KING, ksq, 1] & ~bhi
    n = 0
    while klo | khi:
        to, klo, khi = _pop_lsb(klo, khi)
        code = pos[row, to]
        if code == 0 or code >> 4 != us:
            out[n] = _move(pos, row, _KING, ksq, to, False)
            n += 1
    if count > 1:
        return n
    b_lo, b_hi = _BETWEEN[checker, ksq, 0], _BETWEEN[checker, ksq, 1]
    sq = _scan(pos, row, us)
    n = _board_moves(pos, row, us, sq, b_lo | clo, b_hi | chi, out, n)
    if b_lo | b_hi:
        n = _drops(pos, st, row, us, sq[4], sq[5], b_lo, b_hi, out, n)
    return n


@_njit_no_alloc
def _gen_legal(pos: I8, st: I64, row: int, out: I64) -> int:
    """Write the legal moves of position ``row`` into ``out`` (int64 ``[>= MAX_MOVES]``) in cshogi's
    order; return their count.  The illegal pseudo-legal moves (the king onto an attacked square, a
    pinned piece off its line) are removed as cshogi removes them: the list's last move takes the
    place of one and is tested in turn."""
    us = st[row, _TURN]
    if st[row, _CHECK]:
        n = _evasions(pos, st, row, us, out)
    else:
        n = _non_evasions(pos, st, row, us, out)
    ksq = st[row, _KSQ + us]
    plo, phi = _pinned(pos, row, us, ksq)
    i = 0
    while i < n:
        m = out[i]
        frm, to = m >> 7 & 127, m & 127
        legal = True
        if frm == ksq:
            legal = not _attacked(pos, row, to, 1 - us, -1)
        elif frm < _SQUARES and _has(plo, phi, frm):
            legal = _DIR[ksq, frm] == _DIR[ksq, to]
        if legal:
            i += 1
        else:
            n -= 1
            out[i] = out[n]
    return n


# ---- make / unmake ---------------------------------------------------------------------------------


@_njit_no_alloc
def _hand_add(pos: I8, row: int, colour: int, piece: int, delta: int) -> np.uint64:
    """Add ``delta`` to ``colour``'s count of unpromoted ``piece`` in hand; return the key to xor."""
    slot = _HAND_SLOT[piece]
    i = _HAND + colour * 7 + slot
    old = int(pos[row, i])
    pos[row, i] = old + delta
    return np.uint64(_Z_HAND[colour, slot, old] ^ _Z_HAND[colour, slot, old + delta])


@_njit_no_alloc
def _repetitions(keys: U64, row: int) -> int:
    """Occurrences of position ``row`` earlier on the line (same key, so the same side to move)."""
    h = keys[row]
    count = 0
    for j in range(row - 2, -1, -2):
        if keys[j] == h:
            count += 1
    return count


@_njit_no_alloc
def _make(pos: I8, st: I64, keys: U64, top: int, move: int) -> None:
    """Copy row ``top`` to ``top + 1`` and play the legal ``move`` there (cshogi's ``push``)."""
    n = top + 1
    for k in range(_POS_SIZE):
        pos[n, k] = pos[top, k]
    us = st[top, _TURN]
    them = 1 - us
    to, frm = move & 127, move >> 7 & 127
    h = keys[top] ^ _Z_TURN
    st[n, _KSQ] = st[top, _KSQ]
    st[n, _KSQ + 1] = st[top, _KSQ + 1]
    if frm >= _SQUARES:
        piece = frm - 80
        h ^= _hand_add(pos, n, us, piece, -1)
        code = us * 16 + piece
    else:
        old = int(pos[top, frm])
        captured = int(pos[top, to])
        if captured:
            h ^= _Z_PIECE[captured, to]
            kind = captured & 15
            h ^= _hand_add(pos, n, us, kind - 8 if kind > 8 else kind, 1)
        h ^= _Z_PIECE[old, frm]
        pos[n, frm] = 0
        code = old + 8 if move & _PROMOTE else old
        if old & 15 == _KING:
            st[n, _KSQ + us] = to
    pos[n, to] = code
    h ^= _Z_PIECE[code, to]
    keys[n] = h
    st[n, _TURN] = them
    st[n, _PLY] = st[top, _PLY] + 1
    st[n, _LAST] = move
    st[n, _CHECK] = int(_attacked(pos, n, st[n, _KSQ + them], us, -1))
    st[n, _REP] = _repetitions(keys, n)


@_njit_no_alloc
def _init_root(pos: I8, st: I64, keys: U64) -> None:
    """Fill row 0's king squares, key, check flag and counters from its pieces, hands and side."""
    h = _Z_TURN if st[0, _TURN] else _ZERO
    for sq in range(_SQUARES):
        code = pos[0, sq]
        if code != 0:
            h ^= _Z_PIECE[code, sq]
            if code & 15 == _KING:
                st[0, _KSQ + (code >> 4)] = sq
    for colour in range(2):
        for slot in range(7):
            h ^= _Z_HAND[colour, slot, pos[0, _HAND + colour * 7 + slot]]
    keys[0] = h
    us = st[0, _TURN]
    st[0, _CHECK] = int(_attacked(pos, 0, st[0, _KSQ + us], 1 - us, -1))
    st[0, _REP] = 0
    st[0, _LAST] = -1


@_njit_no_alloc
def push(s: KernelState, move: int) -> None:
    """Play the legal ``move`` (a cshogi move int); the state must have a free row (see ``room``)."""
    top = s.meta[_TOP]
    _make(s.pos, s.st, s.keys, top, move)
    s.meta[_TOP] = top + 1


@_njit_no_alloc
def pop(s: KernelState) -> int:
    """Take back the last move and return it (-1 at row 0, where nothing changes)."""
    top = s.meta[_TOP]
    if top == 0:
        return -1
    s.meta[_TOP] = top - 1
    return int(s.st[top, _LAST])


@_njit_no_alloc
def rewind(s: KernelState, top: int) -> None:
    """Take back moves until row ``top`` (at most the current row) is the current position."""
    s.meta[_TOP] = top


@_njit
def copy_state(s: KernelState) -> KernelState:
    """An independent copy of ``s`` (all rows, so the copy keeps the history)."""
    return KernelState(s.pos.copy(), s.st.copy(), s.keys.copy(), s.meta.copy())


@_njit_no_alloc
def legal_moves_into(s: KernelState, out: I64) -> int:
    """Write the legal moves of the current position into ``out`` (int64 ``[>= MAX_MOVES]``) as cshogi's
    ``legal_moves`` lists them (the same ints, the same order); return the count."""
    return _gen_legal(s.pos, s.st, s.meta[_TOP], out)


def legal_moves(s: KernelState) -> list[int]:
    """The legal moves of the current position, as cshogi move ints in cshogi's order."""
    out = np.empty(MAX_MOVES, dtype=np.int64)
    n = legal_moves_into(s, out)
    return [int(m) for m in out[:n]]


# ---- policy indices --------------------------------------------------------------------------------


@_njit_no_alloc
def _policy_indices(st: I64, row: int, moves: I64, n: int, indices: I64) -> None:
    """The policy indices (``ShogiState``'s) of the ``n`` moves ``moves`` of position ``row``."""
    side = st[row, _TURN]
    for i in range(n):
        indices[i] = _POLICY[side, moves[i] & 0x7FFF]


@_njit_no_alloc
def legal_indices_into(s: KernelState, moves: I64, indices: I64) -> int:
    """Write the legal moves into ``moves`` and their policy indices (``ShogiState``'s, < 11259) into
    ``indices``, both int64 ``[>= MAX_MOVES]``; return the count."""
    top = s.meta[_TOP]
    n = _gen_legal(s.pos, s.st, top, moves)
    _policy_indices(s.st, top, moves, n, indices)
    return n


@_njit_no_alloc
def ordered_legal_into(s: KernelState, moves: I64, indices: I64) -> int:
    """The legal moves in ``ShogiState.legal_moves()``'s order with their policy indices: the move
    generator's own order is cshogi's already, so this is :func:`legal_indices_into`."""
    return legal_indices_into(s, moves, indices)


@_njit_no_alloc
def order_legal(s: KernelState, moves: I64, n: int, indices: I64) -> None:
    """:func:`ordered_legal_into` for the ``n`` moves :func:`legal_moves_into` wrote into ``moves`` (in
    cshogi's order already): write their policy indices into ``indices`` (int64 ``[>= n]``)."""
    _policy_indices(s.st, s.meta[_TOP], moves, n, indices)


# ---- outcome ---------------------------------------------------------------------------------------


@_njit_no_alloc
def _can_declare(pos: I8, st: I64, row: int) -> bool:
    """cshogi's ``is_nyugyoku`` (CSA rule): not in check, the king in the enemy camp (the far three
    ranks) with ten more pieces there, and 28 points for sente, 27 for gote (bishops and rooks, promoted
    or in hand, 5; every other piece there or in hand 1; the king none)."""
    if st[row, _CHECK]:
        return False
    us = st[row, _TURN]
    ksq = st[row, _KSQ + us]
    if not _has(_ZONE[us, 0], _ZONE[us, 1], ksq):
        return False
    pieces, big = 0, 0
    for sq in range(_SQUARES):
        code = pos[row, sq]
        if code != 0 and code >> 4 == us and _has(_ZONE[us, 0], _ZONE[us, 1], sq):
            pieces += 1
            kind = code & 15
            if kind in (_BISHOP, _ROOK, _HORSE, _DRAGON):
                big += 1
    pieces -= 1  # the king
    if pieces < 10:
        return False
    hand = _HAND + us * 7
    small_hand = (
        pos[row, hand] + pos[row, hand + 1] + pos[row, hand + 2] + pos[row, hand + 3] + pos[row, hand + 4]
    )
    points = pieces - big + small_hand + (big + pos[row, hand + 5] + pos[row, hand + 6]) * 5
    return bool(points >= (28 if us == 0 else 27))


@_njit_no_alloc
def can_declare(s: KernelState) -> bool:
    """Whether the side to move may declare an entering-king win (cshogi's ``is_nyugyoku``; the rules'
    ``entering_king`` switch is not read here, :func:`outcome_code` reads it)."""
    return _can_declare(s.pos, s.st, s.meta[_TOP])


@_njit_no_alloc
def _repetition_outcome(st: I64, keys: U64, row: int) -> int:
    """``ShogiState._repetition_outcome``: from the first occurrence of position ``row`` on, whether the
    side to move was in check at every position after the opponent's moves (it wins), or the opponent
    at every position after its own moves (it loses), else a draw."""
    h = keys[row]
    first = row
    for j in range(row % 2, row, 2):
        if keys[j] == h:
            first = j
            break
    after_theirs, after_ours = True, True
    for j in range(row - first):
        check = st[row - j, _CHECK] != 0
        if j % 2 == 0:
            after_theirs = after_theirs and check
        else:
            after_ours = after_ours and check
    if after_theirs:
        return PERPETUAL_WIN
    if after_ours:
        return PERPETUAL_LOSS
    return REPETITION_DRAW


@_njit_no_alloc
def _outcome_at(pos: I8, st: I64, keys: U64, meta: I64, row: int, num_legal: int) -> int:
    """:func:`outcome_code` of position ``row`` that has ``num_legal`` legal moves."""
    if st[row, _REP] >= 3:
        return _repetition_outcome(st, keys, row)
    if meta[_ENTERING] and _can_declare(pos, st, row):
        return ENTERING_KING
    if num_legal == 0:
        return CHECKMATE
    if row >= meta[_LIMIT]:
        return MAX_LENGTH
    return NOT_OVER


@_njit
def outcome_code(s: KernelState) -> int:
    """How the game stands, in ShogiState.outcome()'s order: fourfold repetition (``PERPETUAL_WIN``,
    ``PERPETUAL_LOSS`` or ``REPETITION_DRAW``), ``ENTERING_KING`` (when the rules allow it),
    ``CHECKMATE`` (no legal move), ``MAX_LENGTH`` (the length limit reached), else ``NOT_OVER``."""
    buf = np.empty(MAX_MOVES, dtype=np.int64)
    top = s.meta[_TOP]
    return _outcome_at(s.pos, s.st, s.keys, s.meta, top, _gen_legal(s.pos, s.st, top, buf))


@_njit_no_alloc
def outcome_code_given(s: KernelState, num_legal: int) -> int:
    """:func:`outcome_code` of the current position when its number of legal moves is known already
    (``num_legal``, e.g. from :func:`legal_moves_into`): no move generation."""
    return _outcome_at(s.pos, s.st, s.keys, s.meta, s.meta[_TOP], num_legal)


def outcome(s: KernelState) -> Outcome | None:
    """ShogiState.outcome()'s value for the current position (from the side to move), or ``None``."""
    return _OUTCOMES.get(int(outcome_code(s)))


@_njit_no_alloc
def repetition_count(s: KernelState) -> int:
    """How many times the current position occurred earlier on the line (ShogiState.repetition_count)."""
    return int(s.st[s.meta[_TOP], _REP])


def zobrist_hash(s: KernelState) -> int:
    """The Zobrist key of the current position (board, side to move, hands)."""
    return int(s.keys[s.meta[_TOP]])


# ---- mate in one -----------------------------------------------------------------------------------


@_njit_no_alloc
def _king_steps_away(pos: I8, st: I64, row: int) -> bool:
    """Whether the side to move in position ``row`` (not in check) has a legal king step."""
    us = st[row, _TURN]
    ksq = st[row, _KSQ + us]
    for d in range(8):
        t = _NEIGH[ksq, d]
        if t >= 0 and (pos[row, t] == 0 or pos[row, t] >> 4 != us) and not _attacked(pos, row, t, 1 - us, -1):
            return True
    return False


@_njit_no_alloc
def _lost(pos: I8, st: I64, keys: U64, meta: I64, row: int, buf: I64) -> bool:
    """Whether :func:`outcome_code` of position ``row`` is ``CHECKMATE`` (no legal move, and neither a
    fourfold repetition nor a declaration ends the game first)."""
    if not st[row, _CHECK] and _king_steps_away(pos, st, row):
        return False
    if _gen_legal(pos, st, row, buf) != 0:
        return False
    return _outcome_at(pos, st, keys, meta, row, 0) == CHECKMATE


@_njit_no_alloc
def _discoverers(pos: I8, row: int, us: int, eksq: int) -> tuple[np.uint64, np.uint64]:
    """``us``'s pieces that alone stand between the enemy king on ``eksq`` and a lance, bishop, rook,
    horse or dragon of ``us`` sliding towards it: moved off that line, they give a discovered check."""
    lo, hi = _ZERO, _ZERO
    for d in range(8):
        t = _NEIGH[eksq, d]
        own = -1
        while t >= 0:
            code = pos[row, t]
            if code != 0:
                if code >> 4 != us:
                    break
                if own >= 0:
                    if _SLIDES[us, code & 15] >> _OPPOSITE[d] & 1:
                        lo |= _SQ_BB[own, 0]
                        hi |= _SQ_BB[own, 1]
                    break
                own = t
            t = _NEIGH[t, d]
    return lo, hi


@_njit_no_alloc
def _gives_check(pos: I8, row: int, us: int, eksq: int, move: int, dlo: np.uint64, dhi: np.uint64) -> bool:
    """Whether ``us``'s legal ``move`` checks the enemy king on ``eksq``: the piece it leaves on the
    to-square attacks the king (a slide through the square it left counts as open), or it leaves a line
    between the king and a slider of ``us`` (``(dlo, dhi)``: :func:`_discoverers`)."""
    to, frm = move & 127, move >> 7 & 127
    if frm >= _SQUARES:
        kind = frm - 80
    else:
        kind = (pos[row, frm] & 15) + (8 if move & _PROMOTE else 0)
        if _has(dlo, dhi, frm) and _DIR[eksq, to] != _DIR[eksq, frm]:
            return True
    if _has(_STEP_BB[us, kind, to, 0], _STEP_BB[us, kind, to, 1], eksq):
        return True
    d = _DIR[to, eksq]
    if d < 0 or not _SLIDES[us, kind] >> d & 1:
        return False
    t = _NEIGH[to, d]
    while t != eksq:
        if pos[row, t] != 0 and t != frm:
            return False
        t = _NEIGH[t, d]
    return True


@_njit_no_alloc
def mating_slot(s: KernelState, moves: I64, n: int, buf: I64) -> int:
    """The index of the first of the ``n`` legal ``moves`` that checkmates: it gives check and the
    opponent has lost (:func:`outcome_code` ``CHECKMATE``: no legal reply, and neither a fourfold
    repetition nor a declaration ends the game first), or -1 (``ShogiState.mate_in_one``).  Only the
    checking moves are made (:func:`_gives_check`); a move that leaves the opponent without a move but
    out of check (rare) is left to the search, which finds the position lost when it gets there.
    ``buf`` int64 ``[MAX_MOVES]`` scratch; the state needs one free row above its current one and is
    unchanged."""
    pos, st, keys, meta, top = s.pos, s.st, s.keys, s.meta, s.meta[_TOP]
    us = st[top, _TURN]
    eksq = st[top, _KSQ + 1 - us]
    dlo, dhi = _discoverers(pos, top, us, eksq)
    for i in range(n):
        move = moves[i]
        if not _gives_check(pos, top, us, eksq, move, dlo, dhi):
            continue
        _make(pos, st, keys, top, move)
        if st[top + 1, _CHECK] and _lost(pos, st, keys, meta, top + 1, buf):
            return i
    return -1


# ---- perft -----------------------------------------------------------------------------------------


@_njit_no_alloc
def _perft(pos: I8, st: I64, keys: U64, top: int, depth: int, buf: I64) -> int:
    """Leaf count ``depth >= 1`` plies below row ``top``; ``buf`` int64 ``[depth, MAX_MOVES]`` move lists."""
    moves = buf[depth - 1]
    n = _gen_legal(pos, st, top, moves)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        _make(pos, st, keys, top, moves[i])
        total += _perft(pos, st, keys, top + 1, depth - 1, buf)
    return total


@_njit
def _perft_divide(s: KernelState, depth: int, moves: I64, counts: I64) -> int:
    """Fill ``moves`` with the root's legal moves and ``counts`` with the leaves ``depth - 1`` plies below
    each (1 at depth 1); return the number of root moves."""
    pos, st, keys, top = s.pos, s.st, s.keys, s.meta[_TOP]
    n = _gen_legal(pos, st, top, moves)
    buf = np.empty((max(depth - 1, 1), MAX_MOVES), dtype=np.int64)
    for i in range(n):
        if depth == 1:
            counts[i] = 1
        else:
            _make(pos, st, keys, top, moves[i])
            counts[i] = _perft(pos, st, keys, top + 1, depth - 1, buf)
    return n


def _with_room(s: KernelState, plies: int) -> KernelState:
    """``s`` itself if it has ``plies`` free rows above the top, else a copy with them."""
    top = int(s.meta[_TOP])
    if s.pos.shape[0] > top + plies:
        return s
    out = _empty_state(top + plies + 1, int(s.meta[_ENTERING]), int(s.meta[_LIMIT]))
    out.pos[: top + 1] = s.pos[: top + 1]
    out.st[: top + 1] = s.st[: top + 1]
    out.keys[: top + 1] = s.keys[: top + 1]
    out.meta[_TOP] = top
    return out


def perft_divide(s: KernelState, depth: int) -> list[tuple[int, int]]:
    """``(root move, leaf count below it)`` for every legal move (``depth >= 1``); ``s`` is unchanged."""
    work = _with_room(s, depth)
    moves = np.empty(MAX_MOVES, dtype=np.int64)
    counts = np.zeros(MAX_MOVES, dtype=np.int64)
    n = _perft_divide(work, depth, moves, counts)
    return [(int(moves[i]), int(counts[i])) for i in range(n)]


def perft_divide_state(state: ShogiState, depth: int) -> list[tuple[int, int]]:
    """``engine.perft.perft_divide(state, depth)`` by these rules: ``(root move, leaf count below it)`` in
    ``ShogiState.legal_moves()`` order (cshogi's move ints)."""
    return perft_divide(from_shogi_state(state, room=depth), depth)


def perft(s: KernelState, depth: int) -> int:
    """Leaf count of the legal move tree ``depth`` plies deep (1 at depth 0), the last ply bulk-counted."""
    if depth <= 0:
        return 1
    return sum(count for _, count in perft_divide(s, depth))


# ---- encoding --------------------------------------------------------------------------------------


@_njit_no_alloc
def encode_over(
    s: KernelState,
    board: I64,
    hands: I64,
    reps: I64,
    moves: I64,
    out: npt.NDArray[Any],
    marks: I64,
    flags: npt.NDArray[np.bool_],
    qscale: float,
    qzero: float,
) -> None:
    """``ShogiState.encode()``'s planes of the top position into ``out`` (float32 ``[362, 9, 9]``, or
    uint8 ``[9, 9, 362]`` with ``qscale`` > 0 and zero point ``qzero``) over the row's previous encoding
    that ``marks`` and ``flags`` record (:func:`~engine.games.shogi_kernel.encode_position_over`: only
    what differs from zero is stored).  ``board`` int64 ``[81]``, ``hands`` int64 ``[2, 7]``, ``reps``
    and ``moves`` int64 ``[8]``: scratch (:func:`encode_scratch`)."""
    top = s.meta[_TOP]
    pos, st = s.pos, s.st
    for i in range(_SQUARES):  # loops, not slice assignment: that needs numba's NRT
        board[i] = pos[top, i]
    for c in range(2):
        for j in range(7):
            hands[c, j] = pos[top, _HAND + c * 7 + j]
    steps = min(top + 1, HISTORY_STEPS)
    for k in range(steps):
        reps[k] = st[top - k, _REP]
        moves[k] = st[top - k, _LAST]
    move_count = st[top, _PLY] / MOVE_COUNT_SCALE
    encode_position_over(
        board,
        hands,
        reps,
        moves,
        steps,
        st[top, _TURN],
        move_count,
        _HAND_SCALE,
        out,
        marks,
        flags,
        qscale,
        qzero,
    )


def encode_scratch() -> tuple[I64, I64, I64, I64]:
    """The scratch :func:`encode_over` takes: board ``[81]``, hands ``[2, 7]``, reps and moves ``[8]``."""
    return (
        np.zeros(_SQUARES, np.int64),
        np.zeros((2, 7), np.int64),
        np.zeros(HISTORY_STEPS, np.int64),
        np.zeros(HISTORY_STEPS, np.int64),
    )


def encode_into(s: KernelState, out: F32) -> None:
    """Write ``ShogiState.encode()``'s planes into ``out``, float32 ``[362, 9, 9]`` (e.g. a batch row): the
    search's encoder (:func:`encode_over`) over zeros."""
    out[:] = 0.0
    marks = np.zeros(MARKS_WIDTH, np.int64)
    flags = np.zeros(NUM_PLANES, np.bool_)
    encode_over(s, *encode_scratch(), out, marks, flags, 0.0, 0.0)


def encode(s: KernelState) -> F32:
    """ShogiState.encode()'s planes: float32 ``[362, 9, 9]``."""
    out = np.empty((NUM_PLANES, 9, 9), dtype=np.float32)
    encode_into(s, out)
    return out


# ---- cshogi conversion -----------------------------------------------------------------------------


def _empty_state(capacity: int, entering: int, limit: int) -> KernelState:
    meta = np.zeros(_META_SIZE, dtype=np.int64)
    meta[_ENTERING] = entering
    meta[_LIMIT] = limit
    return KernelState(
        np.zeros((capacity, _POS_SIZE), dtype=np.int8),
        np.zeros((capacity, _ST_SIZE), dtype=np.int64),
        np.zeros(capacity, dtype=np.uint64),
        meta,
    )


def from_shogi_state(state: ShogiState, room: int = 256) -> KernelState:
    """A kernel state equal to ``state``: its first position (``state._root_sfen``), then every move of
    its ``move_stack``, with its rules' entering-king switch and length limit.

    Args:
        state: the game.
        room: free rows above the current position (how deep :func:`push` may go before a copy).
    """
    moves = state.move_stack
    s = _empty_state(len(moves) + room + 1, int(state.rules.entering_king), state.length_limit)
    board = cshogi.Board(state._root_sfen)  # the state's first position
    s.pos[0, :_SQUARES] = np.array(board.pieces, dtype=np.int8)
    black, white = board.pieces_in_hand
    s.pos[0, _HAND : _HAND + 7] = black
    s.pos[0, _HAND + 7 : _HAND + 14] = white
    s.st[0, _TURN] = int(board.turn)
    s.st[0, _PLY] = int(board.move_number) - 1
    _init_root(s.pos, s.st, s.keys)
    for move in moves:
        push(s, int(move))
    return s


def to_usi(move: int) -> str:
    """USI notation of a cshogi move int: ``7g7f``, ``8h2b+``, ``P*5e``."""
    return str(cshogi.move_to_usi(move))


def from_usi(s: KernelState, usi: str) -> int:
    """The legal move written ``usi`` in the current position.

    Raises:
        ValueError: no legal move is written so.
    """
    for m in legal_moves(s):
        if to_usi(m) == usi:
            return m
    raise ValueError(f"move {usi!r} is not legal here")
