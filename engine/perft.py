"""Perft: the number of move sequences of a given length from a position, by the engine's own rules.

It is how users and tests check a move generator (``go perft N`` in UCI and USI prints it per root
move, in Stockfish's format).  Only legality counts: a position that a rule has ended (repetition, the
fifty-move rule, a length cap) is counted through like any other, as Stockfish and python-chess count.
The last ply is bulk-counted (the number of legal moves), so depth 1 never pushes a move.
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


def format_divide(counts: list[tuple[str, int]]) -> list[str]:
    """Stockfish's ``go perft`` output: ``move: count`` per root move, a blank line, ``Nodes searched:
    N`` and a blank line."""
    lines = [f"{text}: {count}" for text, count in counts]
    return [*lines, "", f"Nodes searched: {sum(count for _, count in counts)}", ""]
