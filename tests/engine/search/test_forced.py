"""engine.search.forced: KataGo's forced playouts at the root and policy target pruning."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from engine.search.config import SearchConfig
from engine.search.forced import forced_child, forced_visits, prune_policy_target
from engine.search.puct import exploration_rate
from tests.engine.search.evaluators import search_until
from tests.engine.search.reference_tree import Tree
from tests.engine.search.toy_game import ToyEvaluator, ToyState, wavy_value

# A root whose best move by value has a small prior: PUCT alone gives it few visits.
ROOT_PRIOR = (0.5, 0.3, 0.15, 0.05)


def _search(config: SearchConfig, playouts: int) -> Tree:
    evaluator = ToyEvaluator(lambda path: ROOT_PRIOR if not path else (0.25,) * 4, wavy_value)
    return search_until(Tree(ToyState(4), config), evaluator, playouts)


def test_forced_visits_are_sqrt_k_prior_total() -> None:
    np.testing.assert_allclose(forced_visits(np.array([0.08, 0.5]), 100.0, 2.0), [4.0, 10.0])
    assert forced_visits(np.array([0.3]), 0.0, 2.0)[0] == 0.0


def test_forced_child_is_a_visited_child_furthest_below_its_forced_visits() -> None:
    prior = np.array([0.5, 0.3, 0.15, 0.05])
    # total 40: forced = sqrt(2 p 40) = [6.3, 4.9, 3.5, 1.8]
    assert forced_child(np.array([30.0, 8.0, 1.0, 1.0]), prior, 2.0, None) == 2
    assert forced_child(np.array([30.0, 8.0, 0.0, 2.0]), prior, 2.0, None) is None  # unvisited: never forced
    assert forced_child(np.array([30.0, 8.0, 1.0, 1.0]), prior, 2.0, np.array([1, 1, 0, 1], bool)) == 3
    assert forced_child(np.array([30.0, 8.0, 1.0, 1.0]), prior, 0.0, None) is None


def test_every_tried_root_child_gets_its_forced_visits() -> None:
    config = SearchConfig(forced_playouts=2.0, fpu_reduction_root=0.0)
    tree = _search(config, 200)
    n = tree.root.child_n
    total = float(n.sum())
    forced = forced_visits(tree.root.prior, total, 2.0)
    tried = n > 0
    # a child is forced while below its quota, and the quota grows by less than one per playout
    assert np.all(n[tried] + 1.0 >= forced[tried])
    plain = _search(dataclasses.replace(config, forced_playouts=0.0), 200)
    assert n.min() >= plain.root.child_n.min()
    assert not np.array_equal(n, plain.root.child_n)  # forcing changed where the visits went
    assert np.array_equal(tree.pruned_root_visits() > 0, tree.pruned_root_visits() >= 2)


def test_pruning_by_hand() -> None:
    n = np.array([60.0, 30.0, 6.0, 1.0, 3.0])
    q = np.array([0.1, 0.05, -0.5, 0.0, -0.9])
    prior = np.array([0.4, 0.3, 0.2, 0.05, 0.05])
    parent = 1.0 + n.sum()
    c = exploration_rate(parent, SearchConfig())
    pruned = prune_policy_target(n, n * q, prior, c, parent, 2.0)
    best_puct = 0.1 + c * 0.4 * math.sqrt(parent) / 61.0
    forced = np.sqrt(2.0 * prior * n.sum())
    for slot in range(1, 5):
        lowest = math.floor(c * prior[slot] * math.sqrt(parent) / (best_puct - q[slot]) - 1.0) + 1.0
        kept = max(n[slot] - forced[slot], lowest, 0.0)
        expected = n[slot] if kept >= n[slot] else (0.0 if kept <= 1.0 else kept)
        assert pruned[slot] == expected
        if 0 < expected < n[slot]:  # a reduced child is still below the best by PUCT
            assert q[slot] + c * prior[slot] * math.sqrt(parent) / (1.0 + expected) < best_puct
    # worked out once: the best untouched; 30 -> 28 (PUCT stops it), 6 -> 3 (PUCT stops it); the single
    # visit kept (PUCT would give it more); 3 visits, all forced, of a -0.9 move: pruned to 0
    np.testing.assert_array_equal(pruned, [60.0, 28.0, 3.0, 1.0, 0.0])


def test_without_forced_playouts_the_target_is_the_plain_visits() -> None:
    tree = _search(SearchConfig(), 60)
    np.testing.assert_array_equal(tree.pruned_root_visits(), tree.root.child_n)


def test_self_play_prunes_the_recorded_policy_and_keeps_the_best_move() -> None:
    from engine.games import get_game
    from engine.inference import UniformEvaluator
    from trainer.config import SelfPlaySettings
    from trainer.selfplay.player import SelfPlayer, search_configs

    game = get_game("go", board_size=5)
    settings = SelfPlaySettings(
        games_in_parallel=2,
        leaves_per_tree=2,
        simulations=24,
        sample_plies=0,
        resign_threshold=None,
        forced_playouts=2.0,
    )
    full, fast = search_configs(game, settings)
    assert full.forced_playouts == 2.0 and fast.forced_playouts == 0.0
    gumbel, _ = search_configs(game, dataclasses.replace(settings, root_search="gumbel"))
    assert gumbel.forced_playouts == 0.0
    games = SelfPlayer(game, settings, UniformEvaluator(game.info), seed=0).play_games(2)
    sizes = [len(p.pi_index) for g in games for p in g.data.positions]
    assert sizes and min(sizes) >= 1
    with pytest.raises(ValueError, match="forced_playouts"):
        SelfPlaySettings(forced_playouts=-1.0)
