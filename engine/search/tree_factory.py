"""Which tree searches a position: :func:`new_tree`, shared by the engine's session and self-play.

The compiled trees (:mod:`engine.search.compiled_go`, :mod:`engine.search.compiled_chess`,
:mod:`engine.search.compiled_shogi`) search Go, chess and shogi with every setting (the Gumbel root and
forced playouts included) when numba is installed; other games and a machine without numba search with
the Python :class:`~engine.search.tree.Tree`.  Both make the same choices (lockstep tests), so the
choice is one of speed only.
"""

from __future__ import annotations

import importlib.util
from typing import Any

import numpy as np

from engine.games.base import GameState
from engine.games.chess import ChessState
from engine.games.go import GoState
from engine.games.shogi import ShogiState
from engine.search.config import SearchConfig
from engine.search.tree import EvalCache, Tree
from engine.search.tree_protocol import SelfPlayTree
from engine.uint8_io import Uint8Quantization

#: The module of each game's compiled tree (its ``warm_up()`` loads the kernels).
COMPILED_TREES: dict[str, str] = {
    "go": "engine.search.compiled_go",
    "chess": "engine.search.compiled_chess",
    "shogi": "engine.search.compiled_shogi",
}


def has_compiled_tree(game: str) -> bool:
    """Whether :func:`new_tree` gives positions of ``game`` (a game name: ``go``, ``chess``, ...) a
    compiled tree: the game has one (:data:`COMPILED_TREES`) and numba is installed (not imported
    here).  The compiled trees search every :class:`SearchConfig`."""
    return game in COMPILED_TREES and importlib.util.find_spec("numba") is not None


#: The games whose compiled tree writes uint8 planes when asked (``new_tree(quantization=...)``).
UINT8_PLANES_GAMES = frozenset({"shogi"})


def new_tree(
    state: GameState[Any],
    config: SearchConfig,
    cache: EvalCache | None = None,
    compiled: bool = True,
    rng: np.random.Generator | None = None,
    quantization: Uint8Quantization | None = None,
) -> SelfPlayTree[Any]:
    """A search tree over a copy of ``state`` (``state`` itself is not changed or kept): the compiled
    tree of its game (:class:`~engine.search.compiled_go.CompiledGoTree`,
    :class:`~engine.search.compiled_chess.CompiledChessTree`,
    :class:`~engine.search.compiled_shogi.CompiledShogiTree`) when ``compiled`` and
    :func:`has_compiled_tree`, else the Python :class:`Tree` with ``cache`` (the compiled trees have no
    network cache).  ``rng`` draws the root noise (default: seeded with ``config.seed``).  ``quantization``:
    the compiled tree of a game in :data:`UINT8_PLANES_GAMES` writes its leaves' planes as uint8 so
    (``engine/uint8_io.py``); the other trees ignore it (float32 planes)."""
    if compiled and has_compiled_tree(state.info.name):
        if isinstance(state, GoState):
            from engine.search import compiled_go

            return compiled_go.CompiledGoTree(state, config, rng)
        if isinstance(state, ChessState):
            from engine.search import compiled_chess

            return compiled_chess.CompiledChessTree(state, config, rng)
        if isinstance(state, ShogiState):
            from engine.search import compiled_shogi

            return compiled_shogi.CompiledShogiTree(state, config, rng, quantization)
    return Tree(state.copy(), config, cache, rng)
