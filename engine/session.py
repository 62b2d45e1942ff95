"""The facade every protocol uses: one game, one position, one search at a time.

    session = Session("chess", EngineOptions())
    session.ensure_ready()                       # loads the network (or falls back loudly)
    session.set_position(None, ["e2e4", "e7e5"])  # start position + moves in protocol notation
    session.go(SearchLimits(movetime_ms=1000), on_info=print, on_done=print)
    session.stop(); session.ponderhit(); session.wait()

The search runs on a worker thread, so the protocol's reader thread keeps answering ``isready``,
``stop`` and ``ponderhit`` while it thinks.  Network calls run on a second worker thread so tree work
overlaps inference.  The tree is reused when the next position continues the previous one.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, cast

import numpy as np

from engine.chess_book import BookMove, PolyglotBook
from engine.chess_tablebase import SyzygyTables
from engine.evaluator import Evaluator
from engine.games import Game, GameState, IllegalMoveError, get_game
from engine.games.chess import ChessState
from engine.inference import OnnxEvaluator, warm_up_network_thread
from engine.kernel_loading import (
    KernelLoader,
    freeze_loaded_objects,
    reserve_search_memory,
    warm_up_rules,
)
from engine.network_loading import UNIFORM_PLAY, UNUSABLE, inference_plan, load_evaluator
from engine.options import EngineOptions
from engine.search.limits import SearchLimits
from engine.search.mate_threats import mate_threat_verdicts, threat_deadline
from engine.search.pace import AnswerCost
from engine.search.root_verdicts import RootVerdicts
from engine.search.score import Score, q_to_cp
from engine.search.searcher import InfoCallback, PVLine, SearchControl, Searcher, SearchInfo, SearchResult
from engine.search.stoppers import StopReason
from engine.search.time_manager import TimeBudget, allocate
from engine.search.tree_factory import new_tree
from engine.search.tree_protocol import SearchTree
from engine.strength import CalibrationError, Resolved, StrengthTable, Weakening
from weights import strength_table_path

log = logging.getLogger("tabula.session")


DoneCallback = Callable[[SearchResult], None]


class Session:
    """One engine instance: game, position, network, search thread."""

    def __init__(
        self,
        game_label: str,
        options: EngineOptions | None = None,
        game_options: dict[str, Any] | None = None,
    ) -> None:
        self.options = options or EngineOptions()
        self._game_options = dict(game_options or {})
        self.game: Game = get_game(game_label, **self._game_options)
        self.state: GameState[Any] = self.game.new_state()
        self._start_text: str | None = None
        self._moves: list[Any] = []
        self.evaluator: Evaluator | None = None
        self.evaluator_note = ""
        self._reload = False  # an option changed the network: load it at the next isready / search
        #: Network loads tried (a protocol reports what the engine plays with once per load).
        self.network_loads = 0
        self._tree: SearchTree[Any] | None = None
        self._tree_start: str | None = None
        self._tree_moves: list[Any] = []
        self._executor = self._new_executor()
        self._thread: threading.Thread | None = None
        self._control = SearchControl()
        self._answer_cost = AnswerCost()  # how long answering took after a stop (the hard limit's reserve)
        self._lock = threading.Lock()
        self._kernels: dict[str, KernelLoader] = {}  # by game name
        self._reservations: dict[tuple[str, int], threading.Thread] = {}  # by (game label, Hash MB)
        self._tables: dict[Path, StrengthTable | str] = {}  # loaded calibration tables, or why not
        self._rng = np.random.default_rng()  # the weakened move choice's draws
        self.tablebases: SyzygyTables | None = None
        self.book: PolyglotBook | None = None
        try:
            self._open_files(EngineOptions(), self.options)
        except ValueError as exc:  # settings passed in: play on without the files, loudly
            log.warning("%s: no tablebases, no book", exc)
            self.options = dataclasses.replace(self.options, syzygy_path="", book_file="")

    # ---- setup -------------------------------------------------------------------------------------
    def set_game(self, game_label: str, **game_options: Any) -> None:
        """Switch ruleset (UCI_Variant, GTP boardsize/komi).  Drops the network if it no longer fits."""
        self.wait()
        self._game_options = dict(game_options)
        game = get_game(game_label, **game_options)
        if self.evaluator is not None and game.info != self.game.info:
            self.evaluator.close()
            self.evaluator = None
            self._reload = False
        self.game = game
        self.new_game()

    def set_options(self, **changes: Any) -> None:
        """Replace option fields (keyword names of :class:`EngineOptions`).

        Raises:
            ValueError: a new ``syzygy_path`` or ``book_file`` cannot be opened (nothing is changed).
        """
        old = self.options
        new = dataclasses.replace(old, **changes)
        self._open_files(old, new)
        self.options = new
        reload = any(
            getattr(old, k) != getattr(self.options, k)
            for k in (
                "weights_file",
                "backend",
                "threads",
                "batch_size",
                "precision",
                "policy_temperature",
                "limit_strength",  # the calibrated strength runs at policy temperature 1
            )
        )
        if reload and self.evaluator is not None:
            self._reload = True  # the network plays on until the new one loads (:meth:`_ensure_network`)
        self._fit_executor()
        if old.strength_table != self.options.strength_table:
            self._tables.clear()
        if (old.hash_mb, old.search, old.limit_strength, old.syzygy_path, old.syzygy_probe_limit) != (
            self.options.hash_mb,
            self.options.search,
            self.options.limit_strength,  # the LCB share: off while limited (EngineOptions.search_config)
            self.options.syzygy_path,
            self.options.syzygy_probe_limit,
        ):
            self._tree = None  # (a tree's root children may carry the old tables' proofs)

    def _open_files(self, old: EngineOptions, new: EngineOptions) -> None:
        """Open the tablebases and the book ``new`` names where they differ from ``old``'s (both or
        neither: raises ``ValueError`` before anything changes when one cannot be opened)."""
        tables, book = self.tablebases, self.book
        if new.syzygy_path != old.syzygy_path:
            tables = SyzygyTables(new.syzygy_path) if new.syzygy_path else None
        if new.book_file != old.book_file:
            try:
                book = PolyglotBook(new.book_file) if new.book_file else None
            except ValueError:
                if tables is not None and tables is not self.tablebases:
                    tables.close()
                raise
        if tables is not self.tablebases and self.tablebases is not None:
            self.tablebases.close()
        if book is not self.book and self.book is not None:
            self.book.close()
        self.tablebases, self.book = tables, book

    def book_move(self, allowed: Sequence[Any] = ()) -> BookMove | None:
        """A move from the opening book for the current position (among ``allowed`` when given), or
        ``None``: no ``own_book``, no book, not chess, or out of book."""
        if not self.options.own_book or self.book is None or not self.game.profile.book_and_tablebases:
            return None
        return self.book.pick(cast(ChessState, self.state).board, allowed)

    def root_verdicts(self, state: GameState[Any], deadline: float | None = None) -> RootVerdicts | None:
        """What is known of ``state``'s moves before the search, or ``None``: the tablebases' verdicts
        (chess with ``syzygy_path``), and in shogi the moves that walk into a mate
        (``mate_threat_nodes``; checked until ``deadline``, a ``perf_counter`` time, when one is given)."""
        verdicts = self._tablebase_verdicts(state)
        if self.options.mate_threat_nodes <= 0 or not self.game.profile.mate_threats:
            return verdicts
        threats = mate_threat_verdicts(state, self.options.mate_threat_nodes, deadline)
        if not threats:
            return verdicts
        if verdicts is None:
            return RootVerdicts(threats, 0)
        return RootVerdicts({**threats, **verdicts.moves}, verdicts.hits)

    def _tablebase_verdicts(self, state: GameState[Any]) -> RootVerdicts | None:
        """What the tablebases know of ``state``'s moves (chess with ``syzygy_path``), or ``None``."""
        if (
            self.tablebases is None
            or not self.game.profile.book_and_tablebases
            or self.options.syzygy_probe_limit <= 0
        ):
            return None
        try:
            return self.tablebases.probe_root(cast(ChessState, state), self.options.syzygy_probe_limit)
        except Exception:  # tables must never cost a move: search without them
            log.exception("tablebase probe failed")
            return None

    def ensure_ready(self, compiled_wait_s: float = 0.0) -> str:
        """Load the network for the current game if needed and start loading the compiled search's
        kernels (:class:`KernelLoader`, in the background); then wait up to ``compiled_wait_s``
        seconds, counted from the call, for those kernels, so that the next search need not.  The
        protocols pass their ``isready`` budgets (``docs/protocols.md``, "Cold start"): kernels from
        numba's cache load in about a second, a first run with an empty cache compiles for 20-30 s.
        Returns what the engine plays with (and, while the kernels still compile, says so)."""
        started = time.monotonic()
        self.start_loading_compiled_search()
        loaded = self.network_pending
        self._ensure_network()
        if compiled_wait_s > 0:
            self._loader.wait(max(0.0, compiled_wait_s - (time.monotonic() - started)))
        if self._loader.ready:
            self._start_reservation()
            if compiled_wait_s > 0:  # within the same budget: the first search must not fault in pages
                self.wait_for_reservation(max(0.0, compiled_wait_s - (time.monotonic() - started)))
        froze = self._loader.freeze_once_loaded()
        if loaded and not froze:  # (the loader's freeze takes the network's objects too)
            freeze_loaded_objects()
        if self.compiled_search_pending:
            return f"{self.evaluator_note}; compiling the search kernels (first run: a search waits for them)"
        return self.evaluator_note

    @property
    def _calls_in_flight(self) -> int:
        """The network calls a search keeps running at once (``Threads``: :func:`inference_plan`)."""
        return inference_plan(self.options.threads).calls

    def _helpers_wanted(self) -> int:
        """The helpers that make the searches' network calls (:meth:`InferencePlan.helpers`: one a call
        in flight, one fewer for a network on the CPU, which is assumed until a network is loaded)."""
        shares = self.evaluator.shares_cores if self.evaluator is not None else True
        return inference_plan(self.options.threads).helpers(shares)

    def _new_executor(self) -> ThreadPoolExecutor:
        """An executor of the helpers wanted (their count kept to see when it changes)."""
        self._helpers = self._helpers_wanted()
        return ThreadPoolExecutor(max_workers=self._helpers, thread_name_prefix="tabula-eval")

    def _fit_executor(self) -> None:
        """A new executor when the helpers wanted changed (``Threads``, or a network off the CPU)."""
        if self._helpers_wanted() != self._helpers:
            self._executor.shutdown(wait=False)
            self._executor = self._new_executor()

    def _ensure_network(self) -> None:
        """Load the network for the current game if needed (and the ruleset's own kernels).  When an
        option changed the network and the new one cannot be used (a broken or wrong file), the last
        good network plays on and the note says why."""
        if self.network_pending:
            old, self._reload = self.evaluator, False
            self.network_loads += 1
            evaluator, note = load_evaluator(self.game, self.options)
            if note.startswith(UNUSABLE) and isinstance(old, OnnxEvaluator):
                evaluator.close()
                note = f"{note.removesuffix('; ' + UNIFORM_PLAY)}; keeping network {old.path}"
                log.warning(note)
                self.evaluator_note = note
                return
            if note.startswith(UNUSABLE):
                log.warning(note)
            if old is not None:
                old.close()
            self.evaluator, self.evaluator_note = evaluator, note
            self._fit_executor()
            warm_up_network_thread(self.evaluator, self._executor)
            warm_up_rules(self.game)
            self._tree = None

    @property
    def compiled_search_pending(self) -> bool:
        """The current game's search kernels are still loading (a search waits for them,
        :meth:`_await_kernels`)."""
        return not self._loader.done

    @property
    def network_pending(self) -> bool:
        """No network is loaded yet, or an option changed it: the next isready / search loads one."""
        return self.evaluator is None or self._reload

    @property
    def prepared(self) -> bool:
        """The network is loaded and no compiled kernel is still loading: ``isready`` has nothing to do."""
        return not self.network_pending and not self.compiled_search_pending

    def new_game(self) -> None:
        """Start position, empty tree."""
        self.wait()
        self.state = self.game.new_state()
        self._start_text = None
        self._moves = []
        self._tree = None

    def set_position(self, text: str | None, moves: Sequence[str]) -> None:
        """Set the position from a start text (``None``: the initial position) and protocol moves.

        Raises ``InvalidPositionError`` for a bad start text and ``IllegalMoveError`` (whose
        ``args[1]`` is the number of moves that were legal) for a bad move; the position is then
        unchanged, so the protocol decides what to keep.
        """
        state = self.game.state_from_text(text) if text is not None else self.game.new_state()
        native: list[Any] = []
        for i, token in enumerate(moves):
            try:
                move = state.parse_move(token)
            except IllegalMoveError as exc:
                raise IllegalMoveError(f"illegal move {token!r} at index {i}: {exc}", i) from None
            state.push(move)
            native.append(move)
        self.wait()
        self.state = state
        self._start_text = text
        self._moves = native

    def push_move(self, move: Any) -> None:
        """Play a native move on the current position (GTP ``play``)."""
        self.wait()
        self.state.push(move)
        self._moves.append(move)

    def replace_state(self, state: GameState[Any]) -> None:
        """Install a position built by the protocol (GTP handicap, loadsgf); the tree is dropped."""
        self.wait()
        self.state = state
        self._start_text = None
        self._moves = list(state.move_stack)
        self._tree = None

    # ---- search -------------------------------------------------------------------------------------
    @property
    def searching(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def go(
        self,
        limits: SearchLimits,
        on_info: InfoCallback | None = None,
        on_done: DoneCallback | None = None,
        finite_default: bool = False,
        position: GameState[Any] | None = None,
    ) -> None:
        """Start a search on the worker thread; ``on_done`` gets the result (exactly once).

        ``position``: search this position instead of the session's (GTP: the board with the other
        colour to move).  The session's position stays as it is; its tree is dropped (one tree at a
        time, within the ``Hash`` budget) and the next search of it starts afresh.  The clock runs from
        the call (``limits.received_at`` when the protocol set it); the search waits for the compiled
        kernels first when they are still loading (:meth:`_await_kernels`).
        """
        self.wait()
        self._ensure_network()
        self.start_loading_compiled_search()  # the search runs on them: loading now if isready did not
        if limits.received_at is None:
            limits = dataclasses.replace(limits, received_at=time.perf_counter())
        if position is not None:
            self._tree = None
        state = self.state if position is None else position
        limits, budget = self._limits_and_budget(limits, state, finite_default)
        self._control = control = SearchControl()
        self._thread = threading.Thread(
            target=self._run_search,
            args=(limits, budget, state, position is None, control, on_info, on_done),
            name="tabula-search",
            daemon=True,
        )
        self._thread.start()

    def _limits_and_budget(
        self, limits: SearchLimits, state: GameState[Any], finite_default: bool
    ) -> tuple[SearchLimits, TimeBudget]:
        """``limits`` with the weakening's node cap, and the time this move may take (by ``state``'s ply
        and the plies left before its length limit)."""
        low, high = self.game.profile.expected_moves
        time_config = dataclasses.replace(
            self.options.time_config(), min_expected_moves=low, max_expected_moves=high
        )
        weakening = self.weakening()
        if weakening is not None:  # the node cap; the clock may still stop it sooner
            nodes = weakening.nodes if limits.nodes is None else min(limits.nodes, weakening.nodes)
            limits = dataclasses.replace(limits, nodes=nodes)
        return limits, allocate(limits, state.ply, time_config, finite_default, state.plies_left())

    def _searcher(
        self,
        tree: SearchTree[Any],
        limits: SearchLimits,
        budget: TimeBudget,
        state: GameState[Any],
        control: SearchControl,
        on_info: InfoCallback | None,
    ) -> Searcher:
        """A searcher over ``tree`` (of ``state``) with what is known of the root moves before the
        search (:meth:`root_verdicts`)."""
        assert self.evaluator is not None
        root_verdicts = self.root_verdicts(state, threat_deadline(limits, budget))
        return Searcher(
            tree,
            self.evaluator,
            limits,
            budget,
            control,
            self._executor,
            on_info,
            self.options.info_interval_s,
            self.options.multipv,
            self._answer_cost,
            self.weakening(),
            self._rng,
            root_verdicts,
            self._calls_in_flight,
        )

    def _await_kernels(self, limits: SearchLimits, budget: TimeBudget, control: SearchControl) -> bool:
        """Wait for the compiled search's kernels before a search; whether they are ready.  From numba's
        cache (the package ships them compiled) they load in well under a second, within ``isready``
        when the protocol has one; a first run with an empty cache compiles them for tens of seconds.
        A search waits until they are loaded, a stop, or half of its soft time (counted from ``go``'s
        arrival, or from the ponderhit), and then plays :meth:`_policy_move` if they are not."""
        loader = self._loader
        received = limits.received_at if limits.received_at is not None else time.perf_counter()
        limit: float | None = None
        if budget.soft_ms is not None and not limits.ponder:
            limit = received + budget.soft_ms / 2000.0
        while not loader.done and not control.stop.is_set():
            now = time.perf_counter()
            if limit is None and budget.soft_ms is not None and control.ponderhit.is_set():
                limit = now + budget.soft_ms / 2000.0
            if limit is not None and now >= limit:
                break
            loader.wait(0.01 if limit is None else min(0.01, max(0.0, limit - now)))
        return loader.ready

    def _policy_move(self, state: GameState[Any]) -> SearchResult:
        """The network's most probable move, without a search: what a move gets when the compiled
        kernels are not loaded in time (:meth:`_await_kernels`) or cannot be (a broken numba)."""
        moves, indices = state.legal_moves_and_indices()
        if not moves or self.evaluator is None:
            return _fallback_result(state)
        planes = state.encode()[None]
        evaluation = self.evaluator.evaluate(planes, [np.asarray(indices, np.int64)])[0]
        slot = int(np.argmax(evaluation.priors))
        best, q = moves[slot], float(evaluation.value)
        line = PVLine(best, Score(cp=q_to_cp(q)), 0, q, float(evaluation.priors[slot]), [best])
        return SearchResult(best, None, SearchInfo(0, 0, 0, 1, 0, 0, 0, [line]), StopReason.STOP)

    # ---- strength limiting ---------------------------------------------------------------------------
    def strength_table(self) -> StrengthTable | None:
        """The current game's calibration table (``strength_table`` or the shipped one), loaded once;
        ``None`` when there is none or it cannot be used (:meth:`strength_note` says why)."""
        table = self._table_or_reason()
        return table if isinstance(table, StrengthTable) else None

    def _table_or_reason(self) -> StrengthTable | str:
        label = self.game.info.label
        given = self.options.strength_table
        path = Path(given) if given else strength_table_path(label)
        if path is None:
            return f"no strength calibration for {label} (weights/strength-{label}.json)"
        if path not in self._tables:
            try:
                self._tables[path] = StrengthTable.load(path)
            except CalibrationError as exc:
                log.warning("%s", exc)
                self._tables[path] = str(exc)
        return self._tables[path]

    def resolved_strength(self) -> Resolved | str | None:
        """What ``limit_strength``/``elo`` come to: the table's :class:`Resolved`, the reason it cannot
        be limited (a string), or ``None`` when strength is not limited (a fixed ``weakening`` aside)."""
        opts = self.options
        if not opts.limit_strength:
            return None
        table = self._table_or_reason()
        if isinstance(table, str):
            return table
        return table.resolve(table.min_elo if opts.elo is None else opts.elo)

    def weakening(self) -> Weakening | None:
        """The weakening the next search plays with (``None``: full strength): a fixed ``weakening``,
        else the table's at ``elo`` when ``limit_strength``."""
        if self.options.weakening is not None:
            return self.options.weakening
        resolved = self.resolved_strength()
        return resolved.weakening if isinstance(resolved, Resolved) else None

    def strength_note(self) -> str:
        """One line on the strength the engine plays at (for ``info string`` and logs)."""
        fixed = self.options.weakening
        if fixed is not None:
            return f"playing with the fixed weakening {fixed.text()} (nodes,temperature,margin)"
        resolved = self.resolved_strength()
        if resolved is None:
            return "full strength (strength not limited)"
        if isinstance(resolved, str):
            return f"{resolved}: playing at full strength"
        weakening = resolved.weakening
        table = self.strength_table()
        assert table is not None
        setting = (
            "full strength"
            if weakening is None
            else f"nodes {weakening.nodes}, temperature {weakening.temperature:.2f}, "
            f"margin {weakening.q_margin:.2f}"
        )
        low, high = table.interval_at(resolved.elo)
        text = (
            f"strength limited to Elo {resolved.elo} [{low:.0f}, {high:.0f}] ({setting}; "
            f"{table.scale} scale at {table.game} {table.time_control}, {table.status})"
        )
        return f"{text}; {resolved.note}" if resolved.note else text

    def _run_search(
        self,
        limits: SearchLimits,
        budget: TimeBudget,
        state: GameState[Any],
        own_position: bool,
        control: SearchControl,
        on_info: InfoCallback | None,
        on_done: DoneCallback | None,
    ) -> None:
        """The worker thread: wait for the kernels, search (the session's tree when ``own_position``,
        else a fresh tree over ``state``), hand the result to ``on_done``, then collect garbage."""
        try:
            if self._await_kernels(limits, budget, control):
                tree = self._tree_for_position() if own_position else self._new_tree(state)
                result = self._searcher(tree, limits, budget, state, control, on_info).run()
            else:
                log.warning("the search kernels are not loaded: playing the network's first choice")
                result = self._policy_move(state)
        except Exception:  # a search must never die silently: report and still answer
            log.exception("search failed")
            self._tree = None
            result = _fallback_result(state)
        if on_done is not None:
            on_done(result)
        # The answer is out: a good moment for the full cyclic collection that the program
        # otherwise defers (protocols/cli.py), so rare cycles never pile up over a long session.  It
        # holds the GIL, so the next `go` is read only after it: what loading made is frozen
        # (:func:`freeze_loaded_objects`; the kernels' share here, the first time after they loaded),
        # so it scans only what the searches made (a few ms).
        self._loader.freeze_once_loaded()
        gc.collect()

    def search(
        self,
        limits: SearchLimits,
        on_info: InfoCallback | None = None,
        finite_default: bool = True,
        position: GameState[Any] | None = None,
    ) -> SearchResult:
        """Search synchronously and return the result (``position``: as in :meth:`go`), as soon as it
        is out: the worker's garbage collection after the search goes on meanwhile."""
        box: list[SearchResult] = []
        done = threading.Event()

        def finish(result: SearchResult) -> None:
            box.append(result)
            done.set()

        self.go(limits, on_info, finish, finite_default, position)
        done.wait()
        return box[0]

    def stop(self) -> None:
        self._control.stop.set()

    def ponderhit(self) -> None:
        self._control.ponderhit.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the running search to finish; True when none is running."""
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
            return not thread.is_alive()
        return True

    def close(self) -> None:
        self.stop()
        self.wait()
        self._executor.shutdown(wait=False)
        if self.evaluator is not None:
            self.evaluator.close()
        if self.tablebases is not None:
            self.tablebases.close()
        if self.book is not None:
            self.book.close()

    def wait_for_reservation(self, timeout: float | None = None) -> bool:
        """Wait for the tree memory reservations started by :meth:`ensure_ready`; whether all ended."""
        for thread in list(self._reservations.values()):
            thread.join(timeout)
        return not any(t.is_alive() for t in self._reservations.values())

    # ---- internals -------------------------------------------------------------------------------
    def _start_reservation(self) -> None:
        """Claim the compiled tree's memory (:func:`reserve_search_memory`) on a background thread, once
        per game and ``Hash``.  :meth:`ensure_ready` waits for it within its budget: beside the first
        search, on a busy machine, it held that search's first batch long enough to overrun a short
        byoyomi (docs/benchmarks.md, "Costs behind the code's design").  A search that starts
        meanwhile takes fresh arrays, and every later one the reserved set."""
        key = (self.game.info.label, self.options.hash_mb)
        if key in self._reservations:
            return
        thread = threading.Thread(
            target=reserve_search_memory,
            args=(self.game, self.state.copy(), self.options),
            name="tabula-reserve",
            daemon=True,
        )
        self._reservations[key] = thread
        thread.start()

    def _tree_for_position(self) -> SearchTree[Any]:
        """The previous tree advanced to the current position when it continues it, else a new one."""
        tree = self._tree
        n = len(self._tree_moves)
        if (
            tree is not None
            and self._tree_start == self._start_text
            and len(self._moves) >= n
            and self._moves[:n] == self._tree_moves
        ):
            for move in self._moves[n:]:
                tree.advance(move)
        else:
            self._tree = None  # the old tree goes first: the new one can take its arrays (compiled_tree.POOL)
            tree = self._new_tree(self.state)
        self._tree = tree
        self._tree_start = self._start_text
        self._tree_moves = list(self._moves)
        return tree

    def _new_tree(self, state: GameState[Any]) -> SearchTree[Any]:
        """A fresh compiled tree over a copy of ``state`` (:func:`new_tree`; uint8 planes when the
        network takes them)."""
        quantization = getattr(self.evaluator, "planes_quantization", None)
        return new_tree(state, self.options.search_config(self.game), quantization=quantization)

    @property
    def _loader(self) -> KernelLoader:
        """The kernel loader of the current game's compiled tree."""
        name = self.game.info.name
        if name not in self._kernels:
            self._kernels[name] = KernelLoader(name)
        return self._kernels[name]

    def start_loading_compiled_search(self) -> None:
        """Start loading the current game's search kernels in the background (once): at
        ``ensure_ready``, at a search, and at GTP's start-up (it has no ``isready``)."""
        self._loader.start()

    def wait_for_compiled_search(self, timeout: float | None = None) -> bool:
        """Wait until the search kernels are loaded (or failed to); whether they are ready (starts
        loading them if nothing has yet)."""
        self.start_loading_compiled_search()
        self._loader.wait(timeout)
        return self._loader.ready


def _fallback_result(state: GameState[Any]) -> SearchResult:
    """A legal move when the search itself failed (never leave a GUI without a move)."""
    moves = state.legal_moves() if state.outcome() is None else []
    info = SearchInfo(0, 0, 0, 0, 0, 0, 0, [])
    return SearchResult(moves[0] if moves else None, None, info, StopReason.ERROR)
