"""``perspecto gauntlet``: one engine against a set of UCC programs at a tournament clock, the yardstick of
docs/lab.md ("The gauntlet").

Two ways to play the same games, which must agree:

- ``--via referee`` (the default): the real UCC 2012 referee ``stratego`` runs each game (``bot/ucc/referee.py``),
  Perspecto as the program a ``perspecto ucc --write-wrapper`` script starts, the opponent as the program
  itself. The clock is the referee's (``-T``), with its rules (no repetition rule, a draw after ``-m`` turns).
- ``--via lab``: the strength lab's runner (``engine_ext/lab/runner.py``), the opponent through Perspecto's
  own UCC adapter (``engine = "ucc"`` profiles), the same clock and the same rules.

Every game is a job (``GauntletJob``: a slot, that is an opponent, our colour, our setup seed, the program's
seed where it takes one, the arm, the game id, the clock), self-contained and picklable, played by
``play_gauntlet_job``; the run loop (``run_jobs``) hands the jobs to an executor with the
``concurrent.futures.Executor.submit`` interface (here a thread pool) and saves the records that come back.

Every game is a record (``perspecto replay``, ``perspecto analyse``, the web view); the table is read back
from the records (``engine_ext/lab/gauntlet.py``), so ``--report FOLDER`` prints it again without playing.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import shlex
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from rich.console import Console
from rich.table import Table

from bot.config import BotProfile, ProfileError, profile_from_mapping
from bot.profiles import ProfileSet, load_configuration
from bot.settings import config_dir
from bot.tables import print_table
from bot.ucc.engine import UccCommandError, UccEngineParams
from bot.ucc.referee import (
    DEFAULT_MAX_TURNS,
    DEFAULT_MOVE_TIME,
    RefereeError,
    play_referee_game,
    referee_move_limit,
)
from bot.web.options import add_web_argument
from bot.web.service import LabWeb, announce
from engine_ext.engine.settings import usable_cores
from engine_ext.lab.analysis import GameAnalysis, analyse_record
from engine_ext.lab.game_events import ReplayError
from engine_ext.lab.gauntlet import OpponentSummary, summarise_gauntlet, total
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord

if TYPE_CHECKING:
    from engine_ext.lab.runner import GameJob

UCC_PREFIX = "ucc-"  # the shipped sparring profiles: ucc-peternlewis, ucc-celsius, ...
DEFAULT_GAMES = 4
DEFAULT_WALL_TIME = 1800.0  # seconds a game may take before it is stopped (the referee has no repetition rule)
REFEREE_ENV = "PERSPECTO_UCC2012_REFEREE"
WIDE = 200  # columns the table gets when the output is not a terminal
PROGRAMS_ENV = "PERSPECTO_UCC2012"


class GauntletError(ValueError):
    """A gauntlet that cannot start: an unknown opponent, no referee, a bad option; the message says why."""


@dataclass(frozen=True)
class Opponent:
    """A program to play: its name in the records and tables, its profile (``engine = "ucc"``)."""

    name: str
    profile: BotProfile

    @property
    def params(self) -> UccEngineParams:
        return UccEngineParams.model_validate(self.profile.engine_param_values())


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "gauntlet",
        help="one engine against UCC programs at a tournament clock: W/D/L, score interval, causes of loss",
        description="Play a profile against UCC 2012 programs (the shipped ucc-* profiles, any profile with engine "
        "= \"ucc\", or the path of any program that speaks the UCC protocol) at the referee's clock, colours "
        "alternating, games in parallel; report per opponent W/D/L, the score with its 95 %% interval, forfeits, "
        "game lengths and the causes of every loss (docs/lab.md, The gauntlet).",
    )
    p.add_argument("opponents", nargs="*", metavar="OPPONENT",
                   help="a ucc profile name or a program's path (default: every ucc-* profile)")
    p.add_argument("--profile", default="perspecto", help="the profile that runs the gauntlet (default %(default)s)")
    p.add_argument("--via", choices=("referee", "lab"), default="referee",
                   help="play through the real referee stratego (default) or the lab's runner and Perspecto's own "
                   "UCC adapter")
    p.add_argument("--games", type=int, default=DEFAULT_GAMES,
                   help="games against each opponent (default %(default)s; colours alternate)")
    p.add_argument("--games-against", action="append", default=[], metavar="OPPONENT=N",
                   help="games against one opponent, overriding --games (repeatable)")
    p.add_argument("--move-time", type=float, default=DEFAULT_MOVE_TIME, metavar="S",
                   help="seconds an answer, the referee's -T (default %(default)g)")
    p.add_argument("--max-turns", type=int, default=DEFAULT_MAX_TURNS, metavar="N",
                   help="the referee's -m: a draw after N-1 turns (a move of each; default %(default)s)")
    p.add_argument("--wall-time", type=float, default=DEFAULT_WALL_TIME, metavar="S",
                   help="stop a referee game after S seconds (recorded as adjourned, counted as a draw; default "
                   "%(default)g); the lab's games end at the turn cap")
    p.add_argument("--concurrency", type=int, default=None,
                   help=f"games at a time (default: the usable cores, here {usable_cores()})")
    p.add_argument("--referee", type=Path, metavar="PATH",
                   help=f"the referee stratego (default ${REFEREE_ENV}, else the build's judge/manager/stratego "
                   f"beside ${PROGRAMS_ENV})")
    p.add_argument("--records", type=Path, metavar="DIR",
                   help="where the games' records go (default records/gauntlet-DATE-TIME)")
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--seed", type=int, default=None, help="--via lab: the setups' and engines' seed")
    p.add_argument("--no-learn", action="store_true",
                   help="every game on its own; without it, as in a tournament, what each game showed of an "
                   "opponent's setup primes our next games against it (a memory of this run's, in DIR/state "
                   "for the referee's route: docs/ucc.md)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the table as JSON here")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help="play nothing: the table of the gauntlet records in DIR (with --profile naming our side)")
    p.add_argument("--log-level", default="warning", help="debug, info, warning or error (default %(default)s)")
    add_web_argument(p, "the games (their records, as they appear)")
    p.set_defaults(func=main)


# --- what to play -----------------------------------------------------------------------------------------


def resolve_opponents(names: Sequence[str], profiles: ProfileSet) -> list[Opponent]:
    """Profiles by name (each must be ``engine = "ucc"``), or programs by path; none: every ucc-* profile."""
    if not names:
        names = sorted(n for n in profiles.profiles if n.startswith(UCC_PREFIX))
        if not names:
            raise GauntletError(f"no opponents given and the configuration has no {UCC_PREFIX}* profiles")
    out: list[Opponent] = []
    for name in dict.fromkeys(names):
        if name in profiles.profiles:
            profile = profiles.profiles[name]
            if profile.engine != "ucc":
                raise GauntletError(f"{name!r} is a {profile.engine} profile: the gauntlet plays UCC programs "
                                    '(a profile with engine = "ucc", or a program\'s path)')
            out.append(Opponent(name, profile))
            continue
        path = Path(name)
        if os.sep in name or path.is_file():
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise GauntletError(f"{name}: not an executable file")
            label = path.name.removesuffix(".py")
            try:
                profile = profile_from_mapping({"name": label, "engine": "ucc",
                                                "engine_params": {"command": shlex.quote(str(path.resolve()))}},
                                               source=f"program {name}")
            except ProfileError as exc:
                raise GauntletError(str(exc)) from None
            out.append(Opponent(label, profile))
            continue
        known = ", ".join(sorted(n for n, p in profiles.profiles.items() if p.engine == "ucc"))
        raise GauntletError(f"{name!r} is neither a profile nor a program's path (ucc profiles: {known})")
    for opponent in out:
        try:
            opponent.params.argv()  # $PERSPECTO_UCC2012 set, the program there: say so now, not in every game
        except UccCommandError as exc:
            raise GauntletError(f"{opponent.name}: {exc}") from None
    labels = [o.name for o in out]
    if len(set(labels)) != len(labels):
        raise GauntletError(f"two opponents with the same name: {', '.join(labels)}")
    return out


def games_per_opponent(opponents: Sequence[Opponent], games: int, overrides: Sequence[str]) -> dict[str, int]:
    counts = {o.name: games for o in opponents}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise GauntletError(f"--games-against {item!r}: expected OPPONENT=N")
        name = name.strip()
        match = [o.name for o in opponents if name in (o.name, o.name.removeprefix(UCC_PREFIX))]
        if not match:
            raise GauntletError(f"--games-against {item!r}: {name!r} is not an opponent of this gauntlet")
        counts[match[0]] = int(value)
    for name, n in counts.items():
        if n < 1:
            raise GauntletError(f"{name}: at least one game, not {n}")
    return counts


def find_referee(given: Path | None) -> Path:
    """``--referee``, else $PERSPECTO_UCC2012_REFEREE, else the build's referee beside $PERSPECTO_UCC2012."""
    if given is not None:
        candidates = [given]
    elif os.environ.get(REFEREE_ENV):
        candidates = [Path(os.environ[REFEREE_ENV])]
    elif os.environ.get(PROGRAMS_ENV):
        candidates = [Path(os.environ[PROGRAMS_ENV]).parent / "judge" / "manager" / "stratego"]
    else:
        raise GauntletError(f"no referee: give --referee PATH, or set {REFEREE_ENV} (or {PROGRAMS_ENV}, the build's "
                            "bin/ folder: the sparring set's opponents/ucc2012/build OUT prints both)")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    raise GauntletError(f"the referee {candidates[0]} is not an executable file")


# --- one game, one job -------------------------------------------------------------------------------------


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


# --- the referee's route: programs ----------------------------------------------------------------------


def program_path(opponent: Opponent, folder: Path) -> Path:
    """What the referee runs for the opponent: the program itself when its command is one executable with no
    working directory of its own, else a small sh wrapper in ``folder`` (the referee passes no arguments)."""
    params = opponent.params
    argv = params.argv()
    if len(argv) == 1 and params.cwd is None:
        found = shutil.which(argv[0]) if os.sep not in argv[0] else argv[0]
        if found:
            return Path(found).resolve()
    wrapper = folder / f"{opponent.name}.sh"
    cd = f"cd {shlex.quote(str(params.cwd.resolve()))}\n" if params.cwd is not None else ""
    wrapper.write_text(f"#!/bin/sh\n{cd}exec {shlex.join(argv)}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def write_our_wrapper(path: Path, profile: str, move_time: float, config: str | None,
                      state_dir: Path | None = None, command: Sequence[str] | None = None) -> None:
    """``perspecto ucc --write-wrapper``, run as a user would: the wrapper is exactly the documented one; it
    learns in ``state_dir`` (None: learns nothing). ``command``: another Perspecto (a baseline's worktree)."""
    from bot.commands.ucc import perspecto_command

    argv = [*(command or perspecto_command()), "ucc", "--write-wrapper", str(path), "--profile", profile,
            "--move-time", f"{move_time:g}"]
    if config is not None:
        argv += ["--config", config]
    argv += ["--no-learn"] if state_dir is None else ["--state-dir", str(state_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise GauntletError(f"perspecto ucc --write-wrapper failed ({done.returncode}): "
                            f"{(done.stderr or done.stdout).strip()[-500:]}")


def referee_jobs(args: argparse.Namespace, opponents: list[Opponent], counts: dict[str, int], ours: str,
                 records: Path) -> list[GauntletJob]:
    referee = find_referee(args.referee)
    work = records / "referee"
    work.mkdir(parents=True, exist_ok=True)
    our_program = work / f"{ours}-ucc"
    # This run's own memory, as a tournament's would start: never the user's state folder.
    write_our_wrapper(our_program, ours, args.move_time, args.config,
                      None if args.no_learn else records / "state")
    programs = {o.name: program_path(o, work) for o in opponents}
    clock = Clock(args.move_time, args.max_turns, args.wall_time)
    return [GauntletJob(game_id=game_id(ours, o.name, index), ours=ours, opponent=o.name, slot=index,
                        our_side=slot_side(index), clock=clock, via="referee", work=work, referee=referee,
                        our_program=our_program, opponent_program=programs[o.name])
            for o, index in interleaved(opponents, counts)]


def game_line(record: GameRecord, ours: str, seconds: float) -> str:
    result = record.result or {}
    side = Side.RED if record.red.name == ours else Side.BLUE
    winner = result.get("winner")
    verdict = "draw" if winner is None else ("win" if Side.parse(winner) == side else "loss")
    opponent = record.blue.name if side == Side.RED else record.red.name
    return (f"{record.game_id}: {ours} ({side}) against {opponent}: {verdict} by {result.get('reason')} "
            f"in {result.get('plies')} plies, {seconds:.0f} s")


# --- the lab's route -------------------------------------------------------------------------------------


@dataclass
class LabGames:
    """What the lab's jobs share: the referee's conditions as the lab's rules, the setup source, the players."""

    rules: Any
    source: Any
    seed: int
    players: dict[str, Any]  # opponent name -> its Player; our arms' players under their names
    records: Path


def lab_games(args: argparse.Namespace, opponents: list[Opponent],
              ours: dict[str, BotProfile], records: Path) -> LabGames:
    from engine_ext.lab.runner import Rules, make_player, setup_source
    from engine_ext.rules.rulesets import get_ruleset

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") >> 1
    # The referee's conditions: its clock for every answer, no repetition rule, its turn cap.
    rules = Rules(two_squares=None, more_squares=False, move_limit=referee_move_limit(args.max_turns),
                  move_time_average=args.move_time, move_time_max=args.move_time)
    source = setup_source("generated", get_ruleset("classic"))
    players = {name: make_player(name, profile, label="A") for name, profile in ours.items()}
    # Each program gets the referee's full time an answer (-T), not what the lab's time manager leaves a bot.
    for o in opponents:
        players[o.name] = make_player(o.name, o.profile, label="B", params=[f"B.answer_time={args.move_time:g}"])
    return LabGames(rules, source, seed, players, records)


def slot_seed(seed: int, opponent: str, slot: int) -> int:
    """A slot's seed (our setup's and engine's), from the run's seed, the opponent and the slot alone."""
    return random.Random(f"gauntlet/{seed}/{opponent}/{slot}").randrange(2**31)


def lab_job(games: LabGames, ours: str, opponent: str, slot: int, clock: Clock, *, arm: str = "",
            setup_seed: int, seen: Sequence[tuple[str, str]] = ()) -> GauntletJob:
    """The lab's game of a slot: our setup and engine seed from ``setup_seed``; ``seen``, what the games
    before showed of this opponent's setups (none: learns nothing)."""
    from engine_ext.lab.runner import GameJob, Limits

    our_side = slot_side(slot)
    red_setup, blue_setup = games.source.pair(0, setup_seed)
    a = dataclasses.replace(games.players[ours], opponent_seen=tuple(seen))
    gid = game_id(ours, opponent, slot) if not arm else paired_game_id(arm, opponent, slot)
    lab = GameJob(match=gid, index=0 if our_side == Side.RED else 1, pair=slot, a=a, b=games.players[opponent],
                  a_side=our_side, red_setup=red_setup.key, blue_setup=blue_setup.key, red_seed=setup_seed,
                  blue_seed=setup_seed, limits=Limits(), rules=games.rules, records=None, seed=games.seed)
    return GauntletJob(game_id=gid, ours=ours, opponent=opponent, slot=slot, our_side=our_side, clock=clock,
                       via="lab", work=games.records, arm=arm, setup_seed=setup_seed, lab=lab)


def paired_game_id(arm: str, opponent: str, slot: int) -> str:
    return f"{arm}-vs-{opponent}-{slot:05d}"


# --- a single-arm run ------------------------------------------------------------------------------------


def save_outcome(outcome: GauntletOutcome, records: Path, console: Console) -> Path | None:
    """The record saved as ``records/GAME_ID.json`` and the game's line printed; None, and the error, when the
    game gave no record."""
    job = outcome.job
    if outcome.record is None:
        console.print(f"[red]{job.game_id}: no record: {outcome.error}[/red]", highlight=False, soft_wrap=True)
        return None
    path = records / f"{job.game_id}.json"
    outcome.record.save(path)
    console.print(game_line(outcome.record, job.ours, outcome.seconds), highlight=False, soft_wrap=True)
    return path


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
        item = next(self._order, None)
        if item is None:
            return None
        opponent, slot = item
        return self._make_job(opponent, slot, self.seen[opponent] if self._learn else ())

    def done(self, outcome: GauntletOutcome) -> None:
        path = save_outcome(outcome, self._records, self._console)
        if path is None:
            return
        self.paths.append(path)
        if self._learn and outcome.record is not None:
            shown = shown_setup(outcome.record, outcome.job.ours)
            if shown is not None:
                self.seen[outcome.job.opponent].append(shown)


def make_executor(args: argparse.Namespace, concurrency: int) -> Executor:
    """Where the games are played: here, ``concurrency`` at a time."""
    return local_executor(concurrency)


def play_single(args: argparse.Namespace, profiles: ProfileSet, opponents: list[Opponent], counts: dict[str, int],
                ours: str, records: Path, concurrency: int, console: Console) -> list[Path]:
    clock = Clock(args.move_time, args.max_turns, args.wall_time)
    order = [(o.name, slot) for o, slot in interleaved(opponents, counts)]
    make_job: Callable[[str, int, Sequence[tuple[str, str]]], GauntletJob]
    if args.via == "referee":
        jobs = {(j.opponent, j.slot): j for j in referee_jobs(args, opponents, counts, ours, records)}
        console.print(f"{len(jobs)} games through the referee {next(iter(jobs.values())).referee} (-T "
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


def shown_setup(record: GameRecord, ours: str) -> tuple[str, str] | None:
    """What ``record``'s game showed us of the opponent's setup as the store keeps it: as played, and the colour
    it played (engine_ext/beliefs/observed.py); None: nothing, or a record that does not replay."""
    from engine_ext.beliefs.observed import seen_setup
    from engine_ext.rules.replay import ReplayError, replay_positions

    side = Side.RED if record.red.name == ours else Side.BLUE
    game = None
    try:
        for position, _played in replay_positions(record):
            game = position  # the same game, one move further each time
    except (ReplayError, ValueError, KeyError):
        pass  # what it showed up to there still stands
    if game is None:
        return None
    seen = seen_setup(game, side)
    return None if seen is None else (seen.key, str(side.other))


# --- the table ----------------------------------------------------------------------------------------------


def analyse(paths: Sequence[Path], console: Console) -> list[GameAnalysis]:
    """Every record analysed; a game that ended at the setup (no moves, a forfeit) has nothing to replay and
    counts with its result alone; a record that cannot be read or replayed is named and left out."""
    out = []
    for path in paths:
        try:
            record = GameRecord.load(path)
            if not record.moves and (record.result or {}).get("forfeits"):
                out.append(GameAnalysis(game_id=record.game_id, players={Side.RED: record.red.name,
                                                                          Side.BLUE: record.blue.name},
                                        result=record.result, plies=0, fates=[], flags=[], chases=[]))
            else:
                out.append(analyse_record(record))
        except (OSError, ValueError, KeyError, ReplayError) as exc:
            console.print(f"[red]{path}: left out: {exc}[/red]", highlight=False, soft_wrap=True)
    return out


def _counts(counter: Any) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common()) or "-"


def _score(summary: OpponentSummary) -> str:
    interval = summary.interval
    if interval is None:
        return "-"
    return f"{100 * interval.score:.0f} % [{100 * interval.low:.0f}, {100 * interval.high:.0f}]"


def _plies(summary: OpponentSummary) -> str:
    plies = summary.plies
    if not plies:
        return "-"
    return f"{plies[len(plies) // 2]} ({plies[0]}-{plies[-1]})"


def gauntlet_table(summaries: dict[str, OpponentSummary], ours: str) -> Table:
    table = Table(title=f"{ours}: the gauntlet")
    for column in ("opponent", "games", "W / D / L", "score [95 %]", "forfeits us / them", "stopped",
                   "plies: median (range)", "losses: how", "our marshal/general in lost games",
                   "taken in our half (run)", "attacks lost for certain"):
        table.add_column(column, overflow="fold")
    rows = [*summaries.values(), total(summaries.values())]
    for summary in rows:
        t = summary.trinomial
        table.add_row(summary.opponent, str(t.games), f"{t.wins} / {t.draws} / {t.losses}", _score(summary),
                      f"{summary.forfeits_ours} / {summary.forfeits_theirs}", str(summary.stopped), _plies(summary),
                      _counts(summary.loss_causes), _counts(summary.top_losses_in_lost_games),
                      f"{summary.taken_in_half} ({summary.longest_raid})", str(summary.hopeless_attacks))
    return table


def report(paths: Sequence[Path], ours: str, console: Console, *, seconds: float | None = None,
           settings: dict[str, Any] | None = None, json_path: Path | None = None) -> int:
    games = analyse(paths, console)
    summaries = summarise_gauntlet(games, ours)
    if not summaries:
        console.print(f"[red]no games of {ours!r} among the {len(paths)} records[/red]", highlight=False)
        return 1
    print_table(console, gauntlet_table(summaries, ours))
    played = sum(len(s.games) for s in summaries.values())
    rate = None
    if seconds:
        rate = played / seconds * 3600
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        console.print(f"{played} games in {seconds / 60:.1f} min: {rate:.1f} games/hour "
                      f"(load average now {load})", highlight=False)
    if json_path is not None:
        everything = total(summaries.values())
        data = {"ours": ours, "settings": settings or {}, "seconds": seconds, "games_per_hour": rate,
                "opponents": [s.to_json() for s in summaries.values()], "all": everything.to_json()}
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def main(args: argparse.Namespace) -> int:
    from bot.logging_setup import configure_logging

    configure_logging(args.log_level)
    console = Console() if Console().is_terminal else Console(width=WIDE)
    if args.report is not None:
        paths = sorted(args.report.glob("*.json"))
        return report(paths, args.profile, console, json_path=args.json)
    _settings, profiles = load_configuration(args.config)
    try:
        if args.profile not in profiles.profiles:
            raise GauntletError(f"unknown profile {args.profile!r} (known: {', '.join(sorted(profiles.profiles))})")
        if not args.move_time > 0 or args.max_turns < 2 or not args.wall_time > 0:
            raise GauntletError("--move-time and --wall-time must be above 0, --max-turns at least 2 (the referee "
                                "plays one turn fewer)")
        concurrency = args.concurrency if args.concurrency is not None else usable_cores()
        if concurrency < 1:
            raise GauntletError(f"--concurrency must be at least 1, not {concurrency}")
        opponents = resolve_opponents(args.opponents, profiles)
        counts = games_per_opponent(opponents, args.games, args.games_against)
        if args.via == "referee":
            find_referee(args.referee)
    except GauntletError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False, soft_wrap=True)
        return 2
    records = args.records or Path("records") / f"gauntlet-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    records.mkdir(parents=True, exist_ok=True)
    web: LabWeb | None = None
    if args.web is not None:
        web = LabWeb(args.web, records)
        try:
            announce(console, web.start())
        except OSError as exc:
            console.print(f"[red]cannot serve the web view on {args.web}: {exc}[/red]", highlight=False)
            return 1
    config = str(config_dir(args.config).resolve()) if config_dir(args.config).is_dir() else None
    args.config = config
    started = time.monotonic()
    interrupted = False
    try:
        paths = play_single(args, profiles, opponents, counts, args.profile, records, concurrency, console)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: the games finished so far[/yellow]")
        paths = sorted(records.glob("*.json"))
    except (GauntletError, RefereeError) as exc:
        console.print(f"[red]{exc}[/red]", highlight=False, soft_wrap=True)
        return 2
    seconds = time.monotonic() - started
    run_settings = {"via": args.via, "profile": args.profile, "opponents": [o.name for o in opponents],
                    "games": counts, "move_time": args.move_time, "max_turns": args.max_turns,
                    "wall_time": args.wall_time, "concurrency": concurrency, "records": str(records),
                    "interrupted": interrupted}
    code = report(paths, args.profile, console, seconds=seconds, settings=run_settings, json_path=args.json)
    console.print(f"records: {records}  (perspecto replay {paths[-1] if paths else records}; "
                  f"perspecto gauntlet --report {records})", highlight=False, soft_wrap=True)
    if web is not None:
        if not interrupted:
            web.wait_for_stop(console)
        web.stop()
    return 130 if interrupted else code
