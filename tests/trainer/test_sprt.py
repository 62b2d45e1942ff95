"""The GSPRT over game pairs (trainer/evaluate/sprt.py): the LLR against known values, the bounds, the tracker."""

from __future__ import annotations

import math

import pytest

from trainer.evaluate.elo import Pentanomial
from trainer.evaluate.sprt import SprtSettings, SprtTracker, normalized_elo, normalized_llr


@pytest.mark.parametrize(
    ("counts", "elo0", "elo1", "expected"),
    [
        # fastchess's SPRT tests ("normalized pentanomial 1-3"), an independent implementation of
        # fishtest's LLR_normalized; its Stats(LL, LD, WL, DD, WD, WW) pool WL and DD into the 1-point class.
        ((365, 16618, 36029 + 200, 16974, 390), 0.0, 2.0, 2.25),
        ((127, 4883, 10311 + 401, 5150, 104), -1.75, 0.25, 3.01),
        ((0, 0, 0, 0, 5550), 0.0, 5.0, 111.82),
    ],
)
def test_llr_matches_fishtests_values(
    counts: tuple[int, int, int, int, int], elo0: float, elo1: float, expected: float
) -> None:
    assert normalized_llr(Pentanomial(counts), elo0, elo1) == pytest.approx(expected, rel=0.01, abs=0.01)


def test_llr_against_the_closed_form_worked_by_hand() -> None:
    """Van den Bergh's closed form (fishtest's LLR_normalized_alt), worked by hand for 40 pairs
    [2, 6, 20, 8, 4] scoring x = 0, 1/4, 1/2, 3/4, 1 (per game of the pair):
        mu = (0*2 + .25*6 + .5*20 + .75*8 + 1*4) / 40 = 21.5 / 40 = 0.5375
        var = (2*.5375^2 + 6*.2875^2 + 20*.0375^2 + 8*.2125^2 + 4*.4625^2) / 40 = 2.31875 / 40 = 0.05796875
        sigma per game = sqrt(2 var) = 0.3404960;  t = (mu - 1/2) / sigma = 0.1101335
        H1: nElo 10 -> t1 = 10 / (800 / ln 10) = 0.0287823;  H0: nElo 0 -> t0 = 0
        LLR ~ (games / 2) ln((1 + (t - t0)^2) / (1 + (t - t1)^2)) = 40 ln(1.0121294 / 1.0066357) = 0.21841
    The exact GSPRT (maximum-likelihood distributions) agrees to well within 1%."""
    result = Pentanomial((2, 6, 20, 8, 4))
    assert normalized_llr(result, 0.0, 10.0) == pytest.approx(0.21841, rel=0.01)
    # swapping the hypotheses negates it; ten times the pairs, ten times the LLR
    assert normalized_llr(result, 10.0, 0.0) == pytest.approx(-normalized_llr(result, 0.0, 10.0), abs=1e-9)
    ten = Pentanomial((20, 60, 200, 80, 40))
    assert normalized_llr(ten, 0.0, 10.0) == pytest.approx(10 * normalized_llr(result, 0.0, 10.0), rel=1e-6)
    # nElo = t * 800 / ln 10 = 0.1101335 * 347.4356 = 38.26
    assert normalized_elo(result) == pytest.approx(38.26, abs=0.01)


def test_an_even_result_leans_to_h0_and_no_pairs_is_zero() -> None:
    assert normalized_llr(Pentanomial((0, 0, 0, 0, 0)), 0.0, 10.0) == 0.0
    assert normalized_llr(Pentanomial((0, 0, 50, 0, 0)), 0.0, 10.0) < 0.0
    assert normalized_llr(Pentanomial((5, 10, 20, 10, 5)), 0.0, 10.0) < 0.0


def test_bounds_and_decisions() -> None:
    s = SprtSettings(0.0, 10.0)
    # log(beta / (1 - alpha)) and log((1 - beta) / alpha) with alpha = beta = 0.05: -+ln 19 = -+2.9444
    assert (s.lower, s.upper) == (pytest.approx(-math.log(19)), pytest.approx(math.log(19)))
    assert (s.decision(2.95), s.decision(-2.95), s.decision(0.0)) == ("H1", "H0", None)
    t = SprtSettings(0.0, 5.0, 0.1, 0.2)
    assert t.upper == pytest.approx(math.log(0.8 / 0.1)) and t.lower == pytest.approx(math.log(0.2 / 0.9))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("0,10", SprtSettings(0.0, 10.0)),
        (" -1.5 , 2 ", SprtSettings(-1.5, 2.0)),
        ("0,5,0.1,0.2", SprtSettings(0, 5, 0.1, 0.2)),
    ],
)
def test_parse(text: str, expected: SprtSettings) -> None:
    assert SprtSettings.parse(text) == expected


@pytest.mark.parametrize(
    "text", ["0", "0,10,0.05", "a,b", "10,0", "0,0", "0,10,0,0.05", "0,10,0.6,0.5", "nan,1"]
)
def test_parse_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        SprtSettings.parse(text)


def test_tracker_counts_a_pair_when_both_games_have_ended_in_any_order() -> None:
    tracker = SprtTracker(SprtSettings(0.0, 10.0))
    assert not tracker.add_game(0, 1.0)
    assert not tracker.add_game(1, 0.5)
    assert tracker.add_game(1, 1.0)  # pair 1: 1.5 points
    assert tracker.add_game(0, 0.0)  # pair 0: 1 point
    assert tracker.result.counts == (0, 0, 1, 1, 0)
    assert tracker.llr == pytest.approx(normalized_llr(tracker.result, 0.0, 10.0))
    assert tracker.status().startswith("pairs 2 [0, 0, 1, 1, 0]: LLR ")
    for pair in range(2, 200):
        tracker.add_game(pair, 1.0)
        tracker.add_game(pair, 1.0)
        if tracker.decision:
            break
    assert tracker.decision == "H1" and tracker.llr >= tracker.settings.upper
