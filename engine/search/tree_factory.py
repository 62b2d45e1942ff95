"""Which tree searches a position: :func:`new_tree`, shared by the engine's session, self-play and
evaluation matches.

Every game searches with its compiled tree (:mod:`engine.search.compiled_go`,
:mod:`engine.search.compiled_chess`, :mod:`engine.search.compiled_shogi`), with every setting (the
Gumbel root and forced playouts included).  numba is a dependency of the package, so there is no second
engine for a machine without it.  The Python reference tree that the compiled trees are checked against
in lockstep lives with the tests (``tests/engine/search/reference_tree.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, cast

import numpy as np

from engine.games.base import GameState
from engine.games.registry import GAME_NAMES
from engine.search.config import SearchConfig
from engine.search.tree_protocol import SelfPlayTree
from engine.uint8_io import Uint8Quantization

#: The module of each game's compiled tree, ``engine.search.compiled_<game>``: its ``TREE`` is the tree
#: class, its ``warm_up()`` loads the kernels.
COMPILED_TREES: dict[str, str] = {name: f"engine.search.compiled_{name}" for name in GAME_NAMES}


def new_tree(
    state: GameState[Any],
    config: SearchConfig,
    rng: np.random.Generator | None = None,
    quantization: Uint8Quantization | None = None,
) -> SelfPlayTree[Any]:
    """The compiled search tree of ``state``'s game over a copy of ``state`` (``state`` itself is not
    changed or kept): the ``TREE`` of its module in :data:`COMPILED_TREES`
    (:class:`~engine.search.compiled_go.CompiledGoTree`,
    :class:`~engine.search.compiled_chess.CompiledChessTree`,
    :class:`~engine.search.compiled_shogi.CompiledShogiTree`).  ``rng`` draws the root noise (default:
    seeded with ``config.seed``).  ``quantization``: a tree that can (its module's
    ``WRITES_UINT8_PLANES``; the game's ``profile.uint8_planes``) writes its leaves' planes as uint8 so
    (``engine/uint8_io.py``); the others write float32 planes.

    Raises:
        ValueError: the game has no compiled tree.
    """
    name = COMPILED_TREES.get(state.info.name)
    if name is None:
        raise ValueError(f"no compiled search tree for {state.info.name}")
    module = importlib.import_module(name)
    make = cast(Callable[..., SelfPlayTree[Any]], module.TREE)
    if quantization is not None and getattr(module, "WRITES_UINT8_PLANES", False):
        return make(state, config, rng, quantization)
    return make(state, config, rng)
