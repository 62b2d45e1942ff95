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

from typing import Any

from engine.games.base import GameState


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
    computed by the game's compiled rules where it has them (``GameState.compiled_perft_divide``:
    chess, Chess960 included, and shogi, with numba installed); by :func:`perft_divide` otherwise.
    ``state`` is unchanged."""
    counts = state.compiled_perft_divide(depth) if depth >= 1 else None
    return counts if counts is not None else perft_divide(state, depth)


def format_divide(counts: list[tuple[str, int]]) -> list[str]:
    """Stockfish's ``go perft`` output: ``move: count`` per root move, a blank line, ``Nodes searched:
    N`` and a blank line."""
    lines = [f"{text}: {count}" for text, count in counts]
    return [*lines, "", f"Nodes searched: {sum(count for _, count in counts)}", ""]
