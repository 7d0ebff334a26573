"""The ``perspecto`` command: a thin dispatcher over one module a subcommand (bot/commands/)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from bot import __version__

DEFAULT_COMMAND = "play"
DEFAULT_MODULE = "bot.commands.play"

# Each module registers its own subparser and sets ``func`` (args -> exit code).
COMMAND_MODULES = [
    "bot.commands.setups",
    "bot.commands.perft",
    "bot.commands.config",
    "bot.commands.rank_values",
    "bot.commands.play",
    "bot.commands.match",
    "bot.commands.host",
    "bot.commands.bot",
    "bot.commands.health",
    "bot.commands.replay",
    "bot.commands.ucc",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perspecto",
        description="Perspecto, a Stratego tournament bot. "
        "Without a command: one local game with the board shown.",
    )
    parser.add_argument("--version", action="version", version=f"perspecto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        # The embedded default: a local game against a built-in opponent, board printed as it goes.
        if DEFAULT_MODULE not in COMMAND_MODULES:
            parser.print_help()
            return 0
        args = parser.parse_args([DEFAULT_COMMAND])
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
