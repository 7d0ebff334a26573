"""Paired gauntlets: two arms (a candidate and a baseline) play the same slots, and the verdict is the paired
difference of their scores. Pure: results in, estimates, a sequential test and a schedule out; no I/O
(``perspecto gauntlet --baseline`` plays the games and prints these; docs/lab.md, The acceptance rule).

A slot is an opponent and a slot number: our colour, our setup and engine seed follow from it, so both arms
meet the same opponent with the same colour and the same setup. A pair's outcome is the candidate's score
minus the baseline's, one of -1, -1/2, 0, 1/2, 1 (a pentanomial: as a pair score (1 + d) / 2 it is one of
``stats.PAIR_SCORES``).

The estimate (``stratified_estimate``) is stratified by opponent: each opponent's mean paired difference,
combined with equal weight per opponent, its variance Σ s_i² / n_i / K². Equal weight, not weight by slots:
the gauntlet stands for a tournament where every opponent counts once, and the slots an opponent gets follow
the allocation below (they go where results vary), so a weight by slots would make the figure measure the
allocation. A stratum's variance ``stratum_variance`` is its pairs' sample variance, lifted where it is
smaller than the same with a prior of ``PRIOR_PAIRS`` pseudo-pair of variance ``PRIOR_VARIANCE`` mixed in: an
opponent whose few pairs all agree (both arms beat it every time) does not claim a spread of zero.

The allocation (``allocate``, Neyman's for a stratified mean of equal weights): an opponent's share of all
slots is proportional to the standard deviation of its paired differences, estimated with that prior and
kept within [``FLOOR_SD``, 1]; each round's new slots go one by one to the opponent furthest below its share
(ties: the order the opponents were named in). Deterministic: the same results give the same schedule, so a
resumed run or a report plays the schedule again from the records. The floor keeps every opponent's share
above FLOOR_SD / (FLOOR_SD + (K - 1) · 1) (a paired difference's standard deviation is at most 1): none is
ever starved. The allocation depends on the spreads only, not on the means, and the estimate weighs the
opponents equally whatever their counts: it stays unbiased under the allocation.

The sequential test (``PairedSprt``) has its hypotheses in points of score per game, d0 and d1 (the paired
difference in percent: ``d0=0 d1=5``), stopped at Wald's bounds ln(β/(1-α)), ln((1-β)/α). Its
log-likelihood ratio is fishtest's ``LLR_alt`` (N/2 · ln(r0 / r1), r_h = v + (m - δh)², the generalized
ratio of the nearest distributions in its closed approximation) taken stratum by stratum: under hypothesis h
the opponents' means move from their sample means m_i by shares of δh - D proportional to their variances of
the mean v_i / n_i (the maximum-likelihood split of a shift of an equal-weight mean), and the ratio is
Σ_i n_i/2 · ln((v_i + s_i0²) / (v_i + s_i1²)) with s_ih = K (δh - D) (v_i / n_i) / Σ_j (v_j / n_j), v_i the
stratified variance above. For one opponent it is ``LLR_alt`` on the pairs. Near D it is the normal ratio
(δ1 - δ0)(2D - δ0 - δ1) / (2V) with the stratified V; where a sample has little spread the (m - δ)² term
keeps it from claiming what the plain normal ratio would (four swept pairs are no proof of +20 points). The
pooled pentanomial GSPRT of ``sprt.llr_pentanomial`` on the same pairs (d0, d1 as pair scores 0.5 + d/200)
is reported beside it: it assumes one distribution for every pair, which a stratified schedule does not
give. The schedule checks the test when a round of slots is complete, so where it stops depends on
the results alone, not on the order games finish in.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from engine_ext.lab.gauntlet import Rate
from engine_ext.lab.sprt import SprtSpec, llr_pentanomial, sprt_verdict
from engine_ext.lab.stats import Pentanomial, normal_quantile, score_to_elo

PAIR_DIFFERENCES: tuple[float, ...] = (-1.0, -0.5, 0.0, 0.5, 1.0)
PRIOR_VARIANCE = 0.25  # a pseudo-pair's variance: that of a difference of ±1/2 around 0
PRIOR_PAIRS = 1.0  # how many pseudo-pairs the prior weighs
FLOOR_SD = 0.1  # no opponent's standard deviation counts below this in the allocation
SLOTS_PER_OPPONENT_A_ROUND = 2  # a round allocates this many slots an opponent, on average

Arm = Literal["candidate", "baseline"]
ARMS: tuple[Arm, Arm] = ("candidate", "baseline")


def pair_difference(candidate: float, baseline: float) -> float:
    """The candidate's score minus the baseline's on one slot (scores 0, 0.5 or 1)."""
    for score in (candidate, baseline):
        if score not in (0.0, 0.5, 1.0):
            raise ValueError(f"a game's score is 0, 0.5 or 1, got {score!r}")
    return candidate - baseline


def pentanomial(differences: Sequence[float]) -> Pentanomial:
    """Pairs counted by their difference -1, -1/2, 0, 1/2, 1 (as pair scores 0, 1/4, 1/2, 3/4, 1)."""
    return Pentanomial.from_pair_scores(1.0 + d for d in differences)


def stratum_variance(differences: Sequence[float]) -> float:
    """An opponent's variance of a paired difference: the sample's (n - 1 in the denominator), or, where that is
    smaller, the sample's with the prior mixed in ((Σ (d - mean)² + PRIOR_PAIRS · PRIOR_VARIANCE) /
    (n - 1 + PRIOR_PAIRS)): the prior lifts a sample without spread and never narrows one with it. The prior
    alone for no pairs."""
    n = len(differences)
    if n == 0:
        return PRIOR_VARIANCE
    mean = sum(differences) / n
    squares = sum((d - mean) ** 2 for d in differences)
    smoothed = (squares + PRIOR_PAIRS * PRIOR_VARIANCE) / (n - 1 + PRIOR_PAIRS)
    return max(smoothed, squares / (n - 1)) if n > 1 else smoothed


@dataclass(frozen=True)
class PairedEstimate:
    """A mean paired difference (candidate - baseline, score per game) with its standard error and interval."""

    mean: float
    se: float
    low: float
    high: float
    pairs: int
    opponents: int

    def to_json(self) -> dict[str, float | int]:
        return {"mean": self.mean, "se": self.se, "low": self.low, "high": self.high, "pairs": self.pairs,
                "opponents": self.opponents}


def stratified_estimate(strata: Mapping[str, Sequence[float]], confidence: float = 0.95) -> PairedEstimate | None:
    """Each opponent's mean paired difference, the opponents weighed equally (those with a pair at least);
    the normal interval of that mean. None: no pair at all."""
    z = normal_quantile(confidence)
    played = {name: list(d) for name, d in strata.items() if d}
    if not played:
        return None
    k = len(played)
    mean = sum(sum(d) / len(d) for d in played.values()) / k
    variance = sum(stratum_variance(d) / len(d) for d in played.values()) / (k * k)
    se = math.sqrt(variance)
    return PairedEstimate(mean, se, mean - z * se, mean + z * se, sum(len(d) for d in played.values()), k)


def pooled_estimate(differences: Sequence[float], confidence: float = 0.95) -> PairedEstimate | None:
    """All pairs as one sample (weight by slots): the per-opponent row's figure, and the pooled comparison."""
    return stratified_estimate({"all": differences}, confidence)


def unpaired_slots(candidate: Mapping[str, Sequence[float]], baseline: Mapping[str, Sequence[float]],
                   differences: Mapping[str, Sequence[float]]) -> float | None:
    """The slots an unpaired run (each arm its own independent games, the same allocation) would need for the
    paired run's interval width: the paired slots times V_unpaired / V_paired, where V_unpaired adds the two
    arms' stratified variances (each opponent's score variance, with the same prior) and V_paired is the
    stratified variance of the differences. None: no pair."""
    paired = stratified_estimate(differences)
    if paired is None or paired.se == 0.0:
        return None
    played = [name for name, d in differences.items() if d]
    k = len(played)
    unpaired = sum((stratum_variance(candidate[name]) + stratum_variance(baseline[name])) / len(differences[name])
                   for name in played) / (k * k)
    return paired.pairs * unpaired / paired.se**2


def allocate(strata: Mapping[str, Sequence[float]], allocated: Mapping[str, int], new_slots: int) -> dict[str, int]:
    """Neyman allocation of ``new_slots`` among the opponents of ``strata`` (in its order): each one's share of
    all slots (``allocated`` so far plus the new) proportional to sqrt(stratum_variance) kept within
    [FLOOR_SD, 1] (a difference in [-1, 1] has a standard deviation of at most 1; a sample of two can show
    more); the new slots go one by one to the opponent furthest below its share (ties: the first named)."""
    if new_slots < 0:
        raise ValueError(f"slots to allocate: at least 0, not {new_slots}")
    names = list(strata)
    if not names:
        raise ValueError("no opponent to allocate slots to")
    sds = {name: min(1.0, max(FLOOR_SD, math.sqrt(stratum_variance(strata[name])))) for name in names}
    total = sum(allocated.get(name, 0) for name in names) + new_slots
    weight = sum(sds.values())
    target = {name: total * sds[name] / weight for name in names}
    counts = {name: allocated.get(name, 0) for name in names}
    out = dict.fromkeys(names, 0)
    for _ in range(new_slots):
        name = max(names, key=lambda n: (target[n] - counts[n], -names.index(n)))
        counts[name] += 1
        out[name] += 1
    return out


_SPRT_KEYS = ("d0", "d1", "alpha", "beta")


@dataclass(frozen=True)
class PairedSprt:
    """H0: the candidate's paired difference is d0 points of score per game (percent), H1: d1; error rates."""

    d0: float
    d1: float
    alpha: float = 0.05
    beta: float = 0.05

    def __post_init__(self) -> None:
        for name in _SPRT_KEYS:
            value = getattr(self, name)
            if not math.isfinite(value):
                raise ValueError(f"--sprt {name} must be a finite number, got {value!r}")
        if not -100.0 < self.d0 < self.d1 < 100.0:
            raise ValueError(f"--sprt needs -100 < d0 < d1 < 100 (points of score per game), got d0={self.d0:g} "
                             f"d1={self.d1:g}")
        self.spec  # noqa: B018 (the error rates are checked there)

    @classmethod
    def parse(cls, text: str) -> PairedSprt:
        """Read ``"d0=0 d1=5 alpha=0.05 beta=0.05"`` (spaces or commas between; alpha, beta optional)."""
        values: dict[str, float] = {}
        for item in (part for part in re.split(r"[\s,]+", text.strip()) if part):
            key, sep, raw = item.partition("=")
            key = key.strip().lower()
            if not sep or key not in _SPRT_KEYS:
                raise ValueError(f"--sprt {item!r}: the settings are d0=, d1= (points of score per game), alpha=, "
                                 "beta= (e.g. 'd0=0 d1=5')")
            if key in values:
                raise ValueError(f"--sprt setting {key!r} given twice")
            try:
                values[key] = float(raw)
            except ValueError:
                raise ValueError(f"--sprt setting {key}={raw!r} is not a number") from None
        missing = [key for key in ("d0", "d1") if key not in values]
        if missing:
            raise ValueError(f"--sprt needs {' and '.join(missing)} (e.g. 'd0=0 d1=5')")
        return cls(**values)

    @property
    def spec(self) -> SprtSpec:
        """The same hypotheses as pair scores 0.5 + d/200 in Elo (for the bounds and the pooled pentanomial)."""
        return SprtSpec(score_to_elo(0.5 + self.d0 / 200.0), score_to_elo(0.5 + self.d1 / 200.0),
                        self.alpha, self.beta)

    def llr(self, strata: Mapping[str, Sequence[float]]) -> float:
        """The stratified GSPRT's log-likelihood ratio (the module docstring); 0 for no pairs."""
        played = {name: d for name, d in strata.items() if d}
        estimate = stratified_estimate(played)
        if estimate is None:
            return 0.0
        k = len(played)
        variances = {name: stratum_variance(d) for name, d in played.items()}
        spread = {name: variances[name] / len(d) for name, d in played.items()}
        total = sum(spread.values())
        out = 0.0
        for name, d in played.items():
            weight = k * spread[name] / total  # the share of a shift of the mean this opponent's mean takes
            shift0 = (self.d0 / 100.0 - estimate.mean) * weight
            shift1 = (self.d1 / 100.0 - estimate.mean) * weight
            v = variances[name]
            out += len(d) / 2.0 * math.log((v + shift0 * shift0) / (v + shift1 * shift1))
        return out

    def pooled_llr(self, differences: Sequence[float]) -> float:
        return llr_pentanomial(pentanomial(differences), self.spec)

    def verdict(self, llr: float) -> Literal["H0", "H1"] | None:
        return sprt_verdict(llr, self.spec)

    def __str__(self) -> str:
        return f"d0={self.d0:g} d1={self.d1:g} alpha={self.alpha:g} beta={self.beta:g}"


@dataclass(frozen=True)
class Slot:
    """A slot to play with both arms: the opponent, its slot number there, the round that allocated it."""

    opponent: str
    number: int
    round: int


@dataclass
class PairedSchedule:
    """Which slots a paired gauntlet plays, round by round, and when it stops.

    A round allocates ``round_slots`` slots (``allocate``) from the complete pairs of the rounds two back (the
    round before may still be playing: a one-round lag, so the workers never wait for a round's end and the
    schedule still depends on results alone); it interleaves them across the opponents. After a round is
    complete (every slot of it and of the rounds before it has both results, or a failed game), the sequential
    test, if any, looks at every complete pair of those rounds; a verdict ends the schedule. ``max_slots`` caps
    the slots allocated. Results may come in any order, and a slot whose game failed stays an unpaired slot."""

    opponents: Sequence[str]
    max_slots: int
    sprt: PairedSprt | None = None
    round_slots: int = 0  # 0: SLOTS_PER_OPPONENT_A_ROUND an opponent
    rounds: list[list[Slot]] = field(default_factory=list)
    scores: dict[tuple[str, int, Arm], float | None] = field(default_factory=dict)  # None: the game failed
    allocated: dict[str, int] = field(default_factory=dict)
    verdict: Literal["H0", "H1"] | None = None
    decided_at: int | None = None  # pairs the test had when it decided
    llr: float = 0.0
    checked_rounds: int = 0  # rounds the test has looked at
    _queue: list[Slot] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.opponents:
            raise ValueError("a paired gauntlet needs an opponent")
        if len(set(self.opponents)) != len(self.opponents):
            raise ValueError(f"an opponent named twice: {', '.join(self.opponents)}")
        if self.max_slots < 1:
            raise ValueError(f"--max-slots must be at least 1, not {self.max_slots}")
        if self.round_slots <= 0:
            self.round_slots = SLOTS_PER_OPPONENT_A_ROUND * len(self.opponents)
        self.allocated = dict.fromkeys(self.opponents, 0)

    @property
    def slots(self) -> int:
        return sum(self.allocated.values())

    def finished(self, slot: Slot) -> bool:
        return all((slot.opponent, slot.number, arm) in self.scores for arm in ARMS)

    def _round_done(self, index: int) -> bool:
        return all(self.finished(slot) for slot in self.rounds[index])

    def strata(self, rounds: int | None = None) -> dict[str, list[float]]:
        """The complete pairs' differences per opponent (of the first ``rounds`` rounds; None: all)."""
        out: dict[str, list[float]] = {name: [] for name in self.opponents}
        for round_ in self.rounds[:rounds]:
            for slot in round_:
                c = self.scores.get((slot.opponent, slot.number, "candidate"))
                b = self.scores.get((slot.opponent, slot.number, "baseline"))
                if c is not None and b is not None:
                    out[slot.opponent].append(pair_difference(c, b))
        return out

    def arm_scores(self, arm: Arm) -> dict[str, list[float]]:
        """One arm's scores per opponent, on the complete pairs only (the games the paired figures rest on)."""
        out: dict[str, list[float]] = {name: [] for name in self.opponents}
        for round_ in self.rounds:
            for slot in round_:
                c = self.scores.get((slot.opponent, slot.number, "candidate"))
                b = self.scores.get((slot.opponent, slot.number, "baseline"))
                if c is not None and b is not None:
                    out[slot.opponent].append(c if arm == "candidate" else b)
        return out

    @property
    def stopped(self) -> bool:
        """No more slots will be allocated: a verdict, or the cap."""
        return self.verdict is not None or self.slots >= self.max_slots

    def next_slot(self) -> Slot | None:
        """The next slot to play, or None: none until more results are in (or, with every slot finished and
        ``stopped``, none ever)."""
        if not self._queue and not self.stopped:
            new = len(self.rounds)
            if new >= 2 and not all(self._round_done(r) for r in range(new - 1)):
                return None  # the allocation waits for the rounds two back
            self._new_round(new)
        return self._queue.pop(0) if self._queue else None

    def _new_round(self, index: int) -> None:
        size = min(self.round_slots, self.max_slots - self.slots)
        counts = allocate(self.strata(max(0, index - 1)), self.allocated, size)
        numbers = {name: self.allocated[name] for name in self.opponents}
        slots: list[Slot] = []
        for turn in range(max(counts.values(), default=0)):
            for name in self.opponents:
                if turn < counts[name]:
                    slots.append(Slot(name, numbers[name], index))
                    numbers[name] += 1
        for name, n in counts.items():
            self.allocated[name] += n
        self.rounds.append(slots)
        self._queue.extend(slots)

    def record(self, opponent: str, number: int, arm: Arm, score: float | None) -> None:
        """A game's result (None: it failed and gave none); the test looks at each round as it completes."""
        key = (opponent, number, arm)
        if key in self.scores:
            return  # once only (a game finished twice)
        self.scores[key] = score
        while self.checked_rounds < len(self.rounds) and self._round_done(self.checked_rounds):
            self.checked_rounds += 1
            if self.sprt is not None and self.verdict is None:
                strata = self.strata(self.checked_rounds)
                self.llr = self.sprt.llr(strata)
                self.verdict = self.sprt.verdict(self.llr)
                if self.verdict is not None:
                    self.decided_at = sum(len(d) for d in strata.values())
                    self._drop_queue()

    def _drop_queue(self) -> None:
        """The slots allocated but not handed out yet are not played after all."""
        dropped = set(self._queue)
        for slot in dropped:
            self.allocated[slot.opponent] -= 1
        self.rounds = [[slot for slot in round_ if slot not in dropped] for round_ in self.rounds]
        self._queue.clear()

    @property
    def over(self) -> bool:
        """Stopped, and nothing allocated is left to play."""
        return self.stopped and not self._queue and all(self._round_done(r) for r in range(len(self.rounds)))


def paired_rate_difference(differences: Sequence[int], confidence: float = 0.95) -> Rate | None:
    """A failure's paired difference per 100 games (the candidate's count minus the baseline's on each complete
    pair), with the normal interval of the mean over pairs (no spread, fewer than two pairs: the point alone)."""
    n = len(differences)
    if n == 0:
        return None
    mean = sum(differences) / n
    variance = sum((d - mean) ** 2 for d in differences) / (n - 1) if n > 1 else 0.0
    half = normal_quantile(confidence) * math.sqrt(variance / n)
    return Rate(100 * mean, 100 * (mean - half), 100 * (mean + half), n, sum(differences))
