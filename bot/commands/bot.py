"""``perspecto bot``: run the bot and connect it to a host (a tournament server or ``perspecto host``)."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from bot.client import run_bot
from bot.config import ProfileError, default_profile_name, get_profile
from bot.logging_setup import configure_logging
from bot.runtime import run
from protocol.tcp import parse_address


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bot",
        help="connect the bot to a host and play the games it is given",
        description="Connect to a host speaking the Stratego AI API over TCP (docs/protocol.md), retrying with "
        "jittered backoff until it answers; play every game the host starts; reconnect if the connection "
        "drops; exit when the host says goodbye.",
    )
    p.add_argument("--profile", default=None, help="bot profile (default: perspecto if available, else random)")
    p.add_argument("--connect", default="127.0.0.1:7575", metavar="HOST:PORT", help="default %(default)s")
    p.add_argument("--name", help="name to give the host (default: the profile's)")
    p.add_argument("--token", help="token, if the host asks for one")
    p.add_argument("--seed", type=int, help="seed for setups, engine and fallback moves")
    p.add_argument("--connect-attempts", type=int, default=50, help="attempts before giving up (default %(default)s)")
    p.add_argument("--max-reconnects", type=int, default=5, help="reconnects after a dropped connection")
    p.add_argument("--idle-timeout", type=float, help="drop the connection after this many seconds of silence")
    p.add_argument("--log-level", default="info", help="debug, info, warning or error (default %(default)s)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    try:
        profile = get_profile(args.profile or default_profile_name())
        host, port = parse_address(args.connect)
    except (ProfileError, ValueError) as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        return 2
    return run(
        run_bot(
            profile, host, port, name=args.name, token=args.token, seed=args.seed,
            connect_attempts=args.connect_attempts, max_reconnects=args.max_reconnects,
            idle_timeout=args.idle_timeout,
        )
    )
