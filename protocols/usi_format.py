"""Pure parse/format functions of the USI protocol (shogi): no session, no I/O.

Everything here turns tokens into plain data or data into protocol lines, so it is unit-tested without
an engine.  The handler (``protocols/usi.py``) only dispatches and calls the session.

=====================  ==========================================================================
USI text               meaning here
=====================  ==========================================================================
``position startpos``  start position (``sfen=None``)
``position sfen S``    ``S`` = ``board side hands [movecount]`` (tokens up to ``moves``)
``position S``         the same without the word ``sfen`` (some GUIs send it)
``moves m1 m2 ...``    USI moves; ``resign`` / ``win`` end the list (game-record markers)
``go ...``             :class:`GoCommand`; clocks are by colour: ``b*`` sente, ``w*`` gote
``go mate T``          mate search for ``T`` ms (``infinite`` or nothing: until found or stopped)
``score mate N``       mate in *plies* (USI), negative when the engine is mated
=====================  ==========================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from engine.search.limits import Clock, SearchLimits
from engine.search.score import Score
from engine.search.searcher import SearchInfo
from protocols.option_line import option_line

#: The shogi start position in SFEN.
START_SFEN = "lnsgkgsnl/1r5b1/ppppppppp/9/9/9/PPPPPPPPP/1B5R1/LNSGKGSNL b - 1"

#: Words that may appear in a USI game record's move list but are not moves: the list ends there.
END_MARKERS = ("resign", "win")

#: Integer-valued ``go`` parameters (milliseconds, or counts for ``nodes``/``depth``).
_GO_INT_PARAMS = ("btime", "wtime", "byoyomi", "binc", "winc", "nodes", "depth", "movetime")


# ---- position ------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PositionCommand:
    """A parsed ``position`` command.

    Attributes:
        sfen: the start SFEN (``None``: the standard start position).
        moves: the USI moves to play from it (end markers already cut off).
        cut_at: the end marker (``resign``/``win``) that cut the move list, if any.
    """

    sfen: str | None
    moves: tuple[str, ...]
    cut_at: str | None = None


def parse_position(args: Sequence[str]) -> PositionCommand:
    """Parse the arguments of ``position`` (the tokens after the word).

    Raises ``ValueError`` when no position is given (``position`` alone, ``position sfen`` with
    nothing after it).  The SFEN itself is checked by the rules (``InvalidPositionError``).
    """
    args = list(args)
    if not args:
        raise ValueError("position needs startpos or an SFEN")
    if "moves" in args:
        split = args.index("moves")
        head, moves = args[:split], args[split + 1 :]
    else:
        head, moves = args, []
    if head == ["startpos"]:
        sfen: str | None = None
    else:
        if head and head[0] == "sfen":
            head = head[1:]
        if not head:
            raise ValueError("position sfen needs an SFEN")
        if head == ["startpos"]:
            raise ValueError("position sfen startpos is not an SFEN")
        sfen = " ".join(head)
    cut_at = None
    for i, token in enumerate(moves):
        if token.lower() in END_MARKERS:
            cut_at = token
            moves = moves[:i]
            break
    return PositionCommand(sfen, tuple(moves), cut_at)


# ---- go ------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class GoCommand:
    """A parsed ``go`` command (times in ms).

    Attributes:
        ponder: ``go ponder``: search on the opponent's time until ``ponderhit`` or ``stop``.
        btime, wtime: main time left for sente (black) and gote (white).
        byoyomi: byo-yomi period granted afresh every move.
        binc, winc: Fischer increments.
        infinite: search until ``stop``.
        nodes, depth, movetime: fixed limits.
        perft: ``go perft N``: count moves instead of searching (:mod:`engine.perft`).
        mate: ``go mate``: True for a mate search (answered with ``checkmate``).
        mate_ms: time for the mate search (``None``: infinite).
        bad_tokens: tokens that were not understood (ignored).
    """

    ponder: bool = False
    btime: int | None = None
    wtime: int | None = None
    byoyomi: int | None = None
    binc: int | None = None
    winc: int | None = None
    infinite: bool = False
    nodes: int | None = None
    depth: int | None = None
    movetime: int | None = None
    perft: int | None = None
    mate: bool = False
    mate_ms: int | None = None
    bad_tokens: tuple[str, ...] = ()

    @property
    def has_limits(self) -> bool:
        """True when anything bounds the search (clock, byo-yomi, nodes, depth, movetime, infinite)."""
        return self.infinite or any(getattr(self, name) is not None for name in _GO_INT_PARAMS)


def _parse_int(token: str) -> int | None:
    """A non-negative integer (a leading ``+`` allowed; negative clocks clamp to 0), else ``None``."""
    try:
        value = int(token)
    except ValueError:
        try:
            value = int(float(token))  # "1000.0" from sloppy GUIs
        except ValueError:
            return None
    return max(0, value)


def parse_go(args: Sequence[str]) -> GoCommand:
    """Parse the arguments of ``go``; unknown words and bad numbers are collected in ``bad_tokens``."""
    fields: dict[str, Any] = {}
    bad: list[str] = []
    i = 0
    args = list(args)
    while i < len(args):
        word = args[i].lower()
        i += 1
        if word == "ponder":
            fields["ponder"] = True
        elif word == "infinite":
            fields["infinite"] = True
        elif word == "perft":
            depth = _parse_int(args[i]) if i < len(args) else None
            if depth is None or depth < 1:
                bad.append(" ".join(args[i - 1 : i + 1]))
                i += 1
                continue
            fields["perft"] = depth
            i += 1
        elif word == "mate":
            fields["mate"] = True
            if i < len(args) and args[i].lower() == "infinite":
                i += 1
            elif i < len(args) and _parse_int(args[i]) is not None:
                fields["mate_ms"] = _parse_int(args[i])
                i += 1
        elif word in _GO_INT_PARAMS:
            value = _parse_int(args[i]) if i < len(args) else None
            if value is None:
                bad.append(word if i >= len(args) else f"{word} {args[i]}")
                if i < len(args) and args[i].lower() not in (*_GO_INT_PARAMS, "ponder", "infinite", "mate"):
                    i += 1
                continue
            fields[word] = value
            i += 1
        else:
            bad.append(args[i - 1])
    return GoCommand(bad_tokens=tuple(bad), **fields)


def go_limits(go: GoCommand, side_to_move: int) -> SearchLimits:
    """Search limits for ``go`` with the side to move's clock (0 sente: ``btime``/``binc``).

    ``byoyomi`` without main time (cshogi's client with ``--byoyomi`` only) is a clock with no main
    time: the time manager then spends the byo-yomi (minus the move overhead) and never more.
    """
    time_ms = go.btime if side_to_move == 0 else go.wtime
    inc_ms = go.binc if side_to_move == 0 else go.winc
    clock = None
    if time_ms is not None or go.byoyomi is not None or inc_ms is not None:
        clock = Clock(
            time_ms=float(time_ms or 0), inc_ms=float(inc_ms or 0), byoyomi_ms=float(go.byoyomi or 0)
        )
    return SearchLimits(
        nodes=go.nodes if go.nodes else None,
        movetime_ms=float(go.movetime) if go.movetime is not None else None,
        depth=go.depth if go.depth else None,
        infinite=go.infinite,
        ponder=go.ponder,
        clock=clock,
    )


# ---- setoption -----------------------------------------------------------------------------------
def parse_setoption(args: Sequence[str]) -> tuple[str, str | None]:
    """``name <id> [value <x>]`` -> ``(id, x)``; ``x`` is ``None`` without ``value``.

    USI option names have no spaces, but a name with spaces is joined (lenient); a value keeps its
    inner spaces.  Raises ``ValueError`` without ``name <id>``.
    """
    args = list(args)
    if not args or args[0].lower() != "name":
        raise ValueError("setoption needs 'name <id>'")
    lowered = [a.lower() for a in args]
    if "value" in lowered[1:]:
        split = lowered.index("value", 1)
        name_tokens, value_tokens = args[1:split], args[split + 1 :]
        value: str | None = " ".join(value_tokens)
    else:
        name_tokens, value = args[1:], None
    if not name_tokens:
        raise ValueError("setoption needs 'name <id>'")
    return " ".join(name_tokens), value


def parse_check(value: str | None) -> bool:
    """A USI check value (``true``/``false``, lenient: on/off, 1/0, yes/no).  Raises ``ValueError``."""
    text = (value or "").strip().lower()
    if text in ("true", "on", "1", "yes"):
        return True
    if text in ("false", "off", "0", "no"):
        return False
    raise ValueError(f"expected true or false, not {value!r}")


def parse_spin(value: str | None, low: int, high: int) -> int:
    """A USI spin value in ``[low, high]``.  Raises ``ValueError`` when not an integer or out of range."""
    try:
        number = int((value or "").strip())
    except ValueError:
        raise ValueError(f"expected an integer, not {value!r}") from None
    if not low <= number <= high:
        raise ValueError(f"{number} is outside [{low}, {high}]")
    return number


# ---- output --------------------------------------------------------------------------------------
def ascii_only(text: str) -> str:
    """USI is ASCII: anything else (paths, messages) becomes ``?``; line breaks become spaces."""
    text = text.replace("\r", " ").replace("\n", " ")
    return text.encode("ascii", "replace").decode("ascii")


def info_string(text: str) -> str:
    """``info string <text>`` (ASCII, one line)."""
    return f"info string {ascii_only(text)}"


def mate_plies(mate_moves: int) -> int:
    """USI mate distance in plies from the search's mate in moves (negative: the engine is mated).

    A win in ``m`` moves ends with the engine's own move: ``2m - 1`` plies; a loss in ``m`` moves
    ends with the opponent's: ``2m`` plies.
    """
    if mate_moves > 0:
        return 2 * mate_moves - 1
    return 2 * mate_moves


def format_score(score: Score) -> str:
    """``score cp N`` or ``score mate N`` (plies)."""
    if score.mate is not None:
        return f"score mate {mate_plies(score.mate)}"
    return f"score cp {score.cp}"


def format_info(info: SearchInfo, move_text: Callable[[Any], str], multipv: int = 1) -> list[str]:
    """``info`` lines of a progress report, one per MultiPV line (``pv`` last; ``multipv k`` only
    when more than one line was asked for).  Without lines (no root move): one line without score."""
    head = f"info depth {info.depth} seldepth {info.seldepth}"
    tail = f"nodes {info.nodes} nps {info.nps} hashfull {info.hashfull} time {info.time_ms}"
    if not info.lines:
        return [f"{head} {tail}"]
    out = []
    for k, line in enumerate(info.lines, start=1):
        parts = [head]
        if multipv > 1:
            parts.append(f"multipv {k}")
        parts.append(format_score(line.score))
        parts.append(tail)
        if line.pv:
            parts.append("pv " + " ".join(move_text(m) for m in line.pv))
        out.append(" ".join(parts))
    return out


def format_bestmove(move: str, ponder: str | None = None) -> str:
    """``bestmove <m> [ponder <m2>]`` with single spaces (cshogi splits on ``' '``)."""
    return f"bestmove {move} ponder {ponder}" if ponder else f"bestmove {move}"


def format_checkmate(moves: Sequence[str] | None, outcome: str = "") -> str:
    """``checkmate <moves...>`` for a found mate, else ``checkmate nomate|timeout|notimplemented``."""
    if moves:
        return "checkmate " + " ".join(moves)
    return f"checkmate {outcome or 'nomate'}"


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """One declared USI option: ``option name <name> type <kind> default <default> [min max | var...]``."""

    name: str
    kind: str  # check | spin | combo | string | filename | button
    default: str = ""
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()

    def line(self) -> str:
        """The ``option name ... type ...`` line."""
        return option_line(self.name, self.kind, self.default, self.low, self.high, self.choices)
