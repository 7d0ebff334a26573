"""``perspecto host``: the referee bots connect to; it pairs them and plays games between them."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.commands.bot import DEFAULT_LINK_TIMEOUT, add_mqtt_arguments, mqtt_settings
from bot.host import GameResult, Host, HostSettings, standings
from bot.logging_setup import configure_logging
from bot.runtime import run
from engine_ext.rulesets import RULESETS
from protocol.errors import ConnectFailed
from protocol.tcp import parse_address


def add_rules_arguments(p: argparse.ArgumentParser) -> None:
    """The game options every command that starts games shares (defaults: the 2008 tournament's)."""
    g = p.add_argument_group("game options")
    g.add_argument("--ruleset", default="classic", choices=sorted(RULESETS), help="default %(default)s")
    g.add_argument("--move-limit", type=int, default=2000, help="plies before a draw (default %(default)s)")
    g.add_argument("--move-time-max", type=float, default=15.0, help="seconds for any move (default %(default)s)")
    g.add_argument("--move-time-average", type=float, default=5.0, help="average seconds a move (default %(default)s)")
    g.add_argument("--grace", type=float, default=0.5, help="network allowance on top of --move-time-max")
    g.add_argument("--two-squares", type=int, default=5, help="two-squares limit, 0 for off (default %(default)s)")
    g.add_argument("--no-more-squares", action="store_true", help="switch the more-squares rule off")
    g.add_argument("--no-range-attacks", action="store_true", help="scouts attack only from next to the target")
    g.add_argument("--records", type=Path, default=Path("records"), help="where game records go (default %(default)s)")
    g.add_argument("--no-records", action="store_true", help="do not save game records")
    g.add_argument("--log-level", default="warning", help="debug, info, warning or error (default %(default)s)")


def host_settings(args: argparse.Namespace, **extra: Any) -> HostSettings:
    return HostSettings(
        ruleset=args.ruleset, move_limit=args.move_limit, move_time_max=args.move_time_max,
        move_time_average=args.move_time_average, grace=args.grace, two_squares=args.two_squares or None,
        more_squares=not args.no_more_squares, range_attacks=not args.no_range_attacks,
        records_dir=None if args.no_records else args.records, **extra,
    )


def standings_table(results: list[GameResult]) -> Table:
    table = Table(title=f"{len(results)} games")
    for column in ("bot", "games", "W", "D", "L", "F", "score"):
        table.add_column(column, justify="left" if column == "bot" else "right")
    for name, t in standings(results).items():
        table.add_row(name, *(str(v) for v in (t.games, t.wins, t.draws, t.losses, t.forfeits, t.score)))
    return table


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
    add_mqtt_arguments(p, "also serve bots through this MQTT broker")
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
                                 resume_grace=args.resume_grace, mqtt=mqtt)
    except ValueError as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        return 2
    return run(_serve(settings, args, console))


async def _serve(settings: HostSettings, args: argparse.Namespace, console: Console) -> int:
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

    def report(result: GameResult) -> None:
        colour = "yellow" if result.forfeits else "default"
        console.print(f"[{colour}]{result.summary()}[/{colour}]", soft_wrap=True, highlight=False)

    try:
        await host.serve_lobby(games_per_pairing=args.games_per_pairing, max_games=args.max_games, on_result=report)
    except asyncio.CancelledError:
        pass  # interrupted: still show what was played
    finally:
        await host.close()
        if host.results:
            console.print(standings_table(host.results))
    return 0
