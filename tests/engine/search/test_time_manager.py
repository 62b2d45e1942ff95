"""Time allocation for every clock form (pure functions: no sleeping)."""

from __future__ import annotations

import pytest

from engine.search.limits import Clock, SearchLimits
from engine.search.time_manager import TimeConfig, allocate, allocate_clock

CFG = TimeConfig(move_overhead_ms=50)


def test_sudden_death_spends_a_share_and_never_half_the_clock() -> None:
    b = allocate_clock(Clock(60_000), ply=0, config=CFG)
    assert b.managed
    assert 60_000 / 41 - 50 <= b.soft_ms <= 60_000 / 20
    assert b.soft_ms <= b.hard_ms <= 30_000


def test_increment_adds_most_of_the_increment() -> None:
    base = allocate_clock(Clock(10_000), 40, CFG)
    inc = allocate_clock(Clock(10_000, inc_ms=100), 40, CFG)
    assert inc.soft_ms - base.soft_ms == pytest.approx(80)


def test_moves_to_go_divides_the_period() -> None:
    b = allocate_clock(Clock(40_000, moves_to_go=20), 10, CFG)
    assert b.soft_ms == pytest.approx(2000 - 50)
    last = allocate_clock(Clock(5_000, moves_to_go=1), 10, CFG)
    assert last.hard_ms == pytest.approx(4500 - 50)


def test_byoyomi_is_always_spent_but_never_exceeded() -> None:
    b = allocate_clock(Clock(0, byoyomi_ms=10_000), 50, CFG)
    assert b.soft_ms == pytest.approx(10_000 - 50)
    assert b.hard_ms == pytest.approx(10_000 - 50)
    with_main = allocate_clock(Clock(60_000, byoyomi_ms=5_000), 50, CFG)
    assert with_main.soft_ms > 5_000 - 50
    assert with_main.hard_ms <= 30_000 + 5_000 - 50
    # the period is lost unless used once the main time is gone, not while main time can be saved
    assert b.use_all and not with_main.use_all
    assert not allocate_clock(Clock(60_000, inc_ms=1_000), 50, CFG).use_all


def test_canadian_period_is_moves_to_go() -> None:
    b = allocate_clock(Clock(300_000, moves_to_go=25), 100, CFG)
    assert b.soft_ms == pytest.approx(12_000 - 50)
    assert b.hard_ms < 300_000


def test_overhead_is_subtracted_and_nothing_goes_negative() -> None:
    tiny = allocate_clock(Clock(30), 100, CFG)
    assert tiny.hard_ms >= 0 and tiny.soft_ms >= 0
    assert tiny.hard_ms < 30


@pytest.mark.parametrize(
    "clock", [Clock(1000, 10), Clock(10_000, 100), Clock(100, 0), Clock(0, 0, None, 1000)]
)
def test_hard_limit_leaves_the_clock_positive(clock: Clock) -> None:
    b = allocate_clock(clock, 60, CFG)
    assert (
        b.hard_ms + CFG.move_overhead_ms <= clock.time_ms + clock.byoyomi_ms + 0.8 * clock.inc_ms
        or b.hard_ms <= CFG.min_think_ms
    )


def test_movetime_infinite_and_bare_go() -> None:
    assert allocate(SearchLimits(movetime_ms=1000), 0, CFG).hard_ms == pytest.approx(950)
    assert allocate(SearchLimits(infinite=True), 0, CFG).hard_ms is None
    assert allocate(SearchLimits(), 0, CFG).hard_ms is None
    assert allocate(SearchLimits(), 0, CFG, finite_default=True).hard_ms == CFG.default_ms
    assert allocate(SearchLimits(nodes=100), 0, CFG, finite_default=True).hard_ms is None


def test_a_game_at_ten_seconds_plus_increment_never_flags() -> None:
    """Simulate spending every hard limit fully: the clock must stay positive for 300 moves."""
    time_left = 10_000.0
    for ply in range(0, 600, 2):
        b = allocate_clock(Clock(time_left, inc_ms=100), ply, CFG)
        time_left -= b.hard_ms + CFG.move_overhead_ms
        assert time_left > 0
        time_left += 100


def test_horizon_follows_the_length_of_a_typical_game() -> None:
    from engine.games import get_game

    assert get_game("chess").profile.expected_moves == (15, 30)
    assert get_game("shogi").profile.expected_moves[1] > get_game("chess").profile.expected_moves[1]
    assert (
        get_game("go", board_size=19).profile.expected_moves[1]
        > get_game("go", board_size=9).profile.expected_moves[1]
        >= 20
    )
    long_game = TimeConfig(move_overhead_ms=50, min_expected_moves=30, max_expected_moves=60)
    assert allocate_clock(Clock(60_000), 0, long_game).soft_ms < allocate_clock(Clock(60_000), 0, CFG).soft_ms


def test_no_time_is_kept_for_moves_past_the_length_limit() -> None:
    """A game drawn at a known ply (shogi's MaxMovesToDraw): the clock is shared over the mover's moves
    left before it, the last may use 90 % of it, and at the limit (drawn already) the budget shrinks
    to the minimum; far from the limit nothing changes."""
    clock = Clock(60_000)
    free = allocate_clock(clock, 200, CFG)
    assert allocate_clock(clock, 200, CFG, plies_left=10_000) == free
    five = allocate_clock(clock, 200, CFG, plies_left=9)  # the mover's plies 1, 3, 5, 7, 9
    assert five.soft_ms == pytest.approx(60_000 / 5 - 50) and five.soft_ms > free.soft_ms
    last = allocate_clock(clock, 200, CFG, plies_left=2)  # its one move before the draw
    assert last.hard_ms == pytest.approx(0.9 * 60_000 - 50) and last.soft_ms >= five.soft_ms
    assert allocate_clock(clock, 200, CFG, plies_left=1) == last
    for over in (0, -3):
        drawn = allocate_clock(clock, 200, CFG, plies_left=over)
        assert drawn.soft_ms == drawn.hard_ms == CFG.min_think_ms < free.soft_ms
    # byo-yomi: the period is still spent; moves to go are cut to the moves left
    byo = allocate_clock(Clock(30_000, byoyomi_ms=10_000), 200, CFG, plies_left=3)
    assert byo.soft_ms == pytest.approx(30_000 / 2 + 10_000 - 50)
    periods = allocate_clock(Clock(40_000, moves_to_go=20), 200, CFG, plies_left=7)
    assert periods.soft_ms == pytest.approx(40_000 / 4 - 50)
    # through allocate (what the session calls)
    assert allocate(SearchLimits(clock=clock), 200, CFG, plies_left=2) == last
