"""engine.search.gumbel: sequential halving, completed Q, sigma, the improved policy, and a Gumbel root
search on the toy game tree."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.search.config import SearchConfig
from engine.search.gumbel import (
    GumbelConfig,
    GumbelRoot,
    completed_q,
    halving_schedule,
    improved_policy,
    prior_logits,
    sigma,
)
from tests.engine.search.reference_tree import Tree
from tests.engine.search.toy_game import Path, ToyEvaluator, ToyState


@pytest.mark.parametrize(
    ("considered", "simulations", "expected"),
    [
        (4, 8, [0, 0, 0, 0, 1, 1, 2, 2]),
        (2, 4, [0, 0, 1, 1]),
        (1, 3, [0, 1, 2]),
        (4, 3, [0, 0, 0]),
        (3, 9, [0, 0, 0, 1, 1, 2, 2, 3, 3]),
    ],
)
def test_halving_schedule(considered: int, simulations: int, expected: list[int]) -> None:
    assert halving_schedule(considered, simulations) == expected


def test_halving_schedule_spends_the_budget_in_equal_phases() -> None:
    levels = halving_schedule(16, 64)
    assert len(levels) == 64 and levels[:16] == [0] * 16  # every considered move once first
    visits = [0] * 16
    order = sorted(range(16))
    for level in levels:  # give each level to the first move that has it: the best moves go on
        move = next(m for m in order if visits[m] == level)
        visits[move] += 1
    assert sorted(visits, reverse=True)[:2] == [visits[0], visits[1]] and visits[0] > visits[8] >= 1


def test_completed_q_mixes_the_root_value_for_unvisited_moves() -> None:
    prior = np.array([0.5, 0.3, 0.2])
    visits = np.array([3.0, 1.0, 0.0])
    q = np.array([0.4, -0.2, 0.0])
    got = completed_q(prior, visits, q, root_value=0.1)
    # (v + N * sum(pi q) / sum(pi)) / (1 + N) over the visited moves: N = 4, sum(pi) = 0.8
    mixed = (0.1 + 4 * (0.5 * 0.4 + 0.3 * -0.2) / 0.8) / 5
    assert got == pytest.approx([0.4, -0.2, mixed])
    assert completed_q(prior, np.zeros(3), q, root_value=0.3) == pytest.approx([0.3, 0.3, 0.3])


def test_sigma_scales_q_to_the_unit_interval_and_by_visits() -> None:
    config = GumbelConfig(c_visit=50.0, c_scale=1.0)
    got = sigma(np.array([-0.5, 0.0, 0.5]), np.array([2.0, 6.0, 1.0]), config)
    assert got == pytest.approx([0.0, 28.0, 56.0])  # (50 + max N = 6) * [0, 0.5, 1]


def test_improved_policy_is_the_prior_when_q_says_nothing() -> None:
    prior = np.array([0.6, 0.3, 0.1])
    assert improved_policy(prior_logits(prior), np.zeros(3)) == pytest.approx(prior)
    boosted = improved_policy(prior_logits(prior), np.array([0.0, 0.0, 3.0]))
    assert boosted.sum() == pytest.approx(1.0) and boosted[2] == pytest.approx(
        0.1 * math.e**3 / (0.9 + 0.1 * math.e**3)
    )


def gumbel_tree(simulations: int, considered: int, values: dict[Path, float], seed: int = 0) -> Tree:
    config = SearchConfig(
        batch_size=1, gumbel=GumbelConfig(simulations=simulations, considered=considered), seed=seed
    )
    tree = Tree(ToyState(6), config)
    evaluator = ToyEvaluator(lambda _p: (0.3, 0.25, 0.2, 0.12, 0.08, 0.05), lambda p: values.get(p, 0.0))
    for _ in range(simulations + 1):  # the root's evaluation, then the simulations
        leaves = tree.select_leaves(1)
        tree.backup(
            leaves, evaluator.evaluate(np.stack([x.planes for x in leaves]), [x.legal for x in leaves])
        )
    return tree


def test_gumbel_root_visits_follow_sequential_halving() -> None:
    tree = gumbel_tree(simulations=8, considered=4, values={})
    gumbel = tree.gumbel_root
    assert gumbel is not None and int(gumbel.considered.sum()) == 4
    visits = tree.root.child_n
    assert sorted(visits[gumbel.considered].tolist()) == [1.0, 1.0, 3.0, 3.0]
    assert visits[~gumbel.considered].sum() == 0  # moves not sampled are never searched


def test_gumbel_finds_a_good_move_of_low_prior_and_the_target_learns_it() -> None:
    # move 5 (prior 0.05) wins material: its position is worth -0.9 to the opponent
    values: dict[Path, float] = {(5,): -0.9}
    found = 0
    for seed in range(20):
        tree = gumbel_tree(simulations=32, considered=6, values=values, seed=seed)
        gumbel = tree.gumbel_root
        assert gumbel is not None
        root = tree.root
        found += gumbel.best(root.child_n, root.child_w, root.q) == 5
        target = gumbel.policy_target(root.child_n, root.child_w, root.q)
        assert target.sum() == pytest.approx(1.0) and target[5] > 0.9  # from a prior of 0.05
    assert found == 20  # every move is considered (m = 6), and the search shows move 5 is the best


def test_gumbel_counts_only_this_searchs_visits_after_tree_reuse() -> None:
    root = GumbelRoot(
        np.full(4, 0.25), np.array([5.0, 0.0, 0.0, 0.0]), None, GumbelConfig(8, 4), np.random.default_rng(1)
    )
    child_n = np.array([5.0, 0.0, 0.0, 0.0])
    child_w = np.zeros(4)
    picks = []
    for _ in range(4):  # the first four simulations go to four different moves, reused visits or not
        slot = root.select(child_n, child_w, 0.0)
        picks.append(slot)
        child_n[slot] += 1
    assert sorted(picks) == [0, 1, 2, 3]


def test_moves_outside_the_allowed_set_are_neither_considered_nor_targeted() -> None:
    allowed = np.array([True, True, False, True])
    root = GumbelRoot(np.full(4, 0.25), np.zeros(4), allowed, GumbelConfig(8, 4), np.random.default_rng(0))
    assert not root.considered[2] and int(root.considered.sum()) == 3
    target = root.policy_target(np.array([1.0, 1.0, 0.0, 1.0]), np.array([0.5, 0.1, 0.0, -0.3]), 0.0)
    assert target[2] == 0.0 and target.sum() == pytest.approx(1.0)


def test_with_reuse_reused_visits_count_towards_the_schedule() -> None:
    config = GumbelConfig(8, 4, reuse=True)  # schedule [0, 0, 0, 0, 1, 1, 2, 2]: 4 moves >= 1, 2 >= 2, 2 >= 3
    root = GumbelRoot(
        np.full(4, 0.25), np.array([5.0, 0.0, 0.0, 0.0]), None, config, np.random.default_rng(1)
    )
    child_n = np.array([5.0, 0.0, 0.0, 0.0])
    child_w = np.array([2.5, 0.0, 0.0, 0.0])
    assert root.remaining(child_n) == 5  # move 0's five reused visits stand for three simulations
    picks = []
    while root.remaining(child_n):
        slot = root.select(child_n, child_w, 0.0)
        picks.append(slot)
        child_n[slot] += 1
    assert len(picks) == 5 and 0 not in picks and sorted(picks[:3]) == [1, 2, 3]
    assert sorted(child_n.tolist()) == [1.0, 1.0, 3.0, 5.0]  # the levels met: one more move at 3
    assert child_n[root.best(child_n, child_w, 0.0)] >= 3.0  # one of the two at the last level
    without = GumbelRoot(
        np.full(4, 0.25), np.array([5.0, 0.0, 0.0, 0.0]), None, GumbelConfig(8, 4), np.random.default_rng(1)
    )
    assert without.remaining(np.array([5.0, 0.0, 0.0, 0.0])) == 8  # off: every simulation fresh


@pytest.mark.parametrize("seed", range(6))
def test_with_reuse_and_no_reused_visits_the_choices_are_the_same(seed: int) -> None:
    rng = np.random.default_rng(seed)
    prior = rng.dirichlet(np.full(12, 0.5))
    values = rng.uniform(-1.0, 1.0, 12)
    picks = []
    for reuse in (False, True):
        root = GumbelRoot(
            prior, np.zeros(12), None, GumbelConfig(40, 8, reuse=reuse), np.random.default_rng(seed)
        )
        child_n, child_w = np.zeros(12), np.zeros(12)
        made = []
        for _ in range(40):
            slot = root.select(child_n, child_w, 0.1)
            made.append(slot)
            child_n[slot] += 1
            child_w[slot] += values[slot]
        assert root.remaining(child_n) == 0
        picks.append((made, root.best(child_n, child_w, 0.1)))
    assert picks[0] == picks[1]
