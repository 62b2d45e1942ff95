"""UCI: chess (and shogi through ``setoption name UCI_Variant value shogi``) for GUIs and match runners.

Three layers (docs/design.md, "Protocols are thin"): pure parsing/formatting in :mod:`protocols.uci_format`,
the dispatcher :meth:`UciHandler.handle` (command word -> method), and handlers that only call the
:class:`~engine.session.Session`.  The search runs on the session's worker thread, so ``isready``,
``stop`` and ``ponderhit`` are answered while it thinks.

Behaviour worth knowing (see also docs/protocols.md, the checklist):

* ``uci`` answers at once and loads nothing.  The network is loaded at the first ``isready`` or ``go``
  (``Session.ensure_ready``); what the engine plays with (network and provider, or the uniform fallback
  and why) is reported as ``info string``.
* ``isready`` -> ``readyok`` at once, also during a search (which goes on).
* A bare ``go`` (and any ``go`` with no limit but ``searchmoves``) is finite: it searches
  ``TimeConfig.default_ms`` (5 s) and answers; only ``go infinite`` and ``go ponder`` wait for
  ``stop`` / ``ponderhit``, and they never answer before it, even when the root is mate or the tree
  is exhausted (the searcher waits).
* ``position``, ``setoption`` and ``ucinewgame`` that arrive while a search runs never block stdin:
  they are queued (``info string ... deferred``) and applied, in order, as soon as the search has
  answered (before the next command is handled).  ``go`` while a search runs first stops it (its
  ``bestmove`` is sent: exactly one per ``go``).
* Bad input is never fatal: unknown commands and options, bad values, malformed FEN, illegal moves
  (the legal prefix is kept), bad ``go`` tokens and illegal ``searchmoves`` are reported with
  ``info string`` and the previous good state is kept.
* No legal move at the root: ``info depth 0 score mate 0`` (mated) or ``score cp 0`` (stalemate),
  then ``bestmove (none)``.  A root that is over by a rule (threefold repetition, fifty moves) while
  legal moves remain still gets a legal move, since the GUI asked for one.
* ``UCI_LimitStrength`` / ``UCI_Elo`` (declared when the game has a calibration table,
  ``engine.strength``; docs/strength.md): a ``UCI_Elo`` outside the table's range is clamped and the
  ``info string`` says so; ``UCI_LimitStrength true`` reports the Elo, its interval and the setting.
* Chess only: ``OwnBook`` with a Polyglot ``BookFile`` answers a finite ``go`` from the book
  (``info string book move ...``, :mod:`engine.chess_book`); ``SyzygyPath`` probes the root's moves
  in Syzygy tablebases (:mod:`engine.chess_tablebase`): a won ending plays the DTZ-best move at once,
  reported ``score cp 20000`` with ``tbhits``.
* ``wdl`` (with ``UCI_ShowWDL``) is computed from the root move's Q with the draw model of
  :func:`engine.search.score.q_to_wdl` (the tree keeps no network WDL), certain for proven mates.
* ``UCI_Variant shogi`` switches to shogi: ``position startpos`` is the shogi start, ``position
  sfen|fen <SFEN>`` (a Fairy-Stockfish/cutechess FEN with ``[hand]`` is converted) and moves in
  Fairy-Stockfish's UCI coordinates (``c3c4``, ``P@e5``, ``b2h8+``) or in USI (``7g7f``, ``P*5e``,
  ``8h2b+``), both accepted.  Replies (``bestmove``, ``ponder``, ``pv``) use the UCI coordinates, as
  Fairy-Stockfish does under UCI and as cutechess-cli needs for shogi matches; ``ShogiNotation usi``
  switches them to USI notation.  Clocks follow cutechess-cli's shogi board, where white is the first
  player (sente): ``wtime``/``winc`` are sente's clock, ``btime``/``binc`` gote's.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from engine.games import GameState, IllegalMoveError, InvalidPositionError
from engine.perft import fast_perft_divide, format_divide
from engine.search.searcher import SearchInfo, SearchResult
from engine.session import Session
from protocols import uci_format as fmt
from protocols.loop import Handler, LineSource, Output
from protocols.search_options import BY_NAME as SEARCH_OPTIONS
from protocols.settings import ProtocolSettings

log = logging.getLogger("tabula.uci")

#: Games under a GUI end when the GUI says so: no self-play length cap (rules' ``max_plies``).
PROTOCOL_MAX_PLIES = 1_000_000

#: Seconds ``isready`` waits for the compiled search's kernels: kernels from numba's cache take about half
#: a second; a first run's compilation (28 s for chess) goes on in the background past this, since
#: ``readyok`` is due promptly (cutechess-cli forfeits an engine silent for 15 s on a ping, python-chess's
#: SimpleEngine times a ping out after 10 s, and Tabula promises ``readyok`` within 5 s of launch).
COMPILED_WAIT_S = 3.0

#: Commands applied only while no search runs (queued otherwise).
_DEFERRED = frozenset(("position", "setoption", "ucinewgame"))

#: setoption names (lower case) -> ``EngineOptions`` fields.
_ENGINE_FIELDS = {
    "hash": "hash_mb",
    "threads": "threads",
    "batchsize": "batch_size",
    "backend": "backend",
    "precision": "precision",
    "moveoverhead": "move_overhead_ms",
    "multipv": "multipv",
    "ponder": "ponder",
    "syzygyprobelimit": "syzygy_probe_limit",
}


class UciHandler(Handler):
    """The UCI dispatcher and command handlers over one :class:`Session`."""

    def __init__(self, output: Output, source: LineSource, settings: ProtocolSettings) -> None:
        self.out = output
        self.source = source
        self.settings = settings
        self.variant = "chess"
        self.chess960 = settings.engine.chess960
        self.session = Session("chess", settings.engine, self._game_options())
        table = self.session.strength_table()
        elo_range = (table.min_elo, table.max_elo) if table is not None else None
        self.specs = {spec.name.lower(): spec for spec in fmt.option_specs(settings.engine, elo_range)}
        self.show_wdl = False
        self.shogi_notation = self.specs["shoginotation"].default
        self.debug = False
        self._pending: list[str] = []
        self._answered = threading.Event()  # set once the running search has sent its bestmove
        self._answered.set()
        self._reported = 0  # the session's network load whose outcome was last reported
        self._commands: dict[str, Callable[[str, list[str]], bool | None]] = {
            "uci": self._uci,
            "debug": self._debug,
            "isready": self._isready,
            "setoption": self._setoption,
            "register": lambda line, args: None,
            "ucinewgame": self._ucinewgame,
            "position": self._position,
            "go": self._go,
            "stop": self._stop,
            "ponderhit": self._ponderhit,
            "quit": self._quit,
            "xboard": lambda line, args: None,  # Arena's probe
        }

    # ---- dispatcher ----------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """Handle one input line; False on ``quit``."""
        args = line.split()
        if not args:
            return True
        if self._pending and not self._busy():
            self._flush_pending()
        word = args[0].lower()
        command = self._commands.get(word)
        if command is None:
            self.info_string(f"unknown command: {line.strip()}")
            return True
        if word in _DEFERRED and self._busy():
            self._pending.append(line)
            self.info_string(f"{word} deferred until the search ends")
            return True
        try:
            return command(line, args[1:]) is not False
        except Exception as exc:  # no input may kill the engine or leave it silent
            log.exception("error handling %r", line)
            self.info_string(f"error in {word}: {exc}")
            return True

    def close(self) -> None:
        """Stop any search and release the session (``quit`` and EOF)."""
        self.session.close()

    def info_string(self, text: str) -> None:
        self.out.line(fmt.format_info_string(text))

    def _busy(self) -> bool:
        """True while a search runs that has not answered yet (one that has is ending: wait for it)."""
        if not self.session.searching:
            return False
        if self._answered.is_set():
            self.session.wait()
            return False
        return True

    def _flush_pending(self) -> None:
        """Apply the commands queued during the last search, in order."""
        self.session.wait()
        pending, self._pending = self._pending, []
        for line in pending:
            self.handle(line)

    # ---- commands ------------------------------------------------------------------------------
    def _uci(self, line: str, args: list[str]) -> None:
        lines = [f"id name {fmt.ENGINE_NAME}", f"id author {fmt.ENGINE_AUTHOR}"]
        lines += [spec.declaration() for spec in self.specs.values()]
        lines.append("uciok")
        self.out.lines(lines)

    def _debug(self, line: str, args: list[str]) -> None:
        self.debug = not args or args[0].lower() != "off"

    def _isready(self, line: str, args: list[str]) -> None:
        if not self.session.searching:
            self._ensure_ready(COMPILED_WAIT_S)
        self.out.line("readyok")

    def _stop(self, line: str, args: list[str]) -> None:
        self.session.stop()

    def _ponderhit(self, line: str, args: list[str]) -> None:
        self.session.ponderhit()

    def _quit(self, line: str, args: list[str]) -> bool:
        return False

    def _ucinewgame(self, line: str, args: list[str]) -> None:
        self.session.new_game()

    # ---- setoption -----------------------------------------------------------------------------
    def _setoption(self, line: str, args: list[str]) -> None:
        try:
            name, raw = fmt.parse_setoption(line)
        except fmt.UciParseError as exc:
            self.info_string(str(exc))
            return
        spec = self.specs.get(name.lower())
        if spec is None:
            self.info_string(f"unknown option {name!r} ignored")
            return
        try:
            value = spec.parse_value(raw)
            self._apply_option(spec.name.lower(), value)
        except (fmt.OptionValueError, ValueError, ImportError) as exc:
            self.info_string(f"option {spec.name} unchanged: {exc}")

    def _apply_option(self, key: str, value: Any) -> None:
        """Set one checked option value (raises ``ValueError`` to refuse it)."""
        if key in _ENGINE_FIELDS:
            self.session.set_options(**{_ENGINE_FIELDS[key]: value})
        elif key in SEARCH_OPTIONS:
            self.session.set_options(search=SEARCH_OPTIONS[key].applied(self.session.options.search, value))
        elif key == "weightsfile":
            if value and not os.path.isfile(value):
                raise ValueError(f"no such file {value!r}")
            self.session.set_options(weights_file=value or None)
        elif key == "uci_limitstrength":
            self.session.set_options(limit_strength=value)
            if value:
                self.info_string(self.session.strength_note())
        elif key == "uci_elo":
            self._set_elo(value)
        elif key == "syzygypath":
            self.session.set_options(syzygy_path=value)
            if self.session.tablebases is not None:
                self.info_string(self.session.tablebases.describe())
        elif key == "bookfile":
            self.session.set_options(book_file=value)
            if self.session.book is not None:
                self.info_string(self.session.book.describe())
        elif key == "ownbook":
            self.session.set_options(own_book=value)
            if value and self.session.book is None:
                self.info_string("OwnBook is on but no BookFile is set: the search plays every move")
        elif key == "policytemperature":
            self.session.set_options(policy_temperature=value / 100)
        elif key == "uci_showwdl":
            self.show_wdl = value
        elif key == "shoginotation":
            self.shogi_notation = value
        elif key == "uci_chess960":
            self.chess960 = value
            self.session.set_options(chess960=value)
            if self.variant == "chess":
                self.session.set_game("chess", **self._game_options())
        elif key == "uci_variant" and value != self.variant:
            old = self.variant
            self.variant = value
            try:
                self.session.set_game(value, **self._game_options())
            except Exception:
                self.variant = old
                raise

    def _set_elo(self, elo: int) -> None:
        """``UCI_Elo``: clamped into the calibrated range, saying so (Stockfish clamps silently)."""
        table = self.session.strength_table()
        if table is None:
            raise ValueError(f"no strength calibration for {self.variant}")
        resolved = table.resolve(elo)
        self.session.set_options(elo=resolved.elo)
        if resolved.note:
            self.info_string(resolved.note)

    def _game_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"max_plies": PROTOCOL_MAX_PLIES}
        if self.variant == "chess":
            options["chess960"] = self.chess960
        return options

    # ---- position ------------------------------------------------------------------------------
    def _position(self, line: str, args: list[str]) -> None:
        try:
            command = fmt.parse_position(args)
            text = self._start_text(command)
        except fmt.UciParseError as exc:
            self.info_string(f"position ignored: {exc}")
            return
        moves = [self._move_in(m) for m in command.moves]
        try:
            self.session.set_position(text, moves)
        except InvalidPositionError as exc:
            self.info_string(f"position ignored, previous position kept: {exc}")
        except IllegalMoveError as exc:
            legal = exc.args[1] if len(exc.args) > 1 and isinstance(exc.args[1], int) else 0
            try:
                self.session.set_position(text, moves[:legal])
            except (InvalidPositionError, IllegalMoveError) as again:
                self.info_string(f"position ignored, previous position kept: {again}")
                return
            self.info_string(f"{exc.args[0]}; position set after the first {legal} moves")

    def _start_text(self, command: fmt.PositionCommand) -> str | None:
        """The game's position text for ``startpos`` / ``fen`` / ``sfen``."""
        if command.text is None:
            return None
        if self.variant == "shogi":
            return fmt.fairy_fen_to_sfen(command.text)
        if command.kind == "sfen":
            raise fmt.UciParseError("sfen positions need UCI_Variant shogi")
        return command.text

    def _move_in(self, text: str) -> str:
        """A move token in the game's own notation (shogi: Fairy-Stockfish coordinates -> USI)."""
        return fmt.fairy_to_usi_move(text) if self.variant == "shogi" else text

    def _move_out(self, state: GameState[Any], move: Any) -> str:
        """A native move in the notation the GUI reads."""
        text = state.move_to_text(move)
        if self.variant == "shogi" and self.shogi_notation == "uci":
            return fmt.usi_to_fairy_move(text)
        return text

    # ---- go ------------------------------------------------------------------------------------
    def _go(self, line: str, args: list[str]) -> None:
        received = self.source.arrival()  # the GUI's clock runs from here
        if self.session.searching:  # a go without stop: the running search answers first
            self.session.stop()
        if self._pending or self.session.searching:
            self._flush_pending()
        go = fmt.parse_go(args)
        for warning in go.warnings:
            self.info_string(warning)
        if go.perft is not None:
            self._perft(go.perft)
            return
        state = self.session.state
        searchmoves = self._searchmoves(state, go.searchmoves)
        if self._play_from_book(go, state, searchmoves):
            return
        self._ensure_ready()
        limits = dataclasses.replace(fmt.go_limits(go, state.side_to_move, searchmoves), received_at=received)
        self._answered.clear()
        try:
            self.session.go(limits, self._on_info(state), self._on_done(state), finite_default=True)
        except Exception as exc:
            log.exception("go failed")
            self.info_string(f"search failed to start: {exc}")
            self._answer(state, None, None)

    def _play_from_book(self, go: fmt.GoCommand, state: GameState[Any], searchmoves: list[Any]) -> bool:
        """Answer a finite ``go`` with a move of the opening book (``OwnBook``, ``BookFile``; chess), said
        in ``info string``; False (search) when out of book.  ``go infinite``, ``go ponder`` and ``go
        mate`` always search: they ask for analysis, not a move."""
        if go.infinite or go.ponder or go.mate is not None:
            return False
        choice = self.session.book_move(searchmoves)
        if choice is None:
            return False
        self._answered.clear()
        text = self._move_out(state, choice.move)
        self.info_string(f"book move {text} (weight {choice.weight} of {choice.total})")
        self._answer(state, choice.move, None)
        return True

    def _perft(self, depth: int) -> None:
        """``go perft N``: leaf counts per root move in Stockfish's format (no ``bestmove``)."""
        state = self.session.state.copy()
        counts = [(self._move_out(state, move), n) for move, n in fast_perft_divide(state, depth)]
        self.out.lines(format_divide(counts))

    def _searchmoves(self, state: GameState[Any], texts: list[str]) -> list[Any]:
        moves: list[Any] = []
        for text in texts:
            try:
                move = state.parse_move(self._move_in(text))
            except IllegalMoveError:
                self.info_string(f"searchmoves: {text} is not legal here, dropped")
                continue
            if move not in moves:
                moves.append(move)
        if texts and not moves:
            self.info_string("searchmoves: no legal move left, searching all moves")
        return moves

    def _ensure_ready(self, compiled_wait_s: float = 0.0) -> None:
        """Load the network if needed (and wait up to ``compiled_wait_s`` for the compiled search, see
        ``Session.ensure_ready``); say once per load what the engine plays with."""
        note = self.session.ensure_ready(compiled_wait_s)
        if self.session.network_loads != self._reported:
            self._reported = self.session.network_loads
            self.info_string(note)

    def _on_info(self, state: GameState[Any]) -> Callable[[SearchInfo], None]:
        def on_info(info: SearchInfo) -> None:
            try:
                pvs = [self._pv_texts(state, line.pv) for line in info.lines]
                lines = fmt.format_info(info, pvs, self.show_wdl)
                if lines:
                    self.out.lines(lines)
            except Exception:  # a report must never end the search
                log.exception("info report failed")

        return on_info

    def _pv_texts(self, state: GameState[Any], pv: list[Any]) -> list[str]:
        board = state.copy()
        texts: list[str] = []
        for move in pv:
            texts.append(self._move_out(board, move))
            board.push(move)
        return texts

    def _on_done(self, state: GameState[Any]) -> Callable[[SearchResult], None]:
        def on_done(result: SearchResult) -> None:
            if self.debug:
                self.info_string(f"search ended: {result.stop_reason}")
            self._answer(state, result.best_move, result.ponder_move)

        return on_done

    def _answer(self, state: GameState[Any], best: Any | None, ponder: Any | None) -> None:
        """Send the one ``bestmove`` of a ``go``.

        ``_answered`` is set just before the write: a GUI may send its next command the moment it reads
        ``bestmove``, and that command must then wait for this (ending) thread, not be deferred.
        """
        try:
            lines = self._answer_lines(state, best, ponder)
        except Exception:  # never leave the GUI without an answer
            log.exception("bestmove failed")
            lines = ["bestmove (none)"]
        self._answered.set()
        self.out.lines(lines)

    def _answer_lines(self, state: GameState[Any], best: Any | None, ponder: Any | None) -> list[str]:
        lines: list[str] = []
        if best is None:
            legal = state.legal_moves()
            outcome = state.outcome()
            if not legal:
                return fmt.format_no_move(mated=outcome is not None and outcome.value < 0)
            # The search always answers when moves exist (a root over by a rule is searched too);
            # this only guards against a failed search leaving the GUI without a move.
            lines.append(fmt.format_info_string("no search result; playing a legal move"))
            best, ponder = legal[0], None
        ponder_text = None
        if ponder is not None:
            after = state.copy()
            after.push(best)
            ponder_text = self._move_out(after, ponder)
        lines.append(fmt.format_bestmove(self._move_out(state, best), ponder_text))
        return lines
