"""benchmarks/trainer_device.py: the figures it reads from a run's log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.trainer_device import run_figures


def test_run_figures_from_a_log(tmp_path: Path) -> None:
    events = [
        {"kind": "start", "time": 100.0},
        {"kind": "train", "step": 200, "time": 110.0, "games_per_hour": 900.0, "positions_per_s": 40.0},
        {"kind": "evaluate", "step": 200, "time": 115.0},
        {"kind": "train", "step": 600, "time": 130.0, "games_per_hour": 1200.0, "positions_per_s": 55.5},
        {"kind": "stop", "step": 640, "games": 12, "positions": 1500, "seconds": 32.0, "cpu_hours": 0.01},
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    figures = run_figures(tmp_path)
    assert figures["games_per_hour"] == 1200.0 and figures["positions_per_s"] == 55.5
    assert figures["steps_per_s"] == pytest.approx(400 / 20.0)
    assert (figures["steps"], figures["games"], figures["positions"]) == (640, 12, 1500)


def test_run_figures_before_any_training(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"kind": "stop", "step": 0, "games": 3, "positions": 90}) + "\n")
    figures = run_figures(tmp_path)
    assert figures["games"] == 3 and "steps_per_s" not in figures and "games_per_hour" not in figures
