"""From search values to protocol scores.

Centipawns from Q (documented mapping, Leela Chess Zero's): ``cp = 90 * tan(1.5637541897 * q)`` for
``q`` in (-1, 1), clamped to +-12800 (q = 0.5 is about +100 cp, q = 0.9 about +500 cp).  The same
mapping gives shogi's ``score cp`` and Go's analysis winrate is ``(q + 1) / 2``.

Win/draw/loss from Q when the network has no WDL head: a draw model with a draw share that shrinks as
|q| grows: ``d = draw_base * (1 - |q|)``, then ``w - l = q`` and ``w + l = 1 - d``.  Reported in per
mille as UCI wants.
"""

from __future__ import annotations

import dataclasses
import math


@dataclasses.dataclass(frozen=True)
class Score:
    """A score from the root player's point of view: ``mate`` (moves, negative when mated) or ``cp``."""

    cp: int = 0
    mate: int | None = None


def q_to_cp(q: float) -> int:
    """Centipawns for a value ``q`` in [-1, 1]."""
    q = max(-0.99999, min(0.99999, q))
    return int(max(-12800, min(12800, round(90.0 * math.tan(1.5637541897 * q)))))


def plies_to_mate_moves(plies: int, winning: bool) -> int:
    """Mate distance in moves (UCI convention) from a proven distance in plies."""
    moves = (plies + 1) // 2
    return moves if winning else -moves


def mate_score(plies: int, winning: bool) -> Score:
    """The score of a mate ``plies`` away, for (``winning``) or against the side it is reported for:
    ``mate N`` (moves), with the largest centipawn figure of its sign."""
    return Score(cp=12800 if winning else -12800, mate=plies_to_mate_moves(plies, winning))


def q_to_wdl(q: float, draw_base: float = 0.4) -> tuple[int, int, int]:
    """Win/draw/loss per mille from Q with the module's draw model; sums to 1000."""
    q = max(-1.0, min(1.0, q))
    d = draw_base * (1.0 - abs(q))
    w = (1.0 - d + q) / 2.0
    win = round(w * 1000)
    draw = round(d * 1000)
    return win, draw, 1000 - win - draw
