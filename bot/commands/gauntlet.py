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
from typing import TYPE_CHECKING, Any, Protocol, cast

from rich.console import Console
from rich.table import Table

from bot.config import BotProfile, ProfileError, profile_from_mapping
from bot.profiles import ProfileSet, load_configuration
from bot.safe_text import terminal_safe
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
from engine_ext.lab.analysis import GameAnalysis
from engine_ext.lab.game_events import ReplayError
from engine_ext.lab.gauntlet import (
    FAILURES,
    AnalysedGame,
    GauntletGame,
    OpponentSummary,
    Rate,
    analyse_gauntlet_record,
    failure_rates,
    gauntlet_game,
    summarise_gauntlet,
    total,
)
from engine_ext.lab.paired import (
    ARMS,
    Arm,
    PairedEstimate,
    PairedSchedule,
    PairedSprt,
    Slot,
    paired_rate_difference,
    pentanomial,
    pooled_estimate,
    stratified_estimate,
    unpaired_slots,
)
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
    p.add_argument("--cluster", metavar="tcp://HOST:8786",
                   help="play the games on the workers of this Dask scheduler, each with its own referee and programs "
                   "(pip install 'perspecto[cluster]'; docs/lab.md, \"The gauntlet on a cluster\")")
    p.add_argument("--referee", type=Path, metavar="PATH",
                   help=f"the referee stratego (default ${REFEREE_ENV}, else the build's judge/manager/stratego "
                   f"beside ${PROGRAMS_ENV})")
    p.add_argument("--records", type=Path, metavar="DIR",
                   help="where the games' records go (default records/gauntlet-DATE-TIME)")
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--seed", type=int, default=None,
                   help="--via lab: the setups' and engines' seed; a paired run (both routes): the slots' seeds")
    p.add_argument("--no-learn", action="store_true",
                   help="every game on its own; without it, as in a tournament, what each game showed of an "
                   "opponent's setup primes our next games against it (a memory of this run's, in DIR/state "
                   "for the referee's route: docs/ucc.md)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the table as JSON here")
    p.add_argument("--report", type=Path, metavar="DIR",
                   help="play nothing: the table of the gauntlet records in DIR (with --profile naming our side)")
    p.add_argument("--resume", type=Path, metavar="DIR",
                   help="go on with the run whose records are in DIR: games with a record there are not played "
                   "again (a paired run's plan, DIR/paired.json, gives every other option)")
    paired = p.add_argument_group("a paired run (docs/lab.md, The acceptance rule)")
    paired.add_argument("--baseline", metavar="REV_OR_PROFILE",
                        help="play a baseline on the same slots as --profile (opponent, colour, our setup seed) and "
                        "report the paired difference: a profile, or a git revision (checked out and bootstrapped "
                        "in --baseline-dir, playing --profile as it was there, through the referee)")
    paired.add_argument("--baseline-dir", type=Path, metavar="DIR",
                        help=f"where revisions are checked out (default ${BASELINES_DIR_ENV}, else "
                        "$XDG_CACHE_HOME/perspecto/baselines)")
    paired.add_argument("--sprt", metavar="SPEC",
                        help="stop at a verdict: 'd0=0 d1=5 alpha=0.05 beta=0.05', the paired difference in points "
                        "of score per game under H0 and H1")
    paired.add_argument("--max-slots", type=int, metavar="N",
                        help="at most N slots (each played by both arms; default --games times the opponents)")
    p.add_argument("--log-level", default="warning", help="debug, info, warning or error (default %(default)s)")
    add_web_argument(p, "the games (their records, as they appear)")
    p.set_defaults(func=main)


# --- what to play -----------------------------------------------------------------------------------------


def resolve_opponents(names: Sequence[str], profiles: ProfileSet, *, here: bool = True) -> list[Opponent]:
    """Profiles by name (each must be ``engine = "ucc"``), or programs by path; none: every ucc-* profile.
    ``here``: the programs must run on this machine (not with --cluster: each worker says what it runs)."""
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
    for opponent in out if here else ():
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
    work = records / "referee"
    work.mkdir(parents=True, exist_ok=True)
    referee: Path | None = None
    our_program: Path | None = None
    programs: dict[str, Path] = {}
    if args.cluster is None:  # on a cluster each worker puts its own (bot/commands/gauntlet_cluster.py)
        referee = find_referee(args.referee)
        our_program = work / f"{ours}-ucc"
        # This run's own memory, as a tournament's would start: never the user's state folder.
        write_our_wrapper(our_program, ours, args.move_time, args.config,
                          None if args.no_learn else records / "state")
        programs = {o.name: program_path(o, work) for o in opponents}
    clock = Clock(args.move_time, args.max_turns, args.wall_time)
    return [GauntletJob(game_id=game_id(ours, o.name, index), ours=ours, opponent=o.name, slot=index,
                        our_side=slot_side(index), clock=clock, via="referee", work=work, referee=referee,
                        our_program=our_program, opponent_program=programs.get(o.name))
            for o, index in interleaved(opponents, counts)]


def game_line(record: GameRecord, ours: str, seconds: float) -> str:
    result = record.result or {}
    side = Side.RED if record.red.name == ours else Side.BLUE
    winner = result.get("winner")
    verdict = "draw" if winner is None else ("win" if Side.parse(winner) == side else "loss")
    opponent = record.blue.name if side == Side.RED else record.red.name
    return terminal_safe(f"{record.game_id}: {ours} ({side}) against {opponent}: {verdict} by "
                         f"{result.get('reason')} in {result.get('plies')} plies, {seconds:.0f} s")


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
    gid = game_id(ours, opponent, slot)
    lab = GameJob(match=gid, index=0 if our_side == Side.RED else 1, pair=slot, a=a, b=games.players[opponent],
                  a_side=our_side, red_setup=red_setup.key, blue_setup=blue_setup.key, red_seed=setup_seed,
                  blue_seed=setup_seed, limits=Limits(), rules=games.rules, records=None, seed=games.seed)
    return GauntletJob(game_id=gid, ours=ours, opponent=opponent, slot=slot, our_side=our_side, clock=clock,
                       via="lab", work=games.records, arm=arm, setup_seed=setup_seed, lab=lab)


# --- a single-arm run ------------------------------------------------------------------------------------


def save_outcome(outcome: GauntletOutcome, records: Path, console: Console) -> Path | None:
    """The record saved as ``records/GAME_ID.json`` and the game's line printed; None, and the error, when the
    game gave no record."""
    job = outcome.job
    if outcome.record is None:
        console.print(f"[red]{terminal_safe(job.game_id)}: no record: {terminal_safe(str(outcome.error))}[/red]",
                      highlight=False, soft_wrap=True)
        # Played and failed, not unplayed: a report plays the schedule on past it (--resume plays it again).
        (records / f"{job.game_id}{FAILED_SUFFIX}").write_text(f"{outcome.error}\n", encoding="utf-8")
        return None
    path = records / f"{job.game_id}.json"
    outcome.record.save(path)
    (records / f"{job.game_id}{FAILED_SUFFIX}").unlink(missing_ok=True)  # played again (--resume), this time with one
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


def make_executor(args: argparse.Namespace, concurrency: int) -> Executor:
    """Where the games are played: on the cluster's workers checked at the start (--cluster), else here,
    ``concurrency`` at a time."""
    if getattr(args, "cluster_workers", None) is not None:
        from bot.commands.gauntlet_cluster import ClusterExecutor

        return ClusterExecutor(args.cluster_workers)
    return local_executor(concurrency)


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


def analyse(paths: Sequence[Path], console: Console) -> list[AnalysedGame]:
    """Every record analysed; a game that ended at the setup (no moves, a forfeit) has nothing to replay and
    counts with its result alone; a record that cannot be read or replayed is named and left out."""
    out = []
    for path in paths:
        try:
            record = GameRecord.load(path)
            if not record.moves and (record.result or {}).get("forfeits"):
                out.append(AnalysedGame(GameAnalysis(
                    game_id=record.game_id, players={Side.RED: record.red.name, Side.BLUE: record.blue.name},
                    result=record.result, plies=0, fates=[], flags=[], chases=[])))
            else:
                out.append(analyse_gauntlet_record(record))
        except (OSError, ValueError, KeyError, ReplayError) as exc:
            # A file's name and a replay's complaint may quote what the file holds (a move, a reason).
            console.print(f"[red]{terminal_safe(str(path))}: left out: {terminal_safe(str(exc))}[/red]",
                          highlight=False, soft_wrap=True)
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
    table = Table(title=f"{terminal_safe(ours)}: the gauntlet")
    for column in ("opponent", "games", "W / D / L", "score [95 %]", "forfeits us / them", "stopped",
                   "plies: median (range)", "losses: how", "our marshal/general in lost games",
                   "taken in our half (run)", "attacks lost for certain"):
        table.add_column(column, overflow="fold")
    rows = [*summaries.values(), total(summaries.values())]
    for summary in rows:
        t = summary.trinomial
        # The opponent's name is the record's, which a program or a file's author chose.
        table.add_row(terminal_safe(summary.opponent), str(t.games), f"{t.wins} / {t.draws} / {t.losses}",
                      _score(summary),
                      f"{summary.forfeits_ours} / {summary.forfeits_theirs}", str(summary.stopped), _plies(summary),
                      terminal_safe(_counts(summary.loss_causes)), _counts(summary.top_losses_in_lost_games),
                      f"{summary.taken_in_half} ({summary.longest_raid})", str(summary.hopeless_attacks))
    return table


def _rate(rate: Rate | None) -> str:
    return "-" if rate is None else str(rate)


def failures_table(summaries: dict[str, OpponentSummary], ours: str) -> Table:
    """Every game's failures per 100 games with the 95 % interval (engine_ext/lab/gauntlet.py, FAILURES)."""
    table = Table(title=f"{terminal_safe(ours)}: failures per 100 games [95 %], over all games")
    table.add_column("opponent")
    table.add_column("games")
    for name, _once in FAILURES:
        table.add_column(name, overflow="fold")
    table.add_column("longest run taken in our half")
    for summary in [*summaries.values(), total(summaries.values())]:
        rates = failure_rates(summary.games)
        table.add_row(terminal_safe(summary.opponent), str(len(summary.games)),
                      *(_rate(rates[name]) for name, _once in FAILURES),
                      str(summary.longest_raid))
    return table


def report(paths: Sequence[Path], ours: str, console: Console, *, seconds: float | None = None,
           settings: dict[str, Any] | None = None, json_path: Path | None = None) -> int:
    games = analyse(paths, console)
    summaries = summarise_gauntlet(games, ours)
    if not summaries:
        console.print(f"[red]no games of {terminal_safe(repr(ours))} among the {len(paths)} records[/red]",
                      highlight=False)
        return 1
    print_table(console, gauntlet_table(summaries, ours))
    print_table(console, failures_table(summaries, ours))
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


# --- a paired run: --baseline ------------------------------------------------------------------------------


PLAN_FILE = "paired.json"
REVISION_ON_CLUSTER = ("--cluster plays a baseline that is a profile: a git revision's baseline is a worktree "
                       "bootstrapped on this machine, which the workers do not have. Play it here (without "
                       "--cluster), or put what the revision changes in a profile and give --baseline PROFILE")
FAILED_SUFFIX = ".failed"  # beside the records: a game that was played and gave none
PLAN_FORMAT = "perspecto-paired-gauntlet/1"
BASELINES_DIR_ENV = "PERSPECTO_BASELINES"


@dataclass(frozen=True)
class ArmSpec:
    """One arm of a paired run: its name in the records, the profile it plays, and for a baseline from a git
    revision the commit and the worktree where that revision is checked out and bootstrapped."""

    arm: Arm
    name: str
    profile: str
    revision: str | None = None
    worktree: Path | None = None

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
                "worktree": None if self.worktree is None else str(self.worktree)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArmSpec:
        worktree = data.get("worktree")
        return cls(data["arm"], data["name"], data["profile"], data.get("revision"),
                   None if worktree is None else Path(worktree))


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


def resolve_baseline(spec: str, candidate: ArmSpec, profiles: ProfileSet) -> ArmSpec:
    """``--baseline``: a profile of this configuration, else a git revision (its worktree made later)."""
    if spec in profiles.profiles:
        if profiles.profiles[spec].engine == "ucc":
            raise GauntletError(f"--baseline {spec!r} is a UCC program's profile, not one of ours")
        if spec == candidate.profile:
            raise GauntletError(f"--baseline {spec!r} is the candidate's own profile: name another profile, or a git "
                                "revision to play this profile as it was there")
        return ArmSpec("baseline", spec, spec)
    commit = git_commit(spec)
    if commit is None:
        raise GauntletError(f"--baseline {spec!r} is neither a profile (known: {', '.join(sorted(profiles.profiles))}) "
                            "nor a git revision of this repository")
    return ArmSpec("baseline", f"{candidate.profile}@{commit[:8]}", candidate.profile, commit)


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


def record_score(record: GameRecord, ours: str) -> float | None:
    """Our score in a record (1, 0.5, 0); None when ``ours`` is not a player of it."""
    sides = [side for side, player in ((Side.RED, record.red), (Side.BLUE, record.blue)) if player.name == ours]
    if len(sides) != 1:
        return None
    winner = (record.result or {}).get("winner")
    return 0.5 if winner is None else (1.0 if Side.parse(winner) == sides[0] else 0.0)


def existing_score(path: Path, ours: str) -> float | None:
    """The score of a record already in the folder (None: none there, or not one that reads)."""
    if not path.is_file():
        return None
    try:
        return record_score(GameRecord.load(path), ours)
    except (OSError, ValueError, KeyError):
        return None


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
    clock = Clock(plan.move_time, plan.max_turns, plan.wall_time)
    by_name = {o.name: o for o in opponents}
    if plan.via == "lab":
        games = lab_games(args, opponents, {plan.candidate.name: profiles.get(plan.candidate.profile),
                                            plan.baseline.name: profiles.get(plan.baseline.profile)}, records)

        def make_lab_job(arm: ArmSpec, slot: Slot, seen: Sequence[tuple[str, str]]) -> GauntletJob:
            return lab_job(games, arm.name, slot.opponent, slot.number, clock, arm=arm.arm,
                           setup_seed=slot_seed(plan.seed, slot.opponent, slot.number), seen=seen)
        return make_lab_job
    work = records / "referee"
    work.mkdir(parents=True, exist_ok=True)
    referee: Path | None = None
    wrappers: dict[Arm, Path] = {}
    programs: dict[str, Path] = {}
    if args.cluster is None:  # on a cluster each worker puts its own (bot/commands/gauntlet_cluster.py)
        referee = find_referee(args.referee)
        for arm in ARMS:
            spec = plan.arm(arm)
            wrappers[arm] = work / f"{spec.name}-ucc"
            write_our_wrapper(wrappers[arm], spec.profile, plan.move_time, spec.config(args.config),
                              None if plan.no_learn else records / f"state-{arm}", command=spec.perspecto)
        programs = {o.name: program_path(o, work) for o in opponents}

    def make_referee_job(arm: ArmSpec, slot: Slot, _seen: Sequence[tuple[str, str]]) -> GauntletJob:
        return GauntletJob(game_id=game_id(arm.name, slot.opponent, slot.number), ours=arm.name,
                           opponent=by_name[slot.opponent].name, slot=slot.number, our_side=slot_side(slot.number),
                           clock=clock, via="referee", work=work, arm=arm.arm,
                           setup_seed=slot_seed(plan.seed, slot.opponent, slot.number), program_seed=None,
                           referee=referee, our_program=wrappers.get(arm.arm),
                           opponent_program=programs.get(slot.opponent))
    return make_referee_job


def new_plan(args: argparse.Namespace, profiles: ProfileSet, opponents: list[Opponent],
             console: Console) -> PairedPlan:
    candidate = ArmSpec("candidate", args.profile, args.profile)
    baseline = resolve_baseline(args.baseline, candidate, profiles)
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
                  f"via {plan.via}, -T {plan.move_time:g} -m {plan.max_turns}, {concurrency} at a time, seed "
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


def _points(value: float) -> str:
    return f"{100 * value:+.1f}"


def _difference(estimate: PairedEstimate | None) -> str:
    if estimate is None:
        return "-"
    return f"{_points(estimate.mean)} [{_points(estimate.low)}, {_points(estimate.high)}]"


def _mean_score(scores: Sequence[float]) -> str:
    return f"{100 * sum(scores) / len(scores):.0f} %" if scores else "-"


def paired_table(plan: PairedPlan, schedule: PairedSchedule) -> tuple[Table, dict[str, Any]]:
    strata = schedule.strata()
    cand, base = schedule.arm_scores("candidate"), schedule.arm_scores("baseline")
    # The arms' and opponents' names are the plan's (DIR/paired.json: a file, which anyone may have written).
    table = Table(title=f"paired: {terminal_safe(plan.candidate.name)} - {terminal_safe(plan.baseline.name)}, "
                  "points of score per game [95 %]")
    for column in ("opponent", "slots", "pairs", terminal_safe(plan.candidate.name), terminal_safe(plan.baseline.name),
                   "pairs -1 / -½ / 0 / +½ / +1", "difference [95 %]"):
        table.add_column(column, overflow="fold")
    played = {name: len({n for (o, n, _arm) in schedule.scores if o == name}) for name in strata}
    rows: list[dict[str, Any]] = []
    for name, differences in strata.items():
        estimate = pooled_estimate(differences)
        counts = pentanomial(differences).counts
        table.add_row(terminal_safe(name), str(played[name]), str(len(differences)), _mean_score(cand[name]),
                      _mean_score(base[name]), " / ".join(map(str, counts)), _difference(estimate))
        rows.append({"opponent": name, "slots": played[name], "pairs": len(differences),
                     "candidate_score": sum(cand[name]) / len(cand[name]) if cand[name] else None,
                     "baseline_score": sum(base[name]) / len(base[name]) if base[name] else None,
                     "pentanomial": list(counts), "difference": None if estimate is None else estimate.to_json()})
    everything = [d for ds in strata.values() for d in ds]
    stratified, pooled = stratified_estimate(strata), pooled_estimate(everything)
    all_cand = [s for ss in cand.values() for s in ss]
    all_base = [s for ss in base.values() for s in ss]
    table.add_row("all: opponents weighed equally", str(sum(played.values())), str(len(everything)),
                  _mean_score(all_cand), _mean_score(all_base), " / ".join(map(str, pentanomial(everything).counts)),
                  _difference(stratified))
    table.add_row("all: pooled by slots", "", "", "", "", "", _difference(pooled))
    data = {"opponents": rows, "stratified": None if stratified is None else stratified.to_json(),
            "pooled": None if pooled is None else pooled.to_json(), "pairs": len(everything)}
    return table, data


def paired_failures_table(plan: PairedPlan, schedule: PairedSchedule,
                          games: dict[tuple[Arm, str, int], GauntletGame]) -> tuple[Table, dict[str, Any]]:
    """Failures per 100 games of each arm (all its games with a record) and their paired difference (complete
    pairs)."""
    by_arm = {arm: [g for (a, _o, _n), g in games.items() if a == arm] for arm in ARMS}
    rates = {arm: failure_rates(by_arm[arm]) for arm in ARMS}
    pairs = [(games[("candidate", o, n)], games[("baseline", o, n)])
             for (a, o, n) in games if a == "candidate" and ("baseline", o, n) in games]
    table = Table(title="failures per 100 games [95 %], over all games")
    for column in ("failure", f"{terminal_safe(plan.candidate.name)} ({len(by_arm['candidate'])} games)",
                   f"{terminal_safe(plan.baseline.name)} ({len(by_arm['baseline'])} games)",
                   f"difference ({len(pairs)} pairs)"):
        table.add_column(column, overflow="fold")
    data: dict[str, Any] = {}
    for name, _once in FAILURES:
        difference = paired_rate_difference([c.failures[name] - b.failures[name] for c, b in pairs])
        diff_text = "-" if difference is None else (f"{difference.per_100:+.1f} [{difference.low:+.1f}, "
                                                    f"{difference.high:+.1f}]")
        table.add_row(name, _rate(rates["candidate"][name]), _rate(rates["baseline"][name]), diff_text)
        data[name] = {arm: None if (rate := rates[arm][name]) is None else rate.to_json() for arm in ARMS}
        data[name]["difference"] = None if difference is None else difference.to_json()
    runs = {arm: max((g.longest_raid for g in by_arm[arm]), default=0) for arm in ARMS}
    table.add_row("longest run taken in our half", str(runs["candidate"]), str(runs["baseline"]), "")
    data["longest_run_taken_in_our_half"] = runs
    return table, data


def paired_report(plan: PairedPlan, records: Path, console: Console, *, seconds: float | None = None,
                  json_path: Path | None = None, interrupted: bool = False) -> int:
    """The paired verdict from the records in ``records`` (the schedule played again from them)."""
    labels = opponent_labels(plan)
    schedule = replay_schedule(plan, labels, records)
    games: dict[tuple[Arm, str, int], GauntletGame] = {}
    for arm in ARMS:
        spec = plan.arm(arm)
        for round_ in schedule.rounds:
            for slot in round_:
                path = records / f"{game_id(spec.name, slot.opponent, slot.number)}.json"
                if path.is_file():
                    for analysed in analyse([path], console):
                        game = gauntlet_game(analysed, spec.name)
                        if game is not None:
                            games[(arm, slot.opponent, slot.number)] = game
    if not games:
        console.print(f"[red]no games of {terminal_safe(repr(plan.candidate.name))} or "
                      f"{terminal_safe(repr(plan.baseline.name))} in {terminal_safe(str(records))}[/red]",
                      highlight=False)
        return 1
    table, verdict = paired_table(plan, schedule)
    print_table(console, table)
    failures, failure_data = paired_failures_table(plan, schedule, games)
    print_table(console, failures)
    strata = schedule.strata()
    stratified = stratified_estimate(strata)
    sprt_data: dict[str, Any] | None = None
    if schedule.sprt is not None:
        sprt = schedule.sprt
        everything = [d for ds in strata.values() for d in ds]
        llr = sprt.llr(strata)
        pooled_llr = sprt.pooled_llr(everything)
        decided = (f"{schedule.verdict} accepted after {schedule.decided_at} pairs" if schedule.verdict else
                   "no verdict")
        console.print(f"SPRT {sprt} (stratified GSPRT, bounds [{sprt.spec.lower:.2f}, {sprt.spec.upper:.2f}]): "
                      f"{decided}; LLR now {llr:.2f} on {len(everything)} pairs (pooled pentanomial LLR "
                      f"{pooled_llr:.2f})", highlight=False, soft_wrap=True)
        sprt_data = {"spec": str(sprt), "lower": sprt.spec.lower, "upper": sprt.spec.upper,
                     "verdict": schedule.verdict, "decided_at_pairs": schedule.decided_at, "llr": llr,
                     "pooled_pentanomial_llr": pooled_llr}
    unpaired = unpaired_slots(schedule.arm_scores("candidate"), schedule.arm_scores("baseline"), strata)
    if unpaired is not None and stratified is not None:
        console.print(f"an unpaired run (each arm its own games, the same allocation) would need about "
                      f"{unpaired:.0f} slots for this interval's width ({unpaired / stratified.pairs:.2f} times "
                      f"the {stratified.pairs} pairs)", highlight=False, soft_wrap=True)
    played = len(games)
    if seconds:
        console.print(f"{played} games in the records; this run took {seconds / 60:.1f} min", highlight=False)
    if json_path is not None:
        data = {"plan": {**{f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)},
                         "candidate": plan.candidate.to_json(), "baseline": plan.baseline.to_json()},
                "seconds": seconds, "interrupted": interrupted, "games": played, **verdict, "sprt": sprt_data,
                "unpaired_slots_for_the_same_width": unpaired, "failures_per_100": failure_data}
        json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 0


def main(args: argparse.Namespace) -> int:
    from bot.logging_setup import configure_logging

    configure_logging(args.log_level)
    console = Console() if Console().is_terminal else Console(width=WIDE)
    try:
        if args.report is not None:
            if (args.report / PLAN_FILE).is_file():
                return paired_report(PairedPlan.load(args.report), args.report, console, json_path=args.json)
            return report(sorted(args.report.glob("*.json")), args.profile, console, json_path=args.json)
        plan = None
        if args.resume is not None:
            if not args.resume.is_dir():
                raise GauntletError(f"--resume {args.resume}: no such folder")
            if args.records is not None and args.records.resolve() != args.resume.resolve():
                raise GauntletError("--resume DIR plays into DIR: give no other --records")
            args.records = args.resume
            if (args.resume / PLAN_FILE).is_file():  # a paired run: everything as it was planned
                plan = PairedPlan.load(args.resume)
                args.opponents, args.profile, args.via = plan.opponents, plan.candidate.profile, plan.via
                args.move_time, args.max_turns, args.wall_time = plan.move_time, plan.max_turns, plan.wall_time
                args.no_learn, args.seed = plan.no_learn, plan.seed
    except GauntletError as exc:
        console.print(f"[red]{terminal_safe(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return 2
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
        if args.cluster is not None and args.concurrency is not None:
            raise GauntletError("--concurrency is this machine's: a cluster plays as many games as its workers' "
                                "threads")
        if args.cluster is not None and plan is not None and plan.baseline.revision is not None:
            raise GauntletError(REVISION_ON_CLUSTER)
        opponents = resolve_opponents(args.opponents, profiles, here=args.cluster is None)
        counts = games_per_opponent(opponents, args.games, args.games_against)
        if args.via == "referee" and args.cluster is None:
            find_referee(args.referee)
        if plan is None and (args.sprt is not None or args.max_slots is not None) and args.baseline is None:
            raise GauntletError("--sprt and --max-slots are for a paired run: give --baseline")
        if plan is None and args.baseline is not None:
            if args.games_against:
                raise GauntletError("--games-against is for a single-arm run: a paired run's slots follow the "
                                    "allocation (docs/lab.md, The acceptance rule)")
            plan = new_plan(args, profiles, opponents, console)
        elif plan is not None and plan.baseline.revision is not None and plan.baseline.worktree is not None:
            if not (plan.baseline.worktree / ".venv" / "bin" / "perspecto").is_file():
                raise GauntletError(f"the baseline's worktree {plan.baseline.worktree} is gone: run the gauntlet "
                                    "afresh")
    except ValueError as exc:  # GauntletError, and a bad --sprt
        console.print(f"[red]{terminal_safe(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return 2
    records = args.records or Path("records") / f"gauntlet-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    records.mkdir(parents=True, exist_ok=True)
    if plan is not None and args.resume is None:
        plan.save(records)
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
    args.cluster_workers = None
    stops: tuple[type[Exception], ...] = ()  # what ends a run on the cluster (none here: an empty except)
    cluster_code = 0
    if args.cluster is not None:
        from bot.commands.gauntlet_cluster import ClusterError, Ours, Tools, cluster_stopped, connect_cluster

        stops = (ClusterError,)
        ours = ([Ours(s.name, s.profile, f"state-{s.arm}") for s in (plan.candidate, plan.baseline)]
                if plan is not None else [Ours(args.profile, args.profile)])
        args.cluster_workers = connect_cluster(args, ours, opponents, records, console,
                                               Tools(find_referee, program_path, write_our_wrapper))
        if args.cluster_workers is None:
            if web is not None:
                web.stop()
            return 2
        concurrency = args.cluster_workers.threads
    started = time.monotonic()
    interrupted = False
    paths: list[Path] = []
    try:
        if plan is not None:
            play_paired(args, plan, profiles, opponents, records, concurrency, console)
        else:
            paths = play_single(args, profiles, opponents, counts, args.profile, records, concurrency, console)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: the games finished so far[/yellow]")
        paths = sorted(p for p in records.glob("*.json") if p.name != PLAN_FILE)
    except (GauntletError, RefereeError) as exc:
        console.print(f"[red]{terminal_safe(str(exc))}[/red]", highlight=False, soft_wrap=True)
        return 2
    except stops as exc:  # the scheduler went away, a game failed on the cluster: the finished games are saved
        interrupted, cluster_code = True, cluster_stopped(exc, records, console)
        paths = sorted(p for p in records.glob("*.json") if p.name != PLAN_FILE)
    finally:
        if args.cluster_workers is not None:
            args.cluster_workers.close()
    seconds = time.monotonic() - started
    if plan is not None:
        code = paired_report(plan, records, console, seconds=seconds, json_path=args.json, interrupted=interrupted)
        console.print(f"records: {records}  (perspecto gauntlet --report {records}; perspecto gauntlet --resume "
                      f"{records})", highlight=False, soft_wrap=True)
    else:
        run_settings = {"via": args.via, "profile": args.profile, "opponents": [o.name for o in opponents],
                        "games": counts, "move_time": args.move_time, "max_turns": args.max_turns,
                        "wall_time": args.wall_time, "concurrency": concurrency, "cluster": args.cluster,
                        "records": str(records),
                        "interrupted": interrupted}
        code = report(paths, args.profile, console, seconds=seconds, settings=run_settings, json_path=args.json)
        console.print(f"records: {records}  (perspecto replay {paths[-1] if paths else records}; "
                      f"perspecto gauntlet --report {records})", highlight=False, soft_wrap=True)
    if web is not None:
        if not interrupted:
            web.wait_for_stop(console)
        web.stop()
    return cluster_code or (130 if interrupted else code)
