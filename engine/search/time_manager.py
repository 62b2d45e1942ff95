"""Time management: how long to think about one move.

A budget has two parts: ``soft_ms``, the time after which the search stops unless the best move is
unstable, and ``hard_ms``, the time it never exceeds.  Both already subtract the move overhead (the
latency between the engine and the clock: process pipes, GUI, network).

Allocation (per clock form of :class:`~engine.search.limits.Clock`):
  * moves to go: ``time / moves_to_go``; the last move of a period may use 90 % of what is left;
  * sudden death / increment: ``time / expected_moves + 0.8 * inc`` where ``expected_moves`` shrinks
    slowly with the game's ply (more of the clock early, never all of it);
  * byo-yomi: the byo-yomi period is granted afresh every move, so it is always spent (minus the
    overhead) on top of a share of the main time; once the main time is gone the whole period is
    used even when the move is decided early (``TimeBudget.use_all``).
  * A game the rules end at a known ply (shogi's ``MaxMovesToDraw``): the main time is shared over
    the mover's moves left before it at most, nothing is kept for moves past it (the last one may use
    90 % of the clock), and a position already at the limit (drawn) gets the minimum.
  * The hard limit is at most 3x the soft one, never more than half of the main time left (plus
    the byo-yomi and most of the increment), and never more than 90 % of what is on the clock now
    (the increment is only added after the move), so the clock cannot run out.
During the search (see ``searcher.py``) the soft limit is cut short when the most visited move cannot
be overtaken in the time left, and stretched towards the hard limit while the best move keeps changing.
"""

from __future__ import annotations

import dataclasses

from engine.search.limits import Clock, SearchLimits


@dataclasses.dataclass(frozen=True)
class TimeConfig:
    """Time-management settings.

    Attributes:
        move_overhead_ms: subtracted from every allocation (UCI ``MoveOverhead``).
        min_expected_moves / max_expected_moves: the horizon of sudden-death allocation: the clock is
            shared over ``max(min, max - moves played / 2)`` more moves (the game's ``PlayProfile.expected_moves``).
        hard_factor: hard limit as a multiple of the soft one.
        min_think_ms: never plan less than this (unless the clock has less).
        default_ms: budget of a search with no limit at all (a bare ``go``) that must still end.
    """

    move_overhead_ms: float = 100.0
    min_expected_moves: int = 15
    max_expected_moves: int = 30
    hard_factor: float = 3.0
    min_think_ms: float = 5.0
    default_ms: float = 5000.0


@dataclasses.dataclass(frozen=True)
class TimeBudget:
    """Soft and hard thinking time for one move, in milliseconds (``None``: no time limit)."""

    soft_ms: float | None
    hard_ms: float | None
    managed: bool  # True when the budget comes from a clock (early stop / extension allowed)
    #: The time is lost if not used (byo-yomi with no main time left): no early stop on a decided move,
    #: the rest of the period grows the subtree the next move reuses.
    use_all: bool = False


def allocate(
    limits: SearchLimits,
    ply: int,
    config: TimeConfig,
    finite_default: bool = False,
    plies_left: int | None = None,
) -> TimeBudget:
    """The budget for a search with ``limits`` at game ply ``ply``.

    ``finite_default``: when the limits set nothing (a bare ``go``), use ``config.default_ms`` instead
    of searching until ``stop`` (USI clients send a bare ``go`` and wait for a move).
    ``plies_left``: plies until the rules end the game by its length (``GameState.plies_left``;
    ``None``: no such limit), for a clock's allocation.
    """
    if limits.infinite:
        return TimeBudget(None, None, False)
    if limits.movetime_ms is not None:
        t = max(config.min_think_ms, limits.movetime_ms - config.move_overhead_ms)
        t = min(t, limits.movetime_ms) if limits.movetime_ms > 0 else 0.0
        return TimeBudget(t, t, False)
    if limits.clock is not None:
        return allocate_clock(limits.clock, ply, config, plies_left)
    if finite_default and limits.unbounded:
        return TimeBudget(config.default_ms, config.default_ms, False)
    return TimeBudget(None, None, False)


def allocate_clock(clock: Clock, ply: int, config: TimeConfig, plies_left: int | None = None) -> TimeBudget:
    """Soft/hard budget from one clock (see the module docstring; ``plies_left`` as in
    :func:`allocate`)."""
    overhead = config.move_overhead_ms
    main = max(0.0, clock.time_ms)
    byo = max(0.0, clock.byoyomi_ms)
    inc = max(0.0, clock.inc_ms)
    # The mover's moves before the length limit: plies 1, 3, 5 ... of those left are its own.
    moves_left = None if plies_left is None else (plies_left + 1) // 2
    ceiling = max(0.0, 0.9 * main + byo - overhead)
    floor = min(config.min_think_ms, ceiling * 0.5)
    if moves_left is not None and moves_left <= 0:  # drawn by length already: nothing to play for
        return TimeBudget(floor, floor, True)
    if clock.moves_to_go is not None and clock.moves_to_go > 0:
        mtg = clock.moves_to_go if moves_left is None else min(clock.moves_to_go, moves_left)
        share = main / mtg
        cap = main * (0.9 if mtg == 1 else min(0.5, 2.0 / mtg + 0.1))
    else:
        moves_played = ply // 2
        expected = max(config.min_expected_moves, config.max_expected_moves - moves_played // 2)
        if moves_left is not None:
            expected = min(expected, moves_left)
        share = main / expected
        cap = main * (0.9 if expected == 1 else 0.5)
    soft = share + 0.8 * inc + byo
    hard = min(soft * config.hard_factor, cap + 0.8 * inc + byo)
    # The increment arrives only after the move: never plan past what is on the clock now.
    hard = max(0.0, min(hard - overhead, ceiling))
    soft = max(0.0, min(soft - overhead, hard))
    soft = max(soft, floor)
    hard = max(hard, soft)
    return TimeBudget(soft, hard, True, use_all=main <= 0.0 and byo > 0.0)
