"""engine.bench: the figures of the network alone and the engine's ratios to them."""

from __future__ import annotations

import pytest

from engine.bench import NetworkAlone, SearchFigures


def test_network_alone_keeps_each_figures_best() -> None:
    a = NetworkAlone(default_session=10_000.0, side_by_side=18_000.0)
    b = NetworkAlone(default_session=12_000.0, side_by_side=15_000.0)
    both = a.better(b)
    assert both == NetworkAlone(12_000.0, 18_000.0) and both.best == 18_000.0
    gpu = NetworkAlone(default_session=50_000.0, side_by_side=None)
    assert gpu.best == 50_000.0 and gpu.better(gpu).side_by_side is None
    assert NetworkAlone(9_000.0, None).better(a) == NetworkAlone(10_000.0, 18_000.0)


def test_ratio_to_the_default_session_and_share_of_the_best() -> None:
    figures = SearchFigures("go9", "net", 3_000, 0.25, 3_000, NetworkAlone(8_000.0, 16_000.0))
    assert figures.evals_per_s == 12_000.0
    assert figures.of_default_session == pytest.approx(1.5)
    assert figures.share == pytest.approx(0.75)
    uniform = SearchFigures("go9", "uniform", 3_000, 0.25, 0, None)
    assert uniform.of_default_session is None and uniform.share is None
