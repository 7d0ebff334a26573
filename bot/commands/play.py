"""``perspecto play`` (and ``perspecto`` alone): one game of our bot against a built-in opponent on a
local host, the board shown as it goes and the game saved as a record."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from bot.commands.host import add_rules_arguments
from bot.commands.match import add_view_arguments, play_match
from bot.config import ProfileError
from bot.profiles import ProfileSet
from bot.settings import config_dir

# A demo game should end in a minute or two; the tournament's clock is an option away.
PLAY_MOVE_TIME_AVERAGE = 0.3
PLAY_MOVE_TIME_MAX = 2.0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "play",
        help="one local game: our bot against a built-in opponent, board shown (the default command)",
        description="Play one game on a local host between our bot (the configuration's default profile) and "
        "a built-in opponent, each a separate process over TCP, with the board shown as it goes; the record "
        "is saved (see perspecto replay). The clock is quick by default (0.3 s a move on average, 2 s at "
        "most) so that a game takes a minute or two; --move-time-average 5 --move-time-max 15 is the "
        "tournament's.",
    )
    p.add_argument("--profile", help="our bot's profile (default: the configuration's default profile)")
    p.add_argument("--opponent", default="random", help="the opponent's profile (default %(default)s)")
    add_view_arguments(p)
    add_rules_arguments(p)
    p.set_defaults(func=main, move_time_average=PLAY_MOVE_TIME_AVERAGE, move_time_max=PLAY_MOVE_TIME_MAX)


def main(args: argparse.Namespace) -> int:
    try:
        ours = args.profile or ProfileSet.load(config_dir(args.config)).select(None).name
    except ProfileError as exc:
        Console(stderr=True).print(f"configuration error:\n{exc}", markup=False, highlight=False)
        return 2
    return play_match(args, ours, args.opponent, 1)
