"""engine.search.lcb and LCB root selection: Student's t quantiles against their closed forms, the bound
by hand, the squares the backups keep, and the root move chosen by its bound above the visit floor
(proven wins first; the most visited move with the option off; ``ranked_root_slots`` agreeing)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from engine.games import get_game
from engine.options import GAME_DEFAULT, EngineOptions
from engine.search.compiled_go import CompiledGoTree
from engine.search.compiled_tree import LOSS, ROOT
from engine.search.config import SearchConfig
from engine.search.lcb import TABLE_SIZE, lower_bound, quantile_table, t_quantile, t_quantile_exact
from engine.search.many_trees import ManyTreesBatch

from .evaluators import stone_balance


@pytest.mark.parametrize("alpha", [1e-5, 1e-3, 0.05])
def test_quantiles_of_one_and_two_degrees_are_their_closed_forms(alpha: float) -> None:
    assert t_quantile_exact(1, alpha) == pytest.approx(1.0 / math.tan(math.pi * alpha), rel=1e-9)
    assert t_quantile_exact(2, alpha) == pytest.approx(
        (1 - 2 * alpha) / math.sqrt(2 * alpha * (1 - alpha)), rel=1e-9
    )


def test_known_quantiles_and_the_expansion_above_the_table() -> None:
    assert t_quantile_exact(10, 0.05) == pytest.approx(1.812461, abs=1e-6)  # the t table's 95% row
    assert t_quantile_exact(30, 0.025) == pytest.approx(2.042272, abs=1e-6)
    table = quantile_table(1e-5)
    assert table[0] == pytest.approx(4.264891, abs=1e-6)  # the normal quantile
    values = [t_quantile(table, float(df)) for df in range(1, 400)]
    assert all(a > b for a, b in itertools.pairwise(values))  # falls with df, across the seam
    for df in (TABLE_SIZE, 100, 300):
        assert t_quantile(table, float(df)) == pytest.approx(t_quantile_exact(df, 1e-5), rel=2e-5)


def test_the_bound_by_hand() -> None:
    table = quantile_table(1e-5)
    # values 1, 1, -1, 1: mean 0.5, sample variance 1, standard error 0.5
    assert lower_bound(4.0, 0.5, 4.0, table) == pytest.approx(0.5 - t_quantile_exact(3, 1e-5) * 0.5)
    assert lower_bound(9.0, 0.25, 9 * 0.0625, table) == pytest.approx(0.25)  # no variance


def _searched(config: SearchConfig, playouts: int = 200) -> CompiledGoTree:
    state = get_game("go", board_size=9).new_state()
    tree = CompiledGoTree(state, config)
    evaluator = stone_balance(9)
    while tree.playouts < playouts:
        ManyTreesBatch([(tree, tree.select_batch(8))], evaluator).backup()
    return tree


def test_the_backups_keep_each_nodes_squares() -> None:
    tree = _searched(SearchConfig())
    t = tree._arrays
    used = int(t.counts[0])
    n, w, sq = t.visits[:used], t.value_sum[:used], t.value_squares[:used]
    assert np.all(
        sq >= w * w / np.maximum(n, 1) - 1e-9
    )  # Cauchy-Schwarz: the mean square >= the squared mean
    assert np.all(sq <= n + 1e-9)  # values within [-1, 1]
    assert sq[ROOT] > 0


def _set_root_children(tree: CompiledGoTree, stats: dict[int, tuple[float, float, float]]) -> None:
    """Root slot -> (visits, mean value for the root player, mean square); other slots unvisited."""
    t = tree._arrays
    first = int(t.first_edge[ROOT])
    for s in range(int(t.num_edges[ROOT])):
        e = first + s
        n, mean, square = stats.get(s, (0.0, 0.0, 0.0))
        t.child_n[e], t.child_w[e] = n, n * mean
        c = int(t.child[e])
        if c >= 0:
            t.visits[c], t.value_sum[c], t.value_squares[c] = n, -n * mean, n * square
            t.proven[c] = 0
        elif n > 0:
            raise AssertionError(f"slot {s} has no child")


@pytest.mark.parametrize("ratio", [0.0, 0.1])
def test_the_move_with_the_best_bound_above_the_floor_is_played(ratio: float) -> None:
    tree = _searched(SearchConfig(lcb_ratio=ratio), 400)
    t = tree._arrays
    first = int(t.first_edge[ROOT])
    made = [s for s in range(int(t.num_edges[ROOT])) if t.child[first + s] >= 0][:4]
    noisy, steady, rare, _ = made
    _set_root_children(
        tree,
        {
            noisy: (100.0, 0.30, 1.0),  # values +-1: variance about 0.9
            steady: (50.0, 0.40, 0.16),  # every value 0.4
            rare: (9.0, 0.90, 0.81),  # below the floor of 10% of 100
        },
    )
    expected = steady if ratio > 0 else noisy
    assert tree.best_root_slot() == expected
    assert tree.ranked_root_slots()[0] == expected
    if ratio > 0:
        assert tree.ranked_root_slots()[:3] == [steady, noisy, rare]  # the floor's moves, then by visits
        t.proven[t.child[first + rare]] = LOSS  # the rare move proven won (a loss for its side to move)
        assert tree.best_root_slot() == rare and tree.ranked_root_slots()[0] == rare


def test_the_engine_plays_lcb_where_the_game_says_and_self_play_never() -> None:
    """``EngineOptions``' LCB share is the game's until an option sets it (chess 0.10 from its SPRT,
    shogi and Go off); a search config made elsewhere (self-play, evaluation) plays the most visited."""
    options = EngineOptions()
    assert options.search.lcb_ratio == GAME_DEFAULT
    assert options.search_config(get_game("chess")).lcb_ratio == pytest.approx(0.10)
    assert options.search_config(get_game("shogi")).lcb_ratio == 0.0
    assert options.search_config(get_game("go9")).lcb_ratio == 0.0
    assert options.search_config().lcb_ratio == 0.0  # no game: off
    limited = EngineOptions(limit_strength=True)  # UCI_Elo's tables were measured without it
    assert limited.search_config(get_game("chess")).lcb_ratio == 0.0
    chosen = EngineOptions(search=SearchConfig(lcb_ratio=0.0))  # LCBVisitShare 0 set by a user
    assert chosen.search_config(get_game("chess")).lcb_ratio == 0.0
    assert SearchConfig().lcb_ratio == 0.0
