"""``perspecto match A B --games N``: two bot profiles play on a local host, each bot its own process."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from bot.commands.host import add_rules_arguments, host_settings
from bot.config import ProfileError, builtin_profiles
from bot.logging_setup import configure_logging
from bot.match import MatchError, MatchResult, MatchRunner, result_summary, result_table
from bot.runtime import run
from bot.settings import config_dir
from engine_ext.pieces import RANK_STYLES
from protocol.errors import ConnectFailed
from protocol.mqtt import MqttSettings


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


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "match",
        help="play a match between two bot profiles on a local host",
        description="Start a host on a free 127.0.0.1 port and one bot process per profile, play N games with "
        "colours alternating, and show the result in the tournament's scoring. Profiles: "
        + ", ".join(builtin_profiles()),
    )
    p.add_argument("profile_a", metavar="A", help="first bot's profile (red in odd games)")
    p.add_argument("profile_b", metavar="B", help="second bot's profile")
    p.add_argument("--games", type=int, default=2, help="games to play (default %(default)s); 1 shows a live board")
    add_view_arguments(p)
    add_rules_arguments(p)
    p.set_defaults(func=main)


def play_match(args: argparse.Namespace, profile_a: str, profile_b: str, games: int) -> int:
    """Shared by ``match`` and ``play``: run the match and print its table."""
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
        result: MatchResult = run(runner.run(games))
    except (ProfileError, MatchError, ValueError, ConnectFailed) as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    console.print(result_table(result))
    console.print(result_summary(result), highlight=False)
    paths = [g.record_path for g, _ in result.games if g.record_path is not None]
    if paths:
        where = paths[0] if len(paths) == 1 else paths[0].parent
        console.print(f"records: {where}  (perspecto replay {paths[-1]})", highlight=False, soft_wrap=True)
    return 0


def main(args: argparse.Namespace) -> int:
    return play_match(args, args.profile_a, args.profile_b, args.games)
