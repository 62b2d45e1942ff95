"""When a search ends: each stopping rule is an object the search loop asks (lc0's stoppers).

Every pass of :meth:`~engine.search.searcher.Searcher.run` hands a :class:`SearchProgress` (the tree and
the time spent) to one :class:`Stopper`, built by :func:`stopper_for` from the ``go`` limits and the time
budget; the first rule that fires names the :class:`StopReason`.  The rules, in the order they are
asked:

* the root must have been evaluated (a move must come out): until then nothing stops the search;
* ``nodes``, ``depth`` and ``mate`` limits of the ``go`` command;
* the hard time limit;
* with a clock (a managed budget): a single legal move; the soft limit, stretched towards the hard
  one while the best move changed in the last quarter of the time spent; and an early stop when the
  most visited move cannot be overtaken before the soft limit at the current speed (not when the time
  is lost unless used: byo-yomi with no main time, ``TimeBudget.use_all``).

``stop``, ``ponderhit``, ``infinite`` and the exhausted tree (terminal, full or proven root) are the
loop's own business, not a stopper's: they depend on the protocol's signals, not on the search.
"""

from __future__ import annotations

import abc
import dataclasses
import enum
from typing import Any

import numpy as np

from engine.search.limits import SearchLimits
from engine.search.proof import Proof
from engine.search.time_manager import TimeBudget
from engine.search.tree_protocol import SearchTree


class StopReason(enum.StrEnum):
    """Why a search ended (``info string search ended: <reason>``)."""

    STOP = "stop"  # the protocol's stop
    TIME = "time"  # the hard limit, or the soft one with a stable best move
    NODES = "nodes"
    DEPTH = "depth"
    MATE = "mate"  # a mate within the ``go mate`` limit is proven
    ONLY_MOVE = "only-move"
    DECIDED = "decided"  # the most visited move cannot be overtaken before the soft limit
    TERMINAL = "terminal"  # the root has no legal move
    FULL = "full"  # the node budget is used up
    PROVEN = "proven"  # the root is a proven win or loss
    ERROR = "error"  # the search failed; the session played a legal move instead


@dataclasses.dataclass(frozen=True)
class SearchProgress:
    """What a stopper looks at, taken once per pass of the loop.

    Attributes:
        tree: the tree being searched (read only).
        elapsed_ms: time since the search started (or since ``ponderhit``).
    """

    tree: SearchTree[Any]
    elapsed_ms: float

    @property
    def depth(self) -> int:
        return search_depth(self.tree)


def search_depth(tree: SearchTree[Any]) -> int:
    """UCI ``depth``: the mean depth of the playouts so far, rounded (at least 1 once one is done)."""
    return max(1, round(tree.depth_sum / tree.playouts)) if tree.playouts else 0


class Stopper(abc.ABC):
    """One stopping rule."""

    @abc.abstractmethod
    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        """The reason to stop now, or ``None`` to go on."""


class ChainedStopper(Stopper):
    """Asks its stoppers in order; the first reason wins.  Nothing stops before the root is expanded."""

    def __init__(self, stoppers: list[Stopper]) -> None:
        self.stoppers = stoppers

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        if not progress.tree.root_expanded:
            return None
        for stopper in self.stoppers:
            reason = stopper.should_stop(progress)
            if reason is not None:
                return reason
        return None


class NodesStopper(Stopper):
    """``go nodes N``: stop after ``N`` playouts."""

    def __init__(self, nodes: int) -> None:
        self.nodes = nodes

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        return StopReason.NODES if progress.tree.playouts >= self.nodes else None


class DepthStopper(Stopper):
    """``go depth D``: stop once the mean playout depth reaches ``D``."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        return StopReason.DEPTH if progress.depth >= self.depth else None


class MateStopper(Stopper):
    """``go mate M``: stop once the root is a proven win in at most ``M`` moves."""

    def __init__(self, moves: int) -> None:
        self.moves = moves

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        proof, plies = progress.tree.root_proof()
        if proof == Proof.WIN and (plies + 1) // 2 <= self.moves:
            return StopReason.MATE
        return None


class HardTimeStopper(Stopper):
    """Never think past the hard limit (ms)."""

    def __init__(self, hard_ms: float) -> None:
        self.hard_ms = hard_ms

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        return StopReason.TIME if progress.elapsed_ms >= self.hard_ms else None


class ManagedTimeStopper(Stopper):
    """A clock's soft limit, cut short or stretched by what the search shows (see the module
    docstring).  It remembers when the most visited move last changed, so it serves one search."""

    def __init__(self, soft_ms: float, stop_decided: bool = True) -> None:
        self.soft_ms = soft_ms
        self.stop_decided = stop_decided
        self._last_best: int | None = None
        self._last_change_ms = 0.0

    def should_stop(self, progress: SearchProgress) -> StopReason | None:
        tree = progress.tree
        elapsed = progress.elapsed_ms
        visits = tree.root_child_visits()
        if len(visits) == 1:
            return StopReason.ONLY_MOVE
        best = int(np.argmax(visits))
        if best != self._last_best:
            self._last_best = best
            self._last_change_ms = elapsed
        soft = self.soft_ms
        if elapsed >= soft and elapsed - self._last_change_ms >= 0.25 * elapsed:
            return StopReason.TIME
        # (Only before the soft limit: past it, a lead counts for nothing more than the rule above, or
        # the stretch towards the hard limit would end at once whenever one move leads.)
        if self.stop_decided and 0.1 * soft < elapsed < soft and tree.playouts > 0:
            second, first = np.partition(visits, -2)[-2:]
            speed = tree.playouts / max(elapsed, 1.0)
            if first - second > speed * max(0.0, soft - elapsed):
                return StopReason.DECIDED
        return None


def stopper_for(limits: SearchLimits, budget: TimeBudget) -> ChainedStopper:
    """The stopping rules of one search, in the order of the module docstring."""
    stoppers: list[Stopper] = []
    if limits.nodes is not None:
        stoppers.append(NodesStopper(limits.nodes))
    if limits.depth is not None:
        stoppers.append(DepthStopper(limits.depth))
    if limits.mate is not None:
        stoppers.append(MateStopper(limits.mate))
    if budget.hard_ms is not None:
        stoppers.append(HardTimeStopper(budget.hard_ms))
        if budget.managed:
            stoppers.append(ManagedTimeStopper(budget.soft_ms or 0.0, stop_decided=not budget.use_all))
    return ChainedStopper(stoppers)
