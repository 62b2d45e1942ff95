"""The learning curve's CPU-hours (benchmarks/learning_curve.py): the run's own count, and an estimate
before it began."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

from benchmarks.learning_curve import CpuClock, cpu_hours_at, game_title, sparse_labels


def _train(positions: int, hours: float, step: int) -> dict[str, object]:
    return {"kind": "train", "positions": positions, "cpu_hours": hours, "step": step}


def test_the_runs_own_count_and_the_estimate_before_it() -> None:
    events = [
        {"kind": "start"},
        {"kind": "train", "positions": 500, "step": 100},  # before CPU accounting: no cpu_hours
        {"kind": "start"},
        _train(1_000, 1.0, 200),
        _train(2_000, 2.0, 300),  # the first measured cost: 1 hour per 1,000 positions
        {"kind": "start"},
        _train(3_000, 2.5, 400),  # cumulative across invocations: half an hour for these 1,000
        {"kind": "start"},
        _train(4_000, 0.25, 500),  # an invocation that counted from its own start: +0.25
    ]
    clock = CpuClock.from_events(events)
    assert clock.early_seconds_per_position == pytest.approx(3.6)
    assert clock.positions == (1_000, 2_000, 3_000, 4_000)
    assert clock.hours == pytest.approx((0.0, 1.0, 1.5, 1.75))
    assert clock.hours_at(500) == pytest.approx(0.5)  # estimated: 500 positions at 3.6 s
    assert clock.hours_at(1_000) == pytest.approx(1.0)
    assert clock.hours_at(2_500) == pytest.approx(2.25)  # 1 before the count + 1.25 interpolated
    assert clock.hours_at(4_000) == pytest.approx(2.75)
    positions = [(0, 0), (100, 500), (200, 1_000), (300, 2_000), (400, 3_000), (500, 4_000)]
    assert cpu_hours_at(350, positions, clock) == pytest.approx(2.25)


def test_step_labels_that_would_overlap_are_left_out() -> None:
    hours = [0.1, 0.6, 1.4, 8.6, 9.1, 9.4, 10.5, 11.0, 11.4]
    assert sparse_labels(hours, 0.5) == [True, True, True, True, True, False, True, True, False]
    assert sparse_labels([], 1.0) == []
    assert all(sparse_labels(hours, 0.0))


def test_the_title_names_the_game() -> None:
    assert game_title("go9") == "Go 9x9" and game_title("chess") == "Chess" and game_title("shogi") == "Shogi"
