"""Match statistics: score, logistic Elo with its interval, LOS and draw ratio. Pure functions, no I/O.

Two ways to count a match, as chess testing frameworks (cutechess-cli, fastchess, fishtest) do:

- ``Trinomial``: wins, draws and losses of the first engine, every game taken as independent.
- ``Pentanomial``: the colour-swapped game pairs (same two setups, colours swapped) counted by the
  points the first engine made in the pair: 0, 0.5, 1, 1.5 or 2. The two games of a pair share their
  setups, so their results are correlated; taking the pair as the unit of the sample measures that
  correlation instead of assuming it away, and gives the honest (usually narrower) interval.

Both give an ``EloEstimate``: the score turned into a logistic Elo difference, the interval from the
normal approximation of the mean score mapped through the same curve (so it is asymmetric in Elo), and
the likelihood of superiority. docs/lab.md, section *Statistics*, has the formulas.

Edge cases have fixed meanings rather than exceptions:

- no games: Elo 0, score 0.5, interval (-inf, +inf), LOS 0.5 — nothing is known;
- a score of 1 (all won) or 0 (all lost): Elo +inf or -inf (not clamped: the logistic curve has no
  finite Elo there, and a clamp would pass an invented number on as a measurement);
- a sample with no spread at all (every game, or every pair, the same result, e.g. all won or all
  drawn): the normal approximation has nothing to measure the spread from, so the interval is
  (-inf, +inf);
- an interval end past a score of 0 or 1: that end is -inf or +inf.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from dataclasses import dataclass
from statistics import NormalDist

# The standard normal distribution: Φ is its cdf, the interval's z its inv_cdf (the stdlib's, no scipy).
STANDARD_NORMAL = NormalDist()

# Points a game gives the first engine: loss, draw, win.
GAME_SCORES: tuple[float, float, float] = (0.0, 0.5, 1.0)
# The mean score of a game pair, by the pair's points 0, 0.5, 1, 1.5, 2.
PAIR_SCORES: tuple[float, float, float, float, float] = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class Trinomial:
    """Wins, draws and losses of the first engine."""

    wins: int
    draws: int
    losses: int

    def __post_init__(self) -> None:
        for name in ("wins", "draws", "losses"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"Trinomial.{name} must be a count (an int >= 0), got {value!r}")
            object.__setattr__(self, name, int(value))  # numpy integers become plain ints

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    @property
    def score(self) -> float:
        """The first engine's points per game (a win 1, a draw 0.5); 0.5 when no game was played."""
        if self.games == 0:
            return 0.5
        return (self.wins + 0.5 * self.draws) / self.games

    @property
    def counts(self) -> tuple[int, int, int]:
        """Losses, draws, wins: in the order of ``GAME_SCORES``."""
        return (self.losses, self.draws, self.wins)

    def __add__(self, other: Trinomial) -> Trinomial:
        return Trinomial(self.wins + other.wins, self.draws + other.draws, self.losses + other.losses)


@dataclass(frozen=True)
class Pentanomial:
    """Game pairs counted by the first engine's points in the pair: ``counts[k]`` pairs made k/2 points."""

    counts: tuple[int, int, int, int, int]

    def __post_init__(self) -> None:
        counts = tuple(self.counts)
        if len(counts) != 5:
            raise ValueError(f"Pentanomial.counts needs 5 counts (pairs scoring 0, 0.5, 1, 1.5, 2), got {counts!r}")
        for value in counts:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
                raise ValueError(f"Pentanomial.counts must be counts (ints >= 0), got {counts!r}")
        object.__setattr__(self, "counts", tuple(int(value) for value in counts))  # from a list or numpy ints

    @classmethod
    def from_pair_scores(cls, pair_scores: Iterable[float]) -> Pentanomial:
        """Count pairs from the first engine's points in each pair (0, 0.5, 1, 1.5 or 2)."""
        counts = [0, 0, 0, 0, 0]
        for points in pair_scores:
            half_points = round(points * 2) if math.isfinite(points) else -1
            if not 0 <= half_points <= 4 or abs(points * 2 - half_points) > 1e-9:
                raise ValueError(f"a game pair scores 0, 0.5, 1, 1.5 or 2 points, got {points!r}")
            counts[half_points] += 1
        return cls((counts[0], counts[1], counts[2], counts[3], counts[4]))

    @property
    def pairs(self) -> int:
        return sum(self.counts)

    @property
    def games(self) -> int:
        return 2 * self.pairs

    @property
    def score(self) -> float:
        """The first engine's points per game; 0.5 when no pair was played."""
        if self.pairs == 0:
            return 0.5
        return sum(n * s for n, s in zip(self.counts, PAIR_SCORES, strict=True)) / self.pairs

    def __add__(self, other: Pentanomial) -> Pentanomial:
        a, b = self.counts, other.counts
        return Pentanomial((a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4]))


@dataclass(frozen=True)
class EloEstimate:
    """An Elo difference (first engine minus second) with its interval; see the module docstring for ±inf."""

    elo: float
    low: float
    high: float
    los: float  # likelihood of superiority: the probability that the first engine is the stronger
    draw_ratio: float  # drawn games / games (trinomial); pairs scoring 1 point / pairs (pentanomial)
    score: float  # the first engine's points per game
    games: int


def score_to_elo(score: float) -> float:
    """The logistic Elo difference that gives this expected score: -400·log10(1/score - 1).

    0 gives -inf and 1 gives +inf (no finite difference gives a certain result); outside [0, 1] is an error.
    """
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"a score is a fraction in [0, 1], got {score!r}")
    if score == 0.0:
        return -math.inf
    if score == 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def elo_to_score(elo: float) -> float:
    """The expected score of a logistic Elo difference: 1 / (1 + 10^(-elo/400)); ±inf give 1 and 0."""
    if math.isnan(elo):
        raise ValueError("an Elo difference is a number, got nan")
    exponent = -elo / 400.0
    if exponent > 300.0:  # 10**exponent would overflow; the score is 0 to double precision
        return 0.0
    return 1.0 / (1.0 + 10.0**exponent)


def normal_quantile(confidence: float) -> float:
    """z of a two-sided interval of this confidence (1.959964 for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"a confidence is a probability strictly between 0 and 1, got {confidence!r}")
    return STANDARD_NORMAL.inv_cdf(0.5 + confidence / 2.0)


def mean_and_variance(counts: Iterable[int], values: Iterable[float]) -> tuple[int, float, float]:
    """Sample size, mean and (population) variance of a sample given as counts of each value."""
    pairs = list(zip(counts, values, strict=True))
    total = sum(n for n, _ in pairs)
    if total == 0:
        return 0, 0.5, 0.0
    mean = sum(n * v for n, v in pairs) / total
    variance = sum(n * (v - mean) ** 2 for n, v in pairs) / total
    return total, mean, max(variance, 0.0)


def _interval(mean: float, variance: float, size: int, confidence: float) -> tuple[float, float]:
    """The Elo interval of the normal approximation to the mean score, mapped through ``score_to_elo``."""
    if size == 0 or variance <= 0.0:
        return -math.inf, math.inf
    half_width = normal_quantile(confidence) * math.sqrt(variance / size)
    low_score, high_score = mean - half_width, mean + half_width
    low = -math.inf if low_score <= 0.0 else score_to_elo(low_score)
    high = math.inf if high_score >= 1.0 else score_to_elo(high_score)
    return low, high


def los_from_decisive(wins: int, losses: int) -> float:
    """Likelihood of superiority from the decisive games only: Φ((W - L) / sqrt(W + L)) (cutechess-cli's).

    No decisive game: 0.5.
    """
    if wins + losses == 0:
        return 0.5
    return STANDARD_NORMAL.cdf((wins - losses) / math.sqrt(wins + losses))


def elo_from_trinomial(t: Trinomial, confidence: float = 0.95) -> EloEstimate:
    """Elo, interval and LOS from W/D/L, games taken as independent (as cutechess-cli and fastchess do)."""
    normal_quantile(confidence)  # reject a bad confidence even when there is nothing to estimate
    size, mean, variance = mean_and_variance(t.counts, GAME_SCORES)
    if size == 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5, 0.0, 0.5, 0)
    low, high = _interval(mean, variance, size, confidence)
    return EloEstimate(
        elo=score_to_elo(mean),
        low=low,
        high=high,
        los=los_from_decisive(t.wins, t.losses),
        draw_ratio=t.draws / size,
        score=mean,
        games=size,
    )


def elo_from_pentanomial(p: Pentanomial, confidence: float = 0.95) -> EloEstimate:
    """Elo, interval and LOS with the game pair as the unit of the sample (fishtest's pentanomial model).

    The mean is the pair's mean score, the variance the variance of that mean over pairs; the LOS is
    Φ((mean - 0.5) / standard error), the normal approximation on the same sample (W and L of single
    games are not known from pair counts).
    """
    normal_quantile(confidence)
    size, mean, variance = mean_and_variance(p.counts, PAIR_SCORES)
    if size == 0:
        return EloEstimate(0.0, -math.inf, math.inf, 0.5, 0.0, 0.5, 0)
    low, high = _interval(mean, variance, size, confidence)
    if variance > 0.0:
        los = STANDARD_NORMAL.cdf((mean - 0.5) / math.sqrt(variance / size))
    else:  # every pair the same: certain, as far as this sample can tell
        los = 0.5 if mean == 0.5 else (1.0 if mean > 0.5 else 0.0)
    return EloEstimate(
        elo=score_to_elo(mean),
        low=low,
        high=high,
        los=los,
        draw_ratio=p.counts[2] / size,
        score=mean,
        games=2 * size,
    )
