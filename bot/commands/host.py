"""``perspecto host``: the referee bots connect to; it pairs them and plays games between them.

It stops cleanly on SIGTERM or SIGINT: no new games, the games under way get ``--stop-grace`` seconds to
finish and are adjourned after that, every bot gets a goodbye, the standings are printed and saved, exit
0. A second signal quits at once (exit 128 + the signal); the standings file is kept up to date after
every game, so it still holds every finished game.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from bot.commands.bot import DEFAULT_LINK_TIMEOUT, add_mqtt_arguments, mqtt_settings
from bot.daemon.runtime import run
from bot.host.referee import GameResult, Host, HostSettings, standings
from bot.logging_setup import configure_logging
from bot.safe_text import terminal_safe
from bot.tables import print_table
from bot.web.feed import GameFeed
from bot.web.options import add_web_argument
from bot.web.server import WebServer
from bot.web.service import StopSignals, announce
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import RULESETS
from engine_ext.rules.tournament import MOVE_LIMIT, MOVE_TIME_AVERAGE, MOVE_TIME_MAX
from protocol.errors import ConnectFailed
from protocol.tcp import parse_address
from protocol.validation import validation_text


def add_rules_arguments(p: argparse.ArgumentParser) -> None:
    """The game options every command that starts games shares (defaults: the 2008 tournament's)."""
    g = p.add_argument_group("game options")
    g.add_argument("--ruleset", default="classic", choices=sorted(RULESETS), help="default %(default)s")
    g.add_argument("--move-limit", type=int, default=MOVE_LIMIT, help="plies before a draw (default %(default)s)")
    g.add_argument("--move-time-max", type=float, default=MOVE_TIME_MAX,
                   help="seconds for any move (default %(default)s)")
    g.add_argument("--move-time-average", type=float, default=MOVE_TIME_AVERAGE,
                   help="average seconds a move (default %(default)s)")
    g.add_argument("--grace", type=float, default=0.5, help="network allowance on top of --move-time-max")
    g.add_argument("--two-squares", type=int, default=5, help="two-squares limit, 0 for off (default %(default)s)")
    g.add_argument("--no-more-squares", action="store_true", help="switch the more-squares rule off")
    g.add_argument("--no-range-attacks", action="store_true", help="scouts attack only from next to the target")
    g.add_argument("--records", type=Path, default=Path("records"), help="where game records go (default %(default)s)")
    g.add_argument("--no-records", action="store_true", help="do not save game records")
    g.add_argument("--log-level", default="warning", help="debug, info, warning or error (default %(default)s)")


def host_settings(args: argparse.Namespace, **extra: Any) -> HostSettings:
    """The host's settings from the game options (ValueError, ValidationError among them: a bad value)."""
    if args.move_time_average > args.move_time_max:  # no bot could keep such an average
        raise ValueError(f"--move-time-average ({args.move_time_average:g} s) must not exceed --move-time-max "
                         f"({args.move_time_max:g} s); with a shorter maximum, give a shorter average too")
    return HostSettings(
        ruleset=args.ruleset, move_limit=args.move_limit, move_time_max=args.move_time_max,
        move_time_average=args.move_time_average, grace=args.grace, two_squares=args.two_squares or None,
        more_squares=not args.no_more_squares, range_attacks=not args.no_range_attacks,
        records_dir=None if args.no_records else args.records, **extra,
    )


def standings_table(results: list[GameResult]) -> Table:
    adjourned = sum(r.adjourned for r in results)
    table = Table(title=f"{len(results)} games" + (f", {adjourned} adjourned" if adjourned else ""))
    for column in ("bot", "games", "W", "D", "L", "F", "adj", "score"):
        table.add_column(column, justify="left" if column == "bot" else "right")
    for name, t in standings(results).items():
        row = (t.games, t.wins, t.draws, t.losses, t.forfeits, t.adjourned, t.score)
        table.add_row(terminal_safe(name), *(str(v) for v in row))
    unsaved = [r for r in results if r.record_error]
    if unsaved:  # the results above count them all the same
        table.caption = (f"[red]{len(unsaved)} game record(s) not saved: "
                         f"{terminal_safe(unsaved[-1].record_error or '')}[/red]")
    return table


STANDINGS_FORMAT = "perspecto-standings/1"


def standings_document(run_id: str, results: Iterable[GameResult], *, final: bool) -> dict[str, Any]:
    """The standings file: every bot's tally and every game (with its record's file), JSON-ready.
    ``final``: the host has stopped (otherwise it is the state after the latest game)."""
    results = list(results)
    return {
        "format": STANDINGS_FORMAT,
        "run": run_id,
        "final": final,
        "updated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "games": len(results),
        "bots": [
            {"name": name, "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
             "forfeits": t.forfeits, "adjourned": t.adjourned, "score": t.score}
            for name, t in standings(results).items()
        ],
        "results": [
            {"game_id": r.game_id, "red": r.names[Side.RED], "blue": r.names[Side.BLUE],
             "winner": None if r.winner is None else str(r.winner), "reason": r.reason, "plies": r.plies,
             "scores": {"red": r.score(Side.RED), "blue": r.score(Side.BLUE)}, "detail": r.detail,
             "record": None if r.record_path is None else str(r.record_path), "record_error": r.record_error}
            for r in results
        ],
        # What could not be written (a full or read-only records folder): the games count all the same.
        "not_saved": [f"record of {r.game_id}: {r.record_error}" for r in results if r.record_error],
    }


def save_standings(path: Path, document: dict[str, Any]) -> None:
    """Write by rename: a reader (or a second signal) never meets half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "host",
        help="run a host (referee) that bots connect to",
        description="Listen for bots speaking the Stratego AI API (docs/protocol.md), pair the free ones (those "
        "that met least often first), play games between them with colours alternating, and score them "
        "with the tournament's table (win 6, draw 3, loss 1, forfeit 0).",
    )
    p.add_argument("--listen", default="127.0.0.1:7575", metavar="HOST:PORT", help="default %(default)s")
    p.add_argument("--games-per-pairing", type=int, default=2, help="games a pair plays in a row (default %(default)s)")
    p.add_argument("--max-games", type=int, help="stop after this many games (default: serve until interrupted)")
    p.add_argument("--token", action="append", help="accept only bots with this token (repeatable)")
    p.add_argument("--resume-grace", type=float, default=30.0,
                   help="seconds (per bot and game) a game waits for a bot that lost its connection to resume it; "
                   "0: it forfeits at once (default %(default)s)")
    p.add_argument("--stranger-rate", type=float, default=2.0, metavar="N",
                   help="new TCP connections a second per address that have not said a welcomed hello; more are "
                   "closed at once, unread (default %(default)s; docs/host.md, limits)")
    p.add_argument("--stranger-burst", type=float, default=10.0, metavar="N",
                   help="the burst of such connections an address may open before --stranger-rate applies "
                   "(default %(default)s)")
    p.add_argument("--stop-grace", type=float, default=30.0,
                   help="on SIGTERM/SIGINT, seconds the games under way get to finish before they are adjourned "
                   "(default %(default)s)")
    p.add_argument("--standings", type=Path, metavar="FILE",
                   help="where the standings are saved, after every game and at the end (default: "
                   "RECORDS/standings/RUN.json; none with --no-records)")
    add_mqtt_arguments(p, "also serve bots through this MQTT broker")
    add_web_argument(p, "the games (live boards, replays) and the standings")
    add_rules_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    console = Console()
    try:
        address, port = parse_address(args.listen)
        # A bot out of reach is a bot that may be gone: by default it has as long as it would have to resume.
        link_timeout = args.link_timeout or args.resume_grace or DEFAULT_LINK_TIMEOUT
        mqtt = mqtt_settings(args, link_timeout=link_timeout) if args.mqtt else None
        settings = host_settings(args, host=address, port=port, tokens=frozenset(args.token) if args.token else None,
                                 resume_grace=args.resume_grace, mqtt=mqtt, stranger_rate=args.stranger_rate,
                                 stranger_burst=args.stranger_burst)
        if args.stop_grace < 0:
            raise ValueError(f"--stop-grace must be 0 or more, not {args.stop_grace:g}")
        # 0 games a pairing would pair the same two bots forever without playing (a busy loop).
        if args.games_per_pairing < 1:
            raise ValueError(f"--games-per-pairing must be 1 or more, not {args.games_per_pairing}")
        if args.max_games is not None and args.max_games < 1:
            raise ValueError(f"--max-games must be 1 or more, not {args.max_games}")
    except ValidationError as exc:
        Console(stderr=True).print(f"[red]bad option: {validation_text(exc)}[/red]", highlight=False)
        return 2
    except ValueError as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]", highlight=False)
        return 2
    return run(_serve(settings, args, console))


def standings_path(args: argparse.Namespace, run_id: str) -> Path | None:
    if args.standings is not None:
        return Path(args.standings)
    if args.no_records:
        return None
    return Path(args.records) / "standings" / f"{run_id}.json"


async def _serve(settings: HostSettings, args: argparse.Namespace, console: Console) -> int:
    signals = StopSignals(console)
    signals.install()  # before anything else: a signal while starting is a stop too, never a traceback
    try:
        return await _host(settings, args, console, signals)
    finally:
        signals.remove()


async def _host(settings: HostSettings, args: argparse.Namespace, console: Console, signals: StopSignals) -> int:
    host = Host(settings)
    try:
        port = await host.start()
    except ConnectFailed as exc:
        console.print(f"[red]cannot reach the MQTT broker: {exc}[/red]")
        return 1
    except OSError as exc:
        console.print(f"[red]cannot listen on {settings.host}:{settings.port}: {exc}[/red]")
        return 1
    console.print(f"host listening on {settings.host}:{port}  (bots: perspecto bot --connect {settings.host}:{port})",
                  soft_wrap=True)
    if host.mqtt_address is not None:
        console.print(f"host serving MQTT at {host.mqtt_address}  (bots: perspecto bot --mqtt {host.mqtt_address})",
                      soft_wrap=True, highlight=False)

    web: WebServer | None = None
    if args.web is not None:
        feed = GameFeed(results=lambda: host.results)
        host.observe(feed)
        web = WebServer(feed, args.web)
        try:
            announce(console, await web.start())
        except OSError as exc:
            console.print(f"[red]cannot serve the web view on {args.web}: {exc}[/red]", highlight=False)
            await host.close()
            return 1
    try:
        return await _tournament(host, settings, args, console, signals)
    finally:
        if web is not None:
            await web.close()


async def _tournament(
    host: Host, settings: HostSettings, args: argparse.Namespace, console: Console, signals: StopSignals
) -> int:
    saved_to = standings_path(args, host.run_id)

    def save(final: bool) -> bool:
        if saved_to is None:
            return False
        try:
            save_standings(saved_to, standings_document(host.run_id, host.results, final=final))
        except OSError as exc:  # a full disk costs the file, not the tournament
            import structlog  # here: the command's start-up imports only what it needs

            structlog.get_logger().error("host.standings_not_saved", path=str(saved_to), error=str(exc),
                                         games=len(host.results))
            console.print(f"[red]cannot save the standings to {saved_to}: {exc}[/red]", highlight=False,
                          soft_wrap=True)
            return False
        return True

    def report(result: GameResult) -> None:
        colour = "yellow" if result.forfeits or result.adjourned else "default"
        console.print(f"[{colour}]{terminal_safe(result.summary())}[/{colour}]", soft_wrap=True, highlight=False)
        if result.record_error:
            console.print(f"[red]{result.game_id}: the game's record was not saved "
                          f"({terminal_safe(result.record_error)}); its result counts[/red]",
                          soft_wrap=True, highlight=False)
        save(final=False)

    lobby = asyncio.create_task(
        host.serve_lobby(games_per_pairing=args.games_per_pairing, max_games=args.max_games, on_result=report)
    )
    stop = asyncio.create_task(signals.requested.wait())
    try:
        await asyncio.wait({lobby, stop}, return_when=asyncio.FIRST_COMPLETED)
        if not lobby.done():
            await _wind_down(host, lobby, signals, args.stop_grace, console)
        lobby.result()  # a bug in the lobby still shows
    finally:
        stop.cancel()
        if not lobby.done():  # only on an error above: the lobby must not outlive the host
            lobby.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lobby
        # A bot busy with a move when its game was adjourned reads the goodbye once it has answered.
        await host.close(linger=settings.move_time_max + settings.grace + 1.0)
        print_table(console, standings_table(host.results))
        if save(final=True):
            console.print(f"standings saved to {saved_to}", highlight=False, soft_wrap=True)
    return 0


async def _wind_down(
    host: Host, lobby: asyncio.Task[Any], signals: StopSignals, grace: float, console: Console
) -> None:
    """The first signal: no new games; the games under way finish within ``grace`` or are adjourned."""
    name = signal.Signals(signals.signal or signal.SIGTERM).name
    host.stop_pairing()
    console.print(f"{name}: stopping; no new games, the games under way have {grace:g} s to finish "
                  "(a second signal quits at once)", highlight=False, soft_wrap=True)
    await asyncio.wait({lobby}, timeout=grace)
    if not lobby.done():
        console.print("adjourning the games still under way", highlight=False)
        await host.adjourn_games(f"the host stopped and the game was still under way {grace:g} s later")
        await lobby
