"""``perspecto play`` (and ``perspecto`` alone): one game of our bot against a built-in opponent on a
local host, the board shown as it goes and the game saved as a record."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from bot.commands.host import add_rules_arguments
from bot.commands.match import add_view_arguments, play_match
from bot.profiles import ProfileSet, load_configuration
from bot.settings import CONFIG_DIR_ENV, config_dir

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
    # Every profile, engine parameters included, before the bots start: a ConfigError exits 2 (bot/cli.py).
    _, profiles = load_configuration(args.config)
    ours = args.profile or profiles.select(None).name
    Console().print(uses_line(args.config, profiles, ours), highlight=False, soft_wrap=True)
    return play_match(args, ours, args.opponent, 1)


def uses_line(config: str | None, profiles: ProfileSet, ours: str) -> str:
    """Which profile our bot plays and which configuration it comes from: said first, since outside the
    repository there is no ./config and the built-in settings and profiles play."""
    folder = config_dir(config)
    source = f"from {profiles.files[ours]}" if ours in profiles.files else "built in"
    if folder.is_dir():
        where = f"configuration {folder.resolve()}"
    else:
        where = (f"no configuration at {folder}: the built-in settings and profiles (name one with --config DIR "
                 f"or ${CONFIG_DIR_ENV})")
    return f"our bot plays profile {ours!r} ({source}); {where}"
