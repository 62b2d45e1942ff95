"""The compiled Go tree (engine/search/compiled_go.py) searches exactly like engine.search.tree.Tree.

Both trees are driven in lockstep by the same deterministic evaluator (priors and value hashed from the
planes) on the same GoState: at every batch the leaves must have identical planes and legal indices in
the same order, and at the end the root's visit counts, value sums and proof must be bit-for-bit equal.
Positions: empty 5x5 and 9x9 boards, random middle-game positions, positions a few moves before the move
limit and after a pass (terminal nodes, the solver's proofs), a finished game (terminal root); batches
of 1, 4 and 8 leaves (virtual loss, collisions).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

from engine.evaluator import Evaluation, Evaluator, LegalRows
from engine.games.go import GoRules, GoState
from engine.inference import UniformEvaluator
from engine.search.config import SearchConfig
from tests.engine.search.one_batch import GoTree
from tests.engine.search.reference_tree import Node, Tree


class PlaneHashEvaluator(Evaluator):
    """Priors: a fixed random weight per policy index times a factor hashed from the planes and the
    index, normalised over the legal moves; value: the planes' CRC-32 mapped into (-0.9, 0.9).  Values
    are float32-exact Python floats, so adding a virtual loss to them rounds alike in any precision."""

    def __init__(self, policy_size: int, seed: int = 3) -> None:
        self._weights = np.random.default_rng(seed).uniform(0.05, 1.0, policy_size)

    def evaluate(self, planes: np.ndarray, legal: Sequence[np.ndarray]) -> list[Evaluation]:
        out = []
        for p, idx in zip(planes, legal, strict=True):
            h = zlib.crc32(np.ascontiguousarray(p).tobytes())
            factor = 0.5 + ((h ^ (idx * 2654435761)) % 997) / 997.0
            prior = (self._weights[idx] * factor).astype(np.float32)
            prior /= prior.sum()
            value = float(np.float32((h % 2001 - 1000) / 1000.0 * 0.9))
            out.append(Evaluation(prior.astype(np.float32), value))
        return out


def _random_position(rules: GoRules, plies: int, seed: int, passes: bool = False) -> GoState:
    """``plies`` random moves from the empty board (passes only when ``passes``; the game not ended)."""
    rng = random.Random(seed)
    state = GoState(rules)
    for _ in range(plies):
        moves = [m for m in state.legal_moves() if passes or m != rules.board_size**2]
        state.push(rng.choice(moves))
        if state.outcome() is not None:
            state.pop()
            break
    return state


def _lockstep(state: GoState, config: SearchConfig, evaluator: Evaluator, batch: int, rounds: int) -> Tree:
    """Search ``state`` with both trees, ``rounds`` batches of up to ``batch`` leaves; assert that every
    batch has the same leaves and the roots end equal.  Returns the Python tree."""
    tree = Tree(state.copy(), config)
    compiled = GoTree(state, config)
    for _ in range(rounds):
        leaves = tree.select_leaves(batch)
        planes, legal = compiled.select_leaves(batch)
        assert len(legal) == len(leaves)
        if leaves:
            expected = np.stack([leaf.planes for leaf in leaves])
            np.testing.assert_array_equal(planes, expected)
            for got, leaf in zip(legal, leaves, strict=True):
                np.testing.assert_array_equal(got, leaf.legal)
        evaluations = evaluator.evaluate(planes, legal)
        tree.backup(leaves, evaluations)
        compiled.backup(evaluations)
        assert compiled.node_count == tree.node_count
    moves, visits = compiled.root_visits()
    expected_moves, expected_visits = tree.root_visits()
    assert moves.tolist() == list(expected_moves)
    np.testing.assert_array_equal(visits, expected_visits)
    np.testing.assert_array_equal(compiled.root_values(), tree.root.child_w)
    assert compiled.root_proof() == (int(tree.root.proven), tree.root.proven_plies)
    assert compiled.ranked_root_slots() == tree.ranked_root_slots()  # proofs near the move limit too
    np.testing.assert_array_equal(compiled.root_slot_proofs(), tree.root_slot_proofs())
    return tree


CASES = [
    # (board size, move limit, random plies, passes allowed, seed)
    (5, None, 0, False, 0),
    (9, None, 0, False, 1),
    (9, None, 30, False, 2),
    (5, None, 12, False, 3),
    (5, 18, 12, False, 4),  # 6 moves before the limit
    (5, 14, 11, False, 5),  # 3 moves before the limit
    (9, 50, 46, False, 6),
    (5, None, 10, True, 9),  # random passes: one may lead straight to a terminal two-pass child
]


@pytest.mark.parametrize("batch", [1, 4, 8])
@pytest.mark.parametrize(("size", "limit", "plies", "passes", "seed"), CASES)
def test_same_search_as_tree(
    size: int, limit: int | None, plies: int, passes: bool, seed: int, batch: int
) -> None:
    rules = GoRules(board_size=size, max_moves=limit)
    state = _random_position(rules, plies, seed, passes)
    evaluator = PlaneHashEvaluator(size * size + 1, seed)
    rounds = 400 // batch
    _lockstep(state, SearchConfig(), evaluator, batch, rounds)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("pass_first", [False, True])
def test_proofs_near_the_move_limit(seed: int, pass_first: bool) -> None:
    """Four moves before the move limit (after a pass, where passing again ends the game, when
    ``pass_first``) the search reaches terminal nodes, proves root moves and stops at proven nodes."""
    rules = GoRules(board_size=5, max_moves=16)
    state = _random_position(rules, 11 if pass_first else 12, 100 + seed)
    if pass_first:
        state.push(25)
    tree = _lockstep(state, SearchConfig(), PlaneHashEvaluator(26, seed), 1 + 3 * (seed % 2), 150)
    assert _proven_nodes(tree.root) > 0


def _proven_nodes(node: Node | None) -> int:
    """The proven nodes of the subtree of ``node``."""
    if node is None:
        return 0
    return int(node.proven != 0) + sum(_proven_nodes(child) for child in node.children)


def test_small_fpu_collisions_and_budget() -> None:
    """Other settings: no root FPU reduction, virtual loss 3, few collisions, a node budget that ends
    the search."""
    config = SearchConfig(
        fpu_reduction_root=0.0, fpu_reduction=0.5, virtual_loss=3, max_collisions=1, node_budget=300
    )
    state = _random_position(GoRules(board_size=9), 20, 7)
    tree = _lockstep(state, config, PlaneHashEvaluator(82, 7), 8, 80)
    assert tree.full


def test_uniform_evaluator_and_terminal_root() -> None:
    state = _random_position(GoRules(board_size=9), 10, 8)
    _lockstep(state, SearchConfig(), UniformEvaluator(state.info), 8, 50)
    over = GoState(GoRules(board_size=5))
    over.push(25)
    over.push(25)
    compiled = GoTree(over, SearchConfig())
    planes, legal = compiled.select_leaves(4)
    assert planes.shape == (0, 17, 5, 5) and legal == []
    assert compiled.root_visits()[0].shape == (0,)


def test_rejects_what_it_does_not_do() -> None:
    state = GoState(GoRules(board_size=5))
    compiled = GoTree(state, SearchConfig())
    with pytest.raises(RuntimeError):
        compiled.backup([])
    compiled.select_leaves(1)
    with pytest.raises(RuntimeError):
        compiled.select_leaves(1)
    with pytest.raises(ValueError):
        compiled.backup([Evaluation(np.ones(3, np.float32), 0.0)])


def _rows(evaluations: Sequence[Evaluation], legal: LegalRows) -> tuple[np.ndarray, np.ndarray]:
    """The evaluations as arrays: priors float32 ``[m, M]`` aligned with the legal points (zero beyond
    them), values ``[m]``."""
    priors = np.zeros(legal.indices.shape, np.float32)
    for row, ev in zip(priors, evaluations, strict=True):
        row[: len(ev.priors)] = ev.priors
    return priors, np.array([ev.value for ev in evaluations], np.float64)


@pytest.mark.parametrize(
    ("size", "limit", "plies", "passes", "seed", "batch"),
    [
        (9, None, 20, False, 11, 8),
        (5, 16, 11, True, 12, 4),  # near the move limit: terminal nodes and proofs
    ],
)
def test_array_path_same_as_evaluation_path(
    size: int, limit: int | None, plies: int, passes: bool, seed: int, batch: int
) -> None:
    """``select_leaves_arrays`` / ``backup_arrays`` with prior rows make the same search as
    ``select_leaves`` / ``backup`` with the evaluations (which ``test_same_search_as_tree`` ties to
    ``Tree``): same leaves every batch, same root visits, values and proof after each backup."""
    rules = GoRules(board_size=size, max_moves=limit)
    state = _random_position(rules, plies, seed, passes)
    evaluator = PlaneHashEvaluator(size * size + 1, seed)
    by_evaluations = GoTree(state, SearchConfig())
    by_arrays = GoTree(state, SearchConfig())
    for _ in range(300 // batch):
        planes, legal = by_evaluations.select_leaves(batch)
        array_planes, rows = by_arrays.select_leaves_arrays(batch)
        np.testing.assert_array_equal(array_planes, planes)
        assert [x.tolist() for x in rows.lists()] == [x.tolist() for x in legal]
        assert not rows.indices.flags.writeable
        evaluations = evaluator.evaluate(planes, legal)
        by_evaluations.backup(evaluations)
        by_arrays.backup_arrays(*_rows(evaluations, rows))
        assert by_arrays.node_count == by_evaluations.node_count
        for got, expected in zip(by_arrays.root_visits(), by_evaluations.root_visits(), strict=True):
            np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(by_arrays.root_values(), by_evaluations.root_values())
        assert by_arrays.root_proof() == by_evaluations.root_proof()
    assert by_arrays.node_count > 100


def test_array_path_checks() -> None:
    compiled = GoTree(GoState(GoRules(board_size=5)), SearchConfig())
    with pytest.raises(RuntimeError):
        compiled.backup_arrays(np.zeros((0, 26)), np.zeros(0))
    planes, legal = compiled.select_leaves_arrays(1)
    assert planes.shape == (1, 17, 5, 5) and legal.indices.shape == (1, 26)
    assert legal.lists()[0].tolist() == list(range(26))
    with pytest.raises(ValueError):
        compiled.backup_arrays(np.ones((1, 25)), np.zeros(1))
    with pytest.raises(ValueError):
        compiled.backup_arrays(np.ones((1, 26)), np.zeros(2))
    compiled.backup_arrays(np.full((1, 26), 1 / 26), [0.5])
    moves, visits = compiled.root_visits()
    assert moves.tolist() == list(range(26)) and visits.sum() == 0
    assert compiled.root_values().sum() == 0 and compiled.node_count == 1


def test_an_empty_selection_backed_up_frees_its_buffers_once() -> None:
    """Backing up a selection of no leaves must not hand its buffers back twice (two later batches
    would then share them and overwrite each other's leaves)."""
    tree = GoTree(GoState(GoRules(board_size=5)), SearchConfig(batch_size=4))
    planes, _ = tree.select_leaves_arrays(0)
    assert planes.shape[0] == 0
    tree.backup_arrays(np.zeros((0, 26)), np.zeros(0))
    first = tree.select_batch(1)
    second = tree.select_batch(1)
    assert first.buffers.leaves is not second.buffers.leaves


def test_root_policy_indices_are_the_root_points() -> None:
    state = _random_position(GoRules(board_size=9), 20, 4)
    evaluator = PlaneHashEvaluator(82)
    tree = _lockstep(state, SearchConfig(), evaluator, 4, 10)
    compiled = GoTree(state, SearchConfig())
    planes, legal = compiled.select_leaves(1)
    compiled.backup(evaluator.evaluate(planes, legal))
    moves, _ = compiled.root_visits()
    assert compiled.root_policy_indices().tolist() == [state.move_to_index(m) for m in moves]
    assert tree.root_policy_indices().tolist() == compiled.root_policy_indices().tolist()
