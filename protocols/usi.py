"""USI (shogi) protocol handler: dispatch a line to a command, call the session, format the replies.

Command summary (docs/protocols.md, USI section)::

    usi                  -> id name / id author / option ... / usiok (nothing heavy is loaded)
    isready              -> loads the network (an empty line every HEARTBEAT_S while it loads),
                            "info string <what it plays with>" when newly loaded, readyok;
                            during a search: readyok at once
    setoption name N [value V]   declared options below (MaxMovesToDraw N: the position at game
                            ply N is a draw for the search and the clock; 0 none); USI_Hash/Hash, USI_Ponder/Ponder and
                            ByoyomiMargin/NetworkDelay are aliases; unknown names and bad values:
                            "info string ...", nothing changes; UCI_LimitStrength / UCI_Elo only
                            with a shogi calibration table (docs/strength.md), UCI_Elo clamped to it
    usinewgame           -> new game (empty tree, cache cleared)
    position startpos | [sfen] <SFEN> [moves ...]   bad SFEN: old position kept; illegal move or
                            0000: the legal prefix is kept; resign/win end the move list
    go [ponder] [btime x] [wtime x] [byoyomi x | binc x winc x] [infinite|nodes x|depth x|movetime x]
                         -> info ... / bestmove <m> [ponder <m2>] | bestmove resign | bestmove win
    go mate <ms>|infinite -> checkmate <moves...> | checkmate nomate | checkmate timeout
    stop, ponderhit, gameover [win|lose|draw], quit (EOF = quit)

Decisions:
  * A ``go`` without any limit (bare ``go``, ``go ponder`` alone) searches the time manager's finite
    default (5 s); ``byoyomi`` without main time is spent (minus MoveOverhead) and never exceeded.
  * ``bestmove resign`` only when the side to move has no legal move (mated at the root): a losing
    engine plays on (GUIs and cshogi's ``--resign`` decide on scores themselves).
  * ``bestmove win`` whenever the side to move can declare an entering-king win (CSA 27-point rule).
  * ``go infinite`` / ``go ponder`` never answer before ``stop``/``ponderhit``; ``stop`` after a
    ponder miss and ``gameover`` during a search still produce the one ``bestmove`` of that ``go``
    (cshogi's client waits for it).
  * ``position``, ``setoption`` and ``usinewgame`` arriving during a search are applied when it
    ends (before the next ``go``/``isready``), so stdin is never blocked; arriving after its
    ``bestmove`` (the search thread still winding down) they wait for it and apply at once.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from engine.games import IllegalMoveError, InvalidPositionError, get_game
from engine.games.base import GameState
from engine.network_loading import policy_temperature_for
from engine.perft import fast_perft_divide, format_divide
from engine.search.searcher import SearchInfo, SearchResult
from engine.session import Session
from protocols.loop import Handler, LineSource, Output
from protocols.option_line import EMPTY
from protocols.search_options import BY_NAME as SEARCH_OPTIONS
from protocols.search_options import SEARCH_PARAMETERS
from protocols.settings import POLICY_TEMPERATURE_PERCENT, ProtocolSettings, percent
from protocols.usi_format import (
    GoCommand,
    OptionSpec,
    format_bestmove,
    format_checkmate,
    format_info,
    go_limits,
    info_string,
    parse_check,
    parse_go,
    parse_position,
    parse_setoption,
    parse_spin,
)
from protocols.usi_mate import MateSearch

log = logging.getLogger("tabula.usi")

ENGINE_NAME = "Tabula"
ENGINE_AUTHOR = "The Tabula developers"
#: Seconds between the empty keep-alive lines printed while ``isready`` loads the network.
HEARTBEAT_S = 3.0
#: Seconds ``isready`` waits for the compiled search's kernels, keeping the GUI company with empty lines
#: (kernels from numba's cache load in about a second; a first run compiles for 20-30 s).
COMPILED_WAIT_S = 30.0
#: How long a command waits for a search that has answered but not yet ended (seconds).
ENDING_WAIT_S = 5.0
#: Game length bound of the session's rules: the GUI, not the engine, decides when a game is drawn.
GAME_MAX_PLIES = 1_000_000
#: The largest ``MaxMovesToDraw`` (YaneuraOu's range); 0 means no draw by length.
MAX_MOVES_TO_DRAW = 100_000
BACKENDS = ("auto", "cpu", "cuda", "tensorrt")
PRECISIONS = ("auto", "fp32", "int8")

#: Undeclared names accepted by ``setoption`` -> the declared option they set.
OPTION_ALIASES = {
    "hash": "USI_Hash",
    "ponder": "USI_Ponder",
    "byoyomimargin": "MoveOverhead",
    "networkdelay": "MoveOverhead",
    "move overhead": "MoveOverhead",
    "weights": "WeightsFile",
}


def option_specs(settings: ProtocolSettings, elo_range: tuple[int, int] | None = None) -> list[OptionSpec]:
    """The declared options with defaults from the command line (``tabula --hash ... usi``); the
    strength options (the names Fairy-Stockfish declares under USI) only when there is a calibration
    table (``elo_range``: its Elo range)."""
    opts = settings.engine
    strength = []
    if elo_range is not None:
        low, high = elo_range
        elo = low if opts.elo is None else min(high, max(low, opts.elo))
        strength = [
            OptionSpec("UCI_LimitStrength", "check", "true" if opts.limit_strength else "false"),
            OptionSpec("UCI_Elo", "spin", str(elo), low, high),
        ]
    return [
        OptionSpec("USI_Hash", "spin", str(opts.hash_mb), 1, 1 << 20),
        OptionSpec("USI_Ponder", "check", "true" if opts.ponder else "false"),
        OptionSpec("Threads", "spin", str(opts.threads), 0, 1024),
        OptionSpec("BatchSize", "spin", str(opts.batch_size), 1, 4096),
        OptionSpec("Backend", "combo", opts.backend, choices=BACKENDS),
        OptionSpec("Precision", "combo", opts.precision, choices=PRECISIONS),
        OptionSpec("WeightsFile", "filename", opts.weights_file or ""),
        OptionSpec("MoveOverhead", "spin", str(opts.move_overhead_ms), 0, 60_000),
        *(
            OptionSpec(p.name, "spin", str(value), min(p.low, value), max(p.high, value))
            for p in SEARCH_PARAMETERS
            for value in [p.option_value(opts.search_config(get_game("shogi")))]
        ),
        OptionSpec("MultiPV", "spin", str(opts.multipv), 1, 500),
        OptionSpec("MateThreatNodes", "spin", str(opts.mate_threat_nodes), 0, 10_000_000),
        OptionSpec(
            "PolicyTemperature",
            "spin",
            str(percent(policy_temperature_for(get_game("shogi"), opts.policy_temperature))),
            *POLICY_TEMPERATURE_PERCENT,
        ),
        *strength,
        OptionSpec("MaxMovesToDraw", "spin", "0", 0, MAX_MOVES_TO_DRAW),
    ]


#: Declared option -> the ``EngineOptions`` field it sets.
OPTION_FIELDS = {
    "USI_Hash": "hash_mb",
    "USI_Ponder": "ponder",
    "Threads": "threads",
    "BatchSize": "batch_size",
    "Backend": "backend",
    "Precision": "precision",
    "WeightsFile": "weights_file",
    "MoveOverhead": "move_overhead_ms",
    "MultiPV": "multipv",
    "MateThreatNodes": "mate_threat_nodes",
    "PolicyTemperature": "policy_temperature",
    "UCI_LimitStrength": "limit_strength",
    "UCI_Elo": "elo",
}
#: The widest ``UCI_Elo`` accepted before clamping into the calibrated range.
ELO_BOUNDS = (-100_000, 100_000)


def option_value(spec: OptionSpec, value: str | None) -> Any:
    """The ``EngineOptions`` value of ``setoption`` text for ``spec``.  Raises ``ValueError``."""
    if spec.kind == "spin":
        assert spec.low is not None and spec.high is not None
        return parse_spin(value, spec.low, spec.high)
    if spec.kind == "check":
        return parse_check(value)
    if spec.kind == "combo":
        text = (value or "").strip().lower()
        if text not in spec.choices:
            raise ValueError(f"expected one of {', '.join(spec.choices)}, not {value!r}")
        return text
    # filename / string
    text = (value or "").strip()
    if text in ("", EMPTY):
        return None
    if not os.path.isfile(text):
        raise ValueError(f"no such file: {text}")
    return text


class UsiHandler(Handler):
    """The USI dispatcher over one shogi :class:`Session`."""

    def __init__(self, output: Output, source: LineSource, settings: ProtocolSettings) -> None:
        self.out = output
        self.source = source
        self.settings = settings
        self.session = Session("shogi", settings.engine, {"max_plies": GAME_MAX_PLIES})
        table = self.session.strength_table()
        elo_range = (table.min_elo, table.max_elo) if table is not None else None
        self._position_set: tuple[str | None, list[str]] = (None, [])  # the last `position` applied
        self.specs = {spec.name: spec for spec in option_specs(settings, elo_range)}
        self._deferred: list[tuple[Callable[[list[str]], None], list[str]]] = []
        self._mate: MateSearch | None = None  # while a `go mate` runs
        self._answered = threading.Event()  # set when the running go / go mate has sent its answer
        self._answered.set()
        self._commands: dict[str, Callable[[list[str]], None]] = {
            "usi": self._usi,
            "isready": self._isready,
            "setoption": self._setoption,
            "usinewgame": self._usinewgame,
            "position": self._position,
            "go": self._go,
            "stop": self._stop,
            "ponderhit": self._ponderhit,
            "gameover": self._gameover,
        }

    # ---- dispatcher --------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        tokens = line.split()
        if not tokens:
            return True
        word, args = tokens[0], tokens[1:]
        if word.lower() == "quit":
            return False
        command = self._commands.get(word) or self._commands.get(word.lower())
        if command is None:
            self.out.line(info_string(f"unknown command: {word}"))
            return True
        if word.lower() in ("setoption", "position", "usinewgame"):
            if self._busy():
                self._deferred.append((command, args))  # applied when the search ends: stdin never waits
                return True
            self._apply_deferred()  # earlier commands first: their order is kept
        try:
            command(args)
        except Exception as exc:  # never die, never stay silent
            log.exception("error handling %r", line)
            self.out.line(info_string(f"error in {word}: {exc}"))
        return True

    def close(self) -> None:
        if self._mate is not None:
            self._mate.stop()
            self._mate.wait(5.0)
        self.session.close()

    # ---- commands ----------------------------------------------------------------------------------
    def _usi(self, args: list[str]) -> None:
        lines = [f"id name {ENGINE_NAME}", f"id author {ENGINE_AUTHOR}"]
        lines += [spec.line() for spec in self.specs.values()]
        lines.append("usiok")
        self.out.lines(lines)

    def _isready(self, args: list[str]) -> None:
        if not self._busy():
            self._apply_deferred()
            self._ensure_ready(COMPILED_WAIT_S)
        self.out.line("readyok")

    def _setoption(self, args: list[str]) -> None:
        try:
            name, value = parse_setoption(args)
        except ValueError as exc:
            self.out.line(info_string(f"ignoring setoption: {exc}"))
            return
        key = OPTION_ALIASES.get(name.lower(), name)
        spec = self.specs.get(key) or next(
            (s for s in self.specs.values() if s.name.lower() == key.lower()), None
        )
        if spec is None:
            self.out.line(info_string(f"unknown option {name}: ignored"))
            return
        try:
            converted = (
                option_value(spec, value) if spec.name != "UCI_Elo" else parse_spin(value, *ELO_BOUNDS)
            )
        except ValueError as exc:
            self.out.line(info_string(f"bad value for {spec.name}: {exc}; unchanged"))
            return
        if spec.name == "UCI_Elo":
            converted = self._clamped_elo(converted)
        if spec.name == "MaxMovesToDraw":
            self._set_max_moves_to_draw(int(converted))
            return
        if spec.name == "PolicyTemperature":
            converted = int(converted) / 100
        if spec.name.lower() in SEARCH_OPTIONS:
            search = SEARCH_OPTIONS[spec.name.lower()].applied(self.session.options.search, int(converted))
            self.session.set_options(search=search)
            return
        self.session.set_options(**{OPTION_FIELDS[spec.name]: converted})
        if spec.name == "UCI_LimitStrength" and converted:
            self.out.line(info_string(self.session.strength_note()))

    def _clamped_elo(self, elo: int) -> int:
        """``UCI_Elo`` clamped into the calibrated range, saying so (the option exists only with a table)."""
        table = self.session.strength_table()
        assert table is not None
        resolved = table.resolve(elo)
        if resolved.note:
            self.out.line(info_string(resolved.note))
        return resolved.elo

    def _set_max_moves_to_draw(self, plies: int) -> None:
        """``MaxMovesToDraw``: the position at game ply ``plies`` (SFEN move number ``plies + 1``) is a
        draw for the search and the time manager (``ShogiRules.draw_game_ply``; 0: none); the position
        stays as it was."""
        sfen, moves = self._position_set
        self.session.set_game("shogi", max_plies=GAME_MAX_PLIES, draw_game_ply=plies)
        self.session.set_position(sfen, moves)

    def _usinewgame(self, args: list[str]) -> None:
        self.session.new_game()

    def _position(self, args: list[str]) -> None:
        try:
            command = parse_position(args)
        except ValueError as exc:
            self.out.line(info_string(f"ignoring position: {exc}; position unchanged"))
            return
        if command.cut_at is not None:
            self.out.line(info_string(f"'{command.cut_at}' ends the move list: moves from it on ignored"))
        moves = list(command.moves)
        try:
            self.session.set_position(command.sfen, moves)
            self._position_set = (command.sfen, moves)
        except InvalidPositionError as exc:
            self.out.line(info_string(f"invalid sfen, position unchanged: {exc}"))
        except IllegalMoveError as exc:
            good = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
            self.session.set_position(command.sfen, moves[:good])
            self._position_set = (command.sfen, moves[:good])
            self.out.line(
                info_string(
                    f"illegal move {moves[good]} (move {good + 1}): kept the position after {good} moves"
                )
            )

    def _go(self, args: list[str]) -> None:
        received = self.source.arrival()  # the GUI's clock runs from here
        go = parse_go(args)
        if go.bad_tokens:
            self.out.line(info_string(f"ignoring go tokens: {' '.join(go.bad_tokens)}"))
        self._finish_running()
        self._apply_deferred()
        if go.perft is not None:
            state = self.session.state.copy()
            divide = fast_perft_divide(state, go.perft)  # the compiled shogi rules
            counts = [(state.move_to_text(move), n) for move, n in divide]
            self.out.lines(format_divide(counts))
            return
        if go.mate:
            self._go_mate(go)
            return
        self._ensure_ready()
        state = self.session.state
        waits_for_stop = go.infinite or go.ponder
        if not waits_for_stop:
            answer = immediate_answer(state)
            if answer is not None:
                self.out.line(format_bestmove(answer))
                return
        limits = dataclasses.replace(go_limits(go, state.side_to_move), received_at=received)
        multipv = self.session.options.multipv

        def on_info(info: SearchInfo) -> None:
            for line in format_info(info, state.move_to_text, multipv):
                self.out.line(line)  # one by one: each is also logged with --log

        def on_done(result: SearchResult) -> None:
            lines = bestmove_lines(state, result)
            self._answered.set()  # before the GUI can see the answer and send its next command
            for line in lines:
                self.out.line(line)

        self._answered.clear()
        self.session.go(limits, on_info, on_done, finite_default=True)

    def _go_mate(self, go: GoCommand) -> None:
        def on_done(outcome: str, pv: list[str]) -> None:
            self._answered.set()
            self.out.line(format_checkmate(pv if outcome == "mate" else None, outcome))

        self._answered.clear()
        self._mate = MateSearch(self.session.state.to_text(), go.mate_ms, on_done)
        self._mate.start()

    def _stop(self, args: list[str]) -> None:
        if self._mate is not None:
            self._mate.stop()
        if self.session.searching:
            self.session.stop()

    def _ponderhit(self, args: list[str]) -> None:
        if self.session.searching:
            self.session.ponderhit()

    def _gameover(self, args: list[str]) -> None:
        """End of game (``win``/``lose``/``draw`` or nothing): stop any search or ponder; the stopped
        search still sends its ``bestmove`` (cshogi's client may be waiting for it)."""
        self._stop(args)

    # ---- helpers -----------------------------------------------------------------------------------
    def _busy(self) -> bool:
        """True while a search or mate search has not answered yet.  One that has answered is only
        winding down: wait for it (milliseconds), so commands sent right after ``bestmove`` apply
        at once."""
        running = self.session.searching or (self._mate is not None and self._mate.running)
        if running and self._answered.is_set():
            self.session.wait(ENDING_WAIT_S)
            if self._mate is not None:
                self._mate.wait(ENDING_WAIT_S)
            running = self.session.searching or (self._mate is not None and self._mate.running)
        return running

    def _finish_running(self) -> None:
        """Stop a search or mate search still running (its answer is sent) and wait for it."""
        if self._mate is not None and self._mate.running:
            self._mate.stop()
            self._mate.wait()
        if self.session.searching:
            self.session.stop()
            self.session.wait()

    def _apply_deferred(self) -> None:
        pending, self._deferred = self._deferred, []
        for command, args in pending:
            try:
                command(args)
            except Exception as exc:
                log.exception("error applying deferred command")
                self.out.line(info_string(f"error: {exc}"))

    def _ensure_ready(self, compiled_wait_s: float = 0.0) -> None:
        """Load the network if needed (and wait up to ``compiled_wait_s`` for the compiled search, see
        ``Session.ensure_ready``), printing an empty line every ``HEARTBEAT_S`` meanwhile and ``info
        string <what the engine plays with>`` once the network is loaded."""
        if self.session.prepared or (not self.session.network_pending and compiled_wait_s <= 0):
            self.session.ensure_ready()
            return
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(HEARTBEAT_S):
                self.out.line("")

        beat = threading.Thread(target=heartbeat, name="tabula-heartbeat", daemon=True)
        beat.start()
        try:
            note = self.session.ensure_ready(compiled_wait_s)
        finally:
            done.set()
            beat.join()
        self.out.line(info_string(note))


def immediate_answer(state: GameState[Any]) -> str | None:
    """``win`` (entering-king declaration) or ``resign`` (no legal move) when no search is needed."""
    if _can_declare_win(state):
        return "win"
    if not state.legal_moves():
        return "resign"
    return None


def _can_declare_win(state: GameState[Any]) -> bool:
    check = getattr(state, "can_declare_win", None)
    return bool(check()) if check is not None else False


def bestmove_lines(state: GameState[Any], result: SearchResult) -> list[str]:
    """The ``bestmove`` line (with an ``info string`` before it when the root was a finished game
    that still has legal moves: a repetition the GUI did not end)."""
    if _can_declare_win(state):
        return [format_bestmove("win")]
    if result.best_move is None:
        legal = state.legal_moves()
        if not legal:
            return [format_bestmove("resign")]
        return [
            info_string("the root position ends the game by the rules; playing a legal move"),
            format_bestmove(state.move_to_text(legal[0])),
        ]
    ponder = state.move_to_text(result.ponder_move) if result.ponder_move is not None else None
    return [format_bestmove(state.move_to_text(result.best_move), ponder)]
