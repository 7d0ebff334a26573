"""Paired gauntlets (``perspecto gauntlet --baseline``, issue 44 part 2): the statistics of
engine_ext/lab/paired.py (the stratified interval covers the true difference, the sequential test decides
right, the allocation favours the variable opponent and starves none), the failures per 100 games, the
schedule and its jobs (both arms on the same slots, next to each other; a resumed run plays only what is
missing), and the command end to end: through the lab with Perspecto's own UCC player as the program (fast),
and through the real referee and the UCC 2012 programs (slow; skipped without them)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from bot.commands.gauntlet_run.jobs import Clock, GauntletJob, GauntletOutcome, run_jobs, slot_side
from bot.commands.gauntlet_run.paired_run import PLAN_FILE, ArmSpec, PairedFeed, PairedPlan
from engine_ext.lab.gauntlet import rate_per_100, score_interval
from engine_ext.lab.paired import (
    ARMS,
    FLOOR_SD,
    PAIR_DIFFERENCES,
    PRIOR_VARIANCE,
    PairedSchedule,
    PairedSprt,
    Slot,
    allocate,
    pair_difference,
    paired_rate_difference,
    pentanomial,
    stratified_estimate,
    stratum_variance,
    unpaired_slots,
)
from engine_ext.lab.stats import Trinomial
from engine_ext.rules.pieces import Side
from tests.test_gauntlet_referee import ucc2012  # noqa: F401  (the build, when $PERSPECTO_UCC2012 has none)

REPO = Path(__file__).resolve().parents[1]

# --- the statistics ---------------------------------------------------------------------------------------

probabilities = st.lists(st.floats(0.05, 1.0), min_size=5, max_size=5).map(lambda w: [x / sum(w) for x in w])


@settings(max_examples=10, deadline=None)
@given(st.lists(probabilities, min_size=1, max_size=4), st.integers(30, 60), st.integers(0, 2**32 - 1))
def test_the_stratified_interval_covers_the_true_difference_most_of_the_time(
        distributions: list[list[float]], pairs: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.array(PAIR_DIFFERENCES)
    truth = float(np.mean([values @ np.array(p) for p in distributions]))  # opponents weighed equally
    runs, covered = 500, 0
    for _ in range(runs):
        strata = {f"o{i}": list(rng.choice(values, size=pairs, p=p)) for i, p in enumerate(distributions)}
        estimate = stratified_estimate(strata)
        assert estimate is not None
        covered += estimate.low <= truth <= estimate.high
    # Nominal 95 %: the prior only widens it; a sample piled up at one end (5/6 of it at -1, 30 pairs) has
    # about 89 % (the normal interval's known weakness there).
    assert covered >= 0.84 * runs


@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text("abc", min_size=1, max_size=3),
                       st.lists(st.sampled_from(PAIR_DIFFERENCES), max_size=30), min_size=1, max_size=5),
       st.integers(0, 40))
def test_the_allocation_hands_out_every_slot_and_starves_no_opponent(strata: dict[str, list[float]],
                                                                      new: int) -> None:
    allocated = {name: len(d) for name, d in strata.items()}
    out = allocate(strata, allocated, new)
    assert sum(out.values()) == new and all(n >= 0 for n in out.values())
    assert out == allocate(strata, allocated, new)  # deterministic
    # Each opponent's share of all slots is at least the floor's (a standard deviation counts at most 1) once
    # the new slots fill it: after enough rounds, nobody is left behind.
    counts = dict(allocated)
    for _ in range(30):
        for name, n in allocate(strata, counts, 10).items():
            counts[name] += n
    total = sum(counts.values())
    k = len(strata)
    assert all(counts[name] >= math.floor(total * FLOOR_SD / (FLOOR_SD + (k - 1))) for name in strata)


def test_the_allocation_favours_the_opponent_whose_pairs_vary() -> None:
    strata = {"always-won": [0.0] * 20, "varies": [1.0, -1.0, 0.5, -0.5, 0.0] * 4}
    out = allocate(strata, {"always-won": 20, "varies": 20}, 20)
    assert out == {"always-won": 0, "varies": 20}  # the one without spread has more than its share already
    # On the whole, the variable one gets its share by the spread: far more than the one without spread.
    counts = {"always-won": 0, "varies": 0}
    for _ in range(20):
        for name, n in allocate(strata, counts, 6).items():
            counts[name] += n
    assert counts["varies"] > 3 * counts["always-won"] > 0


def test_a_stratum_without_pairs_or_spread_keeps_the_priors_variance() -> None:
    assert stratum_variance([]) == PRIOR_VARIANCE
    assert 0 < stratum_variance([0.0] * 10) < PRIOR_VARIANCE / 5
    assert stratum_variance([1.0, -1.0] * 50) == pytest.approx(1.0, abs=0.02)


def test_opponents_weigh_equally_whatever_their_slots() -> None:
    estimate = stratified_estimate({"a": [1.0] * 30, "b": [0.0, 0.0]})
    assert estimate is not None and estimate.mean == pytest.approx(0.5) and estimate.pairs == 32
    assert stratified_estimate({"a": [], "b": []}) is None


def test_a_pair_is_one_of_five_differences_counted_as_a_pentanomial() -> None:
    assert pair_difference(1.0, 0.0) == 1.0 and pair_difference(0.5, 1.0) == -0.5
    with pytest.raises(ValueError, match=r"0, 0\.5 or 1"):
        pair_difference(0.25, 0.0)
    assert pentanomial([-1.0, -0.5, 0.0, 0.0, 0.5, 1.0, 1.0]).counts == (1, 1, 2, 1, 2)


def simulate(schedule: PairedSchedule, distributions: dict[str, list[float]], rng: np.random.Generator) -> None:
    """Play a schedule with results drawn at once: a pair's difference from its opponent's distribution."""
    scores = {1.0: (1.0, 0.0), 0.5: (1.0, 0.5), 0.0: (0.5, 0.5), -0.5: (0.5, 1.0), -1.0: (0.0, 1.0)}
    while (slot := schedule.next_slot()) is not None:
        d = float(rng.choice(PAIR_DIFFERENCES, p=distributions[slot.opponent]))
        for arm, score in zip(ARMS, scores[d], strict=True):
            schedule.record(slot.opponent, slot.number, arm, score)
    assert schedule.over


def test_the_sprt_accepts_h1_for_a_clearly_better_arm_and_h0_for_equal_arms() -> None:
    rng = np.random.default_rng(44)
    sprt = PairedSprt.parse("d0=0 d1=10")
    better = {"easy": [0.0, 0.0, 0.7, 0.2, 0.1], "hard": [0.05, 0.1, 0.4, 0.25, 0.2]}  # +20 and +25 points
    equal = {"easy": [0.0, 0.05, 0.9, 0.05, 0.0], "hard": [0.15, 0.15, 0.4, 0.15, 0.15]}
    verdicts: dict[str, list[str | None]] = {"better": [], "equal": []}
    lengths = []
    for name, distributions in (("better", better), ("equal", equal)):
        for _ in range(100):
            schedule = PairedSchedule(list(distributions), max_slots=3000, sprt=sprt)
            simulate(schedule, distributions, rng)
            verdicts[name].append(schedule.verdict)
            lengths.append(schedule.slots)
    # alpha = beta = 0.05: about 96 of 100 expected each way (a simulation of 200 gave 200 and 192)
    assert verdicts["better"].count("H1") >= 95 and verdicts["equal"].count("H0") >= 88
    assert max(lengths) < 3000  # it decided every time


def test_the_schedule_gives_the_variable_opponent_more_slots_and_stops_at_its_cap() -> None:
    rng = np.random.default_rng(7)
    distributions = {"always-won": [0.0, 0.0, 1.0, 0.0, 0.0], "varies": [0.2, 0.2, 0.2, 0.2, 0.2]}
    schedule = PairedSchedule(list(distributions), max_slots=60)
    simulate(schedule, distributions, rng)
    assert schedule.slots == 60 and schedule.verdict is None
    assert schedule.allocated["varies"] > 2 * schedule.allocated["always-won"] >= 8


def test_the_stratified_estimate_stays_unbiased_under_the_allocation() -> None:
    """The allocation follows the spreads the results show; the estimate, over many runs, still centres on the
    true equal-weight difference."""
    rng = np.random.default_rng(5)
    distributions = {"a": [0.0, 0.05, 0.85, 0.1, 0.0], "b": [0.2, 0.1, 0.2, 0.2, 0.3], "c": [0.0, 0.0, 0.3, 0.3, 0.4]}
    truth = float(np.mean([np.array(PAIR_DIFFERENCES) @ np.array(p) for p in distributions.values()]))
    estimates = []
    for _ in range(400):
        schedule = PairedSchedule(list(distributions), max_slots=36)
        simulate(schedule, distributions, rng)
        estimate = stratified_estimate(schedule.strata())
        assert estimate is not None
        estimates.append(estimate.mean)
        assert len(set(schedule.allocated.values())) > 1 or schedule.slots < 12  # the allocation did move
    error = float(np.std(estimates)) / math.sqrt(len(estimates))
    assert abs(float(np.mean(estimates)) - truth) < 4 * error


@given(st.lists(st.integers(0, 1), min_size=1, max_size=80))
def test_a_failure_that_happens_once_a_game_has_wilsons_interval(values: list[int]) -> None:
    rate = rate_per_100(values, once=True)
    wilson = score_interval(Trinomial(wins=sum(values), draws=0, losses=len(values) - sum(values)))
    assert rate is not None and wilson is not None
    assert (rate.low, rate.high) == pytest.approx((100 * wilson.low, 100 * wilson.high))
    assert rate.low <= rate.per_100 <= rate.high


@given(st.lists(st.integers(0, 12), min_size=1, max_size=80))
def test_a_count_per_100_games_has_an_interval_around_it(values: list[int]) -> None:
    rate = rate_per_100(values, once=False)
    assert rate is not None and rate.events == sum(values) and rate.games == len(values)
    assert 0.0 <= rate.low <= rate.per_100 <= rate.high
    if sum(values) == 0:
        assert rate.high == pytest.approx(100 * -math.log(0.025) / len(values))
    with pytest.raises(ValueError, match="once a game"):
        rate_per_100([*values, 2], once=True)


def test_a_paired_failure_difference() -> None:
    rate = paired_rate_difference([1, 0, 0, -1, 1, 1])
    assert rate is not None and rate.per_100 == pytest.approx(100 * 2 / 6) and rate.low < rate.per_100 < rate.high
    assert paired_rate_difference([]) is None


def test_pairing_needs_fewer_slots_than_independent_games_when_the_arms_agree() -> None:
    candidate = {"a": [1.0, 0.0, 1.0, 0.0, 1.0, 1.0] * 5}
    baseline = {"a": [1.0, 0.0, 1.0, 0.0, 0.5, 1.0] * 5}
    differences = {"a": [pair_difference(c, b) for c, b in zip(candidate["a"], baseline["a"], strict=True)]}
    needed = unpaired_slots(candidate, baseline, differences)
    assert needed is not None and needed > 5 * 30


@pytest.mark.parametrize(("text", "message"), [
    ("d0=0", "needs d1"), ("d0=5 d1=1", "d0 < d1"), ("elo0=0 elo1=5", "the settings are"), ("d0=0 d1=x", "number"),
    ("d0=0 d1=5 alpha=0.7", "alpha"), ("d0=0 d0=1 d1=2", "twice")])
def test_bad_sprt_settings_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PairedSprt.parse(text)


# --- the schedule and its jobs -------------------------------------------------------------------------------


def test_rounds_wait_for_the_rounds_two_back_and_number_each_opponents_slots_in_turn() -> None:
    schedule = PairedSchedule(["a", "b"], max_slots=100)
    first = [schedule.next_slot() for _ in range(8)]  # rounds 0 and 1: 4 slots each, no result needed
    assert all(s is not None for s in first)
    assert [(s.opponent, s.number, s.round) for s in first if s is not None][:4] == [
        ("a", 0, 0), ("b", 0, 0), ("a", 1, 0), ("b", 1, 0)]
    assert schedule.next_slot() is None  # round 2 waits for round 0's results
    for s in first[:4]:
        assert s is not None
        for arm in ARMS:
            schedule.record(s.opponent, s.number, arm, 0.5)
    third = schedule.next_slot()
    assert third is not None and third.round == 2 and third.number == 4


class Inline(Executor):
    """An executor that runs each job as it is submitted (the run loop's order, no threads)."""

    def __init__(self) -> None:
        self.submitted: list[GauntletJob] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted.append(args[0])
        future: Future[Any] = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def plan(tmp_path: Path, *, max_slots: int = 12, sprt: str | None = None) -> PairedPlan:
    return PairedPlan(ArmSpec("candidate", "perspecto", "perspecto"), ArmSpec("baseline", "random", "random"),
                      ["x", "y"], 7, max_slots, sprt, "referee", 1.0, 100, 60.0, True)


def stand_in_jobs(tmp_path: Path) -> Any:
    clock = Clock(1.0, 100, 60.0)

    def make_job(arm: ArmSpec, slot: Slot, _seen: Any) -> GauntletJob:
        return GauntletJob(game_id=f"{arm.name}-vs-{slot.opponent}-{slot.number:05d}", ours=arm.name,
                           opponent=slot.opponent, slot=slot.number, our_side=slot_side(slot.number), clock=clock,
                           via="referee", work=tmp_path, arm=arm.arm, setup_seed=1000 + slot.number)
    return make_job


def test_both_arms_play_every_slot_next_to_each_other_with_the_same_opponent_colour_and_seed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.commands.gauntlet_run.jobs as gauntlet_jobs

    monkeypatch.setattr(gauntlet_jobs, "play_gauntlet_job", lambda job: GauntletOutcome(job, None, 0.0, "stand-in"))
    p = plan(tmp_path)
    schedule = p.schedule(["x", "y"])
    feed = PairedFeed(p, schedule, stand_in_jobs(tmp_path), tmp_path, Console(file=open(os.devnull, "w")),
                      learn=False)
    executor = Inline()
    run_jobs(feed, executor, 1)
    jobs = executor.submitted
    assert len(jobs) == 24 and schedule.over  # 12 slots, both arms; failed games: no pairs, the cap ends it
    for first, second in zip(jobs[::2], jobs[1::2], strict=True):
        assert {first.arm, second.arm} == {"candidate", "baseline"}
        assert (first.opponent, first.slot, first.our_side, first.setup_seed) == (
            second.opponent, second.slot, second.our_side, second.setup_seed)
        assert first.arm == ("candidate" if first.slot % 2 == 0 else "baseline")  # who goes first alternates
    assert {j.our_side for j in jobs if j.opponent == "x"} == {Side.RED, Side.BLUE}


def test_a_resumed_run_plays_only_the_games_without_a_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import bot.commands.gauntlet_run.jobs as gauntlet_jobs
    from engine_ext.rules.record import GameRecord, RecordedPlayer

    def record_of(job: GauntletJob) -> GameRecord:
        red, blue = (job.ours, job.opponent) if job.our_side == Side.RED else (job.opponent, job.ours)
        winner = str(job.our_side) if job.arm == "candidate" else None  # the candidate wins, the baseline draws
        return GameRecord(ruleset="classic", options={}, red=RecordedPlayer(red, {}), blue=RecordedPlayer(blue, {}),
                          result={"winner": winner, "reason": "flag", "plies": 0, "forfeits": []}, game_id=job.game_id)

    played: list[str] = []

    def stand_in(job: GauntletJob) -> GauntletOutcome:
        played.append(job.game_id)
        return GauntletOutcome(job, record_of(job), 0.0)

    monkeypatch.setattr(gauntlet_jobs, "play_gauntlet_job", stand_in)
    quiet = Console(file=open(os.devnull, "w"))
    p = plan(tmp_path)
    first = p.schedule(["x", "y"])
    run_jobs(PairedFeed(p, first, stand_in_jobs(tmp_path), tmp_path, quiet, learn=False), Inline(), 1)
    assert len(played) == 24 and all(d == [0.5] * 6 for d in first.strata().values())
    for name in played[5:9]:
        (tmp_path / f"{name}.json").unlink()  # a run stopped short: these games never happened
    played.clear()
    again = p.schedule(["x", "y"])
    feed = PairedFeed(p, again, stand_in_jobs(tmp_path), tmp_path, quiet, learn=False)
    run_jobs(feed, Inline(), 2)
    assert len(played) == 4 and feed.resumed == 20
    assert again.strata() == first.strata() and again.rounds == first.rounds


# --- the command ------------------------------------------------------------------------------------------------


def forfeit_record(job: GauntletJob, loser: Side) -> Any:
    """A stand-in game's record: ``loser`` forfeits at once (no setups needed to read it back)."""
    from engine_ext.rules.record import GameRecord, RecordedPlayer

    red, blue = (job.ours, job.opponent) if job.our_side == Side.RED else (job.opponent, job.ours)
    return GameRecord(ruleset="classic", options={}, red=RecordedPlayer(red, {}), blue=RecordedPlayer(blue, {}),
                      result={"winner": str(loser.other), "reason": "forfeit_timeout", "plies": 0,
                              "forfeits": [str(loser)]}, game_id=job.game_id)


def test_the_command_stops_at_the_sprts_verdict_resumes_and_reports_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The whole command in this process, the games a stand-in: the candidate wins every game by the
    program's forfeit, the baseline loses every one by its own."""
    import bot.commands.gauntlet_run.jobs as gauntlet_jobs
    from bot.cli import main

    played: list[str] = []

    def stand_in(job: GauntletJob) -> GauntletOutcome:
        played.append(job.game_id)
        assert job.lab is not None and job.lab.a_side == job.our_side and job.setup_seed == job.lab.red_seed
        loser = job.our_side.other if job.arm == "candidate" else job.our_side
        return GauntletOutcome(job, forfeit_record(job, loser), 0.0)

    monkeypatch.setattr(gauntlet_jobs, "play_gauntlet_job", stand_in)
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    for name in ("ucc-one", "ucc-two"):
        (config / "profiles" / f"{name}.toml").write_text(
            f'engine = "ucc"\n[engine_params]\ncommand = "{sys.executable}"\n', encoding="utf-8")
    records, out = tmp_path / "records", tmp_path / "verdict.json"
    common = ["--config", str(config), "--json", str(out)]
    code = main(["gauntlet", "ucc-one", "ucc-two", "--via", "lab", "--profile", "perspecto", "--baseline", "random",
                 "--sprt", "d0=0 d1=20", "--max-slots", "200", "--seed", "1", "--records", str(records),
                 "--concurrency", "2", *common])
    assert code == 0, capsys.readouterr().out[-2000:]
    verdict = json.loads(out.read_text())
    assert verdict["sprt"]["verdict"] == "H1" and verdict["sprt"]["decided_at_pairs"] < 40
    assert verdict["stratified"]["mean"] == 1.0
    # The games in play at the verdict finish, recorded but not counted: the figures are the rounds up to it.
    assert verdict["pairs"] * 2 <= len(played) <= verdict["pairs"] * 2 + 4
    assert {row["opponent"]: row["pentanomial"][4] for row in verdict["opponents"]} == {
        row["opponent"]: row["pairs"] for row in verdict["opponents"]}
    rate = verdict["failures_per_100"]["marshal to bomb"]
    assert rate["candidate"]["games"] == rate["baseline"]["games"] == verdict["pairs"]
    first = played[:]
    gone = first[4:7]  # games of the first rounds: the run as if stopped there, and later ones played
    for name in gone:
        (records / f"{name}.json").unlink()
    played.clear()
    assert main(["gauntlet", "--report", str(records), *common]) == 0  # a run stopped short: up to its first gap
    short = json.loads(out.read_text())
    assert short["pairs"] < verdict["pairs"] and short["sprt"]["verdict"] is None and not played
    assert main(["gauntlet", "--resume", str(records), "--concurrency", "1", *common]) == 0
    assert sorted(played) == sorted(gone)
    assert json.loads(out.read_text())["sprt"] == verdict["sprt"]
    assert main(["gauntlet", "--report", str(records), *common]) == 0
    again = json.loads(out.read_text())
    assert (again["sprt"], again["stratified"], again["opponents"]) == (
        verdict["sprt"], verdict["stratified"], verdict["opponents"])
    capsys.readouterr()
    assert main(["gauntlet", "ucc-one", "--via", "lab", "--baseline", "random", "--sprt", "d0=3 d1=1", *common]) == 2
    assert "d0 < d1" in capsys.readouterr().out


def perspecto(*args: str, timeout: float = 300, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)


@pytest.mark.slow
def test_the_command_runs_a_paired_gauntlet_in_the_lab_resumes_it_and_reports_it(tmp_path: Path) -> None:
    """Through the lab, against Perspecto's own UCC player (``perspecto ucc --profile random``) as the program:
    random (the candidate) and a one-ply minimax (the baseline), one slot; then resumed with a game missing,
    and reported."""
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    command = f"{sys.executable} -m bot.cli ucc --profile random --no-learn"
    (config / "profiles" / "shallow.toml").write_text(  # a search that answers at once
        'engine = "minimax"\n[engine_params]\nmax_depth = 1\n', encoding="utf-8")
    (config / "profiles" / "ucc-stand-in.toml").write_text(
        f'engine = "ucc"\n[engine_params]\ncommand = {json.dumps(command)}\ncwd = {json.dumps(str(REPO))}\n'
        'setup_time = 30\n', encoding="utf-8")
    records, out = tmp_path / "records", tmp_path / "verdict.json"
    common = ("--config", str(config), "--json", str(out))
    run = perspecto("gauntlet", "ucc-stand-in", "--via", "lab", "--profile", "random", "--baseline", "shallow",
                    "--max-slots", "1", "--move-time", "1", "--max-turns", "6", "--seed", "3",
                    "--records", str(records), "--concurrency", "1", *common)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "paired: random - shallow" in run.stdout and "failures per 100 games" in run.stdout
    verdict = json.loads(out.read_text())
    assert verdict["pairs"] == 1 and verdict["opponents"][0]["slots"] == 1
    assert set(verdict["failures_per_100"]["marshal to bomb"]) == {"candidate", "baseline", "difference"}
    assert (records / PLAN_FILE).is_file() and len(list(records.glob("*-vs-ucc-stand-in-*.json"))) == 2
    # Both arms' games of a slot: the same colour for us, the same setup for us.
    games = {p.stem: json.loads(p.read_text()) for p in records.glob("*-vs-*.json")}
    for slot in ("00000",):
        a, b = games[f"random-vs-ucc-stand-in-{slot}"], games[f"shallow-vs-ucc-stand-in-{slot}"]
        side = "red" if a["red"]["name"] == "random" else "blue"
        assert b[side]["name"] == "shallow"
        assert a[side]["setup"] == b[side]["setup"]
    (records / "shallow-vs-ucc-stand-in-00000.json").unlink()
    resumed = perspecto("gauntlet", "--resume", str(records), *common)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert "1 games taken from the records already there" in resumed.stdout
    assert json.loads(out.read_text())["pairs"] == 1 and (records / "shallow-vs-ucc-stand-in-00000.json").is_file()
    again = perspecto("gauntlet", "--report", str(records), *common)
    assert again.returncode == 0 and json.loads(out.read_text())["pairs"] == 1
    bad = perspecto("gauntlet", "ucc-stand-in", "--via", "lab", "--baseline", "no-such-thing", "--config", str(config))
    assert bad.returncode == 2 and "neither a profile" in bad.stdout and "Traceback" not in bad.stderr


@pytest.mark.slow
def test_a_paired_gauntlet_through_the_real_referee(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """The programs: $PERSPECTO_UCC2012's build, else the one tests/test_gauntlet_referee.py makes from the sparring
    set (as CI has it), so this runs wherever the referee's slow tests run instead of skipping there."""
    given = Path(os.environ.get("PERSPECTO_UCC2012") or "/nonexistent")
    programs = given if (given.parent / "judge" / "manager" / "stratego").is_file() and (
        given / "basic_cpp").is_file() else Path(request.getfixturevalue("ucc2012")) / "bin"
    records, out = tmp_path / "records", tmp_path / "verdict.json"
    run = perspecto("gauntlet", "ucc-basic_cpp", "--baseline", "random", "--max-slots", "2", "--move-time", "1",
                    "--max-turns", "30", "--records", str(records), "--json", str(out), "--concurrency", "1",
                    timeout=600, env={**os.environ, "PERSPECTO_UCC2012": str(programs)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    verdict = json.loads(out.read_text())
    assert verdict["pairs"] == 2
    logs = sorted((records / "referee").glob("*-vs-*.log"))
    assert len(logs) == 4
    # Each slot's two games: our wrapper started with the same --seed (setup and engine), the same colour.
    games = {p.stem: json.loads(p.read_text()) for p in records.glob("*-vs-*.json")}
    for slot in ("00000", "00001"):
        seeds = {(records / "referee" / f"{arm}-vs-ucc-basic_cpp-{slot}.sh").read_text().split("--seed ")[1].split()[0]
                 for arm in ("perspecto", "random")}
        assert len(seeds) == 1
        a, b = games[f"perspecto-vs-ucc-basic_cpp-{slot}"], games[f"random-vs-ucc-basic_cpp-{slot}"]
        side = "red" if slot == "00000" else "blue"
        assert a[side]["name"] == "perspecto" and b[side]["name"] == "random"


def test_a_baseline_is_a_profile_else_a_revision_checked_out_in_its_own_worktree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main
    from bot.commands.gauntlet_run.opponents import GauntletError
    from bot.commands.gauntlet_run.paired_run import git_commit, prepare_worktree, resolve_baseline
    from bot.profiles import load_configuration

    _settings, profiles = load_configuration(None)
    candidate = ArmSpec("candidate", "perspecto", "perspecto")
    assert resolve_baseline("random", candidate, profiles) == ArmSpec("baseline", "random", "random")
    head = git_commit("HEAD")
    assert head is not None and len(head) == 40
    revision = resolve_baseline("HEAD", candidate, profiles)
    assert (revision.name, revision.profile, revision.revision) == (f"perspecto@{head[:8]}", "perspecto", head)
    # At time odds the candidate's own profile is a baseline, named for its clock in the records.
    assert resolve_baseline("perspecto", candidate, profiles, 0.5) == ArmSpec("baseline", "perspecto@T0.5", "perspecto",
                                                                             move_time=0.5)
    assert resolve_baseline("HEAD", candidate, profiles, 1.0).name == f"perspecto@{head[:8]}@T1"
    for spec, message in (("perspecto", "the candidate's own profile"), ("ucc-basic_cpp", "UCC program"),
                          ("no-such-rev-or-profile", "neither a profile")):
        with pytest.raises(GauntletError, match=message):
            resolve_baseline(spec, candidate, profiles)
    # A folder there that holds something else is not taken for the revision's checkout.
    (tmp_path / head).mkdir()
    with pytest.raises(GauntletError, match="not " + head[:8]):
        prepare_worktree(revision, tmp_path, Console(file=open(os.devnull, "w")))
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    (config / "profiles" / "ucc-one.toml").write_text(
        f'engine = "ucc"\n[engine_params]\ncommand = "{sys.executable}"\n', encoding="utf-8")
    capsys.readouterr()
    assert main(["gauntlet", "ucc-one", "--via", "lab", "--baseline", "HEAD", "--baseline-dir", str(tmp_path),
                 "--config", str(config)]) == 2
    assert "--via lab plays profiles of this Perspecto only" in capsys.readouterr().out


def test_time_odds_give_each_arm_its_clock_in_the_referee_and_its_wrapper_and_keep_them_on_resume(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``--baseline-move-time``: the same profile at -T 4 against -T 1 through the referee's route (the games a
    stand-in): every job's clock and the wrapper it runs are its arm's, the plan keeps them for --resume."""
    import bot.commands.gauntlet_run.jobs as gauntlet_jobs
    from bot.cli import main

    played: list[GauntletJob] = []

    def stand_in(job: GauntletJob) -> GauntletOutcome:
        played.append(job)
        loser = job.our_side.other if job.clock.move_time == 4 else job.our_side  # the longer clock wins
        return GauntletOutcome(job, forfeit_record(job, loser), 0.0)

    monkeypatch.setattr(gauntlet_jobs, "play_gauntlet_job", stand_in)
    referee = tmp_path / "stratego"
    referee.write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    referee.chmod(0o755)
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    (config / "profiles" / "ucc-one.toml").write_text(
        f'engine = "ucc"\n[engine_params]\ncommand = "{sys.executable}"\n', encoding="utf-8")
    records, out = tmp_path / "records", tmp_path / "verdict.json"
    common = ["--config", str(config), "--json", str(out)]
    assert main(["gauntlet", "ucc-one", "--profile", "perspecto", "--baseline", "perspecto", "--move-time", "4",
                 "--baseline-move-time", "1", "--max-slots", "4", "--seed", "5", "--referee", str(referee),
                 "--records", str(records), "--concurrency", "1", *common]) == 0
    text = capsys.readouterr().out
    assert "-T 4 against 1" in text and "perspecto@T1" in text
    assert len(played) == 8
    assert {(job.ours, job.clock.move_time) for job in played} == {("perspecto", 4.0), ("perspecto@T1", 1.0)}
    wrappers = {job.ours: job.our_program for job in played}
    assert wrappers["perspecto"] != wrappers["perspecto@T1"]
    for name, seconds in (("perspecto", "4"), ("perspecto@T1", "1")):
        path = wrappers[name]
        assert path is not None and f"--move-time {seconds} " in path.read_text()
    verdict = json.loads(out.read_text())
    assert verdict["stratified"]["mean"] == 1.0 and verdict["plan"]["baseline"]["move_time"] == 1.0
    (records / f"{played[3].game_id}.json").unlink()
    gone, played[:] = played[3], []
    assert main(["gauntlet", "--resume", str(records), "--referee", str(referee), *common]) == 0
    assert [(job.game_id, job.clock) for job in played] == [(gone.game_id, gone.clock)]
    # Time odds are the referee's: refused through the lab, and without a baseline.
    capsys.readouterr()
    for extra in (["--baseline", "perspecto"], []):
        assert main(["gauntlet", "ucc-one", "--via", "lab", "--baseline-move-time", "1", *extra, *common]) == 2
    said = capsys.readouterr().out
    assert "the lab's rules give every player of a game one clock" in said and "give --baseline" in said


def test_a_single_arm_run_resumes_with_the_games_it_has_and_shows_failures_per_100(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import bot.commands.gauntlet_run.jobs as gauntlet_jobs
    from bot.cli import main
    from engine_ext.rules.record import GameRecord, RecordedPlayer

    played: list[str] = []

    def stand_in(job: GauntletJob) -> GauntletOutcome:
        played.append(job.game_id)
        red, blue = (job.ours, job.opponent) if job.our_side == Side.RED else (job.opponent, job.ours)
        record = GameRecord(ruleset="classic", options={}, red=RecordedPlayer(red, {}), blue=RecordedPlayer(blue, {}),
                            result={"winner": str(job.our_side), "reason": "forfeit_timeout", "plies": 0,
                                    "forfeits": [str(job.our_side.other)]}, game_id=job.game_id)
        return GauntletOutcome(job, record, 0.0)

    monkeypatch.setattr(gauntlet_jobs, "play_gauntlet_job", stand_in)
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    (config / "profiles" / "ucc-one.toml").write_text(
        f'engine = "ucc"\n[engine_params]\ncommand = "{sys.executable}"\n', encoding="utf-8")
    records, out = tmp_path / "records", tmp_path / "table.json"
    args = ["gauntlet", "ucc-one", "--via", "lab", "--games", "4", "--seed", "2", "--config", str(config),
            "--json", str(out)]
    assert main([*args, "--records", str(records)]) == 0
    assert len(played) == 4 and "failures per 100 games" in capsys.readouterr().out
    (records / f"{played[1]}.json").unlink()
    gone, played[:] = played[1], []
    assert main([*args, "--resume", str(records)]) == 0
    assert played == [gone]
    table = json.loads(out.read_text())
    assert table["all"]["games"] == 4 and table["all"]["failures_per_100"]["flag taken by a miner"]["games"] == 4
