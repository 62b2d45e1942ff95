"""One thread steps many searches: the analysis engine's searches are generators, not threads.

Each position's search is :meth:`engine.search.searcher.Searcher.steps`, a generator that yields where
a search thread would wait for a network call (a batch in flight and how long at most).  A
:class:`SearchDriver` keeps up to ``capacity`` of them and, on its one thread, resumes each whose batch
is back (or whose wait ran out: the search then checks ``stop`` and its clock, as it does between the
slices of a blocking wait), then sleeps until a call ends.  The searches' selections and backups are
those of the blocking loop, in the same order, so a position's tree is the one ``go nodes N`` builds.

Why not a thread a search: with 16 search threads the Python work of every batch (walks, planes,
backups) fought for the GIL with the network workers, and each batch cost about 50 context switches
(a quarter of the process's CPU in the kernel); one driver thread and the network's workers are the
only threads that run (docs/analysis.md, "Throughput").
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Generator
from typing import Any

from engine.search.batch import DenseBatch
from engine.search.searcher import Wait

log = logging.getLogger("tabula.analysis")

#: How long the driver sleeps at most when nothing is ready and no wait has a limit (s): a batch that
#: cannot say when it is done (not a :class:`DenseBatch`) is polled this often.
IDLE_POLL_S = 0.001

Steps = Generator[Wait, bool, Any]


@dataclasses.dataclass
class _Task:
    """One stepped search: its generator, what it waits for, and since when."""

    steps: Steps
    on_end: Callable[[Any, BaseException | None], None]
    wait: Wait | None = None
    since: float = 0.0
    watched: object = None  # the batch whose end wakes the driver (watched once)


class SearchDriver:
    """Steps stepped searches on the calling thread (:meth:`run`) until :meth:`close`.

    Args:
        admit: called with the number of free places; returns the new searches to start, each a
            ``(steps, on_end)`` pair: ``on_end(result, None)`` when the generator returns, ``on_end(None,
            exc)`` when it raised (a failed network call is thrown into the generator first, so its
            ``finally`` blocks run).
        capacity: the most searches stepped at once.
    """

    def __init__(
        self,
        admit: Callable[[int], list[tuple[Steps, Callable[[Any, BaseException | None], None]]]],
        capacity: int,
    ) -> None:
        self._admit = admit
        self.capacity = max(1, capacity)
        self._wake = threading.Event()
        self._closed = False
        self._tasks: list[_Task] = []

    def wake(self) -> None:
        """Make the driver look again (a batch ended, a search was queued, a stop was asked)."""
        self._wake.set()

    def close(self) -> None:
        """Stop :meth:`run` once no search is left to step (call after the queue is finished)."""
        self._closed = True
        self._wake.set()

    def run(self) -> None:
        """Step the searches until :meth:`close` and none is left."""
        tasks = self._tasks
        while True:
            self._wake.clear()
            free = self.capacity - len(tasks)
            if free > 0:
                for steps, on_end in self._admit(free):
                    tasks.append(_Task(steps, on_end))
            if not tasks:
                if self._closed:
                    return
                self._wake.wait()
                continue
            now = time.perf_counter()
            stepped = False
            for task in list(tasks):
                if self._ready(task, now):
                    stepped = True
                    if self._advance(task):
                        tasks.remove(task)
            if not stepped:
                self._wake.wait(self._sleep(time.perf_counter()))

    def _ready(self, task: _Task, now: float) -> bool:
        if task.wait is None:
            return True
        batch, timeout = task.wait
        return self._ended(batch) or (timeout is not None and now >= task.since + timeout)

    @staticmethod
    def _ended(batch: Any) -> bool:
        """Whether ``batch``'s network call has ended, done or failed (the search hears of a failure
        when resumed)."""
        try:
            return bool(batch.wait(0))
        except BaseException:
            return True

    def _advance(self, task: _Task) -> bool:
        """Resume ``task`` until it waits for a batch not back yet; whether it ended."""
        try:
            while True:
                if task.wait is None:
                    wait = next(task.steps)
                else:
                    batch, _ = task.wait
                    try:
                        done = batch.wait(0)
                    except BaseException as exc:  # the network call's own error
                        wait = task.steps.throw(exc)
                    else:
                        wait = task.steps.send(done)
                task.wait, task.since = wait, time.perf_counter()
                batch = wait[0]
                if not self._ended(batch):
                    self._watch(task, batch)
                    return False
        except StopIteration as end:
            self._end(task, end.value, None)
        except Exception as exc:
            self._end(task, None, exc)
        return True

    @staticmethod
    def _end(task: _Task, result: Any, exc: BaseException | None) -> None:
        """Tell the search's owner it ended; an error there (an answer that cannot be written) must not
        end the driver, which every other search needs."""
        try:
            task.on_end(result, exc)
        except Exception:
            log.exception("a search's end could not be handled")

    def _watch(self, task: _Task, batch: Any) -> None:
        if task.watched is batch:
            return
        task.watched = batch
        if isinstance(batch, DenseBatch):
            batch.when_done(self.wake)

    def _sleep(self, now: float) -> float:
        """How long to sleep: until the first wait with a limit runs out, or the idle poll."""
        ends = [
            task.since + task.wait[1] - now
            for task in self._tasks
            if task.wait is not None and task.wait[1] is not None
        ]
        unwatched = any(
            task.wait is not None and not isinstance(task.wait[0], DenseBatch) for task in self._tasks
        )
        limit = min(ends, default=None)
        if unwatched:
            limit = IDLE_POLL_S if limit is None else min(limit, IDLE_POLL_S)
        return 0.0 if limit is not None and limit <= 0 else (limit if limit is not None else 3600.0)
