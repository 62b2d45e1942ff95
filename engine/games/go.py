"""Go, rules written here (no Go library): any board size 2..19, suicide illegal, positional superko,
game end after two consecutive passes or at the move limit, Tromp-Taylor area scoring with komi.

Coordinates (one table for every system; ``N`` = board size; pass = ``N*N``)
=============================================================================

=====================  ==============  ==============================================================
system                 example (N=9)   definition
=====================  ==============  ==============================================================
flat point (the Move)  ``30``          ``p = row * N + col``; row 0 is the TOP row, col 0 is column A
pass (the Move)        ``81``          ``N * N``
policy index           ``30`` / ``81`` identical to the flat point; pass is the last index
plane cell             ``[:, 3, 3]``   ``planes[:, row, col]`` with ``row, col = divmod(p, N)``
GTP vertex             ``D6``          column letter ``A..T`` skipping ``I`` (col), number ``N - row``
                                       (row 1 is the bottom); ``pass``; case-insensitive
board_array() cell     ``[3, 3]``      int8 ``[N, N]`` indexed ``[row, col]``: 0 empty, 1 black, 2 white
position text row      row 4 of 9      text rows are written top (GTP row N) first
=====================  ==============  ==============================================================

Go planes are never flipped for the side to move (the board has no direction); only the stone
colours are made relative: "own" = the side to move, "opponent" = the other side.

Input planes (Table S1, AlphaGo Zero), float32 ``[17, N, N]``::

    planes[2*k]     stones of the side to move        k plies ago (k = 0 is the current position)
    planes[2*k + 1] stones of the opponent of the side to move, k plies ago        (k = 0..7)
    planes[16]      colour: all ones when black is to move, all zeros when white is

History steps before the first position of the game (or of the loaded position) are all zero.

Position text (``GoState.to_text()`` / ``GoGame.state_from_text()``), one line, four fields::

    "<N> <komi> <b|w> <row>/<row>/.../<row>"      e.g. "5 7.5 w ...../..X../..O../...../....."

rows top first, ``.`` empty, ``X`` black, ``O`` white (read case-insensitively; written upper-case);
``<b|w>`` is the side to move.  A loaded position is the root: no move history, no passes.

Implementation: mutable state with push/pop and an undo journal.  Groups are tracked incrementally
(a group object per string with its stone list, liberty set and Zobrist hash; a per-point reference
to the group; merge into the largest group on play, removal on capture), and the groups in atari
are kept in one set per colour.  Each position keeps a padded int8 board ``[(N+2)*(N+2)]`` (border 3)
that is never written after it is pushed, so history planes are free and undo just drops it.
Legal moves are computed with a few numpy operations over the padded board (an empty point is
legal when it has an empty or own neighbour; the points next to groups in atari are then fixed up
from the atari sets), superko is checked on vectorised candidate hashes, and the result is cached
per position.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections.abc import Hashable, Iterable, Sequence
from typing import TypeAlias

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
    uncount,
)
from engine.games.go_symmetry import (
    NUM_SYMMETRIES,
    inverse_symmetry,
    symmetry_indices,
    symmetry_permutations,
    symmetry_planes,
    symmetry_point,
    symmetry_policy,
)

__all__ = [
    "BLACK",
    "EMPTY",
    "ENCODING_VERSION",
    "GTP_COLUMNS",
    "MAX_BOARD_SIZE",
    "NUM_PLANES",
    "NUM_SYMMETRIES",
    "WHITE",
    "GoGame",
    "GoRules",
    "GoState",
    "Point",
    "fixed_handicap_points",
    "inverse_symmetry",
    "parse_colour",
    "point_to_vertex",
    "symmetry_indices",
    "symmetry_permutations",
    "symmetry_planes",
    "symmetry_point",
    "symmetry_policy",
    "vertex_to_point",
]

#: A flat board point ``row * N + col`` (row 0 = top), or ``N * N`` for pass.
Point: TypeAlias = int

#: Bumped whenever the input planes or the policy order change.
ENCODING_VERSION = 1
#: Largest supported board (GTP letters A..T without I).
MAX_BOARD_SIZE = 19
#: Input planes: 8 history steps x (own, opponent) + colour.
NUM_PLANES = 2 * HISTORY_STEPS + 1
#: GTP column letters (no I).
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRST"

# Board codes (board_array(), the padded boards).  Colour ``c`` has opponent ``3 - c``.
EMPTY = 0
BLACK = 1
WHITE = 2
_EDGE = 3

_SYMBOLS = {EMPTY: ".", BLACK: "X", WHITE: "O"}
_SYMBOL_CODES = {".": EMPTY, "x": BLACK, "o": WHITE}
_VERTEX_RE = re.compile(r"([a-hj-z])([1-9][0-9]?)")


# ---- settings ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GoRules:
    """Settings of a Go game.

    Attributes:
        board_size: N, 2..19.
        komi: points added to white's area (any finite number).
        max_moves: moves (passes included) after which the game ends and is scored like a
            two-pass end (reason ``"max-length"``); ``None`` means ``2 * N * N``.
    """

    board_size: int = 19
    komi: float = 7.5
    max_moves: int | None = None

    def __post_init__(self) -> None:
        n = self.board_size
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 2 <= n <= MAX_BOARD_SIZE:
            raise ValueError(f"Go board size must be an integer in 2..{MAX_BOARD_SIZE}, got {n!r}")
        object.__setattr__(self, "board_size", int(n))
        object.__setattr__(self, "komi", _check_komi(self.komi))
        if self.max_moves is not None:
            m = self.max_moves
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
                raise ValueError(f"max_moves must be a positive integer or None, got {m!r}")
            object.__setattr__(self, "max_moves", int(m))

    @property
    def move_limit(self) -> int:
        """The number of moves that ends the game (``max_moves`` or ``2 * N * N``)."""
        return 2 * self.board_size**2 if self.max_moves is None else self.max_moves


def _check_komi(komi: float) -> float:
    try:
        value = float(komi)
    except (TypeError, ValueError):
        raise ValueError(f"komi must be a number, got {komi!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"komi must be finite, got {komi!r}")
    return value


# ---- per-size tables -----------------------------------------------------------------------------


class _Tables:
    """Precomputed per-board-size tables (built once per size, on first use).

    Attributes:
        n, nn: board size and number of points.
        nbrs: ``nbrs[p]`` tuple of the on-board orthogonal neighbours of point ``p``.
        pad: ``pad[p]`` index of point ``p`` in the padded board ``[(N+2)*(N+2)]``.
        zob: ``zob[colour][p]`` Zobrist keys as Python ints (``zob[0]`` all zero).
        zob_np: uint64 ``[3, N*N]``, the same keys.
        vertices: ``vertices[p]`` GTP vertex of each point and ``"pass"`` at ``N*N``.
        vertex_index: lower-case vertex -> point (pass included).
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.nn = n * n
        nbrs = []
        for p in range(n * n):
            r, c = divmod(p, n)
            out = []
            if r > 0:
                out.append(p - n)
            if c > 0:
                out.append(p - 1)
            if c < n - 1:
                out.append(p + 1)
            if r < n - 1:
                out.append(p + n)
            nbrs.append(tuple(out))
        self.nbrs: tuple[tuple[int, ...], ...] = tuple(nbrs)
        self.pad: tuple[int, ...] = tuple((p // n + 1) * (n + 2) + p % n + 1 for p in range(n * n))
        rng = np.random.default_rng(0x5EED_6000 + n)
        z = rng.integers(1, np.iinfo(np.uint64).max, size=(3, n * n), dtype=np.uint64, endpoint=True)
        z[0] = 0
        z.flags.writeable = False
        self.zob_np: np.ndarray = z
        self.zob_rows: tuple[np.ndarray, ...] = (z[0], z[1], z[2])
        self.zob: tuple[tuple[int, ...], ...] = tuple(tuple(row.tolist()) for row in z)
        self.vertices: tuple[str, ...] = tuple(
            [f"{GTP_COLUMNS[p % n]}{n - p // n}" for p in range(n * n)] + ["pass"]
        )
        self.vertex_index: dict[str, int] = {v.lower(): p for p, v in enumerate(self.vertices)}
        self.pass_index = np.array([n * n], dtype=np.int64)


@functools.cache
def _tables(n: int) -> _Tables:
    return _Tables(n)


# ---- coordinates ---------------------------------------------------------------------------------


def vertex_to_point(text: str, board_size: int) -> Point:
    """GTP vertex (``"D4"``, ``"q16"``, ``"pass"``; case-insensitive, no ``I``) -> flat point.

    Raises:
        IllegalMoveError: garbage, the ``I`` column, or a vertex off the board.
    """
    if not 2 <= board_size <= MAX_BOARD_SIZE:
        raise ValueError(f"bad board size {board_size}")
    key = text.strip().lower() if isinstance(text, str) else ""
    point = _tables(board_size).vertex_index.get(key)
    if point is None:
        m = _VERTEX_RE.fullmatch(key)
        if key.startswith("i") or not m:
            raise IllegalMoveError(f"invalid vertex {text!r}")
        raise IllegalMoveError(f"vertex {text!r} is off the {board_size}x{board_size} board")
    return point


def point_to_vertex(point: Point, board_size: int) -> str:
    """Flat point -> GTP vertex (``"D4"``) or ``"pass"``.  Raises ``IllegalMoveError`` off the board."""
    vertices = _tables(board_size).vertices
    if isinstance(point, bool) or not isinstance(point, (int, np.integer)) or not 0 <= point < len(vertices):
        raise IllegalMoveError(f"point {point!r} is not on the {board_size}x{board_size} board")
    return vertices[point]


def parse_colour(text: str) -> int:
    """GTP colour (``b``, ``black``, ``w``, ``white``; case-insensitive) -> 0 black, 1 white."""
    t = text.strip().lower() if isinstance(text, str) else ""
    if t in ("b", "black"):
        return 0
    if t in ("w", "white"):
        return 1
    raise ValueError(f"invalid colour {text!r}")


def fixed_handicap_points(count: int, board_size: int) -> list[Point]:
    """The GTP v2 fixed handicap placement (section 4.1.1) of ``count`` stones.

    Defined for boards 7x7 and larger: corner stones on the 3-3 points below 13x13 and on the 4-4
    points from 13x13; odd boards from 9x9 also have side and centre points (up to 9 stones), even
    boards and 7x7 at most 4.  For 19x19: 2 ``D4 Q16``, 3 ``+D16``, 4 ``+Q4``, 5 ``+K10``,
    6 ``D4 Q16 D16 Q4 D10 Q10``, 7 ``+K10``, 8 ``six + K4 K16``, 9 ``+K10``.

    Raises:
        ValueError: board smaller than 7x7 or ``count`` outside ``2..max``.
    """
    n = board_size
    if n < 7:
        raise ValueError(f"no fixed handicap on a {n}x{n} board")
    largest = 4 if n % 2 == 0 or n == 7 else 9
    if not 2 <= count <= largest:
        raise ValueError(f"fixed handicap must be 2..{largest} on {n}x{n}, got {count}")
    e = 3 if n >= 13 else 2  # 0-based distance of the corner points from the edge
    f = n - 1 - e
    mid = n // 2

    def at(x: int, y: int) -> Point:  # x = column from the left, y = row from the bottom
        return (n - 1 - y) * n + x

    corners = [at(e, e), at(f, f), at(e, f), at(f, e)]
    sides = [at(e, mid), at(f, mid)]
    top_bottom = [at(mid, e), at(mid, f)]
    centre = [at(mid, mid)]
    if count <= 4:
        return corners[:count]
    if count == 5:
        return corners + centre
    if count == 6:
        return corners + sides
    if count == 7:
        return corners + sides + centre
    if count == 8:
        return corners + sides + top_bottom
    return corners + sides + top_bottom + centre


def _format_score(x: float) -> str:
    s = f"{abs(x):.6f}".rstrip("0").rstrip(".")
    return s or "0"


# ---- the state -----------------------------------------------------------------------------------


class _Group:
    """One string of stones: colour code, stones (list, merge order), liberties (set), Zobrist xor."""

    __slots__ = ("color", "hash", "libs", "stones")

    def __init__(self, color: int, stones: list[int], libs: set[int], h: int) -> None:
        self.color = color
        self.stones = stones
        self.libs = libs
        self.hash = h


def _group_size(g: _Group) -> int:
    return len(g.stones)


def _largest_first(own: list[_Group]) -> Sequence[_Group]:
    """Sort ``own`` (neighbour groups of one colour) largest first, in place; return the rest after the first."""
    if len(own) == 1:
        return ()
    own.sort(key=_group_size, reverse=True)
    return own[1:]


# The undo records are slotted, not frozen, dataclasses: a frozen one sets each field through
# object.__setattr__ and a NamedTuple's __new__ measured slower still; one is built on every push.


@dataclasses.dataclass(slots=True)
class _PassUndo:
    """How to take back a pass: nothing on the board changed."""

    colour: int  # colour code that passed


@dataclasses.dataclass(slots=True)
class _StoneUndo:
    """How to take back a stone: every group the move changed and how (read by :meth:`GoState.pop`).

    Groups removed from the board (captured or absorbed) keep their stone lists, so taking back only
    points the board at them again.
    """

    colour: int  # colour code that played
    group: _Group  # the group holding the new stone: a new one, or the largest own neighbour grown
    size_before: int  # stones of ``group`` before the move (its list only grew); 0: a new group
    libs_before: set[int]  # its liberty set before the move (the move gives it a new set)
    hash_before: int  # its Zobrist xor before the move (both unused for a new group)
    absorbed: Sequence[_Group]  # the other own neighbour groups, merged into ``group``
    opponents: list[_Group]  # the opponent neighbour groups (each lost the liberty at the stone)
    captured: list[_Group]  # the opponent groups taken off the board
    gained: list[tuple[_Group, int]]  # (group, point): liberties gained from captured stones
    captured_stones: int  # stones in ``captured``


class _LegalMoves:
    """The legal moves of one position for its side to move (computed once, cached per position).

    Attributes:
        moves: the legal moves ascending, pass (``N*N``) last.
        points: int64 ``[L-1]``, the board moves (``moves`` without pass).
    """

    __slots__ = ("_indices", "_move_set", "moves", "points")

    def __init__(self, moves: list[int], points: np.ndarray) -> None:
        self.moves = moves
        self.points = points
        self._indices: np.ndarray | None = None
        self._move_set: set[int] | None = None

    def indices(self, pass_index: np.ndarray) -> np.ndarray:
        """int64 ``[L]`` (read-only): ``points`` then ``pass_index`` (int64 ``[1]``); cached."""
        idx = self._indices
        if idx is None:
            idx = self._indices = np.concatenate((self.points, pass_index))
            idx.setflags(write=False)
        return idx

    def move_set(self) -> set[int]:
        """The moves as a set (cached)."""
        moves = self._move_set
        if moves is None:
            moves = self._move_set = set(self.moves)
        return moves


class GoState(GameState[int]):
    """A Go game in progress (see the module docstring for coordinates, planes and text).

    Moves are ints: the flat point, pass = ``N*N``.  ``push`` does not check legality (use
    ``legal_moves``, ``parse_move`` or ``play_as``); pushing an illegal move corrupts the state.

    Attributes:
        rules: the :class:`GoRules`.
        info: the :class:`GameInfo` (``planes == 17``, ``policy_size == N*N + 1``).
        komi: points added to white; settable at any time (it only affects scoring).
    """

    def __init__(self, rules: GoRules | None = None, komi: float | None = None) -> None:
        self.rules = rules if rules is not None else GoRules()
        n = self.rules.board_size
        self.info = GameInfo("go", n, NUM_PLANES, n * n + 1, ENCODING_VERSION)
        self._komi = self.rules.komi if komi is None else _check_komi(komi)
        self._init_tables()
        self._reset_root([EMPTY] * (n * n), BLACK)

    # ---- construction helpers ------------------------------------------------------------------
    def _init_tables(self) -> None:
        n = self.rules.board_size
        self._n = n
        self._nn = n * n
        self._t = _tables(n)
        self._limit = self.rules.move_limit
        # scratch buffers for legal-move generation (per state: copies never share them)
        self._sbuf = np.zeros((n + 2) * (n + 2), dtype=bool)
        s2 = self._sbuf.reshape(n + 2, n + 2)
        self._s_views = (s2[:-2, 1:-1], s2[2:, 1:-1], s2[1:-1, :-2], s2[1:-1, 2:])
        self._ibuf = np.zeros((n + 2) * (n + 2), dtype=np.int8)
        self._m = np.zeros((n, n), dtype=bool)
        self._mflat = self._m.reshape(-1)
        self._e = np.zeros((n, n), dtype=bool)

    def _reset_root(self, codes: list[int], to_play: int) -> None:
        """Make ``codes`` (flat board of colour codes) with ``to_play`` the root position.

        Raises:
            InvalidPositionError: a string without liberties.
        """
        n, nn, t = self._n, self._nn, self._t
        color = list(codes)
        grp: list[_Group | None] = [None] * nn
        atari: list[set[_Group]] = [set(), set(), set()]
        h = 0
        for p in range(nn):
            c = color[p]
            if c == EMPTY or grp[p] is not None:
                continue
            g = _Group(c, [], set(), 0)
            stack = [p]
            grp[p] = g
            while stack:
                q = stack.pop()
                g.stones.append(q)
                g.hash ^= t.zob[c][q]
                for r in t.nbrs[q]:
                    cr = color[r]
                    if cr == EMPTY:
                        g.libs.add(r)
                    elif cr == c and grp[r] is None:
                        grp[r] = g
                        stack.append(r)
            if not g.libs:
                raise InvalidPositionError(f"the string at {t.vertices[p]} has no liberties")
            if len(g.libs) == 1:
                atari[c].add(g)
            h ^= g.hash
        board = np.full((n + 2) * (n + 2), _EDGE, dtype=np.int8)
        board.reshape(n + 2, n + 2)[1:-1, 1:-1] = np.array(color, dtype=np.int8).reshape(n, n)
        board.flags.writeable = False
        self._color = color
        self._grp = grp
        self._atari = atari
        self._root = (tuple(color), to_play)
        # per-position stacks (index = ply)
        self._boards: list[np.ndarray] = [board]
        self._hashes: list[int] = [h]
        self._to_play: list[int] = [to_play]
        self._passes: list[int] = [0]
        self._legal_cache: list[_LegalMoves | None] = [None]
        self._outcome_cache: list[Outcome | NotComputed | None] = [NOT_COMPUTED]
        # per-move stacks
        self._moves: list[int] = []
        self._undo: list[_PassUndo | _StoneUndo] = []
        # superko: board hashes of every position of the line (counted), stones ever captured per colour
        self._seen: dict[int, int] = {h: 1}
        self._caps = [0, 0, 0]

    @classmethod
    def from_text(cls, text: str, rules: GoRules | None = None) -> GoState:
        """Read a position written by :meth:`to_text` (format in the module docstring).

        Args:
            text: the position string.
            rules: the game's rules; the board size must match (default: the size in the text).

        Raises:
            InvalidPositionError: malformed text, wrong size, a string without liberties.
        """
        if not isinstance(text, str):
            raise InvalidPositionError("a Go position must be a string")
        fields = text.split()
        if len(fields) != 4:
            raise InvalidPositionError(f"expected '<N> <komi> <b|w> <rows>', got {text!r}")
        size_s, komi_s, side_s, rows_s = fields
        try:
            n = int(size_s)
            komi = _check_komi(float(komi_s))
        except ValueError as exc:
            raise InvalidPositionError(f"bad size or komi in {text!r}: {exc}") from None
        if not 2 <= n <= MAX_BOARD_SIZE:
            raise InvalidPositionError(f"board size {n} not in 2..{MAX_BOARD_SIZE}")
        if rules is None:
            rules = GoRules(board_size=n, komi=komi)
        elif rules.board_size != n:
            size = rules.board_size
            raise InvalidPositionError(f"position is {n}x{n} but the game is {size}x{size}")
        side = side_s.lower()
        if side not in ("b", "w"):
            raise InvalidPositionError(f"side to move must be b or w, got {side_s!r}")
        rows = rows_s.split("/")
        if len(rows) != n or any(len(r) != n for r in rows):
            raise InvalidPositionError(f"expected {n} rows of {n} points, got {rows_s!r}")
        try:
            codes = [_SYMBOL_CODES[ch] for ch in rows_s.lower().replace("/", "")]
        except KeyError as exc:
            raise InvalidPositionError(f"bad point symbol {exc.args[0]!r} (use . X O)") from None
        state = cls(rules, komi=komi)
        state._reset_root(codes, BLACK if side == "b" else WHITE)
        return state

    def copy(self) -> GoState:
        """An independent copy with the same history (rebuilt by replaying the moves from the root)."""
        new = GoState.__new__(GoState)
        new.rules = self.rules
        new.info = self.info
        new._komi = self._komi
        new._init_tables()
        new._reset_root(list(self._root[0]), self._root[1])
        for undo, move in zip(self._undo, self._moves, strict=True):
            new._apply(undo.colour, move)
        new._legal_cache = list(self._legal_cache)
        new._outcome_cache = list(self._outcome_cache)
        return new

    # ---- simple properties -----------------------------------------------------------------------
    @property
    def board_size(self) -> int:
        return self._n

    @property
    def komi(self) -> float:
        return self._komi

    @komi.setter
    def komi(self, value: float) -> None:
        self._komi = _check_komi(value)
        self._outcome_cache = [NOT_COMPUTED] * len(self._outcome_cache)

    @property
    def side_to_move(self) -> int:
        """0 black, 1 white."""
        return self._to_play[-1] - 1

    @property
    def ply(self) -> int:
        return len(self._moves)

    @property
    def move_stack(self) -> Sequence[int]:
        return list(self._moves)

    @property
    def consecutive_passes(self) -> int:
        """Passes played in a row up to this position (2 ends the game)."""
        return self._passes[-1]

    def key(self) -> Hashable:
        """``(board Zobrist hash, side to move)``."""
        return (self._hashes[-1], self._to_play[-1] - 1)

    def history_keys(self) -> tuple[Hashable, ...]:
        hs, tp = self._hashes, self._to_play
        last = len(hs) - 1
        return tuple((hs[i], tp[i] - 1) for i in range(last - 1, max(last - HISTORY_STEPS, -1), -1))

    def board_hash(self) -> int:
        """Zobrist hash of the stones only (the superko key)."""
        return self._hashes[-1]

    def board_array(self) -> np.ndarray:
        """int8 ``[N, N]`` copy of the board indexed ``[row, col]`` (row 0 top): 0 empty, 1 black, 2 white."""
        n = self._n
        return self._boards[-1].reshape(n + 2, n + 2)[1:-1, 1:-1].copy()

    # ---- playing -----------------------------------------------------------------------------------
    def push(self, move: int) -> None:
        """Play ``move`` (flat point or pass ``N*N``) for the side to move; legality is not checked."""
        self._apply(self._to_play[-1], move)

    def play_as(self, colour: int, move: int, superko: bool = True) -> None:
        """GTP ``play``: play ``move`` for ``colour`` (0 black, 1 white) whoever is to move.

        The other colour is to move afterwards; ``pop`` takes it back like any move.  ``superko=False``
        accepts a move that repeats an earlier position (an opponent under other rules, a referee's
        board that allows it: GNU Go, GoGui); the game goes on from it, and the repeated position counts
        as seen once more for the moves after it.

        Raises:
            IllegalMoveError: bad colour, off-board, occupied, suicide, or (``superko``) superko.
        """
        if not self.is_legal_for(colour, move, superko):
            who = "black" if colour == 0 else "white"
            raise IllegalMoveError(f"illegal move {self._move_name(move)} for {who}")
        self._apply(colour + 1, int(move))

    def _move_name(self, move: object) -> str:
        if isinstance(move, (int, np.integer)) and 0 <= move <= self._nn:
            return self._t.vertices[int(move)]
        return repr(move)

    def _apply(self, c: int, p: int) -> None:
        """Play point ``p`` (or pass) for colour code ``c`` and push the new position."""
        self._moves.append(p)
        if p == self._nn:
            self._undo.append(_PassUndo(c))
            self._push_position(self._boards[-1], self._hashes[-1], 3 - c, self._passes[-1] + 1)
            return
        t = self._t
        # place the stone: in a new group, or in the largest own neighbour group with the others merged in
        own, opponents, empties = self._neighbour_groups(c, p)
        self._color[p] = c
        if own:
            absorbed = _largest_first(own)
            group = own[0]
            size_before, libs_before, hash_before = len(group.stones), group.libs, group.hash
            self._merge_into(group, absorbed, p, empties)
        else:
            group = _Group(c, [p], set(empties), t.zob[c][p])
            self._grp[p] = group
            absorbed, size_before, libs_before, hash_before = (), 0, group.libs, 0
        board = self._boards[-1].copy()
        board[t.pad[p]] = c
        # capture: opponent neighbours lose the liberty at p; those left without come off the board
        captured, captured_hash = self._take_liberty(3 - c, p, opponents, board)
        gained: list[tuple[_Group, int]] = []
        captured_stones = 0
        if captured:
            gained, captured_stones = self._free_captured_points(c, captured)
        self._update_own_atari(c, group, absorbed)
        # the new position, its hash counted for superko, and the record that takes it back
        h = self._hashes[-1] ^ t.zob[c][p] ^ captured_hash
        board.setflags(write=False)  # half the cost of `flags.writeable = False` (once per push)
        self._push_position(board, h, 3 - c, 0)
        seen = self._seen
        seen[h] = seen.get(h, 0) + 1
        undo = _StoneUndo(
            c,
            group,
            size_before,
            libs_before,
            hash_before,
            absorbed,
            opponents,
            captured,
            gained,
            captured_stones,
        )
        self._undo.append(undo)

    def _push_position(self, board: np.ndarray, h: int, to_play: int, passes: int) -> None:
        """Push a position's entries onto the per-position stacks (its caches empty)."""
        self._boards.append(board)
        self._hashes.append(h)
        self._to_play.append(to_play)
        self._passes.append(passes)
        self._legal_cache.append(None)
        self._outcome_cache.append(NOT_COMPUTED)

    def _neighbour_groups(self, c: int, p: int) -> tuple[list[_Group], list[_Group], list[int]]:
        """``(own groups, opponent groups, empty points)`` next to point ``p`` for colour code ``c``."""
        grp = self._grp
        empties = []
        own: list[_Group] = []
        opponents: list[_Group] = []
        for q in self._t.nbrs[p]:
            g = grp[q]
            if g is None:
                empties.append(q)
            elif g.color == c:
                if g not in own:
                    own.append(g)
            elif g not in opponents:
                opponents.append(g)
        return own, opponents, empties

    def _merge_into(self, group: _Group, absorbed: Sequence[_Group], p: int, empties: list[int]) -> None:
        """Add the stone at ``p`` (its empty neighbours ``empties``) and the ``absorbed`` groups to ``group``.

        ``group`` gets a new liberty set (the old one is kept by the undo record) and keeps its stone list,
        extended: the new stone, then the absorbed groups' stones (which keep their own lists).
        """
        grp = self._grp
        libs = set(group.libs)
        libs.update(empties)
        stones = group.stones
        stones.append(p)
        h = group.hash ^ self._t.zob[group.color][p]
        for g in absorbed:
            libs |= g.libs
            stones.extend(g.stones)
            h ^= g.hash
            for s in g.stones:
                grp[s] = group
        libs.discard(p)
        group.libs = libs
        group.hash = h
        grp[p] = group

    def _take_liberty(
        self, o: int, p: int, opponents: list[_Group], board: np.ndarray
    ) -> tuple[list[_Group], int]:
        """Remove liberty ``p`` from the ``opponents`` (colour code ``o``); take off those left without.

        Returns:
            ``(captured groups, xor of their hashes)``; their points are emptied on ``board`` too.
        """
        color = self._color
        grp = self._grp
        pad = self._t.pad
        at_o = self._atari[o]
        captured = []
        h = 0
        for g in opponents:
            libs = g.libs
            libs.discard(p)
            if not libs:
                captured.append(g)
                at_o.discard(g)
                h ^= g.hash
                for s in g.stones:
                    color[s] = EMPTY
                    grp[s] = None
                    board[pad[s]] = EMPTY
            elif len(libs) == 1:
                at_o.add(g)
        return captured, h

    def _free_captured_points(self, c: int, captured: list[_Group]) -> tuple[list[tuple[_Group, int]], int]:
        """Give the points of the ``captured`` groups back as liberties to the groups around them.

        Returns:
            ``(gained, stones)``: the ``(group, point)`` liberties added, the number of stones captured.
        """
        nbrs = self._t.nbrs
        grp = self._grp
        gained = []
        stones = 0
        for g in captured:
            stones += len(g.stones)
            for s in g.stones:
                for q in nbrs[s]:
                    gq = grp[q]
                    if gq is not None and s not in gq.libs:
                        gq.libs.add(s)
                        gained.append((gq, s))
        at_c = self._atari[c]
        for gq, _ in gained:
            at_c.discard(gq)  # it gained a liberty next to a capture: >= 2 now (the new group re-checked)
        self._caps[3 - c] += stones
        return gained, stones

    def _update_own_atari(self, c: int, group: _Group, absorbed: Sequence[_Group]) -> None:
        """The atari set of colour code ``c`` after ``group`` took in the new stone and ``absorbed``."""
        at_c = self._atari[c]
        for g in absorbed:
            at_c.discard(g)
        if len(group.libs) == 1:
            at_c.add(group)
        else:
            at_c.discard(group)

    def pop(self) -> int:
        """Take back the last move (or ``play_as``) and return it.  ``IndexError`` at the root."""
        if not self._moves:
            raise IndexError("pop from the initial position")
        p = self._moves.pop()
        undo = self._undo.pop()
        self._boards.pop()
        h = self._hashes.pop()
        self._to_play.pop()
        self._passes.pop()
        self._legal_cache.pop()
        self._outcome_cache.pop()
        if isinstance(undo, _PassUndo):
            return p
        uncount(self._seen, h)
        self._take_back_stone(p, undo)
        return p

    def _take_back_stone(self, p: int, undo: _StoneUndo) -> None:
        """Put the groups and atari sets back as they were before the stone at ``p`` (``undo``'s move)."""
        c = undo.colour
        group = undo.group
        size_before = undo.size_before
        absorbed = undo.absorbed
        opponents = undo.opponents
        gained = undo.gained
        o = 3 - c
        color = self._color
        grp = self._grp
        # the groups: liberties given back by the captures, the captured stones, the merge, the point
        for gq, s in gained:
            gq.libs.discard(s)
        for g in undo.captured:
            for s in g.stones:
                color[s] = o
                grp[s] = g
        for g in opponents:
            g.libs.add(p)
        if size_before:
            del group.stones[size_before:]
            group.libs = undo.libs_before
            group.hash = undo.hash_before
            for g in absorbed:
                for s in g.stones:
                    grp[s] = g
        color[p] = EMPTY
        grp[p] = None
        if undo.captured_stones:
            self._caps[o] -= undo.captured_stones
        # the atari sets of both colours
        at_c = self._atari[c]
        at_o = self._atari[o]
        at_c.discard(group)
        for g in opponents:
            if len(g.libs) == 1:
                at_o.add(g)
            else:
                at_o.discard(g)
        grown = (group,) if size_before else ()
        for group_list in (grown, absorbed, [gq for gq, _ in gained]):
            for g in group_list:
                if grp[g.stones[0]] is g and len(g.libs) == 1:
                    at_c.add(g)
                else:
                    at_c.discard(g)

    # ---- legal moves -------------------------------------------------------------------------------
    def _compute_legal(self, c: int) -> _LegalMoves:
        """Legal moves for colour code ``c`` in the current position."""
        self._mark_open_points(c)
        capture_hash = self._mark_atari_liberties(c)
        points = self._mflat.nonzero()[0]
        moves = points.tolist()
        if self._caps[c] and moves:
            # Positional superko.  A repeated board needs a stone of colour c to have been captured
            # earlier in the line (the new stone's point was emptied by a capture), hence the guard.
            bad = self._superko_points(c, moves, points, capture_hash)
            if bad:
                moves = [q for q in moves if q not in bad]
                points = np.array(moves, dtype=np.int64)
        moves.append(self._nn)
        return _LegalMoves(moves, points)

    def _mark_open_points(self, c: int) -> None:
        """Fill the scratch mask ``self._m`` (bool ``[N, N]``, flat view ``self._mflat``) with the empty
        points that have an empty or own (colour code ``c``) neighbour.

        Exact except next to groups in atari (see :meth:`_mark_atari_liberties`).
        """
        n = self._n
        board = self._boards[-1]
        sb = self._sbuf
        # sb: points that are empty or own (off-board excluded)
        if c == BLACK:
            np.less(board, 2, out=sb)
        else:
            np.bitwise_and(board, 1, out=self._ibuf)
            np.logical_not(self._ibuf, out=sb)
        up, down, left, right = self._s_views
        m = self._m
        np.logical_or(up, down, out=m)
        np.logical_or(m, left, out=m)
        np.logical_or(m, right, out=m)
        np.equal(board.reshape(n + 2, n + 2)[1:-1, 1:-1], EMPTY, out=self._e)
        np.logical_and(m, self._e, out=m)

    def _mark_atari_liberties(self, c: int) -> dict[int, int]:
        """Fix up the open-point mask next to groups in atari, for colour code ``c``.

        The lone liberty of an opponent group in atari is legal (a capture); the lone liberty of an
        own group in atari needs an empty neighbour or another own group with >= 2 liberties.

        Returns:
            capture point -> xor of the hashes of the opponent groups that a stone there captures.
        """
        at_o = self._atari[3 - c]
        at_c = self._atari[c]
        capture_hash: dict[int, int] = {}
        if not (at_o or at_c):
            return capture_hash
        mflat = self._mflat
        for g in at_o:
            for q in g.libs:
                capture_hash[q] = capture_hash.get(q, 0) ^ g.hash
                mflat[q] = True
        for g in at_c:
            for q in g.libs:
                if q not in capture_hash:
                    mflat[q] = self._escapes_atari(c, q)
        return capture_hash

    def _escapes_atari(self, c: int, q: int) -> bool:
        """Whether a stone of colour code ``c`` at ``q`` (an own group's last liberty, no capture) lives."""
        color = self._color
        grp = self._grp
        for r in self._t.nbrs[q]:
            cr = color[r]
            if cr == EMPTY:
                return True
            if cr == c:
                g = grp[r]
                if g is not None and len(g.libs) > 1:
                    return True
        return False

    def _superko_points(
        self, c: int, moves: list[int], points: np.ndarray, capture_hash: dict[int, int]
    ) -> set[int]:
        """The ``moves`` (``points`` as int64 ``[L]``) of colour code ``c`` that repeat an earlier board."""
        h = self._hashes[-1]
        seen = self._seen
        zc = self._t.zob[c]
        bad = set()
        for q, gx in capture_hash.items():
            if h ^ zc[q] ^ gx in seen:
                bad.add(q)
        cand = (self._t.zob_rows[c][points] ^ np.uint64(h)).tolist()
        if not seen.keys().isdisjoint(cand):
            for q, x in zip(moves, cand, strict=True):
                if x in seen and q not in capture_hash:
                    bad.add(q)
        return bad

    def _legal_entry(self) -> _LegalMoves:
        entry = self._legal_cache[-1]
        if entry is None:
            entry = self._compute_legal(self._to_play[-1])
            self._legal_cache[-1] = entry
        return entry

    def legal_moves(self) -> list[int]:
        """Legal moves of the side to move, ascending points then pass; empty once the game is over."""
        if self.outcome() is not None:
            return []
        return list(self._legal_entry().moves)

    def legal_moves_and_indices(self) -> tuple[list[int], np.ndarray]:
        """``(moves, indices)``; indices int64 ``[L]`` (read-only) equal the moves.  Empty when over."""
        if self.outcome() is not None:
            return [], np.zeros(0, dtype=np.int64)
        entry = self._legal_entry()
        return list(entry.moves), entry.indices(self._t.pass_index)

    def _legal_set(self) -> set[int]:
        return self._legal_entry().move_set()

    def is_legal(self, move: int) -> bool:
        """Whether ``move`` is legal for the side to move by the rules (ignores whether the game is over)."""
        return move in self._legal_set()

    def is_legal_for(self, colour: int, move: int, superko: bool = True) -> bool:
        """Whether ``colour`` (0 black, 1 white) may play ``move`` now, whoever is to move; with
        ``superko=False``, also a move whose only fault is repeating an earlier position."""
        if colour not in (0, 1) or isinstance(move, bool) or not isinstance(move, (int, np.integer)):
            return False
        if not 0 <= move <= self._nn:
            return False
        if move == self._nn:
            return True
        if not superko:
            return self._basic_legal(colour + 1, int(move))
        if colour + 1 == self._to_play[-1]:
            return int(move) in self._legal_set()
        return int(move) in self._compute_legal(colour + 1).moves

    def _basic_legal(self, c: int, p: int) -> bool:
        """Whether colour code ``c`` may play point ``p`` by the basic rules that GNU Go and GoGui's board
        keep: empty, not suicide, and no immediate ko retake (the board before the last move again);
        a longer repetition (positional superko) is allowed."""
        self._mark_open_points(c)
        capture_hash = self._mark_atari_liberties(c)
        if not self._mflat[p]:
            return False
        hashes = self._hashes
        after = hashes[-1] ^ int(self._t.zob[c][p]) ^ capture_hash.get(p, 0)
        return len(hashes) < 2 or after != hashes[-2]

    # ---- end of game -------------------------------------------------------------------------------
    def outcome(self) -> Outcome | None:
        """Two passes in a row or the move limit: Tromp-Taylor result from the side to move."""
        cache = self._outcome_cache
        out = cache[-1]
        if out is NOT_COMPUTED:
            if self._passes[-1] >= 2:
                out = self._scored("two-passes")
            elif len(self._moves) >= self._limit:
                out = self._scored("max-length")
            else:
                out = None
            cache[-1] = out
        return out

    def _scored(self, reason: str) -> Outcome:
        s = self.score()
        if self._to_play[-1] == WHITE:
            s = -s
        s += 0.0  # no -0.0
        return Outcome(1.0 if s > 0 else -1.0 if s < 0 else 0.0, reason, s)

    def area(self) -> tuple[int, int]:
        """Tromp-Taylor areas ``(black, white)``: stones plus empty regions reaching only that colour."""
        owners = self.point_owners()
        return int((owners == 1).sum()), int((owners == -1).sum())

    def point_owners(self, removed: Iterable[int] = ()) -> np.ndarray:
        """int8 ``[N*N]``: the Tromp-Taylor owner of every point, 1 black (its stone, or an empty region
        reaching only black stones), -1 white, 0 neither.  Stones at the ``removed`` points (dead stones)
        count as empty, so their region goes to whoever surrounds it."""
        color = list(self._color)
        for p in removed:
            color[p] = EMPTY
        nbrs = self._t.nbrs
        owners = np.zeros(self._nn, dtype=np.int8)
        visited = bytearray(self._nn)
        for p in range(self._nn):
            if color[p] != EMPTY:
                owners[p] = 1 if color[p] == BLACK else -1
                continue
            if visited[p]:
                continue
            visited[p] = 1
            stack = [p]
            region = []
            reach = 0
            while stack:
                q = stack.pop()
                region.append(q)
                for r in nbrs[q]:
                    cr = color[r]
                    if cr == EMPTY:
                        if not visited[r]:
                            visited[r] = 1
                            stack.append(r)
                    else:
                        reach |= cr
            if reach in (BLACK, WHITE):
                owners[region] = 1 if reach == BLACK else -1
        return owners

    def is_own_eye(self, point: int, colour: int) -> bool:
        """True when ``point`` is empty and every neighbour on the board is a stone of ``colour`` (0
        black, 1 white): the one-point eye shape that random play must not fill."""
        color = self._color
        code = BLACK if colour == 0 else WHITE
        return color[point] == EMPTY and all(color[r] == code for r in self._t.nbrs[point])

    def true_eyes(self, colour: int) -> np.ndarray:
        """bool ``[N*N]``: the points that are true single-point eyes of ``colour`` (0 black, 1 white).

        A true eye is an empty point whose on-board neighbours are all stones of ``colour`` and that
        is not a false eye: of its diagonal points the opponent holds none when the point is on the
        edge or in a corner, at most one in the middle of the board (the rule Monte-Carlo Go programs'
        playouts use: filling such a point only takes a liberty, usually an eye, from one's own
        stones).
        """
        n = self._n
        padded = self._boards[-1].reshape(n + 2, n + 2)
        own = BLACK if colour == 0 else WHITE
        other = 3 - own
        inner = padded[1:-1, 1:-1]
        up, down = padded[:-2, 1:-1], padded[2:, 1:-1]
        left, right = padded[1:-1, :-2], padded[1:-1, 2:]
        surrounded = inner == EMPTY
        for side in (up, down, left, right):
            surrounded &= (side == own) | (side == _EDGE)
        corners = (padded[:-2, :-2], padded[:-2, 2:], padded[2:, :-2], padded[2:, 2:])
        hostile = sum((c == other).astype(np.int8) for c in corners)
        on_edge = sum((c == _EDGE).astype(np.int8) for c in corners) > 0
        allowed = np.where(on_edge, 0, 1)
        eyes: np.ndarray = (surrounded & (hostile <= allowed)).reshape(-1)
        return eyes

    def without_eye_fills(self, moves: Iterable[int]) -> list[int]:
        """``moves`` (of the side to move) less those into its own true eyes (:meth:`true_eyes`); pass
        and every other move kept, in order."""
        eyes = self.true_eyes(self.side_to_move)
        nn = self._nn
        return [m for m in moves if m == nn or not eyes[m]]

    def chains(self) -> list[tuple[int, list[int]]]:
        """Every chain of stones on the board: ``(colour, sorted points)`` with colour 0 black, 1 white."""
        groups = {id(g): g for g in self._grp if g is not None}
        return [(0 if g.color == BLACK else 1, sorted(g.stones)) for g in groups.values()]

    def score(self) -> float:
        """Tromp-Taylor score, black minus white, komi included (positive: black leads)."""
        black, white = self.area()
        return float(black - white) - self._komi

    def result_string(self) -> str:
        """GTP ``final_score`` form of :meth:`score`: ``B+3.5``, ``W+0.5`` or ``0``."""
        s = self.score()
        if s > 0:
            return f"B+{_format_score(s)}"
        if s < 0:
            return f"W+{_format_score(s)}"
        return "0"

    # ---- encodings ---------------------------------------------------------------------------------
    def encode(self) -> np.ndarray:
        """float32 ``[17, N, N]``: (own, opponent) stones for the current and 7 previous positions, then
        the colour plane (ones when black is to move).  See the module docstring."""
        n = self._n
        out = np.zeros((NUM_PLANES, n, n), dtype=np.float32)
        boards = self._boards
        k = min(HISTORY_STEPS, len(boards))
        hist = np.stack(boards[: -k - 1 : -1]).reshape(k, n + 2, n + 2)[:, 1:-1, 1:-1]
        c = self._to_play[-1]
        out[0 : 2 * k : 2] = hist == c
        out[1 : 2 * k : 2] = hist == 3 - c
        if c == BLACK:
            out[2 * HISTORY_STEPS] = 1.0
        return out

    def move_to_index(self, move: int) -> int:
        """Policy index of ``move`` (the flat point; pass = ``N*N``)."""
        if isinstance(move, bool) or not isinstance(move, (int, np.integer)) or not 0 <= move <= self._nn:
            raise IllegalMoveError(f"not a Go move: {move!r}")
        return int(move)

    def index_to_move(self, index: int) -> int:
        """The legal move at policy ``index``.  Raises ``IllegalMoveError`` if it is not legal."""
        if (
            isinstance(index, (int, np.integer))
            and not isinstance(index, bool)
            and int(index) in self._legal_set()
        ):
            return int(index)
        raise IllegalMoveError(f"policy index {index!r} is not a legal move")

    # ---- notation ----------------------------------------------------------------------------------
    def vertex_to_point(self, text: str) -> int:
        """GTP vertex -> flat point (``pass`` -> ``N*N``).  ``IllegalMoveError`` on bad or off-board ones."""
        return vertex_to_point(text, self._n)

    def point_to_vertex(self, point: int) -> str:
        """Flat point -> GTP vertex (``D4``) or ``pass``."""
        return point_to_vertex(point, self._n)

    def move_to_text(self, move: int) -> str:
        """GTP vertex of a move (``D4``, ``pass``)."""
        return point_to_vertex(move, self._n)

    def parse_move(self, text: str) -> int:
        """The legal move (side to move) written as a GTP vertex.  Raises ``IllegalMoveError``."""
        p = vertex_to_point(text, self._n)
        if p not in self._legal_set():
            raise IllegalMoveError(f"illegal move {text!r}")
        return p

    def to_text(self) -> str:
        """``"<N> <komi> <b|w> <rows>"`` (see the module docstring); read back by ``from_text``."""
        n = self._n
        color = self._color
        rows = "/".join("".join(_SYMBOLS[color[r * n + c]] for c in range(n)) for r in range(n))
        side = "b" if self._to_play[-1] == BLACK else "w"
        return f"{n} {self._komi!r} {side} {rows}"

    def __str__(self) -> str:
        """A board diagram with GTP coordinates (for logs and ``showboard``)."""
        n = self._n
        color = self._color
        letters = "   " + " ".join(GTP_COLUMNS[:n])
        lines = [letters]
        for r in range(n):
            row = " ".join(_SYMBOLS[color[r * n + c]] for c in range(n))
            lines.append(f"{n - r:2d} {row} {n - r:2d}")
        lines.append(letters)
        return "\n".join(lines)

    # ---- GTP setup ---------------------------------------------------------------------------------
    def fixed_handicap_points(self, count: int) -> list[int]:
        """GTP fixed handicap points for this board (see :func:`fixed_handicap_points`)."""
        return fixed_handicap_points(count, self._n)

    def place_handicap(self, points: Iterable[int]) -> None:
        """Put black stones on ``points`` of the empty initial board; white is to move after.

        The handicap position becomes the root (GTP: handicap stones are not moves, so ``pop``
        cannot take them back).

        Raises:
            IllegalMoveError: moves already played, stones on the board, repeated, pass or off-board
                points, or fewer than 1 / more than ``N*N - 1`` stones.
        """
        pts = [int(p) for p in points]
        if self._moves or any(self._color):
            raise IllegalMoveError("handicap stones need an empty board")
        if not 1 <= len(pts) <= self._nn - 1 or len(set(pts)) != len(pts):
            raise IllegalMoveError(f"bad handicap point list {pts}")
        if any(not 0 <= p < self._nn for p in pts):
            raise IllegalMoveError(f"handicap points must be on the board: {pts}")
        codes = [EMPTY] * self._nn
        for p in pts:
            codes[p] = BLACK
        self._reset_root(codes, WHITE)


class GoGame(Game):
    """Go with the given :class:`GoRules`; makes :class:`GoState` positions."""

    def __init__(self, rules: GoRules | None = None) -> None:
        self.rules = rules if rules is not None else GoRules()
        n = self.rules.board_size
        self.info = GameInfo("go", n, NUM_PLANES, n * n + 1, ENCODING_VERSION)

    def new_state(self) -> GoState:
        """The empty board, black to move."""
        return GoState(self.rules)

    def state_from_text(self, text: str) -> GoState:
        """A position written by ``GoState.to_text()``.  Raises ``InvalidPositionError``."""
        return GoState.from_text(text, self.rules)
