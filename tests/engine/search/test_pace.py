"""engine.search.pace and the searcher's deadline: measured pass times and answer costs, not constants,
decide when a search with a hard limit stops (docs/design.md, "Keeping the hard limit on a busy machine")."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.games import get_game
from engine.inference import UniformEvaluator
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.pace import AnswerCost, BatchPace
from engine.search.searcher import Searcher, SearchResult
from engine.search.time_manager import TimeBudget
from tests.engine.search.reference_tree import Tree


def test_batch_pace_predicts_the_slowest_recent_pass_and_forgets_old_ones() -> None:
    pace = BatchPace(window=3)
    assert pace.predicted_s == 0.0 and len(pace) == 0
    for seconds in (0.010, 0.050, 0.020):
        pace.record(seconds)
    assert pace.predicted_s == 0.050
    pace.record(0.015)
    pace.record(0.012)  # the 50 ms spike has left the window
    assert pace.predicted_s == 0.020
    pace.record(-1.0)  # a clock that went backwards counts as nothing
    assert len(pace) == 3 and pace.predicted_s == 0.015


def test_answer_cost_keeps_back_the_slowest_answer_and_twice_the_latest_wake_up() -> None:
    cost = AnswerCost(floor_s=0.002, window=2, wake_window=2)
    assert cost.reserve_s == 0.002  # nothing measured yet: the floor
    assert AnswerCost().floor_s == 0.005  # the engine's
    cost.record(0.004)
    cost.record(0.001)
    assert cost.reserve_s == 0.004
    cost.record_wake(0.010)
    assert np.isclose(cost.reserve_s, 0.004 + 2 * 0.010)
    cost.record_wake(0.0)
    cost.record_wake(0.001)  # the 10 ms wake-up has left the window
    cost.record(0.0)
    cost.record(0.0)
    assert np.isclose(cost.reserve_s, max(0.002, 2 * 0.001))


def test_answer_cost_keeps_back_the_longest_stall_of_uncut_work() -> None:
    """Work the search thread cannot cut short that waited for a core (wall time over CPU time) moves
    the deadline forward by the longest such wait among the last ``stall_window``."""
    cost = AnswerCost(floor_s=0.0, window=2, wake_window=2, stall_window=2)
    cost.record_stall(0.003, 0.003)  # ran on a core throughout: no stall
    assert cost.stall_s == 0.0 and cost.reserve_s == 0.0
    cost.record_stall(0.018, 0.002)  # a 2 ms network call that took 18 ms
    assert np.isclose(cost.stall_s, 0.016)
    cost.record(0.001)
    cost.record_wake(0.002)
    assert np.isclose(cost.reserve_s, 0.001 + 2 * 0.002 + 0.016)
    cost.record_stall(0.001, 0.002)  # more CPU than wall (a multi-threaded call): counts as none
    cost.record_stall(0.004, 0.001)  # the 16 ms stall has left the window
    assert np.isclose(cost.stall_s, 0.003)


class _PacedEvaluator(UniformEvaluator):
    """A network call that takes ``delay`` seconds; counts the calls that were started and finished."""

    overlaps = True

    def __init__(self, info, delay: float) -> None:  # type: ignore[no-untyped-def]
        super().__init__(info)
        self.delay = delay
        self.started = 0
        self.finished = 0

    def evaluate_dense(self, planes, legal):  # type: ignore[no-untyped-def]
        self.started += 1
        time.sleep(self.delay)
        self.finished += 1
        return super().evaluate_dense(planes, legal)


def _chess_tree() -> Tree:
    state = get_game("chess").new_state()
    return Tree(state, SearchConfig(batch_size=8))


def test_no_batch_is_started_that_cannot_come_back_before_the_deadline() -> None:
    """Network calls of 40 ms and a 300 ms hard limit: the search stops before starting a call whose
    result would come after the limit, so every call it started was backed up and none was cut."""
    tree = _chess_tree()
    evaluator = _PacedEvaluator(tree.state.info, 0.04)
    cancelled: list[object] = []
    cancel = tree.cancel_batch
    tree.cancel_batch = lambda batch: (cancelled.append(batch), cancel(batch))[1]  # type: ignore[method-assign]
    with ThreadPoolExecutor(max_workers=1) as executor:
        t = time.perf_counter()
        result = Searcher(
            tree, evaluator, SearchLimits(movetime_ms=300), TimeBudget(300, 300, False), executor=executor
        ).run()
        elapsed_ms = (time.perf_counter() - t) * 1000
    assert result.stop_reason == "time" and result.best_move is not None
    assert elapsed_ms < 300 and result.info.time_ms <= 300
    assert evaluator.started >= 4  # it searched, not stopped at once
    assert not cancelled and evaluator.started == evaluator.finished


def test_the_budget_counts_from_when_go_was_received() -> None:
    """``received_at`` 150 ms before the search starts: a 250 ms budget leaves it 100 ms, and the
    reported time includes the 150 ms already gone."""
    tree = _chess_tree()
    evaluator = _PacedEvaluator(tree.state.info, 0.005)
    received = time.perf_counter() - 0.150
    with ThreadPoolExecutor(max_workers=1) as executor:
        t = time.perf_counter()
        result = Searcher(
            tree,
            evaluator,
            SearchLimits(movetime_ms=250, received_at=received),
            TimeBudget(250, 250, False),
            executor=executor,
        ).run()
        searched_ms = (time.perf_counter() - t) * 1000
    assert result.stop_reason == "time"
    assert searched_ms < 100 + 20  # what was left of the budget (and one slice of waiting)
    assert 150 <= result.info.time_ms <= 250


def _timed_search(evaluator: _PacedEvaluator, executor: ThreadPoolExecutor, cost: AnswerCost) -> SearchResult:
    """A 100 ms search of the chess start position sharing ``cost``."""
    limits, budget = SearchLimits(movetime_ms=100), TimeBudget(100, 100, False)
    return Searcher(_chess_tree(), evaluator, limits, budget, executor=executor, answer_cost=cost).run()


def test_answer_cost_is_measured_by_each_timed_search_and_moves_the_deadline() -> None:
    """A session's searches share one :class:`AnswerCost`: a timed search records how long answering
    took, and a large reserve makes the next search stop that much earlier."""
    cost = AnswerCost()
    with ThreadPoolExecutor(max_workers=1) as executor:
        evaluator = _PacedEvaluator(_chess_tree().state.info, 0.002)
        _timed_search(evaluator, executor, cost)
        assert len(cost._costs) == 1  # one answer measured
        cost.record(0.080)  # say answering once took 80 ms
        t = time.perf_counter()
        result = _timed_search(evaluator, executor, cost)
        assert result.stop_reason == "time"
        assert (time.perf_counter() - t) * 1000 < 100 - 80 + 30  # stopped about 80 ms early
