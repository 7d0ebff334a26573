"""A paired run (``--baseline``): the arms, a baseline from a profile or a git revision's worktree, the plan
saved beside the records, the paired feed, and the schedule played again from the records."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from rich.console import Console

from bot.commands.gauntlet_run.jobs import (
    Clock,
    GauntletJob,
    GauntletOutcome,
    game_id,
    make_executor,
    run_jobs,
    slot_side,
)
from bot.commands.gauntlet_run.lab_route import lab_games, lab_job, slot_seed
from bot.commands.gauntlet_run.opponents import GauntletError, Opponent
from bot.commands.gauntlet_run.records import FAILED_SUFFIX, existing_score, record_score, save_outcome, shown_setup
from bot.commands.gauntlet_run.referee_route import find_referee, program_path, write_our_wrapper
from bot.profiles import ProfileSet
from bot.safe_text import terminal_safe
from engine_ext.lab.paired import ARMS, Arm, PairedSchedule, PairedSprt, Slot
from engine_ext.rules.record import GameRecord

PLAN_FILE = "paired.json"
REVISION_ON_CLUSTER = ("--cluster plays a baseline that is a profile: a git revision's baseline is a worktree "
                       "bootstrapped on this machine, which the workers do not have. Play it here (without "
                       "--cluster), or put what the revision changes in a profile and give --baseline PROFILE")
PLAN_FORMAT = "perspecto-paired-gauntlet/1"
BASELINES_DIR_ENV = "PERSPECTO_BASELINES"


@dataclass(frozen=True)
class ArmSpec:
    """One arm of a paired run: its name in the records, the profile it plays, for a baseline from a git
    revision the commit and the worktree where that revision is checked out and bootstrapped, and for a
    baseline at time odds (``--baseline-move-time``) its own seconds an answer."""

    arm: Arm
    name: str
    profile: str
    revision: str | None = None
    worktree: Path | None = None
    move_time: float | None = None  # None: the run's --move-time

    @property
    def perspecto(self) -> list[str] | None:
        """The Perspecto that plays it: None, this one; else the worktree's own."""
        return None if self.worktree is None else [str(self.worktree / ".venv" / "bin" / "perspecto")]

    def config(self, ours: str | None) -> str | None:
        """Its configuration directory: ours, or the revision's own ``config/``."""
        if self.worktree is None:
            return ours
        folder = self.worktree / "config"
        return str(folder) if folder.is_dir() else None

    def to_json(self) -> dict[str, Any]:
        return {"arm": self.arm, "name": self.name, "profile": self.profile, "revision": self.revision,
                "worktree": None if self.worktree is None else str(self.worktree), "move_time": self.move_time}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArmSpec:
        worktree, move_time = data.get("worktree"), data.get("move_time")
        return cls(data["arm"], data["name"], data["profile"], data.get("revision"),
                   None if worktree is None else Path(worktree), None if move_time is None else float(move_time))


def default_baselines_dir() -> Path:
    """Where revisions are checked out: $PERSPECTO_BASELINES, else $XDG_CACHE_HOME/perspecto/baselines (outside
    the repository, so its worktrees never show in ``git status``)."""
    if os.environ.get(BASELINES_DIR_ENV):
        return Path(os.environ[BASELINES_DIR_ENV])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "perspecto" / "baselines"


def git_commit(revision: str) -> str | None:
    """The commit a revision names in the repository here, or None."""
    try:
        done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
                              capture_output=True, text=True, timeout=30, check=False)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def resolve_baseline(spec: str, candidate: ArmSpec, profiles: ProfileSet, move_time: float | None = None) -> ArmSpec:
    """``--baseline``: a profile of this configuration, else a git revision (its worktree made later). With
    ``move_time`` (``--baseline-move-time``) the baseline answers in its own time, and its name in the records
    says so (``PROFILE@T1``): the candidate's own profile is then a baseline, the same engine at time odds."""
    odds = "" if move_time is None else f"@T{move_time:g}"
    if spec in profiles.profiles:
        if profiles.profiles[spec].engine == "ucc":
            raise GauntletError(f"--baseline {spec!r} is a UCC program's profile, not one of ours")
        if spec == candidate.profile and move_time is None:
            raise GauntletError(f"--baseline {spec!r} is the candidate's own profile: name another profile, a git "
                                "revision to play this profile as it was there, or give --baseline-move-time to "
                                "play it at time odds")
        return ArmSpec("baseline", f"{spec}{odds}", spec, move_time=move_time)
    commit = git_commit(spec)
    if commit is None:
        raise GauntletError(f"--baseline {spec!r} is neither a profile (known: {', '.join(sorted(profiles.profiles))}) "
                            "nor a git revision of this repository")
    return ArmSpec("baseline", f"{candidate.profile}@{commit[:8]}{odds}", candidate.profile, commit,
                   move_time=move_time)


def prepare_worktree(arm: ArmSpec, folder: Path, console: Console) -> ArmSpec:
    """The revision checked out in ``folder/SHA`` (``git worktree add --detach``) and bootstrapped there
    (``scripts/bootstrap`` with PERSPECTO_VENV=its .venv: a fresh one fetches the dependencies and compiles
    the engine, minutes); a worktree already bootstrapped is used as it is."""
    assert arm.revision is not None
    where = (folder / arm.revision).absolute()
    perspecto = where / ".venv" / "bin" / "perspecto"
    started = time.monotonic()
    if not where.exists():
        where.parent.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["git", "worktree", "add", "--detach", str(where), arm.revision], capture_output=True,
                              text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise GauntletError(f"git worktree add {where} {arm.revision[:8]} failed: {done.stderr.strip()[-500:]}")
    head = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"], capture_output=True, text=True,
                          timeout=30, check=False).stdout.strip()
    if head != arm.revision:
        raise GauntletError(f"{where} holds {head[:8] or 'no checkout'}, not {arm.revision[:8]}: remove it or give "
                            "another --baseline-dir")
    bootstrap = where / "scripts" / "bootstrap"
    if bootstrap.is_file():
        console.print(f"baseline {arm.revision[:8]}: bootstrapping {where} (scripts/bootstrap; a fresh worktree "
                      "takes minutes)", highlight=False, soft_wrap=True)
        env = {**os.environ, "PERSPECTO_VENV": str(where / ".venv")}
        done = subprocess.run([str(bootstrap)], cwd=where, env=env, capture_output=True, text=True, timeout=3600,
                              check=False)
        if done.returncode != 0:
            raise GauntletError(f"{bootstrap} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    if not (perspecto.is_file() and os.access(perspecto, os.X_OK)):
        raise GauntletError(f"the baseline's worktree {where} has no {perspecto} after its bootstrap")
    console.print(f"baseline {arm.revision[:8]}: ready in {where} ({time.monotonic() - started:.0f} s)",
                  highlight=False, soft_wrap=True)
    return dataclasses.replace(arm, worktree=where)


@dataclass(frozen=True)
class PairedPlan:
    """What a paired run plays, saved as ``DIR/paired.json`` before the first game: ``--resume DIR`` and
    ``--report DIR`` read it and play (or replay) the same schedule."""

    candidate: ArmSpec
    baseline: ArmSpec
    opponents: list[str]  # as given: profile names or programs' paths
    seed: int
    max_slots: int
    sprt: str | None
    via: str
    move_time: float
    max_turns: int
    wall_time: float
    no_learn: bool

    def arm(self, arm: Arm) -> ArmSpec:
        return self.candidate if arm == "candidate" else self.baseline

    def clock(self, arm: Arm) -> Clock:
        """The referee's conditions of the arm's games: its own seconds an answer at time odds, else the run's."""
        move_time = self.arm(arm).move_time
        return Clock(self.move_time if move_time is None else move_time, self.max_turns, self.wall_time)

    @property
    def move_times(self) -> str:
        """``-T`` as the run's first line says it: one time, or the candidate's and the baseline's."""
        times = {self.clock(arm).move_time for arm in ARMS}
        if len(times) == 1:
            return f"-T {self.move_time:g}"
        return f"-T {self.clock('candidate').move_time:g} against {self.clock('baseline').move_time:g}"

    def save(self, folder: Path) -> None:
        data = {"format": PLAN_FORMAT, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}
        data["candidate"], data["baseline"] = self.candidate.to_json(), self.baseline.to_json()
        (folder / PLAN_FILE).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, folder: Path) -> PairedPlan:
        path = folder / PLAN_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != PLAN_FORMAT:
                raise GauntletError(f"{path}: not a paired gauntlet's plan ({data.get('format')!r})")
            fields = {f.name for f in dataclasses.fields(cls)}
            values = {k: v for k, v in data.items() if k in fields}
            values["candidate"] = ArmSpec.from_json(values["candidate"])
            values["baseline"] = ArmSpec.from_json(values["baseline"])
            return cls(**values)
        except OSError as exc:
            raise GauntletError(f"{path}: {exc.strerror or exc} (is {folder} a paired gauntlet's records?)") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise GauntletError(f"{path}: unreadable: {exc}") from None

    def schedule(self, opponents: Sequence[str]) -> PairedSchedule:
        return PairedSchedule(list(opponents), self.max_slots,
                              None if self.sprt is None else PairedSprt.parse(self.sprt))


MakePairedJob = Callable[[ArmSpec, Slot, Sequence[tuple[str, str]]], GauntletJob]


class PairedFeed:
    """A paired run's games: the schedule's slots, each as two jobs next to each other (the candidate's first on
    even slot numbers, the baseline's first on odd ones), so the two arms meet the same load. A job whose record
    is already in the folder (``--resume``) is not played: its result goes to the schedule as it is."""

    def __init__(self, plan: PairedPlan, schedule: PairedSchedule, make_job: MakePairedJob, records: Path,
                 console: Console, *, learn: bool) -> None:
        self.plan, self.schedule, self._make_job = plan, schedule, make_job
        self._records, self._console, self._learn = records, console, learn
        self._ready: list[GauntletJob] = []
        self.seen: dict[tuple[Arm, str], list[tuple[str, str]]] = {}
        self.resumed = 0

    def next_job(self) -> GauntletJob | None:
        while not self._ready:
            slot = self.schedule.next_slot()
            if slot is None:
                return None
            for arm in ARMS if slot.number % 2 == 0 else ARMS[::-1]:
                spec = self.plan.arm(arm)
                job = self._make_job(spec, slot, self.seen.get((arm, slot.opponent), []) if self._learn else ())
                path = self._records / f"{job.game_id}.json"
                score = existing_score(path, job.ours)
                if score is None:
                    self._ready.append(job)
                else:
                    self.resumed += 1
                    self._learn_from(job, path)
                    self.schedule.record(slot.opponent, slot.number, arm, score)
        return self._ready.pop(0)

    def _learn_from(self, job: GauntletJob, path: Path) -> None:
        if self._learn:
            shown = shown_setup(GameRecord.load(path), job.ours)
            if shown is not None:
                self.seen.setdefault((cast(Arm, job.arm), job.opponent), []).append(shown)

    def done(self, outcome: GauntletOutcome) -> None:
        job = outcome.job
        path = save_outcome(outcome, self._records, self._console)
        score = None if outcome.record is None else record_score(outcome.record, job.ours)
        if path is not None:
            self._learn_from(job, path)
        self.schedule.record(job.opponent, job.slot, cast(Arm, job.arm), score)


def paired_jobs(args: argparse.Namespace, plan: PairedPlan, profiles: ProfileSet, opponents: list[Opponent],
                records: Path) -> MakePairedJob:
    """How a paired run makes each slot's job on its route; the referee's route writes each arm's wrapper
    (the baseline revision's with its own ``perspecto ucc``) and the opponents' programs first."""
    by_name = {o.name: o for o in opponents}
    if plan.via == "lab":
        games = lab_games(args, opponents, {plan.candidate.name: profiles.get(plan.candidate.profile),
                                            plan.baseline.name: profiles.get(plan.baseline.profile)}, records)

        def make_lab_job(arm: ArmSpec, slot: Slot, seen: Sequence[tuple[str, str]]) -> GauntletJob:
            return lab_job(games, arm.name, slot.opponent, slot.number, plan.clock(arm.arm), arm=arm.arm,
                           setup_seed=slot_seed(plan.seed, slot.opponent, slot.number), seen=seen)
        return make_lab_job
    work = records / "referee"
    work.mkdir(parents=True, exist_ok=True)
    referee: Path | None = None
    wrappers: dict[Arm, Path] = {}
    programs: dict[str, Path] = {}
    if args.cluster is None:  # on a cluster each worker puts its own (bot/commands/gauntlet_run/cluster.py)
        referee = find_referee(args.referee)
        for arm in ARMS:
            spec = plan.arm(arm)
            wrappers[arm] = work / f"{spec.name}-ucc"
            write_our_wrapper(wrappers[arm], spec.profile, plan.clock(arm).move_time, spec.config(args.config),
                              None if plan.no_learn else records / f"state-{arm}", command=spec.perspecto)
        programs = {o.name: program_path(o, work) for o in opponents}

    def make_referee_job(arm: ArmSpec, slot: Slot, _seen: Sequence[tuple[str, str]]) -> GauntletJob:
        return GauntletJob(game_id=game_id(arm.name, slot.opponent, slot.number), ours=arm.name,
                           opponent=by_name[slot.opponent].name, slot=slot.number, our_side=slot_side(slot.number),
                           clock=plan.clock(arm.arm), via="referee", work=work, arm=arm.arm,
                           setup_seed=slot_seed(plan.seed, slot.opponent, slot.number), program_seed=None,
                           referee=referee, our_program=wrappers.get(arm.arm),
                           opponent_program=programs.get(slot.opponent))
    return make_referee_job


def new_plan(args: argparse.Namespace, profiles: ProfileSet, opponents: list[Opponent],
             console: Console) -> PairedPlan:
    candidate = ArmSpec("candidate", args.profile, args.profile)
    if args.baseline_move_time is not None:
        if not args.baseline_move_time > 0:
            raise GauntletError(f"--baseline-move-time must be above 0, not {args.baseline_move_time:g}")
        if args.via == "lab":
            raise GauntletError("--baseline-move-time plays through the referee: the lab's rules give every player "
                                "of a game one clock")
    baseline = resolve_baseline(args.baseline, candidate, profiles, args.baseline_move_time)
    if baseline.revision is not None:
        if args.via == "lab":
            raise GauntletError("--via lab plays profiles of this Perspecto only: a revision's baseline plays "
                                "through the referee (its own perspecto ucc)")
        if args.cluster is not None:
            raise GauntletError(REVISION_ON_CLUSTER)
        baseline = prepare_worktree(baseline, args.baseline_dir or default_baselines_dir(), console)
    if args.sprt is not None:
        PairedSprt.parse(args.sprt)  # a bad --sprt is an error before anything is played
    max_slots = args.max_slots if args.max_slots is not None else args.games * len(opponents)
    if max_slots < 1:
        raise GauntletError(f"--max-slots must be at least 1, not {max_slots}")
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") >> 1
    return PairedPlan(candidate, baseline, list(args.opponents) or [o.name for o in opponents], seed, max_slots,
                      args.sprt, args.via, args.move_time, args.max_turns, args.wall_time, args.no_learn)


def play_paired(args: argparse.Namespace, plan: PairedPlan, profiles: ProfileSet, opponents: list[Opponent],
                records: Path, concurrency: int, console: Console) -> PairedSchedule:
    schedule = plan.schedule([o.name for o in opponents])
    make_job = paired_jobs(args, plan, profiles, opponents, records)
    feed = PairedFeed(plan, schedule, make_job, records, console, learn=plan.via == "lab" and not plan.no_learn)
    console.print(f"paired: {terminal_safe(plan.candidate.name)} (candidate) and {terminal_safe(plan.baseline.name)} "
                  "(baseline) on the same slots, "
                  f"at most {plan.max_slots} slots, {'SPRT ' + str(schedule.sprt) if schedule.sprt else 'no SPRT'}; "
                  f"via {plan.via}, {plan.move_times} -m {plan.max_turns}, {concurrency} at a time, seed "
                  f"{plan.seed}; records in {records}", highlight=False, soft_wrap=True)
    with make_executor(args, concurrency) as executor:
        run_jobs(feed, executor, concurrency)
    if feed.resumed:
        console.print(f"{feed.resumed} games taken from the records already there", highlight=False)
    return schedule


def replay_schedule(plan: PairedPlan, opponents: Sequence[str], records: Path) -> PairedSchedule:
    """The schedule a paired run played, again from its records: a game with a record has its score, one that
    failed (``GAME_ID.failed``) none; the first game with neither was not played, and the schedule ends there
    (a run stopped short, or still playing)."""
    schedule = plan.schedule(opponents)
    while (slot := schedule.next_slot()) is not None:
        for arm in ARMS:
            spec = plan.arm(arm)
            gid = game_id(spec.name, slot.opponent, slot.number)
            score = existing_score(records / f"{gid}.json", spec.name)
            if score is None and not (records / f"{gid}{FAILED_SUFFIX}").is_file():
                return schedule
            schedule.record(slot.opponent, slot.number, arm, score)
    return schedule


def opponent_labels(plan: PairedPlan) -> list[str]:
    """The opponents' names in the records (a program's path gives its file's name, as ``resolve_opponents``)."""
    return [name if os.sep not in name else Path(name).name.removesuffix(".py") for name in plan.opponents]
