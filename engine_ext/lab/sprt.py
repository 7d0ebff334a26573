"""The sequential probability ratio test of a match, in the manner of fishtest. Pure functions, no I/O.

H0: the first engine's logistic Elo advantage is ``elo0``; H1: it is ``elo1``. After every result the
match computes the log-likelihood ratio of H1 against H0 and stops when it leaves the interval
(``lower``, ``upper``) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha)): at ``upper`` it accepts H1,
at ``lower`` H0. alpha is the chance of accepting H1 when H0 is true, beta of accepting H0 when H1 is.

The ratio is the *generalized* one (GSPRT): the results are not assumed to follow a fixed model of
draws; only their mean matters, and the likelihood under each hypothesis is that of the nearest
distribution with the hypothesis's expected score (s0 = elo_to_score(elo0), s1 = elo_to_score(elo1)).
fishtest finds those distributions exactly (a one-dimensional root search per hypothesis); Michel Van
den Bergh's notes on the GSPRT, on which fishtest's statistics rest, show that for N results with sample
mean m and sample variance v the ratio is, to a very good approximation, the closed form

    LLR = N/2 · ln(r0 / r1),   r_s = v + (m - s)²  (the mean squared distance of the results from s),

(fishtest keeps it as its alternative, ``LLR_alt``), whose first-order expansion is the formula
OpenBench and fastchess print, LLR ≈ N·(s1 - s0)·(2m - s0 - s1) / (2v). We compute the closed log form:
it is within 1 % of the exact ratio on real-sized samples (tests/test_lab_sprt.py checks both), it
needs no root search (so it runs over whole arrays of running counts at once), and it stays bounded on
tiny samples with almost no spread (the first few games all won), where the linear form explodes. As
fishtest does, an empty result class counts 0.001 times, so that a sample with no spread still gives
a finite LLR. The same formula serves single games (values 0, 0.5, 1, N games) and colour-swapped
pairs (values 0, 0.25, 0.5, 0.75, 1, N pairs: the pentanomial model, which sees the pairs'
correlation).

``expected_games`` gives the expected length of a test (Wald's approximation: the LLR as a Brownian
motion with the drift and variance of one game's increment, no overshoot of the bounds).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from engine_ext.lab.stats import GAME_SCORES, PAIR_SCORES, Pentanomial, Trinomial, elo_to_score

# The weight an empty result class gets in the ratio (fishtest's regularisation).
EMPTY_CLASS_WEIGHT = 1e-3
# No verdict while fewer than this many samples (pairs, or games for single-game counts) lie outside the
# commonest result class, unless there are ``ALIKE_SAMPLES_FOR_VERDICT`` in all. The GSPRT estimates the
# results' spread from the sample itself, and a sample may show almost none: three colour-swapped pairs
# that each split 1-1 have variance ~2e-4 (the empty classes' weight alone), and the ratio says H0 at
# LLR -2.97 against elo1 = 25 after six games (a change that then won by +78 Elo). A change that alters
# only some games (an endgame setting) plays most pairs exactly as the baseline does, and a self-play pair
# played twice alike splits 1-1: ten such pairs gave "H0 accepted" at LLR -15.4 after twenty games
# (issue 23, a global search near the end of the game), before any game the change decided had been
# seen. The spread has to be seen before it is believed; a hundred samples alike are a verdict of their
# own (the change alters fewer than about 3 % of them).
MIN_VARIED_SAMPLES = 10
ALIKE_SAMPLES_FOR_VERDICT = 100

_SPEC_KEYS = ("elo0", "elo1", "alpha", "beta")


@dataclass(frozen=True)
class SprtSpec:
    """The two hypotheses (Elo of the first engine over the second) and the two error rates."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        for name in _SPEC_KEYS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"SPRT {name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not self.elo0 < self.elo1:
            raise ValueError(f"SPRT needs elo0 < elo1, got elo0={self.elo0:g} elo1={self.elo1:g}")
        for name in ("alpha", "beta"):
            value = getattr(self, name)
            if not 0.0 < value < 0.5:
                raise ValueError(f"SPRT {name} is an error rate strictly between 0 and 0.5, got {value:g}")

    @classmethod
    def parse(cls, text: str) -> SprtSpec:
        """Read ``"elo0=0 elo1=10 alpha=0.05 beta=0.05"`` (spaces or commas between; alpha, beta optional)."""
        values: dict[str, float] = {}
        for item in (part for part in re.split(r"[\s,]+", text.strip()) if part):
            key, sep, raw = item.partition("=")
            key = key.strip().lower()
            if not sep:
                raise ValueError(f"SPRT setting {item!r} is not KEY=VALUE (e.g. 'elo0=0 elo1=10 alpha=0.05 beta=0.05')")
            if key not in _SPEC_KEYS:
                raise ValueError(f"unknown SPRT setting {key!r}; the settings are {', '.join(_SPEC_KEYS)}")
            if key in values:
                raise ValueError(f"SPRT setting {key!r} given twice")
            try:
                values[key] = float(raw)
            except ValueError:
                raise ValueError(f"SPRT setting {key}={raw!r} is not a number") from None
        missing = [key for key in ("elo0", "elo1") if key not in values]
        if missing:
            raise ValueError(f"SPRT needs {' and '.join(missing)} (e.g. 'elo0=0 elo1=10 alpha=0.05 beta=0.05')")
        return cls(**values)

    @property
    def lower(self) -> float:
        """The LLR at or below which the test accepts H0: ln(beta / (1 - alpha))."""
        return math.log(self.beta / (1.0 - self.alpha))

    @property
    def upper(self) -> float:
        """The LLR at or above which the test accepts H1: ln((1 - beta) / alpha)."""
        return math.log((1.0 - self.beta) / self.alpha)

    @property
    def scores(self) -> tuple[float, float]:
        """s0, s1: the expected scores of elo0 and elo1."""
        return elo_to_score(self.elo0), elo_to_score(self.elo1)

    def __str__(self) -> str:
        return f"elo0={self.elo0:g} elo1={self.elo1:g} alpha={self.alpha:g} beta={self.beta:g}"


def llr_from_counts(counts: npt.ArrayLike, values: npt.ArrayLike, spec: SprtSpec) -> npt.NDArray[np.float64]:
    """The GSPRT log-likelihood ratio of samples given as counts of each result value.

    ``counts`` has the result classes on its last axis (any leading axes: many samples at once, e.g. the
    running counts of a whole simulated match); ``values`` the score of each class. A sample of no
    results has LLR 0. See the module docstring for the formula.
    """
    n = np.asarray(counts, dtype=np.float64)
    x = np.asarray(values, dtype=np.float64)
    if n.shape[-1:] != x.shape:
        raise ValueError(f"counts' last axis ({n.shape}) must match the result values ({x.shape})")
    played = n.sum(axis=-1)
    weights = np.where(n > 0, n, EMPTY_CLASS_WEIGHT)
    size = weights.sum(axis=-1)
    mean = (weights * x).sum(axis=-1) / size
    variance = (weights * (x - mean[..., None]) ** 2).sum(axis=-1) / size
    s0, s1 = spec.scores
    r0 = variance + (mean - s0) ** 2
    r1 = variance + (mean - s1) ** 2
    llr = 0.5 * size * np.log(r0 / r1)
    return np.asarray(np.where(played > 0, llr, 0.0), dtype=np.float64)


def llr_trinomial(t: Trinomial, spec: SprtSpec) -> float:
    """The LLR of single games (each taken as independent)."""
    return float(llr_from_counts(t.counts, GAME_SCORES, spec))


def llr_pentanomial(p: Pentanomial, spec: SprtSpec) -> float:
    """The LLR of colour-swapped game pairs (the pentanomial model)."""
    return float(llr_from_counts(p.counts, PAIR_SCORES, spec))


def varied_samples(counts: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The samples outside the commonest result class, for samples counted by class (the classes on the
    last axis, any leading axes: e.g. the running counts of a whole match)."""
    n = np.asarray(counts, dtype=np.int64)
    return np.asarray(n.sum(axis=-1) - n.max(axis=-1, initial=0), dtype=np.int64)


def verdict_allowed(counts: npt.ArrayLike) -> npt.NDArray[np.bool_]:
    """Whether samples counted by result class (as ``varied_samples`` takes them) may carry a verdict: at
    least ``MIN_VARIED_SAMPLES`` outside the commonest class, or ``ALIKE_SAMPLES_FOR_VERDICT`` in all."""
    samples = np.asarray(counts, dtype=np.int64).sum(axis=-1)
    return np.asarray((varied_samples(counts) >= MIN_VARIED_SAMPLES) | (samples >= ALIKE_SAMPLES_FOR_VERDICT))


def sprt_verdict(llr: float, spec: SprtSpec, counts: Sequence[int]) -> Literal["H0", "H1"] | None:
    """"H1" at or above the upper bound, "H0" at or below the lower one, else None (play on); None too
    while ``verdict_allowed`` says the samples cannot carry one. ``counts``: the samples by result class
    (``Pentanomial.counts`` or ``Trinomial.counts``)."""
    if not verdict_allowed(counts):
        return None
    if llr >= spec.upper:
        return "H1"
    if llr <= spec.lower:
        return "H0"
    return None


@dataclass(frozen=True)
class _Increment:
    """Drift and variance, per game, of the LLR's normal approximation."""

    drift: float
    variance: float


def _per_game_increment(spec: SprtSpec, draw_ratio: float, true_elo: float) -> _Increment:
    if not 0.0 <= draw_ratio < 1.0:
        raise ValueError(f"a draw ratio is a fraction in [0, 1), got {draw_ratio!r}")
    mean = elo_to_score(true_elo)
    wins, losses = mean - draw_ratio / 2.0, 1.0 - mean - draw_ratio / 2.0
    if wins < 0.0 or losses < 0.0:
        raise ValueError(f"a draw ratio of {draw_ratio:g} cannot give the score {mean:.3f} of {true_elo:g} Elo")
    game_variance = wins + draw_ratio / 4.0 - mean * mean
    s0, s1 = spec.scores
    # One game's increment of N·(s1-s0)·(2m-s0-s1)/(2v) is (s1-s0)·(2x-s0-s1)/(2v) for its score x.
    return _Increment(
        drift=(s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * game_variance),
        variance=(s1 - s0) ** 2 / game_variance,
    )


def acceptance_probability(spec: SprtSpec, *, draw_ratio: float = 0.2, true_elo: float) -> float:
    """The probability that the test accepts H1 when the true difference is ``true_elo`` (Wald's approximation)."""
    step = _per_game_increment(spec, draw_ratio, true_elo)
    a, b = spec.lower, spec.upper
    theta = -2.0 * step.drift / step.variance  # exp(theta·LLR) is a martingale
    if abs(theta * (b - a)) < 1e-12:  # no drift: the limit, to 12 digits
        return -a / (b - a)
    # P(upper first) = (1 - e^(θa)) / (e^(θb) - e^(θa)) = expm1(-θa) / expm1(θ(b - a)), the second form
    # finite for any θ < 0; for a large θ > 0 it tends to e^(-θb)·(1 - e^(θa)), which does not overflow.
    span = theta * (b - a)
    if span > 700.0:
        return float(math.exp(-theta * b) * -math.expm1(theta * a))
    return float(math.expm1(-theta * a) / math.expm1(span))


def expected_games(spec: SprtSpec, *, draw_ratio: float = 0.2, true_elo: float | None = None) -> float:
    """The expected number of games the test plays before it stops, by Wald's approximation.

    ``true_elo``: the real difference (default: ``elo1``, the length of a test that should pass);
    ``draw_ratio``: the share of drawn games. For paired games the pentanomial test usually needs fewer
    (setup luck cancels out); this is the independent-games figure.
    """
    elo = spec.elo1 if true_elo is None else true_elo
    step = _per_game_increment(spec, draw_ratio, elo)
    a, b = spec.lower, spec.upper
    theta = -2.0 * step.drift / step.variance
    # Wald: E[N] = E[LLR at the stop] / drift. Both vanish as the drift does (midway between the
    # hypotheses); there the limit -a·b / variance holds to within about |θ(b - a)|, so below 1e-7 it
    # is taken, and above, the quotient loses no more than about 1e-9 of its precision to cancellation.
    if abs(theta * (b - a)) < 1e-7:
        return -a * b / step.variance
    p = acceptance_probability(spec, draw_ratio=draw_ratio, true_elo=elo)
    return (p * b + (1.0 - p) * a) / step.drift
