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

This module is the command: its arguments and ``main``; the gauntlet itself is bot/commands/gauntlet_run/
(one module a concern: its ``__init__`` names them).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from rich.console import Console

from bot.commands.gauntlet_run.opponents import GauntletError, games_per_opponent, resolve_opponents
from bot.commands.gauntlet_run.paired_run import (
    BASELINES_DIR_ENV,
    PLAN_FILE,
    REVISION_ON_CLUSTER,
    PairedPlan,
    new_plan,
    play_paired,
)
from bot.commands.gauntlet_run.referee_route import (
    PROGRAMS_ENV,
    REFEREE_ENV,
    find_referee,
    program_path,
    write_our_wrapper,
)
from bot.commands.gauntlet_run.single_arm import play_single
from bot.commands.gauntlet_run.tables import paired_report, report
from bot.profiles import load_configuration
from bot.safe_text import terminal_safe
from bot.settings import config_dir
from bot.ucc.referee import DEFAULT_MAX_TURNS, DEFAULT_MOVE_TIME, RefereeError
from bot.web.options import add_web_argument
from bot.web.service import LabWeb, announce
from engine_ext.engine.settings import usable_cores

DEFAULT_GAMES = 4
DEFAULT_WALL_TIME = 1800.0  # seconds a game may take before it is stopped (the referee has no repetition rule)
WIDE = 200  # columns the table gets when the output is not a terminal


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
    paired.add_argument("--baseline-move-time", type=float, metavar="S",
                        help="the baseline answers in S seconds, the candidate in --move-time (time odds: the referee "
                        "gives each game its arm's -T); the baseline may then be --profile itself, to measure what "
                        "time is worth to it")
    paired.add_argument("--sprt", metavar="SPEC",
                        help="stop at a verdict: 'd0=0 d1=5 alpha=0.05 beta=0.05', the paired difference in points "
                        "of score per game under H0 and H1")
    paired.add_argument("--max-slots", type=int, metavar="N",
                        help="at most N slots (each played by both arms; default --games times the opponents)")
    p.add_argument("--log-level", default="warning", help="debug, info, warning or error (default %(default)s)")
    add_web_argument(p, "the games (their records, as they appear)")
    p.set_defaults(func=main)



@contextlib.contextmanager
def terminate_interrupts() -> Iterator[None]:
    """SIGTERM (``kill``, ``docker stop``, a batch system's end of time) stops the run as Ctrl-C does: the games
    finished so far reported, the games in play stopped (engine_ext's referee runs them in sessions of their own,
    which the signal does not reach). Only the main thread may set a handler; elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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
        if plan is None and args.baseline is None and (
                args.sprt is not None or args.max_slots is not None or args.baseline_move_time is not None):
            raise GauntletError("--sprt, --max-slots and --baseline-move-time are for a paired run: give --baseline")
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
        from bot.commands.gauntlet_run.cluster import ClusterError, Ours, Tools, cluster_stopped, connect_cluster

        stops = (ClusterError,)
        ours = ([Ours(s.name, s.profile, f"state-{s.arm}", s.move_time) for s in (plan.candidate, plan.baseline)]
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
        with terminate_interrupts():
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
