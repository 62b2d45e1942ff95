"""Elo from match results, with error bars.

The logistic model of the paper (and BayesElo): ``P(a beats b) = 1 / (1 + 10^((e(b) - e(a)) / 400))``.
A match of ``n`` games with ``w`` wins, ``d`` draws and ``l`` losses scores ``s = (w + d/2) / n``; the
Elo difference is ``400 log10(s / (1 - s))``.  The error bar comes from the standard error of the
mean score per game, ``se = sqrt(var / n)`` with ``var = (w (1-s)^2 + d (1/2-s)^2 + l s^2) / n``
(the trinomial variance), mapped through the same function: the interval ``s -+ z se`` (clipped to
(0, 1)) gives the Elo interval, so it is asymmetric far from 50%; a bound past 0% or 100% is
infinite (a perfect score says the difference is large, not how large).  A perfect (or nil) score has no
finite Elo: the score is then shrunk by half a game, ``s = (n - 1/2) / n``, a finite estimate.  The variance is floored at ``1 / (4 n)`` (one game
in ``n`` decided either way), so a match of all draws or a perfect score still gets an honest interval.
"""

from __future__ import annotations

import dataclasses
import math

#: 1.96: a 95% interval.
Z95 = 1.959963984540054


def elo_from_score(score: float) -> float:
    """Elo difference of a player who scores ``score`` (0 < score < 1) per game."""
    if not 0.0 < score < 1.0:
        raise ValueError(f"score must be in (0, 1), got {score}")
    return 400.0 * math.log10(score / (1.0 - score))


def score_from_elo(elo: float) -> float:
    """Expected score per game at an Elo difference of ``elo``."""
    return 1.0 / (1.0 + math.pow(10.0, -elo / 400.0))


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """Wins, draws and losses of player A against player B."""

    wins: int
    draws: int
    losses: int

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """Points per game of A (a draw is half a point); 0.5 with no games."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.5

    def elo(self, z: float = Z95) -> tuple[float, float, float]:
        """``(elo, low, high)``: A's Elo advantage and a ``z``-sigma interval (95% by default)."""
        n = self.games
        if n == 0:
            return 0.0, -math.inf, math.inf
        s = self.score
        var = (self.wins * (1 - s) ** 2 + self.draws * (0.5 - s) ** 2 + self.losses * s**2) / n
        if s <= 0.0 or s >= 1.0:
            s = 0.5 / n if s <= 0.0 else 1.0 - 0.5 / n
        var = max(var, 0.25 / n)  # never a zero-width interval (all draws, a perfect score)
        se = math.sqrt(var / n)
        lo, hi = s - z * se, s + z * se
        low = elo_from_score(lo) if lo > 0 else -math.inf
        high = elo_from_score(hi) if hi < 1 else math.inf
        return elo_from_score(s), low, high

    def describe(self) -> str:
        """``+12 =3 -5 (65.0%), Elo +108 [+31, +204]``."""
        elo, lo, hi = self.elo()
        return (
            f"+{self.wins} ={self.draws} -{self.losses} ({100 * self.score:.1f}%), "
            f"Elo {elo:+.0f} [{lo:+.0f}, {hi:+.0f}]"
        )

    def __add__(self, other: MatchResult) -> MatchResult:
        return MatchResult(self.wins + other.wins, self.draws + other.draws, self.losses + other.losses)


def los(result: MatchResult) -> float:
    """Likelihood of superiority: P(A is stronger) from wins and losses (draws carry no information)."""
    w, l = result.wins, result.losses
    if w + l == 0:
        return 0.5
    return 0.5 * (1.0 + math.erf((w - l) / math.sqrt(2.0 * (w + l))))
