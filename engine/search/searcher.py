"""The engine's search loop over one tree: limits, time, pipelined network calls, info reports.

Network calls run on a worker thread (onnxruntime releases the GIL) while the next batch of leaves is
selected, so tree work overlaps inference: ``select(B) | evaluate(A)`` then ``backup(A)``.  The order
of selections and backups does not depend on timing, so node-limited searches are deterministic.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import numpy as np

from engine.evaluator import Evaluation, Evaluator
from engine.search.limits import SearchLimits
from engine.search.score import Score, plies_to_mate_moves, q_to_cp
from engine.search.time_manager import TimeBudget
from engine.search.tree import PROVEN_LOSS, PROVEN_WIN, Leaf, Tree

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
    cache_hits: int
    time_ms: int
    nps: int
    hashfull: int
    lines: list[PVLine]


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """The end of a search: the move to play (``None`` when the root has no legal move)."""

    best_move: Any | None
    ponder_move: Any | None
    info: SearchInfo
    stop_reason: str


InfoCallback = Callable[[SearchInfo], None]


def evaluate_leaves(evaluator: Evaluator, leaves: Sequence[Leaf]) -> list[Evaluation]:
    """One network call for a batch of leaves (planes stacked to ``[B, C, H, W]``)."""
    planes = np.stack([leaf.planes for leaf in leaves])
    return evaluator.evaluate(planes, [leaf.legal for leaf in leaves])


def submit_leaves(
    executor: Executor, infer: Callable[[np.ndarray, list[np.ndarray]], Any], leaves: Sequence[Leaf]
) -> Future[Any]:
    """Start the network call of a batch of leaves on ``executor``: the planes (``[B, C, H, W]``) are
    stacked here and only ``infer`` (:meth:`Evaluator.infer`, or a wrapper of it) runs on the helper
    thread (with ``OnnxEvaluator``, onnxruntime alone, which holds no GIL while this thread walks the
    trees); :func:`finish_leaves` makes the evaluations from its result."""
    planes = np.stack([leaf.planes for leaf in leaves])
    return executor.submit(infer, planes, [leaf.legal for leaf in leaves])


def finish_leaves(evaluator: Evaluator, leaves: Sequence[Leaf], inferred: Any) -> list[Evaluation]:
    """The evaluations of a batch started by :func:`submit_leaves`, from its future's result."""
    return evaluator.finish(inferred, [leaf.legal for leaf in leaves])


class Searcher:
    """Runs one search on ``tree`` until its limits, budget or ``control`` end it."""

    def __init__(
        self,
        tree: Tree,
        evaluator: Evaluator,
        limits: SearchLimits,
        budget: TimeBudget,
        control: SearchControl | None = None,
        executor: Executor | None = None,
        on_info: InfoCallback | None = None,
        info_interval_s: float = 1.0,
        multipv: int = 1,
    ) -> None:
        self.tree = tree
        self.evaluator = evaluator
        self.limits = limits
        self.budget = budget
        self.control = control or SearchControl()
        self.executor = executor
        self.on_info = on_info
        self.info_interval_s = info_interval_s
        self.multipv = max(1, multipv)
        self._t0 = time.perf_counter()
        self._last_best: Any = None
        self._last_change_s = 0.0

    # ---- the loop ------------------------------------------------------------------------------------
    def run(self) -> SearchResult:
        tree = self.tree
        tree.reset_stats()
        tree.set_root_moves(self.limits.searchmoves or None)
        limits = self.limits
        pondering = limits.ponder
        self._t0 = time.perf_counter()
        next_info = self._t0 + self.info_interval_s
        in_flight: tuple[list[Leaf], Future[Any] | list[Evaluation]] | None = None
        reason = ""
        while True:
            if self.control.stop.is_set():
                reason = "stop"
                break
            if pondering and self.control.ponderhit.is_set():
                pondering = False
                self._t0 = time.perf_counter()  # the clock starts at ponderhit
            waiting_for_stop = limits.infinite or pondering
            if not waiting_for_stop:
                reason = self._limit_reached()
                if reason:
                    break
            exhausted = (
                tree.root_terminal
                or tree.full
                or (tree.root.proven in (PROVEN_WIN, PROVEN_LOSS) and not waiting_for_stop)
            )
            if exhausted and in_flight is None:
                if waiting_for_stop:
                    self.control.stop.wait(0.005)
                    continue
                reason = "terminal" if tree.root_terminal else "full" if tree.full else "proven"
                break
            in_flight_count = len(in_flight[0]) if in_flight is not None else 0
            leaves = [] if exhausted else tree.select_leaves(self._batch_size(in_flight_count))
            if in_flight is not None:
                cut = self._await(in_flight[1], waiting_for_stop)
                if cut:  # the deadline passed (or stop came) while the network was busy
                    self.evaluator.cancel()
                    tree.cancel(leaves)
                    reason = cut
                    break
                self._finish(in_flight)
                in_flight = None
            if leaves:
                in_flight = (leaves, self._submit(leaves))
            now = time.perf_counter()
            if self.on_info is not None and now >= next_info:
                self.on_info(self.info())
                next_info = now + self.info_interval_s
        if in_flight is not None:
            if reason in ("time", "stop") and tree.root.expanded:
                self.evaluator.cancel()  # answer now; the batch's network call is ended and dropped
                tree.cancel(in_flight[0])
            else:
                self._finish(in_flight)
        info = self.info()
        if self.on_info is not None:
            self.on_info(info)
        best = tree.best_move()
        ponder = None
        if best is not None:
            slots = tree.ranked_root_slots()
            pv = tree.principal_variation(slots[0])
            ponder = pv[1] if len(pv) > 1 else None
        return SearchResult(best, ponder, info, reason)

    def _batch_size(self, in_flight: int) -> int:
        """Leaves to select now: the configured batch, or what a node limit still allows."""
        k = self.tree.config.batch_size
        if self.limits.nodes is not None:
            k = min(k, self.limits.nodes - self.tree.playouts - in_flight)
        return max(0, k)

    def _submit(self, leaves: list[Leaf]) -> Future[Any] | list[Evaluation]:
        if self.executor is None:
            return evaluate_leaves(self.evaluator, leaves)
        return submit_leaves(self.executor, self.evaluator.infer, leaves)

    def _await(self, pending: Future[Any] | list[Evaluation], waiting_for_stop: bool) -> str:
        """Wait for a network call; ``"time"`` or ``"stop"`` when the hard limit passes or ``stop``
        comes first (only once the root is expanded: a move must come out), else ``""``."""
        if not isinstance(pending, Future) or not self.tree.root.expanded:
            return ""
        hard = self.budget.hard_ms
        deadline = None if hard is None or waiting_for_stop else self._t0 + hard / 1000.0
        while True:
            left = AWAIT_SLICE_S if deadline is None else min(AWAIT_SLICE_S, deadline - time.perf_counter())
            if left <= 0:
                return "time"
            try:
                pending.result(timeout=left)
                return ""
            except FutureTimeout:
                if self.control.stop.is_set():
                    return "stop"

    def _finish(self, in_flight: tuple[list[Leaf], Any]) -> None:
        leaves, pending = in_flight
        evals = (
            finish_leaves(self.evaluator, leaves, pending.result())
            if isinstance(pending, Future)
            else pending
        )
        self.tree.backup(leaves, evals)

    # ---- limits ------------------------------------------------------------------------------------
    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self._t0) * 1000.0

    def _limit_reached(self) -> str:
        tree = self.tree
        limits = self.limits
        if not tree.root.expanded:
            return ""  # always search the root at least once: a move must come out
        if limits.nodes is not None and tree.playouts >= limits.nodes:
            return "nodes"
        if limits.depth is not None and self.depth() >= limits.depth:
            return "depth"
        if (
            limits.mate is not None
            and tree.root.proven == PROVEN_WIN
            and (tree.root.proven_plies + 1) // 2 <= limits.mate
        ):
            return "mate"
        budget = self.budget
        if budget.hard_ms is None:
            return ""
        elapsed = self.elapsed_ms()
        if elapsed >= budget.hard_ms:
            return "time"
        if not budget.managed:
            return ""
        root = tree.root
        n = root.child_n
        if len(n) == 1:
            return "only-move"
        best_slot = int(np.argmax(n))
        best = root.moves[best_slot]  # type: ignore[index]
        if best != self._last_best:
            self._last_best = best
            self._last_change_s = elapsed
        soft = budget.soft_ms or 0.0
        # Past the soft limit, stretch towards the hard limit while the best move changed in the last quarter.
        if elapsed >= soft and elapsed - self._last_change_s >= 0.25 * elapsed:
            return "time"
        # Early stop: the most visited move cannot be overtaken before the soft limit.
        if elapsed > 0.1 * soft and len(n) > 1 and tree.playouts > 0:
            top2 = np.partition(n, -2)[-2:]
            rate = tree.playouts / max(elapsed, 1.0)
            remaining = rate * max(0.0, soft - elapsed)
            if top2[1] - top2[0] > remaining:
                return "decided"
        return ""

    def depth(self) -> int:
        tree = self.tree
        return max(1, round(tree.depth_sum / tree.playouts)) if tree.playouts else 0

    # ---- reports -----------------------------------------------------------------------------------
    def info(self) -> SearchInfo:
        tree = self.tree
        elapsed = max(self.elapsed_ms(), 1e-3)
        lines: list[PVLine] = []
        root = tree.root
        if root.expanded:
            for slot in tree.ranked_root_slots()[: self.multipv]:
                n, q, proof, plies = tree.slot_stats(slot)
                if n <= 0 and lines:
                    break
                if proof == PROVEN_WIN:
                    score = Score(cp=12800, mate=plies_to_mate_moves(plies, True))
                elif proof == PROVEN_LOSS:
                    score = Score(cp=-12800, mate=plies_to_mate_moves(plies, False))
                else:
                    score = Score(cp=q_to_cp(q))
                lines.append(
                    PVLine(
                        root.moves[slot],
                        score,
                        int(n),
                        q,
                        float(root.prior[slot]),
                        tree.principal_variation(slot),
                    )
                )  # type: ignore[index]
        return SearchInfo(
            depth=self.depth(),
            seldepth=tree.max_depth,
            nodes=tree.playouts,
            evaluations=tree.evaluations,
            cache_hits=tree.cache_hits,
            time_ms=int(elapsed),
            nps=int(tree.playouts * 1000.0 / elapsed),
            hashfull=min(1000, int(1000 * tree.node_count / tree.config.node_budget)),
            lines=lines,
        )
