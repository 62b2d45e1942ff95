"""A batch's network call (``engine.search.batch.DenseBatch``): made on a helper, or taken over by the
caller while it still waits in the helper's queue."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.evaluator import Evaluation, Evaluator, LegalRows
from engine.search.batch import DenseBatch


class ThreadNamingEvaluator(Evaluator):
    """Value: the number of the thread that made the call in a list of threads it has seen (0 first);
    priors uniform."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        me = threading.get_ident()
        if me not in self.threads:
            self.threads.append(me)
        value = float(self.threads.index(me))
        return [Evaluation(np.full(len(x), 1.0 / len(x), np.float32), value) for x in legal]


def _batch() -> DenseBatch:
    legal = LegalRows.from_lists([np.array([0, 2, 5]), np.array([1, 3])])
    return DenseBatch(np.zeros((2, 1, 3, 3), np.float32), legal)


def test_a_queued_call_is_taken_over_and_made_here() -> None:
    evaluator = ThreadNamingEvaluator()
    evaluator.evaluate_dense(np.zeros((1, 1, 3, 3), np.float32), LegalRows.from_lists([np.array([0])]))
    release = threading.Event()
    with ThreadPoolExecutor(max_workers=1) as helper:
        blocker = helper.submit(release.wait)  # the helper is busy: the batch's call waits in its queue
        batch = _batch()
        batch.start(evaluator, helper)
        assert batch.in_flight
        assert batch.take_over()
        assert not batch.in_flight and batch.wait(0)
        release.set()
        blocker.result()
    priors, values = batch.result()
    np.testing.assert_array_equal(values, [0.0, 0.0])  # made on this thread, the first one seen
    np.testing.assert_allclose(priors, [[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0.0]], rtol=1e-6)
    assert evaluator.threads == [threading.get_ident()]  # the helper never made it


def test_a_call_begun_or_made_at_once_is_not_taken_over() -> None:
    evaluator = ThreadNamingEvaluator()
    evaluator.evaluate_dense(np.zeros((1, 1, 3, 3), np.float32), LegalRows.from_lists([np.array([0])]))
    with ThreadPoolExecutor(max_workers=1) as helper:
        begun = _batch()
        begun.start(evaluator, helper)
        begun.wait()
        assert not begun.take_over()
        np.testing.assert_array_equal(begun.result()[1], [1.0, 1.0])  # made on the helper
    at_once = _batch()
    at_once.start(evaluator, None)
    assert not at_once.take_over()
    np.testing.assert_array_equal(at_once.result()[1], [0.0, 0.0])
