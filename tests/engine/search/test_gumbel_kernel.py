"""engine.search.gumbel_kernel: numpy's pairwise sums, and the compiled plan of a batch makes the choices
``GumbelRoot.select`` makes walk by walk (bit for bit the same scores) on random roots, with and without
reused visits."""

from __future__ import annotations

import numpy as np
import pytest

from engine.search.gumbel import GumbelConfig, GumbelRoot
from engine.search.gumbel_kernel import pairwise_sum, plan_gumbel, scores_into


def test_pairwise_sum_is_numpys_sum_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for size in [*range(40), 127, 128, 129, 200, 362, 593, 1000]:
        a = rng.random(size) * rng.choice([1e-4, 1.0, 1e4], size)
        assert pairwise_sum(a, size) == float(a.sum())


def _random_root(
    rng: np.random.Generator, size: int, reuse: bool
) -> tuple[GumbelRoot, np.ndarray, np.ndarray]:
    """A Gumbel root over ``size`` moves with random priors, and random root statistics (reused visits
    and values on some moves)."""
    prior = rng.dirichlet(np.full(size, 0.3))
    visits = np.where(rng.random(size) < 0.3, rng.integers(0, 12, size), 0).astype(np.float64)
    values = visits * rng.uniform(-1.0, 1.0, size)
    allowed = rng.random(size) < 0.9 if rng.random() < 0.3 else None
    if allowed is not None:
        allowed[0] = True
    config = GumbelConfig(
        simulations=int(rng.integers(4, 80)), considered=int(rng.integers(1, 20)), reuse=reuse
    )
    return GumbelRoot(prior, visits, allowed, config, rng), visits.copy(), values


@pytest.mark.parametrize("reuse", [False, True])
def test_the_compiled_plan_makes_selects_choices(reuse: bool) -> None:
    rng = np.random.default_rng(3 if reuse else 4)
    for _ in range(200):
        size = int(rng.choice([3, 20, 82, 200, 362, 593]))
        root, child_n, child_w = _random_root(rng, size, reuse)
        root_visits, value_sum = float(child_n.sum()) + 1.0, float(rng.uniform(-5.0, 5.0))
        scratch = np.empty(4 * size)
        scores = np.empty(size)
        q = value_sum / root_visits
        scores_into(child_n, child_w, root.prior, root.scored, root.considered, q, 50.0, 1.0, scratch, scores)
        np.testing.assert_array_equal(scores, root._scores(child_n, child_w, q))
        # numpy, walk by walk, virtual loss 1 added after each choice; then the compiled plan of them all
        count = int(rng.integers(1, 90))
        n, w, visits = child_n.copy(), child_w.copy(), root_visits
        expected = []
        for _ in range(count):
            slot = root.select(n, w, value_sum / visits)
            expected.append(slot)
            n[slot] += 1.0
            w[slot] += -1.0
            visits += 1.0
        out = np.full(count, -1, np.int64)
        got_visits = plan_gumbel(
            child_n,
            child_w,
            root.prior,
            root_visits,
            value_sum,
            root.kernel_args,
            1.0,
            out,
            0,
            count,
            scratch,
        )
        assert out.tolist() == expected
        np.testing.assert_array_equal(child_n, n)
        np.testing.assert_array_equal(child_w, w)
        assert got_visits == visits
