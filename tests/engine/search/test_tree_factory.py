"""engine.search.tree_factory: the compiled tree where its game has one (with every setting), the Python
Tree everywhere else; the state passed in is copied, not kept."""

from __future__ import annotations

import pytest

from engine.games import get_game
from engine.search.config import SearchConfig
from engine.search.gumbel import GumbelConfig
from engine.search.tree import Tree
from engine.search.tree_factory import has_compiled_tree, new_tree


@pytest.mark.parametrize(
    ("label", "tree_name"),
    [("chess", "CompiledChessTree"), ("go9", "CompiledGoTree"), ("shogi", "CompiledShogiTree")],
)
def test_go_chess_and_shogi_get_their_compiled_tree(label: str, tree_name: str) -> None:
    pytest.importorskip("numba")
    state = get_game(label).new_state()
    config = SearchConfig()
    assert has_compiled_tree(state.info.name)
    tree = new_tree(state, config)
    assert type(tree).__name__ == tree_name
    tree.advance(state.legal_moves()[0])
    assert state.ply == 0  # the caller's state is not the tree's


@pytest.mark.parametrize("label", ["chess", "go9", "shogi"])
def test_gumbel_and_forced_playouts_get_the_compiled_tree_and_opting_out_the_python_tree(label: str) -> None:
    pytest.importorskip("numba")
    state = get_game(label).new_state()
    for config in (SearchConfig(gumbel=GumbelConfig()), SearchConfig(forced_playouts=2.0)):
        assert not isinstance(new_tree(state, config), Tree)
        assert isinstance(new_tree(state, config, compiled=False), Tree)


def test_games_without_a_compiled_tree() -> None:
    assert not has_compiled_tree("toy")
