"""trainer.evaluate.elo: the logistic Elo model and its error bars."""

from __future__ import annotations

import math

import pytest

from trainer.evaluate.elo import MatchResult, Pentanomial, elo_from_score, los, pair_points, score_from_elo


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


def test_pentanomial_matches_fishtest_on_its_own_example() -> None:
    """fishtest's stat_util.get_elo on the pentanomial of its SPRT example: Elo -0.77 +- 1.28, LOS 11.8%."""
    p = Pentanomial((10789, 19328, 33806, 19402, 10543))
    assert p.pairs == 93868 and p.games == 187736
    elo, lo, hi = p.elo()
    assert elo == pytest.approx(-0.7736, abs=1e-3)
    assert (hi - lo) / 2 == pytest.approx(1.2776, abs=1e-3)
    assert p.los() == pytest.approx(0.11766, abs=1e-4)
    # A low-variance pentanomial (most pairs split one win each): +0.90 +- 0.66, LOS 99.6%.
    q = Pentanomial((39, 2226, 31451, 2412, 40))
    elo, lo, hi = q.elo()
    assert elo == pytest.approx(0.9030, abs=1e-3) and (hi - lo) / 2 == pytest.approx(0.6625, abs=1e-3)
    assert q.los() == pytest.approx(0.99622, abs=1e-4)


def test_pentanomial_by_hand() -> None:
    """Four pairs scoring 1/2, 1, 1, 3/2: s = 1/2, var = (1/4 + 1/4) / 8, se = sqrt(var / 8)."""
    p = Pentanomial.from_pair_points([0.5, 1.0, 1.0, 1.5])
    assert p.counts == (0, 1, 2, 1, 0)
    assert p.score == 0.5 and p.variance() == pytest.approx(0.0625)
    elo, lo, hi = p.elo()
    se = math.sqrt(0.0625 / 8)
    assert elo == 0.0 and hi == pytest.approx(elo_from_score(0.5 + 1.959963984540054 * se)) and lo == -hi
    assert hi == pytest.approx(125.57, abs=0.01)
    assert "pairs [0, 1, 2, 1, 0] (50.0%)" in p.describe()


def test_pairs_of_split_games_are_tighter_than_the_same_games_unpaired() -> None:
    """Ten pairs each won by whoever had White: the pairs say 'equal' firmly; the games alone do not."""
    games = [1.0, 0.0] * 10
    assert pair_points(games) == [1.0] * 10
    paired = Pentanomial.from_games(games)
    assert paired.counts == (0, 0, 10, 0, 0) and paired.variance() == 0.0
    _, plo, phi = paired.elo()
    _, tlo, thi = MatchResult(10, 0, 10).elo()
    assert 0 < phi < thi and tlo < plo < 0
    # The floor keeps it honest: one game in twenty decided either way.
    assert phi == pytest.approx(elo_from_score(0.5 + 1.959963984540054 * math.sqrt(0.25 / 20 / 20)))


def test_pentanomial_edge_cases() -> None:
    elo, lo, hi = Pentanomial.from_games([1.0] * 6).elo()
    assert math.isfinite(elo) and elo > 300 and 0 < lo < elo and hi == math.inf
    assert Pentanomial((0, 0, 0, 0, 0)).elo() == (0.0, -math.inf, math.inf)
    assert Pentanomial((0, 0, 0, 0, 0)).los() == 0.5
    with pytest.raises(ValueError, match="odd number"):
        pair_points([1.0, 0.0, 0.5])
    with pytest.raises(ValueError, match=r"not 0\.25"):
        Pentanomial.from_pair_points([0.25])
    with pytest.raises(ValueError, match="five counts"):
        Pentanomial((1, 2, 3))  # type: ignore[arg-type]
