"""The root choices of a batch of walks, made in Python for the compiled trees (mctx's split of root and
interior selection): a Gumbel root (:mod:`engine.search.gumbel`) or forced playouts
(:mod:`engine.search.forced`) choose the root child of each walk here, with the functions the Python
the reference ``Tree`` uses; below the root the compiled walk keeps its own PUCT.

The choices of one batch are planned in order before the compiled walks run (a Gumbel root's in one
compiled call, :mod:`engine.search.gumbel_kernel`, bit for bit ``GumbelRoot.select``'s): after each one the plan
adds the walk's virtual loss to a copy of the root's statistics (:class:`RootStats`), so every choice
sees the visits the walks before it in the batch added, as ``Tree._select`` does walk by walk.  A plan
is exact while every walk of the batch ends on a leaf for the network (always, with batches of one
leaf); a walk that collides (its virtual loss taken back) or ends on an exact value (a terminal or
proven node, a mate in one: its real value backed up at once) leaves the root otherwise than planned,
and the later choices of that batch may differ from ``Tree``'s.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from engine.search.config import SearchConfig
from engine.search.forced import forced_child
from engine.search.gumbel import GumbelRoot
from engine.search.gumbel_kernel import plan_gumbel
from engine.search.puct import puct_scores


@dataclasses.dataclass
class RootStats:
    """A copy of the root's statistics that a plan changes as the walks would.

    Attributes:
        child_n, child_w, prior: float64 ``[L]``: ``N(s, a)``, ``W(s, a)`` (root player's view), ``P(s, a)``.
        visits, value_sum, visited_prior: the root's ``N(s)``, ``W(s)`` and visited prior sum.
    """

    child_n: np.ndarray
    child_w: np.ndarray
    prior: np.ndarray
    visits: float
    value_sum: float
    visited_prior: float

    @property
    def q(self) -> float:
        """The root's mean value (``Node.q``)."""
        return self.value_sum / self.visits if self.visits > 0 else 0.0

    def add_visits(self, slot: int, dn: float, dw: float) -> None:
        """``Node.add_visits``: the same arithmetic, so the plan's numbers are the walks'."""
        before = float(self.child_n[slot])
        after = before + dn
        self.child_n[slot] = after
        self.child_w[slot] += dw
        self.visits += dn
        if (before > 0) != (after > 0):
            p = float(self.prior[slot])
            self.visited_prior += p if after > 0 else -p


def plan_root_slots(
    stats: RootStats,
    out: npt.NDArray[np.int64],
    start: int,
    count: int,
    config: SearchConfig,
    mask: np.ndarray | None,
    gumbel: GumbelRoot | None,
) -> None:
    """Write the root slot of walks ``start .. count - 1`` into ``out`` (int64, at least ``count`` long),
    in order, each with the virtual loss of the ones before it added to ``stats``: with ``gumbel`` the
    move sequential halving asks for (``GumbelRoot.select``); else a child below its forced visits
    (``config.forced_playouts``, :func:`~engine.search.forced.forced_child`) or the first highest PUCT
    score (``Tree._select``'s root choice).  ``mask``: bool ``[L]`` root slots allowed (searchmoves)."""
    vl = config.virtual_loss
    if gumbel is not None:
        _plan_gumbel(stats, out, start, count, vl, gumbel)
        return
    k = config.forced_playouts
    for i in range(start, count):
        slot = forced_child(stats.child_n, stats.prior, k, mask)
        if slot is None:
            scores = puct_scores(
                stats.child_n,
                stats.child_w,
                stats.prior,
                stats.visits,
                stats.q,
                stats.visited_prior,
                config.fpu_reduction_root,
                config,
                mask,
            )
            slot = int(scores.argmax())
        out[i] = slot
        stats.add_visits(slot, vl, -vl)


def _plan_gumbel(
    stats: RootStats, out: npt.NDArray[np.int64], start: int, count: int, vl: int, gumbel: GumbelRoot
) -> None:
    """The Gumbel root's plan in one compiled call (:func:`~engine.search.gumbel_kernel.plan_gumbel`,
    ``GumbelRoot.select``'s choices bit for bit), then ``stats``' root sums as ``RootStats.add_visits``
    leaves them."""
    before = stats.child_n.copy()
    stats.visits = plan_gumbel(
        stats.child_n,
        stats.child_w,
        stats.prior,
        stats.visits,
        stats.value_sum,
        gumbel.kernel_args,
        float(vl),
        out,
        start,
        count,
        np.empty(4 * len(before)),
    )
    if vl > 0:  # the prior sum of the visited children, added in the walks' order as add_visits adds it
        for slot in out[start:count].tolist():
            if before[slot] <= 0:
                before[slot] = 1.0
                stats.visited_prior += float(stats.prior[slot])
