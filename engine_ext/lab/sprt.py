"""The sequential probability ratio test of a match, in the manner of fishtest. Pure functions, no I/O.

H0: the first engine's logistic Elo advantage is ``elo0``; H1: it is ``elo1``. After every result the
match computes the log-likelihood ratio of H1 against H0 and stops when it leaves the interval
(``lower``, ``upper``) = (ln(beta / (1 - alpha)), ln((1 - beta) / alpha)): at ``upper`` it accepts H1,
at ``lower`` H0. alpha is the chance of accepting H1 when H0 is true, beta of accepting H0 when H1 is.

The ratio is the *generalized* one (GSPRT), fishtest's ``LLR_logistic``: the results are not assumed to
follow a fixed model of draws. Under each hypothesis the likelihood is that of the distribution over the
result classes, of expected score s0 = elo_to_score(elo0) (or s1), that is nearest to the sample (its
maximum-likelihood estimate); the ratio is N times the difference of the two mean log-likelihoods. For
a sample with class frequencies p_i of scores x_i that distribution is q_i = p_i / (1 + λ (x_i - s)),
λ the root of Σ p_i (x_i - s) / (1 + λ (x_i - s)) = 0 (Michel Van den Bergh's notes, on which
fishtest's statistics rest). We find λ by a safeguarded Newton iteration over whole arrays at once
(the running counts of a simulated match), in the variable ln(1 + λ (x_e - s)) of the extreme class
that λ's pole belongs to, so that a root next to the pole (the degenerate samples below) takes a few
steps like any other.

As fishtest does, an empty result class counts 0.001 times (``EMPTY_CLASS_WEIGHT``): the nearest
distribution may then give a result not yet seen a share of its own, which a sample without spread
needs. That is what makes degenerate samples come out right, and why the exact ratio is computed rather
than its closed approximation N/2 · ln(r0 / r1), r_s = v + (m - s)² (fishtest's ``LLR_alt``, which this
module computed until issue 33): the approximation treats the sample's variance v as the truth, and a
sample without spread has none but the regularisation's, ~2e-4. Ten colour-swapped pairs that each split
1-1 (a change that alters no game yet, self-play) then gave "H0 accepted" at LLR -15.4 against elo1 = 25;
the rule added then, no verdict until ten pairs lay off the commonest result, made a sweep (minimax
against random, every pair 2-0, past the bound of elo1 = 100 after ten pairs) run on for a hundred
pairs. The exact ratio of
N identical results at s0 is N · ln(1 - (s1 - s0) / (1 - s0)) (near enough): the likelihood, under
the nearest distribution of score s1, that a change worth s1 left every one of N samples untouched. So
ten 1-1 pairs give -0.74 against elo1 = 25 (no verdict), and H0 comes after 40 such pairs, when a change
worth 25 Elo would have had to leave 40 pairs alike, a chance of about 5 %, the test's beta; against
elo1 = 10, after 102 pairs. A sweep of N pairs gives N · ln(s1 / s0) (likewise): H1 against elo1 = 100
after 12 pairs, against elo1 = 200 after 8. Where the sample has spread the exact ratio and the
approximation agree to about 1 % (tests/test_lab_sprt.py). The same formula serves single games (values 0, 0.5, 1,
N games) and colour-swapped pairs (values 0, 0.25, 0.5, 0.75, 1, N pairs: the pentanomial model, which
sees the pairs' correlation).

``expected_games`` gives the expected length of a test (Wald's approximation: the LLR as a Brownian
motion with the drift and variance of one game's increment, no overshoot of the bounds).
"""

from __future__ import annotations

import math
import numbers
import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from engine_ext.lab.stats import GAME_SCORES, PAIR_SCORES, Pentanomial, Trinomial, elo_to_score

# The weight an empty result class gets in the ratio (fishtest's regularisation).
EMPTY_CLASS_WEIGHT = 1e-3
# The Newton iteration for λ: a step this small (in the logarithm of the distance to the pole) ends it;
# it takes at most a dozen steps on any sample tried, the cap is a bound, not a budget.
_STEP_TOLERANCE = 1e-12
_MAX_STEPS = 100

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
        if not (0.0 < elo_to_score(self.elo0) and elo_to_score(self.elo1) < 1.0):
            raise ValueError(f"SPRT elo0={self.elo0:g} elo1={self.elo1:g}: no expected score strictly between "
                             "0 and 1 (an Elo difference beyond about ±6000 is a certain result)")

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


def _nearest_log_likelihood(
    p: npt.NDArray[np.float64], x: npt.NDArray[np.float64], s: float
) -> npt.NDArray[np.float64]:
    """Σ p_i ln(q_i / p_i) for the distribution q of expected score ``s`` nearest the frequencies ``p``
    (classes on the last axis, all > 0) over the scores ``x``: q_i = p_i / d_i, d_i = 1 + λ (x_i - s).

    λ lies between 0 and the pole where d_e = 0 for the extreme class e on the far side of s from the
    sample's mean; q_e <= 1 puts the root where d_e >= p_e. The iteration runs in v = ln d_e, in [ln p_e, 0],
    and computes every d_i from d_e (d_i = (1 - r_i) + d_e r_i, r_i = (x_i - s) / (x_e - s)), so that d_e
    keeps its precision however close to the pole the root is (p_e can be 1e-3 / N). Each step works on
    the samples still moving only: most settle in three or four steps, a few next to a pole take ten."""
    shape = p.shape
    p = p.reshape(-1, shape[-1])
    a = np.broadcast_to(x - s, p.shape)
    gap = (p * a).sum(axis=-1)  # the sample's mean minus s: λ has its sign
    extreme = np.where(gap > 0, a.argmin(axis=-1), a.argmax(axis=-1))[:, None]
    a_e = np.take_along_axis(a, extreme, axis=-1)
    r = a / a_e
    moving = np.flatnonzero(gap != 0)
    low = np.log(np.take_along_axis(p, extreme, axis=-1)[moving, 0])  # the bracket of v
    high = np.zeros(len(moving))
    # Start from the root of f's tangent at λ = 0, λ = gap / Σ p a² (the closed form's λ): where the
    # sample has spread that is within a step or two of the root; where it has none, outside the
    # bracket, and the search starts from the bracket's middle instead.
    v = np.zeros(len(p))  # λ = 0: the root when the mean is s
    tangent = 1.0 + gap[moving] / (p[moving] * a[moving] ** 2).sum(axis=-1) * a_e[moving, 0]
    v[moving] = np.where(tangent > np.exp(low), np.log(np.maximum(tangent, 1e-300)), 0.5 * low)
    for _ in range(_MAX_STEPS):
        if not moving.size:
            break
        pm, am, rm, vm = p[moving], a[moving], r[moving], v[moving]
        d_e = np.exp(vm)
        d = (1.0 - rm) + d_e[:, None] * rm
        f = (pm * am / d).sum(axis=-1)  # decreasing in λ; its root is the one wanted
        slope = -(pm * am * am / (d * d)).sum(axis=-1) * d_e / a_e[moving, 0]  # df/dv
        on_the_mean_side = np.sign(f) == np.sign(gap[moving])
        high = np.where(on_the_mean_side, vm, high)
        low = np.where(on_the_mean_side, low, vm)
        step = -f / slope
        newton = vm + step
        inside = (newton >= low) & (newton <= high)
        still = np.abs(step) > _STEP_TOLERANCE
        v[moving] = np.where(still, np.where(inside, newton, 0.5 * (low + high)), vm)
        moving, low, high = moving[still], low[still], high[still]
    d = (1.0 - r) + np.exp(v)[:, None] * r
    return np.asarray(-(p * np.log(d)).sum(axis=-1), dtype=np.float64).reshape(shape[:-1])


def llr_from_counts(counts: npt.ArrayLike, values: npt.ArrayLike, spec: SprtSpec) -> npt.NDArray[np.float64]:
    """The GSPRT log-likelihood ratio of samples given as counts of each result value.

    ``counts`` has the result classes on its last axis (any leading axes: many samples at once, e.g. the
    running counts of a whole simulated match); ``values`` the score of each class. A sample of no
    results has LLR 0. See the module docstring for the method.
    """
    n = np.asarray(counts, dtype=np.float64)
    x = np.asarray(values, dtype=np.float64)
    if n.shape[-1:] != x.shape:
        raise ValueError(f"counts' last axis ({n.shape}) must match the result values ({x.shape})")
    played = n.sum(axis=-1)
    weights = np.where(n > 0, n, EMPTY_CLASS_WEIGHT)
    size = weights.sum(axis=-1)
    p = weights / size[..., None]
    s0, s1 = spec.scores
    llr = size * (_nearest_log_likelihood(p, x, s1) - _nearest_log_likelihood(p, x, s0))
    return np.asarray(np.where(played > 0, llr, 0.0), dtype=np.float64)


def llr_trinomial(t: Trinomial, spec: SprtSpec) -> float:
    """The LLR of single games (each taken as independent)."""
    return float(llr_from_counts(t.counts, GAME_SCORES, spec))


def llr_pentanomial(p: Pentanomial, spec: SprtSpec) -> float:
    """The LLR of colour-swapped game pairs (the pentanomial model)."""
    return float(llr_from_counts(p.counts, PAIR_SCORES, spec))


def sprt_verdict(llr: float, spec: SprtSpec) -> Literal["H0", "H1"] | None:
    """"H1" at or above the upper bound, "H0" at or below the lower one, else None (play on)."""
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
