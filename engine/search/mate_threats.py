"""Root moves that walk into a forced mate, found before the search (shogi's tsume check at the root).

A network of a few blocks sees a mate against it only as deep as the tree happens to read, while a
tactical opponent plays every forced mate it is given.  Shogi engines therefore run a mate solver on
the opponent's side: here, for every legal root move, the position after it is handed to the rules'
own mate search (:meth:`~engine.games.base.GameState.find_mate`: shogi's cshogi df-pn, checks only,
at most ``max_nodes`` nodes), and a move after which the opponent has a
proven mate becomes a proven loss of the root (:class:`~engine.search.root_verdicts.RootVerdict`,
the same markers the tablebases set).  The tree then never plays such a move while another is not
lost, and plays the longest loss when every move loses.

A move that gives check is not asked (the solver assumes the side to move is not in check).  On a
clock the check may take :data:`THREAT_SHARE` of the move's soft time (:func:`threat_deadline`); the
moves not reached by then are left to the search.  The solver holds the GIL, so it runs before the
search starts, on the time of the move (the clock runs from ``go``).
"""

from __future__ import annotations

import time
from typing import Any

from engine.games.base import GameState
from engine.search.limits import SearchLimits
from engine.search.proof import Proof
from engine.search.root_verdicts import RootVerdict
from engine.search.score import mate_score
from engine.search.time_manager import TimeBudget

#: The share of a move's soft time the check may take on a clock.
THREAT_SHARE = 0.15


def threat_deadline(limits: SearchLimits, budget: TimeBudget) -> float | None:
    """When the check must end (``perf_counter`` seconds): :data:`THREAT_SHARE` of the soft time from
    the arrival of ``go``; ``None`` (check every move) without a time limit."""
    if budget.soft_ms is None:
        return None
    start = limits.received_at if limits.received_at is not None else time.perf_counter()
    return start + THREAT_SHARE * budget.soft_ms / 1000.0


def mate_threat_verdicts(
    state: GameState[Any], max_nodes: int, deadline: float | None = None
) -> dict[Any, RootVerdict]:
    """For each legal move of ``state`` after which the opponent has a forced mate that the rules'
    mate search proves within ``max_nodes`` nodes: a ``Proof.LOSS`` verdict whose ``plies`` counts the
    move itself (the opponent's mate of ``k`` plies: ``k + 1``) and whose score is ``mate -N``.
    Empty when ``max_nodes <= 0`` or the game is over; the moves after ``deadline`` (a
    ``perf_counter`` time) are not checked; ``state`` is left as it was."""
    if max_nodes <= 0 or state.outcome() is not None:
        return {}
    probe = state.copy()
    verdicts: dict[Any, RootVerdict] = {}
    for move in probe.legal_moves():
        if deadline is not None and time.perf_counter() >= deadline:
            break
        probe.push(move)
        try:
            found = probe.find_mate(max_nodes) if probe.outcome() is None else None
        finally:
            probe.pop()
        if found is not None:
            plies = found[1] + 1
            verdicts[move] = RootVerdict(Proof.LOSS, plies, mate_score(plies, False))
    return verdicts
