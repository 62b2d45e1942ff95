"""engine.search.tree_factory: every game's compiled tree, with every setting; the state passed in is
copied, not kept; a game without a compiled tree is refused."""

from __future__ import annotations

import pytest

from engine.games import get_game
from engine.search.config import SearchConfig
from engine.search.gumbel import GumbelConfig
from engine.search.tree_factory import COMPILED_TREES, new_tree
from tests.engine.search.toy_game import ToyState


@pytest.mark.parametrize(
    ("label", "tree_name"),
    [("chess", "CompiledChessTree"), ("go9", "CompiledGoTree"), ("shogi", "CompiledShogiTree")],
)
def test_go_chess_and_shogi_get_their_compiled_tree(label: str, tree_name: str) -> None:
    state = get_game(label).new_state()
    config = SearchConfig()
    assert state.info.name in COMPILED_TREES
    tree = new_tree(state, config)
    assert type(tree).__name__ == tree_name
    tree.advance(state.legal_moves()[0])
    assert state.ply == 0  # the caller's state is not the tree's


@pytest.mark.parametrize("label", ["chess", "go9", "shogi"])
def test_gumbel_and_forced_playouts_get_the_compiled_tree(label: str) -> None:
    state = get_game(label).new_state()
    for config in (SearchConfig(gumbel=GumbelConfig()), SearchConfig(forced_playouts=2.0)):
        assert type(new_tree(state, config)).__name__.startswith("Compiled")


def test_a_game_without_a_compiled_tree_is_refused() -> None:
    with pytest.raises(ValueError, match="no compiled search tree"):
        new_tree(ToyState(2), SearchConfig())
