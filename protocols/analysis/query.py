"""Reading analysis queries: one JSON line into a checked :class:`Query` (KataGo's analysis protocol,
docs/analysis.md), or a :class:`QueryError` with the field at fault.  Pure: no search, no network.

Go queries are KataGo's (``moves`` as ``[player, vertex]`` pairs, ``initialStones``, ``boardXSize`` ...);
chess and shogi queries name their game (``"game": "chess"`` or ``"shogi"``) and carry a FEN / SFEN
``initialPosition`` and UCI / USI ``moves`` (strings, or ``[player, move]`` pairs whose player is not
checked).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from engine.games import GameState, IllegalMoveError, InvalidPositionError, get_game
from engine.games.go import GoState
from engine.games.go_rules import GoRules

#: The longest query line read (bytes of UTF-8); a longer one is answered with an error unread.
MAX_LINE_BYTES = 1 << 20
#: The most turns one query may ask for, and the most visits a position may get.
MAX_TURNS = 10_000
MAX_VISITS = 100_000_000
#: ``reportAnalysisWinratesAs`` values: whose point of view winrates and scores take.
PERSPECTIVES = ("BLACK", "WHITE", "SIDETOMOVE")
#: Go rules that count area (Tabula's): accepted as they are.
AREA_RULES = frozenset(
    {
        "tromp-taylor",
        "chinese",
        "chinese-ogs",
        "chinese-kgs",
        "aga",
        "bga",
        "new-zealand",
        "new zealand",
        "nz",
        "stone_scoring",
        "stone-scoring",
        "cn",
        "tt",
        "area",
    }
)
#: Go rules that count territory: analysed under area counting, with a warning.
TERRITORY_RULES = frozenset({"japanese", "korean", "jp", "ko", "territory"})

#: Every field a position query may have; KataGo's fields that change nothing here are known (no warning
#: when they hold their default) and listed in docs/analysis.md.
QUERY_FIELDS = frozenset(
    {
        "id",
        "game",
        "moves",
        "initialStones",
        "initialPlayer",
        "initialPosition",
        "rules",
        "komi",
        "boardXSize",
        "boardYSize",
        "analyzeTurns",
        "maxVisits",
        "priority",
        "priorities",
        "includeOwnership",
        "includeMovesOwnership",
        "includeOwnershipStdev",
        "includePolicy",
        "includePVVisits",
        "includeNoResultValue",
        "avoidMoves",
        "allowMoves",
        "overrideSettings",
        "reportDuringSearchEvery",
        "whiteHandicapBonus",
        "rootPolicyTemperature",
        "rootFpuReductionMax",
        "analysisPVLen",
    }
)
#: Fields accepted without effect (a warning when they ask for something).
UNAPPLIED_FIELDS = frozenset(
    {
        "includeOwnershipStdev",
        "includeNoResultValue",
        "whiteHandicapBonus",
        "rootPolicyTemperature",
        "rootFpuReductionMax",
    }
)
#: ``overrideSettings`` keys that are applied; others are answered with a warning and ignored.
APPLIED_SETTINGS = frozenset({"reportAnalysisWinratesAs", "maxVisits", "maxPlayouts", "maxTime"})
#: ``overrideSettings`` keys KaTrain sends that change nothing here: no warning when they are 0/false.
QUIET_SETTINGS = frozenset({"wideRootNoise"})


class QueryError(ValueError):
    """A query that cannot be analysed: KataGo's ``{"id": ..., "error": message, "field": field}``."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


@dataclasses.dataclass(frozen=True)
class Warning_:
    """A field that was read but not (fully) applied: KataGo's ``{"warning": ..., "field": ...}``."""

    field: str
    message: str


@dataclasses.dataclass(frozen=True)
class Turn:
    """One position of a query to analyse.

    Attributes:
        number: the turn number (0: the start position, k: after ``moves[:k]``).
        state: the position (a copy owned by this turn).
        priority: its priority (higher first).
        searchmoves: the root moves the search may play (native moves; empty: all), from
            ``allowMoves`` / ``avoidMoves`` for the side to move.
    """

    number: int
    state: GameState[Any]
    priority: int
    searchmoves: tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Query:
    """A checked position query.

    Attributes:
        id: the client's id (echoed in every response).
        game: the game label (``chess``, ``shogi``, ``go9``, ``go19`` ...).
        turns: the positions to analyse, in the order asked.
        max_visits: playouts of each position's search (``maxVisits``; ``None``: the server's default).
        max_time_s: seconds per position (``overrideSettings.maxTime``; ``None``: no limit).
        include_ownership, include_moves_ownership, include_policy, include_pv_visits: what the
            responses carry.
        report_every_s: partial responses every this many seconds (``None``: only the final one).
        perspective: ``BLACK``, ``WHITE`` or ``SIDETOMOVE`` (``None``: the server's default).
        warnings: fields read but not applied.
    """

    id: str
    game: str
    turns: tuple[Turn, ...]
    max_visits: int | None
    max_time_s: float | None
    include_ownership: bool
    include_moves_ownership: bool
    include_policy: bool
    include_pv_visits: bool
    report_every_s: float | None
    perspective: str | None
    warnings: tuple[Warning_, ...]


def read_line(line: str) -> dict[str, Any]:
    """The JSON object of one query line.

    Raises:
        QueryError: too long, not JSON, or not an object (no ``field``: KataGo's general error).
    """
    if len(line) > MAX_LINE_BYTES or len(line.encode("utf-8", errors="replace")) > MAX_LINE_BYTES:
        raise QueryError(f"Query line longer than {MAX_LINE_BYTES} bytes")
    try:
        value = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise QueryError(f"Could not parse json: {exc}") from None
    if not isinstance(value, dict):
        raise QueryError("Request line was valid json but was not an object")
    return value


def query_id(obj: Mapping[str, Any]) -> str:
    """The query's ``id`` (a string, or a number written as one).

    Raises:
        QueryError: missing or of another type.
    """
    value = obj.get("id")
    if isinstance(value, bool) or value is None:
        raise QueryError("Field 'id' is required and must be a string", "id")
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if not isinstance(value, str):
        raise QueryError("Field 'id' must be a string", "id")
    return value


def parse_query(
    obj: Mapping[str, Any], default_game: str = "go", go_sizes: Sequence[int] | None = None
) -> Query:
    """Check a position query (``action`` absent) and build its turns.

    Args:
        obj: the query's JSON object.
        default_game: the game of a query without ``game`` (``tabula analysis --game``).
        go_sizes: the Go board sizes that may be analysed (those with a network); ``None``: 2..19.

    Raises:
        QueryError: the first field that is wrong (its name in ``field``).
    """
    qid = query_id(obj)
    warnings: list[Warning_] = [
        Warning_(key, f"Unexpected or unused field '{key}'") for key in obj if key not in QUERY_FIELDS
    ]
    for key in sorted(UNAPPLIED_FIELDS & obj.keys()):
        if obj[key] not in (False, None, 0, 1.0) or (key == "whiteHandicapBonus" and obj[key] != "0"):
            warnings.append(Warning_(key, f"Field '{key}' is accepted but not applied by Tabula"))
    game = _game_label(obj, default_game)
    if game.startswith("go"):
        label, start, steps = _go_game(obj, warnings, go_sizes)
    else:
        label, start, steps = _chess_like(obj, game)
    turn_numbers = _analyze_turns(obj, len(steps))
    priorities = _priorities(obj, len(turn_numbers))
    settings = _override_settings(obj, warnings)
    max_visits = settings.get("maxVisits")
    if "maxVisits" in obj:
        max_visits = _integer(obj, "maxVisits", 1, MAX_VISITS)
    report = obj.get("reportDuringSearchEvery")
    if report is not None:
        report = _number(obj, "reportDuringSearchEvery", 0.001, 1e9)
    states = _states_at(start, steps, turn_numbers)
    turns = tuple(
        Turn(t, states[t], priorities[i], _root_moves(obj, states[t])) for i, t in enumerate(turn_numbers)
    )
    return Query(
        id=qid,
        game=label,
        turns=turns,
        max_visits=max_visits,
        max_time_s=settings.get("maxTime"),
        include_ownership=_boolean(obj, "includeOwnership"),
        include_moves_ownership=_boolean(obj, "includeMovesOwnership"),
        include_policy=_boolean(obj, "includePolicy"),
        include_pv_visits=_boolean(obj, "includePVVisits"),
        report_every_s=report,
        perspective=settings.get("reportAnalysisWinratesAs"),
        warnings=tuple(warnings),
    )


# ---- fields ------------------------------------------------------------------------------------------
def _boolean(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise QueryError(f"Field '{key}' must be a boolean", key)
    return value


def _integer(obj: Mapping[str, Any], key: str, low: int, high: int) -> int:
    value = obj.get(key)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise QueryError(f"Field '{key}' must be an integer from {low} to {high}", key)
    return value


def _number(obj: Mapping[str, Any], key: str, low: float, high: float) -> float:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise QueryError(f"Field '{key}' must be a number", key)
    if not low <= value <= high:
        raise QueryError(f"Field '{key}' must be from {low} to {high}", key)
    return float(value)


def _game_label(obj: Mapping[str, Any], default_game: str) -> str:
    value = obj.get("game", default_game)
    if not isinstance(value, str) or value.lower() not in ("go", "chess", "shogi"):
        raise QueryError("Field 'game' must be one of 'go', 'chess', 'shogi'", "game")
    return value.lower()


def _player(value: object, key: str) -> int:
    """0 for ``B``/``black``, 1 for ``W``/``white``."""
    text = value.lower() if isinstance(value, str) else ""
    if text in ("b", "black"):
        return 0
    if text in ("w", "white"):
        return 1
    raise QueryError(f"Could not parse player '{value}' in '{key}'", key)


def _pairs(obj: Mapping[str, Any], key: str) -> list[tuple[int, str]]:
    """``[[player, location], ...]`` of a Go query."""
    value = obj.get(key, [])
    if not isinstance(value, list):
        raise QueryError(f"Field '{key}' must be a list of [player, location] pairs", key)
    out = []
    for item in value:
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[1], str)):
            raise QueryError(f"Field '{key}' must be a list of [player, location] pairs", key)
        out.append((_player(item[0], key), item[1]))
    return out


Step = tuple[int | None, Any]  # (colour for Go's play_as, or None; the native move)


def _go_game(
    obj: Mapping[str, Any], warnings: list[Warning_], go_sizes: Sequence[int] | None
) -> tuple[str, GameState[Any], list[Step]]:
    """A Go query's label, start position and moves."""
    for key in ("boardXSize", "boardYSize"):
        if key not in obj:
            raise QueryError(f"Field '{key}' is required", key)
    x = _integer(obj, "boardXSize", 2, 19)
    y = _integer(obj, "boardYSize", 2, 19)
    if x != y:
        raise QueryError(f"Only square boards are supported (boardXSize {x}, boardYSize {y})", "boardYSize")
    if go_sizes is not None and x not in go_sizes:
        sizes = ", ".join(str(s) for s in go_sizes)
        raise QueryError(f"No network for board size {x} (sizes: {sizes})", "boardXSize")
    komi = _number(obj, "komi", -150.0, 150.0) if "komi" in obj else 7.5
    _go_rules(obj, warnings)
    rules = GoRules(board_size=x, komi=komi)
    stones = _pairs(obj, "initialStones")
    moves = _pairs(obj, "moves")
    if "moves" not in obj:
        raise QueryError("Field 'moves' is required", "moves")
    if "initialPlayer" in obj:
        first = _player(obj["initialPlayer"], "initialPlayer")
    else:
        first = moves[0][0] if moves else 0
    probe = GoState(rules)
    codes = [["."] * x for _ in range(x)]
    for colour, vertex in stones:
        try:
            point = probe.vertex_to_point(vertex)
        except IllegalMoveError:
            raise QueryError(f"Illegal initial stone location '{vertex}'", "initialStones") from None
        if point >= x * x:
            raise QueryError("A pass is not an initial stone", "initialStones")
        codes[point // x][point % x] = "X" if colour == 0 else "O"
    rows = "/".join("".join(row) for row in codes)
    try:
        start = GoState.from_text(f"{x} {komi!r} {'bw'[first]} {rows}", rules)
    except InvalidPositionError as exc:
        raise QueryError(f"Illegal initial stones: {exc}", "initialStones") from None
    steps: list[Step] = []
    for colour, vertex in moves:
        try:
            steps.append((colour, start.vertex_to_point(vertex)))
        except IllegalMoveError:
            raise QueryError(f"Illegal move {len(steps)}: {vertex}", "moves") from None
    return f"go{x}", start, steps


def _go_rules(obj: Mapping[str, Any], warnings: list[Warning_]) -> None:
    """Check ``rules``; territory counting is analysed as area counting (a warning says so)."""
    if "rules" not in obj:
        raise QueryError("Field 'rules' is required", "rules")
    rules = obj["rules"]
    if isinstance(rules, dict):
        scoring = str(rules.get("scoringRule", "AREA")).upper()
        territory = scoring == "TERRITORY"
    elif isinstance(rules, str) and rules.lower() in AREA_RULES | TERRITORY_RULES:
        territory = rules.lower() in TERRITORY_RULES
    else:
        raise QueryError(f"Could not parse rules: {rules!r}", "rules")
    if territory:
        warnings.append(
            Warning_("rules", "Territory scoring is not supported: analysing with area scoring (chinese)")
        )


def _chess_like(obj: Mapping[str, Any], game: str) -> tuple[str, GameState[Any], list[Step]]:
    """A chess or shogi query's label, start position and moves."""
    rules = get_game(game)
    text = obj.get("initialPosition", "startpos")
    if not isinstance(text, str):
        raise QueryError(
            "Field 'initialPosition' must be a FEN / SFEN string or 'startpos'", "initialPosition"
        )
    try:
        start = rules.new_state() if text.strip() in ("", "startpos") else rules.state_from_text(text)
    except (InvalidPositionError, ValueError) as exc:
        raise QueryError(f"Could not parse initialPosition: {exc}", "initialPosition") from None
    if "moves" not in obj:
        raise QueryError("Field 'moves' is required", "moves")
    raw = obj["moves"]
    if not isinstance(raw, list):
        raise QueryError("Field 'moves' must be a list of moves", "moves")
    state = start.copy()
    steps: list[Step] = []
    for item in raw:
        token = item[1] if isinstance(item, list) and len(item) == 2 else item
        if not isinstance(token, str):
            raise QueryError(f"Illegal move {len(steps)}: {token!r}", "moves")
        try:
            move = state.parse_move(token)
        except IllegalMoveError:
            raise QueryError(f"Illegal move {len(steps)}: {token}", "moves") from None
        state.push(move)
        steps.append((None, move))
    return game, start, steps


def _analyze_turns(obj: Mapping[str, Any], moves: int) -> list[int]:
    if "analyzeTurns" not in obj:
        return [moves]
    value = obj["analyzeTurns"]
    if not isinstance(value, list) or not value or len(value) > MAX_TURNS:
        raise QueryError(
            f"Field 'analyzeTurns' must be a list of 1 to {MAX_TURNS} turn numbers", "analyzeTurns"
        )
    turns = []
    for t in value:
        if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t <= moves:
            raise QueryError(f"Invalid turn number {t!r}: the game has {moves} moves", "analyzeTurns")
        turns.append(t)
    if len(set(turns)) != len(turns):
        raise QueryError("Field 'analyzeTurns' repeats a turn", "analyzeTurns")
    return turns


def _priorities(obj: Mapping[str, Any], turns: int) -> list[int]:
    if "priorities" in obj:
        value = obj["priorities"]
        if (
            not isinstance(value, list)
            or len(value) != turns
            or any(isinstance(p, bool) or not isinstance(p, int) for p in value)
        ):
            raise QueryError("Field 'priorities' must be a list of integers, one per turn", "priorities")
        return [int(p) for p in value]
    priority = _integer(obj, "priority", -(2**31), 2**31 - 1) if "priority" in obj else 0
    return [priority] * turns


def _override_settings(obj: Mapping[str, Any], warnings: list[Warning_]) -> dict[str, Any]:
    """The applied ``overrideSettings``: ``reportAnalysisWinratesAs``, ``maxVisits``, ``maxTime``."""
    value = obj.get("overrideSettings", {})
    if not isinstance(value, dict):
        raise QueryError("Field 'overrideSettings' must be an object", "overrideSettings")
    out: dict[str, Any] = {}
    for key, setting in value.items():
        if key == "reportAnalysisWinratesAs":
            text = str(setting).upper()
            if text not in PERSPECTIVES:
                raise QueryError(
                    f"reportAnalysisWinratesAs must be one of {PERSPECTIVES}", "overrideSettings"
                )
            out[key] = text
        elif key in ("maxVisits", "maxPlayouts"):
            out["maxVisits"] = _integer(value, key, 1, MAX_VISITS)
        elif key == "maxTime":
            seconds = _number(value, key, 0.0, 1e9)
            if seconds > 0:
                out[key] = seconds
        elif key in QUIET_SETTINGS and setting in (0, 0.0, False, None):
            continue
        else:
            warnings.append(
                Warning_("overrideSettings", f"Setting '{key}' is not applied by Tabula (ignored)")
            )
    return out


def _states_at(
    start: GameState[Any], steps: Sequence[Step], turns: Sequence[int]
) -> dict[int, GameState[Any]]:
    """The position at each asked turn (copies), playing the moves once; Go moves are checked here
    (occupied points, suicide, superko).

    Raises:
        QueryError: an illegal Go move (``field`` ``moves``).
    """
    wanted = set(turns)
    last = max(turns)
    state = start.copy()
    out: dict[int, GameState[Any]] = {}
    for i in range(last + 1):
        if i in wanted:
            out[i] = state.copy()
        if i == last:
            break
        colour, move = steps[i]
        if colour is not None and isinstance(state, GoState):
            try:
                state.play_as(colour, move)
            except IllegalMoveError:
                raise QueryError(f"Illegal move {i}: {state.point_to_vertex(move)}", "moves") from None
        else:
            state.push(move)
    return out


def _root_moves(obj: Mapping[str, Any], state: GameState[Any]) -> tuple[Any, ...]:
    """The root moves ``allowMoves`` / ``avoidMoves`` leave the side to move (empty: every move).  Only
    the root is restricted (``untilDepth`` beyond 1 acts as 1).

    Raises:
        QueryError: malformed rules or locations.
    """
    allow = _move_rules(obj, "allowMoves", state)
    avoid = _move_rules(obj, "avoidMoves", state) or set()
    if allow is None and not avoid:
        return ()
    legal = state.legal_moves()
    keep = [m for m in legal if (allow is None or m in allow) and m not in avoid]
    if not keep:  # nothing left: KataGo searches every move then; so does Tabula
        return ()
    return tuple(keep)


def _move_rules(obj: Mapping[str, Any], key: str, state: GameState[Any]) -> set[Any] | None:
    """The moves of ``allowMoves`` / ``avoidMoves`` for the side to move (``None``: the field is absent)."""
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, list) or (key == "allowMoves" and len(value) > 1):
        raise QueryError(f"Field '{key}' must be a list of rule objects (allowMoves: at most one)", key)
    moves: set[Any] = set()
    for rule in value:
        if not isinstance(rule, dict) or not isinstance(rule.get("moves"), list):
            raise QueryError(f"Each entry of '{key}' needs 'player', 'moves' and 'untilDepth'", key)
        depth = rule.get("untilDepth", 1)
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise QueryError(f"'untilDepth' in '{key}' must be a positive integer", key)
        player = _player(rule.get("player"), key) if "player" in rule else state.side_to_move
        if player != state.side_to_move:
            continue
        for text in rule["moves"]:
            if not isinstance(text, str):
                raise QueryError(f"Could not parse move {text!r} in '{key}'", key)
            try:
                moves.add(state.parse_move(text))
            except IllegalMoveError:
                if isinstance(state, GoState):
                    try:
                        state.vertex_to_point(text)  # a real vertex that is not legal now: nothing to do
                        continue
                    except IllegalMoveError:
                        pass
                    raise QueryError(f"Could not parse move {text!r} in '{key}'", key) from None
                continue  # chess / shogi: an illegal move is not among the legal ones anyway
    return moves
