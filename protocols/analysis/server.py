"""``tabula analysis``: KataGo's JSON analysis protocol for Go, chess and shogi (docs/analysis.md).

:class:`AnalysisHandler` reads one JSON query a line (:mod:`protocols.analysis.query`), splits each
query into its turns and queues them; ``analysis_threads`` positions are searched at once, the queue
taken by priority (higher first), then arrival, all stepped by one thread
(:class:`~protocols.analysis.driver.SearchDriver`).  Each position runs the engine's search loop
(:meth:`~engine.search.searcher.Searcher.steps`) on a fresh compiled tree, with the root verdicts the engine
uses (shogi's mate threats, chess tablebases) and the network shared through
:class:`~protocols.analysis.batching.SharedNetwork`, so the positions of every query in flight fill the
same network calls.  A position searched with ``maxVisits`` N builds the tree ``go nodes N`` builds.

Answers go to stdout, one JSON object a line, as each position ends (so possibly out of order); bad
input gets KataGo's error object (``{"id": ..., "error": ..., "field": ...}``, a line that is no query
``{"error": ...}``) and the engine reads on.  At EOF the queued positions are finished first (KataGo's
behaviour; ``quit_without_waiting`` stops them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import heapq
import itertools
import json
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from engine.games import GameState
from engine.games.go import GoState
from engine.network_loading import inference_plan
from engine.options import EngineOptions
from engine.ownership import network_ownership
from engine.search.limits import SearchLimits
from engine.search.mate_threats import threat_deadline
from engine.search.pace import AnswerCost
from engine.search.searcher import SearchControl, Searcher, SearchInfo, Wait
from engine.search.time_manager import TimeConfig, allocate
from engine.search.tree_factory import new_tree
from engine.session import Session
from protocols.analysis.batching import SharedCalls, SharedNetwork
from protocols.analysis.driver import SearchDriver, Steps
from protocols.analysis.query import Query, QueryError, Turn, parse_query, query_id, read_line
from protocols.analysis.report import NetworkView, no_results, response
from protocols.loop import Handler, LineSource, Output

log = logging.getLogger("tabula.analysis")

#: Root moves reported: every visited one (the search reports up to this many lines).
MAX_LINES = 1000
#: Random play-outs for Go ownership when the network has no ownership head.
OWNERSHIP_PLAYOUTS = 64


@dataclasses.dataclass(frozen=True)
class AnalysisSettings:
    """Settings of ``tabula analysis`` (command-line flags).

    Attributes:
        engine: the engine options (``batch_size`` is each search's batch, as in UCI/USI/GTP).
        default_game: the game of a query without ``game``.
        default_visits: ``maxVisits`` of a query that sets none (KataGo's example config: 500).
        perspective: ``reportAnalysisWinratesAs`` of a query that sets none; ``None``: ``BLACK`` for Go
            (KataGo's example config), ``SIDETOMOVE`` for chess and shogi (as UCI/USI scores).
        analysis_threads: positions searched at once (all stepped by one thread).
        max_rows: the most positions of one shared network call.
        quit_without_waiting: at EOF, stop the searches instead of finishing the queue.
        go_sizes: the Go board sizes with a network (``None``: every size 2..19).
    """

    engine: EngineOptions = dataclasses.field(default_factory=EngineOptions)
    default_game: str = "go"
    default_visits: int = 500
    perspective: str | None = None
    analysis_threads: int = 16
    max_rows: int = 256
    quit_without_waiting: bool = False
    go_sizes: tuple[int, ...] | None = None


@dataclasses.dataclass
class _Job:
    """One turn of a query, queued or being searched."""

    query: Query
    turn: Turn
    control: SearchControl = dataclasses.field(default_factory=SearchControl)
    started: bool = False


class _Game:
    """One game's network, shared by every search of it: its session (the network and the rules'
    kernels, loaded once) and the shared calls."""

    def __init__(self, label: str, settings: AnalysisSettings) -> None:
        options = settings.engine
        # the network takes the shared calls whole: its batch is the calls' rows, the trees' stays
        self.session = Session(
            label, dataclasses.replace(options, batch_size=max(settings.max_rows, options.batch_size))
        )
        self.note = self.session.ensure_ready()
        self.session.wait_for_compiled_search()
        evaluator = self.session.evaluator
        assert evaluator is not None  # ensure_ready loads one (uniform priors without a network)
        self.evaluator = evaluator
        # each tree may hold ``Hash``, as a search in the other protocols (a long search, KaTrain's
        # pondering, needs it: a Go 19x19 tree holds about 2.3 MB at 200 visits)
        self.search_config = options.search_config(self.session.game)
        self.calls_in_flight = inference_plan(options.threads).calls
        self.quantization = getattr(evaluator, "planes_quantization", None)
        self.network = SharedNetwork(evaluator, self.calls_in_flight, settings.max_rows)
        #: the root verdicts' tablebases are one set of open files: one probe at a time
        self.verdict_lock = threading.Lock()

    def close(self) -> None:
        self.network.close()
        self.session.close()


class AnalysisHandler(Handler):
    """The analysis protocol over stdin/stdout (module docstring)."""

    def __init__(self, output: Output, source: LineSource | None, settings: AnalysisSettings) -> None:
        self.out = output
        self.settings = settings
        self._lock = threading.Condition()
        self._queue: list[tuple[int, int, _Job]] = []  # (-priority, arrival, job)
        self._arrival = itertools.count()
        self._open: dict[str, list[_Job]] = {}  # id -> its turns not answered yet
        self._seen: set[str] = set()
        self._games: dict[str, _Game] = {}
        self._game_lock = threading.Lock()
        self._executor = SharedCalls()
        self._driver = SearchDriver(self._admit, settings.analysis_threads)
        self._thread = threading.Thread(target=self._driver.run, name="tabula-analysis", daemon=True)
        self._thread.start()

    # ---- input ---------------------------------------------------------------------------------------
    def handle(self, line: str) -> bool:
        """One query line: queued, answered (actions), or answered with an error."""
        if not line.strip():
            return True
        obj: dict[str, Any] | None = None
        try:
            obj = read_line(line)
            action = obj.get("action")
            if action is not None:
                self._action(obj, action)
            else:
                self._enqueue(obj)
        except QueryError as exc:
            self._error(obj, exc)
        except Exception as exc:  # no input may end the engine
            log.exception("error handling a query")
            self._error(obj, QueryError(f"Internal error: {exc}"))
        return True

    def _error(self, obj: dict[str, Any] | None, exc: QueryError) -> None:
        answer: dict[str, Any] = {"error": exc.message}
        if exc.field is not None:
            answer["field"] = exc.field
        if obj is not None:
            with contextlib.suppress(QueryError):
                answer["id"] = query_id(obj)
        self._write(answer)

    def _action(self, obj: dict[str, Any], action: object) -> None:
        qid = query_id(obj)
        if action == "query_version":
            self._write({**obj, "version": _version(), "git_hash": "<omitted>"})
        elif action == "clear_cache":
            with self._game_lock:
                games = list(self._games.values())
            for game in games:
                game.network.clear_cache()
            self._write(dict(obj))
        elif action == "terminate":
            self._terminate(obj)
        elif action == "terminate_all":
            self._terminate_matching(lambda job: True, obj.get("turnNumbers"))
            self._write(dict(obj))
        else:
            raise QueryError(
                f"Unknown action '{action}' (query_version, clear_cache, terminate, terminate_all)", "action"
            )
        del qid

    def _terminate(self, obj: dict[str, Any]) -> None:
        target = obj.get("terminateId")
        if not isinstance(target, str):
            raise QueryError("Field 'terminateId' is required and must be a string", "terminateId")
        turns = obj.get("turnNumbers")
        if turns is not None and (
            not isinstance(turns, list) or any(isinstance(t, bool) or not isinstance(t, int) for t in turns)
        ):
            raise QueryError("Field 'turnNumbers' must be a list of integers", "turnNumbers")
        with self._lock:
            known = target in self._seen
        if not known:
            raise QueryError(f"No query with id '{target}' was received", "terminateId")
        self._terminate_matching(lambda job: job.query.id == target, turns)
        self._write(dict(obj))

    def _terminate_matching(self, match: Callable[[_Job], bool], turns: list[int] | None) -> None:
        """Stop the matching running searches (they answer with what they have) and answer the queued
        ones with ``noResults``."""
        dropped: list[_Job] = []
        with self._lock:
            for jobs in self._open.values():
                for job in jobs:
                    if not match(job) or (turns is not None and job.turn.number not in turns):
                        continue
                    job.control.stop.set()
                    self._driver.wake()
                    if not job.started:
                        dropped.append(job)
            if dropped:
                gone = {id(j) for j in dropped}
                self._queue = [entry for entry in self._queue if id(entry[2]) not in gone]
                heapq.heapify(self._queue)
        for job in dropped:
            self._finish(job, no_results(job.query.id, job.turn.number))

    def _enqueue(self, obj: dict[str, Any]) -> None:
        qid = query_id(obj)
        with self._lock:
            if qid in self._open:
                raise QueryError(f"Duplicate id '{qid}': a query with this id is still being analysed", "id")
        query = parse_query(obj, self.settings.default_game, self.settings.go_sizes)
        for warning in query.warnings:
            self._write({"id": qid, "warning": warning.message, "field": warning.field})
        with self._lock:
            if qid in self._open:
                raise QueryError(f"Duplicate id '{qid}': a query with this id is still being analysed", "id")
            self._seen.add(qid)
            jobs = [_Job(query, turn) for turn in query.turns]
            self._open[qid] = jobs
            for job in jobs:
                heapq.heappush(self._queue, (-job.turn.priority, next(self._arrival), job))
            self._lock.notify_all()
        self._driver.wake()

    # ---- output --------------------------------------------------------------------------------------
    def _write(self, obj: dict[str, Any]) -> None:
        self.out.line(json.dumps(obj, separators=(",", ":"), allow_nan=False))

    def _finish(self, job: _Job, answer: dict[str, Any]) -> None:
        """Write a position's final answer and close it (the query closes with its last turn)."""
        self._write(answer)
        with self._lock:
            jobs = self._open.get(job.query.id)
            if jobs is not None:
                jobs[:] = [j for j in jobs if j is not job]
                if not jobs:
                    del self._open[job.query.id]
            self._lock.notify_all()

    # ---- searching -----------------------------------------------------------------------------------
    def _admit(self, free: int) -> list[tuple[Steps, Callable[[Any, BaseException | None], None]]]:
        """Up to ``free`` queued positions for the driver, first by priority, then arrival."""
        started: list[_Job] = []
        with self._lock:
            while self._queue and len(started) < free:
                _, _, job = heapq.heappop(self._queue)
                job.started = True
                started.append(job)
        return [(self._analyse(job), self._ended(job)) for job in started]

    def _ended(self, job: _Job) -> Callable[[Any, BaseException | None], None]:
        def end(answer: Any, exc: BaseException | None) -> None:
            if exc is not None:  # a position must never go unanswered
                log.error("analysis failed", exc_info=exc)
                answer = {
                    "id": job.query.id,
                    "turnNumber": job.turn.number,
                    "error": f"Analysis failed: {exc}",
                }
            self._finish(job, answer)

        return end

    def _game(self, label: str) -> _Game:
        with self._game_lock:
            game = self._games.get(label)
            if game is None:
                game = self._games[label] = _Game(label, self.settings)
                log.info("%s: %s", label, game.note)
            return game

    def _analyse(self, job: _Job) -> Generator[Wait, bool, dict[str, Any]]:
        """Search one position and make its final answer (partial ones written on the way); stepped by
        the driver (it yields where the search waits for the network)."""
        query, turn = job.query, job.turn
        if job.control.stop.is_set():
            return no_results(query.id, turn.number)
        game = self._game(query.game)
        state = turn.state
        perspective = (
            query.perspective
            or self.settings.perspective
            or ("BLACK" if isinstance(state, GoState) else "SIDETOMOVE")
        )
        visits = query.max_visits if query.max_visits is not None else self.settings.default_visits
        limits = SearchLimits(
            nodes=visits,
            movetime_ms=None if query.max_time_s is None else query.max_time_s * 1000.0,
            searchmoves=turn.searchmoves,
        )
        budget = allocate(limits, state.ply, TimeConfig(move_overhead_ms=0.0), False, state.plies_left())
        view = self._view_before(game, state, query)
        tree = new_tree(state, game.search_config, quantization=game.quantization)

        def answer(info: SearchInfo, during: bool) -> dict[str, Any]:
            pv_visits = (
                [_pv_visits(tree, line.pv) for line in info.lines] if query.include_pv_visits else None
            )
            shown = view
            if during and isinstance(state, GoState):
                # every Go move a report names carries its scoreLead, as KataGo's do: a client that keeps
                # the moves of earlier reports (KaTrain) reads it for a move the final answer may drop
                shown = dataclasses.replace(view, **_go_scores(game, state, info))
            return response(
                query.id,
                turn.number,
                state,
                info,
                float(getattr(tree, "root_q", 0.0)),
                during,
                perspective,
                shown,
                query.include_pv_visits,
                pv_visits,
            )

        on_info = None
        if query.report_every_s is not None:

            def on_info(info: SearchInfo) -> None:
                if not job.control.stop.is_set() and info.lines:
                    self._write(answer(info, True))

        evaluator = game.network.attach()
        try:
            with game.verdict_lock:
                verdicts = game.session.root_verdicts(state, threat_deadline(limits, budget))
            searcher = Searcher(
                tree,
                evaluator,
                limits,
                budget,
                job.control,
                self._executor,
                on_info,
                query.report_every_s or 1.0,
                MAX_LINES,
                AnswerCost(),
                None,
                None,
                verdicts,
                game.calls_in_flight,
            )
            result = yield from searcher.steps()
        finally:
            evaluator.close()
        if not result.info.lines and result.info.nodes == 0:
            outcome = state.outcome()
            if outcome is None or job.control.stop.is_set():
                return no_results(query.id, turn.number)
            # the game is over here (mate, stalemate, two passes ...): no move, the result as the value
            ended = response(
                query.id,
                turn.number,
                state,
                result.info,
                outcome.value,
                False,
                perspective,
                dataclasses.replace(view, root_score=outcome.score),
                query.include_pv_visits,
                [],
            )
            root = ended["rootInfo"]
            root["gameOver"] = outcome.reason
            if "wdl" in root:  # a certain result, not the draw model's spread
                value = root["utility"]
                root["wdl"] = [1000, 0, 0] if value > 0 else [0, 0, 1000] if value < 0 else [0, 1000, 0]
                root["scoreCp"] = 12800 if value > 0 else -12800 if value < 0 else 0
            return ended
        if isinstance(state, GoState):
            view = dataclasses.replace(
                view, **_go_scores(game, state, result.info, query.include_moves_ownership)
            )
        return answer(result.info, False)

    def _view_before(self, game: _Game, state: GameState[Any], query: Query) -> NetworkView:
        """What the network says of the position before the search: ownership and policy, as asked."""
        evaluator = game.evaluator
        ownership = policy = policy_moves = None
        if isinstance(state, GoState):
            if query.include_ownership:
                ownership = network_ownership(state, evaluator)
                if ownership is None:
                    from protocols.gtp import position_ownership

                    ownership = position_ownership(state, OWNERSHIP_PLAYOUTS, None)
            if query.include_policy:
                moves, indices = state.legal_moves_and_indices()
                priors = evaluator.evaluate(state.encode()[None], [indices])[0].priors
                policy = np.full(state.board_size**2 + 1, -1.0)
                policy[np.asarray(moves, np.int64)] = np.asarray(priors, np.float64)
        elif query.include_policy:
            moves, indices = state.legal_moves_and_indices()
            if moves:
                priors = evaluator.evaluate(state.encode()[None], [indices])[0].priors
                policy_moves = {state.move_to_text(m): float(p) for m, p in zip(moves, priors, strict=True)}
            else:
                policy_moves = {}
        return NetworkView(ownership=ownership, policy=policy, policy_moves=policy_moves)

    # ---- closing -------------------------------------------------------------------------------------
    def close(self) -> None:
        """At EOF: finish the queue (or, ``quit_without_waiting``, stop it), then release the engine."""
        if self.settings.quit_without_waiting:
            self._terminate_matching(lambda job: True, None)
        self._driver.close()
        self._thread.join()
        self._executor.shutdown(wait=False)
        for game in self._games.values():
            game.close()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until every query has been answered; whether it was (tests, the Python API)."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._open, timeout)


def _go_scores(
    game: _Game, state: GoState, info: SearchInfo, moves_ownership: bool = False
) -> dict[str, Any]:
    """``move_scores`` and ``root_score`` for a Go answer: the network's score head at the root and after
    each reported move (one call), each for the root's side to move (none without a score head); with
    ``moves_ownership``, ``move_ownership``: the ownership head after each move (+1 black's)."""
    children = []
    for line in info.lines:
        child = state.copy()
        child.push(line.move)
        children.append(child.encode())
    planes = np.stack([state.encode(), *children])  # [1 + lines, 17, N, N]
    out: dict[str, Any] = {}
    scores = game.evaluator.score(planes)
    if scores is not None:
        out["move_scores"] = {line.move: -float(scores[i + 1]) for i, line in enumerate(info.lines)}
        out["root_score"] = float(scores[0])
    if moves_ownership and children:
        owned = game.evaluator.ownership(planes[1:])  # [lines, N*N], each child's side to move's view
        if owned is not None:
            # a child's side to move is the root's opponent: black's view is -owned when black moved
            sign = -1.0 if state.side_to_move == 0 else 1.0
            out["move_ownership"] = {
                line.move: sign * np.asarray(owned[i], np.float64) for i, line in enumerate(info.lines)
            }
    return out


def _pv_visits(tree: Any, pv: list[Any]) -> list[int]:
    """``pvVisits`` of a line: the visits of its first move (the root's child; the tree is read at the
    root only, so the list has one entry, not one per move of ``pv``)."""
    if not pv:
        return []
    visits = tree.root_child_visits()
    slot = next((s for s in range(len(visits)) if tree.root_move(s) == pv[0]), None)
    return [int(visits[slot]) if slot is not None else 0]


def _version() -> str:
    from protocols.gtp import _version as engine_version

    return engine_version()


def serve_analysis(
    settings: AnalysisSettings, source: LineSource | None = None, output: Output | None = None
) -> None:
    """Serve the analysis protocol on stdin/stdout until EOF."""
    from protocols.loop import serve

    source = source or LineSource()
    handler = AnalysisHandler(output or Output(), source, settings)
    serve(handler, source)
