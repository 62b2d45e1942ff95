"""The sequential probability ratio test over game pairs (GSPRT, normalized Elo), as fishtest runs it.

A test of ``H0: nElo = elo0`` against ``H1: nElo = elo1`` plays pairs of games (one opening, colours
reversed) and after each pair computes the generalized log-likelihood ratio ``LLR`` of the pairs seen so
far (:func:`normalized_llr`); it accepts H1 when ``LLR >= log((1 - beta) / alpha)``, H0 when
``LLR <= log(beta / (1 - alpha))``, and goes on otherwise, so a clear difference stops after few pairs.

Normalized Elo (nElo) measures the score per game against its spread, not in logistic Elo: with pair
scores ``x`` (points of the pair / 2, so 0, 1/4, 1/2, 3/4, 1), their mean ``mu`` and standard deviation
``sigma`` (per pair), the per-game t-value is ``t = (mu - 1/2) / (sqrt(2) sigma)`` and
``nElo = t * 800 / ln 10``.  The GSPRT replaces each hypothesis by the maximum-likelihood pentanomial
distribution whose t-value is the hypothesis's (found as in M. Van den Bergh's note
"Normalized Elo: practical", section 4.1: a fixed point of a secular equation); the LLR is the sum over
pairs of ``log(p1(x) / p0(x))``.  As fishtest does, an empty pentanomial class counts 1e-3 pairs, so a
one-sided result still has a finite variance.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from trainer.evaluate.elo import Pentanomial

#: nElo per unit of per-game t-value: 800 / ln(10).
NELO_PER_T = 800.0 / math.log(10.0)

#: Pairs counted in an empty pentanomial class (fishtest's regularization).
EMPTY_CLASS_PAIRS = 1e-3

#: The pair scores of the five pentanomial classes (points of the pair / 2).
PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)


def _secular_root(values: Sequence[float], probs: Sequence[float]) -> float:
    """The root ``x`` of ``sum_i p_i a_i / (1 + x a_i) = 0`` with every ``1 + x a_i > 0``.

    The sum falls strictly with ``x`` on that interval, ``(-1 / max a, -1 / min a)``, from plus to minus
    infinity when some ``a_i`` are negative and some positive, so bisection finds the root."""
    low_a, high_a = min(values), max(values)
    if not low_a < 0.0 < high_a:
        raise ValueError(
            f"no maximum-likelihood distribution: the shifted scores {list(values)} share a sign"
        )
    lo, hi = -1.0 / high_a, -1.0 / low_a
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        f = sum(p * a / (1.0 + mid * a) for a, p in zip(values, probs, strict=True))
        if f > 0.0:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-15 * max(1.0, abs(mid)):
            break
    return 0.5 * (lo + hi)


def _mean_var(probs: Sequence[float]) -> tuple[float, float]:
    """Mean and variance of a distribution over :data:`PAIR_SCORES`."""
    mean = sum(p * x for p, x in zip(probs, PAIR_SCORES, strict=True))
    return mean, sum(p * (x - mean) ** 2 for p, x in zip(probs, PAIR_SCORES, strict=True))


def mle_with_t_value(empirical: Sequence[float], t: float, reference: float = 0.5) -> list[float]:
    """The distribution over :data:`PAIR_SCORES` nearest to ``empirical`` (in likelihood) whose t-value
    ``(mean - reference) / sd`` is ``t``: iterate ``p_i = e_i / (1 + x a_i)`` with
    ``a_i = x_i - reference - t sd (1 + ((mean - x_i) / sd)^2) / 2`` (mean and sd of the last iterate)
    and ``x`` the secular root, from the uniform distribution, until it settles."""
    probs = [1.0 / len(empirical)] * len(empirical)
    for _ in range(100):
        mean, var = _mean_var(probs)
        sd = math.sqrt(var)
        shifted = [x - reference - t * sd * (1.0 + ((mean - x) / sd) ** 2) / 2.0 for x in PAIR_SCORES]
        root = _secular_root(shifted, empirical)
        new = [e / (1.0 + root * a) for e, a in zip(empirical, shifted, strict=True)]
        settled = max(abs(a - b) for a, b in zip(new, probs, strict=True)) < 1e-12
        probs = new
        if settled:
            break
    return probs


def regularized(counts: Sequence[int]) -> list[float]:
    """The pentanomial counts with :data:`EMPTY_CLASS_PAIRS` in each empty class."""
    return [float(c) if c > 0 else EMPTY_CLASS_PAIRS for c in counts]


def normalized_llr(result: Pentanomial, elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio of ``nElo = elo1`` against ``nElo = elo0`` for ``result``.

    The hypotheses' per-game t-values ``elo / NELO_PER_T`` are per-pair t-values ``sqrt(2)`` times as
    large (a pair's mean score has half a game's variance); 0 with no pairs."""
    if not result.pairs:
        return 0.0
    counts = regularized(result.counts)
    total = sum(counts)
    empirical = [c / total for c in counts]
    t0, t1 = (math.sqrt(2.0) * elo / NELO_PER_T for elo in (elo0, elo1))
    p0 = mle_with_t_value(empirical, t0)
    p1 = mle_with_t_value(empirical, t1)
    return total * sum(e * math.log(b / a) for e, a, b in zip(empirical, p0, p1, strict=True))


def normalized_elo(result: Pentanomial) -> float:
    """The nElo estimate of ``result``: ``(mu - 1/2) / (sqrt(2) sigma) * 800 / ln 10`` over the
    regularized pair scores (0 with no pairs)."""
    if not result.pairs:
        return 0.0
    counts = regularized(result.counts)
    total = sum(counts)
    mean, var = _mean_var([c / total for c in counts])
    return (mean - 0.5) / math.sqrt(2.0 * var) * NELO_PER_T


@dataclasses.dataclass(frozen=True)
class SprtSettings:
    """A test of ``H0: nElo = elo0`` against ``H1: nElo = elo1`` with false-positive rate ``alpha``
    (accepting H1 when H0 holds) and false-negative rate ``beta``."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.elo0, self.elo1)) or self.elo0 >= self.elo1:
            raise ValueError(f"elo0 must be below elo1 (got {self.elo0:g}, {self.elo1:g})")
        if not (0.0 < self.alpha < 1.0 and 0.0 < self.beta < 1.0 and self.alpha + self.beta < 1.0):
            raise ValueError(
                f"alpha and beta must be in (0, 1) with alpha + beta < 1 (got {self.alpha:g}, {self.beta:g})"
            )

    @classmethod
    def parse(cls, text: str) -> SprtSettings:
        """``elo0,elo1[,alpha,beta]`` (``0,10`` or ``0,10,0.05,0.05``).  Raises ``ValueError``."""
        parts = [p.strip() for p in text.split(",")]
        if len(parts) not in (2, 4):
            raise ValueError(f"expected elo0,elo1 or elo0,elo1,alpha,beta, got {text!r}")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"expected numbers: elo0,elo1[,alpha,beta], got {text!r}") from None
        return cls(*values)

    @property
    def lower(self) -> float:
        """The LLR at or below which H0 is accepted: ``log(beta / (1 - alpha))``."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which H1 is accepted: ``log((1 - beta) / alpha)``."""
        return math.log((1.0 - self.beta) / self.alpha)

    def decision(self, llr: float) -> str | None:
        """``H0``, ``H1``, or ``None`` while the LLR is between the bounds."""
        if llr >= self.upper:
            return "H1"
        if llr <= self.lower:
            return "H0"
        return None

    def describe(self) -> str:
        """``nElo [0, 10], alpha 0.05, beta 0.05, LLR bounds [-2.94, 2.94]``."""
        return (
            f"nElo [{self.elo0:g}, {self.elo1:g}], alpha {self.alpha:g}, beta {self.beta:g}, "
            f"LLR bounds [{self.lower:.2f}, {self.upper:.2f}]"
        )


class SprtTracker:
    """A running test: games come in as they end (in any order), a pair counts once both of its games
    have ended, and the LLR is recomputed after each completed pair."""

    def __init__(self, settings: SprtSettings) -> None:
        self.settings = settings
        self.counts = [0, 0, 0, 0, 0]
        self.llr = 0.0
        self._waiting: dict[int, float] = {}  # pair -> points of its first finished game

    def add_game(self, pair: int, points: float) -> bool:
        """Count one game of ``pair`` scoring ``points`` (0, 0.5 or 1) for A; ``True`` when it completes
        the pair (the LLR is then updated)."""
        if pair not in self._waiting:
            self._waiting[pair] = points
            return False
        self.counts[round(2 * (self._waiting.pop(pair) + points))] += 1
        self.llr = normalized_llr(self.result, self.settings.elo0, self.settings.elo1)
        return True

    @property
    def result(self) -> Pentanomial:
        c = self.counts
        return Pentanomial((c[0], c[1], c[2], c[3], c[4]))

    @property
    def decision(self) -> str | None:
        """``H0`` or ``H1`` once the LLR has reached a bound, else ``None`` (no pairs: ``None``)."""
        return self.settings.decision(self.llr) if self.result.pairs else None

    def verdict(self, games: int) -> str:
        """The last line of a test: which hypothesis was accepted, or inconclusive at ``games`` (the
        most games it was allowed)."""
        pairs = self.result.pairs
        bounds = self.settings
        if self.decision == "H1":
            return f"SPRT: H1 accepted after {pairs} pairs (LLR {self.llr:.2f} >= {bounds.upper:.2f})"
        if self.decision == "H0":
            return f"SPRT: H0 accepted after {pairs} pairs (LLR {self.llr:.2f} <= {bounds.lower:.2f})"
        return (
            f"SPRT: inconclusive after {pairs} pairs ({games} games, --games): LLR {self.llr:.2f} within "
            f"[{bounds.lower:.2f}, {bounds.upper:.2f}]"
        )

    def status(self) -> str:
        """``pairs 7 [0, 0, 1, 2, 4]: LLR 1.23 [-2.94, 2.94], nElo +95``."""
        r = self.result
        return (
            f"pairs {r.pairs} {list(r.counts)}: LLR {self.llr:.2f} "
            f"[{self.settings.lower:.2f}, {self.settings.upper:.2f}], nElo {normalized_elo(r):+.0f}"
        )
