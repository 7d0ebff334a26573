"""``perspecto match``: engines against each other in the strength lab, or whole bots on a local host.

By default the match is played by the lab's in-process runner (engine_ext/lab/runner.py): no host, no
bot processes, one worker process a core, paired games with colours swapped, node budgets or fixed
depths that make a game the same on any machine, Elo with its interval, an SPRT that stops the match
when it has its answer, gauntlets and round robins. ``--via-host`` plays whole bots instead, each its own
process speaking the protocol to a local host over TCP (or MQTT): the way to test a bot, not an engine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from bot.commands.host import add_rules_arguments, host_settings
from bot.commands.lab_view import LabProgress, footer, json_summary, result_table
from bot.config import ProfileError, builtin_profiles
from bot.daemon.runtime import run
from bot.host.match import MatchError, MatchResult, MatchRunner, result_summary
from bot.host.match import result_table as host_result_table
from bot.logging_setup import configure_logging
from bot.profiles import ProfileSet, load_configuration
from bot.settings import config_dir
from bot.tables import print_table
from bot.web.feed import GameFeed
from bot.web.options import add_web_argument
from bot.web.server import WebServer
from bot.web.service import LabWeb, announce, stay_up, stop_signals
from engine_ext.engine.settings import usable_cores
from engine_ext.lab.cluster import ClusterLost, ClusterPool
from engine_ext.lab.progress import ProgressLog, progress_path
from engine_ext.lab.runner import GameOutcome, LabError, Limits, Match, Rules, run_matches, setup_source
from engine_ext.lab.schedule import build_matches, pairings
from engine_ext.lab.sprt import SprtSpec
from engine_ext.rules.pieces import RANK_STYLES
from engine_ext.rules.rulesets import get_ruleset
from protocol.errors import ConnectFailed
from protocol.mqtt import MqttSettings
from setups.notation import LEGEND as SETUP_LEGEND

# With --sprt and no --max-games: a cap no test between real engine versions should reach.
DEFAULT_SPRT_MAX_GAMES = 20000
# The lab's options, which the whole-bot path (--via-host) does not have.
_LAB_ONLY = ("gauntlet", "round_robin", "concurrency", "nodes", "depth", "move_time", "setups", "sprt",
             "max_games", "param", "json", "cluster", "resume")


def add_view_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="configuration directory whose profiles/ the bots may name "
                   "(default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--seed", type=int, help="seed both bots (reproducible games)")
    p.add_argument("--style", default="american", choices=RANK_STYLES, help="rank symbols (default %(default)s)")
    p.add_argument("--delay", type=float, default=0.0, help="seconds between shown moves of a single game")
    p.add_argument("--board-every", type=int, default=20, help="without a terminal: print the board every N plies")
    p.add_argument("--transport", choices=("tcp", "mqtt"), default="tcp",
                   help="how the bots reach the host (default %(default)s); mqtt needs --broker")
    p.add_argument("--broker", metavar="URL", help="the MQTT broker: mqtt[s]://[user[:password]@]host[:port]")
    add_web_argument(p, "the games (live boards on a host; the lab's games as their records appear)")


def configured_profiles(config: str | None = None) -> list[str]:
    """Profile names of the configuration (built-ins and profile files); the built-ins alone when the
    configuration does not load (``perspecto config check`` says why)."""
    try:
        return sorted(ProfileSet.load(config_dir(config)).profiles)
    except (ProfileError, OSError):
        return sorted(builtin_profiles())


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "match",
        help="a match between engines (the strength lab) or, with --via-host, between whole bots",
        description="Play engines against each other in this process's workers (the strength lab, docs/lab.md): "
        "paired games with colours swapped, Elo with its 95 % interval, LOS, an optional SPRT, every game "
        "saved as a record. --via-host plays whole bots on a local host instead (docs/host.md). "
        "Configured profiles: " + ", ".join(configured_profiles()),
    )
    p.add_argument("profile_a", metavar="A", nargs="?", help="the first engine's profile (red in even games)")
    p.add_argument("profile_b", metavar="B", nargs="?", help="the second engine's profile")
    p.add_argument("--games", type=int, help="games a pairing (default 2); the lab rounds up to whole pairs")
    lab = p.add_argument_group("the strength lab (not with --via-host)")
    lab.add_argument("--gauntlet", nargs="+", metavar="OPPONENT", help="A plays each of these in turn")
    lab.add_argument("--round-robin", nargs="+", metavar="PROFILE", help="every profile plays every other")
    lab.add_argument("--concurrency", type=int, help=f"games at a time, one worker process each "
                     f"(default: the usable cores, here {usable_cores()})")
    lab.add_argument("--nodes", type=int, metavar="N", help="node budget a move: the same games on any machine")
    lab.add_argument("--depth", type=int, metavar="D", help="search depth of every search engine (max_depth)")
    lab.add_argument("--move-time", type=float, metavar="S",
                     help="seconds a move (soft; hard 3x); default: the profiles' times, capped by "
                     "--move-time-average / --move-time-max")
    lab.add_argument("--setups", metavar="SOURCE",
                     help="where the pairs' setups come from: generated (human-like, the default), library "
                     "(the named setups) or a file with one setup a line (e.g. the Gravon data) in any of the "
                     f"notations of {SETUP_LEGEND}")
    lab.add_argument("--sprt", metavar="SPEC", help='stop when the SPRT decides, e.g. "elo0=0 elo1=10 alpha=0.05 '
                     'beta=0.05"; checked after every game pair')
    lab.add_argument("--max-games", type=int, help=f"with --sprt: games before the test ends inconclusive "
                     f"(default {DEFAULT_SPRT_MAX_GAMES})")
    lab.add_argument("--param", action="append", metavar="SIDE.KEY=VALUE",
                     help="an engine parameter for one side: SIDE is A, B or a profile name, VALUE in TOML "
                     "(e.g. A.home_guard=64, B.fear.own_fear_min=0.3); repeatable")
    lab.add_argument("--json", type=Path, metavar="FILE", help="write the results as JSON here")
    lab.add_argument("--cluster", metavar="tcp://HOST:8786",
                     help="play the games on the workers of this Dask scheduler (pip install 'perspecto[cluster]'; "
                     "docs/lab.md, \"On a cluster\") instead of this machine's processes")
    lab.add_argument("--resume", action="store_true", default=None,
                     help="carry on a run that stopped (interrupted, its scheduler gone): the same command line "
                     "with --resume plays only the games not in its saved progress (RECORDS/*.progress.jsonl)")
    p.add_argument("--via-host", action="store_true",
                   help="whole bots, each its own process, on a local host over TCP (or MQTT): "
                   "one pairing, colours alternating, the tournament's scoring")
    add_view_arguments(p)
    add_rules_arguments(p)
    p.set_defaults(func=main)


def play_match(args: argparse.Namespace, profile_a: str, profile_b: str, games: int) -> int:
    """Shared by ``match --via-host`` and ``play``: run the match on a local host and print its table."""
    configure_logging(args.log_level)
    console = Console()
    if games < 1:
        console.print("[red]--games must be at least 1[/red]")
        return 2
    try:
        mqtt = None
        if args.transport == "mqtt":
            if not args.broker:
                raise ValueError("--transport mqtt needs --broker URL")
            mqtt = MqttSettings.from_url(args.broker)
        runner = MatchRunner(
            profile_a, profile_b, settings=host_settings(args), seed=args.seed, console=console,
            style=args.style, delay=args.delay, board_every=args.board_every, mqtt=mqtt,
            config=config_dir(args.config).resolve(),
        )
        if args.web is None:
            result: MatchResult = run(runner.run(games))
        else:
            return run(_match_on_the_web(runner, games, args.web, console))
    except (ProfileError, MatchError, ValueError, ConnectFailed) as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    show_match(result, console)
    return 0


async def _match_on_the_web(runner: MatchRunner, games: int, address: str, console: Console) -> int:
    """The match with its page on the host's loop; the page stays up after the games until a signal (one
    during the games stops them)."""
    feed = GameFeed(results=lambda: runner.host.results)
    runner.host.observe(feed)
    server = WebServer(feed, address)
    with stop_signals(console) as signals:
        try:
            url = await server.start()
        except OSError as exc:
            console.print(f"[red]cannot serve the web view on {address}: {exc}[/red]", highlight=False)
            return 1
        try:
            announce(console, url)
            match = asyncio.create_task(runner.run(games))
            stop = asyncio.create_task(signals.requested.wait())
            await asyncio.wait({match, stop}, return_when=asyncio.FIRST_COMPLETED)
            if not match.done():
                match.cancel()  # its bots are stopped and its host closed on the way out
                with contextlib.suppress(asyncio.CancelledError):
                    await match
                console.print("[yellow]stopped before the match was over[/yellow]")
                return 128 + (signals.signal or signal.SIGINT)
            stop.cancel()
            show_match(match.result(), console)
            await stay_up(console, url, signals)
        finally:
            await server.close()
    return 0


def show_match(result: MatchResult, console: Console) -> None:
    print_table(console, host_result_table(result))
    console.print(result_summary(result), highlight=False)
    paths = [g.record_path for g, _ in result.games if g.record_path is not None]
    if paths:
        where = paths[0] if len(paths) == 1 else paths[0].parent
        console.print(f"records: {where}  (perspecto replay {paths[-1]})", highlight=False, soft_wrap=True)
    unsaved = [g for g, _ in result.games if g.record_error]
    if unsaved:  # a full or read-only records folder: the results above count them all the same
        console.print(f"[red]{len(unsaved)} game record(s) not saved: {escape(unsaved[-1].record_error or '')}[/red]",
                      highlight=False, soft_wrap=True)


def json_numbers(value: Any) -> Any:
    """JSON has no infinity: an unbounded interval end (``low``, ``high``) and the Elo of a match won or
    lost outright are written as null, never as text, so that every number a script reads is a number
    (the score, 1 or 0, says which way an Elo of null goes)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_numbers(v) for v in value]
    return value


def lab_matches(args: argparse.Namespace, seed: int) -> tuple[list[Match], int]:
    """The matches the arguments ask for, every profile and parameter checked; and the concurrency."""
    plan = pairings(args.profile_a, args.profile_b, gauntlet=args.gauntlet, round_robin=args.round_robin)
    if args.transport != "tcp":
        raise LabError("--transport mqtt connects whole bots: add --via-host")
    profiles = ProfileSet.load(config_dir(args.config))
    rules = Rules(ruleset=args.ruleset, range_attacks=not args.no_range_attacks, two_squares=args.two_squares or None,
                  more_squares=not args.no_more_squares, move_limit=args.move_limit,
                  move_time_average=args.move_time_average, move_time_max=args.move_time_max)
    try:
        rules.options()
    except ValueError as exc:
        raise LabError(f"game options: {exc}") from None
    limits = Limits(nodes=args.nodes, depth=args.depth, move_time=args.move_time)
    sprt = SprtSpec.parse(args.sprt) if args.sprt is not None else None
    if sprt is None and args.max_games is not None:
        raise LabError("--max-games caps an SPRT: give --sprt, or --games for a fixed number of games")
    games = (args.max_games or DEFAULT_SPRT_MAX_GAMES) if sprt is not None else (args.games or 2)
    if games < 1:
        raise LabError(f"--{'max-games' if sprt else 'games'} must be at least 1, not {games}")
    concurrency = args.concurrency if args.concurrency is not None else usable_cores()
    if concurrency < 1:
        raise LabError(f"--concurrency must be at least 1, not {concurrency}")
    source = setup_source(args.setups or "generated", get_ruleset(args.ruleset))
    matches = build_matches(
        plan, profiles.get, pairs=(games + 1) // 2, source=source, seed=seed, limits=limits, rules=rules,
        params=args.param or (), records=None if args.no_records else args.records, sprt=sprt,
    )
    return matches, concurrency


def play_lab(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    console = Console()
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    pool: ClusterPool | None = None
    log: ProgressLog | None = None
    try:
        matches, concurrency = lab_matches(args, seed)
        if args.resume and args.seed is None:
            raise LabError("--resume carries on the run of one seed: give its --seed (the first run printed it)")
        log = _progress_log(args, matches)
        if args.resume and log is None:
            raise LabError("--resume reads the progress saved beside the records (or the --json file): "
                           "not with --no-records and no --json")
        if args.cluster is not None:
            if args.concurrency is not None:
                raise LabError("--concurrency is this machine's: a cluster plays as many games as its workers' threads")
            pool = ClusterPool(args.cluster, report=lambda line: console.print(f"[yellow]{line}[/yellow]",
                                                                             highlight=False, soft_wrap=True))
            pool.connect()
            concurrency = pool.threads
        saved = log.start(matches, resume=bool(args.resume)) if log is not None else []
    except (LabError, ProfileError, ValueError) as exc:
        console.print(f"[red]{exc}[/red]", highlight=False)
        if pool is not None:
            pool.close()
        return 2
    first = matches[0]
    where = f"{concurrency} worker{'' if concurrency == 1 else 's'}"
    if pool is not None:
        where = f"{concurrency} worker thread{'' if concurrency == 1 else 's'} on the cluster at {args.cluster}"
    console.print(
        f"{len(matches)} pairing{'' if len(matches) == 1 else 's'}, up to {2 * first.pairs} games each, "
        f"{first.limits.describe()}, draw at {first.rules.move_limit} plies, setups: {first.source.description}, "
        f"seed {seed} (--seed {seed} plays the same games), {where}"
        + (f"; params: {', '.join(args.param)}" if args.param else "")
        + (f"; resumed with {len(saved)} saved games" if args.resume else ""),
        highlight=False, soft_wrap=True,
    )
    web: LabWeb | None = None
    if args.web is not None:
        if first.records is None:
            console.print("[red]--web shows the lab's games from their records: not with --no-records[/red]")
            return 2
        web = LabWeb(args.web, first.records)
        try:
            announce(console, web.start())
        except OSError as exc:
            console.print(f"[red]cannot serve the web view on {args.web}: {exc}[/red]", highlight=False)
            if log is not None:
                log.close()
            if pool is not None:
                pool.close()
            return 1
    started = time.monotonic()
    interrupted = lost = False
    try:
        with LabProgress(console, matches) as progress:

            def on_game(match: Match, outcome: GameOutcome) -> None:
                if log is not None:
                    log.save(outcome)  # first: a run that dies now has this game
                progress.update(match, outcome)

            run_matches(matches, concurrency=concurrency, on_game=on_game, pool=pool, saved=saved)
    except KeyboardInterrupt:
        interrupted = True
        console.print("[yellow]interrupted: the results so far[/yellow]" + _resume_hint(log, seed))
    except ClusterLost as exc:
        interrupted = lost = True
        console.print(f"[yellow]{exc}: the results so far[/yellow]" + _resume_hint(log, seed), highlight=False)
    except LabError as exc:
        console.print(f"[red]{exc}[/red]" + _resume_hint(log, seed), highlight=False)
        if web is not None:
            web.stop()
        return 2
    finally:
        if log is not None:
            log.close()
    seconds = time.monotonic() - started
    print_table(console, result_table(matches))
    for line in footer(matches, seconds, concurrency):
        console.print(line, highlight=False, soft_wrap=True)
    if first.records is not None and any(m.games for m in matches):
        last = next(g for m in reversed(matches) for g in reversed(m.games))
        console.print(f"records: {first.records}  (perspecto replay {last.record_path})", highlight=False,
                      soft_wrap=True)
    if args.json is not None:
        settings = {"seed": seed, "concurrency": concurrency, "limits": first.limits.describe(),
                    "nodes": first.limits.nodes, "depth": first.limits.depth, "move_time": first.limits.move_time,
                    "move_limit": first.rules.move_limit, "ruleset": first.rules.ruleset,
                    "setups": first.source.description, "params": args.param or [], "sprt": args.sprt,
                    "cluster": args.cluster, "interrupted": interrupted}
        summary = json_numbers(json_summary(matches, settings, seconds))
        args.json.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    if web is not None:
        if not interrupted:
            web.wait_for_stop(console)
        web.stop()
    return 1 if lost else 130 if interrupted else 0


def _progress_log(args: argparse.Namespace, matches: list[Match]) -> ProgressLog | None:
    """The run's saved progress: beside the records, or beside the --json file with --no-records."""
    if not args.no_records:
        return ProgressLog(progress_path(Path(args.records), matches))
    if args.json is not None:
        return ProgressLog(progress_path(args.json.parent, matches))
    return None


def _resume_hint(log: ProgressLog | None, seed: int) -> str:
    if log is None:
        return ""
    return (f" (the finished games are saved in {log.path}: the same command with --seed {seed} --resume "
            "carries on)")


def main(args: argparse.Namespace) -> int:
    load_configuration(args.config)  # every profile, engine parameters included: a ConfigError exits 2 (bot/cli.py)
    if args.via_host:
        given = [f"--{name.replace('_', '-')}" for name in _LAB_ONLY if getattr(args, name) is not None]
        if given:
            Console().print(f"[red]{', '.join(given)}: options of the lab, not of --via-host[/red]")
            return 2
        if args.profile_a is None or args.profile_b is None:
            Console().print("[red]--via-host plays one pairing: name two profiles (A B)[/red]")
            return 2
        return play_match(args, args.profile_a, args.profile_b, args.games if args.games is not None else 2)
    return play_lab(args)
