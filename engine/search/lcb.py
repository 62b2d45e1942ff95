"""The lower confidence bound of a root move's value, for choosing the move to play by it.

Leela Zero plays the root move whose mean value has the highest lower confidence bound, among the
moves with more than a share of the most visited move's visits (docs/design.md, "Choosing the root
move by its lower confidence bound"): ``mean - t(n - 1) * sqrt(s^2 / n)``, ``s^2`` the sample variance
of the values backed up through the move, ``t(df)`` Student's t quantile at ``1 - alpha``.

The quantiles come from a table made once per ``alpha`` (:func:`quantile_table`): exact for
``df < TABLE_SIZE`` (the t distribution's closed forms for whole degrees of freedom, inverted by
bisection) and the Cornish-Fisher expansion in the normal quantile above (its fifth term is below
1e-4 there at ``alpha`` 1e-5).  The table's entry 0 holds the normal quantile for that expansion.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np
import numpy.typing as npt

from engine.jit import njit_no_alloc

F8 = npt.NDArray[np.float64]

#: Degrees of freedom below this have their exact quantile in the table.
TABLE_SIZE = 64


def t_upper_tail(t: float, df: int) -> float:
    """``P(T > t)`` for Student's t with ``df >= 1`` whole degrees of freedom and ``t >= 0`` (Abramowitz
    and Stegun 26.7.3-4: finite sums in ``cos(theta)``, ``theta = atan(t / sqrt(df))``)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    if df % 2:
        inner = 0.0
        if df > 1:
            term = math.cos(theta)
            inner = term
            for j in range(1, (df - 1) // 2):
                term *= c2 * (2 * j) / (2 * j + 1)
                inner += term
        central = 2.0 / math.pi * (theta + math.sin(theta) * inner)
    else:
        term, inner = 1.0, 1.0
        for j in range(1, df // 2):
            term *= c2 * (2 * j - 1) / (2 * j)
            inner += term
        central = math.sin(theta) * inner
    return max(0.0, (1.0 - central) / 2.0)


def t_quantile_exact(df: int, alpha: float) -> float:
    """The ``t`` with ``P(T > t) = alpha`` (``0 < alpha < 0.5``), by bisection on :func:`t_upper_tail`."""
    low, high = 0.0, 1.0
    while t_upper_tail(high, df) > alpha:
        low, high = high, 2.0 * high
    for _ in range(200):
        mid = 0.5 * (low + high)
        if t_upper_tail(mid, df) > alpha:
            low = mid
        else:
            high = mid
        if high - low <= 1e-12 * high:
            break
    return 0.5 * (low + high)


@functools.lru_cache(maxsize=8)
def quantile_table(alpha: float) -> F8:
    """float64 ``[TABLE_SIZE]``: entry ``df`` Student's t quantile at ``1 - alpha`` for ``df >= 1``;
    entry 0 the normal quantile (read by :func:`t_quantile` above the table).  Read-only."""
    if not 0.0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), not {alpha}")
    table = np.array(
        [NormalDist().inv_cdf(1.0 - alpha)] + [t_quantile_exact(df, alpha) for df in range(1, TABLE_SIZE)]
    )
    table.flags.writeable = False
    return table


@njit_no_alloc
def t_quantile(table: F8, df: float) -> float:
    """Student's t quantile for ``df >= 1`` degrees of freedom (whole degrees below the table's size are
    looked up; above, the Cornish-Fisher expansion in the normal quantile ``table[0]``)."""
    if df < table.shape[0]:
        return float(table[max(1, int(df))])
    z = float(table[0])
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


@njit_no_alloc
def lower_bound(n: float, mean: float, square_sum: float, table: F8) -> float:
    """The lower confidence bound of a mean of ``n >= 2`` values whose squares sum to ``square_sum``:
    ``mean - t(n - 1) * sqrt(s^2 / n)`` with the sample variance ``s^2`` (never below 0)."""
    variance = max(0.0, square_sum / n - mean * mean) * n / (n - 1.0)
    return mean - t_quantile(table, n - 1.0) * math.sqrt(variance / n)
