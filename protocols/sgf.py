"""A small SGF (FF[4], Go) reader for GTP ``loadsgf``: the main line of the first game tree.

Only what setting up a Go position needs is read:

=========  ===============================================================================
property   meaning
=========  ===============================================================================
``SZ``     board size (``19`` or ``19:19``; rectangular boards are refused)
``KM``     komi
``HA``     number of handicap stones (informational; the stones themselves come in ``AB``)
``AB/AW``  setup stones (point lists, compressed ``aa:cc`` rectangles included) before the first move
``AE``     ignored in the root (nothing to clear there); refused after the first move
``B/W``    moves; ``[]`` is a pass, and so is ``[tt]`` on boards up to 19x19
``PL``     the player to move after the setup
=========  ===============================================================================

Coordinates: an SGF point is two letters ``xy``, ``a`` = 0, ``x`` the column from the left and ``y``
the row **from the top** (so ``aa`` is the upper left corner, GTP ``A19`` on 19x19).  Points are
returned as :data:`Point` ``(x, y)`` in that system; :func:`point_to_vertex` turns one into a GTP vertex.

Variations are skipped: at every branch the first variation is followed (the main line).  The reader
imports nothing from the engine, so it is easy to test alone.
"""

from __future__ import annotations

import dataclasses
from typing import TypeAlias

#: An SGF point: ``(x, y)``, column from the left and row from the top, 0-based.
Point: TypeAlias = tuple[int, int]

BLACK = 0
WHITE = 1
GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # no I
MAX_SIZE = 25


class SgfError(ValueError):
    """An SGF text that cannot be read (or describes something this reader does not support)."""


@dataclasses.dataclass
class SgfGame:
    """The main line of one Go game record.

    Attributes:
        size: board size N (default 19).
        komi: ``KM`` or ``None`` when absent.
        handicap: ``HA`` (0 when absent).
        black_setup / white_setup: ``AB`` / ``AW`` stones placed before the first move.
        moves: ``(colour, point or None for a pass)`` in order; colour 0 black, 1 white.
        player_to_move: ``PL`` (0/1) or ``None``.
    """

    size: int = 19
    komi: float | None = None
    handicap: int = 0
    black_setup: list[Point] = dataclasses.field(default_factory=list)
    white_setup: list[Point] = dataclasses.field(default_factory=list)
    moves: list[tuple[int, Point | None]] = dataclasses.field(default_factory=list)
    player_to_move: int | None = None


Node: TypeAlias = dict[str, list[str]]


# ---- tokenising ------------------------------------------------------------------------------------
def parse_main_line(text: str) -> list[Node]:
    """The nodes of the main line of the first game tree: ``[{"B": ["dd"]}, ...]``.

    The first game tree is parsed whole (recursive descent over ``( ; PROP[value] ... )``); the main
    line is its node sequence followed, at every branch, by the first variation.

    Raises:
        SgfError: no game tree, unbalanced brackets, unterminated value, a node outside a tree.
    """
    start = text.find("(")
    if start < 0:
        raise SgfError("no game tree: '(' missing")
    nodes, _ = _parse_tree(text, start + 1, main=True)
    if not nodes:
        raise SgfError("empty game tree")
    return nodes


def _parse_tree(text: str, pos: int, main: bool) -> tuple[list[Node], int]:
    """Parse a game tree whose ``(`` was just read.  Returns its main-line nodes (only collected when
    ``main``) and the position after its ``)``."""
    nodes: list[Node] = []
    current: Node | None = None
    prop: str | None = None
    took_variation = False
    n = len(text)
    while pos < n:
        c = text[pos]
        if c == "[":
            if prop is None:
                raise SgfError(f"property value without a property name at offset {pos}")
            value, pos = _read_value(text, pos + 1)
            if current is not None:
                current.setdefault(prop, []).append(value)
            continue
        if c == ";":
            if took_variation:
                raise SgfError(f"node after a variation at offset {pos}")
            current = {} if main else None
            if current is not None:
                nodes.append(current)
            prop = None
        elif c == "(":
            child, pos = _parse_tree(text, pos + 1, main and not took_variation)
            nodes += child
            took_variation = True
            prop = None
            continue
        elif c == ")":
            return nodes, pos + 1
        elif c.isalpha():
            end = pos
            while end < n and text[end].isalpha():
                end += 1
            if main and current is None:
                raise SgfError(f"property outside a node at offset {pos}")
            prop = "".join(ch for ch in text[pos:end] if ch.isupper()) or None  # FF[3] "AddBlack" -> "AB"
            pos = end
            continue
        elif not c.isspace():
            raise SgfError(f"unexpected character {c!r} at offset {pos}")
        pos += 1
    raise SgfError("unbalanced parentheses: the game tree is not closed")


def _read_value(text: str, pos: int) -> tuple[str, int]:
    """A property value starting after ``[``; returns the unescaped value and the position after ``]``."""
    out: list[str] = []
    n = len(text)
    while pos < n:
        c = text[pos]
        if c == "\\":
            if pos + 1 < n and text[pos + 1] != "\n":
                out.append(text[pos + 1])
            pos += 2
            continue
        if c == "]":
            return "".join(out), pos + 1
        out.append(c)
        pos += 1
    raise SgfError("unterminated property value: ']' missing")


# ---- interpreting ------------------------------------------------------------------------------------
def parse_point(value: str, size: int) -> Point | None:
    """An SGF point ``xy`` (``None`` for a pass: ``""``, or ``tt`` up to 19x19).  Raises ``SgfError``."""
    value = value.strip()
    if value == "" or (value == "tt" and size <= 19):
        return None
    if len(value) != 2 or not value.isalpha() or not value.islower():
        raise SgfError(f"bad point {value!r}")
    x, y = ord(value[0]) - ord("a"), ord(value[1]) - ord("a")
    if not (0 <= x < size and 0 <= y < size):
        raise SgfError(f"point {value!r} is off the {size}x{size} board")
    return x, y


def parse_point_list(values: list[str], size: int) -> list[Point]:
    """Points of ``AB``/``AW`` values, compressed rectangles ``aa:cc`` expanded."""
    points: list[Point] = []
    for value in values:
        if ":" in value:
            a, b = value.split(":", 1)
            p, q = parse_point(a, size), parse_point(b, size)
            if p is None or q is None:
                raise SgfError(f"bad point rectangle {value!r}")
            for x in range(min(p[0], q[0]), max(p[0], q[0]) + 1):
                for y in range(min(p[1], q[1]), max(p[1], q[1]) + 1):
                    points.append((x, y))
        else:
            point = parse_point(value, size)
            if point is None:
                raise SgfError("a pass cannot be a setup stone")
            points.append(point)
    return points


def _parse_size(values: list[str]) -> int:
    text = values[0].strip()
    if ":" in text:
        w, h = text.split(":", 1)
        if w.strip() != h.strip():
            raise SgfError(f"rectangular board {text!r} is not supported")
        text = w
    try:
        size = int(text)
    except ValueError:
        raise SgfError(f"bad board size {values[0]!r}") from None
    if not 1 <= size <= MAX_SIZE:
        raise SgfError(f"board size {size} out of range 1..{MAX_SIZE}")
    return size


def _parse_colour(value: str) -> int:
    v = value.strip().upper()
    if v in ("B", "BLACK"):
        return BLACK
    if v in ("W", "WHITE"):
        return WHITE
    raise SgfError(f"bad colour {value!r}")


def read_game(text: str) -> SgfGame:
    """The Go game of an SGF text (main line).  Raises :class:`SgfError`."""
    nodes = parse_main_line(text)
    root = nodes[0]
    game_type = root.get("GM", ["1"])[0].strip()
    if game_type not in ("", "1"):
        raise SgfError(f"not a Go record (GM[{game_type}])")
    game = SgfGame()
    if "SZ" in root:
        game.size = _parse_size(root["SZ"])
    for node in nodes:
        _apply_node(game, node)
    return game


def _apply_node(game: SgfGame, node: Node) -> None:
    size = game.size
    if "KM" in node:
        try:
            game.komi = float(node["KM"][0].strip() or "0")
        except ValueError:
            raise SgfError(f"bad komi {node['KM'][0]!r}") from None
    if "HA" in node:
        try:
            game.handicap = int(node["HA"][0].strip() or "0")
        except ValueError:
            raise SgfError(f"bad handicap {node['HA'][0]!r}") from None
    setup = any(k in node for k in ("AB", "AW", "AE"))
    if setup and game.moves and ("AE" in node or any(node.get(k) for k in ("AB", "AW"))):
        raise SgfError("setup stones after the first move are not supported")
    game.black_setup += parse_point_list(node.get("AB", []), size)
    game.white_setup += parse_point_list(node.get("AW", []), size)
    if "PL" in node:
        game.player_to_move = _parse_colour(node["PL"][0])
    for key, colour in (("B", BLACK), ("W", WHITE)):
        if key in node:
            game.moves.append((colour, parse_point(node[key][0], size)))


def point_to_vertex(point: Point | None, size: int) -> str:
    """GTP vertex of an SGF point (``pass`` for ``None``): ``(3, 15)`` on 19x19 is ``D4``."""
    if point is None:
        return "pass"
    x, y = point
    return f"{GTP_COLUMNS[x]}{size - y}"
