"""Opening suites: files of balanced starting positions, each played twice with colours reversed.

The shipped suites live in ``trainer/evaluate/openings/`` (its README says how ``benchmarks/make_openings.py``
made and checked them); ``tabula-train evaluate`` and the strength ladder (``benchmarks/ladder.py``)
read them.  :func:`read_suite` reads these formats:

* a PGN file (chess): each game's main line, from its ``FEN`` header when it has one;
* a CSA file (shogi): each game's moves from the initial position (``PI``);
* an SGF file or a folder of SGF files (Go): each game tree's moves, files sorted by name (no setup
  stones; the board size must be the game's);
* a text file, one opening a line (blank lines and ``#`` comments skipped): ``startpos [moves ...]``,
  ``fen <FEN> [moves ...]``, ``sfen <SFEN> [moves ...]``, a bare FEN / EPD (chess) or SFEN (shogi)
  position, or a bare move list in protocol notation (UCI, USI, GTP vertices).

Every opening is checked against the rules when read: a bad one names its file and line.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from engine.games.base import Game, GameInfo, GameState

#: The shipped suites.
SUITES = Path(__file__).resolve().parent / "openings"

GTP_COLUMNS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"  # no I


class SuiteError(ValueError):
    """An opening suite that cannot be read or holds an opening the rules refuse."""


@dataclasses.dataclass(frozen=True)
class Opening:
    """One start: ``moves`` (protocol notation) played from ``position`` (FEN / SFEN; ``None``: the
    game's initial position)."""

    name: str
    moves: tuple[str, ...]
    position: str | None = None

    def state(self, game: Game) -> GameState[Any]:
        """The position after the opening.  Raises ``ValueError`` (a bad position or move)."""
        state = game.state_from_text(self.position) if self.position else game.new_state()
        for text in self.moves:
            state.push(state.parse_move(text))
        return state


def shipped_suite(info: GameInfo) -> Path | None:
    """The shipped suite of a game (chess, shogi, Go 9x9 and 19x19), or ``None``."""
    names = {"chess": "chess.pgn", "shogi": "shogi.txt"}
    name = names.get(info.name, f"go{info.board_size}")
    path = SUITES / name
    return path if path.exists() else None


def read_suite(path: Path, game: Game) -> list[Opening]:
    """The openings of the suite at ``path`` for ``game``, each checked.  Raises :class:`SuiteError`."""
    if path.is_dir():
        files = sorted(path.glob("*.sgf"))
        if not files:
            raise SuiteError(f"{path}: no .sgf files in the folder")
        openings = [o for f in files for o in _read_sgf(f, game)]
    elif not path.is_file():
        raise SuiteError(f"{path}: no such file or folder")
    elif path.suffix.lower() == ".pgn":
        openings = _read_pgn(path, game)
    elif path.suffix.lower() == ".sgf":
        openings = _read_sgf(path, game)
    elif path.suffix.lower() == ".csa":
        openings = _read_csa(path, game)
    else:
        openings = _read_lines(path, game)
    if not openings:
        raise SuiteError(f"{path}: no openings")
    return openings


def _checked(opening: Opening, game: Game, where: str) -> Opening:
    """``opening`` after checking that it is legal and leaves the game going."""
    try:
        state = opening.state(game)
    except ValueError as exc:
        raise SuiteError(f"{where}: {exc}") from None
    if state.outcome() is not None:
        raise SuiteError(f"{where}: the game is over after this opening")
    return opening


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(f"{path}: cannot read it ({exc})") from None


def _read_pgn(path: Path, game: Game) -> list[Opening]:
    """The main lines of a PGN file's games (chess)."""
    import io

    import chess.pgn

    if game.info.name != "chess":
        raise SuiteError(f"{path}: a PGN suite is for chess, not {game.info.label}")

    class QuietBuilder(chess.pgn.GameBuilder[chess.pgn.Game]):
        """python-chess's builder without its log line per error (the error is the suite's one line)."""

        def handle_error(self, error: Exception) -> None:
            self.game.errors.append(error)

    handle = io.StringIO(_text(path))
    openings: list[Opening] = []
    while (record := chess.pgn.read_game(handle, Visitor=QuietBuilder)) is not None:
        number = len(openings) + 1
        if record.errors:
            raise SuiteError(f"{path}: game {number}: {record.errors[0]}")
        fen = record.headers.get("FEN")
        moves = tuple(m.uci() for m in record.mainline_moves())
        name = record.headers.get("Opening", f"game {number}")
        openings.append(_checked(Opening(name, moves, fen), game, f"{path}: game {number}"))
    return openings


#: CSA lines that carry nothing an opening needs: version, names, headers, times, comments, endings.
_CSA_SKIPPED = ("V", "N", "$", "T", "'", "%")


def _read_csa(path: Path, game: Game) -> list[Opening]:
    """The moves of each game of a CSA file (shogi; games separated by a line ``/``, as
    ``trainer.store.records`` writes them), each from the initial position (``PI``)."""
    import cshogi

    if game.info.name != "shogi":
        raise SuiteError(f"{path}: a CSA suite is for shogi, not {game.info.label}")
    openings: list[Opening] = []
    board, start = cshogi.Board(), 0
    moves: list[str] = []
    lines = [*enumerate(_text(path).splitlines(), start=1), (0, "/")]
    for number, raw in lines:
        line, where = raw.strip(), f"{path}:{number}"
        if line == "/":
            if start:
                name = f"{path.stem} {len(openings) + 1}"
                openings.append(_checked(Opening(name, tuple(moves)), game, f"{path}:{start}"))
            board, moves, start = cshogi.Board(), [], 0
        elif not line or line.startswith(_CSA_SKIPPED) or line in ("+", "-"):
            continue
        elif line.startswith("P"):
            if line != "PI":
                raise SuiteError(f"{where}: only the initial position (PI) is supported, not {line!r}")
            start = number
        elif line[0] in "+-" and start:
            move = board.move_from_csa(line[1:7])
            if line[0] != "+-"[board.turn] or not board.is_legal(move):
                raise SuiteError(f"{where}: illegal or malformed CSA move {line!r}")
            moves.append(cshogi.move_to_usi(move))
            board.push(move)
        else:
            raise SuiteError(f"{where}: not a CSA line {line!r} (a move needs the position PI before it)")
    return openings


def _read_sgf(path: Path, game: Game) -> list[Opening]:
    """The moves of each game tree of an SGF file (Go)."""
    if game.info.name != "go":
        raise SuiteError(f"{path}: an SGF suite is for Go, not {game.info.label}")
    text = _text(path)
    trees = _sgf_trees(text)
    if not trees:
        raise SuiteError(f"{path}: no SGF game tree")
    n = game.info.board_size
    openings = []
    for i, tree in enumerate(trees):
        where = f"{path}: game {i + 1}" if len(trees) > 1 else str(path)
        size = re.search(r"SZ\[(\d+)\]", tree)
        if int(size.group(1) if size else 19) != n:
            raise SuiteError(f"{where}: board size {size.group(1) if size else 19}, not {n}")
        if re.search(r"(?<![A-Z])A[BWE]\[", tree):
            raise SuiteError(f"{where}: setup stones (AB/AW/AE) are not supported; write the moves")
        moves = tuple(_sgf_vertex(v, n, where) for _, v in re.findall(r";\s*([BW])\[([a-z]{0,2})\]", tree))
        name = path.stem if len(trees) == 1 else f"{path.stem} {i + 1}"
        openings.append(_checked(Opening(name, moves), game, where))
    return openings


def _sgf_trees(text: str) -> list[str]:
    """The top-level game trees of an SGF text (brackets inside property values ignored)."""
    trees, depth, start, in_value, escaped = [], 0, 0, False, False
    for i, ch in enumerate(text):
        if in_value:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == "]":
                in_value = False
        elif ch == "[":
            in_value = True
        elif ch == "(":
            if depth == 0:
                start = i
            depth += 1
        elif ch == ")" and depth > 0:
            depth -= 1
            if depth == 0:
                trees.append(text[start : i + 1])
    return trees


def _sgf_vertex(point: str, size: int, where: str) -> str:
    """An SGF point (``cf``; ``""`` or ``tt`` a pass) as a GTP vertex (``C4`` on 9x9)."""
    if point == "" or (point == "tt" and size <= 19):
        return "pass"
    x, y = (ord(point[0]) - ord("a"), ord(point[1]) - ord("a")) if len(point) == 2 else (-1, -1)
    if not (0 <= x < size and 0 <= y < size):
        raise SuiteError(f"{where}: point {point!r} is off the {size}x{size} board")
    return f"{GTP_COLUMNS[x]}{size - y}"


def _read_lines(path: Path, game: Game) -> list[Opening]:
    """One opening a line: ``startpos|fen X|sfen X [moves ...]``, a bare position, or a move list."""
    openings = []
    for number, raw in enumerate(_text(path).splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"{path}:{number}"
        try:
            position, moves = _parse_line(line, game.info.name)
        except ValueError as exc:
            raise SuiteError(f"{where}: {exc}") from None
        openings.append(_checked(Opening(line, moves, position), game, where))
    return openings


def _parse_line(line: str, game_name: str) -> tuple[str | None, tuple[str, ...]]:
    """``(position or None, moves)`` of one suite line (see the module docstring)."""
    words = line.split()
    if words[0] == "position":
        words = words[1:]
    head, moves = (
        (words[: words.index("moves")], words[words.index("moves") + 1 :])
        if "moves" in words
        else (words, [])
    )
    if head and head[0] == "startpos":
        return None, tuple(moves)
    if head and head[0] in ("fen", "sfen"):
        if len(head) == 1:
            raise ValueError(f"no position after {head[0]!r}")
        return " ".join(head[1:]), tuple(moves)
    if head and "/" in head[0]:  # a bare FEN / EPD or SFEN
        fields = 4 if game_name == "shogi" else _fen_fields(head)
        return " ".join(head[:fields]), tuple(moves)
    return None, tuple(head + moves)


def _fen_fields(words: list[str]) -> int:
    """6 for a full FEN, 4 for an EPD line (its operations follow the first four fields)."""
    return 6 if len(words) >= 6 and words[4].isdigit() and words[5].isdigit() else 4
