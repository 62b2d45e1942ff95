"""Registry: a ruleset by name.  Imports each adapter lazily so that using one game never loads
another game's library."""

from __future__ import annotations

import re
from typing import Any

from engine.games.base import Game

GAME_NAMES: tuple[str, ...] = ("chess", "shogi", "go")

#: The module of each game's rules compiled with numba (imported on demand: numba is loaded only by
#: what uses the compiled rules).  Each has ``perft_divide_state(state, depth)``.
RULES_KERNELS: dict[str, str] = {
    "chess": "engine.games.chess_kernel",
    "shogi": "engine.games.shogi_rules_kernel",
    "go": "engine.games.go_kernel",
}


def get_game(name: str, board_size: int | None = None, **options: Any) -> Game:
    """Return the ruleset called ``name``.

    Args:
        name: ``chess``, ``shogi`` or ``go`` (case-insensitive); ``go9``/``go19`` style labels work too.
        board_size: Go only: 2..19 (default 19).  Chess and shogi accept ``None`` or their own size.
        options: ruleset settings passed to the game's frozen settings dataclass (``max_plies``,
            ``komi``, ``chess960`` ...).
    """
    label_name, label_size = parse_game_label(name)
    if board_size is None:
        board_size = label_size
    if label_name == "chess":
        from engine.games.chess import ChessGame, ChessRules

        if board_size not in (None, 8):
            raise ValueError("chess is played on 8x8")
        return ChessGame(ChessRules(**options))
    if label_name == "shogi":
        from engine.games.shogi import ShogiGame, ShogiRules

        if board_size not in (None, 9):
            raise ValueError("shogi is played on 9x9")
        return ShogiGame(ShogiRules(**options))
    from engine.games.go import GoGame, GoRules

    return GoGame(GoRules(board_size=19 if board_size is None else board_size, **options))


def parse_game_label(label: str) -> tuple[str, int | None]:
    """Split ``go9`` into ``("go", 9)``, ``chess`` into ``("chess", None)``.  Raises ``ValueError``."""
    m = re.fullmatch(r"\s*(chess|shogi|go)(\d+)?\s*", label.lower())
    if not m or (m.group(2) and m.group(1) != "go"):
        raise ValueError(f"unknown game {label!r}: expected one of chess, shogi, go, go<size>")
    return m.group(1), int(m.group(2)) if m.group(2) else None
