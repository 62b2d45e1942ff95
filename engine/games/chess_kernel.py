"""Chess rules compiled with numba: bitboard move generation equal to python-chess, for a compiled search.

Every rule and convention is python-chess's as :class:`engine.games.chess.ChessState` uses it (read that
module's docstring for the planes and the policy): squares ``rank * 8 + file`` (a1 = 0, h8 = 63);
castling rights as python-chess keeps them, a bitboard of the castling rooks' squares (so Chess960
needs nothing special: Shredder/X-FEN rights, king and rook landing on c/d or g/f, the king's and the
rook's paths are python-chess's ``generate_castling_moves``); the en-passant square set after every
double push (python-chess's ``ep_square``), an en-passant capture legal only when the king is safe
after both pawns left (the discovered check along the rank included); the repetition key is a
Zobrist hash of python-chess's transposition key (pieces, side to move, castling rights, the
en-passant square only when a legal en-passant capture exists).

State: a :class:`KernelState`, a named tuple of three numpy arrays.  ``bb`` and ``st`` are stacks with
one row per position of the line (row 0 the root); :func:`push` copies the top row to the next and
plays the move there (copy-make), :func:`pop` drops the top row (unmake is free), so the rows below
the top are the history that repetitions and the input planes read.  A row holds:

* ``bb[row]``, uint64 ``[16]``: 12 piece bitboards (white P, N, B, R, Q, K, black P, N, B, R, Q, K),
  the white and the black occupancy, the castling rights (rook squares) and the Zobrist hash;
* ``st[row]``, int64 ``[8]``: side to move (0 white, 1 black), en-passant square (-1 none), halfmove
  clock, fullmove number, repetitions (occurrences of the position earlier on the line), the move
  that reached the row (-1 at the root), whether the hash holds an en-passant file.

Moves are ints: ``from | to << 6 | promotion << 12 | flag << 15`` with python-chess's piece types
for the promotion (2 knight .. 5 queen, 0 none) and flag 0 quiet/capture, 1 castling (``to`` is the
castling rook's square: king takes rook, python-chess's internal form, which is also the policy
index's), 2 en passant, 3 double pawn push.  :func:`to_chess_move` / :func:`from_chess_move` convert
to and from ``chess.Move`` as python-chess generates them (standard castling ``e1g1`` unless Chess960).

For the compiled search (:mod:`engine.search.compiled_chess`): :func:`ordered_legal_into` /
:func:`order_legal` list the legal moves in python-chess's generation order (``ChessState``'s, so that
a search breaks ties as the reference tree does) with their policy indices, :func:`outcome_code_given`
skips the move generation when the move count is known, and :func:`find_mate` is
``ChessState.find_mate`` (mates in one, checking mates in two within a node budget, the same moves
found in the same order).

Sliding attacks are the classical ray method (rays precomputed per square and direction, the first
blocker found by a bit scan): no tables to search for at start-up, and about 16 million perft nodes a
second (``benchmarks/chess_kernel.py``); magic bitboards were not measured against it.  Every compiled function is ``@njit(cache=True)``: the first call in a fresh cache
compiles (seconds), later processes load the machine code from ``__pycache__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, cast

import chess
import numpy as np
import numpy.typing as npt
from numba.cpython.unsafe.numbers import leading_zeros as _clz
from numba.cpython.unsafe.numbers import trailing_zeros as _ctz

from engine.games.base import HISTORY_STEPS, Outcome
from engine.games.chess import (
    MOVE_COUNT_SCALE,
    NO_PROGRESS_SCALE,
    NUM_PLANES,
    PLANES_PER_STEP,
    QUEEN_KNIGHT_INDEX,
    UNDER_BASE_INDEX,
    ChessState,
)
from engine.jit import njit as _njit
from engine.jit import njit_no_alloc as _njit_no_alloc

__all__ = [
    "MAX_MOVES",
    "KernelState",
    "copy_state",
    "encode",
    "encode_into",
    "find_mate",
    "from_board",
    "from_chess_move",
    "from_chess_state",
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
    "rewind",
    "to_chess_move",
]


#: numba's count-leading/trailing-zeros intrinsics (compiled code only), typed for the checker.
leading_zeros = cast(Callable[[np.uint64], int], _clz)
trailing_zeros = cast(Callable[[np.uint64], int], _ctz)

U64 = npt.NDArray[np.uint64]
I64 = npt.NDArray[np.int64]

#: The most legal moves a chess position has (218 is the known maximum); move buffers have this length.
MAX_MOVES = 256

# Slots of a bb row.
_OCC = 12  # + colour: that colour's occupancy
_RIGHTS = 14
_HASH = 15
_BB_SIZE = 16
# Slots of an st row.
_TURN = 0
_EP = 1
_HALFMOVE = 2
_FULLMOVE = 3
_REP = 4
_LAST = 5
_EP_HASHED = 6
_ST_SIZE = 8
# Slots of meta.
_TOP = 0
_MAX_PLIES = 1
_CHESS960 = 2
_META_SIZE = 4

# Piece types inside (python-chess's minus one) and move flags.
_PAWN, _KNIGHT, _BISHOP, _ROOK, _QUEEN, _KING = 0, 1, 2, 3, 4, 5
_FLAG_CASTLE, _FLAG_EP, _FLAG_DOUBLE = 1, 2, 3

#: outcome_code values, in ChessState.outcome()'s order of tests.
NOT_OVER, CHECKMATE, STALEMATE, INSUFFICIENT, REPETITION, FIFTY, MAX_LENGTH = range(7)
_OUTCOMES: dict[int, Outcome] = {
    CHECKMATE: Outcome(-1.0, "checkmate"),
    STALEMATE: Outcome(0.0, "stalemate"),
    INSUFFICIENT: Outcome(0.0, "insufficient-material"),
    REPETITION: Outcome(0.0, "repetition"),
    FIFTY: Outcome(0.0, "fifty-move"),
    MAX_LENGTH: Outcome(0.0, "max-length"),
}


# ---- tables (built once at import, read by the compiled code as constants) ----------------------

#: Ray directions as (dr, df): 0-3 towards higher squares (first blocker = lowest bit), 4-7 lower.
_DIRECTIONS = ((1, 0), (0, 1), (1, 1), (1, -1), (-1, 0), (0, -1), (-1, -1), (-1, 1))


def _walk(sq: int, dr: int, df: int) -> list[int]:
    """The squares from ``sq`` (excluded) towards ``(dr, df)`` up to the board's edge."""
    r, f = divmod(sq, 8)
    out: list[int] = []
    r, f = r + dr, f + df
    while 0 <= r < 8 and 0 <= f < 8:
        out.append(r * 8 + f)
        r, f = r + dr, f + df
    return out


def _mask(squares: list[int]) -> int:
    m = 0
    for s in squares:
        m |= 1 << s
    return m


def _step_table(steps: tuple[tuple[int, int], ...]) -> U64:
    """uint64 ``[64]``: the squares one step of ``steps`` away from each square (knight, king)."""
    out = np.zeros(64, dtype=np.uint64)
    for sq in range(64):
        out[sq] = _mask([w[0] for dr, df in steps if (w := _walk(sq, dr, df)[:1])])
    return out


def _build_tables() -> dict[str, Any]:
    """All constant tables (ray, step and line tables, Zobrist keys, policy tables)."""
    rays = np.zeros((8, 64), dtype=np.uint64)
    between = np.zeros((64, 64), dtype=np.uint64)
    line = np.zeros((64, 64), dtype=np.uint64)
    for d, (dr, df) in enumerate(_DIRECTIONS):
        opposite = _DIRECTIONS[(d + 4) % 8]
        for sq in range(64):
            walk = _walk(sq, dr, df)
            rays[d, sq] = _mask(walk)
            full = _mask(walk) | _mask(_walk(sq, *opposite)) | 1 << sq
            for k, to in enumerate(walk):
                between[sq, to] = _mask(walk[:k])
                line[sq, to] = full
    pawn = np.zeros((2, 64), dtype=np.uint64)
    for sq in range(64):
        for colour, dr in ((0, 1), (1, -1)):
            pawn[colour, sq] = _mask([w[0] for df in (-1, 1) if (w := _walk(sq, dr, df)[:1])])
    knight = _step_table(((2, 1), (1, 2), (-1, 2), (-2, 1), (-2, -1), (-1, -2), (1, -2), (2, -1)))
    king = _step_table(tuple(_DIRECTIONS))
    rng = np.random.default_rng(0xC4E55)
    keys = rng.integers(1, np.iinfo(np.uint64).max, size=12 * 64 + 64 + 8 + 1, dtype=np.uint64, endpoint=True)
    return {
        "rays": rays,
        "between": between,
        "line": line,
        "pawn": pawn,
        "knight": knight,
        "king": king,
        "z_piece": keys[: 12 * 64].reshape(12, 64).copy(),
        "z_castle": keys[12 * 64 : 13 * 64].copy(),
        "z_ep": keys[13 * 64 : 13 * 64 + 8].copy(),
        "z_turn": keys[-1],
        "qk_index": np.array(QUEEN_KNIGHT_INDEX, dtype=np.int64),
        "under_index": np.array(UNDER_BASE_INDEX, dtype=np.int64),
    }


_T = _build_tables()
_RAYS: U64 = _T["rays"]
_BETWEEN: U64 = _T["between"]
_LINE: U64 = _T["line"]
_PAWN_ATTACKS: U64 = _T["pawn"]
_KNIGHT_ATTACKS: U64 = _T["knight"]
_KING_ATTACKS: U64 = _T["king"]
_Z_PIECE: U64 = _T["z_piece"]
_Z_CASTLE: U64 = _T["z_castle"]
_Z_EP: U64 = _T["z_ep"]
_Z_TURN = np.uint64(_T["z_turn"])
_QK_INDEX: I64 = _T["qk_index"]
_UNDER_INDEX: I64 = _T["under_index"]
_RANK_1 = np.uint64(chess.BB_RANK_1)
_RANK_8 = np.uint64(chess.BB_RANK_8)
_DARK = np.uint64(chess.BB_DARK_SQUARES)
_LIGHT = np.uint64(chess.BB_LIGHT_SQUARES)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
del _T


# ---- the state -------------------------------------------------------------------------------------


class KernelState(NamedTuple):
    """One chess game in progress for the compiled rules (``C`` rows of capacity).

    Attributes:
        bb: uint64 ``[C, 16]``: per position of the line, the 12 piece bitboards, the two occupancies,
            the castling rights (rook squares) and the Zobrist hash (layout in the module docstring).
        st: int64 ``[C, 8]``: per position, side to move, e.p. square, halfmove clock, fullmove number,
            repetitions, the move that reached it, whether the hash holds the e.p. file.
        meta: int64 ``[4]``: the top row (the current position), ``max_plies`` (the line's length at
            which the game is a draw, ChessRules.max_plies), 1 for Chess960 notation, unused.
    """

    bb: U64
    st: I64
    meta: I64


# ---- bit helpers -----------------------------------------------------------------------------------


@_njit_no_alloc
def _lsb(b: np.uint64) -> int:
    return int(trailing_zeros(b))


@_njit_no_alloc
def _msb(b: np.uint64) -> int:
    return 63 - int(leading_zeros(b))


@_njit_no_alloc
def _bit(sq: int) -> np.uint64:
    return _ONE << np.uint64(sq)


@_njit_no_alloc
def _ray_attacks(d: int, sq: int, occ: np.uint64) -> np.uint64:
    """Squares a slider on ``sq`` attacks along ray ``d`` with ``occ`` occupied: the ray up to and with its
    first blocker (rays 0-3 run to higher squares, whose first blocker is the lowest bit; 4-7 to lower)."""
    r: np.uint64 = _RAYS[d, sq]
    b = r & occ
    if b and d < 4:
        r ^= _RAYS[d, _lsb(b)]
    elif b:
        r ^= _RAYS[d, _msb(b)]
    return r


@_njit_no_alloc
def _slider_attacks(d: int, sq: int, occ: np.uint64) -> np.uint64:
    """Squares a slider on ``sq`` attacks along rays ``d``, ``d + 1`` and their opposites ``d + 4``,
    ``d + 5`` with ``occ`` occupied (a rook's rays from 0, a bishop's from 2)."""
    a = _ray_attacks(d, sq, occ) | _ray_attacks(d + 1, sq, occ)
    return a | _ray_attacks(d + 4, sq, occ) | _ray_attacks(d + 5, sq, occ)


@_njit_no_alloc
def _rook_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Squares a rook on ``sq`` attacks with ``occ`` occupied (classical rays: first blocker by bit scan)."""
    return _slider_attacks(0, sq, occ)


@_njit_no_alloc
def _bishop_attacks(sq: int, occ: np.uint64) -> np.uint64:
    """Squares a bishop on ``sq`` attacks with ``occ`` occupied."""
    return _slider_attacks(2, sq, occ)


@_njit_no_alloc
def _attackers(bb: U64, row: int, sq: int, by: int, occ: np.uint64) -> np.uint64:
    """The pieces of colour ``by`` attacking ``sq`` in position ``row`` with occupancy ``occ`` (sliders
    see through squares missing from ``occ``)."""
    o = by * 6
    a = _KNIGHT_ATTACKS[sq] & bb[row, o + _KNIGHT]
    a |= _KING_ATTACKS[sq] & bb[row, o + _KING]
    a |= _PAWN_ATTACKS[1 - by, sq] & bb[row, o + _PAWN]
    queens = bb[row, o + _QUEEN]
    a |= _bishop_attacks(sq, occ) & (bb[row, o + _BISHOP] | queens)
    a |= _rook_attacks(sq, occ) & (bb[row, o + _ROOK] | queens)
    return np.uint64(a & occ)


@_njit_no_alloc
def _piece_type_at(bb: U64, row: int, colour: int, sq: int) -> int:
    """The type (0 pawn .. 5 king) of ``colour``'s piece on ``sq``, -1 if none."""
    m = _bit(sq)
    for t in range(6):
        if bb[row, colour * 6 + t] & m:
            return t
    return -1


# ---- move generation -------------------------------------------------------------------------------


@_njit_no_alloc
def _add_pawn_moves(out: I64, n: int, frm: int, to: int, us: int) -> int:
    """Append the pawn move ``frm -> to`` (four promotions on the last rank); return the new count."""
    if (us == 0 and to >= 56) or (us == 1 and to < 8):
        for promo in range(5, 1, -1):
            out[n] = frm | to << 6 | promo << 12
            n += 1
        return n
    out[n] = frm | to << 6
    return n + 1


@_njit_no_alloc
def _add_moves(out: I64, n: int, frm: int, targets: np.uint64) -> int:
    """Append a move ``frm -> to`` for each square ``to`` of ``targets``; return the new count."""
    while targets:
        to = _lsb(targets)
        targets &= targets - _ONE
        out[n] = frm | to << 6
        n += 1
    return n


@_njit_no_alloc
def _pinned(bb: U64, row: int, us: int, ksq: int) -> np.uint64:
    """``us``'s pieces pinned to their king on ``ksq``."""
    them = 1 - us
    o = them * 6
    occ_them = bb[row, _OCC + them]
    queens = bb[row, o + _QUEEN]
    snipers = _rook_attacks(ksq, occ_them) & (bb[row, o + _ROOK] | queens)
    snipers |= _bishop_attacks(ksq, occ_them) & (bb[row, o + _BISHOP] | queens)
    occ = occ_them | bb[row, _OCC + us]
    pinned = _ZERO
    while snipers:
        s = _lsb(snipers)
        snipers &= snipers - _ONE
        b = _BETWEEN[ksq, s] & occ
        if b and not (b & (b - _ONE)) and b & bb[row, _OCC + us]:
            pinned |= b
    return pinned


@_njit_no_alloc
def _king_moves(bb: U64, row: int, us: int, ksq: int, out: I64, n: int) -> int:
    """Append the king's steps to squares not attacked (the king itself off the board for sliders)."""
    occ = bb[row, _OCC] | bb[row, _OCC + 1]
    occ_nok = occ ^ _bit(ksq)
    targets = _KING_ATTACKS[ksq] & ~bb[row, _OCC + us]
    while targets:
        to = _lsb(targets)
        targets &= targets - _ONE
        if not _attackers(bb, row, to, 1 - us, occ_nok):
            out[n] = ksq | to << 6
            n += 1
    return n


@_njit_no_alloc
def _piece_moves(
    bb: U64, row: int, us: int, ksq: int, pinned: np.uint64, target: np.uint64, out: I64, n: int
) -> int:
    """Append the knight, bishop, rook and queen moves onto ``target`` (pinned pieces along their pin)."""
    occ = bb[row, _OCC] | bb[row, _OCC + 1]
    o = us * 6
    knights = bb[row, o + _KNIGHT] & ~pinned
    while knights:
        frm = _lsb(knights)
        knights &= knights - _ONE
        n = _add_moves(out, n, frm, _KNIGHT_ATTACKS[frm] & target)
    for kind in range(2):
        pieces = bb[row, o + (_BISHOP if kind == 0 else _ROOK)] | bb[row, o + _QUEEN]
        while pieces:
            frm = _lsb(pieces)
            pieces &= pieces - _ONE
            att = _bishop_attacks(frm, occ) if kind == 0 else _rook_attacks(frm, occ)
            att &= target
            if pinned & _bit(frm):
                att &= _LINE[ksq, frm]
            n = _add_moves(out, n, frm, att)
    return n


@_njit_no_alloc
def _pawn_moves(
    bb: U64, row: int, us: int, ksq: int, pinned: np.uint64, target: np.uint64, out: I64, n: int
) -> int:
    """Append the pawn pushes, double pushes and captures onto ``target`` (not en passant)."""
    occ = bb[row, _OCC] | bb[row, _OCC + 1]
    occ_them = bb[row, _OCC + 1 - us]
    step = 8 if us == 0 else -8
    pawns = bb[row, us * 6 + _PAWN]
    while pawns:
        frm = _lsb(pawns)
        pawns &= pawns - _ONE
        allowed = target
        if pinned & _bit(frm):
            allowed &= _LINE[ksq, frm]
        to = frm + step
        if not occ & _bit(to):
            if allowed & _bit(to):
                n = _add_pawn_moves(out, n, frm, to, us)
            rank = frm >> 3
            to2 = to + step
            start = (us == 0 and rank == 1) or (us == 1 and rank == 6)
            if start and not occ & _bit(to2) and allowed & _bit(to2):
                out[n] = frm | to2 << 6 | _FLAG_DOUBLE << 15
                n += 1
        att = _PAWN_ATTACKS[us, frm] & occ_them & allowed
        while att:
            to = _lsb(att)
            att &= att - _ONE
            n = _add_pawn_moves(out, n, frm, to, us)
    return n


@_njit_no_alloc
def _ep_is_legal(bb: U64, row: int, us: int, frm: int, ep: int) -> bool:
    """Whether ``us``'s pawn on ``frm`` may take en passant on ``ep``: the king is not attacked once both
    pawns have moved (pins, the rank discovered by both pawns leaving, a check not answered)."""
    them = 1 - us
    cap = ep - 8 if us == 0 else ep + 8
    occ = (bb[row, _OCC] | bb[row, _OCC + 1]) ^ _bit(frm) ^ _bit(cap) | _bit(ep)
    ksq = _lsb(bb[row, us * 6 + _KING])
    return not (_attackers(bb, row, ksq, them, occ) & ~_bit(cap))


@_njit_no_alloc
def _ep_capturers(bb: U64, st: I64, row: int, us: int) -> np.uint64:
    """``us``'s pawns that may legally take en passant in position ``row`` (python-chess's: the e.p.
    square empty, a pawn beside it, the king safe once both pawns have moved); 0 when none."""
    ep = st[row, _EP]
    if ep <= 0 or (bb[row, _OCC] | bb[row, _OCC + 1]) & _bit(ep):
        return np.uint64(0)
    beside = (
        bb[row, us * 6 + _PAWN] & _PAWN_ATTACKS[1 - us, ep] & (_RANK_1 << np.uint64(32 if us == 0 else 24))
    )
    legal = np.uint64(0)
    while beside:
        frm = _lsb(beside)
        beside &= beside - _ONE
        if _ep_is_legal(bb, row, us, frm, ep):
            legal |= _bit(frm)
    return np.uint64(legal)


@_njit_no_alloc
def _ep_moves(bb: U64, st: I64, row: int, us: int, out: I64, n: int) -> int:
    """Append the legal en-passant captures."""
    ep = st[row, _EP]
    capturers = _ep_capturers(bb, st, row, us)
    while capturers:
        frm = _lsb(capturers)
        capturers &= capturers - _ONE
        out[n] = frm | ep << 6 | _FLAG_EP << 15
        n += 1
    return n


@_njit_no_alloc
def _castling_moves(bb: U64, row: int, us: int, out: I64, n: int) -> int:
    """Append the castling moves (python-chess's ``generate_castling_moves``, Chess960 included): the
    king and the rook land on c/d (a-side) or g/f (h-side) of the back rank; every square either of
    them crosses or lands on is empty but for the two; no square of the king's path (its own
    included) is attacked."""
    backrank = _RANK_1 if us == 0 else _RANK_8
    base = 0 if us == 0 else 56
    king = bb[row, us * 6 + _KING] & backrank
    rights = bb[row, _RIGHTS] & backrank
    if not king or not rights:
        return n
    ksq = _lsb(king)
    occ = bb[row, _OCC] | bb[row, _OCC + 1]
    while rights:
        rsq = _msb(rights)
        rights ^= _bit(rsq)
        rook = _bit(rsq)
        a_side = rsq < ksq
        king_to = base + (2 if a_side else 6)
        rook_to = base + (3 if a_side else 5)
        king_path = _BETWEEN[ksq, king_to]
        path = king_path | _BETWEEN[rsq, rook_to] | _bit(king_to) | _bit(rook_to)
        if (occ ^ king ^ rook) & path:
            continue
        if _path_attacked(bb, row, 1 - us, king_path | king, occ ^ king):
            continue
        if _attackers(bb, row, king_to, 1 - us, occ ^ king ^ rook ^ _bit(rook_to)):
            continue
        out[n] = ksq | rsq << 6 | _FLAG_CASTLE << 15
        n += 1
    return n


@_njit_no_alloc
def _path_attacked(bb: U64, row: int, by: int, path: np.uint64, occ: np.uint64) -> bool:
    """Whether ``by`` attacks any square of ``path`` with occupancy ``occ``."""
    while path:
        sq = _lsb(path)
        path &= path - _ONE
        if _attackers(bb, row, sq, by, occ):
            return True
    return False


@_njit_no_alloc
def _gen_legal(bb: U64, st: I64, row: int, out: I64) -> int:
    """Write the legal moves of position ``row`` into ``out`` (int64 ``[>= 256]``); return their count."""
    us = st[row, _TURN]
    ksq = _lsb(bb[row, us * 6 + _KING])
    occ = bb[row, _OCC] | bb[row, _OCC + 1]
    checkers = _attackers(bb, row, ksq, 1 - us, occ)
    n = _king_moves(bb, row, us, ksq, out, 0)
    if checkers & (checkers - _ONE):  # double check: only the king moves
        return n
    if checkers:
        target = _BETWEEN[ksq, _lsb(checkers)] | checkers
    else:
        target = ~bb[row, _OCC + us]
    pinned = _pinned(bb, row, us, ksq)
    n = _piece_moves(bb, row, us, ksq, pinned, target, out, n)
    n = _pawn_moves(bb, row, us, ksq, pinned, target, out, n)
    n = _ep_moves(bb, st, row, us, out, n)
    if not checkers:
        n = _castling_moves(bb, row, us, out, n)
    return n


@_njit_no_alloc
def _has_legal_ep(bb: U64, st: I64, row: int) -> bool:
    """python-chess's ``has_legal_en_passant`` for position ``row``."""
    return bool(_ep_capturers(bb, st, row, st[row, _TURN]) != 0)


# ---- make / unmake ---------------------------------------------------------------------------------


@_njit_no_alloc
def _toggle(bb: U64, row: int, piece: int, sq: int) -> np.uint64:
    """Put or take ``piece`` (0..11) on ``sq`` of row ``row``; return the Zobrist key to xor."""
    m = _bit(sq)
    bb[row, piece] ^= m
    bb[row, _OCC + piece // 6] ^= m
    return np.uint64(_Z_PIECE[piece, sq])


@_njit_no_alloc
def _castle_hash(rights: np.uint64) -> np.uint64:
    h = _ZERO
    while rights:
        sq = _lsb(rights)
        rights &= rights - _ONE
        h ^= _Z_CASTLE[sq]
    return h


@_njit_no_alloc
def _make(bb: U64, st: I64, top: int, move: int) -> None:
    """Copy row ``top`` to ``top + 1`` and play the legal ``move`` there (python-chess's ``push``)."""
    n = top + 1
    for k in range(_BB_SIZE):
        bb[n, k] = bb[top, k]
    us = st[top, _TURN]
    them = 1 - us
    frm, to, promo, flag = move & 63, move >> 6 & 63, move >> 12 & 7, move >> 15 & 3
    h = bb[top, _HASH] ^ _Z_TURN
    if st[top, _EP_HASHED]:
        h ^= _Z_EP[st[top, _EP] & 7]
    halfmove = st[top, _HALFMOVE] + 1
    rights = bb[top, _RIGHTS]
    ep = -1
    if flag == _FLAG_CASTLE:
        base = frm & 56
        a_side = to < frm
        h ^= _toggle(bb, n, us * 6 + _KING, frm) ^ _toggle(bb, n, us * 6 + _ROOK, to)
        h ^= _toggle(bb, n, us * 6 + _KING, base + (2 if a_side else 6))
        h ^= _toggle(bb, n, us * 6 + _ROOK, base + (3 if a_side else 5))
        rights &= ~(_RANK_1 if us == 0 else _RANK_8)
    else:
        kind = _piece_type_at(bb, top, us, frm)
        captured = _piece_type_at(bb, top, them, to)
        if captured >= 0:
            h ^= _toggle(bb, n, them * 6 + captured, to)
            halfmove = 0
        elif flag == _FLAG_EP:
            h ^= _toggle(bb, n, them * 6 + _PAWN, to - 8 if us == 0 else to + 8)
        h ^= _toggle(bb, n, us * 6 + kind, frm)
        h ^= _toggle(bb, n, us * 6 + (promo - 1 if promo else kind), to)
        if kind == _PAWN:
            halfmove = 0
            if flag == _FLAG_DOUBLE:
                ep = (frm + to) >> 1
        elif kind == _KING:
            rights &= ~(_RANK_1 if us == 0 else _RANK_8)
        rights &= ~(_bit(frm) | _bit(to))
    h ^= _castle_hash(rights ^ bb[top, _RIGHTS])
    bb[n, _RIGHTS] = rights
    st[n, _TURN] = them
    st[n, _EP] = ep
    st[n, _HALFMOVE] = halfmove
    st[n, _FULLMOVE] = st[top, _FULLMOVE] + us
    st[n, _LAST] = move
    st[n, _EP_HASHED] = 0
    if ep >= 0 and _has_legal_ep(bb, st, n):
        st[n, _EP_HASHED] = 1
        h ^= _Z_EP[ep & 7]
    bb[n, _HASH] = h
    st[n, _REP] = _repetitions(bb, n, halfmove)


@_njit_no_alloc
def _repetitions(bb: U64, row: int, halfmove: int) -> int:
    """Occurrences of position ``row`` earlier on the line: only positions since the last pawn move or
    capture can be equal, and only those with the same side to move."""
    h = bb[row, _HASH]
    low = max(0, row - halfmove)
    count = 0
    for j in range(row - 2, low - 1, -2):
        if bb[j, _HASH] == h:
            count += 1
    return count


@_njit_no_alloc
def _init_root(bb: U64, st: I64) -> None:
    """Fill row 0's occupancies, hash and e.p. flag from its pieces, rights, side and e.p. square."""
    h = _castle_hash(bb[0, _RIGHTS])
    bb[0, _OCC] = bb[0, _OCC + 1] = _ZERO
    for piece in range(12):
        b = bb[0, piece]
        bb[0, _OCC + piece // 6] |= b
        while b:
            sq = _lsb(b)
            b &= b - _ONE
            h ^= _Z_PIECE[piece, sq]
    if st[0, _TURN]:
        h ^= _Z_TURN
    st[0, _EP_HASHED] = 0
    if st[0, _EP] >= 0 and _has_legal_ep(bb, st, 0):
        st[0, _EP_HASHED] = 1
        h ^= _Z_EP[st[0, _EP] & 7]
    bb[0, _HASH] = h
    st[0, _REP] = 0
    st[0, _LAST] = -1


@_njit_no_alloc
def push(s: KernelState, move: int) -> None:
    """Play the legal ``move`` (a kernel move int); the state must have a free row (see ``from_board``)."""
    top = s.meta[_TOP]
    _make(s.bb, s.st, top, move)
    s.meta[_TOP] = top + 1


@_njit_no_alloc
def pop(s: KernelState) -> int:
    """Take back the last move and return it (-1 at the root, where nothing changes)."""
    top = s.meta[_TOP]
    if top == 0:
        return -1
    s.meta[_TOP] = top - 1
    return int(s.st[top, _LAST])


@_njit
def copy_state(s: KernelState) -> KernelState:
    """An independent copy of ``s`` (all rows, so the copy keeps the history)."""
    return KernelState(s.bb.copy(), s.st.copy(), s.meta.copy())


@_njit_no_alloc
def legal_moves_into(s: KernelState, out: I64) -> int:
    """Write the legal moves of the current position into ``out`` (int64 ``[>= 256]``); return the count."""
    return _gen_legal(s.bb, s.st, s.meta[_TOP], out)


def legal_moves(s: KernelState) -> list[int]:
    """The legal moves of the current position, as kernel move ints."""
    out = np.empty(MAX_MOVES, dtype=np.int64)
    n = legal_moves_into(s, out)
    return [int(m) for m in out[:n]]


# ---- outcome ---------------------------------------------------------------------------------------


@_njit_no_alloc
def _side_insufficient(bb: U64, row: int, colour: int) -> bool:
    """python-chess's ``has_insufficient_material(colour)``."""
    o = colour * 6
    other = (1 - colour) * 6
    own = bb[row, _OCC + colour]
    if bb[row, o + _PAWN] | bb[row, o + _ROOK] | bb[row, o + _QUEEN]:
        return False
    if bb[row, o + _KNIGHT]:
        count = 0
        b = own
        while b:
            b &= b - _ONE
            count += 1
        return count <= 2 and not (
            bb[row, _OCC + 1 - colour] & ~bb[row, other + _KING] & ~bb[row, other + _QUEEN]
        )
    if bb[row, o + _BISHOP]:
        bishops = bb[row, _BISHOP] | bb[row, 6 + _BISHOP]
        same_colour = not (bishops & _DARK) or not (bishops & _LIGHT)
        pawns = bb[row, _PAWN] | bb[row, 6 + _PAWN]
        knights = bb[row, _KNIGHT] | bb[row, 6 + _KNIGHT]
        return same_colour and not pawns and not knights
    return True


@_njit
def outcome_code(s: KernelState) -> int:
    """How the game stands, in ChessState.outcome()'s order: ``CHECKMATE``, ``STALEMATE``,
    ``INSUFFICIENT``, ``REPETITION`` (third occurrence), ``FIFTY`` (halfmove clock >= 100),
    ``MAX_LENGTH`` (``max_plies`` moves since the root), else ``NOT_OVER``."""
    buf = np.empty(MAX_MOVES, dtype=np.int64)
    top = s.meta[_TOP]
    return _outcome_at(s.bb, s.st, top, s.meta[_MAX_PLIES], _gen_legal(s.bb, s.st, top, buf))


@_njit_no_alloc
def outcome_code_given(s: KernelState, num_legal: int) -> int:
    """:func:`outcome_code` of the current position when its number of legal moves is known already
    (``num_legal``, e.g. from :func:`legal_moves_into`): no move generation."""
    return _outcome_at(s.bb, s.st, s.meta[_TOP], s.meta[_MAX_PLIES], num_legal)


@_njit_no_alloc
def _in_check(bb: U64, st: I64, row: int) -> bool:
    """Whether the side to move in position ``row`` is in check."""
    us = st[row, _TURN]
    ksq = _lsb(bb[row, us * 6 + _KING])
    return bool(_attackers(bb, row, ksq, 1 - us, bb[row, _OCC] | bb[row, _OCC + 1]))


@_njit_no_alloc
def in_check(s: KernelState) -> bool:
    """Whether the side to move is in check."""
    return _in_check(s.bb, s.st, s.meta[_TOP])


@_njit_no_alloc
def _outcome_at(bb: U64, st: I64, row: int, max_plies: int, num_legal: int) -> int:
    """:func:`outcome_code` of position ``row`` that has ``num_legal`` legal moves."""
    if num_legal == 0:
        return CHECKMATE if _in_check(bb, st, row) else STALEMATE
    if _side_insufficient(bb, row, 0) and _side_insufficient(bb, row, 1):
        return INSUFFICIENT
    if st[row, _REP] >= 2:
        return REPETITION
    if st[row, _HALFMOVE] >= 100:
        return FIFTY
    if row >= max_plies:
        return MAX_LENGTH
    return NOT_OVER


def outcome(s: KernelState) -> Outcome | None:
    """ChessState.outcome()'s value for the current position (from the side to move), or ``None``."""
    return _OUTCOMES.get(int(outcome_code(s)))


@_njit_no_alloc
def repetition_count(s: KernelState) -> int:
    """How many times the current position occurred earlier on the line (ChessState.repetition_count)."""
    return int(s.st[s.meta[_TOP], _REP])


def halfmove_clock(s: KernelState) -> int:
    """The halfmove clock of the current position (python-chess's ``halfmove_clock``)."""
    return int(s.st[s.meta[_TOP], _HALFMOVE])


def zobrist_hash(s: KernelState) -> int:
    """The Zobrist hash of the current position's transposition key."""
    return int(s.bb[s.meta[_TOP], _HASH])


# ---- perft -----------------------------------------------------------------------------------------


@_njit_no_alloc
def _perft(bb: U64, st: I64, top: int, depth: int, buf: I64) -> int:
    """Leaf count ``depth >= 1`` plies below row ``top``; ``buf`` int64 ``[depth, 256]`` move lists."""
    moves = buf[depth - 1]
    n = _gen_legal(bb, st, top, moves)
    if depth == 1:
        return n
    total = 0
    for i in range(n):
        _make(bb, st, top, moves[i])
        total += _perft(bb, st, top + 1, depth - 1, buf)
    return total


@_njit
def _perft_divide(s: KernelState, depth: int, moves: I64, counts: I64) -> int:
    """Fill ``moves`` with the root's legal moves and ``counts`` with the leaves ``depth - 1`` plies below
    each (1 at depth 1); return the number of root moves."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    n = _gen_legal(bb, st, top, moves)
    buf = np.empty((max(depth - 1, 1), MAX_MOVES), dtype=np.int64)
    for i in range(n):
        if depth == 1:
            counts[i] = 1
        else:
            _make(bb, st, top, moves[i])
            counts[i] = _perft(bb, st, top + 1, depth - 1, buf)
    return n


def _with_room(s: KernelState, plies: int) -> KernelState:
    """``s`` itself if it has ``plies`` free rows above the top, else a copy with them."""
    top = int(s.meta[_TOP])
    if s.bb.shape[0] > top + plies:
        return s
    bb = np.zeros((top + plies + 1, _BB_SIZE), dtype=np.uint64)
    st = np.zeros((top + plies + 1, _ST_SIZE), dtype=np.int64)
    bb[: top + 1] = s.bb[: top + 1]
    st[: top + 1] = s.st[: top + 1]
    return KernelState(bb, st, s.meta.copy())


def perft_divide(s: KernelState, depth: int) -> list[tuple[int, int]]:
    """``(root move, leaf count below it)`` for every legal move (``depth >= 1``); ``s`` is unchanged."""
    work = _with_room(s, depth)
    moves = np.empty(MAX_MOVES, dtype=np.int64)
    counts = np.zeros(MAX_MOVES, dtype=np.int64)
    n = _perft_divide(work, depth, moves, counts)
    return [(int(moves[i]), int(counts[i])) for i in range(n)]


def perft_divide_state(state: ChessState, depth: int) -> list[tuple[chess.Move, int]]:
    """``engine.perft.perft_divide(state, depth)`` by these rules: ``(root move, leaf count below it)`` in
    ``ChessState.legal_moves()`` order, the moves as ``ChessState`` writes them (Chess960 included)."""
    chess960 = state.rules.chess960
    counts = perft_divide(from_chess_state(state, room=depth), depth)
    return [(to_chess_move(m, chess960), n) for m, n in counts]


def perft(s: KernelState, depth: int) -> int:
    """Leaf count of the legal move tree ``depth`` plies deep (1 at depth 0), the last ply bulk-counted."""
    if depth <= 0:
        return 1
    return sum(count for _, count in perft_divide(s, depth))


# ---- python-chess conversion -----------------------------------------------------------------------


def _empty_state(capacity: int, max_plies: int, chess960: bool) -> KernelState:
    meta = np.zeros(_META_SIZE, dtype=np.int64)
    meta[_MAX_PLIES] = max_plies
    meta[_CHESS960] = int(chess960)
    return KernelState(
        np.zeros((capacity, _BB_SIZE), dtype=np.uint64), np.zeros((capacity, _ST_SIZE), dtype=np.int64), meta
    )


def from_board(board: chess.Board, max_plies: int = 512, room: int = 256) -> KernelState:
    """A kernel state equal to ``board``: its root position (``board.root()``), then its move stack
    replayed, as :class:`ChessState` builds its history.  ``board.chess960`` picks the castling notation
    and the castling-rights cleaning (python-chess's ``clean_castling_rights``).

    Args:
        board: the position (valid: ``board.status() == chess.STATUS_VALID``).
        max_plies: moves since the root at which the game is drawn (``ChessRules.max_plies``).
        room: free rows above the current position (how deep :func:`push` may go before a copy).
    """
    root = board.root() if board.move_stack else board
    s = _empty_state(len(board.move_stack) + room + 1, max_plies, board.chess960)
    for colour in (chess.WHITE, chess.BLACK):
        o = 0 if colour == chess.WHITE else 6
        for t in range(6):
            s.bb[0, o + t] = root.pieces_mask(t + 1, colour)
    s.bb[0, _RIGHTS] = root.clean_castling_rights()
    s.st[0, _TURN] = 0 if root.turn == chess.WHITE else 1
    s.st[0, _EP] = -1 if root.ep_square is None else root.ep_square
    s.st[0, _HALFMOVE] = root.halfmove_clock
    s.st[0, _FULLMOVE] = root.fullmove_number
    _init_root(s.bb, s.st)
    for move in board.move_stack:
        push(s, from_chess_move(s, move))
    return s


def from_chess_state(state: ChessState, room: int = 256) -> KernelState:
    """A kernel state equal to ``state`` (same root, history, rules)."""
    return from_board(state.board, state.rules.max_plies, room)


def to_chess_move(move: int, chess960: bool) -> chess.Move:
    """The ``chess.Move`` python-chess generates for kernel ``move`` (castling ``e1g1`` unless ``chess960``)."""
    frm, to, promo, flag = move & 63, move >> 6 & 63, move >> 12 & 7, move >> 15 & 3
    if flag == _FLAG_CASTLE and not chess960:
        to = (frm & 56) + (2 if to < frm else 6)
    return chess.Move(frm, to, promo or None)


def from_chess_move(s: KernelState, move: chess.Move) -> int:
    """The kernel move of the legal ``move`` in the current position (either castling form).

    Raises:
        ValueError: ``move`` is not legal here.
    """
    chess960 = bool(s.meta[_CHESS960])
    moves = legal_moves(s)
    for form in (chess960, not chess960):  # the board's own form first: Chess960 f1g1 may be a king step
        for m in moves:
            if to_chess_move(m, form) == move:
                return m
    raise ValueError(f"move {move.uci()} is not legal here")


# ---- encoding --------------------------------------------------------------------------------------


@_njit_no_alloc
def encode_into(s: KernelState, out: npt.NDArray[np.float32]) -> None:
    """Write ``ChessState.encode()``'s planes into ``out``, float32 ``[119, 8, 8]`` (e.g. a batch row)."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    us = st[top, _TURN]
    flip = 7 if us else 0
    out[:] = 0.0
    for t in range(min(HISTORY_STEPS, top + 1)):
        row = top - t
        for piece in range(12):
            plane = PLANES_PER_STEP * t + (piece if us == 0 else (piece + 6) % 12)
            b = bb[row, piece]
            while b:
                sq = _lsb(b)
                b &= b - _ONE
                out[plane, (sq >> 3) ^ flip, sq & 7] = 1.0
        rep = st[row, _REP]
        if rep >= 1:
            out[PLANES_PER_STEP * t + 12] = 1.0
        if rep >= 2:
            out[PLANES_PER_STEP * t + 13] = 1.0
    c = HISTORY_STEPS * PLANES_PER_STEP
    if us:
        out[c] = 1.0
    out[c + 1] = (2 * (st[top, _FULLMOVE] - 1) + us) / MOVE_COUNT_SCALE
    for side in range(2):
        colour = us if side == 0 else 1 - us
        rights = bb[top, _RIGHTS] & (_RANK_1 if colour == 0 else _RANK_8)
        if rights:
            ksq = _lsb(bb[top, colour * 6 + _KING] & (_RANK_1 if colour == 0 else _RANK_8))
            if ksq < 63 and rights >> np.uint64(ksq + 1):
                out[c + 2 + 2 * side] = 1.0
            if rights & ((_ONE << np.uint64(ksq)) - _ONE):
                out[c + 3 + 2 * side] = 1.0
    out[c + 6] = st[top, _HALFMOVE] / NO_PROGRESS_SCALE


def encode(s: KernelState) -> npt.NDArray[np.float32]:
    """ChessState.encode()'s planes: float32 ``[119, 8, 8]``."""
    out = np.empty((NUM_PLANES, 8, 8), dtype=np.float32)
    encode_into(s, out)
    return out


@_njit_no_alloc
def legal_indices_into(s: KernelState, moves: I64, indices: I64) -> int:
    """Write the legal moves into ``moves`` and their policy indices (``ChessState``'s, < 4672) into
    ``indices``, both int64 ``[>= 256]``; return the count."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    n = _gen_legal(bb, st, top, moves)
    _policy_indices(st, top, moves, n, indices)
    return n


# ---- python-chess's move order, the root mate search -------------------------------------------------


@_njit_no_alloc
def _order_key(bb: U64, row: int, us: int, check: bool, move: int) -> int:
    """The place of ``move`` in python-chess's ``generate_legal_moves`` order, as a sort key (smaller
    first).  Out of check: piece moves (the king's included) by origin then destination, highest
    squares first; castling, the rook's square highest first; pawn captures by origin then
    destination; single pushes; double pushes (by destination, highest first); en passant by origin.
    In check the king's moves come first (destination highest first) and there is no castling.
    Promotions go queen, rook, bishop, knight."""
    frm, to, promo, flag = move & 63, move >> 6 & 63, move >> 12 & 7, move >> 15 & 3
    a, b = 63 - frm, 63 - to
    if flag == _FLAG_CASTLE:
        group, a, b = 2, 63 - to, 0
    elif check and bb[row, us * 6 + _KING] & _bit(frm):
        group, a, b = 0, 63 - to, 0
    elif not bb[row, us * 6 + _PAWN] & _bit(frm):
        group = 1
    elif flag == _FLAG_EP:
        group, b = 6, 0
    elif flag == _FLAG_DOUBLE:
        group, a, b = 5, 63 - to, 0
    elif (frm & 7) != (to & 7):
        group = 3
    else:
        group, a, b = 4, 63 - to, 0
    return group << 16 | a << 9 | b << 3 | (7 - promo if promo else 0)


@_njit_no_alloc
def _sort_moves(bb: U64, st: I64, row: int, moves: I64, n: int, keys: I64) -> None:
    """Put the ``n`` legal moves ``moves`` of position ``row``, as :func:`_gen_legal` lists them, in
    python-chess's order (``keys`` int64 ``[>= n]`` scratch): an insertion sort (a few dozen moves;
    about 140 shifts in a middlegame, fewer than for the reversed list)."""
    us = st[row, _TURN]
    check = _in_check(bb, st, row)
    for i in range(n):
        m = moves[i]
        k = _order_key(bb, row, us, check, m)
        j = i
        while j > 0 and keys[j - 1] > k:
            keys[j] = keys[j - 1]
            moves[j] = moves[j - 1]
            j -= 1
        keys[j] = k
        moves[j] = m


@_njit_no_alloc
def _gen_ordered(bb: U64, st: I64, row: int, moves: I64, keys: I64) -> int:
    """:func:`_gen_legal` with the moves in python-chess's order (``keys`` int64 ``[>= 256]`` scratch)."""
    n = _gen_legal(bb, st, row, moves)
    _sort_moves(bb, st, row, moves, n, keys)
    return n


@_njit_no_alloc
def _policy_indices(st: I64, row: int, moves: I64, n: int, indices: I64) -> None:
    """The policy indices (``ChessState``'s) of the ``n`` moves ``moves`` of position ``row``."""
    colour = st[row, _TURN]
    for i in range(n):
        m = moves[i]
        ft = (m & 63) << 6 | (m >> 6 & 63)
        promo = m >> 12 & 7
        if promo == 0 or promo == 5:
            indices[i] = _QK_INDEX[colour, ft]
        else:
            indices[i] = _UNDER_INDEX[colour, ft] + (promo - 2) * 64


@_njit_no_alloc
def ordered_legal_into(s: KernelState, moves: I64, indices: I64) -> int:
    """Write the legal moves in python-chess's generation order (``ChessState.legal_moves()``'s) into
    ``moves`` and their policy indices into ``indices``, both int64 ``[>= 256]``; return the count."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    n = _gen_ordered(bb, st, top, moves, indices)
    _policy_indices(st, top, moves, n, indices)
    return n


@_njit_no_alloc
def order_legal(s: KernelState, moves: I64, n: int, indices: I64) -> None:
    """:func:`ordered_legal_into` for moves generated already: put the ``n`` moves that
    :func:`legal_moves_into` wrote into ``moves`` in python-chess's order and write their policy
    indices into ``indices`` (int64 ``[>= n]``)."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    _sort_moves(bb, st, top, moves, n, indices)
    _policy_indices(st, top, moves, n, indices)


@_njit_no_alloc
def rewind(s: KernelState, top: int) -> None:
    """Take back moves until row ``top`` (at most the current row) is the current position."""
    s.meta[_TOP] = top


@_njit_no_alloc
def _mated(bb: U64, st: I64, row: int, buf: I64) -> bool:
    """python-chess's ``is_checkmate`` for position ``row`` (in check, no legal move)."""
    return _in_check(bb, st, row) and _gen_legal(bb, st, row, buf) == 0


@_njit_no_alloc
def mating_slot(s: KernelState, moves: I64, n: int, buf: I64) -> int:
    """``ChessState.mate_in_one`` on the current position of ``s`` with its ``n`` legal ``moves`` listed
    in python-chess's order: the index of the first that checkmates, or -1.  ``buf`` int64 ``[256]``
    scratch; the state needs one free row above its current one and is unchanged."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    ksq = _lsb(bb[top, (1 - st[top, _TURN]) * 6 + _KING])
    lines = _ZERO
    for d in range(8):
        lines |= _RAYS[d, ksq]
    near = lines | _KNIGHT_ATTACKS[ksq]
    for i in range(n):
        move = moves[i]
        flag = move >> 15 & 3
        # only a check mates: a piece landing on a line or a knight's jump from the king, a line opened
        # from the square it left, castling's rook, en passant's vanished pawn; the others are skipped
        # without playing them (the same first mate either way)
        special = flag in (_FLAG_CASTLE, _FLAG_EP)
        if not special and not (_bit(move >> 6 & 63) & near) and not (_bit(move & 63) & lines):
            continue
        _make(bb, st, top, move)
        if _mated(bb, st, top + 1, buf):
            return i
    return -1


@_njit_no_alloc
def _has_mate_in_one(bb: U64, st: I64, row: int, moves: I64, buf: I64) -> bool:
    """Whether the side to move in position ``row`` has a checkmating move (any order will do)."""
    n = _gen_legal(bb, st, row, moves)
    for i in range(n):
        _make(bb, st, row, moves[i])
        if _mated(bb, st, row + 1, buf):
            return True
    return False


@_njit_no_alloc
def _mate_in_two(bb: U64, st: I64, top: int, max_plies: int, n: int, bufs: I64, max_nodes: int) -> int:
    """``ChessState._mate_in_two``: the first of the ``n`` root moves ``bufs[0]`` (python-chess's order)
    that checks so that every reply allows a mate in one, searched while fewer than ``max_nodes``
    positions were visited (counted and ordered as there); -1 if none.  ``bufs`` int64 ``[5, 256]``."""
    nodes = 0
    for i in range(n):
        if nodes >= max_nodes:
            return -1
        _make(bb, st, top, bufs[0, i])
        if not _in_check(bb, st, top + 1):
            continue
        nodes += 1
        replies = _gen_ordered(bb, st, top + 1, bufs[1], bufs[2])
        forced = _outcome_at(bb, st, top + 1, max_plies, replies) == NOT_OVER
        if forced:
            for j in range(replies):
                if nodes >= max_nodes:
                    forced = False
                    break
                _make(bb, st, top + 1, bufs[1, j])
                nodes += 1
                row = top + 2
                forced = _outcome_at(bb, st, row, max_plies, _gen_legal(bb, st, row, bufs[3])) == NOT_OVER
                forced = forced and _has_mate_in_one(bb, st, row, bufs[3], bufs[4])
                if not forced:
                    break
        if forced:
            return i
    return -1


@_njit
def find_mate(s: KernelState, max_nodes: int) -> tuple[int, int]:
    """``ChessState.find_mate(max_nodes)``: ``(move, plies)`` of the first mate in one in python-chess's
    move order (plies 1), else of the first checking mate in two found within ``max_nodes`` positions
    (plies 3), else ``(-1, 0)`` (also when the game is over or ``max_nodes <= 0``).  The state needs
    four free rows; it is unchanged."""
    bb, st, top = s.bb, s.st, s.meta[_TOP]
    bufs = np.empty((5, MAX_MOVES), dtype=np.int64)
    n = _gen_ordered(bb, st, top, bufs[0], bufs[1])
    if max_nodes <= 0 or _outcome_at(bb, st, top, s.meta[_MAX_PLIES], n) != NOT_OVER:
        return -1, 0
    i = mating_slot(s, bufs[0], n, bufs[2])
    if i >= 0:
        return int(bufs[0, i]), 1
    i = _mate_in_two(bb, st, top, s.meta[_MAX_PLIES], n, bufs, max_nodes)
    return (int(bufs[0, i]), 3) if i >= 0 else (-1, 0)
