"""KataGo's forced playouts and policy target pruning (Wu, "Accelerating Self-Play Learning in Go", 2019,
section 3.1), for self-play's PUCT root.

Dirichlet noise makes the root try moves the network dislikes, but with a few dozen visits a noised move
that turns out good still gets one or two visits: too few to show in the visit counts the policy learns
from.  Forced playouts guarantee every root child that was tried at all

    n_forced(c) = sqrt(k * P(c) * sum_c' N(c'))          (k = 2 in KataGo; P with the noise)

visits; policy target pruning then takes back, from every child but the most visited, as many of those
visits as were forced and as PUCT would not have given it anyway (its PUCT value stays below the best
child's), and drops children left with a single visit.  The target keeps what the search found and
loses what the forcing added.  Both are off (``k = 0``) in the engine.

Rules only over arrays: ``[L]`` per root child, float64.
"""

from __future__ import annotations

import math

import numpy as np


def forced_visits(prior: np.ndarray, total_visits: float, k: float) -> np.ndarray:
    """float64 ``[L]``: ``sqrt(k * P(c) * total_visits)`` for each child (``total_visits`` = the sum of the
    root children's visits)."""
    return np.sqrt(k * np.asarray(prior, np.float64) * max(0.0, total_visits))


def forced_child(child_n: np.ndarray, prior: np.ndarray, k: float, mask: np.ndarray | None) -> int | None:
    """The root child to visit next because it is below its forced visits, or ``None``.

    Only children already visited (``N(c) > 0``) are forced, only those ``mask`` allows (``None``: all);
    among several, the one furthest below (the first on ties).

    Args:
        child_n: float64 ``[L]`` visits of the root children (virtual loss included).
        prior: ``[L]`` root priors (with noise).
        k: the forced playout constant.
        mask: bool ``[L]`` moves allowed at the root, or ``None``.
    """
    n = np.asarray(child_n, np.float64)
    deficit = forced_visits(prior, float(n.sum()), k) - n
    eligible = (n > 0) & (deficit > 0)
    if mask is not None:
        eligible &= mask
    if not eligible.any():
        return None
    return int(np.argmax(np.where(eligible, deficit, -np.inf)))


def prune_policy_target(
    child_n: np.ndarray, child_w: np.ndarray, prior: np.ndarray, c_puct: float, parent_visits: float, k: float
) -> np.ndarray:
    """The root visits with the forced ones taken back, float64 ``[L]`` (the policy target's counts).

    For every child ``c`` but the most visited ``c*``: ``N(c)`` is lowered by up to ``n_forced(c)`` as
    long as ``Q(c) + c_puct * P(c) * sqrt(parent_visits) / (1 + N')`` stays below ``PUCT(c*)`` (with
    ``N(c*)`` unchanged); a child lowered to 1 visit or fewer gets 0.  ``c*`` is never changed.

    Args:
        child_n: ``[L]`` visits (no virtual loss in flight).
        child_w: ``[L]`` total values from the root player's view (``Q = W / N``).
        prior: ``[L]`` root priors the search used (with noise).
        c_puct: the exploration rate ``c(s)`` at the root (:func:`engine.search.puct.exploration_rate`).
        parent_visits: ``N(s)`` of the root.
        k: the forced playout constant.
    """
    n = np.asarray(child_n, np.float64).copy()
    if len(n) == 0 or n.max() <= 0:
        return n
    w = np.asarray(child_w, np.float64)
    p = np.asarray(prior, np.float64)
    best = int(np.argmax(n))
    sqrt_parent = math.sqrt(max(0.0, parent_visits))
    best_puct = w[best] / n[best] + c_puct * p[best] * sqrt_parent / (1.0 + n[best])
    forced = forced_visits(p, float(n.sum()), k)
    for c in np.flatnonzero(n > 0):
        if c == best:
            continue
        room = best_puct - w[c] / n[c]  # what the exploration term may reach while staying below
        if room <= 0:
            continue
        # smallest N' with  c_puct P sqrt(parent) / (1 + N') < room
        lowest = math.floor(c_puct * p[c] * sqrt_parent / room - 1.0) + 1.0
        kept = max(n[c] - forced[c], lowest, 0.0)
        if kept < n[c]:
            n[c] = 0.0 if kept <= 1.0 else kept
    return n
