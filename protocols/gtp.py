"""GTP v2 (Go Text Protocol) for Tabula: :class:`GtpHandler`, whose command handlers only call the
:class:`~engine.session.Session`.  The pure parse/format functions are in :mod:`protocols.gtp_format`,
the time keeping in :mod:`protocols.gtp_time`.

Protocol (see ``docs/protocols.md``, GTP section, for the checklist this module is tested against)
---------------------------------------------------------------------------------------------
* Each input line is preprocessed (:func:`preprocess`): control characters other than HT/LF are
  dropped, everything from ``#`` on is a comment, HT becomes a space, blank lines are ignored.
* A command is ``[id] name [args]``; the reply is ``=[id] result`` or ``?[id] message`` followed by one
  empty line.  Multi-line replies never contain an empty line.  Command names are case-sensitive
  (``PLAY`` is unknown); colours and vertices are not (``b``/``Black``, ``d4``/``D4``).
* Vertices: column letter ``A``..``T`` skipping ``I``, row 1 at the bottom, or ``pass``.  ``play`` answers
  ``? syntax error`` for something that is not a colour or a vertex (``I5``, ``x``), and ``? illegal
  move`` for a vertex off the board, an occupied point, suicide or a superko repetition; the board is
  then unchanged.  Two moves of one colour in a row are legal.
* ``genmove`` works for either colour: when the other colour is to move (or the game has ended), a
  copy of the board with that colour to move and no history is searched; the session's position is
  not touched until the move is decided (:func:`decide_genmove`), and superko is checked against the
  real history then.  It answers a vertex, ``pass`` or ``resign`` (when the chosen move's value for
  the engine is below ``-resign_threshold``; 0 never resigns).
* Thinking time: ``time_settings`` / ``kgs-time_settings`` / ``time_left`` feed a
  :class:`~engine.search.limits.Clock` (see :class:`TimeKeeper`); with no time control a move gets the
  time manager's finite default (5 s).
* ``boardsize`` accepts every size that has a network: the shipped ``weights/go<N>.onnx`` files, or the
  size of the ``--weights`` network.  When no Go network exists at all every size the rules support
  (2..19) is accepted and the engine plays with uniform priors (a warning says so).
* ``komi`` accepts any finite number and scores exactly with it; when the network was trained with
  another komi (its ``tabula.komi`` metadata) a warning goes to stderr.
* ``final_score`` / ``final_status_list``: under area counting (``--scoring area``, the default, or
  ``kata-set-rules chinese``) dead stones are removed first, as GUIs, gogui-twogtp's referee, KGS and
  people count: a Monte-Carlo ownership estimate (:mod:`engine.games.go_ownership`) calls a chain dead
  when random play-outs give its points to the opponent; ``seki`` lists the alive chains that neither
  side owns.  Under Tromp-Taylor (``--scoring tromp-taylor``, CGOS, or ``kata-set-rules
  tromp-taylor``) every stone on the board is alive.  Under area scoring ``genmove`` passes only in a
  settled position (no dead stone left, every empty point owned): a pass the search chose in an
  unsettled one is replaced by a ``kgs-genmove_cleanup`` search, since the network learnt Tromp-Taylor
  counting.  The search itself scores its two-pass endings by Tromp-Taylor under either rule.
* ``kgs-genmove_cleanup``: ``genmove`` with pass and the filling of one's own single-point eyes
  excluded while another legal move exists (so dead stones get captured before the game ends).
* ``lz-analyze [colour] [interval]`` (Leela Zero style; interval in centiseconds, default 100, also
  ``interval N``): replies ``=`` at once, then writes one line per interval of the form
  ``info move D4 visits 12 winrate 5123 prior 1502 order 0 pv D4 Q16 info move Q16 ...`` (winrate and
  prior in 1/10000, winrate for the analysed colour), until any input line arrives; the search then
  stops, an empty line ends the stream and the line is handled as a command.
* ``kata-analyze [colour] [interval] [ownership true]`` (KataGo style; also ``minmoves`` / ``maxmoves``
  as in ``lz-analyze``, and KataGo's other ``KEY true|false`` switches accepted without effect): the same
  stream with lines ``info move D4 visits 12 utility 0.024600 winrate 0.512300 prior 0.150200 order 0
  pv D4 Q16 info move ...`` (floats; utility the move's mean value in [-1, 1]) and, with ``ownership
  true``, ``ownership`` and ``N*N`` floats in [-1, 1] row by row from the top-left (+1: the analysed
  colour's), the root position's ownership from the network's head (averaged over the 8 symmetries), or
  from random play-outs for a network without one; no score fields (the search keeps no score).
* ``lz-genmove_analyze`` / ``kata-genmove_analyze [colour] [interval] ...``: ``genmove`` (the side to
  move by default) that replies ``=`` at once, streams the ``lz-analyze`` / ``kata-analyze`` lines while
  it searches on its clock, then ``play <vertex|pass|resign>`` and the empty line (KataGo, Leela Zero);
  input does not end it.
* ``kata-set-rules`` / ``kgs-rules`` / ``kata-get-rules``: the counting above, changed during a session
  (:mod:`protocols.gtp_rules`: Chinese and the other area rules, or Tromp-Taylor; territory rules are
  refused).
* ``gogui-analyze_commands``: GoGui's analyze menu (:mod:`protocols.gtp_gogui`), with the boards
  ``tabula-ownership`` and ``tabula-policy [percent]``.
* ``loadsgf file [move_number]`` reads the main line of an SGF file (:mod:`protocols.sgf`): size, komi,
  setup stones and the moves before ``move_number``.
"""

from __future__ import annotations

import dataclasses
import enum
import logging
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from engine.evaluator import Evaluator
from engine.games import get_game
from engine.games.base import GameState, IllegalMoveError, InvalidPositionError
from engine.games.go import GoState
from engine.games.go_ownership import Judgement, judge, ownership
from engine.network import NetworkError, read_metadata
from engine.ownership import network_ownership
from engine.search.limits import Clock, SearchLimits
from engine.search.searcher import InfoCallback, SearchInfo, SearchResult
from engine.session import Session
from protocols.gtp_format import (
    BLACK,
    ENGINE_NAME,
    MAX_SIZE,
    MIN_SIZE,
    PROTOCOL_VERSION,
    WHITE,
    AnalyzeRequest,
    GtpError,
    format_analysis,
    format_board,
    format_kata_analysis,
    format_reply,
    format_score,
    format_vertex,
    free_handicap_points,
    parse_analyze_args,
    parse_colour,
    parse_command,
    parse_float,
    parse_int,
    parse_vertex,
)
from protocols.gtp_gogui import ANALYZE_COMMANDS, format_dboard, format_percent_sboard, policy_map
from protocols.gtp_rules import AREA, KATA_RULES, KGS_RULES, parse_rules, rules_json
from protocols.gtp_time import TimeKeeper
from protocols.loop import Handler, LineSource, Output
from protocols.settings import ProtocolSettings
from protocols.sgf import SgfError, SgfGame, read_game
from weights import default_network

#: The longest a search waits for the compiled search's kernels still loading (seconds; kernels from
#: numba's cache take about a second from start-up, a first run compiles for about 20 s); see
#: :func:`compiled_wait_s`.
COMPILED_WAIT_S = 3.0

#: The largest SGF file ``loadsgf`` reads.
MAX_SGF_BYTES = 4 * 1024 * 1024
#: Random play-outs behind a pass decision and behind ``final_score`` / ``final_status_list`` (area), on
#: 9x9; larger boards use fewer (a 19x19 play-out is about 5 times longer): see :func:`playouts_for`.
PASS_CHECK_PLAYOUTS = 64
FINAL_PLAYOUTS = 128

log = logging.getLogger("tabula.gtp")


def network_sizes(weights_file: str | None) -> list[int]:
    """Board sizes that have a Go network: the ``--weights`` network's, else the shipped ones."""
    if weights_file:
        try:
            meta = read_metadata(weights_file)
            if meta.game == "go":
                return [meta.board_size]
            log.warning("--weights %s is a %s network, not a Go network", weights_file, meta.game)
        except (NetworkError, OSError) as exc:
            log.warning("cannot read --weights %s: %s", weights_file, exc)
    return [n for n in range(MIN_SIZE, MAX_SIZE + 1) if default_network(f"go{n}") is not None]


class GtpHandler(Handler):
    """GTP v2 over a :class:`Session` of Go."""

    def __init__(self, output: Output, source: LineSource, settings: ProtocolSettings) -> None:
        self.output = output
        self.source = source
        self.settings = settings
        self.komi = settings.go_komi
        self.scoring = settings.go_scoring  # kata-set-rules / kgs-rules change it
        sizes = network_sizes(settings.engine.weights_file)
        if not sizes:
            log.warning("no Go network found: every board size is accepted and played with uniform priors")
        self.sizes = sizes or list(range(MIN_SIZE, MAX_SIZE + 1))
        size = settings.go_board_size
        if size not in self.sizes:
            log.warning(
                "--boardsize %d has no network (sizes: %s): starting at %d",
                size,
                " ".join(map(str, self.sizes)),
                max(self.sizes),
            )
            size = max(self.sizes)
        self.session = Session("go", settings.engine, {"board_size": size, "komi": self.komi})
        self.session.start_loading_compiled_search()  # GTP has no isready: from the start, in the background
        self._report_strength()
        self.time = TimeKeeper()
        self._analysis: _Analysis | None = None
        self._command_id: int | None = None
        self._warned_komi: tuple[float, float] | None = None
        self.commands: dict[str, Callable[[tuple[str, ...]], str]] = {
            "protocol_version": lambda a: PROTOCOL_VERSION,
            "name": lambda a: ENGINE_NAME,
            "version": lambda a: _version(),
            "known_command": self.cmd_known_command,
            "list_commands": lambda a: "\n".join(self.commands),
            "quit": lambda a: "",
            "boardsize": self.cmd_boardsize,
            "clear_board": self.cmd_clear_board,
            "komi": self.cmd_komi,
            "play": self.cmd_play,
            "genmove": self.cmd_genmove,
            "kgs-genmove_cleanup": self.cmd_genmove_cleanup,
            "undo": self.cmd_undo,
            "time_settings": self.cmd_time_settings,
            "kgs-time_settings": self.cmd_kgs_time_settings,
            "time_left": self.cmd_time_left,
            "final_score": self.cmd_final_score,
            "final_status_list": self.cmd_final_status_list,
            "showboard": self.cmd_showboard,
            "fixed_handicap": self.cmd_fixed_handicap,
            "place_free_handicap": self.cmd_place_free_handicap,
            "set_free_handicap": self.cmd_set_free_handicap,
            "loadsgf": self.cmd_loadsgf,
            "lz-analyze": self.cmd_lz_analyze,
            "kata-analyze": self.cmd_kata_analyze,
            "lz-genmove_analyze": self.cmd_lz_genmove_analyze,
            "kata-genmove_analyze": self.cmd_kata_genmove_analyze,
            "kata-set-rules": self.cmd_kata_set_rules,
            "kata-get-rules": lambda a: rules_json(self.scoring),
            "kgs-rules": self.cmd_kgs_rules,
            "gogui-analyze_commands": lambda a: "\n".join(ANALYZE_COMMANDS),
            "tabula-ownership": self.cmd_ownership,
            "tabula-policy": self.cmd_policy,
        }

    def _report_strength(self) -> None:
        """``--elo`` / ``--weakening``: say on stderr what the engine plays at (GTP has no info line),
        as a warning when the request could not be met as asked (no table, clamped, a placeholder)."""
        options = self.settings.engine
        if not options.limit_strength and options.weakening is None:
            return
        resolved = self.session.resolved_strength()
        unmet = isinstance(resolved, str) or (resolved is not None and resolved.note is not None)
        (log.warning if unmet else log.info)("%s", self.session.strength_note())

    # ---- dispatcher ----------------------------------------------------------------------------------
    @property
    def state(self) -> GoState:
        """The session's position."""
        return _go_state(self.session.state)

    @property
    def size(self) -> int:
        return int(self.session.game.info.board_size)

    def handle(self, line: str) -> bool:
        """Handle one raw line; any line ends a running analysis first.  Returns False on ``quit``."""
        if self._analysis is not None:
            self._stop_analysis()
        command = parse_command(line)
        if command is None:
            return True
        handler = self.commands.get(command.name)
        if handler is None:
            self._reply(command.id, False, "unknown command" if command.name else "syntax error")
            return True
        self._command_id = command.id
        try:
            result = handler(command.args)
        except GtpError as exc:
            self._reply(command.id, False, str(exc))
            return True
        except Exception as exc:  # never crash, never stay silent
            log.exception("GTP command %r failed", line)
            self._reply(command.id, False, f"internal error: {exc}")
            return True
        if result is STREAMING:
            return True  # replied already; the stream ends at the next input line
        self._reply(command.id, True, result)
        return command.name != "quit"

    def close(self) -> None:
        if self._analysis is not None:
            self._stop_analysis()
        self.session.close()

    def _reply(self, cid: int | None, ok: bool, text: str = "") -> None:
        self.output.lines(format_reply(cid, ok, text))

    # ---- administrative -------------------------------------------------------------------------------
    def cmd_known_command(self, args: tuple[str, ...]) -> str:
        return "true" if args and args[0] in self.commands else "false"

    def cmd_boardsize(self, args: tuple[str, ...]) -> str:
        if len(args) != 1:
            raise GtpError("syntax error")
        size = parse_int(args[0], "unacceptable size")
        if size not in self.sizes:
            raise GtpError("unacceptable size")
        self.session.set_game("go", board_size=size, komi=self.komi)
        return ""

    def cmd_clear_board(self, args: tuple[str, ...]) -> str:
        self.session.new_game()
        return ""

    def cmd_komi(self, args: tuple[str, ...]) -> str:
        if len(args) != 1:
            raise GtpError("syntax error")
        komi = parse_float(args[0])
        state = self.state
        self.komi = komi
        self.session.set_game("go", board_size=self.size, komi=komi)
        state.komi = komi
        self.session.replace_state(state)
        self._check_network_komi()
        return ""

    def _check_network_komi(self) -> None:
        """Warn (stderr) when the loaded network learned with another komi than the game's."""
        meta = getattr(self.session.evaluator, "metadata", None)
        net_komi = getattr(meta, "komi", None)
        if net_komi is None or float(net_komi) == self.komi:
            return
        if self._warned_komi != (self.komi, float(net_komi)):
            self._warned_komi = (self.komi, float(net_komi))
            log.warning(
                "komi %g differs from the komi %g the network was trained with: its values assume %g; "
                "the game is still scored exactly with komi %g",
                self.komi,
                net_komi,
                net_komi,
                self.komi,
            )

    # ---- moves -------------------------------------------------------------------------------------
    def _colour_and_point(self, args: tuple[str, ...]) -> tuple[int, int]:
        if len(args) != 2:
            raise GtpError("syntax error")
        return parse_colour(args[0]), parse_vertex(args[1], self.size)

    def cmd_play(self, args: tuple[str, ...]) -> str:
        """``play``: any move the basic rules allow (on the board, empty, not suicide).  A move that
        repeats an earlier position is accepted too, as KataGo's GTP does: the opponent, the GUI or the
        referee may play under rules without positional superko (GNU Go, GoGui's board), and refusing it
        ends the game there.  Tabula's own moves keep positional superko (``genmove``)."""
        colour, point = self._colour_and_point(args)
        if not self.state.is_legal_for(colour, point, superko=False):
            raise GtpError("illegal move")
        self._play(colour, point)
        return ""

    def _play(self, colour: int, point: int) -> None:
        """Play a move for ``colour`` (legal but perhaps a superko repetition): through the session when
        it is that colour's turn and the move is legal there (the search tree is kept), else on a copy
        installed as the new position (a repetition is not among a tree's root moves)."""
        if self.state.side_to_move == colour and self.state.is_legal_for(colour, point):
            self.session.push_move(point)
            return
        state = self.state.copy()
        state.play_as(colour, point, superko=False)
        self.session.replace_state(state)

    def cmd_undo(self, args: tuple[str, ...]) -> str:
        if self.state.ply == 0:
            raise GtpError("cannot undo")
        state = self.state.copy()
        state.pop()
        self.session.replace_state(state)
        return ""

    def cmd_genmove(self, args: tuple[str, ...]) -> str:
        return self._genmove(args, cleanup=False)

    def cmd_genmove_cleanup(self, args: tuple[str, ...]) -> str:
        return self._genmove(args, cleanup=True)

    def _genmove(self, args: tuple[str, ...], cleanup: bool) -> str:
        """``genmove`` / ``kgs-genmove_cleanup``: search, decide (nothing changes until then), apply."""
        if len(args) != 1:
            raise GtpError("syntax error")
        return self._generate(parse_colour(args[0]), cleanup)

    def _generate(self, colour: int, cleanup: bool, on_info: InfoCallback | None = None) -> str:
        """Search ``colour``'s move, decide (nothing changes until then), play it; its vertex,
        ``pass`` or ``resign``.  ``on_info``: the searches' progress reports."""
        result = self._search_move(colour, cleanup, on_info=on_info)
        decision = decide_genmove(result, colour, self.state, self.settings.resign_threshold)
        unfinished = (
            self._work_left(colour) if decision.action is GenmoveAction.PASS and not cleanup else None
        )
        if unfinished is not None:
            cleanup_result = self._search_move(colour, cleanup=True, area=unfinished.owners, on_info=on_info)
            if cleanup_result is not None:
                decision = decide_genmove(cleanup_result, colour, self.state, self.settings.resign_threshold)
        return self._apply_genmove(colour, decision)

    def _work_left(self, colour: int) -> Judgement | None:
        """Under area scoring, a pass the search chose waits while ``colour`` has work left by the
        referee's count (:meth:`Judgement.work_left`: an opponent stone counted dead still on the
        board, a neutral point): a network that learnt Tromp-Taylor counting thinks dead stones count,
        and a referee removes them.  Returns that count when play goes on (its ``owners`` keep the
        clean-up in ``colour``'s own area: a game against GNU Go had 40 throw-ins into the opponent's
        after GNU Go passed, each a new dead stone that kept the position open), else ``None``."""
        started = time.perf_counter()
        judgement = None
        if counting_removes_dead_stones(self.state, self.scoring):
            judgement = self._judgement(PASS_CHECK_PLAYOUTS)
            if not judgement.work_left(self.state, colour):
                judgement = None
        self.time.spent(colour, time.perf_counter() - started)  # the clock runs while it looks
        return judgement

    def _judgement(self, playouts: int) -> Judgement:
        return judge_position(self.state, playouts, self.session.evaluator)

    def _search_move(
        self,
        colour: int,
        cleanup: bool,
        area: np.ndarray | None = None,
        on_info: InfoCallback | None = None,
    ) -> SearchResult | None:
        """Search a position with ``colour`` to move under its clock (the session's position is left
        as it is); ``None`` when cleanup has no move but pass.  ``area`` (a count's owners, int8
        ``[N*N]``): the clean-up's moves are the points it gives to ``colour`` or to nobody.
        ``on_info``: the search's progress reports (``*-genmove_analyze``)."""
        turned = self._turned_position(colour)
        position = self.state if turned is None else turned
        if cleanup:
            moves = self._cleanup_moves(position, colour)
            if area is not None:
                theirs = -1 if colour == BLACK else 1
                moves = [m for m in moves if area[m] != theirs]
            searchmoves = tuple(moves)
        else:
            searchmoves = self._eye_keeping_moves(position)
        if cleanup and not searchmoves:
            return None
        started = time.perf_counter()
        clock = self.time.clock(colour)
        self.session.ensure_ready(compiled_wait_s(clock))
        self._check_network_komi()
        limits = SearchLimits(clock=clock_less(clock, time.perf_counter() - started), searchmoves=searchmoves)
        result = self.session.search(limits, on_info, finite_default=True, position=turned)
        self.time.spent(colour, time.perf_counter() - started)
        return result

    def _apply_genmove(self, colour: int, decision: GenmoveDecision) -> str:
        """Play the decided move (a pass too) for ``colour`` and name it; ``resign`` plays nothing."""
        if decision.point is None:
            return "resign"
        self._play(colour, decision.point)
        return format_vertex(decision.point, self.size)

    def _turned_position(self, colour: int) -> GoState | None:
        """The board to search when the session's position is not one where ``colour`` is to move and
        the game goes on; ``None`` when it is.

        When the other colour is to move, or the game has ended (two passes, move limit) while the
        controller still asks for moves (KGS cleanup after a dead-stone dispute), the same board with
        ``colour`` to move and no history is searched.  (Adding an opponent pass instead would keep
        the history but make a pass look like the game-ending second pass.)  Superko is then checked
        against the real history when the move is played.
        """
        state = self.state
        if state.side_to_move == colour and state.outcome() is None:
            return None
        fields = state.to_text().split()
        fields[2] = "b" if colour == BLACK else "w"
        turned = _go_state(self.session.game.state_from_text(" ".join(fields)))
        turned.komi = state.komi
        return turned

    def _eye_keeping_moves(self, position: GoState) -> tuple[int, ...]:
        """With ``go_keep_eyes``: the legal moves of the side to move in ``position`` less those into its
        own true eyes (``GoState.true_eyes``; pass stays), as the searchmoves of a ``genmove``; ``()``
        (every move) when none is such a move or the setting is off."""
        if not self.settings.go_keep_eyes:
            return ()
        moves = position.legal_moves()
        kept = position.without_eye_fills(moves)
        return () if len(kept) == len(moves) else tuple(kept)

    def _cleanup_moves(self, position: GoState, colour: int) -> list[int]:
        """Legal moves of ``colour`` (to move in ``position``) except pass and filling its own
        single-point eyes."""
        pass_point = self.size * self.size
        return [m for m in position.legal_moves() if m != pass_point and not position.is_own_eye(m, colour)]

    # ---- time ---------------------------------------------------------------------------------------
    def cmd_time_settings(self, args: tuple[str, ...]) -> str:
        if len(args) != 3:
            raise GtpError("syntax error")
        main, byo, stones = parse_float(args[0]), parse_float(args[1]), parse_int(args[2])
        if main < 0 or byo < 0 or stones < 0:
            raise GtpError("syntax error")
        self.time.set_gtp(main, byo, stones)
        return ""

    def cmd_kgs_time_settings(self, args: tuple[str, ...]) -> str:
        if not args:
            raise GtpError("syntax error")
        system = args[0].lower()
        numbers = args[1:]
        wanted = {"none": 0, "absolute": 1, "byoyomi": 3, "canadian": 3}
        if system not in wanted or len(numbers) != wanted[system]:
            raise GtpError("syntax error")
        if system == "none":
            self.time.set("none")
        elif system == "absolute":
            self.time.set("absolute", parse_float(numbers[0]))
        else:
            main, byo, count = parse_float(numbers[0]), parse_float(numbers[1]), parse_int(numbers[2])
            if main < 0 or byo < 0 or count < 0:
                raise GtpError("syntax error")
            self.time.set(system, main, byo, count)
        return ""

    def cmd_time_left(self, args: tuple[str, ...]) -> str:
        if len(args) != 3:
            raise GtpError("syntax error")
        colour, secs, stones = parse_colour(args[0]), parse_float(args[1]), parse_int(args[2])
        self.time.time_left(colour, secs, stones)
        return ""

    # ---- end of game, board ------------------------------------------------------------------------
    def cmd_final_score(self, args: tuple[str, ...]) -> str:
        if self.scoring == AREA:
            return format_score(self._judgement(FINAL_PLAYOUTS).score)
        return format_score(self.state.score())

    def cmd_final_status_list(self, args: tuple[str, ...]) -> str:
        if len(args) != 1 or args[0].lower() not in ("alive", "dead", "seki"):
            raise GtpError("syntax error")
        kind = args[0].lower()
        if self.scoring == AREA:
            judgement = self._judgement(FINAL_PLAYOUTS)
            points = {"alive": judgement.alive, "dead": judgement.dead, "seki": judgement.seki}[kind]
        else:  # Tromp-Taylor: every stone on the board is alive
            board = self.state.board_array().reshape(-1)
            points = [int(p) for p in np.flatnonzero(board)] if kind == "alive" else []
        return " ".join(format_vertex(p, self.size) for p in points)

    def cmd_showboard(self, args: tuple[str, ...]) -> str:
        state = self.state
        return "\n" + "\n".join(format_board(state.board_array(), self.size, state.side_to_move, state.komi))

    # ---- handicap ------------------------------------------------------------------------------------
    def _require_empty_board(self) -> None:
        if self.state.ply > 0 or self.state.board_array().any():
            raise GtpError("board not empty")

    def _place_handicap(self, points: list[int]) -> None:
        state = _go_state(self.session.game.new_state())
        state.place_handicap(points)
        self.session.replace_state(state)

    def cmd_fixed_handicap(self, args: tuple[str, ...]) -> str:
        if len(args) != 1:
            raise GtpError("syntax error")
        count = parse_int(args[0])
        self._require_empty_board()
        try:
            points = self.state.fixed_handicap_points(count)
        except ValueError:
            raise GtpError("invalid number of stones") from None
        self._place_handicap(points)
        return " ".join(format_vertex(p, self.size) for p in points)

    def cmd_place_free_handicap(self, args: tuple[str, ...]) -> str:
        if len(args) != 1:
            raise GtpError("syntax error")
        count = parse_int(args[0])
        self._require_empty_board()
        size = self.size
        if not 2 <= count <= size * size - 1:
            raise GtpError("invalid number of stones")
        points = free_handicap_points(count, size, self.state.fixed_handicap_points)
        self._place_handicap(points)
        return " ".join(format_vertex(p, size) for p in points)

    def cmd_set_free_handicap(self, args: tuple[str, ...]) -> str:
        size = self.size
        try:
            points = [parse_vertex(a, size) for a in args]
        except GtpError:
            raise GtpError("bad vertex list") from None
        self._require_empty_board()
        if (
            len(points) < 2
            or len(set(points)) != len(points)
            or size * size in points
            or len(points) >= size * size
        ):
            raise GtpError("bad vertex list")
        self._place_handicap(points)
        return ""

    # ---- loadsgf -----------------------------------------------------------------------------------
    def cmd_loadsgf(self, args: tuple[str, ...]) -> str:
        if not 1 <= len(args) <= 2:
            raise GtpError("syntax error")
        move_number = parse_int(args[1]) if len(args) == 2 else None
        path = Path(args[0])
        try:
            # Only regular files of a sane size: `loadsgf /dev/zero` must not hang the engine.
            if not path.is_file():
                raise OSError("no such file" if not path.exists() else "not a regular file")
            if path.stat().st_size > MAX_SGF_BYTES:
                raise OSError("larger than 4 MB")
            game = read_game(path.read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:  # the answer names the file and the fault; the game is kept
            raise GtpError(f"cannot load file {args[0]}: {exc.strerror or exc}") from None
        except SgfError as exc:
            raise GtpError(f"cannot load file {args[0]}: {exc}") from None
        if game.size not in self.sizes:
            sizes = ", ".join(map(str, self.sizes))
            raise GtpError(f"unacceptable size: {args[0]} is {game.size}x{game.size} (sizes: {sizes})")
        komi = self.komi if game.komi is None else game.komi
        state = self._sgf_state(game, komi, move_number, args[0])
        self.komi = komi
        self.session.set_game("go", board_size=game.size, komi=komi)
        self.session.replace_state(state)
        return ""

    def _sgf_state(self, game: SgfGame, komi: float, move_number: int | None, name: str) -> GoState:
        """The position of ``game`` (the file ``name``) before move ``move_number`` (all moves when
        ``None``)."""
        size = game.size
        go = get_game("go", board_size=size, komi=komi)
        moves = game.moves if move_number is None else game.moves[: max(0, move_number - 1)]
        rows = [["."] * size for _ in range(size)]
        for x, y in game.black_setup:
            rows[y][x] = "X"
        for x, y in game.white_setup:
            rows[y][x] = "O"
        if game.player_to_move is not None:
            first = game.player_to_move
        elif game.moves:
            first = game.moves[0][0]
        else:
            first = WHITE if game.black_setup and not game.white_setup else BLACK
        text = f"{size} {komi!r} {'b' if first == BLACK else 'w'} {'/'.join(''.join(r) for r in rows)}"
        try:
            state = _go_state(go.state_from_text(text))
            for colour, point in moves:
                p = size * size if point is None else point[1] * size + point[0]
                state.play_as(colour, p, superko=False)  # as `play`: what the game record holds happened
        except (InvalidPositionError, IllegalMoveError) as exc:
            raise GtpError(f"cannot load file {name}: {exc}") from None
        return state

    # ---- analysis ----------------------------------------------------------------------------------
    def cmd_lz_analyze(self, args: tuple[str, ...]) -> str:
        """Reply ``=`` at once and stream Leela Zero style analysis lines until the next input line
        (module doc)."""
        request = parse_analyze_args(args)
        size = self.size
        return self._analyze(
            request, lambda info: format_analysis(info, size, request.min_moves, request.max_moves)
        )

    def cmd_kata_analyze(self, args: tuple[str, ...]) -> str:
        """``lz-analyze`` with KataGo's line format (module doc), and ``ownership true``: every point's
        predicted final owner, from the analysed colour's view, appended to each line."""
        request = parse_analyze_args(args, kata=True)
        own = None
        if request.ownership:  # before the search: its network calls must not run beside this one
            self.session.ensure_ready()
            own = self._analysed_ownership(request.colour)
        size = self.size
        return self._analyze(
            request, lambda info: format_kata_analysis(info, size, own, request.min_moves, request.max_moves)
        )

    def cmd_lz_genmove_analyze(self, args: tuple[str, ...]) -> str:
        """``genmove`` that streams ``lz-analyze`` lines while it searches, then ``play <vertex>``
        (module doc)."""
        request = parse_analyze_args(args)
        size = self.size
        return self._genmove_analyze(
            request,
            lambda own: lambda info: format_analysis(info, size, request.min_moves, request.max_moves),
        )

    def cmd_kata_genmove_analyze(self, args: tuple[str, ...]) -> str:
        """``lz-genmove_analyze`` with ``kata-analyze``'s lines (``ownership true`` included)."""
        request = parse_analyze_args(args, kata=True)
        size = self.size
        return self._genmove_analyze(
            request,
            lambda own: (
                lambda info: format_kata_analysis(info, size, own, request.min_moves, request.max_moves)
            ),
        )

    def _genmove_analyze(
        self,
        request: AnalyzeRequest,
        line_for: Callable[[np.ndarray | None], Callable[[SearchInfo], str]],
    ) -> str:
        """Reply ``=`` (no empty line), search and play the move of ``request.colour`` (default: the
        side to move) as ``genmove`` does on its clock, writing ``line(info)`` every
        ``request.interval_s`` (``line = line_for(ownership)``, the ownership of the position when
        ``request.ownership``, its time taken from the mover's clock), then ``play <vertex|pass|resign>``
        and the empty line.  Unlike ``lz-analyze`` input does not end it (as KataGo and Leela Zero)."""
        session = self.session
        colour = self.state.side_to_move if request.colour is None else request.colour
        own = None
        if request.ownership:
            started = time.perf_counter()
            session.ensure_ready()
            own = self._analysed_ownership(colour)
            self.time.spent(colour, time.perf_counter() - started)
        line = line_for(own)
        options = session.options
        self.output.line(format_reply(self._command_id, True)[0])  # the stream and `play` follow

        def on_info(info: SearchInfo) -> None:
            text = line(info)
            if text:
                self.output.line(text)

        session.set_options(multipv=self.size * self.size + 1, info_interval_s=request.interval_s)
        try:
            move = self._generate(colour, cleanup=False, on_info=on_info)
        except Exception:  # "=" is out: end the reply rather than answer twice
            log.exception("genmove_analyze failed")
            self.output.line("")
            return STREAMING
        finally:
            session.set_options(multipv=options.multipv, info_interval_s=options.info_interval_s)
        self.output.lines([f"play {move}", ""])
        return STREAMING

    # ---- rules -------------------------------------------------------------------------------------
    def cmd_kata_set_rules(self, args: tuple[str, ...]) -> str:
        """``kata-set-rules <name>``: the counting of ``final_score`` / ``final_status_list`` and of the
        pass decision (:mod:`protocols.gtp_rules`); the board is unchanged."""
        self.scoring = parse_rules(args, KATA_RULES)
        return ""

    def cmd_kgs_rules(self, args: tuple[str, ...]) -> str:
        """``kgs-rules chinese|aga|new_zealand`` (kgsGtp): area counting; ``japanese`` is refused."""
        self.scoring = parse_rules(args, KGS_RULES)
        return ""

    # ---- GoGui analyze commands ----------------------------------------------------------------------
    def cmd_ownership(self, args: tuple[str, ...]) -> str:
        """``tabula-ownership``: every point's predicted final owner, +1 black's, as a GoGui ``dboard``
        (the network's ownership head, else random play-outs, as ``final_status_list``)."""
        if args:
            raise GtpError("syntax error")
        self.session.ensure_ready()
        own = position_ownership(self.state, PASS_CHECK_PLAYOUTS, self.session.evaluator)
        return format_dboard(own, self.size)

    def cmd_policy(self, args: tuple[str, ...]) -> str:
        """``tabula-policy [percent]``: the network's prior for the side to move's next move on every
        point, as a GoGui ``dboard`` in [0, 1] or (``percent``) an ``sboard`` of whole percentages."""
        if len(args) > 1 or (args and args[0].lower() != "percent"):
            raise GtpError("syntax error")
        self.session.ensure_ready()
        evaluator = self.session.evaluator
        assert evaluator is not None  # ensure_ready loads one (uniform priors without a network)
        size = self.size
        priors = policy_map(self.state, evaluator)[: size * size]
        return format_percent_sboard(priors, size) if args else format_dboard(priors, size)

    def _analysed_ownership(self, colour: int | None) -> np.ndarray:
        """float64 ``[N*N]`` in [-1, 1], +1 ``colour``'s (``None``: the side to move): the network's
        ownership head averaged over the 8 symmetries, else random play-outs (as ``final_status_list``).
        The root position's, not averaged over the search tree as KataGo does."""
        turned = None if colour is None else self._turned_position(colour)
        state = _go_state(self.state if turned is None else turned)
        own = position_ownership(state, PASS_CHECK_PLAYOUTS, self.session.evaluator)
        return own if state.side_to_move == BLACK else -own

    def _analyze(self, request: AnalyzeRequest, line: Callable[[SearchInfo], str]) -> str:
        """Reply ``=`` at once and stream ``line(info)`` every ``request.interval_s`` until the next input
        line (module doc)."""
        session = self.session
        # as genmove, wait for the compiled search still loading (from numba's cache: about a second
        # after start-up, when GUIs send their first analysis) before the `=`: the analysis itself
        # would wait for what is left, its lines silent meanwhile
        session.ensure_ready(COMPILED_WAIT_S)
        self._check_network_komi()
        colour = self.state.side_to_move if request.colour is None else request.colour
        turned = self._turned_position(colour)
        options = session.options
        self._analysis = _Analysis(options.multipv, options.info_interval_s)
        session.set_options(multipv=self.size * self.size + 1, info_interval_s=request.interval_s)
        self.output.line(format_reply(self._command_id, True)[0])  # no empty line: the stream follows

        def on_info(info: SearchInfo) -> None:
            text = line(info)
            if text:
                self.output.line(text)

        try:
            session.go(SearchLimits(infinite=True), on_info=on_info, position=turned)
        except Exception:  # "=" is out: end the (empty) stream rather than reply twice
            log.exception("analysis could not start the search")
            self._stop_analysis()
        return STREAMING

    def _stop_analysis(self) -> None:
        """Stop the analysis search, restore the options, end the stream (empty line)."""
        analysis = self._analysis
        assert analysis is not None
        self._analysis = None
        session = self.session
        session.stop()
        session.wait()
        session.set_options(multipv=analysis.multipv, info_interval_s=analysis.info_interval_s)
        self.output.line("")


@dataclasses.dataclass(frozen=True)
class _Analysis:
    """A running ``lz-analyze``: the options it changed, to restore."""

    multipv: int
    info_interval_s: float


class GenmoveAction(enum.Enum):
    """What ``genmove`` does."""

    PLAY = "play"
    PASS = "pass"
    RESIGN = "resign"


@dataclasses.dataclass(frozen=True)
class GenmoveDecision:
    """``genmove``'s answer, decided before anything changes.

    Attributes:
        action: play a move, pass or resign.
        point: the point to play (the pass point ``size * size`` for a pass); ``None`` to resign.
    """

    action: GenmoveAction
    point: int | None


def decide_genmove(
    result: SearchResult | None, colour: int, state: GoState, resign_threshold: float
) -> GenmoveDecision:
    """What ``colour`` answers to ``genmove`` in ``state`` (the real position, with its history) given
    the search ``result`` (``None``: cleanup found nothing but pass).

    Resign when the chosen move's value for ``colour`` is below ``-resign_threshold`` (0: never);
    pass when the search has no move or its move is one the real history forbids (superko).
    """
    lines = [] if result is None else result.info.lines
    if resign_threshold > 0 and lines and lines[0].q < -resign_threshold:
        return GenmoveDecision(GenmoveAction.RESIGN, None)
    pass_point = state.board_size * state.board_size
    best = None if result is None or result.best_move is None else int(result.best_move)
    if best is None or best == pass_point or not state.is_legal_for(colour, best):
        return GenmoveDecision(GenmoveAction.PASS, pass_point)
    return GenmoveDecision(GenmoveAction.PLAY, best)


def compiled_wait_s(clock: Clock | None) -> float:
    """How long a search may wait for the compiled search's kernels still loading: up to
    :data:`COMPILED_WAIT_S`, and never more than a twentieth of the main time left plus a quarter of a
    byo-yomi period (``clock``: the mover's, ``None`` without time settings)."""
    if clock is None:
        return COMPILED_WAIT_S
    return min(COMPILED_WAIT_S, (clock.time_ms / 20 + clock.byoyomi_ms / 4) / 1000)


def clock_less(clock: Clock | None, seconds: float) -> Clock | None:
    """``clock`` after ``seconds`` more of this move went by (the network's loading, the wait for the
    compiled search): taken from the main time left, then from the byo-yomi period."""
    if clock is None:
        return None
    spent_ms = seconds * 1000
    from_main = min(clock.time_ms, spent_ms)
    from_period = min(clock.byoyomi_ms, spent_ms - from_main)
    return dataclasses.replace(
        clock, time_ms=clock.time_ms - from_main, byoyomi_ms=clock.byoyomi_ms - from_period
    )


def playouts_for(board_size: int, nine_by_nine: int) -> int:
    """Play-outs on a ``board_size`` board costing about what ``nine_by_nine`` cost on 9x9 (at least a
    quarter of them: 64 -> 16 on 19x19, about a second here)."""
    return max(nine_by_nine // 4, nine_by_nine * 81 // (board_size * board_size))


def judge_position(state: GoState, playouts: int, evaluator: Evaluator | None = None) -> Judgement:
    """Dead and alive stones and the area score of ``state``, from the network's ownership head when
    ``evaluator`` has one (:func:`engine.ownership.network_ownership`), else from a Monte-Carlo
    ownership estimate (:mod:`engine.games.go_ownership`, with ``playouts`` as on 9x9, see
    :func:`playouts_for`; seeded by the position, so a position always gets the same answer)."""
    return judge(state, position_ownership(state, playouts, evaluator))


def position_ownership(state: GoState, playouts: int, evaluator: Evaluator | None = None) -> np.ndarray:
    """float64 ``[N*N]`` in [-1, 1], +1 black's: every point's predicted final owner, from the network's
    ownership head when ``evaluator`` has one, else from random play-outs (as in :func:`judge_position`)."""
    own = network_ownership(state, evaluator) if evaluator is not None else None
    if own is None:
        rng = np.random.default_rng(state.board_hash() % 2**32)
        own = ownership(state, playouts_for(state.board_size, playouts), rng)
    return own


def play_on_instead_of_passing(
    state: GoState, scoring: str, evaluator: Evaluator | None = None, colour: int | None = None
) -> bool:
    """Whether a pass the search chose for ``colour`` (default: the side to move) in ``state`` must
    wait: under ``area`` scoring, while the game goes on and ``colour`` has work left by the count
    (see :meth:`GtpHandler._work_left`)."""
    if not counting_removes_dead_stones(state, scoring):
        return False
    mover = state.side_to_move if colour is None else colour
    return judge_position(state, PASS_CHECK_PLAYOUTS, evaluator).work_left(state, mover)


def counting_removes_dead_stones(state: GoState, scoring: str) -> bool:
    """Whether the game goes on under ``area`` scoring, where the count removes dead stones (under
    Tromp-Taylor every stone counts, and a pass never needs to wait)."""
    return scoring == "area" and state.outcome() is None


def _go_state(state: GameState[Any]) -> GoState:
    """``state`` as the Go position it is (the session of a GTP handler plays Go only)."""
    if not isinstance(state, GoState):
        raise TypeError(f"expected a Go position, got {type(state).__name__}")
    return state


#: Returned by a command that wrote its own reply and keeps streaming (``lz-analyze``).
STREAMING = "\0streaming"


def _version() -> str:
    try:
        return version("tabula-zero")
    except Exception:  # not installed as a distribution
        return "0.1.0"
