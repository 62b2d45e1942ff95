"""One network for many searches at once: the analysis engine's cross-position batching.

Every position being analysed runs the engine's own search loop (:class:`~engine.search.searcher.Searcher`)
on its own thread, with a :class:`JobEvaluator` as its network.  A job evaluator does not call the
network itself: it hands its batch (planes and legal index rows) to the :class:`SharedNetwork`, whose
workers put the batches of every search waiting into one network call (positions of many queries and
many turns in one array), and hand each batch its rows of the result.  The searches' selections and
backups happen in the order the search loop makes them, whatever the timing, so a position analysed
here gets the tree ``go nodes N`` would build (the same network rows bit for bit: each row of a call is
computed alone, and the softmax runs per row).

Positions evaluated once are kept (:attr:`SharedNetwork.cache_rows` of them, the oldest dropped
first), keyed by their planes and legal moves, so a position that the searches of several turns of
one game reach (the tree of turn ``t`` holds the first plies of turn ``t + 1``'s) is evaluated once:
KataGo's analysis engine keeps such a cache too (``clear_cache`` empties it).  A cached row is the row
the network gives for those planes, so the searches are unchanged by it.

A worker starts a call as soon as the searches of its share have a batch waiting (with ``calls``
workers, one search in ``calls`` of those attached), or ``max_rows`` rows are waiting, or the oldest
waiting batch has waited ``linger_s`` (a search busy elsewhere, a mate search at its root, must not
hold the others back).  ``calls`` workers keep that many calls running at once, on the cores the
engine's ``Threads`` plan gives them (``engine.network_loading.inference_plan``).  Calls of a share
each, not of every search, keep the searches out of lockstep: while one share's rows are in the
network, the other shares' searches select and back up on the other cores (docs/analysis.md,
"Throughput").
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Executor, Future
from typing import Any

import numpy as np

from engine.evaluator import Evaluation, Evaluator, LegalRows


@dataclasses.dataclass
class _Request:
    """One search's batch waiting for its rows of a shared call.

    Attributes:
        job: the search's key (:meth:`SharedNetwork.attach`).
        planes: float32 ``[B, C, H, W]`` (or the uint8 planes of a tree that writes them).
        legal: the legal index rows, int64 ``[B, M]`` and ``[B]``.
        arrived: ``perf_counter`` time it was handed in.
    """

    job: int
    planes: np.ndarray
    legal: LegalRows
    arrived: float
    keys: list[tuple[int, int, int]] = dataclasses.field(default_factory=list)
    missing: list[int] = dataclasses.field(default_factory=list)
    done: threading.Event = dataclasses.field(default_factory=threading.Event)
    future: Future[tuple[np.ndarray, np.ndarray]] | None = None
    priors: np.ndarray | None = None
    values: np.ndarray | None = None
    error: BaseException | None = None

    def key(self) -> tuple[object, ...]:
        """Requests that can share one call: the same kind of planes and the same legal row width."""
        return (self.planes.dtype, self.planes.shape[1:], self.legal.indices.shape[1])

    def fill(
        self,
        known: dict[tuple[int, int, int], tuple[np.ndarray, np.floating]],
        called: dict[tuple[int, int, int], int] | None = None,
        priors: np.ndarray | None = None,
        values: np.ndarray | None = None,
    ) -> None:
        """Make ``priors [B, M]`` and ``values [B]``: each row from ``known`` (kept rows, by key) or, by
        ``called[key]``, from the call's ``priors`` and ``values``."""
        width = self.legal.indices.shape[1]
        if priors is not None and values is not None:
            kinds = (priors.dtype, values.dtype)
        else:
            row, value = known[self.keys[0]]
            kinds = (row.dtype, np.asarray(value).dtype)
        out_priors = np.zeros((len(self.keys), width), kinds[0])
        out_values = np.empty(len(self.keys), kinds[1])
        for i, key in enumerate(self.keys):
            if key in known:
                row, value = known[key]
                out_priors[i, : row.shape[0]] = row
                out_values[i] = value
            else:
                assert called is not None and priors is not None and values is not None
                j = called[key]
                out_priors[i] = priors[j]
                out_values[i] = values[j]
        self.priors, self.values = out_priors, out_values

    def finish(self) -> None:
        """Wake whoever waits: the event, and the future (unless the search withdrew it)."""
        self.done.set()
        future = self.future
        if future is None or future.done():
            return
        if self.error is not None:
            future.set_exception(self.error)
        else:
            assert self.priors is not None and self.values is not None
            future.set_result((self.priors, self.values))


class SharedNetwork:
    """Network calls shared by the searches of many positions (module docstring).

    Args:
        evaluator: the network (loaded with a batch size of at least ``max_rows``, so a call of that
            many rows is one onnxruntime call, and calls side by side are not serialized).
        calls: network calls kept running at once (one worker thread each).
        max_rows: the most positions of one call.
        linger_s: how long the oldest waiting batch may wait for others.

        cache_rows: the most evaluated positions kept (0: none).

    Attributes:
        calls_made, rows_evaluated, rows_cached: counters (network calls, rows they evaluated, rows
            answered from the cache).
    """

    def __init__(
        self,
        evaluator: Evaluator,
        calls: int = 1,
        max_rows: int = 256,
        linger_s: float = 0.002,
        cache_rows: int = 200_000,
    ) -> None:
        self.evaluator = evaluator
        self.cache_rows = cache_rows
        self.rows_cached = 0
        self._cache: dict[tuple[int, int, int], tuple[np.ndarray, np.floating]] = {}
        self.max_rows = max(1, max_rows)
        self.linger_s = linger_s
        self.calls_made = 0
        self.rows_evaluated = 0
        self._cond = threading.Condition()
        self._pending: list[_Request] = []
        self._attached: set[int] = set()
        self._next_job = 0
        self._closed = False
        self._workers = [
            threading.Thread(target=self._work, name="tabula-analysis-net", daemon=True)
            for _ in range(max(1, calls))
        ]
        for worker in self._workers:
            worker.start()

    # ---- searches ------------------------------------------------------------------------------------
    def attach(self) -> JobEvaluator:
        """A network for one more search (:meth:`detach` it when the search is over)."""
        with self._cond:
            self._next_job += 1
            job = self._next_job
            self._attached.add(job)
        return JobEvaluator(self, job)

    def detach(self, job: int) -> None:
        """The search ``job`` is over: calls no longer wait for it."""
        with self._cond:
            self._attached.discard(job)
            self._cond.notify_all()

    def submit(
        self,
        job: int,
        planes: np.ndarray,
        legal: LegalRows,
        future: Future[tuple[np.ndarray, np.ndarray]] | None = None,
    ) -> _Request:
        """Queue one batch of search ``job``; its request's ``done`` is set (and ``future``'s result)
        once its rows are back (at once when the cache holds them all)."""
        request = _Request(job, planes, legal, time.perf_counter(), future=future)
        if self.cache_rows > 0:
            request.keys = _row_keys(planes, legal)
        else:  # no cache: every row is its own (never equal to another's)
            base = id(request)
            request.keys = [(base, i, -1) for i in range(len(legal))]
        with self._cond:
            if self._closed:
                request.error = CancelledError("the analysis engine is closing")
                request.finish()
                return request
            cache = self._cache
            request.missing = [i for i, key in enumerate(request.keys) if key not in cache]
            if not request.missing:
                self.rows_cached += len(request.keys)
                request.fill(cache)
                request.finish()
                return request
            self.rows_cached += len(request.keys) - len(request.missing)
            self._pending.append(request)
            self._cond.notify()
        return request

    def clear_cache(self) -> None:
        """Forget every evaluated position."""
        with self._cond:
            self._cache.clear()

    def cancel(self, job: int) -> None:
        """Drop search ``job``'s batches not yet in a call (they raise ``CancelledError``)."""
        with self._cond:
            dropped = [r for r in self._pending if r.job == job]
            self._pending = [r for r in self._pending if r.job != job]
        for request in dropped:
            request.error = CancelledError("the search no longer needs this batch")
            request.finish()

    def close(self) -> None:
        """Stop the workers (waiting batches raise ``CancelledError``)."""
        with self._cond:
            self._closed = True
            dropped, self._pending = self._pending, []
            self._cond.notify_all()
        for request in dropped:
            request.error = CancelledError("the analysis engine is closing")
            request.finish()
        for worker in self._workers:
            worker.join(5.0)

    # ---- workers -------------------------------------------------------------------------------------
    def _ready(self, now: float) -> float | None:
        """``None`` when a call should start now, else how long to wait before asking again (s).
        Called with the lock held and something pending."""
        rows = sum(len(r.missing) for r in self._pending)
        waiting = {r.job for r in self._pending}
        share = -(-len(self._attached) // len(self._workers))  # the searches of one call's share
        if rows >= self.max_rows or not self._attached - waiting or len(waiting) >= share:
            return None
        left = self._pending[0].arrived + self.linger_s - now
        return None if left <= 0 else left

    def _take(self) -> list[_Request] | None:
        """Wait for the next call's requests (one key, ``max_rows`` rows at most); ``None`` at close.
        Requests their searches withdrew (``Future.cancel``) are dropped unevaluated."""
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._pending = [r for r in self._pending if r.future is None or not r.future.cancelled()]
                if not self._pending:
                    self._cond.wait()
                    continue
                wait = self._ready(time.perf_counter())
                if wait is not None:
                    self._cond.wait(wait)
                    continue
                key = self._pending[0].key()
                taken: list[_Request] = []
                rest: list[_Request] = []
                rows = 0
                for request in self._pending:
                    if request.key() == key and (not taken or rows + len(request.missing) <= self.max_rows):
                        taken.append(request)
                        rows += len(request.missing)
                    else:
                        rest.append(request)
                self._pending = rest
                return taken

    def _work(self) -> None:
        """A worker: take the waiting batches, make one call of their rows not known yet (each once),
        keep and hand out the rows."""
        while True:
            taken = self._take()
            if taken is None:
                return
            try:
                self._evaluate(taken)
            except BaseException as exc:  # every search waiting must hear of it, none may hang
                for request in taken:
                    request.error = exc
                    request.finish()

    def _evaluate(self, taken: list[_Request]) -> None:
        """Answer ``taken``: the cache's rows, and one network call for the others (each key once).
        A request whose rows all come from the call gets its slice of the call's arrays as they are."""
        with self._cond:
            known = {key: self._cache[key] for r in taken for key in r.keys if key in self._cache}
        first: dict[tuple[int, int, int], int] = {}  # key -> its row in the call
        picks: list[np.ndarray] = []  # per request: its rows that go into the call
        for request in taken:
            rows = []
            for i in request.missing:
                key = request.keys[i]
                if key not in known and key not in first:
                    first[key] = len(first)
                    rows.append(i)
            picks.append(np.asarray(rows, np.int64))
        priors = values = None
        if first:
            parts = [(r, idx) for r, idx in zip(taken, picks, strict=True) if len(idx)]
            planes = np.concatenate(
                [r.planes if len(idx) == len(r.keys) else r.planes[idx] for r, idx in parts]
            )
            legal = LegalRows(
                np.concatenate([r.legal.indices[idx] for r, idx in parts]),
                np.concatenate([r.legal.counts[idx] for r, idx in parts]),
            )
            priors, values = self.evaluator.evaluate_dense(planes, legal)
            with self._cond:
                self.calls_made += 1
                self.rows_evaluated += len(first)
                if self.cache_rows > 0:
                    counts = legal.counts.tolist()
                    for key, j in first.items():
                        self._cache[key] = (priors[j, : counts[j]].copy(), values[j])
                    while len(self._cache) > self.cache_rows:
                        del self._cache[next(iter(self._cache))]
        start = 0
        for request, idx in zip(taken, picks, strict=True):
            n = len(request.keys)
            if priors is not None and values is not None and len(idx) == n:  # every row fresh: a slice
                request.priors, request.values = priors[start : start + n], values[start : start + n]
            else:
                request.fill(known, first, priors, values)
            start += len(idx)
            request.finish()


def _row_keys(planes: np.ndarray, legal: LegalRows) -> list[tuple[int, int, int]]:
    """A key per row: the hashes of its planes' bytes and of its legal indices, and their count."""
    counts = legal.counts.tolist()
    return [
        (hash(planes[i].tobytes()), hash(legal.indices[i, :n].tobytes()), n) for i, n in enumerate(counts)
    ]


class JobEvaluator(Evaluator):
    """The network as one search sees it: its batches go into the shared calls of a
    :class:`SharedNetwork` (``infer_dense`` blocks until its rows are back; run it on a helper thread,
    as the search loop does).  ``cancel`` drops this search's batches only."""

    overlaps = True
    shares_cores = False  # the search thread never makes a call itself: the shared workers do

    def __init__(self, network: SharedNetwork, job: int) -> None:
        self.network = network
        self._network = network
        self.job = job
        self.description = network.evaluator.description

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        """A few positions on their own (not the search's path): straight to the network."""
        return self._network.evaluator.evaluate(planes, legal)

    def evaluate_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """``(priors [B, M], values [B])`` of this batch, from a shared call (blocks)."""
        request = self._network.submit(self.job, planes, legal)
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.priors is not None and request.values is not None
        return request.priors, request.values

    def infer_dense(self, planes: np.ndarray, legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
        """The whole evaluation (the shared worker has made the softmax too)."""
        return self.evaluate_dense(planes, legal)

    def ownership(self, planes: np.ndarray) -> np.ndarray | None:
        return self._network.evaluator.ownership(planes)

    def score(self, planes: np.ndarray) -> np.ndarray | None:
        return self._network.evaluator.score(planes)

    def cancel(self) -> None:
        self._network.cancel(self.job)

    def close(self) -> None:
        self._network.detach(self.job)


class SharedCalls(Executor):
    """The executor a search hands its network calls to (``DenseBatch.start``): a call of a
    :class:`JobEvaluator` is queued on its :class:`SharedNetwork` at once, no thread of its own, and
    its future is answered by the worker that evaluates it (``cancel`` withdraws a call not begun).
    Other work runs here and now."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, JobEvaluator) and getattr(fn, "__func__", None) is JobEvaluator.infer_dense:
            future: Future[Any] = Future()
            planes, legal = args
            owner.network.submit(owner.job, planes, legal, future)
            return future
        done: Future[Any] = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            done.set_exception(exc)
        return done
