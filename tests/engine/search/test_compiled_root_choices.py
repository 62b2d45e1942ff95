"""The compiled trees search with a Gumbel root and with forced playouts as engine.search.tree.Tree does.

The root choices of a compiled tree are planned in Python (engine/search/root_plan.py) and handed to its
compiled walk; here both trees are driven in lockstep on Go 9x9, chess and shogi, by the same
deterministic evaluator and the same seeds, over several moves with tree reuse: every batch must have
the same leaves, and every search the same root visits, values and priors, the same Gumbel sample
(considered moves), the same chosen move and the same policy target (Gumbel's improved policy;
forced playouts' pruned visits).

Batches of one leaf are exact by construction.  Larger batches are exact while every walk of a batch
ends on a leaf for the network; a walk that collides or ends on an exact value (a terminal or proven
node, a mate in one) leaves the root otherwise than the plan assumed, and the later root choices of that
batch may then differ from ``Tree``'s (engine/search/root_plan.py).  A Gumbel root sends the walks of a
batch to different children, so its batches of 4 below stay exact; forced playouts leave most choices
to PUCT, whose walks of one batch often collide below the same child (batches of 4 differ from
``Tree`` within a few batches), so they are compared at batches of 1 and checked for what they promise
at batches of 4.
"""

from __future__ import annotations

import dataclasses
import random
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator
from engine.games import get_game
from engine.games.base import GameState
from engine.search.config import SearchConfig
from engine.search.forced import forced_visits
from engine.search.gumbel import GumbelConfig
from engine.search.tree_protocol import SelfPlayTree
from tests.engine.search.lockstep import lockstep_step
from tests.engine.search.one_batch import new_one_batch_tree, root_priors
from tests.engine.search.reference_tree import Tree


class HashEvaluator(Evaluator):
    """Priors: a weight hashed from each policy index and the planes, normalised (float32, summed in
    index order); value: the planes' CRC-32 mapped into (-0.9, 0.9), float32-exact Python floats (so
    virtual loss rounds alike in any precision).  No policy size needed: any game."""

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            weight = 0.05 + ((idx * 2654435761) % 1009) / 1009.0
            factor = 0.5 + ((h ^ (idx * 40503)) % 997) / 997.0
            prior = (weight * factor).astype(np.float32)
            prior /= prior[np.argsort(idx)].sum()
            value = float(np.float32((h % 2001 - 1000) / 1000.0 * 0.9))
            out.append(Evaluation(prior.astype(np.float32), value))
        return out


def _position(label: str, plies: int, seed: int) -> GameState[Any]:
    """``plies`` random moves from the start of ``label`` (no passes in Go; the game not ended)."""
    state = get_game(label).new_state()
    rng = random.Random(seed)
    for _ in range(plies):
        moves = [m for m in state.legal_moves() if not (label == "go9" and m == 81)]
        state.push(rng.choice(moves))
        if state.outcome() is not None:
            state.pop()
            break
    return state


def _step(tree: Tree, compiled: SelfPlayTree[Any], evaluator: Evaluator, batch: int) -> None:
    """One batch on both trees (:func:`lockstep_step`): the same leaves, the same backup."""
    lockstep_step(tree, compiled, evaluator, batch, count_nodes=False)


def _assert_same_root(tree: Tree, compiled: SelfPlayTree[Any]) -> None:
    """Equal root statistics, Gumbel decisions and policy targets; returns nothing."""
    np.testing.assert_array_equal(compiled.root_child_visits(), tree.root.child_n)
    np.testing.assert_array_equal(compiled.root_values(), tree.root.child_w)
    np.testing.assert_array_equal(root_priors(compiled), tree.root.prior)
    assert compiled.root_q == tree.root_q
    assert compiled.playouts == tree.playouts
    np.testing.assert_array_equal(compiled.pruned_root_visits(), tree.pruned_root_visits())
    assert compiled.best_move() == tree.best_move()
    gumbel, expected = compiled.gumbel_root, tree.gumbel_root
    assert (gumbel is None) == (expected is None)
    if gumbel is not None and expected is not None:
        np.testing.assert_array_equal(gumbel.considered, expected.considered)
        np.testing.assert_array_equal(gumbel.gumbel, expected.gumbel)
        n, w, q = compiled.root_child_visits(), compiled.root_values(), compiled.root_q
        root = tree.root
        assert gumbel.best(n, w, q) == expected.best(root.child_n, root.child_w, root.q)
        np.testing.assert_array_equal(
            gumbel.policy_target(n, w, q), expected.policy_target(root.child_n, root.child_w, root.q)
        )


def _met(tree: Tree) -> bool:
    """Whether a Gumbel search with reuse has met its schedule (self-play's end of such a search)."""
    gumbel = tree.gumbel_root
    return gumbel is not None and gumbel.config.reuse and gumbel.remaining(tree.root.child_n) == 0


def _batch(tree: Tree, batch: int) -> int:
    """Self-play's batch: with reuse no more walks than the Gumbel schedule still asks for."""
    gumbel = tree.gumbel_root
    if gumbel is None or not gumbel.config.reuse:
        return batch
    return max(1, min(batch, gumbel.remaining(tree.root.child_n)))


def _play(
    label: str,
    config: SearchConfig,
    batch: int,
    moves: int,
    playouts: int,
    plies: int = 0,
    searched: list[int] | None = None,
) -> Tree:
    """``moves`` searches of ``playouts`` playouts each on both trees in lockstep, each followed by the
    search's move on both (tree reuse); returns the Python tree.  ``searched`` gets each search's
    playouts."""
    state = _position(label, plies, seed=plies)
    tree = Tree(state.copy(), config, rng=np.random.default_rng(5))
    compiled = new_one_batch_tree(state, config, rng=np.random.default_rng(5))
    assert not isinstance(compiled, Tree)  # the game's compiled tree, Gumbel or forced playouts on
    evaluator = HashEvaluator()
    for _ in range(moves):
        tree.reset_stats()
        compiled.reset_stats()
        while tree.playouts < playouts and not tree.search_done(float("inf"), 0) and not _met(tree):
            _step(tree, compiled, evaluator, _batch(tree, batch))
        _assert_same_root(tree, compiled)
        if searched is not None:
            searched.append(tree.playouts)
        gumbel = tree.gumbel_root
        if gumbel is not None:
            root = tree.root
            move = root.moves[gumbel.best(root.child_n, root.child_w, root.q)]
        else:
            move = tree.best_move()
        tree.advance(move)
        compiled.advance(move)
        assert compiled.gumbel_root is None and tree.gumbel_root is None  # a new sample each move
    return tree


GAMES = [("go9", 0), ("go9", 20), ("chess", 6), ("shogi", 0), ("shogi", 30)]
GUMBEL = SearchConfig(gumbel=GumbelConfig(simulations=24, considered=8), seed=1)
GUMBEL_REUSE = SearchConfig(gumbel=GumbelConfig(simulations=24, considered=8, reuse=True), seed=1)
FORCED = SearchConfig(forced_playouts=2.0, dirichlet_alpha=0.3, fpu_reduction_root=0.0, seed=1)


@pytest.mark.parametrize(("label", "plies"), GAMES)
@pytest.mark.parametrize("batch", [1, 4])
def test_gumbel_root_same_search_as_tree(label: str, plies: int, batch: int) -> None:
    tree = _play(label, GUMBEL, batch, moves=3, playouts=24, plies=plies)
    assert tree.root.expanded


@pytest.mark.parametrize(("label", "plies"), GAMES)
@pytest.mark.parametrize("batch", [1, 4])
def test_gumbel_root_with_reuse_same_search_as_tree(label: str, plies: int, batch: int) -> None:
    """Reused visits count towards the schedule: the later searches end before 24 fresh playouts, on
    both trees alike."""
    searched: list[int] = []
    tree = _play(label, GUMBEL_REUSE, batch, moves=4, playouts=24, plies=plies, searched=searched)
    assert tree.root.expanded
    assert min(searched[1:]) < 24  # a search after the first made fewer fresh playouts than its budget


@pytest.mark.parametrize(("label", "plies"), GAMES)
def test_forced_playouts_same_search_as_tree(label: str, plies: int) -> None:
    _play(label, FORCED, 1, moves=3, playouts=60, plies=plies)


def _searched(label: str, config: SearchConfig, batch: int, playouts: int) -> SelfPlayTree[Any]:
    """The compiled tree of ``label``'s start searched with batches of ``batch`` leaves."""
    tree = new_one_batch_tree(get_game(label).new_state(), config)
    evaluator = HashEvaluator()
    while tree.playouts < playouts:
        planes, legal = tree.select_leaves(batch)
        tree.backup(evaluator.evaluate(planes, legal))
    return tree


@pytest.mark.parametrize("label", ["go9", "chess", "shogi"])
def test_forced_playouts_at_larger_batches_force_the_tried_root_children(label: str) -> None:
    """With batches of 4 every tried root child gets its forced visits (short by less than a batch: a
    child first tried in the last batch has had no walk since), and the visits go elsewhere than
    without forcing."""
    tree = _searched(label, FORCED, 4, 300)
    n = tree.root_child_visits()
    tried = n > 0
    forced = forced_visits(root_priors(tree), float(n.sum()), 2.0)
    assert tried.sum() > 1 and np.all(n[tried] + 4.0 >= forced[tried])
    assert np.sum(n[tried] + 1.0 < forced[tried]) <= 4
    plain = _searched(label, dataclasses.replace(FORCED, forced_playouts=0.0), 4, 300)
    assert not np.array_equal(n, plain.root_child_visits())
    pruned = tree.pruned_root_visits()  # forced visits taken back, the most visited child kept
    assert np.all(pruned <= n) and pruned.sum() < n.sum() and pruned[n.argmax()] == n.max()
