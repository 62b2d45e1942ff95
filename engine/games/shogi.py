"""Shogi rules adapter: wraps cshogi behind the :class:`~engine.games.base.Game` interface.

Coordinates (one table for every system used here)
===================================================

=====================  ==========================================================================
system                 definition
=====================  ==========================================================================
USI square ``7g``      file digit 1..9 (file 1 is on sente's right), rank letter a..i (rank a is
                       gote's back rank).  ``1a`` is the upper right corner of a diagram.
cshogi ``Square``      ``sq = (file - 1) * 9 + rank`` with rank a=0 .. i=8 (``1a`` = 0, ``9i`` = 80).
USI move               ``7g7f`` (from, to), ``8h2b+`` (promotion), ``P*5e`` (drop; the piece letter
                       is uppercase for both sides).  ``0000``, ``resign`` and ``win`` are not moves.
cshogi move ``int``    bits 0-6 to-square, bits 7-13 from-square (a drop stores ``80 + piece type``
                       with PAWN=1 LANCE=2 KNIGHT=3 SILVER=4 BISHOP=5 ROOK=6 GOLD=7), bit 14 the
                       promotion flag; higher bits (moved / captured piece) are ignored here.
oriented ``(row, col)``  the board as seen by the side to move, used by the input planes and the
                       policy.  Sente to move: ``row = rank`` (a=0), ``col = 9 - file`` (file 9 is
                       col 0), i.e. a diagram.  Gote to move: the board is turned 180 degrees:
                       ``row = 8 - rank``, ``col = file - 1``.  Either way row 0 is the far side
                       (the opponent's back rank) and "forward" is ``row - 1``.
oriented position      ``pos = row * 9 + col`` in 0..80 (so ``pos(gote) = 80 - pos(sente)``).
policy index           ``plane * 81 + pos`` in ``[0, 11259)`` (Table S2, 9 x 9 x 139); ``pos`` is the
                       oriented from-square of a board move and the oriented to-square of a drop.
=====================  ==========================================================================

Policy planes (``P = 139``), directions in oriented coordinates, ``(d_row, d_col)``:

=========  ======================================================================================
planes     moves
=========  ======================================================================================
0..63      "queen" moves without promotion: ``plane = dir * 8 + (distance - 1)``, distance 1..8,
           ``dir`` 0..7 = N(-1,0) NE(-1,+1) E(0,+1) SE(+1,+1) S(+1,0) SW(+1,-1) W(0,-1) NW(-1,-1).
           N is toward the opponent; for sente E is toward file 1.
64, 65     knight moves without promotion: 64 = (-2,-1), 65 = (-2,+1).
66..129    promoting queen moves: ``66 + dir * 8 + (distance - 1)``.
130, 131   promoting knight moves: 130 = (-2,-1), 131 = (-2,+1).
132..138   drops of P, L, N, S, G, B, R (at the oriented to-square).
=========  ======================================================================================

Examples: sente ``7g7f`` = 0 * 81 + 56 = 56; gote ``3c3d`` is also 56 (rotated); sente ``8i7g`` =
65 * 81 + 73; sente ``8h2b+`` = (66 + 13) * 81 + 64; sente ``P*5e`` = 132 * 81 + 40.

Input planes (``C = 362``, float32 ``[362, 9, 9]`` indexed ``[c, row, col]`` as above)
------------------------------------------------------------------------------------
Eight history steps of M = 45 planes, **newest first**: step ``t`` (0 = the current position,
1 = one ply ago, ... 7) occupies channels ``45 t .. 45 t + 44``.  Steps before the state's first
position are all zero.  Every step is drawn from the point of view of the *current* side to move
(P1), even for history positions where the other side was to move.  Within a step:

=========  ======================================================================================
offset     feature
=========  ======================================================================================
0..13      P1 pieces, one-hot: P, L, N, S, G, B, R, K, +P, +L, +N, +S, +B (horse), +R (dragon).
14..27     P2 pieces, same order.
28..30     repetitions: plane ``28 + k`` is all ones if that position had occurred at least
           ``k + 1`` times before in the game (k = 0, 1, 2).
31..37     P1 prisoners (pieces in hand) P, L, N, S, G, B, R: constant ``count / max`` with max
           = 18, 4, 4, 4, 4, 2, 2 (so in ``[0, 1]``).
38..44     P2 prisoners, same order and scaling.
=========  ======================================================================================

then two constant planes: 360 colour (all ones when gote is to move, else zero) and 361 total move
count ``(game plies) / 100`` where game plies = SFEN move number - 1 (0 at the start position).

History is cheap: ``push`` only records the cshogi move, the 64-bit Zobrist key of the new position
and its repetition count.  ``encode_into`` reads the current position from cshogi (its one-hot piece
planes and the hands) and a compiled kernel (:mod:`engine.games.shogi_kernel`) writes all 362 planes
into the caller's buffer, rebuilding the seven history positions by taking the last moves back on its
own array (a cshogi move carries the moved and the captured piece), so nothing is cached per position.

Rules: cshogi's legal move generator (all legal moves, including non-promotions) supplies no
pawn-drop mate, no nifu, forced promotion and no dead pieces.  Outcomes are from the side to move:
fourfold repetition (sennichite) is a draw unless one side gave check with every move since the
first occurrence of the position: that side loses ("perpetual-check"); an entering-king declaration
(CSA 27-point rule, :meth:`ShogiState.can_declare_win`) wins for the side to move; no legal move
loses ("checkmate"; shogi has no stalemate draw); ``max_plies`` plies since the state's first
position, or the game ply ``draw_game_ply`` (a tournament's draw after N moves), is a draw ("max-length").
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import NamedTuple

import cshogi
import numpy as np

from engine.games.base import (
    HISTORY_STEPS,
    Game,
    GameInfo,
    GameState,
    IllegalMoveError,
    InvalidPositionError,
    Outcome,
    PlayProfile,
    random_play_rate,
    uncount,
)

#: Bumped whenever the input planes or the policy order change.
ENCODING_VERSION = 1

#: A cshogi move (``int``, see the table above).
ShogiMove = int

BOARD_SIZE = 9
NUM_SQUARES = 81
PIECE_PLANES = 14  # per player
STEP_PLANES = 45  # M: 14 + 14 + 3 + 7 + 7
NUM_PLANES = HISTORY_STEPS * STEP_PLANES + 2  # 362
POLICY_PLANES = 139
POLICY_SIZE = POLICY_PLANES * NUM_SQUARES  # 11259

SHOGI_INFO = GameInfo("shogi", BOARD_SIZE, NUM_PLANES, POLICY_SIZE, ENCODING_VERSION)

STARTING_SFEN = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"

#: Offsets inside one history step.
REPETITION_OFFSET = 28
HAND_OFFSET = 31
COLOUR_PLANE = 360
MOVE_COUNT_PLANE = 361
#: Total move count plane = game plies / MOVE_COUNT_SCALE.
MOVE_COUNT_SCALE = 100.0

#: Prisoner order (same as cshogi's ``pieces_in_hand``) and the divisor of each count.
HAND_ORDER = "PLNSGBR"
HAND_MAX = (18, 4, 4, 4, 4, 2, 2)

#: Policy plane offsets.
KNIGHT_PLANE = 64
PROMOTION_OFFSET = 66
DROP_PLANE = 132

#: Directions (d_row, d_col) in oriented coordinates, in policy order.
DIRECTIONS = ((-1, 0), (-1, 1), (0, 1), (1, 1), (1, 0), (1, -1), (0, -1), (-1, -1))
KNIGHT_JUMPS = ((-2, -1), (-2, 1))

#: Our piece-plane order as cshogi piece types (PAWN=1 LANCE=2 KNIGHT=3 SILVER=4 BISHOP=5 ROOK=6
#: GOLD=7 KING=8 PROM_PAWN=9 .. PROM_ROOK=14): P L N S G B R K +P +L +N +S +B +R.
PLANE_PIECE_TYPES = (1, 2, 3, 4, 7, 5, 6, 8, 9, 10, 11, 12, 13, 14)
#: cshogi piece type of each USI drop letter, and the drop plane of each cshogi piece type.
DROP_PIECE_TYPES = {"P": 1, "L": 2, "N": 3, "S": 4, "G": 7, "B": 5, "R": 6}
DROP_PLANE_OF_TYPE = {pt: DROP_PLANE + HAND_ORDER.index(letter) for letter, pt in DROP_PIECE_TYPES.items()}

_MOVE_KEY_MASK = 0x7FFF  # to | from << 7 | promotion << 14
_PROMOTION_FLAG = 1 << 14
_FILES = "123456789"
_RANKS = "abcdefghi"


# ---- coordinate helpers ------------------------------------------------------------------------
def square_to_pos(square: int, side: int) -> int:
    """Oriented position ``row * 9 + col`` of cshogi square ``square`` seen by ``side`` (0 sente)."""
    file_index, rank = divmod(square, BOARD_SIZE)
    pos = rank * BOARD_SIZE + (BOARD_SIZE - 1 - file_index)
    return pos if side == 0 else NUM_SQUARES - 1 - pos


def square_name(square: int) -> str:
    """USI name of a cshogi square: 0 -> ``1a``, 80 -> ``9i``."""
    file_index, rank = divmod(square, BOARD_SIZE)
    return _FILES[file_index] + _RANKS[rank]


def parse_square(name: str) -> int:
    """cshogi square of a USI square name (``7g`` -> 60).  Raises ``ValueError``."""
    if len(name) != 2 or name[0] not in _FILES or name[1] not in _RANKS:
        raise ValueError(f"bad square {name!r}")
    return _FILES.index(name[0]) * BOARD_SIZE + _RANKS.index(name[1])


def _move_plane(from_pos: int, to_pos: int, promotion: bool) -> int:
    """Policy plane of a board move between oriented positions, or -1 if no plane fits."""
    fr, fc = divmod(from_pos, BOARD_SIZE)
    tr, tc = divmod(to_pos, BOARD_SIZE)
    dr, dc = tr - fr, tc - fc
    if (dr, dc) in KNIGHT_JUMPS:
        plane = KNIGHT_PLANE + KNIGHT_JUMPS.index((dr, dc))
        return plane + (PROMOTION_OFFSET if promotion else 0)
    if (dr == 0 and dc == 0) or not (dr == 0 or dc == 0 or abs(dr) == abs(dc)):
        return -1  # no move, or not on a line
    distance = max(abs(dr), abs(dc))
    direction = DIRECTIONS.index(((dr > 0) - (dr < 0), (dc > 0) - (dc < 0)))
    plane = direction * 8 + distance - 1
    return plane + (PROMOTION_OFFSET if promotion else 0)


def _build_move_index() -> np.ndarray:
    """``table[side, move & 0x7fff]`` = policy index, -1 for codes that are no move.  int64 [2, 32768]."""
    table = np.full((2, _MOVE_KEY_MASK + 1), -1, dtype=np.int64)
    for side in (0, 1):
        for frm in range(NUM_SQUARES):
            fpos = square_to_pos(frm, side)
            for to in range(NUM_SQUARES):
                tpos = square_to_pos(to, side)
                for promotion in (0, 1):
                    plane = _move_plane(fpos, tpos, bool(promotion))
                    if plane >= 0:
                        table[side, to | frm << 7 | promotion << 14] = plane * NUM_SQUARES + fpos
        for pt, plane in DROP_PLANE_OF_TYPE.items():
            for to in range(NUM_SQUARES):
                table[side, to | (NUM_SQUARES - 1 + pt) << 7] = plane * NUM_SQUARES + square_to_pos(to, side)
    return table


#: Policy index of each move code, per side to move (see ``_build_move_index``).
MOVE_INDEX: np.ndarray = _build_move_index()
_MOVE_INDEX_LISTS: tuple[list[int], list[int]] = (MOVE_INDEX[0].tolist(), MOVE_INDEX[1].tolist())
_MOVE_INDEX_ROWS: tuple[np.ndarray, np.ndarray] = (MOVE_INDEX[0], MOVE_INDEX[1])
#: Inverse table: ``INDEX_MOVE[side, index]`` = move code (``move & 0x7fff``) or -1.  int64 [2, 11259].
INDEX_MOVE: np.ndarray = np.full((2, POLICY_SIZE), -1, dtype=np.int64)
for _side in (0, 1):
    _codes = np.flatnonzero(MOVE_INDEX[_side] >= 0)
    INDEX_MOVE[_side, MOVE_INDEX[_side, _codes]] = _codes
del _side, _codes

CS_PLANES_BUFFER = 104 * NUM_SQUARES  # cshogi documents 28 + 76 planes for piece_planes
HAND_SCALE = np.array([1.0 / m for m in HAND_MAX], dtype=np.float32)


# ---- SFEN validation ---------------------------------------------------------------------------
_PIECE_LETTERS = "PLNSGBRK"
_MAX_PIECES = {"P": 18, "L": 4, "N": 4, "S": 4, "G": 4, "B": 2, "R": 2, "K": 2}
_HAND_TOKEN = re.compile(r"([1-9][0-9]?)?([PLNSGBRplnsgbr])")
_USI_BOARD_MOVE = re.compile(r"([1-9][a-i])([1-9][a-i])(\+?)")
_USI_DROP = re.compile(r"([PLNSGBR])\*([1-9][a-i])")


def normalize_sfen(text: str) -> str:
    """Check an SFEN ``board side hands movecount`` and return it with single spaces.

    The move count may be omitted (then 1).  Rejects (``InvalidPositionError``): wrong field count,
    bad characters, ranks that do not hold 9 squares, promoted gold/king, not exactly one king per
    side, more pieces of a kind than a shogi set holds, pawns/lances on the last rank or knights on
    the last two ranks (unpromoted), two unpromoted pawns of one side on a file (nifu), malformed or
    repeated hand entries, a move count that is not a positive integer.  (Whether the side not to move
    is in check is verified on the board by :class:`ShogiState`.)
    """
    if not isinstance(text, str):
        raise InvalidPositionError(f"SFEN must be a string, not {type(text).__name__}")
    fields = text.split()
    if len(fields) == 3:
        fields.append("1")
    if len(fields) != 4:
        raise InvalidPositionError(f"SFEN needs 4 fields (board side hands movecount): {text!r}")
    board_text, side, hands, count = fields
    material = dict.fromkeys(_PIECE_LETTERS, 0)
    _check_board(board_text, material, text)
    if side not in ("b", "w"):
        raise InvalidPositionError(f"side to move must be 'b' or 'w': {text!r}")
    _count_hands(hands, material, text)
    for letter, n in material.items():
        if n > _MAX_PIECES[letter]:
            limit = _MAX_PIECES[letter]
            raise InvalidPositionError(f"{n} pieces of kind {letter} (at most {limit}): {text!r}")
    if not (count.isascii() and count.isdigit()) or int(count) < 1 or len(count) > 7:
        raise InvalidPositionError(f"move count must be a positive integer: {text!r}")
    return f"{board_text} {side} {hands} {int(count)}"


def _rank_squares(rank_text: str, rank: int, text: str) -> Iterator[tuple[int, str, bool]]:
    """The pieces of one SFEN rank as ``(column, letter as written, promoted)``, left to right.

    Raises ``InvalidPositionError`` for bad characters, a dangling or impossible ``+`` and a rank that
    does not hold exactly 9 squares (``text``: the whole SFEN, for messages).
    """
    col = 0
    i = 0
    while i < len(rank_text):
        ch = rank_text[i]
        i += 1
        if ch in "123456789":
            col += int(ch)
            continue
        promoted = ch == "+"
        if promoted:
            if i >= len(rank_text):
                raise InvalidPositionError(f"dangling '+' in SFEN: {text!r}")
            ch = rank_text[i]
            i += 1
        letter = ch.upper()
        if letter not in _PIECE_LETTERS or not ch.isascii():
            raise InvalidPositionError(f"bad SFEN character {ch!r}: {text!r}")
        if promoted and letter in "GK":
            raise InvalidPositionError(f"'+{ch}' cannot be promoted: {text!r}")
        if col >= BOARD_SIZE:
            raise InvalidPositionError(f"SFEN rank {rank + 1} holds more than 9 squares: {text!r}")
        yield col, ch, promoted
        col += 1
    if col != BOARD_SIZE:
        raise InvalidPositionError(f"SFEN rank {rank + 1} does not hold 9 squares: {text!r}")


def _check_board(board_text: str, material: dict[str, int], text: str) -> None:
    """Check the board field (ranks, placement, nifu, one king a side); add its pieces to ``material``."""
    ranks = board_text.split("/")
    if len(ranks) != BOARD_SIZE:
        raise InvalidPositionError(f"SFEN board needs 9 ranks: {text!r}")
    kings = [0, 0]
    pawn_files: set[tuple[int, int]] = set()
    for rank, rank_text in enumerate(ranks):
        for col, ch, promoted in _rank_squares(rank_text, rank, text):
            letter = ch.upper()
            colour = 0 if ch.isupper() else 1
            if not promoted:
                rows_left = rank if colour == 0 else BOARD_SIZE - 1 - rank  # 0 = owner's last rank
                if (letter in "PL" and rows_left == 0) or (letter == "N" and rows_left <= 1):
                    raise InvalidPositionError(f"piece {ch!r} cannot stand on rank {rank + 1}: {text!r}")
                if letter == "P":
                    if (colour, col) in pawn_files:
                        raise InvalidPositionError(f"two pawns on one file (nifu): {text!r}")
                    pawn_files.add((colour, col))
            if letter == "K":
                kings[colour] += 1
            material[letter] += 1
    if kings != [1, 1]:
        raise InvalidPositionError(f"each side needs exactly one king: {text!r}")


def _count_hands(hands: str, material: dict[str, int], text: str) -> None:
    """Check the hands field (``-`` or e.g. ``2Pb``, each kind once); add its pieces to ``material``."""
    if hands == "-":
        return
    seen: set[str] = set()
    pos = 0
    while pos < len(hands):
        m = _HAND_TOKEN.match(hands, pos)
        if m is None:
            raise InvalidPositionError(f"bad pieces in hand {hands!r}: {text!r}")
        if m.group(2) in seen:
            raise InvalidPositionError(f"hand piece {m.group(2)!r} given twice: {text!r}")
        seen.add(m.group(2))
        material[m.group(2).upper()] += int(m.group(1) or 1)
        pos = m.end()


# ---- rules and state ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ShogiRules:
    """Shogi settings.

    Attributes:
        max_plies: a game is drawn ("max-length") after this many plies from the state's first
            position (self-play bound).
        draw_game_ply: a position whose game ply (SFEN move number - 1, 0 at the start position) is
            at least this is drawn too ("max-length"): the tournament rule of a draw after N moves
            (USI ``MaxMovesToDraw``: floodgate 256, championships 320); 0 for none.
        entering_king: allow the CSA 27-point entering-king declaration (jishogi): when the side to
            move can declare, the position is a win for it ("entering-king").
    """

    max_plies: int = 512
    entering_king: bool = True
    draw_game_ply: int = 0

    def __post_init__(self) -> None:
        if self.max_plies < 1:
            raise ValueError(f"max_plies must be positive, not {self.max_plies}")
        if self.draw_game_ply < 0:
            raise ValueError(f"draw_game_ply must be 0 or positive, not {self.draw_game_ply}")


_CHECKMATE = Outcome(-1.0, "checkmate")
_REPETITION = Outcome(0.0, "repetition")
_PERPETUAL_WIN = Outcome(1.0, "perpetual-check")
_PERPETUAL_LOSS = Outcome(-1.0, "perpetual-check")
_ENTERING_KING = Outcome(1.0, "entering-king")
_MAX_LENGTH = Outcome(0.0, "max-length")


class ShogiState(GameState[int]):
    """A shogi game in progress (mutable: ``push``/``pop``), wrapping a ``cshogi.Board``.

    Per ply the state keeps three stacks beside the board: the moves, the Zobrist keys of the
    positions (one more than moves: index 0 is the first position) and the repetition counts (how
    many times each position had occurred before it, within this state's history).  ``_counts``
    maps a key to its number of occurrences on the current line.  ``_legal`` holds the legal moves
    of the current position once :meth:`outcome` has generated them (the search asks for the outcome
    of a new leaf and then for its moves); ``push`` and ``pop`` drop it.
    """

    info = SHOGI_INFO

    def __init__(
        self,
        rules: ShogiRules | None = None,
        sfen: str | None = None,
    ) -> None:
        """A state at ``sfen`` (default: the start position).  Raises ``InvalidPositionError``."""
        self._rules = rules if rules is not None else ShogiRules()
        if sfen is None:
            root = STARTING_SFEN
            board = cshogi.Board()
        else:
            root = normalize_sfen(sfen)
            board = _board_from_sfen(root)
        self._root_sfen = root
        self._board = board
        key = board.zobrist_hash()
        self._moves: list[int] = []
        self._keys: list[int] = [key]
        self._reps: list[int] = [0]
        self._counts: dict[int, int] = {key: 1}
        self._legal: list[int] | None = None
        self._scratch = np.zeros(CS_PLANES_BUFFER, dtype=np.float32)

    # ---- rules -------------------------------------------------------------------------------
    @property
    def rules(self) -> ShogiRules:
        return self._rules

    @property
    def board(self) -> cshogi.Board:
        """The cshogi board, for reading only (change the position with ``push``/``pop``)."""
        return self._board

    def legal_moves(self) -> list[int]:
        """All legal moves (cshogi ``LegalAll`` order: deterministic), non-promotions included.  The
        list is the caller's (a new one on every call)."""
        moves = self._legal
        if moves is None:
            return list(self._board.legal_moves)
        self._legal = None  # handed over: the caller may change it
        return moves

    def legal_moves_and_indices(self) -> tuple[list[int], np.ndarray]:
        """Legal moves and their policy indices (int64 ``[L]``), aligned; the indices by one compiled
        table lookup."""
        moves = self.legal_moves()
        return moves, self._indices(np.fromiter(moves, np.int64, len(moves)))

    def legal_move_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """Legal moves (cshogi move ints, int64 ``[L]``, in :meth:`legal_moves` order) and their policy
        indices (int64 ``[L]``): no Python object per move, for compiled callers."""
        moves = self._legal
        self._legal = None
        array = np.fromiter(moves if moves is not None else self._board.legal_moves, np.int64)
        return array, self._indices(array)

    def _indices(self, moves: np.ndarray) -> np.ndarray:
        """int64 ``[L]``: the policy indices of ``moves`` (int64 ``[L]``) for the side to move."""
        return _kernels().policy_indices(moves, _MOVE_INDEX_ROWS[self._board.turn])

    def push(self, move: int) -> None:
        """Play a legal move (not checked: use ``legal_moves`` or ``parse_move``)."""
        board = self._board
        board.push(move)
        key = board.zobrist_hash()
        counts = self._counts
        seen = counts.get(key, 0)
        counts[key] = seen + 1
        self._moves.append(move)
        self._keys.append(key)
        self._reps.append(seen)
        self._legal = None

    def pop(self) -> int:
        """Take back the last move and return it.  Raises ``IndexError`` at the first position."""
        if not self._moves:
            raise IndexError("pop from the first position of the state")
        uncount(self._counts, self._keys.pop())
        self._reps.pop()
        self._board.pop()
        self._legal = None
        return self._moves.pop()

    def outcome(self) -> Outcome | None:
        """The result from the side to move, or ``None``.

        Checked in this order: fourfold repetition (the previous move ended the game: draw, or a loss
        for the side that gave check with every move since the first occurrence), entering-king
        declaration (win), no legal move (loss, "checkmate"), ``max_plies`` (draw, "max-length").
        """
        if self._reps[-1] >= 3:
            return self._repetition_outcome()
        board = self._board
        if self._rules.entering_king and board.is_nyugyoku():
            return _ENTERING_KING
        moves = self._legal
        if moves is None:
            moves = self._legal = list(board.legal_moves)  # kept for the legal_moves call that follows
        if not moves:
            return _CHECKMATE
        if len(self._moves) >= self.length_limit:
            return _MAX_LENGTH
        return None

    @property
    def length_limit(self) -> int:
        """The :attr:`ply` (moves since this state's first position) at which the game is drawn by its
        length: ``rules.max_plies``, or earlier where ``rules.draw_game_ply`` comes first (the game ply
        and :attr:`ply` grow together, so the limit is fixed for the state).  At most :attr:`ply` when
        the position is already past it."""
        limit = self._rules.max_plies
        draw = self._rules.draw_game_ply
        if draw > 0:
            limit = min(limit, draw - (self.game_ply - self.ply))
        return limit

    def plies_left(self) -> int | None:
        """Plies until :attr:`length_limit` (0 or less: the game is over by its length)."""
        return self.length_limit - self.ply

    def mate_in_one(self) -> int | None:
        """The first legal move (in :meth:`legal_moves` order) that checkmates: it gives check and the
        opponent has lost (``outcome()`` "checkmate"), or ``None``.  Exhaustive, so every such mate is
        found (pawn-drop mates are not legal moves), and the same move as the compiled search's
        (:func:`~engine.games.shogi_rules_kernel.mating_slot`); a reference for tests and the Python
        tree, which plays every move."""
        board = self._board
        for move in self.legal_moves():
            self.push(move)
            try:
                mates = (
                    board.is_check()
                    and (outcome := self.outcome()) is not None
                    and outcome.reason == "checkmate"
                )
            finally:
                self.pop()
            if mates:
                return move
        return None

    def find_mate(self, max_nodes: int) -> tuple[int, int] | None:
        """cshogi's df-pn mate solver (checks only, at most ``max_nodes`` nodes): ``(first move, plies)``
        of the mate it proves, or ``None``.  Not asked in check (the solver assumes the side to move
        is not); the solver's principal variation is played through these rules and kept
        only when it ends in checkmate."""
        board = self._board
        if max_nodes <= 0 or board.is_check():
            return None
        solver = _mate_solver(max_nodes)
        if not solver.search(board):
            return None
        pv = list(solver.get_pv(board))
        if len(pv) % 2 == 0:  # empty, or a line that ends with the attacker to move
            return None
        pushed = 0
        try:
            for move in pv:
                if not board.is_legal(move):
                    return None
                self.push(move)
                pushed += 1
            outcome = self.outcome()
        finally:
            for _ in range(pushed):
                self.pop()
        if outcome is None or outcome.reason != "checkmate":
            return None
        return pv[0], len(pv)

    def can_declare_win(self) -> bool:
        """True when the side to move may declare an entering-king win (USI ``bestmove win``)."""
        return self._rules.entering_king and bool(self._board.is_nyugyoku())

    def _repetition_outcome(self) -> Outcome:
        """Outcome of a fourfold repetition: walks back to the first occurrence (rare, O(cycle))."""
        keys = self._keys
        key = keys[-1]
        first = keys.index(key)
        board = self._board
        checks: list[bool] = []  # checks[j]: the side to move was in check j plies ago
        for _ in range(len(keys) - 1 - first):
            checks.append(board.is_check())
            board.pop()
        for move in self._moves[first:]:
            board.push(move)
        # Positions 0, 2, 4.. plies ago follow moves of the opponent of the side to move.
        if all(checks[0::2]):
            return _PERPETUAL_WIN
        if all(checks[1::2]):
            return _PERPETUAL_LOSS
        return _REPETITION

    @property
    def side_to_move(self) -> int:
        """0 sente (black), 1 gote (white)."""
        return int(self._board.turn)

    @property
    def ply(self) -> int:
        """Moves played since this state's first position."""
        return len(self._moves)

    @property
    def game_ply(self) -> int:
        """Plies since the start of the game as counted by the SFEN move number (move number - 1)."""
        return int(self._board.move_number) - 1

    @property
    def move_stack(self) -> Sequence[int]:
        return tuple(self._moves)

    def key(self) -> Hashable:
        """cshogi's 64-bit Zobrist key: board, side to move and both hands (not the move number)."""
        return self._keys[-1]

    def history_keys(self) -> tuple[Hashable, ...]:
        """Keys of up to 7 previous positions, newest first."""
        return tuple(self._keys[-2 : -HISTORY_STEPS - 1 : -1])

    def repetition_count(self) -> int:
        """How many times the current position had occurred before in this state's history."""
        return self._reps[-1]

    def eval_key(self) -> Hashable:
        """Everything ``encode()`` reads: keys and repetition counts of 8 steps, and the game ply."""
        return (
            tuple(self._keys[-1 : -HISTORY_STEPS - 1 : -1]),
            tuple(self._reps[-1 : -HISTORY_STEPS - 1 : -1]),
            self._board.move_number,
        )

    def copy(self) -> ShogiState:
        """An independent state with the same history (the board is rebuilt by replaying the moves,
        because a copied cshogi board still links to the original's undo information)."""
        other = ShogiState.__new__(ShogiState)
        other._rules = self._rules
        other._root_sfen = self._root_sfen
        board = cshogi.Board(self._root_sfen)
        for move in self._moves:
            board.push(move)
        other._board = board
        other._moves = list(self._moves)
        other._keys = list(self._keys)
        other._reps = list(self._reps)
        other._counts = dict(self._counts)
        other._legal = None
        other._scratch = np.zeros(CS_PLANES_BUFFER, dtype=np.float32)
        return other

    # ---- encodings ---------------------------------------------------------------------------
    def encode(self) -> np.ndarray:
        """Input planes oriented to the side to move (layout in the module docstring).

        Returns:
            float32 ``[362, 9, 9]``.
        """
        out = np.empty(SHOGI_INFO.input_shape, dtype=np.float32)
        self.encode_into(out)
        return out

    def encode_into(self, out: np.ndarray) -> None:
        """Write :meth:`encode`'s planes into ``out`` (float32 ``[362, 9, 9]``, e.g. a row of a batch
        buffer; every value is written) by one compiled call."""
        if out.shape != SHOGI_INFO.input_shape or out.dtype != np.float32:
            raise ValueError(f"out must be float32 {SHOGI_INFO.input_shape}, not {out.dtype} {out.shape}")
        if not out.flags.c_contiguous:
            out[...] = self.encode()
            return
        board = self._board
        black, white = board.pieces_in_hand
        reps = self._reps
        steps = min(len(reps), HISTORY_STEPS)
        # hands, repetition counts of the newest `steps` positions, then the newest `steps - 1` moves
        history = black + white + reps[-1 : -steps - 1 : -1] + self._moves[-1:-steps:-1]
        board.piece_planes(self._scratch)
        move_count = (board.move_number - 1) / MOVE_COUNT_SCALE
        _kernels().encode_planes(
            self._scratch,
            np.array(history, dtype=np.int64),
            steps,
            board.turn,
            move_count,
            HAND_SCALE,
            out,
        )

    def move_to_index(self, move: int) -> int:
        """Policy index of ``move`` for the side to move.  Raises ``IllegalMoveError`` if the move
        code fits no policy plane (legality is not checked)."""
        index = _MOVE_INDEX_LISTS[self._board.turn][move & _MOVE_KEY_MASK]
        if index < 0:
            raise IllegalMoveError(f"move {move} has no policy index")
        return index

    def index_to_move(self, index: int) -> int:
        """The legal move with policy index ``index``.  Raises ``IllegalMoveError`` if none."""
        if not 0 <= index < POLICY_SIZE:
            raise IllegalMoveError(f"policy index {index} out of range")
        code = int(INDEX_MOVE[self._board.turn, index])
        if code >= 0:
            for move in self._board.legal_moves:
                if move & _MOVE_KEY_MASK == code:
                    return int(move)
        raise IllegalMoveError(f"no legal move has policy index {index}")

    # ---- notation ----------------------------------------------------------------------------
    def move_to_text(self, move: int) -> str:
        """USI notation: ``7g7f``, ``8h2b+``, ``P*5e``."""
        return str(cshogi.move_to_usi(move))

    def parse_move(self, text: str) -> int:
        """The legal move written ``text`` in USI.  Raises ``IllegalMoveError`` for malformed text,
        illegal moves and the non-moves ``0000``, ``resign``, ``win``."""
        if not isinstance(text, str):
            raise IllegalMoveError(f"not a USI move: {text!r}")
        m = _USI_BOARD_MOVE.fullmatch(text)
        if m is not None:
            code = parse_square(m.group(2)) | parse_square(m.group(1)) << 7
            if m.group(3):
                code |= _PROMOTION_FLAG
        else:
            m = _USI_DROP.fullmatch(text)
            if m is None:
                raise IllegalMoveError(f"not a USI move: {text!r}")
            code = parse_square(m.group(2)) | (NUM_SQUARES - 1 + DROP_PIECE_TYPES[m.group(1)]) << 7
        for move in self._board.legal_moves:
            if move & _MOVE_KEY_MASK == code:
                return int(move)
        raise IllegalMoveError(f"illegal move {text!r} in {self.to_text()}")

    def to_text(self) -> str:
        """SFEN ``board side hands movecount``."""
        return str(self._board.sfen())

    def __repr__(self) -> str:
        return f"ShogiState({self.to_text()!r})"


def _board_from_sfen(sfen: str) -> cshogi.Board:
    """A cshogi board at a normalised SFEN; rejects positions where the side not to move is in check."""
    try:
        board = cshogi.Board(sfen)
        fields = sfen.split(" ")
        fields[1] = "w" if fields[1] == "b" else "b"
        flipped = cshogi.Board(" ".join(fields))
    except (RuntimeError, ValueError, UnicodeError) as exc:
        raise InvalidPositionError(f"cshogi rejects SFEN {sfen!r}: {exc}") from exc
    if flipped.is_check():
        raise InvalidPositionError(f"the side not to move is in check: {sfen!r}")
    return board


class ShogiGame(Game):
    """Shogi with frozen :class:`ShogiRules`; makes :class:`ShogiState` objects."""

    info = SHOGI_INFO

    def __init__(self, rules: ShogiRules | None = None) -> None:
        self.rules = rules if rules is not None else ShogiRules()

    #: Shogi (about 60 moves a side): a horizon of 20..40 moves, policy temperature 3.0, uint8 planes,
    #: and the df-pn mate search asked for every root move's reply.
    profile = PlayProfile(
        noise_alpha=0.15,
        expected_moves=(20, 40),
        policy_temperature=3.0,
        uint8_planes=True,
        mate_threats=True,
    )
    bench_positions = (
        (None, ()),
        (None, ("7g7f", "3c3d", "2g2f", "8c8d", "2f2e", "8d8e", "6i7h", "4a3b")),
        ("lnsg1g1nl/2k2rs2/ppppp1bpp/5pp2/9/2P1P4/PP1P1PP1P/1BK2S1R1/LNSG1G1NL w P 20", ()),
    )

    def library_playout_rate(self, seconds: float) -> float | None:
        """cshogi alone: ``is_draw()`` (repetition), 512 moves."""
        return random_play_rate(
            cshogi.Board,
            lambda b: b.is_draw() != cshogi.NOT_REPETITION or b.move_number > 512,
            seconds,
        )

    def new_state(self) -> ShogiState:
        """The start position (each new state gets its own plane cache; copies share it)."""
        return ShogiState(self.rules)

    def state_from_text(self, text: str) -> ShogiState:
        """A state at an SFEN.  Raises ``InvalidPositionError`` for malformed or impossible SFEN."""
        return ShogiState(self.rules, sfen=text)

    def __repr__(self) -> str:
        return f"ShogiGame({self.rules!r})"


class Kernels(NamedTuple):
    """The compiled functions of :mod:`engine.games.shogi_kernel` (signatures there)."""

    encode_planes: Callable[[np.ndarray, np.ndarray, int, int, float, np.ndarray, np.ndarray], None]
    policy_indices: Callable[[np.ndarray, np.ndarray], np.ndarray]


@functools.cache
def _kernels() -> Kernels:
    """The compiled kernels, imported on first use (so importing the rules does not import numba);
    the numpy versions below when numba cannot be imported."""
    try:
        from engine.games.shogi_kernel import encode_planes, policy_indices
    except ImportError:
        return Kernels(encode_planes_numpy, policy_indices_numpy)
    return Kernels(encode_planes, policy_indices)


# ---- numpy versions of the kernels (no numba): the same arguments and results --------------------
#: ``_PLANE_OF_CODE[side, colour * 16 + piece type]``: our piece plane (0..27) of a board code.
_PLANE_OF_CODE = np.zeros((2, 32), dtype=np.int64)
#: ``_ORIENTED[side, square]``: :func:`square_to_pos` as a table.
_ORIENTED = np.array([[square_to_pos(sq, side) for sq in range(NUM_SQUARES)] for side in (0, 1)])
for _side in (0, 1):
    for _colour in (0, 1):
        for _plane, _piece in enumerate(PLANE_PIECE_TYPES):
            _PLANE_OF_CODE[_side, _colour * 16 + _piece] = _plane + (0 if _colour == _side else PIECE_PLANES)
del _side, _colour, _plane, _piece
#: Hand slot (``HAND_ORDER``) of each unpromoted cshogi piece type.
_HAND_SLOT = {pt: HAND_ORDER.index(letter) for letter, pt in DROP_PIECE_TYPES.items()}


def policy_indices_numpy(moves: np.ndarray, table: np.ndarray) -> np.ndarray:
    """int64 ``[L]``: ``table[move & 0x7fff]`` of each move (``shogi_kernel.policy_indices``)."""
    indices: np.ndarray = table[moves & _MOVE_KEY_MASK]
    return indices


def encode_planes_numpy(
    piece_planes: np.ndarray,
    history: np.ndarray,
    steps: int,
    side: int,
    move_count: float,
    hand_scale: np.ndarray,
    out: np.ndarray,
) -> None:
    """``shogi_kernel.encode_planes`` (arguments and layout there) with numpy: the history boards are
    rebuilt first (int64 ``[steps, 81]``, hands ``[steps, 2, 7]``), then all steps are written at once."""
    cs_planes = piece_planes[: 2 * PIECE_PLANES * NUM_SQUARES].reshape(2 * PIECE_PLANES, NUM_SQUARES)
    plane_index, squares = np.nonzero(cs_planes)
    cs_planes[plane_index, squares] = 0.0
    boards = np.zeros((steps, NUM_SQUARES), dtype=np.int64)
    boards[0, squares] = plane_index // PIECE_PLANES * 16 + plane_index % PIECE_PLANES + 1
    hands = np.empty((steps, 2, 7), dtype=np.int64)
    hands[0] = history[:14].reshape(2, 7)
    moves = history[14 + steps :]
    for t in range(1, steps):
        boards[t] = boards[t - 1]
        hands[t] = hands[t - 1]
        _undo_move(boards[t], hands[t], int(moves[t - 1]), side ^ (t & 1))
    planes = out.reshape(NUM_PLANES, NUM_SQUARES)
    hist = planes[: steps * STEP_PLANES].reshape(steps, STEP_PLANES, NUM_SQUARES)
    hist[:, :REPETITION_OFFSET] = 0.0
    step, square = np.nonzero(boards)
    hist[step, _PLANE_OF_CODE[side, boards[step, square]], _ORIENTED[side, square]] = 1.0
    reps = history[14 : 14 + steps]
    hist[:, REPETITION_OFFSET:HAND_OFFSET] = (reps[:, None] > np.arange(3)).astype(np.float32)[:, :, None]
    own, theirs = hands[:, side].astype(np.float32), hands[:, 1 - side].astype(np.float32)
    hist[:, HAND_OFFSET : HAND_OFFSET + 7] = (own * hand_scale)[:, :, None]
    hist[:, HAND_OFFSET + 7 :] = (theirs * hand_scale)[:, :, None]
    planes[steps * STEP_PLANES : COLOUR_PLANE] = 0.0
    planes[COLOUR_PLANE] = 1.0 if side else 0.0
    planes[MOVE_COUNT_PLANE] = move_count


def _undo_move(board: np.ndarray, hands: np.ndarray, move: int, mover: int) -> None:
    """Take ``move`` (made by ``mover``) back on ``board`` (int64 ``[81]`` codes) and ``hands``
    (int64 ``[2, 7]``), as ``shogi_kernel._undo_move``."""
    to, frm = move & 0x7F, (move >> 7) & 0x7F
    if frm >= NUM_SQUARES:  # a drop of piece type frm - 80
        board[to] = 0
        hands[mover, _HAND_SLOT[frm - NUM_SQUARES + 1]] += 1
        return
    captured = (move >> 20) & 15
    board[frm] = mover * 16 + ((move >> 16) & 15)
    board[to] = (1 - mover) * 16 + captured if captured else 0
    if captured:
        hands[mover, _HAND_SLOT[captured - 8 if captured > 8 else captured]] -= 1


def warm_up() -> None:
    """Load (or, with an empty cache, compile) the compiled kernels now: one encode and one move-index
    lookup of the start position."""
    ShogiState().legal_moves_and_indices()
    ShogiState().encode()


@functools.lru_cache(maxsize=4)
def _mate_solver(max_nodes: int) -> cshogi.DfPn:
    """One df-pn solver per node budget and process (its tables are reused between searches)."""
    return cshogi.DfPn(_MATE_MAX_DEPTH, max_nodes)


#: Longest mate (plies) the df-pn solver looks for.
_MATE_MAX_DEPTH = 31
