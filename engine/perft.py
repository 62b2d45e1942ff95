"""Perft: the number of move sequences of a given length from a position, by the engine's own rules.

It is how users and tests check a move generator (``go perft N`` in UCI and USI prints it per root
move, in Stockfish's format).  Only legality counts: a position that a rule has ended (repetition, the
fifty-move rule, a length cap) is counted through like any other, as Stockfish and python-chess count.
The last ply is bulk-counted (the number of legal moves), so depth 1 never pushes a move.
:func:`fast_perft_divide` counts with the game's compiled rules (chess: ``engine/games/chess_kernel.py``,
proven equal to python-chess by its tests; shogi: ``engine/games/shogi_rules_kernel.py``, equal to
cshogi) when numba is installed, and falls back to :func:`perft_divide`.
"""

from __future__ import annotations

import importlib
from typing import Any, cast

from engine.games.base import GameState
from engine.games.registry import RULES_KERNELS


def perft(state: GameState[Any], depth: int) -> int:
    """Leaf count of the legal move tree ``depth`` plies deep (1 at depth 0).  ``state`` is unchanged."""
    if depth <= 0:
        return 1
    moves = state.legal_moves()
    if depth == 1:
        return len(moves)
    total = 0
    for move in moves:
        state.push(move)
        total += perft(state, depth - 1)
        state.pop()
    return total


def perft_divide(state: GameState[Any], depth: int) -> list[tuple[Any, int]]:
    """``(root move, leaf count below it)`` for every legal move, in generation order (``depth >= 1``)."""
    counts: list[tuple[Any, int]] = []
    for move in state.legal_moves():
        state.push(move)
        counts.append((move, perft(state, depth - 1)))
        state.pop()
    return counts


def fast_perft_divide(state: GameState[Any], depth: int) -> list[tuple[Any, int]]:
    """:func:`perft_divide`'s answer (the same moves, as the state's rules generate them, and counts),
    computed by the game's compiled rules where they count perft (``perft_divide_state`` of its module
    in ``engine.games.registry.RULES_KERNELS``: chess, Chess960 included, and shogi) and numba is
    installed; by :func:`perft_divide` otherwise.  ``state`` is unchanged."""
    module_name = RULES_KERNELS.get(state.info.name)
    if depth < 1 or module_name is None:
        return perft_divide(state, depth)
    try:
        module = importlib.import_module(module_name)  # imports numba, an optional dependency
    except ImportError:
        return perft_divide(state, depth)
    count = getattr(module, "perft_divide_state", None)
    if count is None:
        return perft_divide(state, depth)
    return cast(list[tuple[Any, int]], count(state, depth))


def format_divide(counts: list[tuple[str, int]]) -> list[str]:
    """Stockfish's ``go perft`` output: ``move: count`` per root move, a blank line, ``Nodes searched:
    N`` and a blank line."""
    lines = [f"{text}: {count}" for text, count in counts]
    return [*lines, "", f"Nodes searched: {sum(count for _, count in counts)}", ""]
