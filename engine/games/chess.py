"""Chess rules adapter: python-chess behind the :class:`~engine.games.base.Game` interface.

Coordinates and notation
========================

One table, as minigo's ``coords.py`` does it.  ``sq`` is python-chess's square number
``rank * 8 + file`` (a1 = 0, b1 = 1, ..., h1 = 7, a2 = 8, ..., h8 = 63).  ``o(sq)`` is the square in
*side-to-move orientation*: ``sq`` when white is to move, ``sq ^ 56`` (ranks mirrored: rank 1 <->
rank 8, files unchanged) when black is to move.

=====================  ======================================  =======================================
thing                  form                                    example (white to move / black to move)
=====================  ======================================  =======================================
notation (protocol)    UCI ``<from><to>[nbrq]``                ``e2e4``, ``e7e8q``, castling ``e1g1``
                                                               (standard) or ``e1h1`` (Chess960)
move (engine)          ``chess.Move(from_sq, to_sq, promo)``   ``Move(E2, E4)``; standard-mode castling
                                                               stays ``Move(E1, G1)`` as python-chess
                                                               generates it
oriented square        ``o(sq)``                               e2 -> 12 (white); e7 -> 12 (black)
policy index           ``plane * 64 + o(from_sq)``             e2e4 -> 1 * 64 + 12 = 76; after 1.e4 the
                                                               reply e7e5 has the same index 76
input plane cell       ``planes[c, row, col]`` with            white pawn e2, white to move:
                       ``row = o(sq) // 8``,                   ``planes[0, 1, 4]``; black to move it is a
                       ``col = o(sq) % 8 = file``              P2 pawn at ``planes[6, 6, 4]``
=====================  ======================================  =======================================

Orientation (flip) rule: everything the network sees is from the side to move's view.  When black is
to move the ranks are mirrored (``sq ^ 56``; files are *not* mirrored, so file a stays column 0 and
"east" is still towards file h) and "P1" (the player) means black, "P2" (the opponent) white.  One
rule for the input planes and the policy, for every history step (all eight steps are oriented to
the *current* side to move).

Input planes (Table S1), ``encode() -> float32 [119, 8, 8]``
-----------------------------------------------------------
History step ``t = 0..7`` (t = 0 the current position, t = 1 the position before the last move, ...;
steps before the state's first position are all zero) occupies planes ``14 t .. 14 t + 13``:

====  =====================================================================
+0    P1 pawns      +6   P2 pawns
+1    P1 knights    +7   P2 knights
+2    P1 bishops    +8   P2 bishops
+3    P1 rooks      +9   P2 rooks
+4    P1 queens     +10  P2 queens
+5    P1 king       +11  P2 king
+12   repetition: all ones if that step's position occurred >= 1 time before it (in this state's
      history)
+13   repetition: all ones if it occurred >= 2 times before
====  =====================================================================

Then 7 constant planes:

====  =====================================================================
112   colour: all ones when black is to move, zeros when white is
113   total move count: ``board.ply() / 100`` (game plies, counted from the FEN move number;
      0.0 at the start, 1.0 after 50 full moves)
114   P1 king-side (h-side) castling right, all ones if held
115   P1 queen-side (a-side) castling right
116   P2 king-side castling right
117   P2 queen-side castling right
118   no-progress count: ``halfmove_clock / 100`` (1.0 when the fifty-move rule draws)
====  =====================================================================

In Chess960 "king-side" means the castling rook is on a file higher than the king's (the h-side).

Policy (Table S2), ``8 x 8 x 73 = 4672``: ``index = plane * 64 + o(from_sq)``
-------------------------------------------------------------------------
Deltas below are in oriented coordinates (``dr`` = change of oriented rank, i.e. "forward" for the
side to move; ``df`` = change of file).

============  ==============================================================================
planes 0-55   queen moves: ``plane = d * 7 + (distance - 1)``, distance 1..7, direction
              ``d``: 0 N (dr+), 1 NE (dr+, df+), 2 E (df+), 3 SE (dr-, df+), 4 S (dr-),
              5 SW (dr-, df-), 6 W (df-), 7 NW (dr+, df-).  Queen promotions are plain queen
              moves (the N / NE / NW plane at distance 1).
planes 56-63  knight moves ``(df, dr)``: 56 (+1, +2), 57 (+2, +1), 58 (+2, -1), 59 (+1, -2),
              60 (-1, -2), 61 (-2, -1), 62 (-2, +1), 63 (-1, +2) (clockwise from "north-north-east")
planes 64-72  underpromotions: ``plane = 64 + 3 * direction + piece``, direction 0 = capture
              towards file a (df -1), 1 = straight (df 0), 2 = capture towards file h (df +1);
              piece 0 = knight, 1 = bishop, 2 = rook
============  ==============================================================================

Castling is encoded uniformly as *the king moving onto its own castling rook's square* (a queen
move along the back rank): standard ``e1g1`` has the index of ``e1h1`` (E, distance 3), ``e1c1``
that of ``e1a1`` (W, distance 4).  That is python-chess's internal (Chess960) form, so standard and
Chess960 castling share one representation.

Notation: :meth:`ChessState.move_to_text` writes UCI, castling ``e1g1`` in standard chess and
``e1h1`` (king takes rook) when ``ChessRules.chess960``; :meth:`ChessState.parse_move` reads both
castling forms in standard chess and is case-tolerant.  Positions are FEN (Chess960: X-FEN as
python-chess writes it, Shredder-FEN ``HAha`` read too).

Caching (see ``engine/games/base.py``): each position on the state's stack has a small record (its
transposition key, how often it occurred before, and lazily: its legal moves, their policy indices,
its outcome and its piece planes).  Piece planes are 12 uint64 bitboards in absolute orientation,
packed to 96 bytes once per position (record, and a bounded per-game dict keyed by the position key
so that re-pushed search paths reuse them); ``encode()`` joins eight of them, mirrors them for black
with one numpy fancy index and unpacks all bits with one ``np.unpackbits``.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Hashable, Sequence
from typing import Any, TypeAlias, cast

import chess
import numpy as np

from engine.games.base import (
    HISTORY_STEPS,
    NOT_COMPUTED,
    Game,
    GameInfo,
    GameState,
    IllegalMoveError,
    InvalidPositionError,
    NotComputed,
    Outcome,
    PlayProfile,
    random_play_rate,
    uncount,
)

#: Bumped whenever the input planes or the policy order change.
ENCODING_VERSION = 1

#: python-chess square number, ``rank * 8 + file`` (a1 = 0 ... h8 = 63).
Square: TypeAlias = int
#: A position key: python-chess's transposition key (the 8 piece and colour bitboards, side to move,
#: castling rights, the legal e.p. square or ``None``).
PositionKey: TypeAlias = tuple[Any, ...]

PLANES_PER_STEP = 14  # 6 + 6 pieces, 2 repetition planes
CONSTANT_PLANES = 7
NUM_PLANES = HISTORY_STEPS * PLANES_PER_STEP + CONSTANT_PLANES  # 119
NUM_POLICY_PLANES = 73
POLICY_SIZE = 64 * NUM_POLICY_PLANES  # 4672

MOVE_COUNT_SCALE = 100.0  # plane 113 = board.ply() / MOVE_COUNT_SCALE
NO_PROGRESS_SCALE = 100.0  # plane 118 = halfmove_clock / NO_PROGRESS_SCALE

#: Queen-move directions as (dr, df) in oriented coordinates, in policy order N, NE, E, SE, S, SW, W, NW.
QUEEN_DIRECTIONS: tuple[tuple[int, int], ...] = (
    (1, 0),
    (1, 1),
    (0, 1),
    (-1, 1),
    (-1, 0),
    (-1, -1),
    (0, -1),
    (1, -1),
)
#: Knight moves as (dr, df), in policy order (planes 56..63).
KNIGHT_MOVES: tuple[tuple[int, int], ...] = (
    (2, 1),
    (1, 2),
    (-1, 2),
    (-2, 1),
    (-2, -1),
    (-1, -2),
    (1, -2),
    (2, -1),
)
#: Underpromotion pieces in policy order (plane offset 0, 1, 2).
UNDERPROMOTIONS: tuple[int, ...] = (chess.KNIGHT, chess.BISHOP, chess.ROOK)

_NO_INDEX = -1


def _build_policy_tables() -> tuple[list[list[int]], list[list[int]]]:
    """Lookup tables of policy indices, indexed by absolute ``from_sq << 6 | to_sq``.

    Returns:
        ``(queen_knight, under_base)``: two lists (white to move, black to move) each, of 4096 ints.
        ``queen_knight[c][ft]`` is the index of a queen-like or knight move (``-1`` if none);
        ``under_base[c][ft]`` is the index of the knight underpromotion of a pawn move from the 7th
        to the 8th oriented rank (bishop ``+ 64``, rook ``+ 128``), ``-1`` elsewhere.
    """
    qk_planes: dict[tuple[int, int], int] = {}
    for d, (dr, df) in enumerate(QUEEN_DIRECTIONS):
        for dist in range(1, 8):
            qk_planes[(dr * dist, df * dist)] = d * 7 + dist - 1
    for k, (dr, df) in enumerate(KNIGHT_MOVES):
        qk_planes[(dr, df)] = 56 + k
    queen_knight: list[list[int]] = []
    under_base: list[list[int]] = []
    for flip in (0, 56):
        qk = [_NO_INDEX] * 4096
        ub = [_NO_INDEX] * 4096
        for frm in range(64):
            for to in range(64):
                of, ot = frm ^ flip, to ^ flip
                dr, df = (ot >> 3) - (of >> 3), (ot & 7) - (of & 7)
                plane = qk_planes.get((dr, df))
                if plane is not None:
                    qk[frm << 6 | to] = plane * 64 + of
                if of >> 3 == 6 and dr == 1 and -1 <= df <= 1:
                    ub[frm << 6 | to] = (64 + 3 * (df + 1)) * 64 + of
        queen_knight.append(qk)
        under_base.append(ub)
    return queen_knight, under_base


#: Policy-index tables ``[colour][from_sq << 6 | to_sq]`` (:func:`_build_policy_tables`); also the compiled
#: rules' (:mod:`engine.games.chess_kernel`).
QUEEN_KNIGHT_INDEX, UNDER_BASE_INDEX = _build_policy_tables()

#: Standard-chess castling (king two files) -> the king-takes-rook form, as ``from << 6 | to``.
_STANDARD_CASTLING: dict[int, int] = {
    chess.E1 << 6 | chess.G1: chess.E1 << 6 | chess.H1,
    chess.E1 << 6 | chess.C1: chess.E1 << 6 | chess.A1,
    chess.E8 << 6 | chess.G8: chess.E8 << 6 | chess.H8,
    chess.E8 << 6 | chess.C8: chess.E8 << 6 | chess.A8,
}

_PACK12 = struct.Struct("<12Q")
#: The two repetition planes of one step as bytes, by min(occurrences before, 2).
_REP_BYTES: tuple[bytes, ...] = (bytes(16), b"\xff" * 8 + bytes(8), b"\xff" * 16)
_STEP_BYTES = PLANES_PER_STEP * 8  # 112 bytes per history step
#: Plane permutation for black to move: P1 = black pieces (6..11), P2 = white (0..5), repetitions.
_BLACK_PERM = np.array([6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 12, 13], dtype=np.intp)

_CHECKMATE = Outcome(-1.0, "checkmate")
_STALEMATE = Outcome(0.0, "stalemate")
_INSUFFICIENT = Outcome(0.0, "insufficient-material")
_REPETITION = Outcome(0.0, "repetition")
_FIFTY = Outcome(0.0, "fifty-move")
_MAX_LENGTH = Outcome(0.0, "max-length")

#: Default bound of the per-game piece-plane cache (entries; ~250 bytes each).
FEATURE_CACHE_SIZE = 1 << 16


@dataclasses.dataclass(frozen=True)
class ChessRules:
    """Chess settings.

    Attributes:
        max_plies: a game whose state reaches this many plies (since the state's initial position) is
            a draw with reason ``max-length`` (self-play cap; the paper terminates long games).
        chess960: Chess960 (Fischer random) castling rules and notation (X-FEN / Shredder-FEN,
            UCI castling as king-takes-rook ``e1h1``).
    """

    max_plies: int = 512
    chess960: bool = False

    def __post_init__(self) -> None:
        if self.max_plies < 1:
            raise ValueError(f"max_plies must be positive, got {self.max_plies}")


def _piece_bytes(key: PositionKey) -> bytes:
    """The 12 piece bitboards of a position key, absolute orientation, packed little-endian.

    Returns:
        96 bytes: 12 uint64 (white P, N, B, R, Q, K, black P, N, B, R, Q, K); byte ``r`` of each
        bitboard is rank ``r + 1``, bit ``f`` of that byte is file ``f``.
    """
    p, n, b, r, q, k, w, bl = key[:8]
    return _PACK12.pack(
        p & w, n & w, b & w, r & w, q & w, k & w, p & bl, n & bl, b & bl, r & bl, q & bl, k & bl
    )


def _position_key(board: chess.Board) -> PositionKey:
    """python-chess's transposition key of ``board`` (typed there as a bare ``Hashable``)."""
    return cast(PositionKey, board._transposition_key())


class _Position:
    """What a state remembers about one position of its stack; filled lazily, shared by copies.

    Everything here depends only on the position and its place in the history (which copies share),
    never on what is pushed later, so records are shared, not copied, by :meth:`ChessState.copy`.
    """

    __slots__ = ("features", "index_map", "indices", "key", "moves", "outcome", "rep")

    def __init__(self, key: PositionKey, rep: int) -> None:
        self.key = key
        self.rep = rep  # occurrences of this position earlier in the history
        self.features: bytes | None = None  # 112 bytes: 12 piece bitboards + 2 repetition planes
        self.moves: list[chess.Move] | None = None
        self.indices: np.ndarray | None = None  # int64 [L], aligned with moves
        self.index_map: dict[int, chess.Move] | None = None
        self.outcome: Outcome | NotComputed | None = NOT_COMPUTED


class ChessState(GameState[chess.Move]):
    """A chess game in progress wrapping a ``chess.Board`` (mutable: ``push``/``pop``)."""

    info = GameInfo("chess", 8, NUM_PLANES, POLICY_SIZE, ENCODING_VERSION)

    __slots__ = ("_board", "_counts", "_feature_cache", "_feature_cache_size", "_stack", "rules")

    def __init__(
        self,
        board: chess.Board | None = None,
        rules: ChessRules | None = None,
        feature_cache: dict[PositionKey, bytes] | None = None,
        feature_cache_size: int = FEATURE_CACHE_SIZE,
    ) -> None:
        """A state starting from ``board`` (copied; its move stack, if any, is replayed as history).

        Args:
            board: the position (default: the standard start position).
            rules: settings (default ``ChessRules()``); ``board.chess960`` is set to match.
            feature_cache: a dict shared by the states of one game: position key -> 96 piece-plane bytes.
            feature_cache_size: bound of that dict; it is cleared when it grows past this.
        """
        self.rules = rules if rules is not None else ChessRules()
        source = board if board is not None else chess.Board(chess960=self.rules.chess960)
        root = source.root() if source.move_stack else source.copy(stack=False)
        root.chess960 = self.rules.chess960
        self._board = root
        self._stack: list[_Position] = [_Position(_position_key(root), 0)]
        self._counts: dict[PositionKey, int] = {self._stack[0].key: 1}
        self._feature_cache = feature_cache if feature_cache is not None else {}
        self._feature_cache_size = feature_cache_size
        for move in source.move_stack:
            self.push(move)

    # ---- rules -------------------------------------------------------------------------------
    @property
    def board(self) -> chess.Board:
        """The underlying ``chess.Board`` (read it, do not push or pop on it)."""
        return self._board

    def _moves(self) -> list[chess.Move]:
        """The cached legal-move list of the current position (do not mutate)."""
        rec = self._stack[-1]
        moves = rec.moves
        if moves is None:
            moves = rec.moves = list(self._board.generate_legal_moves())
        return moves

    def legal_moves(self) -> list[chess.Move]:
        """All legal moves, in python-chess's generation order (standard castling as ``e1g1``)."""
        return list(self._moves())

    def _indices(self) -> np.ndarray:
        """Policy indices of the cached legal moves: int64 ``[L]`` (cached, do not mutate)."""
        rec = self._stack[-1]
        indices = rec.indices
        if indices is None:
            moves = self._moves()
            board = self._board
            colour = 0 if board.turn else 1
            table = QUEEN_KNIGHT_INDEX[colour]
            under = UNDER_BASE_INDEX[colour]
            fix_castling = not self.rules.chess960 and board.castling_rights
            kings = board.kings
            out: list[int] = []
            append = out.append
            for m in moves:
                ft = m.from_square << 6 | m.to_square
                p = m.promotion
                if p is None or p == 5:  # not an underpromotion (5 = chess.QUEEN)
                    if fix_castling and ft in _STANDARD_CASTLING and kings >> m.from_square & 1:
                        ft = _STANDARD_CASTLING[ft]
                    append(table[ft])
                else:
                    append(under[ft] + (p - 2) * 64)  # knight 2, bishop 3, rook 4
            indices = rec.indices = np.array(out, dtype=np.int64)
        return indices

    def legal_moves_and_indices(self) -> tuple[list[chess.Move], np.ndarray]:
        """Legal moves and their policy indices, aligned: ``(moves, int64 [L])``, indices distinct."""
        return list(self._moves()), self._indices().copy()

    def push(self, move: chess.Move) -> None:
        """Play a legal move (not checked; either castling form is accepted in standard chess)."""
        board = self._board
        board.push(move)
        key = _position_key(board)
        counts = self._counts
        rep = counts.get(key, 0)
        counts[key] = rep + 1
        self._stack.append(_Position(key, rep))

    def pop(self) -> chess.Move:
        """Take back the last move and return it (as python-chess stores it).  ``IndexError`` at the start."""
        if len(self._stack) == 1:
            raise IndexError("pop from the state's initial position")
        uncount(self._counts, self._stack.pop().key)
        return self._board.pop()

    def outcome(self) -> Outcome | None:
        """Checkmate (-1), stalemate, insufficient material, threefold repetition, fifty moves
        (halfmove clock >= 100), ``max_plies`` (0), else ``None``; from the side to move; cached."""
        rec = self._stack[-1]
        result = rec.outcome
        if result is NOT_COMPUTED:
            board = self._board
            if not self._moves():
                result = _CHECKMATE if board.is_check() else _STALEMATE
            elif not (board.pawns or board.rooks or board.queens) and board.is_insufficient_material():
                result = _INSUFFICIENT
            elif rec.rep >= 2:  # this is its third occurrence
                result = _REPETITION
            elif board.halfmove_clock >= 100:
                result = _FIFTY
            elif len(self._stack) - 1 >= self.rules.max_plies:
                result = _MAX_LENGTH
            else:
                result = None
            rec.outcome = result
        return result

    def find_mate(self, max_nodes: int) -> tuple[chess.Move, int] | None:
        """A forced mate, ``(first move, plies)``: a mate in one (``plies`` 1), else a mate in two that
        starts with a check (3: every reply allows a mate in one), or ``None`` (also when ``max_nodes`` is
        0).  Mates in two are searched while at most ``max_nodes`` positions have been visited (about 0.5
        ms a position on average; every check and every reply is tried, so within the budget no
        checking mate in two is missed).  Only checking moves can mate: python-chess's ``gives_check``
        picks them before a push."""
        if max_nodes <= 0 or self.outcome() is not None:
            return None
        move = self._mate_in_one()
        if move is not None:
            return move, 1
        return self._mate_in_two(max_nodes)

    def mate_in_one(self) -> chess.Move | None:
        """The first move in python-chess's order that checkmates, or ``None`` (the search's
        ``SearchConfig.mate_check`` at every leaf: the compiled tree asks
        :func:`~engine.games.chess_kernel.mating_slot`; here python-chess's ``gives_check`` on every
        legal move, which only the tests' reference tree pays)."""
        return self._mate_in_one()

    def _mate_in_one(self) -> chess.Move | None:
        board = self._board
        for move in self._moves():
            if board.gives_check(move):
                board.push(move)
                mated = board.is_checkmate()
                board.pop()
                if mated:
                    return move
        return None

    def _mate_in_two(self, max_nodes: int) -> tuple[chess.Move, int] | None:
        """A check after which every reply allows a mate in one (the position has no mate in one)."""
        board = self._board
        nodes = 0
        for move in list(self._moves()):
            if nodes >= max_nodes:
                return None
            if not board.gives_check(move):
                continue
            self.push(move)
            nodes += 1
            forced = self.outcome() is None  # a check that ends the game (a draw) mates nothing
            if forced:
                for reply in list(self._moves()):
                    if nodes >= max_nodes:
                        forced = False
                        break
                    self.push(reply)
                    nodes += 1
                    forced = self.outcome() is None and self._mate_in_one() is not None
                    self.pop()
                    if not forced:
                        break
            self.pop()
            if forced:
                return move, 3
        return None

    @property
    def side_to_move(self) -> int:
        """0 white, 1 black."""
        return 0 if self._board.turn else 1

    @property
    def ply(self) -> int:
        """Moves played since the state's initial position."""
        return len(self._stack) - 1

    def key(self) -> Hashable:
        """python-chess's transposition key (pieces, side to move, castling rights, legal e.p. square)."""
        return self._stack[-1].key

    def history_keys(self) -> tuple[Hashable, ...]:
        """Keys of up to 7 previous positions, newest first."""
        stack = self._stack
        return tuple(stack[i].key for i in range(len(stack) - 2, max(-1, len(stack) - 1 - HISTORY_STEPS), -1))

    def repetition_count(self) -> int:
        """How many times the current position occurred earlier in this state's history."""
        return self._stack[-1].rep

    def eval_key(self) -> Hashable:
        """Everything ``encode()`` reads: the last 8 (key, repetitions), the game ply, the halfmove clock."""
        stack = self._stack
        steps = tuple(
            (stack[i].key, min(stack[i].rep, 2))
            for i in range(len(stack) - 1, max(-1, len(stack) - 1 - HISTORY_STEPS), -1)
        )
        return (steps, self._board.ply(), self._board.halfmove_clock)

    def copy(self) -> ChessState:
        """An independent state with the same history (position records and feature cache shared)."""
        new = ChessState.__new__(ChessState)
        new.rules = self.rules
        new._board = self._board.copy()
        new._stack = list(self._stack)
        new._counts = dict(self._counts)
        new._feature_cache = self._feature_cache
        new._feature_cache_size = self._feature_cache_size
        return new

    @property
    def move_stack(self) -> Sequence[chess.Move]:
        """Moves played since the state's initial position, oldest first (a copy)."""
        return list(self._board.move_stack)

    # ---- encodings ---------------------------------------------------------------------------
    def _features(self, rec: _Position) -> bytes:
        """112 bytes of one history step: 12 piece bitboards (absolute orientation) + 2 repetition planes."""
        feats = rec.features
        if feats is None:
            cache = self._feature_cache
            pieces = cache.get(rec.key)
            if pieces is None:
                pieces = _piece_bytes(rec.key)
                if len(cache) >= self._feature_cache_size:
                    cache.clear()
                cache[rec.key] = pieces
            feats = rec.features = pieces + _REP_BYTES[min(rec.rep, 2)]
        return feats

    def encode(self) -> np.ndarray:
        """Input planes (layout in the module docstring).

        Returns:
            float32 ``[119, 8, 8]``; ``[c, row, col]`` with row 0 = oriented rank 1, col 0 = file a.
        """
        stack = self._stack
        n = len(stack)
        steps = n if n < HISTORY_STEPS else HISTORY_STEPS
        parts = [self._features(stack[i]) for i in range(n - 1, n - 1 - steps, -1)]
        if steps < HISTORY_STEPS:
            parts.append(bytes(_STEP_BYTES * (HISTORY_STEPS - steps)))
        raw = np.frombuffer(b"".join(parts), dtype=np.uint8).reshape(HISTORY_STEPS, PLANES_PER_STEP, 8)
        board = self._board
        white = board.turn
        if not white:
            raw = raw[:, _BLACK_PERM, ::-1]  # P1 = black, ranks mirrored
        out = np.empty((NUM_PLANES, 8, 8), dtype=np.float32)
        out[: HISTORY_STEPS * PLANES_PER_STEP] = np.unpackbits(raw, axis=-1, bitorder="little").reshape(
            HISTORY_STEPS * PLANES_PER_STEP, 8, 8
        )
        rights = stack[-1].key[9]
        wk = bk = wq = bq = 0.0
        if rights:
            w_rights = rights & chess.BB_RANK_1
            if w_rights:
                ksq = (board.kings & board.occupied_co[chess.WHITE] & chess.BB_RANK_1).bit_length() - 1
                wk = 1.0 if w_rights >> (ksq + 1) else 0.0
                wq = 1.0 if w_rights & ((1 << ksq) - 1) else 0.0
            b_rights = rights & chess.BB_RANK_8
            if b_rights:
                ksq = (board.kings & board.occupied_co[chess.BLACK] & chess.BB_RANK_8).bit_length() - 1
                bk = 1.0 if b_rights >> (ksq + 1) else 0.0
                bq = 1.0 if b_rights & ((1 << ksq) - 1) else 0.0
        if white:
            constants = (
                0.0,
                board.ply() / MOVE_COUNT_SCALE,
                wk,
                wq,
                bk,
                bq,
                board.halfmove_clock / NO_PROGRESS_SCALE,
            )
        else:
            constants = (
                1.0,
                board.ply() / MOVE_COUNT_SCALE,
                bk,
                bq,
                wk,
                wq,
                board.halfmove_clock / NO_PROGRESS_SCALE,
            )
        out[HISTORY_STEPS * PLANES_PER_STEP :] = np.array(constants, dtype=np.float32)[:, None, None]
        return out

    def move_to_index(self, move: chess.Move) -> int:
        """Policy index of ``move`` from this position's side to move (geometry only, legality not
        checked; standard castling ``e1g1`` gets the index of ``e1h1``).  ``IllegalMoveError`` if the
        move has no index (null move, impossible geometry, underpromotion not from the 7th rank)."""
        board = self._board
        colour = 0 if board.turn else 1
        ft = move.from_square << 6 | move.to_square
        p = move.promotion
        if move.drop is not None:
            index = _NO_INDEX
        elif p is None or p == chess.QUEEN:
            if not self.rules.chess960 and ft in _STANDARD_CASTLING and board.kings >> move.from_square & 1:
                ft = _STANDARD_CASTLING[ft]
            index = QUEEN_KNIGHT_INDEX[colour][ft]
        elif p in UNDERPROMOTIONS:
            base = UNDER_BASE_INDEX[colour][ft]
            index = base + (p - chess.KNIGHT) * 64 if base >= 0 else _NO_INDEX
        else:
            index = _NO_INDEX
        if index < 0:
            raise IllegalMoveError(f"move {move.uci()} has no policy index")
        return index

    def index_to_move(self, index: int) -> chess.Move:
        """The legal move with policy ``index``; ``IllegalMoveError`` if no legal move has it."""
        rec = self._stack[-1]
        mapping = rec.index_map
        if mapping is None:
            mapping = rec.index_map = dict(zip(self._indices().tolist(), self._moves(), strict=True))
        move = mapping.get(index)
        if move is None:
            raise IllegalMoveError(f"no legal move has policy index {index!r} in {self._board.fen()}")
        return move

    # ---- notation ----------------------------------------------------------------------------
    def move_to_text(self, move: chess.Move) -> str:
        """UCI: ``e2e4``, ``e7e8q``; castling ``e1g1`` (standard) or ``e1h1`` (Chess960)."""
        return self._board.uci(move, chess960=self.rules.chess960)

    def parse_move(self, text: str) -> chess.Move:
        """The legal move written in UCI (either castling form in standard chess; any letter case).

        Raises:
            IllegalMoveError: malformed text, ``0000`` (null move) or a move not legal here.
        """
        if not isinstance(text, str):
            raise IllegalMoveError(f"not a move text: {text!r}")
        try:
            move = self._board.parse_uci(text.strip().lower())
        except ValueError as exc:
            raise IllegalMoveError(f"illegal or malformed move {text!r}: {exc}") from None
        if not move:
            raise IllegalMoveError(f"the null move {text!r} is not a legal move")
        return move

    def to_text(self) -> str:
        """FEN (X-FEN for Chess960, as python-chess writes it)."""
        return self._board.fen()

    def __repr__(self) -> str:
        return f"ChessState({self._board.fen()!r}, ply={self.ply})"


class ChessGame(Game):
    """Chess with its settings: makes :class:`ChessState`."""

    info = GameInfo("chess", 8, NUM_PLANES, POLICY_SIZE, ENCODING_VERSION)

    def __init__(self, rules: ChessRules | None = None) -> None:
        self.rules = rules if rules is not None else ChessRules()
        self._feature_cache: dict[PositionKey, bytes] = {}

    #: Chess (about 40 moves a side): a horizon of 15..30 moves (a longer one left much of the clock
    #: unused in short games, ``benchmarks/timecontrol.py``); policy temperature 2.2; the move played by
    #: its lower confidence bound among those with more than 10% of the most visited one's visits.
    profile = PlayProfile(
        noise_alpha=0.3,
        expected_moves=(15, 30),
        policy_temperature=2.2,
        book_and_tablebases=True,
        lcb_visit_share=0.10,
    )
    bench_positions = (
        (None, ()),
        ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", ()),
        ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", ()),
        (None, ("e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6")),
    )

    def library_playout_rate(self, seconds: float) -> float | None:
        """python-chess alone: its own ``is_game_over()`` (fivefold repetition, 75-move rule), 512 plies."""
        return random_play_rate(chess.Board, lambda b: b.is_game_over() or b.ply() >= 512, seconds)

    def new_state(self) -> ChessState:
        """The standard start position (Chess960 ``#518`` when ``rules.chess960``)."""
        return ChessState(chess.Board(chess960=self.rules.chess960), self.rules, self._feature_cache)

    def chess960_state(self, scharnagl: int) -> ChessState:
        """Chess960 start position number ``scharnagl`` (0..959).  Requires ``rules.chess960``."""
        if not self.rules.chess960:
            raise ValueError("chess960_state needs ChessRules(chess960=True)")
        if not 0 <= scharnagl < 960:
            raise ValueError(f"Chess960 position number out of range: {scharnagl}")
        return ChessState(chess.Board.from_chess960_pos(scharnagl), self.rules, self._feature_cache)

    def state_from_text(self, text: str) -> ChessState:
        """A position from FEN (Chess960 rules: X-FEN or Shredder-FEN).

        Raises:
            InvalidPositionError: malformed FEN or an impossible position (``chess.Board.status()``).
        """
        if not isinstance(text, str) or not text.strip():
            raise InvalidPositionError(f"empty or non-text FEN: {text!r}")
        try:
            board = chess.Board(text.strip(), chess960=self.rules.chess960)
        except ValueError as exc:
            raise InvalidPositionError(f"malformed FEN {text!r}: {exc}") from None
        status = board.status()
        if status != chess.STATUS_VALID:
            raise InvalidPositionError(f"invalid position {text!r}: {status!r}")
        return ChessState(board, self.rules, self._feature_cache)

    def __repr__(self) -> str:
        return f"ChessGame({self.rules!r})"
