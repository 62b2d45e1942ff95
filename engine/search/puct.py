"""PUCT's arithmetic over one node's arrays, shared by the reference tree's selection and the root choices
planned for the compiled trees (:mod:`engine.search.root_plan`): the same floating-point operations in
the same order, so both pick the same child."""

from __future__ import annotations

import math

import numpy as np

from engine.search.config import SearchConfig


def exploration_rate(parent_visits: float, config: SearchConfig) -> float:
    """AlphaZero's ``c(s) = log((1 + N(s) + c_base) / c_base) + c_init``: the weight of the prior
    term, growing slowly with the parent's visits (1.25 at first, 1.25 + log 2 at ``N(s) = c_base +
    1``)."""
    return math.log((1.0 + parent_visits + config.c_base) / config.c_base) + config.c_init


def puct_scores(
    child_n: np.ndarray,
    child_w: np.ndarray,
    prior: np.ndarray,
    visits: float,
    q: float,
    visited_prior: float,
    reduction: float,
    config: SearchConfig,
    mask: np.ndarray | None,
) -> np.ndarray:
    """The PUCT score of each child of an expanded node, float64 ``[L]``::

        Q(s, a) + c(s) * P(s, a) * sqrt(N(s)) / (1 + N(s, a))

    with ``c(s)`` from :func:`exploration_rate`, ``Q(s, a) = W(s, a) / N(s, a)`` for visited children and
    the first-play urgency ``q - reduction * sqrt(visited_prior)`` for the others.

    Args:
        child_n, child_w, prior: float64 ``[L]``: ``N(s, a)`` (virtual loss included), ``W(s, a)`` from the
            node's player to move, ``P(s, a)``.
        visits, q, visited_prior: the node's ``N(s)``, its mean value and the sum of the priors of its
            visited children.
        reduction: the first-play urgency reduction (the root's or the interior's).
        config: ``c_init`` and ``c_base``.
        mask: bool ``[L]``: children that may be chosen (the others score ``-inf``), or ``None``.
    """
    c = exploration_rate(visits, config)
    fpu = q - reduction * math.sqrt(max(0.0, visited_prior))
    score = np.full(len(child_n), fpu)
    np.divide(child_w, child_n, out=score, where=child_n > 0)
    score += (c * math.sqrt(visits)) * prior / (1.0 + child_n)
    if mask is not None:
        score[~mask] = -np.inf
    return score
