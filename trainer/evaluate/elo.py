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

Games played in pairs (one opening, colours reversed) are better counted by pair, :class:`Pentanomial`:
the pair's points 0, 1/2, 1, 3/2 or 2, with the variance taken over pairs as fishtest does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

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


#: The points a player can score in a pair of games: 0, 1/2, 1, 3/2, 2.
PAIR_POINTS = (0.0, 0.5, 1.0, 1.5, 2.0)


def pair_points(points: Sequence[float]) -> list[float]:
    """The points of consecutive game pairs (games 1+2, 3+4, ...): each pair one opening, colours reversed."""
    if len(points) % 2:
        raise ValueError(f"an odd number of games ({len(points)}) cannot be paired")
    return [points[i] + points[i + 1] for i in range(0, len(points), 2)]


@dataclasses.dataclass(frozen=True)
class Pentanomial:
    """Game pairs counted by the points player A scored in the pair: 0, 1/2, 1, 3/2 and 2.

    Each pair plays one opening twice with colours reversed, so an opening that favours one side adds
    to one game what it takes from the other: the pairs vary less than single games would, and the
    interval is honest about it.  As fishtest computes it: the score per game is
    ``s = sum(points) / (2 N)`` over ``N`` pairs, the variance per game is half the variance of a pair's
    points, ``var = sum_k f_k (x_k - 2 s)^2 / 2`` (``f_k`` the fraction of pairs scoring ``x_k``), and
    the interval ``s -+ z sqrt(var / 2N)`` maps through :func:`elo_from_score`.  The guards are
    :class:`MatchResult`'s: a perfect (or nil) score is shrunk by half a game and the variance per game is
    floored at ``1 / (4 * games)`` (fishtest instead adds 1e-3 pairs to every empty class, which
    gives a 100% score about +1200 Elo)."""

    counts: tuple[int, int, int, int, int]  # pairs scoring 0, 1/2, 1, 3/2, 2 points

    def __post_init__(self) -> None:
        if len(self.counts) != 5 or any(c < 0 for c in self.counts):
            raise ValueError(f"a pentanomial needs five counts >= 0, got {self.counts}")

    @classmethod
    def from_pair_points(cls, points: Iterable[float]) -> Pentanomial:
        """Count pairs by their points (each 0, 0.5, 1, 1.5 or 2)."""
        counts = [0] * 5
        for p in points:
            k = round(2 * p)
            if not 0 <= k <= 4 or abs(2 * p - k) > 1e-9:
                raise ValueError(f"a pair scores 0, 0.5, 1, 1.5 or 2 points, not {p}")
            counts[k] += 1
        return cls((counts[0], counts[1], counts[2], counts[3], counts[4]))

    @classmethod
    def from_games(cls, points: Sequence[float]) -> Pentanomial:
        """Pair consecutive games (1+2, 3+4, ...), each scored 0, 0.5 or 1."""
        return cls.from_pair_points(pair_points(points))

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    @property
    def games(self) -> int:
        return 2 * self.pairs

    @property
    def score(self) -> float:
        """Points per game of A; 0.5 with no pairs."""
        if not self.pairs:
            return 0.5
        return sum(c * x for c, x in zip(self.counts, PAIR_POINTS, strict=True)) / self.games

    def variance(self) -> float:
        """Variance of the score per game: half the variance of the points per pair (fishtest's)."""
        if not self.pairs:
            return 0.0
        mean = 2 * self.score
        return sum(c * (x - mean) ** 2 for c, x in zip(self.counts, PAIR_POINTS, strict=True)) / self.games

    def _mean_and_error(self) -> tuple[float, float]:
        """The (guarded) score per game and its standard error."""
        n = self.games
        s = self.score
        if s <= 0.0 or s >= 1.0:
            s = 0.5 / n if s <= 0.0 else 1.0 - 0.5 / n
        var = max(self.variance(), 0.25 / n)
        return s, math.sqrt(var / n)

    def elo(self, z: float = Z95) -> tuple[float, float, float]:
        """``(elo, low, high)``: A's Elo advantage and a ``z``-sigma interval (95% by default)."""
        if not self.pairs:
            return 0.0, -math.inf, math.inf
        s, se = self._mean_and_error()
        lo, hi = s - z * se, s + z * se
        low = elo_from_score(lo) if lo > 0 else -math.inf
        high = elo_from_score(hi) if hi < 1 else math.inf
        return elo_from_score(s), low, high

    def los(self) -> float:
        """Likelihood of superiority, ``Phi((s - 1/2) / se)``, as fishtest gives it for pairs."""
        if not self.pairs:
            return 0.5
        s, se = self._mean_and_error()
        return 0.5 * (1.0 + math.erf((s - 0.5) / (se * math.sqrt(2.0))))

    def describe(self) -> str:
        """``[0, 1, 4, 3, 2] (62.5%), Elo +89 [+10, +178]``: the counts of 0 ... 2-point pairs."""
        elo, lo, hi = self.elo()
        return f"pairs {list(self.counts)} ({100 * self.score:.1f}%), Elo {elo:+.0f} [{lo:+.0f}, {hi:+.0f}]"
