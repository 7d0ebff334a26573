"""A single-arm run: the interleaved games of one profile, their feed (learning from the games as they come
back on the lab's route) and the run."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.console import Console

from bot.commands.gauntlet_run.jobs import Clock, GauntletJob, GauntletOutcome, interleaved, make_executor, run_jobs
from bot.commands.gauntlet_run.lab_route import lab_games, lab_job, slot_seed
from bot.commands.gauntlet_run.opponents import Opponent
from bot.commands.gauntlet_run.records import existing_score, save_outcome, shown_setup
from bot.commands.gauntlet_run.referee_route import referee_jobs
from bot.profiles import ProfileSet
from engine_ext.rules.record import GameRecord


class SingleArmFeed:
    """The single-arm gauntlet's games in the interleaved order; on the lab's route, a game's job is made when
    it is submitted, so it learns from the games finished by then (as the referee's route learns in its state
    folder), unless ``learn`` is off."""

    def __init__(self, order: Sequence[tuple[str, int]], make_job: Callable[[str, int, Sequence[tuple[str, str]]],
                 GauntletJob], records: Path, console: Console, *, learn: bool) -> None:
        self._order = iter(order)
        self._make_job = make_job
        self._records, self._console, self._learn = records, console, learn
        self.seen: dict[str, list[tuple[str, str]]] = {name: [] for name, _slot in order}
        self.paths: list[Path] = []

    def next_job(self) -> GauntletJob | None:
        for opponent, slot in self._order:
            job = self._make_job(opponent, slot, self.seen[opponent] if self._learn else ())
            path = self._records / f"{job.game_id}.json"
            if existing_score(path, job.ours) is None:
                return job
            self.paths.append(path)  # played before (--resume)
            self._learn_from(job, GameRecord.load(path))
        return None

    def done(self, outcome: GauntletOutcome) -> None:
        path = save_outcome(outcome, self._records, self._console)
        if path is None:
            return
        self.paths.append(path)
        if outcome.record is not None:
            self._learn_from(outcome.job, outcome.record)

    def _learn_from(self, job: GauntletJob, record: GameRecord) -> None:
        if self._learn:
            shown = shown_setup(record, job.ours)
            if shown is not None:
                self.seen[job.opponent].append(shown)


def play_single(args: argparse.Namespace, profiles: ProfileSet, opponents: list[Opponent], counts: dict[str, int],
                ours: str, records: Path, concurrency: int, console: Console) -> list[Path]:
    clock = Clock(args.move_time, args.max_turns, args.wall_time)
    order = [(o.name, slot) for o, slot in interleaved(opponents, counts)]
    make_job: Callable[[str, int, Sequence[tuple[str, str]]], GauntletJob]
    if args.via == "referee":
        jobs = {(j.opponent, j.slot): j for j in referee_jobs(args, opponents, counts, ours, records)}
        referee = next(iter(jobs.values())).referee or "of each worker"
        console.print(f"{len(jobs)} games through the referee {referee} (-T "
                      f"{args.move_time:g} -m {args.max_turns}), {concurrency} at a time, each stopped after "
                      f"{args.wall_time:g} s; records in {records}", highlight=False, soft_wrap=True)

        def make_job(opponent: str, slot: int, _seen: Sequence[tuple[str, str]]) -> GauntletJob:
            return jobs[(opponent, slot)]
    else:
        games = lab_games(args, opponents, {ours: profiles.get(ours)}, records)
        console.print(f"{len(order)} games in the lab (Perspecto's UCC adapter), {args.move_time:g} s an answer, "
                      f"draw at {games.rules.move_limit} plies, {concurrency} workers, seed {games.seed}; records "
                      f"in {records}", highlight=False, soft_wrap=True)

        def make_job(opponent: str, slot: int, seen: Sequence[tuple[str, str]]) -> GauntletJob:
            return lab_job(games, ours, opponent, slot, clock, setup_seed=slot_seed(games.seed, opponent, slot),
                           seen=seen)
    # The referee's route learns in its state folder; the lab's, from the records as they come in.
    feed = SingleArmFeed(order, make_job, records, console, learn=args.via == "lab" and not args.no_learn)
    with make_executor(args, concurrency) as executor:
        run_jobs(feed, executor, concurrency)
    return sorted(feed.paths)
