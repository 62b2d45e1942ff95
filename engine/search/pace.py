"""How fast this machine is searching right now: the measurements that keep a clock's hard limit.

A time budget is only kept if the search stops early enough for what follows the stop to finish in
time: the network call in flight (``select(B) | evaluate(A)`` overlap, ``searcher.py``), the backup,
and the answer itself (best move, principal variation, the last ``info``).  On a quiet machine these
take a few milliseconds; on a busy one (the GUI, a second engine, a build beside it) each can take ten
times longer, and a constant margin either wastes time or overruns it.  So both are measured:

* :class:`BatchPace`, per search: how long the last few loop passes (select, wait for the network,
  back up) took.  A new batch is started only when the slowest of them still fits before the deadline.
* :class:`AnswerCost`, per session: how long answering took after earlier stops, how late the
  search thread wakes from timed waits (the machine's scheduling delay, paid again by the answer on its
  way to the GUI), and how long it waited for a core inside work it cannot cut short; the deadline is
  moved forward by all three.

See docs/design.md, "Keeping the hard limit on a busy machine".
"""

from __future__ import annotations

import collections
import threading


class BatchPace:
    """The durations of a search's last ``window`` loop passes (seconds), measured as it runs.

    ``predicted_s`` is the slowest of them: a pass that is about to start is assumed to take as long
    as the slowest recent one (a spike under load is remembered for ``window`` passes, then forgotten
    once the machine is quiet again).
    """

    def __init__(self, window: int = 8) -> None:
        self._passes: collections.deque[float] = collections.deque(maxlen=window)

    def record(self, seconds: float) -> None:
        self._passes.append(max(0.0, seconds))

    @property
    def predicted_s(self) -> float:
        return max(self._passes, default=0.0)

    def __len__(self) -> int:
        return len(self._passes)


class AnswerCost:
    """What one session keeps back from a hard limit (seconds), shared by its searches (thread safe):

    * how long answering took after a stop decision: the slowest of the last ``window``;
    * twice how late the search thread woke from a timed wait, the latest of the last ``wake_window``
      waits: the scheduling delay on this machine now.  The answer passes through two more wake-ups
      that no clock of the engine sees (the engine's reader thread woken by ``go``, the GUI's reader
      woken by ``bestmove``); ``MoveOverhead`` covers the pipes on a quiet machine;
    * the longest of the last ``stall_window`` stalls: how long the search thread waited for a core
      (or the GIL) inside work it cannot cut short (a network call it makes itself, a selection, a
      backup: wall time less the thread's own CPU time).  The last such stretch before the stop can
      lose that much again.
    At least ``floor_s``: a smaller floor let searches overrun the hard limit with both cores busy
    (docs/benchmarks.md, "Costs behind the code's design")."""

    def __init__(
        self, floor_s: float = 0.005, window: int = 8, wake_window: int = 64, stall_window: int = 256
    ) -> None:
        self.floor_s = floor_s
        self._costs: collections.deque[float] = collections.deque(maxlen=window)
        self._late: collections.deque[float] = collections.deque(maxlen=wake_window)
        self._stalls: collections.deque[float] = collections.deque(maxlen=stall_window)
        self._lock = threading.Lock()

    def record(self, seconds: float) -> None:
        with self._lock:
            self._costs.append(max(0.0, seconds))

    def record_wake(self, late_s: float) -> None:
        """A timed wait returned ``late_s`` seconds after its timeout."""
        with self._lock:
            self._late.append(max(0.0, late_s))

    def record_stall(self, wall_s: float, cpu_s: float) -> None:
        """A stretch the search thread could not cut short took ``wall_s`` seconds, ``cpu_s`` of them
        on a core: it waited the rest for a core (or for the GIL)."""
        with self._lock:
            self._stalls.append(max(0.0, wall_s - cpu_s))

    @property
    def stall_s(self) -> float:
        """The longest recent stall (:meth:`record_stall`); 0 when none is known."""
        with self._lock:
            return max(self._stalls, default=0.0)

    @property
    def reserve_s(self) -> float:
        with self._lock:
            answer = max(self._costs, default=0.0)
            late = max(self._late, default=0.0)
            stall = max(self._stalls, default=0.0)
        return max(self.floor_s, answer + 2.0 * late + stall)
