"""The analysis engine's driver (``protocols/analysis/driver.py``): many searches stepped on one thread
build the trees the blocking search loop builds, a failed network call ends its search alone (with the
search's ``finally`` run), and a wait with a limit lets a stopped search answer while its call runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from engine.evaluator import Evaluation, LegalRows
from engine.search.config import SearchConfig
from engine.search.limits import SearchLimits
from engine.search.searcher import SearchControl, Searcher, SearchResult
from engine.search.stoppers import StopReason
from engine.search.tree_factory import new_tree
from protocols.analysis.driver import SearchDriver, Steps
from tests.engine.search.test_calls_in_flight import NO_CLOCK, POSITIONS, _state
from tests.engine.search.test_compiled_go import PlaneHashEvaluator


@pytest.fixture(scope="module")
def pool() -> Iterator[ThreadPoolExecutor]:
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


class SlowHashEvaluator(PlaneHashEvaluator):
    """:class:`PlaneHashEvaluator` after ``delay_s`` (the GIL released, as onnxruntime's calls), raising
    from its ``fail_after``-th call on when that is set."""

    def __init__(self, policy_size: int, seed: int, delay_s: float = 0.0, fail_after: int | None = None):
        super().__init__(policy_size, seed)
        self.delay_s = delay_s
        self.fail_after = fail_after
        self.calls = 0
        self._lock = threading.Lock()

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        with self._lock:
            self.calls += 1
            failing = self.fail_after is not None and self.calls > self.fail_after
        time.sleep(self.delay_s)
        if failing:
            raise RuntimeError("the network failed")
        return super().evaluate(planes, legal)

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        return super().evaluate_dense(planes, legal)


def _searcher(label: str, evaluator: Any, pool: ThreadPoolExecutor, nodes: int, **kw: Any) -> Searcher:
    tree = new_tree(_state(label), SearchConfig(batch_size=8))
    return Searcher(
        tree,
        evaluator,
        SearchLimits(nodes=nodes),
        NO_CLOCK,
        executor=pool,
        multipv=3,
        calls_in_flight=2,
        **kw,
    )


def _drive(searches: list[Steps], capacity: int) -> list[tuple[Any, BaseException | None]]:
    """Step ``searches`` on this thread, ``capacity`` at once; each one's (result, error)."""
    ended: list[tuple[Any, BaseException | None]] = [(None, None)] * len(searches)
    queue = list(enumerate(searches))
    driver: SearchDriver

    def admit(free: int) -> list[tuple[Steps, Any]]:
        taken, queue[:] = queue[:free], queue[free:]
        if not queue:
            driver.close()
        return [(steps, _recorder(ended, i)) for i, steps in taken]

    driver = SearchDriver(admit, capacity)
    driver.run()
    return ended


def _recorder(ended: list[tuple[Any, BaseException | None]], i: int) -> Any:
    def end(result: Any, exc: BaseException | None) -> None:
        ended[i] = (result, exc)

    return end


def test_stepped_searches_build_the_blocking_loops_trees(pool: ThreadPoolExecutor) -> None:
    labels = sorted(POSITIONS) * 2
    blocking = [
        _searcher(label, SlowHashEvaluator(_state(label).info.policy_size, 5), pool, 300) for label in labels
    ]
    want = [s.run() for s in blocking]
    stepped = [
        _searcher(label, SlowHashEvaluator(_state(label).info.policy_size, 5, 0.001), pool, 300)
        for label in labels
    ]
    ended = _drive([s.steps() for s in stepped], capacity=4)
    for searcher, reference, expected, (got, exc) in zip(stepped, blocking, want, ended, strict=True):
        assert exc is None and isinstance(got, SearchResult)
        assert got.best_move == expected.best_move and got.info.nodes == expected.info.nodes == 300
        assert got.info.lines == expected.info.lines
        np.testing.assert_array_equal(searcher.tree.root_child_visits(), reference.tree.root_child_visits())


def test_a_failed_network_call_ends_its_search_alone(pool: ThreadPoolExecutor) -> None:
    closed: list[int] = []

    def search(searcher: Searcher, i: int) -> Steps:
        try:
            return (yield from searcher.steps())
        finally:
            closed.append(i)

    size = _state("chess").info.policy_size
    good = _searcher("chess", SlowHashEvaluator(size, 5, 0.001), pool, 200)
    bad = _searcher("chess", SlowHashEvaluator(size, 5, 0.001, fail_after=3), pool, 200)
    ended = _drive([search(good, 0), search(bad, 1)], capacity=2)
    assert ended[0][1] is None and ended[0][0].info.nodes == 200
    assert isinstance(ended[1][1], RuntimeError) and "the network failed" in str(ended[1][1])
    assert sorted(closed) == [0, 1]


def test_a_stopped_search_answers_while_its_call_runs(pool: ThreadPoolExecutor) -> None:
    control = SearchControl()
    size = _state("go9").info.policy_size
    slow = SlowHashEvaluator(size, 5, 0.0)
    searcher = _searcher("go9", slow, pool, 100_000, control=control)

    def stop_soon() -> None:
        time.sleep(0.3)
        slow.delay_s = 5.0  # the calls from now on take long
        time.sleep(0.3)
        control.stop.set()

    threading.Thread(target=stop_soon, daemon=True).start()
    started = time.perf_counter()
    ended = _drive([searcher.steps()], capacity=1)
    took = time.perf_counter() - started
    result, exc = ended[0]
    assert exc is None and result.stop_reason is StopReason.STOP and result.best_move is not None
    assert took < 3.0  # not the 5 s of the call in flight


def test_an_end_that_cannot_be_handled_does_not_end_the_driver(pool: ThreadPoolExecutor) -> None:
    size = _state("chess").info.policy_size
    searches = [_searcher("chess", SlowHashEvaluator(size, 5, 0.001), pool, 100) for _ in range(2)]
    ended: list[int] = []
    queue = list(enumerate(searches))
    driver: SearchDriver

    def end_of(i: int) -> Any:
        def end(result: Any, exc: BaseException | None) -> None:
            ended.append(i)
            if i == 0:
                raise BrokenPipeError("the client went away")

        return end

    def admit(free: int) -> list[tuple[Steps, Any]]:
        taken, queue[:] = queue[:1], queue[1:]  # one at a time: the second starts after the first ended
        if not queue:
            driver.close()
        return [(s.steps(), end_of(i)) for i, s in taken]

    driver = SearchDriver(admit, 1)
    driver.run()
    assert ended == [0, 1]
