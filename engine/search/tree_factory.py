"""Which tree searches a position: :func:`new_tree`, shared by the engine's session, self-play and
evaluation matches.

Every game searches with its compiled tree (:mod:`engine.search.compiled_go`,
:mod:`engine.search.compiled_chess`, :mod:`engine.search.compiled_shogi`), with every setting (the
Gumbel root and forced playouts included).  numba is a dependency of the package, so there is no second
engine for a machine without it.  The Python reference tree that the compiled trees are checked against
in lockstep lives with the tests (``tests/engine/search/reference_tree.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from engine.games.base import GameState
from engine.games.chess import ChessState
from engine.games.go import GoState
from engine.games.shogi import ShogiState
from engine.search.config import SearchConfig
from engine.search.tree_protocol import SelfPlayTree
from engine.uint8_io import Uint8Quantization

#: The module of each game's compiled tree (its ``warm_up()`` loads the kernels).
COMPILED_TREES: dict[str, str] = {
    "go": "engine.search.compiled_go",
    "chess": "engine.search.compiled_chess",
    "shogi": "engine.search.compiled_shogi",
}


def new_tree(
    state: GameState[Any],
    config: SearchConfig,
    rng: np.random.Generator | None = None,
    quantization: Uint8Quantization | None = None,
) -> SelfPlayTree[Any]:
    """The compiled search tree of ``state``'s game over a copy of ``state`` (``state`` itself is not
    changed or kept): :class:`~engine.search.compiled_go.CompiledGoTree`,
    :class:`~engine.search.compiled_chess.CompiledChessTree` or
    :class:`~engine.search.compiled_shogi.CompiledShogiTree`.  ``rng`` draws the root noise (default:
    seeded with ``config.seed``).  ``quantization``: the tree of a game whose ``profile.uint8_planes`` is set
    writes its leaves' planes as uint8 so (``engine/uint8_io.py``); the others write float32 planes.

    Raises:
        ValueError: the game has no compiled tree.
    """
    if isinstance(state, GoState):
        from engine.search import compiled_go

        return compiled_go.CompiledGoTree(state, config, rng)
    if isinstance(state, ChessState):
        from engine.search import compiled_chess

        return compiled_chess.CompiledChessTree(state, config, rng)
    if isinstance(state, ShogiState):
        from engine.search import compiled_shogi

        return compiled_shogi.CompiledShogiTree(state, config, rng, quantization)
    raise ValueError(f"no compiled search tree for {state.info.name}")
