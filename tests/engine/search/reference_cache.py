"""The reference tree's network cache (tests only: the engine's compiled trees have none): an LRU of evaluations
keyed by ``GameState.eval_key()``, shared by a game's searches."""

from __future__ import annotations

import collections
import threading
from collections.abc import Hashable

from engine.evaluator import Evaluation


class NNCache:
    """A bounded LRU map ``GameState.eval_key()`` -> :class:`Evaluation`.  Thread-safe.

    Attributes:
        capacity: maximum number of entries (0 disables the cache).
        hits, misses: counters of :meth:`get`.
    """

    def __init__(self, capacity: int):
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = capacity
        self.hits = 0
        self.misses = 0
        self._data: collections.OrderedDict[Hashable, Evaluation] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Evaluation | None:
        """The cached evaluation (now the most recently used) or ``None``."""
        with self._lock:
            ev = self._data.get(key)
            if ev is None:
                self.misses += 1
                return None
            self._data.move_to_end(key)
            self.hits += 1
            return ev

    def put(self, key: Hashable, evaluation: Evaluation) -> None:
        """Store (or refresh) an entry, evicting the least recently used beyond ``capacity``."""
        with self._lock:
            if self.capacity == 0:
                return
            self._data[key] = evaluation
            self._data.move_to_end(key)
            while len(self._data) > self.capacity:
                self._data.popitem(last=False)

    def resize(self, capacity: int) -> None:
        """Change the capacity, evicting the least recently used entries if it shrinks."""
        if capacity < 0:
            raise ValueError("capacity must be >= 0")
        with self._lock:
            self.capacity = capacity
            while len(self._data) > capacity:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        with self._lock:
            self._data.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``, 0 before any lookup."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0
