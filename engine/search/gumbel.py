"""Gumbel root search (Danihelka et al., "Policy improvement by planning with Gumbel", ICLR 2022).

Instead of PUCT with Dirichlet noise at the root, a search of ``n`` simulations:

1. samples a Gumbel variable ``g(a)`` for every root move and considers the ``m`` moves with the highest
   ``g(a) + logits(a)`` (Gumbel-Top-k: a sample without replacement from the policy);
2. spreads the ``n`` simulations over them by sequential halving: in each of ``ceil(log2 m)`` phases every
   remaining move gets the same number of visits, then the better half (by ``g + logits + sigma(q)``)
   goes on (:func:`halving_schedule` gives the visit level each simulation tops a move up to);
3. plays the move left at the end (the most visited considered move with the highest score);
4. trains the policy towards the improved policy ``softmax(logits + sigma(completed_q))``, where
   ``completed_q`` is each visited move's Q and, for unvisited moves, a mix of the root value and the
   visited moves' Q (:func:`completed_q`), and ``sigma(q) = (c_visit + max_b N(b)) * c_scale * q`` on Q
   rescaled to ``[0, 1]``.

This improves the policy even with 8-32 simulations, where visit counts are a poor target.  Below the
root the tree keeps PUCT (the paper's Go agent also used its deterministic interior selection; PUCT
below a Gumbel root is the smaller change and keeps one search).

Tree reuse (``GumbelConfig.reuse``, self-play's): off, the visits a move already had when the search of
this move began do not count towards the schedule, and every search spends ``n`` fresh simulations.  On,
they count: the schedule asks ``need(v)`` considered moves to reach ``v + 1`` visits for each level
``v`` (the times ``v`` occurs in it); the next simulation tops up, at the lowest level not yet met, the
best-scoring considered move with exactly ``v`` visits, so the moves topped up are still compared at
equal visits, and a move whose reused visits already pass a level needs no simulation there.  The search
ends when every level is met (:meth:`GumbelRoot.remaining` is 0) or the ``n`` fresh simulations are
spent; the move played is the best-scoring one among those at the last level.  Without reused visits
both rules follow the same schedule.

Arrays are over the root's ``L`` legal moves; values are from the root player's point of view.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np


@dataclasses.dataclass(frozen=True)
class GumbelConfig:
    """Settings of a Gumbel root search.

    Attributes:
        simulations: ``n``, the simulations of one search (the schedule is made for this many).
        considered: ``m``, the most moves sampled at the root (16 in the paper).
        c_visit, c_scale: ``sigma``'s constants (50 and 1.0 in the paper).
        reuse: count the visits the moves had when the search began towards the schedule (the module
            docstring); ``False``: only this search's.
    """

    simulations: int = 32
    considered: int = 16
    c_visit: float = 50.0
    c_scale: float = 1.0
    reuse: bool = False


def halving_schedule(considered: int, simulations: int) -> list[int]:
    """For each simulation ``k`` (0-based), the visit count the move it goes to has before it: a move
    with exactly that many visits (among the remaining ones) is topped up.  E.g. 4 moves and 8
    simulations: ``[0, 0, 0, 0, 1, 1, 2, 2]`` (4 moves once, then the best 2 twice more)."""
    if considered <= 1:
        return list(range(simulations))
    phases = math.ceil(math.log2(considered))
    levels: list[int] = []
    visits = 0
    remaining = considered
    while len(levels) < simulations:
        rounds = max(1, simulations // (phases * remaining))
        for _ in range(rounds):
            levels.extend([visits] * remaining)
            visits += 1
        remaining = max(2, remaining // 2)
    return levels[:simulations]


def completed_q(prior: np.ndarray, visits: np.ndarray, q: np.ndarray, root_value: float) -> np.ndarray:
    """float64 ``[L]``: Q of the visited moves; for the others the mixed value
    ``(v + N / sum_visited(pi) * sum_visited(pi * q)) / (1 + N)`` with ``N`` the total visits."""
    visited = visits > 0
    total = float(visits.sum())
    mass = float(prior[visited].sum())
    mixed = root_value
    if total > 0 and mass > 0:
        mixed = (root_value + total * float((prior[visited] * q[visited]).sum()) / mass) / (1.0 + total)
    return np.where(visited, q, mixed)


def sigma(completed: np.ndarray, visits: np.ndarray, config: GumbelConfig) -> np.ndarray:
    """``(c_visit + max N) * c_scale * q`` with ``q`` rescaled to ``[0, 1]`` over the moves (``[L]``)."""
    low, high = float(completed.min()), float(completed.max())
    scaled = (completed - low) / max(high - low, 1e-8)
    weight = (config.c_visit + float(visits.max(initial=0.0))) * config.c_scale
    transformed: np.ndarray = weight * scaled
    return transformed


def improved_policy(logits: np.ndarray, transformed_q: np.ndarray) -> np.ndarray:
    """``softmax(logits + sigma(completed_q))`` over the legal moves (``[L]``, sums to 1)."""
    z = logits + transformed_q
    z = np.exp(z - z.max())
    policy: np.ndarray = z / z.sum()
    return policy


def prior_logits(prior: np.ndarray) -> np.ndarray:
    """Logits of a prior (``log p``; moves of prior 0 get a very low logit, not ``-inf``)."""
    logits: np.ndarray = np.log(np.maximum(prior, 1e-30))
    return logits


class GumbelRoot:
    """The root decisions of one Gumbel search (see the module docstring).

    Args:
        prior: float ``[L]`` root priors (no noise).
        base_visits: float ``[L]`` visits each move had when this search began (tree reuse).
        allowed: bool ``[L]`` moves that may be considered, or ``None`` for all.
        config: the settings.
        rng: the source of the Gumbel sample.
    """

    def __init__(
        self,
        prior: np.ndarray,
        base_visits: np.ndarray,
        allowed: np.ndarray | None,
        config: GumbelConfig,
        rng: np.random.Generator,
    ) -> None:
        self.config = config
        self.allowed = allowed
        self.logits = prior_logits(np.asarray(prior, np.float64))
        self.prior = np.asarray(prior, np.float64)
        self.base_visits = base_visits.copy()
        self.gumbel = rng.gumbel(size=len(prior))
        #: ``g + logits`` float64 ``[L]``, the part of every score that does not change in a search
        self.scored = self.gumbel + self.logits
        score = self.scored
        if allowed is not None:
            score = np.where(allowed, score, -np.inf)
        count = min(config.considered, int(np.isfinite(score).sum()))
        order = np.argsort(-score, kind="stable")
        self.considered = np.zeros(len(prior), dtype=bool)
        self.considered[order[:count]] = True
        self.schedule = halving_schedule(count, config.simulations)
        levels = np.asarray(self.schedule, np.int64)
        #: ``need[v]``: how many considered moves the schedule takes past ``v`` visits (int64 ``[levels]``)
        self.need = np.bincount(levels, minlength=1)
        #: what the compiled plan (:func:`engine.search.gumbel_kernel.plan_gumbel`) decides from
        self.kernel_args = (
            self.scored,
            self.considered,
            np.asarray(self.base_visits, np.float64),
            levels,
            self.need,
            config.reuse,
            float(config.c_visit),
            float(config.c_scale),
        )
        #: the considered moves' slots, in slot order (int64 ``[m]``)
        self.slots = np.flatnonzero(self.considered)

    def _scores(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> np.ndarray:
        """``g + logits + sigma(completed_q)`` (``-inf`` for moves not considered)."""
        transformed = self.transformed_q(child_n, child_w, root_value)
        return np.where(self.considered, self.scored + transformed, -np.inf)

    def transformed_q(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> np.ndarray:
        """``sigma(completed_q)`` ``[L]`` from the root's statistics (``child_w`` from the root player)."""
        q = np.divide(child_w, child_n, out=np.zeros(len(child_n)), where=child_n > 0)
        return sigma(completed_q(self.prior, child_n, q, root_value), child_n, self.config)

    def select(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> int:
        """The root move of the next simulation: a considered move at the schedule's visit level (the
        best-scoring one), or, past the schedule or when none is at that level, the considered move
        with the fewest visits of this search (ties by score).  With ``reuse`` the visits are all the
        move's and the level the lowest one not met (the module docstring)."""
        if self.config.reuse:
            return self._select_reused(child_n, child_w, root_value)
        own = child_n - self.base_visits
        done = round(float(own.sum()))  # simulations started in this search, in flight included
        scores = self._scores(child_n, child_w, root_value)
        if done < len(self.schedule):
            at_level = self.considered & (np.abs(own - self.schedule[done]) < 0.5)
            if at_level.any():
                return int(np.argmax(np.where(at_level, scores, -np.inf)))
        fewest = float(own[self.considered].min())
        return int(np.argmax(np.where(self.considered & (own <= fewest + 0.5), scores, -np.inf)))

    def _shortfall(self, child_n: np.ndarray) -> np.ndarray:
        """int64 ``[levels]``: for each level ``v``, how many more considered moves need ``v + 1``
        visits (``reuse``: all their visits, in flight included)."""
        visits = child_n[self.slots]
        tops = np.arange(1, len(self.need) + 1)  # v + 1 for each level v
        reached = (visits[:, None] > tops[None, :] - 0.5).sum(axis=0)  # moves with >= v + 1 visits
        shortfall: np.ndarray = np.maximum(self.need - reached, 0)
        return shortfall

    def _select_reused(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> int:
        """``select`` with ``reuse``: the best-scoring considered move at the lowest level not met; past
        the schedule, the considered move with the fewest visits (ties by score)."""
        scores = self._scores(child_n, child_w, root_value)
        unmet = np.flatnonzero(self._shortfall(child_n))
        if len(unmet):
            at_level = self.considered & (np.abs(child_n - unmet[0]) < 0.5)
            if at_level.any():
                return int(np.argmax(np.where(at_level, scores, -np.inf)))
        fewest = float(child_n[self.considered].min())
        return int(np.argmax(np.where(self.considered & (child_n <= fewest + 0.5), scores, -np.inf)))

    def remaining(self, child_n: np.ndarray) -> int:
        """The simulations the schedule still asks for (0: met): with ``reuse`` the sum of the levels'
        shortfalls (each simulation makes up one), else the schedule's length less this search's
        visits."""
        if self.config.reuse:
            return int(self._shortfall(child_n).sum())
        return max(0, len(self.schedule) - round(float((child_n - self.base_visits).sum())))

    def best(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> int:
        """The move to play: among the most visited considered moves of this search, the best score
        (``reuse``: among those at the schedule's last level, or the most visited short of it)."""
        own = child_n if self.config.reuse else child_n - self.base_visits
        most = float(own[self.considered].max())
        if self.config.reuse:
            most = min(most, float(len(self.need)))
        scores = self._scores(child_n, child_w, root_value)
        return int(np.argmax(np.where(self.considered & (own >= most - 0.5), scores, -np.inf)))

    def policy_target(self, child_n: np.ndarray, child_w: np.ndarray, root_value: float) -> np.ndarray:
        """The improved policy ``[L]`` over the allowed root moves (0 for the others)."""
        logits = self.logits if self.allowed is None else np.where(self.allowed, self.logits, -np.inf)
        return improved_policy(logits, self.transformed_q(child_n, child_w, root_value))
