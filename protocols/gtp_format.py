"""GTP v2: the pure parse and format functions (no engine state), tested on their own; the handler is
:mod:`protocols.gtp`."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from engine.search.searcher import PVLine, SearchInfo

ENGINE_NAME = "Tabula"
PROTOCOL_VERSION = "2"
BLACK = 0
WHITE = 1
#: GTP column letters (no I), up to the largest board the rules support (19).
COLUMNS = "ABCDEFGHJKLMNOPQRST"
MIN_SIZE = 2
MAX_SIZE = 19
#: Default ``lz-analyze`` interval in centiseconds when none is given (or 0).
DEFAULT_ANALYZE_INTERVAL_CS = 100

_VERTEX_RE = re.compile(r"([a-hj-z])([0-9]{1,2})")
_CONTROL = {c: None for c in range(32) if c not in (9, 10)} | {127: None}


class GtpError(Exception):
    """A failure reply: ``? <message>``."""


# =====================================================================================================
# Pure parse / format functions
# =====================================================================================================


@dataclasses.dataclass(frozen=True)
class Command:
    """One parsed command line: optional numeric id, case-sensitive name, arguments."""

    id: int | None
    name: str
    args: tuple[str, ...]


def preprocess(line: str) -> str:
    """GTP 2.x preprocessing: drop control characters except HT/LF, cut the ``#`` comment, HT -> space,
    strip.  Returns ``""`` for a line to ignore."""
    line = line.translate(_CONTROL)
    hash_at = line.find("#")
    if hash_at >= 0:
        line = line[:hash_at]
    return line.replace("\t", " ").strip()


def parse_command(line: str) -> Command | None:
    """``[id] name args`` of a raw line, or ``None`` for a line to ignore (empty or comment only).
    A line that is only an id gives a command with an empty name."""
    words = preprocess(line).split()
    if not words:
        return None
    cid: int | None = None
    if words[0].isdigit():
        cid = int(words[0])
        words = words[1:]
    return Command(cid, words[0] if words else "", tuple(words[1:]))


def format_reply(cid: int | None, ok: bool, text: str = "") -> list[str]:
    """The lines of a reply: ``=[id] first line``, further lines, then the empty line that ends it.

    Empty lines inside ``text`` are dropped (a GTP reply may not contain one); an empty first line is
    kept so a board can start on the line after ``=``.
    """
    prefix = ("=" if ok else "?") + ("" if cid is None else str(cid))
    lines = text.replace("\r", "").split("\n")
    first = f"{prefix} {lines[0]}" if lines[0].strip() else prefix
    rest = [line.rstrip() for line in lines[1:] if line.strip()]
    return [first, *rest, ""]


def parse_colour(text: str) -> int:
    """``b``/``black``/``w``/``white`` (any case) -> 0 black, 1 white.  Raises ``GtpError``."""
    t = text.lower()
    if t in ("b", "black"):
        return BLACK
    if t in ("w", "white"):
        return WHITE
    raise GtpError("syntax error")


def colour_name(colour: int) -> str:
    return "black" if colour == BLACK else "white"


def parse_vertex(text: str, size: int) -> int:
    """A GTP vertex (``D4``, ``q16``, ``pass``) -> flat point ``row * N + col`` (row 0 = top), pass =
    ``N*N`` (the numbering of :mod:`engine.games.go`).

    Raises:
        GtpError: ``syntax error`` when ``text`` is not a vertex (column ``I``, garbage), ``illegal
        move`` when it is a vertex off this board.
    """
    t = text.lower()
    if t == "pass":
        return size * size
    m = _VERTEX_RE.fullmatch(t)
    if not m or int(m.group(2)) == 0:
        raise GtpError("syntax error")
    col = "abcdefghjklmnopqrstuvwxyz".index(m.group(1))
    row_from_bottom = int(m.group(2))
    if col >= size or row_from_bottom > size:
        raise GtpError("illegal move")
    return (size - row_from_bottom) * size + col


def format_vertex(point: int, size: int) -> str:
    """Flat point -> GTP vertex (``D4``) or ``pass``."""
    if point == size * size:
        return "pass"
    row, col = divmod(point, size)
    return f"{COLUMNS[col]}{size - row}"


def parse_int(text: str, message: str = "syntax error") -> int:
    try:
        return int(text)
    except ValueError:
        raise GtpError(message) from None


def parse_float(text: str, message: str = "syntax error") -> float:
    """A finite number (``6.5``, ``-3``, ``1e1``).  Raises ``GtpError``."""
    try:
        value = float(text)
    except ValueError:
        raise GtpError(message) from None
    if value != value or value in (float("inf"), float("-inf")):
        raise GtpError(message)
    return value


def format_score(black_minus_white: float) -> str:
    """``B+2.5``, ``W+31``, or ``0``."""
    s = black_minus_white
    if s == 0:
        return "0"
    text = f"{abs(s):.6f}".rstrip("0").rstrip(".")
    return f"{'B' if s > 0 else 'W'}+{text}"


def format_board(board: Any, size: int, to_move: int, komi: float) -> list[str]:
    """``showboard`` lines: column letters, rows N..1 with ``X`` black, ``O`` white, ``.`` empty, then a
    status line.  ``board`` is ``[row][col]`` with 0 empty, 1 black, 2 white (row 0 = top)."""
    symbols = {0: ".", 1: "X", 2: "O"}
    letters = "   " + " ".join(COLUMNS[:size])
    lines = [letters]
    for r in range(size):
        row = " ".join(symbols[int(board[r][c])] for c in range(size))
        lines.append(f"{size - r:2d} {row} {size - r}")
    lines.append(letters)
    lines.append(f"{colour_name(to_move)} to move, komi {komi:g}")
    return lines


def _reported_lines(info: SearchInfo, min_moves: int, max_moves: int | None) -> list[tuple[int, PVLine]]:
    """``(order, line)`` of the root moves to report, best first: every searched one, then unsearched
    ones until ``min_moves`` are listed, at most ``max_moves`` (``None``: no cap)."""
    chosen = [(order, line) for order, line in enumerate(info.lines) if line.visits > 0]
    if len(chosen) < min_moves:
        rest = [(order, line) for order, line in enumerate(info.lines) if line.visits <= 0]
        chosen += rest[: min_moves - len(chosen)]
    return chosen if max_moves is None else chosen[:max_moves]


def _pv_text(line: PVLine, size: int) -> str:
    return " ".join(format_vertex(int(m), size) for m in line.pv) or format_vertex(int(line.move), size)


def format_analysis(info: SearchInfo, size: int, min_moves: int = 0, max_moves: int | None = None) -> str:
    """One Leela Zero style analysis line (``lz-analyze``) for the searched root moves (``""`` before the
    first): ``info move D4 visits 12 winrate 5123 prior 1502 order 0 pv D4 Q16 info move ...``."""
    parts = []
    for order, line in _reported_lines(info, min_moves, max_moves):
        winrate = round((line.q + 1.0) * 5000.0)
        prior = round(line.prior * 10000.0)
        parts.append(
            f"info move {format_vertex(int(line.move), size)} visits {line.visits} "
            f"winrate {max(0, min(10000, winrate))} prior {prior} order {order} pv {_pv_text(line, size)}"
        )
    return " ".join(parts)


def format_kata_analysis(
    info: SearchInfo,
    size: int,
    ownership: npt.NDArray[np.float64] | None = None,
    min_moves: int = 0,
    max_moves: int | None = None,
) -> str:
    """One KataGo style analysis line (``kata-analyze``): ``info move D4 visits 12 utility 0.0246
    winrate 0.512300 prior 0.150200 order 0 pv D4 Q16 info move ... ownership 0.91 -0.33 ...`` (floats;
    ``utility`` the move's mean value in [-1, 1], ``winrate`` in [0, 1]; ``ownership``: ``N*N`` floats in
    [-1, 1] row by row from the top-left, +1 the analysed colour's, when given).  ``""`` before the first
    searched move."""
    parts = []
    for order, line in _reported_lines(info, min_moves, max_moves):
        winrate = max(0.0, min(1.0, (line.q + 1.0) / 2.0))
        parts.append(
            f"info move {format_vertex(int(line.move), size)} visits {line.visits} utility {line.q:.6f} "
            f"winrate {winrate:.6f} prior {line.prior:.6f} order {order} pv {_pv_text(line, size)}"
        )
    if not parts:
        return ""
    if ownership is not None:
        parts.append("ownership " + " ".join(f"{float(v):.6f}" for v in ownership))
    return " ".join(parts)


@dataclasses.dataclass(frozen=True)
class AnalyzeRequest:
    """Arguments of ``lz-analyze`` / ``kata-analyze``.

    Attributes:
        colour: the colour to analyse (``None``: the side to move).
        interval_s: seconds between lines.
        min_moves: list unsearched moves too until this many are listed (``minmoves``).
        max_moves: list at most this many moves (``maxmoves``; ``None``: all searched ones).
        ownership: append the predicted final owner of every point (``ownership true``, kata-analyze).
    """

    colour: int | None
    interval_s: float
    min_moves: int = 0
    max_moves: int | None = None
    ownership: bool = False


#: ``kata-analyze`` switches taken as ``KEY true|false`` and accepted without effect (what they add,
#: per-move ownership, ownership spread and visits along the PV, is not reported).
KATA_IGNORED_SWITCHES = frozenset(
    ("ownershipstdev", "movesownership", "movesownershipstdev", "pvvisits", "pvedgevisits", "rootinfo")
)


def parse_analyze_args(args: tuple[str, ...], kata: bool = False) -> AnalyzeRequest:
    """``lz-analyze [colour] [interval_cs] [interval N] [minmoves N] [maxmoves N]``; ``kata-analyze``
    (``kata``) also takes ``ownership true|false`` and the switches of :data:`KATA_IGNORED_SWITCHES`.

    A bare number is the interval in centiseconds; 0 or none means the default (1 s).  Raises
    ``GtpError("syntax error")`` for anything else (``avoid`` / ``allow`` included).
    """
    colour: int | None = None
    interval_cs = 0
    min_moves = 0
    max_moves: int | None = None
    show_ownership = False
    i = 0
    while i < len(args):
        word = args[i]
        low = word.lower()
        value = args[i + 1] if i + 1 < len(args) else ""
        if low in ("b", "w", "black", "white") and colour is None and i == 0:
            colour = parse_colour(word)
        elif word.isdigit():
            interval_cs = int(word)
        elif low in ("interval", "minmoves", "maxmoves") and value.isdigit():
            if low == "interval":
                interval_cs = int(value)
            elif low == "minmoves":
                min_moves = int(value)
            else:
                max_moves = int(value)
            i += 1
        elif (
            kata
            and (low == "ownership" or low in KATA_IGNORED_SWITCHES)
            and value.lower() in ("true", "false")
        ):
            if low == "ownership":
                show_ownership = value.lower() == "true"
            i += 1
        else:
            raise GtpError("syntax error")
        i += 1
    if interval_cs <= 0:
        interval_cs = DEFAULT_ANALYZE_INTERVAL_CS
    return AnalyzeRequest(colour, interval_cs / 100.0, min_moves, max_moves, show_ownership)


def free_handicap_points(count: int, size: int, fixed: Callable[[int], list[int]]) -> list[int]:
    """``count`` good handicap points: the fixed placement as far as it goes (``fixed(n)``, which
    raises ``ValueError`` beyond its range), then points spread out greedily (each next point the one
    farthest from those chosen, preferring the third and fourth lines)."""
    chosen: list[int] = []
    for n in range(min(count, 9), 1, -1):
        try:
            chosen = list(fixed(n))
            break
        except ValueError:
            continue
    line = 3 if size >= 13 else 2 if size >= 7 else max(0, (size - 1) // 2)

    def key(p: int) -> tuple[float, float]:
        r, c = divmod(p, size)
        spread = min((max(abs(r - q // size), abs(c - q % size)) for q in chosen), default=size)
        edge = min(r, c, size - 1 - r, size - 1 - c)
        return (spread - 0.5 * abs(edge - line), -p)

    free = [p for p in range(size * size) if p not in chosen]
    while len(chosen) < count and free:
        best = max(free, key=key)
        chosen.append(best)
        free.remove(best)
    return chosen[:count]


# =====================================================================================================
# Time keeping
# =====================================================================================================
