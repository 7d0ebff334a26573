"""The ``perspecto`` command: a thin dispatcher over one module a subcommand (bot/commands/)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from bot import __version__
from bot.commands.config import report_config_error
from bot.settings import ConfigError

DEFAULT_COMMAND = "play"
DEFAULT_MODULE = "bot.commands.play"

# Each module registers its own subparser and sets ``func`` (args -> exit code).
COMMAND_MODULES = [
    "bot.commands.setups",
    "bot.commands.perft",
    "bot.commands.bench",
    "bot.commands.config",
    "bot.commands.rank_values",
    "bot.commands.beliefs",
    "bot.commands.play",
    "bot.commands.match",
    "bot.commands.host",
    "bot.commands.bot",
    "bot.commands.health",
    "bot.commands.replay",
    "bot.commands.results",
    "bot.commands.analyse",
    "bot.commands.ucc",
    "bot.commands.gauntlet",
]


def command_module(argv: Sequence[str]) -> str | None:
    """The module of the command ``argv`` names first, if any (``rank-values`` -> bot.commands.rank_values)."""
    if not argv or argv[0].startswith("-"):
        return None
    module = "bot.commands." + argv[0].replace("-", "_")
    return module if module in COMMAND_MODULES else None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` the one command module: a command's start-up should not
    pay for importing every other command (``perspecto ucc`` owes the UCC referee its setup within -T
    seconds of starting)."""
    parser = argparse.ArgumentParser(
        prog="perspecto",
        description="Perspecto, a Stratego tournament bot. "
        "Without a command: one local game with the board shown.",
    )
    parser.add_argument("-V", "--version", action="version", version=f"perspecto {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES if only is None else [only]:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_module(argv))
    args = parser.parse_args(argv)
    if args.command is None:
        # The embedded default: a local game against a built-in opponent, board printed as it goes.
        if DEFAULT_MODULE not in COMMAND_MODULES:
            parser.print_help()
            return 0
        args = parser.parse_args([DEFAULT_COMMAND])
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:  # a command refused its configuration before it started (bot/profiles.py)
        report_config_error(exc)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
