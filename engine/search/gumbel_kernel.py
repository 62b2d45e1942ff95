"""The Gumbel root's choices of a batch of walks in compiled code, for the compiled trees' plan
(:func:`engine.search.root_plan.plan_root_slots`).

:meth:`GumbelRoot.select <engine.search.gumbel.GumbelRoot.select>` is some thirty small numpy calls a
walk (completed Q, ``sigma``, the scores, the schedule's level); here one compiled loop plans every walk
of a batch, adding each walk's virtual loss as :class:`~engine.search.root_plan.RootStats` does.  The
arithmetic is numpy's, operation for operation: the divisions, products and comparisons are exact IEEE
float64 operations whoever computes them, and the three sums (the root's visits, the visited moves'
prior and prior-weighted Q) follow numpy's pairwise summation (:func:`pairwise_sum`).  So every choice
is bit for bit the one of the numpy code, which the reference tree keeps.  Importing this module imports
numba (the compiled trees' plan imports it).

Arrays are over the root's ``L`` legal moves, float64 unless said.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engine.jit import njit, njit_no_alloc

__all__ = ["pairwise_sum", "plan_gumbel", "scores_into"]

F8 = npt.NDArray[np.float64]
I8 = npt.NDArray[np.int64]
B1 = npt.NDArray[np.bool_]

#: numpy's block below which a pairwise sum adds in eight running sums (``PW_BLOCKSIZE``)
_BLOCK = 128


@njit_no_alloc
def _block(a: F8, lo: int, n: int) -> float:
    """numpy's ``pairwise_sum`` of ``a[lo : lo + n]`` for ``n <= 128``: sequential below 8 values, else
    eight interleaved running sums combined in pairs, then the rest added in order."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    end = n - n % 8
    while i < end:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return float(res)


@njit
def _pairwise(a: F8, lo: int, n: int) -> float:
    """numpy's ``pairwise_sum`` of ``a[lo : lo + n]``: :func:`_block` up to 128 values, else the sum of
    the two halves (split at a multiple of 8), each summed so; the recursion kept on an explicit stack
    (numba's cache cannot keep a recursive function)."""
    if n <= _BLOCK:
        return _block(a, lo, n)
    starts = np.empty(64, np.int64)  # the frames: a range, whether its left half is summed, that sum
    sizes = np.empty(64, np.int64)
    right = np.zeros(64, np.bool_)
    left = np.empty(64)
    starts[0], sizes[0], right[0] = lo, n, False
    top = 0
    value = 0.0
    summed = False  # ``value`` holds the finished sum of the frame above ``top``
    while True:
        if not summed:
            size = sizes[top]
            if size <= _BLOCK:
                value = _block(a, starts[top], size)
                summed = True
                top -= 1
            else:
                half = size // 2
                half -= half % 8
                right[top] = False
                starts[top + 1], sizes[top + 1] = starts[top], half
                top += 1
        elif top < 0:
            return value
        elif not right[top]:
            half = sizes[top] // 2
            half -= half % 8
            left[top] = value
            right[top] = True
            starts[top + 1], sizes[top + 1] = starts[top] + half, sizes[top] - half
            top += 1
            summed = False
        else:
            value = left[top] + value
            top -= 1


@njit
def pairwise_sum(a: F8, n: int) -> float:
    """``float(a[:n].sum())`` as numpy computes it: the identity 0 plus the pairwise sum."""
    return 0.0 + _pairwise(a, 0, n)


@njit
def scores_into(
    child_n: F8,
    child_w: F8,
    prior: F8,
    scored: F8,
    considered: B1,
    root_value: float,
    c_visit: float,
    c_scale: float,
    scratch: F8,
    out: F8,
) -> None:
    """``out[:] = GumbelRoot._scores(child_n, child_w, root_value)``: ``scored + sigma(completed_q)``
    for the considered moves, ``-inf`` for the others.  ``scored``: ``gumbel + logits``; ``scratch``:
    float64 ``[>= 2 L]``."""
    size = child_n.shape[0]
    # completed Q (engine.search.gumbel.completed_q): the visited moves' priors and products, packed
    # as numpy's boolean indexing packs them, for the same sums
    packed = 0
    for i in range(size):
        if child_n[i] > 0:
            q = child_w[i] / child_n[i]
            scratch[packed] = prior[i]
            scratch[size + packed] = prior[i] * q
            packed += 1
    total = pairwise_sum(child_n, size)
    mass = pairwise_sum(scratch, packed)
    mixed = root_value
    if total > 0 and mass > 0:
        weighted = 0.0 + _pairwise(scratch[size:], 0, packed)
        mixed = (root_value + total * weighted / mass) / (1.0 + total)
    low = np.inf
    high = -np.inf
    most = 0.0
    for i in range(size):
        n = child_n[i]
        value = child_w[i] / n if n > 0 else mixed
        out[i] = value
        low = min(low, value)
        high = max(high, value)
        most = max(most, n)
    spread = high - low
    if not spread > 1e-8:
        spread = 1e-8
    weight = (c_visit + most) * c_scale
    for i in range(size):
        out[i] = scored[i] + weight * ((out[i] - low) / spread) if considered[i] else -np.inf


@njit_no_alloc
def _best_of(values: F8, low: float, high: float, considered: B1, scores: F8) -> int:
    """The first highest score among the considered moves with ``low < values <= high`` (-1: none)."""
    best = -1
    top = -np.inf
    for i in range(scores.shape[0]):
        if considered[i] and low < values[i] <= high and (best < 0 or scores[i] > top):
            best = i
            top = scores[i]
    return best


@njit_no_alloc
def _at_level(values: F8, level: float, considered: B1, scores: F8) -> int:
    """The first highest score among the considered moves with ``|values - level| < 0.5`` (-1: none)."""
    best = -1
    top = -np.inf
    for i in range(scores.shape[0]):
        if considered[i] and abs(values[i] - level) < 0.5 and (best < 0 or scores[i] > top):
            best = i
            top = scores[i]
    return best


@njit
def _choose(
    child_n: F8,
    own: F8,
    scores: F8,
    considered: B1,
    schedule: I8,
    need: I8,
    reuse: bool,
) -> int:
    """``GumbelRoot.select`` on the scores: the best-scoring considered move at the schedule's level,
    else (past the schedule, none at the level) at the fewest visits of this search (``own``; with
    ``reuse``, all visits)."""
    size = child_n.shape[0]
    if reuse:
        for level in range(need.shape[0]):
            reached = 0
            for i in range(size):
                if considered[i] and child_n[i] > level + 1 - 0.5:
                    reached += 1
            if need[level] - reached > 0:
                best = _at_level(child_n, level, considered, scores)
                if best >= 0:
                    return best
                break
        visits = child_n
    else:
        done = round(pairwise_sum(own, size))
        if done < schedule.shape[0]:
            best = _at_level(own, schedule[done], considered, scores)
            if best >= 0:
                return best
        visits = own
    fewest = np.inf
    for i in range(size):
        if considered[i]:
            fewest = min(fewest, visits[i])
    return _best_of(visits, -np.inf, fewest + 0.5, considered, scores)


@njit
def plan_gumbel(
    child_n: F8,
    child_w: F8,
    prior: F8,
    root_visits: float,
    root_value_sum: float,
    gumbel: tuple[F8, B1, F8, I8, I8, bool, float, float],
    virtual_loss: float,
    out: I8,
    start: int,
    count: int,
    scratch: F8,
) -> float:
    """Plan walks ``start .. count - 1`` (``out[i]``, a root slot) as ``plan_root_slots`` does with a
    Gumbel root: each the move ``GumbelRoot.select`` asks for, then its virtual loss added to
    ``child_n`` / ``child_w`` (changed in place) and the root's visits.  ``gumbel``: ``(scored,
    considered, base_visits, schedule, need, reuse, c_visit, c_scale)`` of the
    :class:`~engine.search.gumbel.GumbelRoot`; ``scratch``: float64 ``[>= 4 L]``.  Returns the root's
    visits after the plan."""
    scored, considered, base, schedule, need, reuse, c_visit, c_scale = gumbel
    size = child_n.shape[0]
    scores = scratch[2 * size : 3 * size]
    own = scratch[3 * size : 4 * size]
    visits = root_visits
    for walk in range(start, count):
        root_value = root_value_sum / visits if visits > 0 else 0.0
        scores_into(
            child_n, child_w, prior, scored, considered, root_value, c_visit, c_scale, scratch, scores
        )
        for i in range(size):
            own[i] = child_n[i] - base[i]
        slot = _choose(child_n, own, scores, considered, schedule, need, reuse)
        out[walk] = slot
        child_n[slot] = child_n[slot] + virtual_loss
        child_w[slot] += -virtual_loss
        visits += virtual_loss
    return visits
