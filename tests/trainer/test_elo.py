"""trainer.elo: the logistic Elo model and its error bars."""

from __future__ import annotations

import math

import pytest

from trainer.elo import MatchResult, elo_from_score, los, score_from_elo


def test_elo_and_score_are_inverse() -> None:
    assert elo_from_score(0.5) == 0.0
    assert score_from_elo(400) == pytest.approx(10 / 11)
    for elo in (-600, -200, -35, 0, 35, 200, 600):
        assert elo_from_score(score_from_elo(elo)) == pytest.approx(elo)
    assert elo_from_score(0.76) == pytest.approx(200.2, abs=0.5)


def test_match_result_score_and_interval() -> None:
    r = MatchResult(30, 10, 10)
    assert r.games == 50 and r.score == pytest.approx(0.7)
    elo, lo, hi = r.elo()
    assert elo == pytest.approx(400 * math.log10(0.7 / 0.3))
    assert lo < elo < hi
    # The trinomial standard error of the mean score.
    s = 0.7
    var = (30 * 0.3**2 + 10 * 0.2**2 + 10 * 0.7**2) / 50
    se = math.sqrt(var / 50)
    assert lo == pytest.approx(elo_from_score(s - 1.959963984540054 * se))
    assert hi == pytest.approx(elo_from_score(s + 1.959963984540054 * se))
    # Symmetry: swapping players negates everything.
    e2, lo2, hi2 = MatchResult(10, 10, 30).elo()
    assert (e2, lo2, hi2) == pytest.approx((-elo, -hi, -lo))


def test_more_games_narrow_the_interval() -> None:
    _, lo1, hi1 = MatchResult(6, 0, 4).elo()
    _, lo2, hi2 = MatchResult(60, 0, 40).elo()
    assert hi2 - lo2 < hi1 - lo1


def test_perfect_scores_and_draws_stay_finite() -> None:
    elo, lo, hi = MatchResult(40, 0, 0).elo()
    assert math.isfinite(elo) and elo > 400 and 0 < lo < elo and hi == math.inf
    elo, lo, hi = MatchResult(0, 0, 40).elo()
    assert math.isfinite(elo) and elo < -400
    elo, lo, hi = MatchResult(0, 10, 0).elo()
    assert elo == 0 and lo < 0 < hi
    assert MatchResult(0, 0, 0).elo()[0] == 0
    assert "Elo" in MatchResult(3, 1, 1).describe()


def test_likelihood_of_superiority() -> None:
    assert los(MatchResult(5, 3, 5)) == pytest.approx(0.5)
    assert los(MatchResult(30, 0, 10)) > 0.99
    assert los(MatchResult(0, 7, 0)) == 0.5
