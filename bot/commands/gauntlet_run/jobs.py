"""One game, one job: the clock, the job and its outcome, playing a job, and the run loop that hands the jobs
to an executor (here a thread pool, or the cluster's) and their outcomes back to a feed."""

from __future__ import annotations

import argparse
import shlex
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from bot.commands.gauntlet_run.opponents import Opponent
from bot.ucc.referee import play_referee_game, stop_live_games
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord

if TYPE_CHECKING:
    from engine_ext.lab.runner import GameJob


@dataclass(frozen=True)
class Clock:
    """The referee's conditions: seconds an answer (-T), its turn cap (-m), and the wall-time bound of a game."""

    move_time: float
    max_turns: int
    wall_time: float


@dataclass(frozen=True)
class GauntletJob:
    """One game, self-contained and picklable: everything ``play_gauntlet_job`` needs, on any worker that sees
    the same paths. A slot is (opponent, slot number): our colour follows the slot number (even: red), our setup
    and engine seed ``setup_seed`` (None: a fresh one each game); ``program_seed`` is the opponent program's,
    None for every UCC 2012 program (they seed from the clock or the OS: docs/lab.md, The gauntlet). In a
    paired run both arms play each slot: ``arm`` says which ("" in a single-arm run)."""

    game_id: str
    ours: str  # our player's name in the record
    opponent: str
    slot: int
    our_side: Side
    clock: Clock
    via: str  # "referee" or "lab"
    work: Path  # the referee's logs and the games' small scripts go here
    arm: str = ""
    setup_seed: int | None = None
    program_seed: int | None = None
    referee: Path | None = None  # --via referee: the referee, our program (a wrapper) and the opponent's
    our_program: Path | None = None
    opponent_program: Path | None = None
    lab: GameJob | None = None  # --via lab: the runner's game (engine_ext/lab/runner.py)


@dataclass(frozen=True)
class GauntletOutcome:
    """What a job gives back: the game's record (the caller saves it), or why there is none."""

    job: GauntletJob
    record: GameRecord | None
    seconds: float
    error: str | None = None


def play_gauntlet_job(job: GauntletJob) -> GauntletOutcome:
    """Play one job's game and return its record (saved by whoever submitted the job: a worker elsewhere
    sends it back). A game that fails is an outcome with its error, never an exception."""
    started = time.monotonic()
    try:
        if job.via == "lab":
            from engine_ext.lab.runner import play_game_with_record

            assert job.lab is not None
            _outcome, record = play_game_with_record(job.lab)
            record.game_id = job.game_id
            return GauntletOutcome(job, record, time.monotonic() - started)
        return _play_referee_job(job, started)
    except Exception as exc:  # a job's failure is its game's, reported, not the run's end
        return GauntletOutcome(job, None, time.monotonic() - started, f"{type(exc).__name__}: {exc}")


def _play_referee_job(job: GauntletJob, started: float) -> GauntletOutcome:
    assert job.referee is not None and job.our_program is not None and job.opponent_program is not None
    job.work.mkdir(parents=True, exist_ok=True)
    ours_path = job.our_program
    if job.setup_seed is not None:  # the wrapper passes its arguments on: this game's seed
        ours_path = job.work / f"{job.game_id}.sh"
        ours_path.write_text(f"#!/bin/sh\nexec {shlex.quote(str(job.our_program.absolute()))} --seed "
                             f"{job.setup_seed} \"$@\"\n", encoding="utf-8")
        ours_path.chmod(0o755)
    theirs_path = job.opponent_program
    red, blue = (ours_path, theirs_path) if job.our_side == Side.RED else (theirs_path, ours_path)
    names = {job.our_side: job.ours, job.our_side.other: job.opponent}
    game = play_referee_game(job.referee, red, blue, names=names, log_path=job.work / f"{job.game_id}.log",
                             move_time=job.clock.move_time, max_turns=job.clock.max_turns,
                             wall_time=job.clock.wall_time, game_id=job.game_id)
    return GauntletOutcome(job, game.record, time.monotonic() - started, game.error)


class JobFeed(Protocol):
    """Where the run loop gets its jobs and sends their outcomes. ``next_job``: the next job to submit, or None
    (with jobs in flight: none until one of them is back; with none in flight: the run is over)."""

    def next_job(self) -> GauntletJob | None: ...

    def done(self, outcome: GauntletOutcome) -> None: ...


class ListFeed:
    """A fixed list of jobs, in order."""

    def __init__(self, jobs: Sequence[GauntletJob], on_outcome: Callable[[GauntletOutcome], None]) -> None:
        self._jobs = iter(jobs)
        self._on_outcome = on_outcome

    def next_job(self) -> GauntletJob | None:
        return next(self._jobs, None)

    def done(self, outcome: GauntletOutcome) -> None:
        self._on_outcome(outcome)


def run_jobs(feed: JobFeed, executor: Executor, in_flight: int) -> None:
    """Hand the feed's jobs to ``executor`` (``concurrent.futures.Executor.submit``: locally a thread pool),
    at most ``in_flight`` at a time, and the outcomes back to the feed in the order they finish. Jobs are
    submitted in the feed's order, so jobs next to each other (a slot's two arms) meet the same load."""
    pending: set[Future[GauntletOutcome]] = set()
    try:
        while True:
            while len(pending) < in_flight:
                job = feed.next_job()
                if job is None:
                    break
                pending.add(executor.submit(play_gauntlet_job, job))
            if not pending:
                return
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                feed.done(future.result())
    except KeyboardInterrupt:
        for future in pending:
            future.cancel()
        # The games in play here are in sessions of their own: stopped with the run, not left to play on. A
        # stopped game has no outcome, so nothing of it is recorded.
        stop_live_games()
        raise


def local_executor(concurrency: int) -> ThreadPoolExecutor:
    """The executor of a run on this machine: threads, each waiting on its game's processes."""
    return ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="gauntlet")


def slot_side(slot: int) -> Side:
    """Our colour in a slot: even slots red, odd slots blue (colours alternate against each opponent)."""
    return Side.RED if slot % 2 == 0 else Side.BLUE


def game_id(ours: str, opponent: str, slot: int) -> str:
    return f"{ours}-vs-{opponent}-{slot:05d}"


def interleaved(opponents: Sequence[Opponent], counts: dict[str, int]) -> Iterator[tuple[Opponent, int]]:
    """Game 0 against every opponent, then game 1 against every one, ...: a run stopped early has played
    every opponent about equally."""
    for index in range(max(counts.values())):
        for opponent in opponents:
            if index < counts[opponent.name]:
                yield opponent, index


def make_executor(args: argparse.Namespace, concurrency: int) -> Executor:
    """Where the games are played: on the cluster's workers checked at the start (--cluster), else here,
    ``concurrency`` at a time."""
    if getattr(args, "cluster_workers", None) is not None:
        from bot.commands.gauntlet_run.cluster import ClusterExecutor

        return ClusterExecutor(args.cluster_workers)
    return local_executor(concurrency)
