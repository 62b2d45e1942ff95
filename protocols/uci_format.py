"""UCI text in and out: pure parse/format functions, no session and no I/O (unit-tested alone).

What lives here:

* the option table (:func:`option_specs`) and value checking (:meth:`OptionSpec.parse_value`);
* ``setoption`` / ``position`` / ``go`` parsing into small dataclasses (:func:`parse_setoption`,
  :func:`parse_position`, :func:`parse_go`) and ``go`` -> :class:`SearchLimits` (:func:`go_limits`);
* ``info`` / ``bestmove`` formatting (:func:`format_info`, :func:`format_bestmove`,
  :func:`format_no_move`);
* shogi notation for ``UCI_Variant shogi``: Tabula's shogi rules speak USI (``7g7f``, ``P*5e``,
  ``8h2b+``; SFEN), while Fairy-Stockfish in UCI mode and cutechess-cli's shogi board use chess-style
  coordinates (:func:`fairy_to_usi_move`, :func:`usi_to_fairy_move`, :func:`fairy_fen_to_sfen`).

Shogi coordinates, one table (``f`` = a file letter, ``r`` = a rank digit):

=====================  =================  ==========================  ============================
thing                  USI                Fairy-Stockfish UCI         rule
=====================  =================  ==========================  ============================
square                 ``7g`` (file 7,    ``c3`` (file c = 3rd from   file ``9 - (f - 'a')``,
                       rank g)            the left, rank 3 from the   rank ``'a' + (9 - r)``
                                          bottom)
board move             ``7g7f``           ``c3c4``
promotion              ``8h2b+``          ``b2h8+``                   same ``+`` suffix
drop                   ``P*5e``           ``P@e5``                    ``*`` <-> ``@``
position               SFEN ``... b - 1`` FEN ``...[hand] w - - 0 1``  ``w`` is sente (first player)
=====================  =================  ==========================  ============================
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

from engine.chess_tablebase import MAX_PIECES
from engine.games import get_game
from engine.network_loading import policy_temperature_for
from engine.options import EngineOptions
from engine.search.limits import Clock, SearchLimits
from engine.search.score import Score, q_to_wdl
from engine.search.searcher import SearchInfo
from protocols.option_line import EMPTY, option_line
from protocols.search_options import SEARCH_PARAMETERS
from protocols.settings import POLICY_TEMPERATURE_PERCENT, percent

ENGINE_NAME = "Tabula"
ENGINE_AUTHOR = "The Tabula developers"

#: Games selectable with ``UCI_Variant``.
VARIANTS: tuple[str, ...] = ("chess", "shogi")
#: Execution providers of ``Backend``.
BACKENDS: tuple[str, ...] = ("auto", "cpu", "cuda", "tensorrt")
#: Network copies of ``Precision`` (``EngineOptions.precision``).
PRECISIONS: tuple[str, ...] = ("auto", "fp32", "int8")
#: Notations of shogi moves sent under ``UCI_Variant shogi`` (option ``ShogiNotation``, default ``uci``:
#: the chess-style coordinates every UCI shogi client reads).
SHOGI_NOTATIONS: tuple[str, ...] = ("usi", "uci")


class UciParseError(ValueError):
    """A command line that cannot be understood (the handler answers with ``info string``)."""


class OptionValueError(ValueError):
    """A ``setoption`` value that does not fit the option (the handler ignores it)."""


# ---- options -----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One UCI option: its declaration and its value checking.

    Attributes:
        name: the name as declared (``setoption`` matches it case-insensitively).
        type: ``check``, ``spin``, ``combo``, ``button`` or ``string``.
        default: the default value (``bool`` / ``int`` / ``str``; ``None`` for buttons).
        min, max: spin range (the default always lies inside: python-chess refuses engines otherwise).
        vars: combo choices (the default is one of them).
        clamps: a spin value outside ``min..max`` is passed on for the handler to clamp and say so
            (``UCI_Elo``, as Stockfish clamps it), not refused.
    """

    name: str
    type: str
    default: Any = None
    min: int | None = None
    max: int | None = None
    vars: tuple[str, ...] = ()
    clamps: bool = False

    def declaration(self) -> str:
        """The ``option name ... type ...`` line."""
        if self.type == "check":
            default = "true" if self.default else "false"
        else:
            default = "" if self.default is None else str(self.default)
        return option_line(self.name, self.type, default, self.min, self.max, self.vars)

    def parse_value(self, raw: str | None) -> Any:
        """The typed value of ``setoption ... value raw``.  Raises :class:`OptionValueError`."""
        if self.type == "button":
            return True
        text = (raw or "").strip()
        if self.type == "string":
            return "" if text == EMPTY else text
        if self.type == "check":
            if text.lower() not in ("true", "false"):
                raise OptionValueError(f"{self.name} takes true or false, not {text!r}")
            return text.lower() == "true"
        if self.type == "spin":
            try:
                value = int(text)
            except ValueError:
                try:
                    value = int(float(text))
                except ValueError:
                    raise OptionValueError(f"{self.name} takes an integer, not {text!r}") from None
            assert self.min is not None and self.max is not None
            if not self.clamps and not self.min <= value <= self.max:
                raise OptionValueError(f"{self.name} must be within {self.min}..{self.max}, not {value}")
            return value
        for var in self.vars:  # combo
            if var.lower() == text.lower():
                return var
        raise OptionValueError(f"{self.name} takes one of {', '.join(self.vars)}, not {text!r}")


def _spin(name: str, default: int, lo: int, hi: int) -> OptionSpec:
    """A spin option whose range is widened to hold the default (settings from the command line)."""
    return OptionSpec(name, "spin", default, min(lo, default), max(hi, default))


def strength_specs(engine: EngineOptions, elo_range: tuple[int, int]) -> list[OptionSpec]:
    """``UCI_LimitStrength`` and ``UCI_Elo`` (range: the calibration table's, ``elo_range``; default
    the command line's ``--elo``, else the table's lowest, as Stockfish defaults to its lowest)."""
    low, high = elo_range
    elo = low if engine.elo is None else min(high, max(low, engine.elo))
    return [
        OptionSpec("UCI_LimitStrength", "check", engine.limit_strength),
        OptionSpec("UCI_Elo", "spin", elo, low, high, clamps=True),
    ]


def option_specs(engine: EngineOptions, elo_range: tuple[int, int] | None = None) -> list[OptionSpec]:
    """The options Tabula declares, with defaults taken from the command-line settings; the strength
    options only when there is a calibration table (``elo_range``: its Elo range)."""
    backend = engine.backend if engine.backend in BACKENDS else "auto"
    strength = strength_specs(engine, elo_range) if elo_range is not None else []
    chess_search = engine.search_config(get_game("chess"))
    return [
        _spin("Hash", engine.hash_mb, 1, 65536),
        _spin("Threads", engine.threads, 0, 256),
        _spin("BatchSize", engine.batch_size, 1, 1024),
        OptionSpec("Backend", "combo", backend, vars=BACKENDS),
        OptionSpec("Precision", "combo", engine.precision, vars=PRECISIONS),
        OptionSpec("WeightsFile", "string", engine.weights_file or ""),
        _spin("MoveOverhead", engine.move_overhead_ms, 0, 10_000),
        _spin(
            "PolicyTemperature",
            percent(policy_temperature_for(get_game("chess"), engine.policy_temperature)),
            *POLICY_TEMPERATURE_PERCENT,
        ),
        *(_spin(p.name, p.option_value(chess_search), p.low, p.high) for p in SEARCH_PARAMETERS),
        _spin("MultiPV", engine.multipv, 1, 500),
        OptionSpec("Ponder", "check", engine.ponder),
        OptionSpec("UCI_ShowWDL", "check", False),
        OptionSpec("UCI_Chess960", "check", engine.chess960),
        OptionSpec("UCI_Variant", "combo", "chess", vars=VARIANTS),
        OptionSpec("ShogiNotation", "combo", "uci", vars=SHOGI_NOTATIONS),
        *strength,
        OptionSpec("SyzygyPath", "string", engine.syzygy_path),
        _spin("SyzygyProbeLimit", engine.syzygy_probe_limit, 0, MAX_PIECES),
        OptionSpec("OwnBook", "check", engine.own_book),
        OptionSpec("BookFile", "string", engine.book_file),
    ]


_SETOPTION = re.compile(
    r"\s*setoption\s+name\s+(?P<name>.*?)(?:\s+value(?:\s+(?P<value>.*?))?)?\s*", re.IGNORECASE | re.DOTALL
)


def parse_setoption(line: str) -> tuple[str, str | None]:
    """``setoption name <id> [value <x>]`` -> ``(name, value)``.

    Names and values may contain spaces.  ``value`` with nothing after it gives ``""``; no ``value``
    word at all gives ``None`` (buttons).  Raises :class:`UciParseError` when there is no name.
    """
    m = _SETOPTION.fullmatch(line)
    # "setoption name  value 3": the name is empty, not "value 3".
    if m is None or not m.group("name").strip() or re.match(r"value(\s|$)", m.group("name"), re.IGNORECASE):
        raise UciParseError("setoption needs: setoption name <id> [value <x>]")
    name = " ".join(m.group("name").split())
    value = m.group("value")
    if value is None and re.search(r"\svalue\s*$", line, re.IGNORECASE):
        value = ""
    return name, value


# ---- position ----------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PositionCommand:
    """A parsed ``position`` command.

    Attributes:
        kind: ``startpos``, ``fen`` or ``sfen``.
        text: the FEN/SFEN fields joined by single spaces (``None`` for ``startpos``).
        moves: the move tokens after ``moves``, as written.
    """

    kind: str
    text: str | None
    moves: tuple[str, ...]


def parse_position(args: Sequence[str]) -> PositionCommand:
    """Tokens after ``position``: ``startpos | fen <fields> | sfen <fields>`` then ``[moves m1 m2 ...]``.

    Tokens between ``startpos`` and ``moves`` are ignored.  Raises :class:`UciParseError`.
    """
    if not args:
        raise UciParseError("position needs startpos or fen")
    kind = args[0].lower()
    lowered = [a.lower() for a in args]
    cut = lowered.index("moves") if "moves" in lowered else len(args)
    moves = tuple(args[cut + 1 :])
    if kind == "startpos":
        return PositionCommand("startpos", None, moves)
    if kind in ("fen", "sfen"):
        fields = args[1:cut]
        if not fields:
            raise UciParseError(f"position {kind} needs a position")
        return PositionCommand(kind, " ".join(fields), moves)
    raise UciParseError(f"position needs startpos or fen, not {args[0]!r}")


# ---- go ----------------------------------------------------------------------------------------------
_GO_NUMBERS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime", "perft")
_GO_FLAGS = ("ponder", "infinite")
_GO_KEYWORDS = frozenset(_GO_NUMBERS + _GO_FLAGS + ("searchmoves",))
#: Parameters that must be positive to mean anything (times may be zero or negative: cutechess sends
#: negative clocks with a time margin).
_GO_POSITIVE = frozenset(("movestogo", "depth", "nodes", "mate", "perft"))


@dataclasses.dataclass
class GoCommand:
    """A parsed ``go`` command (times in milliseconds); ``warnings`` lists ignored tokens."""

    searchmoves: list[str] = dataclasses.field(default_factory=list)
    ponder: bool = False
    infinite: bool = False
    wtime: int | None = None
    btime: int | None = None
    winc: int | None = None
    binc: int | None = None
    movestogo: int | None = None
    depth: int | None = None
    nodes: int | None = None
    mate: int | None = None
    movetime: int | None = None
    perft: int | None = None  # ``go perft N``: count moves instead of searching (engine.perft)
    warnings: list[str] = dataclasses.field(default_factory=list)


def _number(token: str) -> int | None:
    try:
        return int(token)
    except ValueError:
        try:
            value = float(token)
        except ValueError:
            return None
        return int(value) if value == value and abs(value) != float("inf") else None


def parse_go(args: Sequence[str]) -> GoCommand:
    """Tokens after ``go``.  Never raises: bad or unknown tokens are skipped and listed in ``warnings``."""
    go = GoCommand()
    i = 0
    while i < len(args):
        word = args[i].lower()
        i += 1
        if word in _GO_FLAGS:
            setattr(go, word, True)
        elif word == "searchmoves":
            while i < len(args) and args[i].lower() not in _GO_KEYWORDS:
                go.searchmoves.append(args[i])
                i += 1
        elif word in _GO_NUMBERS:
            if i >= len(args) or args[i].lower() in _GO_KEYWORDS:
                go.warnings.append(f"{word} without a value ignored")
                continue
            value = _number(args[i])
            i += 1
            if value is None:
                go.warnings.append(f"{word} {args[i - 1]!r} ignored: not a number")
            elif word in _GO_POSITIVE and value <= 0:
                go.warnings.append(f"{word} {value} ignored: must be positive")
            else:
                setattr(go, word, value)
        else:
            go.warnings.append(f"unknown go parameter {args[i - 1]!r} ignored")
    return go


def side_clock(go: GoCommand, side_to_move: int) -> Clock | None:
    """The clock of the side to move (0: ``wtime``/``winc``, the first player; 1: ``btime``/``binc``)."""
    time_ms = go.wtime if side_to_move == 0 else go.btime
    if time_ms is None:
        return None
    inc_ms = (go.winc if side_to_move == 0 else go.binc) or 0
    return Clock(time_ms=float(time_ms), inc_ms=float(max(0, inc_ms)), moves_to_go=go.movestogo)


def go_limits(go: GoCommand, side_to_move: int, searchmoves: Sequence[Any] = ()) -> SearchLimits:
    """Search limits of a ``go`` (``searchmoves`` already turned into native moves by the caller)."""
    return SearchLimits(
        nodes=go.nodes,
        movetime_ms=float(max(0, go.movetime)) if go.movetime is not None else None,
        depth=go.depth,
        mate=go.mate,
        infinite=go.infinite,
        ponder=go.ponder,
        clock=side_clock(go, side_to_move),
        searchmoves=tuple(searchmoves),
    )


# ---- output ------------------------------------------------------------------------------------------
def format_score(score: Score) -> str:
    """``score mate M`` (moves, negative when mated) or ``score cp X``."""
    if score.mate is not None:
        return f"score mate {score.mate}"
    return f"score cp {score.cp}"


def format_wdl(score: Score, q: float) -> str:
    """``wdl W D L`` per mille: certain for proven mates, else from Q (engine.search.score.q_to_wdl)."""
    if score.mate is not None:
        return "wdl 1000 0 0" if score.mate > 0 else "wdl 0 0 1000"
    w, d, l = q_to_wdl(q)
    return f"wdl {w} {d} {l}"


def format_info(info: SearchInfo, pv_texts: Sequence[Sequence[str]], show_wdl: bool = False) -> list[str]:
    """One ``info`` line per MultiPV line (``pv_texts[k]``: line ``k``'s moves in notation).

    ``info depth D seldepth S multipv K score cp X|mate M [wdl W D L] nodes N nps R hashfull H [tbhits B]
    time T pv ...`` (``tbhits`` only when tablebases were probed).  No line when the search has no root
    statistics yet.
    """
    out: list[str] = []
    for k, line in enumerate(info.lines):
        parts = [
            f"info depth {info.depth} seldepth {info.seldepth} multipv {k + 1}",
            format_score(line.score),
        ]
        if show_wdl:
            parts.append(format_wdl(line.score, line.q))
        parts.append(f"nodes {info.nodes} nps {info.nps} hashfull {info.hashfull}")
        if info.tbhits:
            parts.append(f"tbhits {info.tbhits}")
        parts.append(f"time {info.time_ms}")
        pv = pv_texts[k] if k < len(pv_texts) else ()
        if pv:
            parts.append("pv " + " ".join(pv))
        out.append(" ".join(parts))
    return out


def format_bestmove(best: str, ponder: str | None = None) -> str:
    """``bestmove <m> [ponder <m2>]``."""
    return f"bestmove {best} ponder {ponder}" if ponder else f"bestmove {best}"


def format_no_move(mated: bool) -> list[str]:
    """The answer when the root has no legal move: mated (``mate 0``) or stalemate (``cp 0``)."""
    return [f"info depth 0 score {'mate 0' if mated else 'cp 0'}", "bestmove (none)"]


def format_info_string(text: str) -> str:
    """``info string ...`` on one line (newlines in messages would break the protocol)."""
    return "info string " + " ".join(str(text).split())


# ---- shogi notation ----------------------------------------------------------------------------------
_FAIRY_BOARD_MOVE = re.compile(r"([a-i])([1-9])([a-i])([1-9])(\+?)")
_FAIRY_DROP = re.compile(r"([PLNSGBR])@([a-i])([1-9])")
_USI_BOARD_MOVE = re.compile(r"([1-9])([a-i])([1-9])([a-i])(\+?)")
_USI_DROP = re.compile(r"([PLNSGBR])\*([1-9])([a-i])")


def _fairy_square(file_letter: str, rank_digit: str) -> str:
    """A Fairy-Stockfish square (``c3``) in USI (``7g``)."""
    return f"{9 - (ord(file_letter) - ord('a'))}{chr(ord('a') + 9 - int(rank_digit))}"


def _usi_square(file_digit: str, rank_letter: str) -> str:
    """A USI square (``7g``) in Fairy-Stockfish coordinates (``c3``)."""
    return f"{chr(ord('a') + 9 - int(file_digit))}{9 - (ord(rank_letter) - ord('a'))}"


def _translate_move(
    text: str,
    board_move: re.Pattern[str],
    drop: re.Pattern[str],
    square: Callable[[str, str], str],
    drop_mark: str,
) -> str:
    """A move matching ``board_move`` or ``drop`` of one notation written in the other (``square``
    turns a square over, ``drop_mark`` is the other notation's drop sign); other text as is."""
    m = board_move.fullmatch(text)
    if m:
        return square(m[1], m[2]) + square(m[3], m[4]) + m[5]
    m = drop.fullmatch(text)
    if m:
        return f"{m[1]}{drop_mark}{square(m[2], m[3])}"
    return text


def fairy_to_usi_move(text: str) -> str:
    """A Fairy-Stockfish/cutechess shogi move (``c3c4``, ``P@e5``, ``b2h8+``) in USI; other text as is."""
    return _translate_move(text, _FAIRY_BOARD_MOVE, _FAIRY_DROP, _fairy_square, "*")


def usi_to_fairy_move(text: str) -> str:
    """A USI move in Fairy-Stockfish/cutechess coordinates; other text as is."""
    return _translate_move(text, _USI_BOARD_MOVE, _USI_DROP, _usi_square, "@")


_HAND_ORDER = "RBGSNLPrbgsnlp"


def fairy_fen_to_sfen(text: str) -> str:
    """Fairy-Stockfish / cutechess shogi FEN -> SFEN; text that is not such a FEN is returned as is.

    ``lnsgkgsnl/.../LNSGKGSNL[Pp] w - - 0 1`` (hand in brackets, ``w`` = sente to move, then optional
    castling / en-passant / half-move fields and the full-move number) becomes
    ``lnsgkgsnl/.../LNSGKGSNL b Pp 1``.  Raises :class:`UciParseError` for a malformed hand or side.
    """
    fields = text.split()
    if not fields or "[" not in fields[0]:
        return text
    m = re.fullmatch(r"([^\[\]]+)\[([A-Za-z]*|-)\]", fields[0])
    if m is None:
        raise UciParseError(f"malformed shogi FEN board/hand {fields[0]!r}")
    board, hand = m.group(1), m.group(2).replace("-", "")
    side = fields[1].lower() if len(fields) > 1 else "w"
    if side not in ("w", "b"):
        raise UciParseError(f"malformed shogi FEN side to move {side!r}")
    counts = {p: hand.count(p) for p in _HAND_ORDER}
    if sum(counts.values()) != len(hand):
        raise UciParseError(f"malformed shogi FEN hand {hand!r}")
    sfen_hand = "".join(f"{n if n > 1 else ''}{p}" for p, n in counts.items() if n) or "-"
    fullmove = next((int(f) for f in reversed(fields[2:]) if f.isdigit()), 1)
    ply = 2 * (max(1, fullmove) - 1) + (1 if side == "b" else 0) + 1
    return f"{board} {'b' if side == 'w' else 'w'} {sfen_hand} {ply}"
