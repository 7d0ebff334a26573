"""The lab's match statistics against values worked out by hand from the published formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_ext.lab.stats import (
    Pentanomial,
    Trinomial,
    elo_from_pentanomial,
    elo_from_trinomial,
    elo_to_score,
    los_from_decisive,
    normal_quantile,
    score_to_elo,
)

# ---------------------------------------------------------------- the logistic curve


@pytest.mark.parametrize(
    ("score", "elo"),
    [
        (0.5, 0.0),
        (0.7, 147.1907),  # -400·log10(1/0.7 - 1) = -400·log10(3/7) = 400·0.367977
        (0.75, 190.8485),  # 400·log10(3)
        (0.9, 381.6970),  # 400·log10(9)
        (0.25, -190.8485),
        (10 / 11, 400.0),  # a 400-point edge scores 10 to 1
    ],
)
def test_score_to_elo_known_values(score: float, elo: float) -> None:
    assert score_to_elo(score) == pytest.approx(elo, abs=1e-4)
    assert elo_to_score(elo) == pytest.approx(score, abs=1e-6)  # the Elo above is rounded to 1e-4


def test_certain_scores_are_infinite_elo_and_back() -> None:
    assert score_to_elo(1.0) == math.inf
    assert score_to_elo(0.0) == -math.inf
    assert elo_to_score(math.inf) == 1.0
    assert elo_to_score(-math.inf) == 0.0
    assert elo_to_score(-1e6) == 0.0  # no overflow far out


@pytest.mark.parametrize("score", [-0.01, 1.01, math.nan])
def test_score_outside_the_unit_interval_is_an_error(score: float) -> None:
    with pytest.raises(ValueError, match="fraction"):
        score_to_elo(score)


def test_nan_elo_is_an_error() -> None:
    with pytest.raises(ValueError, match="nan"):
        elo_to_score(math.nan)


@given(st.floats(min_value=-1500, max_value=1500))
def test_elo_round_trips_through_the_score(elo: float) -> None:
    assert score_to_elo(elo_to_score(elo)) == pytest.approx(elo, abs=1e-6)


def test_normal_quantile() -> None:
    assert normal_quantile(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert normal_quantile(0.99) == pytest.approx(2.575829, abs=1e-6)
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError, match="confidence"):
            normal_quantile(bad)


# ---------------------------------------------------------------- trinomial


def test_trinomial_60_20_20_by_hand() -> None:
    # score = (60 + 20/2) / 100 = 0.7 -> Elo 147.19.
    # per-game variance = 0.6·(1-0.7)² + 0.2·(0.5-0.7)² + 0.2·(0-0.7)² = 0.054 + 0.008 + 0.098 = 0.16;
    # standard error = sqrt(0.16/100) = 0.04; 95 %: 0.7 ± 1.959964·0.04 = [0.621601, 0.778399]
    # -> Elo [-400·log10(1/0.621601 - 1), -400·log10(1/0.778399 - 1)] = [86.2250, 218.2518];
    # cutechess-cli prints the half width, (218.2518 - 86.2250) / 2 = 66.0134.
    # LOS = Φ((60-20)/sqrt(80)) = Φ(4.472136) = 0.9999961.
    estimate = elo_from_trinomial(Trinomial(60, 20, 20))
    assert estimate.score == pytest.approx(0.7)
    assert estimate.elo == pytest.approx(147.1907, abs=1e-4)
    assert estimate.low == pytest.approx(86.2250, abs=1e-3)
    assert estimate.high == pytest.approx(218.2518, abs=1e-3)
    assert (estimate.high - estimate.low) / 2 == pytest.approx(66.0134, abs=1e-3)
    assert estimate.los == pytest.approx(0.9999961, abs=1e-7)
    assert estimate.draw_ratio == pytest.approx(0.2)
    assert estimate.games == 100


def test_trinomial_even_match_by_hand() -> None:
    # 30 W / 40 D / 30 L: score 0.5, Elo 0, variance 0.3·0.25·2 = 0.15, se = sqrt(0.15/100) = 0.0387298;
    # 0.5 ± 0.0759090 -> Elo ±(-400·log10(1/0.575909 - 1)) = ±53.1580, LOS exactly 0.5.
    estimate = elo_from_trinomial(Trinomial(30, 40, 30))
    assert estimate.elo == 0.0
    assert estimate.high == pytest.approx(53.1580, abs=1e-3)
    assert estimate.low == pytest.approx(-53.1580, abs=1e-3)
    assert estimate.los == 0.5


def test_los_is_cutechess_formula() -> None:
    # Φ((W-L)/sqrt(W+L)): 55 vs 45 -> Φ(1.0) = 0.841345; 45 vs 55 -> 0.158655; draws do not count.
    assert los_from_decisive(55, 45) == pytest.approx(0.841345, abs=1e-6)
    assert elo_from_trinomial(Trinomial(55, 1000, 45)).los == pytest.approx(0.841345, abs=1e-6)
    assert los_from_decisive(45, 55) == pytest.approx(0.158655, abs=1e-6)
    assert los_from_decisive(0, 0) == 0.5


def test_interval_of_99_percent_is_wider() -> None:
    t = Trinomial(60, 20, 20)
    narrow, wide = elo_from_trinomial(t, 0.95), elo_from_trinomial(t, 0.99)
    assert wide.low < narrow.low < narrow.elo < narrow.high < wide.high


def test_four_times_the_games_halve_the_score_interval() -> None:
    small, large = elo_from_trinomial(Trinomial(30, 10, 20)), elo_from_trinomial(Trinomial(120, 40, 80))
    assert small.elo == pytest.approx(large.elo)
    small_width = elo_to_score(small.high) - elo_to_score(small.low)
    large_width = elo_to_score(large.high) - elo_to_score(large.low)
    assert large_width == pytest.approx(small_width / 2)


def test_no_games_means_nothing_is_known() -> None:
    estimate = elo_from_trinomial(Trinomial(0, 0, 0))
    assert (estimate.elo, estimate.low, estimate.high) == (0.0, -math.inf, math.inf)
    assert (estimate.los, estimate.score, estimate.games, estimate.draw_ratio) == (0.5, 0.5, 0, 0.0)


def test_all_wins_is_infinite_elo_with_no_interval() -> None:
    estimate = elo_from_trinomial(Trinomial(12, 0, 0))
    assert estimate.elo == math.inf
    assert (estimate.low, estimate.high) == (-math.inf, math.inf)
    assert estimate.los == pytest.approx(0.9997340, abs=1e-6)  # Φ(12/sqrt(12)) = Φ(3.4641)


def test_all_losses_is_minus_infinite_elo() -> None:
    estimate = elo_from_trinomial(Trinomial(0, 0, 7))
    assert estimate.elo == -math.inf
    assert estimate.los < 0.01


def test_all_draws_have_no_decisive_game() -> None:
    estimate = elo_from_trinomial(Trinomial(0, 9, 0))
    assert estimate.elo == 0.0
    assert estimate.los == 0.5
    assert estimate.draw_ratio == 1.0
    assert (estimate.low, estimate.high) == (-math.inf, math.inf)


def test_an_interval_end_past_a_certain_score_is_infinite() -> None:
    # 9 W / 1 L: 0.9 ± 1.96·sqrt(0.09/10) = 0.9 ± 0.186 -> the upper end passes 1.
    estimate = elo_from_trinomial(Trinomial(9, 0, 1))
    assert estimate.high == math.inf
    assert math.isfinite(estimate.low)


@given(st.integers(0, 300), st.integers(0, 300), st.integers(0, 300))
def test_any_trinomial_gives_an_ordered_estimate(wins: int, draws: int, losses: int) -> None:
    estimate = elo_from_trinomial(Trinomial(wins, draws, losses))
    assert estimate.low <= estimate.elo <= estimate.high
    assert 0.0 <= estimate.los <= 1.0
    assert 0.0 <= estimate.score <= 1.0


def test_trinomial_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="wins"):
        Trinomial(-1, 0, 0)
    with pytest.raises(ValueError, match="draws"):
        Trinomial(1, 0.5, 0)  # type: ignore[arg-type]


def test_counts_from_numpy_become_plain_ints() -> None:
    # A runner that tallies with numpy hands over numpy integers; they are counts all the same.
    t = Trinomial(np.int64(3), np.int32(1), np.int64(0))  # type: ignore[arg-type]
    assert t == Trinomial(3, 1, 0) and type(t.wins) is int
    p = Pentanomial(tuple(np.array([1, 0, 2, 0, 1])))
    assert p == Pentanomial((1, 0, 2, 0, 1)) and all(type(n) is int for n in p.counts)
    assert Pentanomial([1, 0, 2, 0, 1]).counts == (1, 0, 2, 0, 1)  # type: ignore[arg-type]


def test_trinomials_add() -> None:
    assert Trinomial(1, 2, 3) + Trinomial(10, 20, 30) == Trinomial(11, 22, 33)


# ---------------------------------------------------------------- pentanomial


def test_pentanomial_counts_pairs_by_points() -> None:
    p = Pentanomial.from_pair_scores([0, 0.5, 1, 1, 1.5, 2, 2, 2])
    assert p.counts == (1, 1, 2, 1, 3)
    assert p.pairs == 8
    assert p.games == 16
    assert p.score == pytest.approx((0.5 + 2 + 1.5 + 6) / 16)


@pytest.mark.parametrize("bad", [-0.5, 0.25, 2.5, 3, math.nan, math.inf])
def test_pentanomial_rejects_impossible_pair_scores(bad: float) -> None:
    with pytest.raises(ValueError, match="game pair scores"):
        Pentanomial.from_pair_scores([1.0, bad])


def test_pentanomial_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="5 counts"):
        Pentanomial((1, 2, 3))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="counts"):
        Pentanomial((1, 2, -3, 0, 0))


def test_pentanomial_by_hand() -> None:
    # Pairs (0, 0.5, 1, 1.5, 2 points) = (5, 10, 40, 30, 15): pair means 0, .25, .5, .75, 1.
    # mean = (10·.25 + 40·.5 + 30·.75 + 15·1) / 100 = 0.6 -> Elo -400·log10(1/0.6 - 1) = 70.4365;
    # variance over pairs = (5·.36 + 10·.1225 + 40·.01 + 30·.0225 + 15·.16) / 100 = 0.065;
    # se = sqrt(0.065/100) = 0.0254951; 95 %: 0.6 ± 0.0499695 = [0.5500305, 0.6499695]
    # -> Elo [34.8815, 107.5148]; LOS = Φ(0.1/0.0254951) = Φ(3.922323) = 0.9999561;
    # drawn pairs (1 point) 40 of 100.
    estimate = elo_from_pentanomial(Pentanomial((5, 10, 40, 30, 15)))
    assert estimate.score == pytest.approx(0.6)
    assert estimate.elo == pytest.approx(70.4365, abs=1e-4)
    assert estimate.low == pytest.approx(34.8815, abs=1e-3)
    assert estimate.high == pytest.approx(107.5148, abs=1e-3)
    assert estimate.los == pytest.approx(0.9999561, abs=1e-7)
    assert estimate.draw_ratio == pytest.approx(0.4)
    assert estimate.games == 200


def test_setup_luck_narrows_the_pentanomial_interval() -> None:
    # 100 pairs in which the setups mostly decide: 80 pairs split 1-1 (each side wins with the good
    # setup), 10 won 2-0, 10 lost 0-2. As single games that is 100 W / 0 D / 100 L, per-game variance
    # 0.25, se sqrt(0.25/200) = 0.0354; as pairs the variance is (10·.25 + 10·.25)/100 = 0.05 per pair,
    # se sqrt(0.05/100) = 0.0224: the pairs see that most of the noise was the setups'.
    pairs = elo_from_pentanomial(Pentanomial((10, 0, 80, 0, 10)))
    games = elo_from_trinomial(Trinomial(100, 0, 100))
    assert pairs.elo == games.elo == 0.0
    # 95 % upper ends: 0.5 + 1.959964·0.0224 = 0.543826 -> 30.5319 Elo; 0.5 + 1.959964·0.0354 -> 48.4631 Elo.
    assert pairs.high == pytest.approx(30.5319, abs=1e-3)
    assert games.high == pytest.approx(48.4631, abs=1e-3)


def test_independent_games_give_nearly_the_same_interval_either_way() -> None:
    # Pairs of independent games with W/D/L probabilities .4/.2/.4: the pair counts are the convolution
    # (LL .16, LD+DL .16, WL+LW+DD .36, DW+WD .16, WW .16). Per pair, var = per-game var / 2, so both
    # models give the same interval on the same number of games.
    pairs = elo_from_pentanomial(Pentanomial((160, 160, 360, 160, 160)))
    games = elo_from_trinomial(Trinomial(800, 400, 800))
    assert pairs.games == games.games
    assert pairs.high == pytest.approx(games.high, rel=1e-9)


def test_pentanomial_edge_cases() -> None:
    empty = elo_from_pentanomial(Pentanomial((0, 0, 0, 0, 0)))
    assert (empty.elo, empty.low, empty.high, empty.los, empty.games) == (0.0, -math.inf, math.inf, 0.5, 0)
    swept = elo_from_pentanomial(Pentanomial((0, 0, 0, 0, 6)))
    assert swept.elo == math.inf
    assert swept.los == 1.0
    assert (swept.low, swept.high) == (-math.inf, math.inf)
    level = elo_from_pentanomial(Pentanomial((0, 0, 6, 0, 0)))
    assert (level.elo, level.los, level.draw_ratio) == (0.0, 0.5, 1.0)
    lost = elo_from_pentanomial(Pentanomial((6, 0, 0, 0, 0)))
    assert (lost.elo, lost.los) == (-math.inf, 0.0)


def test_pentanomials_add() -> None:
    assert Pentanomial((1, 0, 2, 0, 1)) + Pentanomial((0, 1, 0, 1, 0)) == Pentanomial((1, 1, 2, 1, 1))
