"""``perspecto play`` (and ``perspecto`` alone): one game of our bot against a built-in opponent on a
local host, the board shown as it goes and the game saved as a record."""

from __future__ import annotations

import argparse
from typing import Any

from bot.commands.host import add_rules_arguments
from bot.commands.match import add_view_arguments, play_match
from bot.config import default_profile_name


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "play",
        help="one local game: our bot against a built-in opponent, board shown (the default command)",
        description="Play one game on a local host between our bot (profile perspecto when available, else "
        "random) and a built-in opponent, each a separate process over TCP, with the board shown as it "
        "goes; the record is saved (see perspecto replay).",
    )
    p.add_argument("--profile", help="our bot's profile (default: perspecto if available, else random)")
    p.add_argument("--opponent", default="random", help="the opponent's profile (default %(default)s)")
    add_view_arguments(p)
    add_rules_arguments(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    return play_match(args, args.profile or default_profile_name(), args.opponent, 1)
