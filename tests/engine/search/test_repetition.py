"""SearchConfig.repetition_penalty: a move into a position the game already had is valued against its
mover (self-play's cure for shuffling into draws by repetition), without proving anything."""

from __future__ import annotations

import numpy as np
import pytest

from engine.games import get_game
from engine.inference import UniformEvaluator
from engine.search.config import SearchConfig
from engine.search.proof import Proof
from tests.engine.search.evaluators import search_until
from tests.engine.search.reference_tree import Tree


def _after(moves: list[str]):
    state = get_game("chess").new_state()
    for text in moves:
        state.push(state.parse_move(text))
    return state


def _search(config: SearchConfig, playouts: int) -> Tree:
    state = _after(["g1f3", "g8f6", "f3g1"])  # black to move; g8 takes it back to the start
    return search_until(Tree(state, config), UniformEvaluator(state.info), playouts, batch=4)


def test_chess_counts_repetitions() -> None:
    assert _after(["g1f3"]).repetition_count() == 0
    assert _after(["g1f3", "g8f6", "f3g1", "f6g8"]).repetition_count() == 1
    assert _after(["g1f3", "g8f6", "f3g1", "f6g8"] * 2).repetition_count() == 2
    assert get_game("go9").new_state().repetition_count() == 0  # superko: never


def test_the_repeating_move_is_valued_against_its_mover_and_proves_nothing() -> None:
    tree = _search(SearchConfig(repetition_penalty=0.3, root_mate_nodes=0), 400)
    moves = tree.root.moves
    slot = moves.index(tree.state.parse_move("f6g8"))
    visits, q, proof, _ = tree.slot_stats(slot)
    child = tree.root.children[slot]
    assert child is not None and child.repeated and child.proven == Proof.UNPROVEN
    assert q == pytest.approx(-0.3) and visits >= 1
    others = np.delete(tree.root.child_n, slot)
    assert visits < others.mean()  # the search looks elsewhere (every other move is worth 0 here)
    assert proof == Proof.UNPROVEN and tree.root.proven == Proof.UNPROVEN
    # its prior went to the other moves: after its first visit PUCT has no reason to come back
    assert tree.root.prior[slot] == 0.0 and tree.root.prior.sum() == pytest.approx(1.0)
    assert tree.root.visited_prior == pytest.approx(float(tree.root.prior[tree.root.child_n > 0].sum()))


def test_off_by_default() -> None:
    tree = _search(SearchConfig(root_mate_nodes=0), 200)
    slot = tree.root.moves.index(tree.state.parse_move("f6g8"))
    child = tree.root.children[slot]
    assert child is None or not child.repeated
    assert tree.slot_stats(slot)[1] == 0.0
