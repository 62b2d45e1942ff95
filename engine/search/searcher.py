"""The engine's search loop over one tree: limits, time, pipelined network calls, info reports.

Network calls run on worker threads (onnxruntime releases the GIL) while the next batch of leaves is
selected, so tree work overlaps inference: ``select(B) | evaluate(A)`` then ``backup(A)``.  With
``calls_in_flight`` above 1 that many calls run side by side (one per worker, each on its own cores:
``engine.network_loading.inference_plan``) and a new batch is selected before the oldest is backed up;
backups always go oldest first.  When the network runs on the search's own cores (the CPU), the
search thread does not wait for the oldest call while a newer one is still queued: it makes that one
itself (:meth:`Searcher._take_over_queued`).  The order of selections and backups does not depend on
timing, so node-limited searches are deterministic.

A hard time limit is kept on a busy machine by measurement, not by a constant margin (``pace.py``;
docs/design.md, "Keeping the hard limit on a busy machine"): the clock starts when the protocol read
``go``; the deadline is the hard limit less what answering and the machine's scheduling delay cost
lately; a batch is started only when the slowest recent pass still fits before it; and a network call
still running at the deadline is dropped.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Executor
from typing import Any, TypeVar

import numpy as np

from engine.evaluator import Evaluator
from engine.search.limits import SearchLimits
from engine.search.pace import AnswerCost, BatchPace
from engine.search.proof import Proof
from engine.search.root_verdicts import TABLEBASE_PLIES, RootVerdicts, tablebase_score
from engine.search.score import Score, mate_score, q_to_cp
from engine.search.stoppers import SearchProgress, StopReason, search_depth, stopper_for
from engine.search.time_manager import TimeBudget
from engine.search.tree_protocol import LeafBatch, SearchTree
from engine.strength import Weakening, choose_root_slot

_A = TypeVar("_A")
_R = TypeVar("_R")

#: While a network call is in flight, ``stop`` and the hard time limit are checked this often (s).
AWAIT_SLICE_S = 0.005


@dataclasses.dataclass
class SearchControl:
    """Signals from the protocol thread to a running search."""

    stop: threading.Event = dataclasses.field(default_factory=threading.Event)
    ponderhit: threading.Event = dataclasses.field(default_factory=threading.Event)


@dataclasses.dataclass(frozen=True)
class PVLine:
    """One MultiPV line, from the root player's point of view."""

    move: Any
    score: Score
    visits: int
    q: float
    prior: float
    pv: list[Any]


@dataclasses.dataclass(frozen=True)
class SearchInfo:
    """A progress report (UCI/USI ``info``, GTP analysis)."""

    depth: int
    seldepth: int
    nodes: int
    evaluations: int
    time_ms: int
    nps: int
    hashfull: int
    lines: list[PVLine]
    tbhits: int = 0  # tablebase probes (UCI ``tbhits``; 0 when none were made)


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """The end of a search: the move to play (``None`` when the root has no legal move)."""

    best_move: Any | None
    ponder_move: Any | None
    info: SearchInfo
    stop_reason: StopReason


InfoCallback = Callable[[SearchInfo], None]

#: Where a stepped search (:meth:`Searcher.steps`) waits: a batch in flight and for how long at most
#: (seconds; ``None``: until it is back).  The driver sends back whether the batch is done.
Wait = tuple[LeafBatch, float | None]


def run_blocking(steps: Generator[Wait, bool, _R]) -> _R:
    """Drive a stepped search on this thread: each wait is a blocking :meth:`LeafBatch.wait`."""
    try:
        wait = next(steps)
        while True:
            batch, timeout = wait
            wait = steps.send(batch.wait(timeout))
    except StopIteration as end:
        return end.value  # type: ignore[no-any-return]


class Searcher:
    """Runs one search on ``tree`` (any :class:`~engine.search.tree_protocol.SearchTree`: the Python
    ``Tree`` or the compiled Go tree) until its limits, budget or ``control`` end it.

    Each pass of the loop asks, in order: did the protocol say ``stop``; does a stopping rule
    (:mod:`engine.search.stoppers`) end the search; is the tree exhausted (terminal, full or proven
    root).  Then it selects the next batch of leaves, waits for the batch in flight (if any), backs
    it up, and starts the new one.

    ``root_verdicts`` (tablebases, :mod:`engine.search.root_verdicts`) become the proofs of the root's
    children as soon as the root is expanded, and the scores of those moves in the reports.
    """

    def __init__(
        self,
        tree: SearchTree[Any],
        evaluator: Evaluator,
        limits: SearchLimits,
        budget: TimeBudget,
        control: SearchControl | None = None,
        executor: Executor | None = None,
        on_info: InfoCallback | None = None,
        info_interval_s: float = 1.0,
        multipv: int = 1,
        answer_cost: AnswerCost | None = None,
        weakening: Weakening | None = None,
        rng: np.random.Generator | None = None,
        root_verdicts: RootVerdicts | None = None,
        calls_in_flight: int = 1,
    ) -> None:
        self.tree = tree
        self.root_verdicts = root_verdicts
        self._verdicts_applied = root_verdicts is None
        self.evaluator = evaluator
        self.limits = limits
        self.budget = budget
        self.control = control or SearchControl()
        self.executor = executor
        self.on_info = on_info
        self.info_interval_s = info_interval_s
        self.multipv = max(1, multipv)
        self.stopper = stopper_for(limits, budget)
        self._t0 = time.perf_counter()
        self._pondering = limits.ponder
        self._in_flight: collections.deque[LeafBatch] = collections.deque()  # oldest first
        self._pace = BatchPace()
        self._call_pace = BatchPace()  # network calls this thread made itself (_take_over_queued)
        self.answer_cost = answer_cost or AnswerCost()
        self.weakening = weakening
        self.rng = rng if rng is not None else np.random.default_rng()
        # A network call goes to the executor only when it is worth overlapping with the tree walk.
        self._executor = executor if evaluator.overlaps else None
        #: Network calls kept running at once (one without an executor: each batch is evaluated at once).
        self.calls_in_flight = max(1, calls_in_flight) if self._executor is not None else 1

    # ---- the loop ------------------------------------------------------------------------------------
    def run(self) -> SearchResult:
        """Search until a stop, then report the best move (and the expected reply to ponder on)."""
        return run_blocking(self.steps())

    def steps(self) -> Generator[Wait, bool, SearchResult]:
        """:meth:`run` as a generator that yields where the search waits for a network call instead of
        waiting, so that one thread can drive many searches (the analysis engine,
        ``protocols/analysis/driver.py``); the same selections and backups in the same order."""
        self.tree.reset_stats()
        self.tree.set_root_moves(self.limits.searchmoves or None)
        self._apply_root_verdicts()  # a reused root is expanded already
        self._pondering = self.limits.ponder
        received = self.limits.received_at
        # the clock runs from the arrival of `go` (tree reuse and set-up count); pondering: from ponderhit
        self._t0 = received if received is not None and not self._pondering else time.perf_counter()
        reason = yield from self._search()
        decided = time.perf_counter()
        yield from self._settle_in_flight(reason)
        self._apply_root_verdicts()  # the root may have been expanded by the last backup
        info = self.info()
        if self.on_info is not None:
            self.on_info(info)
        best, ponder = self._best_and_ponder()
        if reason in (StopReason.TIME, StopReason.DECIDED, StopReason.ONLY_MOVE):
            self.answer_cost.record(time.perf_counter() - decided)
        return SearchResult(best, ponder, info, reason)

    def _search(self) -> Generator[Wait, bool, StopReason]:
        """Select, evaluate and back up batches until a stop; returns why it stopped."""
        tree = self.tree
        next_info = self._t0 + self.info_interval_s
        pass_started = time.perf_counter()
        while True:
            reason = self._stop_now()
            if reason is not None:
                return reason
            size = self._batch_size()  # asked once a pass: the leaves to select, if any
            # a node limit that leaves no leaf to select (the batch in flight counted) ends the search,
            # or, while waiting for ``stop``, makes the loop wait instead of selecting empty batches
            exhausted = self._exhausted() or (self.limits.nodes is not None and size == 0)
            if exhausted and not self._in_flight:
                if self._waiting_for_stop:
                    self.control.stop.wait(0.005)
                    continue
                return self._exhausted_reason()
            if not exhausted and self._batch_would_overrun():
                if not self._in_flight:
                    return StopReason.TIME
                exhausted = True  # no new batch: the ones in flight are the last
            batch = None if exhausted else self._timed(tree.select_batch, size)
            started = batch if batch is not None and len(batch) else None  # None: no leaf to evaluate
            if started is not None:
                # started before the oldest call in flight is backed up: queued behind the calls in
                # flight, so the network goes from one call straight to the next while this thread backs
                # up the oldest (the same selections and backups, in the same order, whatever the timing)
                started.start(self.evaluator, self._executor)
                self._in_flight.append(started)
            if self._in_flight and (started is None or len(self._in_flight) > self.calls_in_flight):
                cut = yield from self._await_in_flight()
                if cut is not None:  # the deadline passed (or stop came) while the network was busy
                    if batch is not None and started is None:
                        tree.cancel_batch(batch)  # an empty selection
                    return cut  # the calls in flight are dropped by _settle_in_flight
                yield from self._back_up_in_flight()
                if not self._verdicts_applied:
                    self._apply_root_verdicts()
            now = time.perf_counter()
            self._pace.record(now - pass_started)
            pass_started = now
            if self.on_info is not None and now >= next_info:
                self.on_info(self.info())
                next_info = now + self.info_interval_s

    @property
    def _waiting_for_stop(self) -> bool:
        """``go infinite`` and pondering end only with ``stop`` (or ``ponderhit``, then the clock)."""
        return self.limits.infinite or self._pondering

    def _stop_now(self) -> StopReason | None:
        """The protocol's ``stop``, then the stopping rules (not while waiting for ``stop``).  At
        ``ponderhit`` the search goes on under its time budget, whose clock starts then."""
        if self.control.stop.is_set():
            return StopReason.STOP
        if self._pondering and self.control.ponderhit.is_set():
            self._pondering = False
            self._t0 = time.perf_counter()
        if self._waiting_for_stop:
            return None
        reason = self.stopper.should_stop(SearchProgress(self.tree, self.elapsed_ms()))
        if reason is None and self.tree.root_expanded:
            deadline = self._deadline()
            if deadline is not None and time.perf_counter() >= deadline:
                return StopReason.TIME
        return reason

    def _deadline(self) -> float | None:
        """When the search must stop (``perf_counter`` seconds) to answer within the hard limit: the
        limit less the session's reserve (:class:`AnswerCost`: recent answers and wake-up delays);
        ``None`` without a hard limit or while waiting for ``stop``."""
        hard = self.budget.hard_ms
        if hard is None or self._waiting_for_stop:
            return None
        return self._t0 + hard / 1000.0 - self.answer_cost.reserve_s

    def _batch_would_overrun(self) -> bool:
        """Whether a batch started now would come back after the deadline: it is backed up one pass
        after the batch in flight (if any), and a pass is assumed to take as long as the slowest of
        this search's recent ones.  Never before the root is expanded (a move must come out)."""
        deadline = self._deadline()
        if deadline is None or not self.tree.root_expanded or not len(self._pace):
            return False
        passes = len(self._in_flight) + 1
        return time.perf_counter() + passes * self._pace.predicted_s > deadline

    def _exhausted(self) -> bool:
        """Nothing left to search: no legal move, no node left, or the root is proven (a proven root is
        still searched while waiting for ``stop``, for the info lines)."""
        tree = self.tree
        proven = tree.root_proof()[0] in (Proof.WIN, Proof.LOSS)
        return tree.root_terminal or tree.full or (proven and not self._waiting_for_stop)

    def _exhausted_reason(self) -> StopReason:
        if self.tree.root_terminal:
            return StopReason.TERMINAL
        return StopReason.FULL if self.tree.full else StopReason.PROVEN

    def _batch_size(self) -> int:
        """Leaves to select now: the configured batch, or what a node limit still allows."""
        k = self.tree.config.batch_size
        if self.limits.nodes is not None:
            in_flight = sum(len(b) for b in self._in_flight)
            k = min(k, self.limits.nodes - self.tree.playouts - in_flight)
        return max(0, k)

    def _await_in_flight(self) -> Generator[Wait, bool, StopReason | None]:
        """Wait for the oldest network call in flight; ``TIME`` or ``STOP`` when the hard limit passes or
        ``stop`` comes first (only once the root is expanded: a move must come out), else ``None``."""
        pending = self._in_flight[0]
        if not pending.in_flight or not self.tree.root_expanded:
            return None  # the backup waits for it
        self._take_over_queued()
        deadline = self._deadline()
        while True:
            asked = time.perf_counter()
            left = AWAIT_SLICE_S if deadline is None else min(AWAIT_SLICE_S, deadline - asked)
            if left <= 0:
                return StopReason.TIME
            if (yield pending, left):
                return None
            self.answer_cost.record_wake(time.perf_counter() - asked - left)  # the machine's delay
            if self.control.stop.is_set():
                return StopReason.STOP

    def _take_over_queued(self) -> None:
        """Make the calls still queued behind the oldest on this thread, oldest first, while the oldest
        runs: on the CPU the helpers and this thread share the cores, and this thread waiting while a
        call waits for a helper leaves a core idle (docs/benchmarks.md,
        "The search thread makes calls too").  None that would end past the deadline (taken to last
        as long as the slowest recent call made here or loop pass); none off the CPU."""
        if not self.evaluator.shares_cores:
            return
        deadline = self._deadline()
        oldest = self._in_flight[0]
        for batch in itertools.islice(self._in_flight, 1, None):  # take_over leaves the deque alone
            if oldest.wait(0):
                return
            started = time.perf_counter()
            lasts = max(self._call_pace.predicted_s, self._pace.predicted_s) + self.answer_cost.stall_s
            if deadline is not None and started + lasts > deadline:
                return
            cpu = time.thread_time()
            if batch.take_over():
                self._call_pace.record(time.perf_counter() - started)
                self.answer_cost.record_stall(time.perf_counter() - started, time.thread_time() - cpu)

    def _apply_root_verdicts(self) -> None:
        """Once the root is expanded, make the root verdicts' wins and losses the proofs of its children
        (once per search)."""
        if self._verdicts_applied or not self.tree.root_expanded:
            return
        self._verdicts_applied = True
        assert self.root_verdicts is not None
        self.tree.prove_root_moves(self.root_verdicts.proofs())

    def _back_up_in_flight(self) -> Generator[Wait, bool, None]:
        """Back up the oldest batch in flight (waiting for its call first)."""
        oldest = self._in_flight[0]
        while oldest.in_flight and not (yield oldest, None):
            pass
        self._timed(self.tree.backup_batch, self._in_flight.popleft())

    def _timed(self, work: Callable[[_A], _R], arg: _A) -> _R:
        """``work(arg)``, a stretch this thread cannot cut short, with the time it waited for a core
        meanwhile recorded (:meth:`AnswerCost.record_stall`): the deadline keeps that much back."""
        wall, cpu = time.perf_counter(), time.thread_time()
        result = work(arg)
        self.answer_cost.record_stall(time.perf_counter() - wall, time.thread_time() - cpu)
        return result

    def _settle_in_flight(self, reason: StopReason) -> Generator[Wait, bool, None]:
        """After the loop: the batches still in flight are dropped when time or ``stop`` ended the search
        (answer now; their network calls are ended, the newest first), else waited for and backed up,
        the oldest first."""
        if not self._in_flight:
            return
        if reason in (StopReason.TIME, StopReason.STOP) and self.tree.root_expanded:
            self.evaluator.cancel()
            while self._in_flight:
                pending = self._in_flight.pop()
                pending.withdraw()
                self.tree.cancel_batch(pending)
        else:
            while self._in_flight:
                yield from self._back_up_in_flight()

    def _best_and_ponder(self) -> tuple[Any | None, Any | None]:
        """The move to play and the second move of its principal variation (``None`` when absent)."""
        slot = self.tree.best_root_slot()
        if slot is None:
            return None, None
        if self.weakening is not None:
            slot = self._weakened_slot(slot)
        pv = self.tree.principal_variation(slot)
        return self.tree.root_move(slot), pv[1] if len(pv) > 1 else None

    def _weakened_slot(self, best: int) -> int:
        """The strength-limited choice (:func:`~engine.strength.choose_root_slot`) over the root's
        statistics; ``best`` is the usual choice."""
        assert self.weakening is not None
        tree = self.tree
        visits = tree.root_child_visits()
        stats = [tree.slot_stats(slot) for slot in range(len(visits))]
        q = np.array([s[1] for s in stats], dtype=np.float64)
        proofs = np.array([s[2] for s in stats], dtype=np.int64)
        searchmoves = self.limits.searchmoves
        allowed = np.array(
            [not searchmoves or tree.root_move(slot) in searchmoves for slot in range(len(visits))],
            dtype=bool,
        )
        return choose_root_slot(visits, q, proofs, allowed, best, self.weakening, self.rng)

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1000.0

    def depth(self) -> int:
        return search_depth(self.tree)

    # ---- reports -----------------------------------------------------------------------------------
    def info(self) -> SearchInfo:
        tree = self.tree
        elapsed = max(self.elapsed_ms(), 1e-3)
        lines: list[PVLine] = []
        if tree.root_expanded:
            for slot in tree.ranked_root_slots()[: self.multipv]:
                n, q, proof, plies = tree.slot_stats(slot)
                if n <= 0 and lines:
                    break
                move = tree.root_move(slot)
                score, q = self._score(move, q, proof, plies)
                pv = tree.principal_variation(slot)
                lines.append(PVLine(move, score, int(n), q, tree.root_prior(slot), pv))
        return SearchInfo(
            depth=self.depth(),
            seldepth=tree.max_depth,
            nodes=tree.playouts,
            evaluations=tree.evaluations,
            time_ms=int(elapsed),
            nps=int(tree.playouts * 1000.0 / elapsed),
            hashfull=min(1000, int(1000 * tree.fill)),
            lines=lines,
            tbhits=self.root_verdicts.hits if self.root_verdicts is not None else 0,
        )

    def _score(self, move: Any, q: float, proof: int, plies: int) -> tuple[Score, float]:
        """A root move's reported score and value: a mate the tree proved (``mate N``), else the move's
        root verdict (a tablebase score and its exact value), else a tablebase proof left in a reused
        tree, else ``q``'s centipawns."""
        decided = proof in (Proof.WIN, Proof.LOSS)
        if decided and plies < TABLEBASE_PLIES:
            return mate_score(plies, proof == Proof.WIN), q
        verdict = self.root_verdicts.moves.get(move) if self.root_verdicts is not None else None
        if verdict is not None:
            return verdict.score, verdict.q
        if decided:
            return tablebase_score(Proof(proof), 1), float(proof)
        return Score(cp=q_to_cp(q)), q
