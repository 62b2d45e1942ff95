"""Go's settings, constants and coordinates: what the compiled rules (:mod:`engine.games.go_kernel`)
and the position object (:mod:`engine.games.go`) share.

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
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from typing import TypeAlias

import numpy as np

from engine.games.base import HISTORY_STEPS, IllegalMoveError

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
EDGE = 3  # off the board, in padded boards

SYMBOLS = {EMPTY: ".", BLACK: "X", WHITE: "O"}
SYMBOL_CODES = {".": EMPTY, "x": BLACK, "o": WHITE}
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
        object.__setattr__(self, "komi", check_komi(self.komi))
        if self.max_moves is not None:
            m = self.max_moves
            if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
                raise ValueError(f"max_moves must be a positive integer or None, got {m!r}")
            object.__setattr__(self, "max_moves", int(m))

    @property
    def move_limit(self) -> int:
        """The number of moves that ends the game (``max_moves`` or ``2 * N * N``)."""
        return 2 * self.board_size**2 if self.max_moves is None else self.max_moves


def check_komi(komi: float) -> float:
    try:
        value = float(komi)
    except (TypeError, ValueError):
        raise ValueError(f"komi must be a number, got {komi!r}") from None
    if not math.isfinite(value):
        raise ValueError(f"komi must be finite, got {komi!r}")
    return value


# ---- per-size vertex names ----------------------------------------------------------------------


@functools.cache
def _vertices(n: int) -> tuple[tuple[str, ...], dict[str, int]]:
    """The GTP vertex of every point of an ``n`` x ``n`` board and ``"pass"`` at ``N*N``, and the
    lower-case vertex -> point map (built once per size)."""
    names = tuple([f"{GTP_COLUMNS[p % n]}{n - p // n}" for p in range(n * n)] + ["pass"])
    return names, {v.lower(): p for p, v in enumerate(names)}


# ---- coordinates ---------------------------------------------------------------------------------


def vertex_to_point(text: str, board_size: int) -> Point:
    """GTP vertex (``"D4"``, ``"q16"``, ``"pass"``; case-insensitive, no ``I``) -> flat point.

    Raises:
        IllegalMoveError: garbage, the ``I`` column, or a vertex off the board.
    """
    if not 2 <= board_size <= MAX_BOARD_SIZE:
        raise ValueError(f"bad board size {board_size}")
    key = text.strip().lower() if isinstance(text, str) else ""
    point = _vertices(board_size)[1].get(key)
    if point is None:
        m = _VERTEX_RE.fullmatch(key)
        if key.startswith("i") or not m:
            raise IllegalMoveError(f"invalid vertex {text!r}")
        raise IllegalMoveError(f"vertex {text!r} is off the {board_size}x{board_size} board")
    return point


def point_to_vertex(point: Point, board_size: int) -> str:
    """Flat point -> GTP vertex (``"D4"``) or ``"pass"``.  Raises ``IllegalMoveError`` off the board."""
    vertices = _vertices(board_size)[0]
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


def format_score(x: float) -> str:
    s = f"{abs(x):.6f}".rstrip("0").rstrip(".")
    return s or "0"
