"""The lab's SPRT: bounds, the log-likelihood ratio by hand and against the exact GSPRT, and simulated tests."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_ext.lab.sprt import (
    ALIKE_SAMPLES_FOR_VERDICT,
    MIN_VARIED_SAMPLES,
    SprtSpec,
    acceptance_probability,
    expected_games,
    llr_from_counts,
    llr_pentanomial,
    llr_trinomial,
    sprt_verdict,
    varied_samples,
    verdict_allowed,
)
from engine_ext.lab.stats import GAME_SCORES, PAIR_SCORES, Pentanomial, Trinomial, elo_to_score, score_to_elo

ELO_OF_SCORE_075 = 400 * math.log10(3)  # s1 = 0.75: round numbers in the hand computations

# ---------------------------------------------------------------- the specification


def test_bounds_are_walds() -> None:
    spec = SprtSpec(0, 10)
    assert spec.lower == pytest.approx(-2.944439, abs=1e-6)  # ln(0.05/0.95) = -ln 19
    assert spec.upper == pytest.approx(2.944439, abs=1e-6)
    lopsided = SprtSpec(0, 10, alpha=0.05, beta=0.1)
    assert lopsided.lower == pytest.approx(-2.251292, abs=1e-6)  # ln(0.1/0.95)
    assert lopsided.upper == pytest.approx(2.890372, abs=1e-6)  # ln(0.9/0.05)


def test_parse_reads_the_command_line_form() -> None:
    assert SprtSpec.parse("elo0=0 elo1=10 alpha=0.05 beta=0.05") == SprtSpec(0, 10, 0.05, 0.05)
    assert SprtSpec.parse("elo0=-5 elo1=5") == SprtSpec(-5, 5)
    assert SprtSpec.parse(" elo1=2.5,elo0=0.5, beta=0.1 ") == SprtSpec(0.5, 2.5, 0.05, 0.1)
    assert SprtSpec.parse(str(SprtSpec(0, 5, 0.01, 0.02))) == SprtSpec(0, 5, 0.01, 0.02)


def test_spec_takes_any_real_number() -> None:
    spec = SprtSpec(np.int64(0), np.float64(10.0), alpha=np.float32(0.05))  # type: ignore[arg-type]
    assert spec == SprtSpec(0, 10, alpha=float(np.float32(0.05)))
    assert isinstance(spec.elo0, float)
    with pytest.raises(ValueError, match="finite number"):
        SprtSpec("0", 10)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "needs elo0 and elo1"),
        ("elo0=0", "needs elo1"),
        ("elo0=0 elo1=10 gamma=1", "unknown SPRT setting 'gamma'"),
        ("elo0=0 elo1=ten", "elo1='ten' is not a number"),
        ("elo0=0 elo1", "not KEY=VALUE"),
        ("elo0=0 elo0=1 elo1=5", "given twice"),
        ("elo0=10 elo1=0", "elo0 < elo1"),
        ("elo0=5 elo1=5", "elo0 < elo1"),
        ("elo0=0 elo1=10 alpha=0", "alpha is an error rate"),
        ("elo0=0 elo1=10 beta=0.7", "beta is an error rate"),
        ("elo0=nan elo1=10", "finite"),
        ("elo0=0 elo1=inf", "finite"),
    ],
)
def test_parse_rejects_bad_text_clearly(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SprtSpec.parse(text)


# ---------------------------------------------------------------- the log-likelihood ratio


def test_llr_trinomial_by_hand() -> None:
    # H0: 0 Elo (s0 = 0.5), H1: 190.85 Elo (s1 = 0.75). 60 W / 20 D / 20 L: m = 0.7, v = 0.16 (no empty
    # class). r0 = 0.16 + 0.2² = 0.2, r1 = 0.16 + 0.05² = 0.1625; LLR = 100/2 · ln(0.2/0.1625) = 10.3819.
    spec = SprtSpec(0, ELO_OF_SCORE_075)
    assert llr_trinomial(Trinomial(60, 20, 20), spec) == pytest.approx(50 * math.log(0.2 / 0.1625), rel=1e-9)
    assert llr_trinomial(Trinomial(60, 20, 20), spec) == pytest.approx(10.3819, abs=1e-4)


def test_llr_pentanomial_by_hand() -> None:
    # Pairs (5, 10, 40, 30, 15): m = 0.6, v = 0.065 over 100 pairs (see test_lab_stats).
    # r0 = 0.065 + 0.1² = 0.075, r1 = 0.065 + 0.15² = 0.0875; LLR = 50 · ln(0.075/0.0875) = -7.7075.
    spec = SprtSpec(0, ELO_OF_SCORE_075)
    assert llr_pentanomial(Pentanomial((5, 10, 40, 30, 15)), spec) == pytest.approx(-7.7075, abs=1e-4)


def test_llr_of_nothing_is_zero() -> None:
    spec = SprtSpec(0, 10)
    assert llr_trinomial(Trinomial(0, 0, 0), spec) == 0.0
    assert llr_pentanomial(Pentanomial((0, 0, 0, 0, 0)), spec) == 0.0


def test_llr_midway_between_the_hypotheses_is_zero() -> None:
    # m = (s0 + s1)/2 makes r0 = r1 whatever the variance: -10/+10 around 50 %.
    assert llr_trinomial(Trinomial(40, 20, 40), SprtSpec(-10, 10)) == pytest.approx(0.0, abs=1e-12)


def test_llr_sign_follows_the_score() -> None:
    spec = SprtSpec(0, 10)
    assert llr_trinomial(Trinomial(520, 100, 380), spec) > 0  # far above s1
    assert llr_trinomial(Trinomial(380, 100, 520), spec) < 0  # far below s0


def test_first_games_won_do_not_end_the_test() -> None:
    # With no spread in the sample the linear form N(s1-s0)(2m-s0-s1)/(2v) would jump past the bound on
    # one win (v is 0, or 0.001-small with the regularisation); the log form moves by a fraction.
    spec = SprtSpec(0, 10)
    for wins in (1, 2, 5):
        llr = llr_trinomial(Trinomial(wins, 0, 0), spec)
        assert 0 < llr < 0.2 * wins
        assert sprt_verdict(llr, spec, (MIN_VARIED_SAMPLES, 0, MIN_VARIED_SAMPLES)) is None  # on the bound's side
    assert math.isfinite(llr_trinomial(Trinomial(0, 7, 0), SprtSpec(-10, 0)))  # m = s1 with v = 0


def bisect_root(f: Callable[[float], float], low: float, high: float) -> float:
    """The root of a function that falls from positive at ``low`` to negative at ``high``, by bisection
    to the last bit (a reference check wants it plain and certain, not fast)."""
    assert f(low) > 0 > f(high)
    while True:
        mid = (low + high) / 2
        if mid in (low, high):
            return mid
        low, high = (mid, high) if f(mid) > 0 else (low, mid)


def _exact_gsprt_llr(counts: npt.ArrayLike, values: npt.ArrayLike, s0: float, s1: float) -> float:
    """The exact generalized LLR: the log-likelihood of the sample under the multinomial of mean s1 nearest
    to it (maximum likelihood) minus the same for s0. Maximising sum n_i ln q_i under sum q_i = 1 and
    sum q_i x_i = s gives q_i = p_i / (1 + lam (x_i - s)), lam the root of sum p_i (x_i - s) / (1 + lam (x_i - s)).
    Empty classes weigh 0.001, as in the code under test."""
    n = np.asarray(counts, dtype=float)
    x = np.asarray(values, dtype=float)
    n = np.where(n > 0, n, 1e-3)
    p = n / n.sum()

    def log_ratio_to_mle(s: float) -> npt.NDArray[np.float64]:
        a = x - s
        lam = bisect_root(lambda t: float(np.sum(p * a / (1 + t * a))), -1 / a.max() + 1e-12, -1 / a.min() - 1e-12)
        return np.asarray(np.log1p(lam * a))  # ln(p_i / q_i)

    return float(n.sum() * np.sum(p * (log_ratio_to_mle(s0) - log_ratio_to_mle(s1))))


@pytest.mark.parametrize(
    ("counts", "values", "elo0", "elo1"),
    [
        ((900, 300, 1000), GAME_SCORES, 0, 10),
        ((420, 150, 430), GAME_SCORES, 0, 10),
        ((2010, 5300, 2150), GAME_SCORES, -5, 5),
        ((300, 80, 380), GAME_SCORES, 0, 25),
        # fishtest's own sample (its stat_util self-test) as pentanomial pairs, bounds -3/1
        ((10789, 19328, 33806, 19402, 10543), PAIR_SCORES, -3, 1),
        ((40, 180, 420, 230, 50), PAIR_SCORES, 0, 10),
    ],
)
def test_llr_matches_the_exact_gsprt_on_real_sized_samples(
    counts: tuple[int, ...], values: tuple[float, ...], elo0: float, elo1: float
) -> None:
    spec = SprtSpec(elo0, elo1)
    s0, s1 = spec.scores
    exact = _exact_gsprt_llr(counts, values, s0, s1)
    ours = float(llr_from_counts(counts, values, spec))
    assert ours == pytest.approx(exact, rel=0.01, abs=0.01)
    # and the linear form the issue quotes, N(s1-s0)(2m-s0-s1)/(2v), agrees to first order
    n, x = np.asarray(counts, dtype=float), np.asarray(values)
    mean = float((n * x).sum() / n.sum())
    var = float((n * (x - mean) ** 2).sum() / n.sum())
    linear = n.sum() * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var)
    assert ours == pytest.approx(linear, rel=0.02, abs=0.02)


@given(st.lists(st.integers(0, 500), min_size=3, max_size=3), st.lists(st.integers(0, 200), min_size=5, max_size=5))
def test_vectorised_llr_is_the_scalar_one(trinomial: list[int], pentanomial: list[int]) -> None:
    spec = SprtSpec(-3, 7)
    t = Trinomial(trinomial[2], trinomial[1], trinomial[0])
    p = Pentanomial((pentanomial[0], pentanomial[1], pentanomial[2], pentanomial[3], pentanomial[4]))
    batch = llr_from_counts([t.counts, (0, 0, 0), t.counts], GAME_SCORES, spec)
    assert batch.shape == (3,)
    assert batch[0] == batch[2] == pytest.approx(llr_trinomial(t, spec))
    assert batch[1] == 0.0
    assert math.isfinite(llr_pentanomial(p, spec))


def test_llr_counts_must_match_the_values() -> None:
    with pytest.raises(ValueError, match="must match"):
        llr_from_counts((1, 2), GAME_SCORES, SprtSpec(0, 10))


def test_verdict_at_the_bounds() -> None:
    spec = SprtSpec(0, 10)
    varied = (5, 0, 0, 0, 5)  # ten pairs, five off the commonest class ...
    spread = (MIN_VARIED_SAMPLES, 0, 0, 0, MIN_VARIED_SAMPLES)  # ... and enough to believe their spread
    assert sprt_verdict(spec.upper, spec, varied) is None
    assert sprt_verdict(spec.upper, spec, spread) == "H1"
    assert sprt_verdict(spec.upper - 1e-9, spec, spread) is None
    assert sprt_verdict(0.0, spec, spread) is None
    assert sprt_verdict(spec.lower + 1e-9, spec, spread) is None
    assert sprt_verdict(spec.lower, spec, spread) == "H0"
    assert sprt_verdict(-100.0, spec, spread) == "H0"


def test_a_handful_of_pairs_without_spread_decides_nothing() -> None:
    """Three colour-swapped pairs that each split 1-1 have (almost) no spread, and the ratio alone would
    accept H0 after six games (seen in a real test of the chase model, which then won by +78 Elo)."""
    spec = SprtSpec(0, 25)
    split = Pentanomial((0, 0, 3, 0, 0))
    assert llr_pentanomial(split, spec) <= spec.lower  # what the ratio says ...
    assert sprt_verdict(llr_pentanomial(split, spec), spec, split.counts) is None  # ... is not a verdict


def test_pairs_played_alike_decide_nothing_until_the_spread_shows() -> None:
    """A change that alters few games plays most self-play pairs exactly as the baseline, and each such
    pair splits 1-1: ten of them gave "H0 accepted" at LLR -15.4 before any game the change decided was
    seen (issue 23). The verdict waits for ten pairs off the commonest class, or a hundred in all."""
    spec = SprtSpec(0, 25)
    ten = Pentanomial((0, 0, 10, 0, 0))
    assert llr_pentanomial(ten, spec) < -15  # what the ratio says ...
    assert sprt_verdict(llr_pentanomial(ten, spec), spec, ten.counts) is None  # ... is not a verdict yet
    nine_off = Pentanomial((0, 0, 40, MIN_VARIED_SAMPLES - 1, 0))
    assert varied_samples(nine_off.counts) == MIN_VARIED_SAMPLES - 1
    assert sprt_verdict(llr_pentanomial(nine_off, spec), spec, nine_off.counts) is None
    ten_off = Pentanomial((0, 2, 40, MIN_VARIED_SAMPLES - 3, 1))
    assert varied_samples(ten_off.counts) == MIN_VARIED_SAMPLES
    assert sprt_verdict(spec.lower, spec, ten_off.counts) == "H0"
    alike = Pentanomial((0, 0, ALIKE_SAMPLES_FOR_VERDICT, 0, 0))
    assert sprt_verdict(llr_pentanomial(alike, spec), spec, alike.counts) == "H0"
    assert sprt_verdict(-100.0, spec, (0, 0, ALIKE_SAMPLES_FOR_VERDICT - 1, 0, 0)) is None


# ---------------------------------------------------------------- simulated tests


def _trinomial_probabilities(elo: float, draw_ratio: float) -> npt.NDArray[np.float64]:
    """Loss, draw, win probabilities of a player `elo` stronger at this draw ratio."""
    score = elo_to_score(elo)
    return np.array([1 - score - draw_ratio / 2, draw_ratio, score - draw_ratio / 2])


def _run_sprt(
    rng: np.random.Generator, probabilities: npt.NDArray[np.float64], values: tuple[float, ...], spec: SprtSpec,
    max_samples: int = 200_000, chunk: int = 8192,
) -> tuple[str | None, int]:
    """One SPRT on a stream of results drawn from `probabilities`, checked after every result."""
    totals = np.zeros(len(values))
    done = 0
    while done < max_samples:
        size = min(chunk, max_samples - done)
        outcomes = rng.choice(len(values), size=size, p=probabilities)
        running = totals + np.cumsum(np.eye(len(values))[outcomes], axis=0)
        llr = llr_from_counts(running, values, spec)
        crossed = np.flatnonzero(((llr >= spec.upper) | (llr <= spec.lower)) & verdict_allowed(running))
        if crossed.size:
            first = int(crossed[0])
            counts = [int(c) for c in running[first]]
            return sprt_verdict(float(llr[first]), spec, counts), done + first + 1
        totals, done = running[-1], done + size
    return None, done


RUNS = 200


def _simulate(elo: float, spec: SprtSpec, seed: int) -> tuple[dict[str | None, int], float]:
    rng = np.random.default_rng(seed)
    probabilities = _trinomial_probabilities(elo, draw_ratio=0.2)
    verdicts: dict[str | None, int] = {"H0": 0, "H1": 0, None: 0}
    lengths = []
    for _ in range(RUNS):
        verdict, games = _run_sprt(rng, probabilities, GAME_SCORES, spec)
        verdicts[verdict] += 1
        lengths.append(games)
    return verdicts, float(np.mean(lengths))


# 200 runs at a true rate of 5 % wrong verdicts: about 10 wrong, standard deviation 3; the tolerance of
# 0.04 (up to 18 wrong) keeps the test a check of the error rates, not of the seed.
TOLERANCE = 0.04


def test_sprt_accepts_h1_for_a_player_20_elo_stronger() -> None:
    spec = SprtSpec.parse("elo0=0 elo1=10 alpha=0.05 beta=0.05")
    verdicts, mean_games = _simulate(20.0, spec, seed=1)
    assert verdicts[None] == 0
    assert verdicts["H1"] / RUNS >= 1 - spec.beta - TOLERANCE
    # Wald's expected length (no overshoot) is a slight underestimate of the real one.
    assert mean_games == pytest.approx(expected_games(spec, draw_ratio=0.2, true_elo=20.0), rel=0.15)


def test_sprt_accepts_h0_for_an_equal_player() -> None:
    spec = SprtSpec.parse("elo0=0 elo1=10 alpha=0.05 beta=0.05")
    verdicts, mean_games = _simulate(0.0, spec, seed=2)
    assert verdicts[None] == 0
    assert verdicts["H0"] / RUNS >= 1 - spec.alpha - TOLERANCE
    assert mean_games == pytest.approx(expected_games(spec, draw_ratio=0.2, true_elo=0.0), rel=0.15)


def test_sprt_error_rate_at_elo1_is_beta() -> None:
    # The hardest case for H1: the player is exactly elo1 stronger; the test accepts H1 at rate 1 - beta.
    spec = SprtSpec(0, 25, alpha=0.05, beta=0.1)
    verdicts, _ = _simulate(25.0, spec, seed=3)
    assert verdicts["H1"] / RUNS >= 1 - spec.beta - TOLERANCE


def _first_crossing(classes: npt.NDArray[np.int_], values: tuple[float, ...], spec: SprtSpec) -> tuple[str | None, int]:
    """The verdict and length of an SPRT over this whole stream of result classes (None: no verdict in it)."""
    running = np.cumsum(np.eye(len(values))[classes], axis=0)
    llr = llr_from_counts(running, values, spec)
    crossed = np.flatnonzero(((llr >= spec.upper) | (llr <= spec.lower)) & verdict_allowed(running))
    if not crossed.size:
        return None, len(classes)
    counts = [int(c) for c in running[crossed[0]]]
    return sprt_verdict(float(llr[crossed[0]]), spec, counts), int(crossed[0]) + 1


def _lucky_pairs(
    rng: np.random.Generator, game: npt.NDArray[np.float64], luck: float, count: int
) -> tuple[npt.NDArray[np.int_], npt.NDArray[np.int_]]:
    """The result classes (0 loss, 1 draw, 2 win) of both games of `count` pairs: with probability `luck`
    the setups decide (a win, then a loss with colours swapped), else two independent games of law `game`."""
    decided = rng.random(count) < luck
    return (np.where(decided, 2, rng.choice(3, size=count, p=game)),
            np.where(decided, 0, rng.choice(3, size=count, p=game)))


def test_pentanomial_sprt_on_paired_games_with_setup_luck() -> None:
    # Pairs in which, 40 % of the time, the setups decide (each side wins with the good one: a win and a
    # loss, 1 point) and otherwise two independent games. The pentanomial test reaches the right verdict,
    # and sooner than the trinomial one on the very same games, which counts the setups' noise as the engines'.
    spec = SprtSpec(0, 10)
    rng = np.random.default_rng(4)
    luck = 0.4
    for elo, right in ((20.0, "H1"), (0.0, "H0")):
        game_score = (elo_to_score(elo) - luck / 2) / (1 - luck)  # gives the pairs the score of `elo`
        game = np.array([1 - game_score - 0.1, 0.2, game_score - 0.1])

        pair_verdicts, pair_lengths, game_lengths = [], [], []
        for _ in range(100):
            first, second = _lucky_pairs(rng, game, luck, 4096)
            while True:  # the same stream of games, counted as pairs (class = points·2) and as single games
                by_pairs = _first_crossing(first + second, PAIR_SCORES, spec)
                by_games = _first_crossing(np.column_stack([first, second]).ravel(), GAME_SCORES, spec)
                if by_pairs[0] is not None and by_games[0] is not None:
                    break
                extra = _lucky_pairs(rng, game, luck, len(first))
                first, second = np.concatenate([first, extra[0]]), np.concatenate([second, extra[1]])
            pair_verdicts.append(by_pairs[0])
            pair_lengths.append(2 * by_pairs[1])
            game_lengths.append(by_games[1])
        assert pair_verdicts.count(right) / 100 >= 0.95 - TOLERANCE
        assert np.mean(pair_lengths) < 0.8 * np.mean(game_lengths)


# ---------------------------------------------------------------- Wald's operating characteristic


def test_acceptance_probability_is_alpha_at_elo0_and_one_minus_beta_at_elo1() -> None:
    spec = SprtSpec(0, 10, alpha=0.05, beta=0.1)
    assert acceptance_probability(spec, true_elo=0.0) == pytest.approx(0.05, abs=1e-9)
    assert acceptance_probability(spec, true_elo=10.0) == pytest.approx(0.9, abs=1e-9)
    # midway between the hypotheses' scores the drift is 0 and the LLR exits at the upper bound with
    # probability -lower / (upper - lower)
    midway = score_to_elo(sum(spec.scores) / 2)
    assert acceptance_probability(spec, true_elo=midway) == pytest.approx(-spec.lower / (spec.upper - spec.lower))
    far = [acceptance_probability(spec, true_elo=elo) for elo in (-300, -20, 0, 5, 10, 20, 300)]
    assert far == sorted(far)
    assert far[0] == pytest.approx(0.0, abs=1e-12)
    assert far[-1] == pytest.approx(1.0, abs=1e-12)


def test_expected_games_by_hand() -> None:
    # At elo1 the drift per game is (s1-s0)²/(2v): for 0/5 with 20 % draws, s1 - s0 = 0.0071945,
    # v = s1 - 0.05 - s1² = 0.1999968, drift 1.29403e-4; E[N] = (0.95·2.944439 - 0.05·2.944439) / drift = 20478.
    spec = SprtSpec(0, 5)
    assert expected_games(spec, draw_ratio=0.2) == pytest.approx(20478, rel=1e-3)
    # At the midpoint the drift is 0: E[N] = -lower·upper / variance, variance = (s1-s0)²/v.
    midpoint = expected_games(spec, draw_ratio=0.2, true_elo=2.5)
    s0, s1 = spec.scores
    v = elo_to_score(2.5) - 0.05 - elo_to_score(2.5) ** 2
    assert midpoint == pytest.approx(-spec.lower * spec.upper * v / (s1 - s0) ** 2, rel=1e-6)
    # more draws, less noise per game, shorter tests; narrower bounds, longer ones
    assert expected_games(spec, draw_ratio=0.5) < expected_games(spec, draw_ratio=0.2)
    assert expected_games(SprtSpec(0, 10)) < expected_games(spec) < expected_games(SprtSpec(0, 2.5))


@pytest.mark.parametrize("bounds", [(0, 10), (-5, 5), (0, 5), (0, 25)])
def test_expected_games_is_continuous_through_zero_drift(bounds: tuple[float, float]) -> None:
    # Exactly midway between the hypotheses' scores the drift vanishes and Wald's formula is 0/0:
    # the length there is -lower·upper / variance, and just beside it the general formula agrees.
    spec = SprtSpec(*bounds)
    s0, s1 = spec.scores
    midway = score_to_elo((s0 + s1) / 2)
    v = elo_to_score(midway) - 0.05 - elo_to_score(midway) ** 2
    at_zero_drift = -spec.lower * spec.upper * v / (s1 - s0) ** 2
    assert expected_games(spec, draw_ratio=0.2, true_elo=midway) == pytest.approx(at_zero_drift, rel=1e-6)
    for step in (1e-9, 1e-6, 1e-3):
        for beside in (midway - step, midway + step):
            assert expected_games(spec, draw_ratio=0.2, true_elo=beside) == pytest.approx(at_zero_drift, rel=1e-3)
    assert expected_games(spec, draw_ratio=0.2, true_elo=midway + 1) < at_zero_drift


def test_expected_games_rejects_impossible_draw_ratios() -> None:
    with pytest.raises(ValueError, match="draw ratio"):
        expected_games(SprtSpec(0, 10), draw_ratio=1.0)
    with pytest.raises(ValueError, match="cannot give the score"):
        expected_games(SprtSpec(0, 10), draw_ratio=0.9, true_elo=400)


def test_docs_table_of_expected_games_is_the_functions() -> None:
    # docs/lab.md, *How many games an SPRT needs*, quotes expected_games: keep the two in step.
    text = (Path(__file__).resolve().parent.parent / "docs" / "lab.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (−?\d+) / (\d+) \|((?: [\d ]+ \|){5})$", text, flags=re.MULTILINE)
    assert len(rows) == 4
    for low, high, cells in rows:
        spec = SprtSpec(float(low.replace("−", "-")), float(high))
        midway = score_to_elo(sum(spec.scores) / 2)
        quoted = [int(cell.replace(" ", "")) for cell in cells.strip(" |").split("|")]
        computed = [
            round(expected_games(spec, draw_ratio=0.2, true_elo=elo))
            for elo in (spec.elo0 - 10, spec.elo0, midway, spec.elo1, spec.elo1 + 10)
        ]
        assert quoted == computed, f"docs/lab.md row {low} / {high}"
