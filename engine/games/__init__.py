"""Rules adapters: one module per ruleset behind the :class:`~engine.games.base.Game` interface.

``get_game("chess")``, ``get_game("shogi")``, ``get_game("go", board_size=9)``.  This package knows
nothing of search or networks.
"""

from __future__ import annotations

from engine.games.base import (
    HISTORY_STEPS,
    Game,
    GameInfo,
    GameState,
    IllegalMoveError,
    InvalidPositionError,
    Outcome,
    PlayProfile,
)
from engine.games.registry import GAME_NAMES, get_game, parse_game_label

__all__ = [
    "GAME_NAMES",
    "HISTORY_STEPS",
    "Game",
    "GameInfo",
    "GameState",
    "IllegalMoveError",
    "InvalidPositionError",
    "Outcome",
    "PlayProfile",
    "get_game",
    "parse_game_label",
]
