"""Proof states of search nodes (the MCTS-solver's), shared by every tree and by what reads their roots.

A node's proof is from the point of view of its player to move; a proven win or loss carries the exact
game value (+1 or -1).  The compiled trees store the same values as int8 (:mod:`engine.search.compiled_tree`).
"""

from __future__ import annotations

import enum


class Proof(enum.IntEnum):
    """Proof state of a node, from the point of view of its player to move (the value of a proven
    win or loss is the exact game value, +1 or -1)."""

    UNPROVEN = 0
    WIN = 1
    LOSS = -1
    DRAW = 2
