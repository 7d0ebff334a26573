"""The ``perspecto`` command: a thin dispatcher over one module a subcommand (bot/commands/).

Start-up time matters here: ``perspecto ucc`` owes the UCC referee its setup within its -T seconds of
starting (docs/ucc.md), and ``perspecto --help`` should not pay for pydantic, numpy and the engine. So this
module imports nothing of the project but ``bot`` itself: the commands are declared from the table below
(name and one-line summary), and only the command that runs has its module imported, which then declares
its own options (``register``). ``perspecto X --help`` therefore shows X's full options, and the list of
commands in ``perspecto --help`` costs no command module at all.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypeGuard

if TYPE_CHECKING:
    from bot.settings import ConfigError


class Command(NamedTuple):
    """A subcommand: its name, the module that registers its parser and runs it, its line in --help."""

    name: str
    module: str
    summary: str  # the same text as the module's own ``help=`` (tests/test_cli_startup.py keeps them in step)


COMMANDS: tuple[Command, ...] = (
    Command("setups", "bot.commands.setups", "list, show, generate and check setups"),
    Command("perft", "bot.commands.perft", "count the leaf positions at exactly depth N (checks move generation)"),
    Command("bench", "bot.commands.bench",
            "the bench signature: nodes searched over fixed positions at a fixed depth (last line)"),
    Command("config", "bot.commands.config", "check or show the configuration (perspecto.toml and profiles)"),
    Command("rank-values", "bot.commands.rank_values",
            "derive rank values from capture and detection counts (the rank-value study)"),
    Command("beliefs", "bot.commands.beliefs", "fit and measure the belief model (what hidden pieces probably are)"),
    Command("play", "bot.commands.play",
            "one local game: our bot against a built-in opponent, board shown (the default command)"),
    Command("match", "bot.commands.match",
            "a match between engines (the strength lab) or, with --via-host, between whole bots"),
    Command("host", "bot.commands.host", "run a host (referee) that bots connect to"),
    Command("bot", "bot.commands.bot", "connect the bot to a host and play the games it is given"),
    Command("health", "bot.commands.health", "check the bot daemon's heartbeat (exit 0 healthy, 1 not)"),
    Command("replay", "bot.commands.replay", "show a saved game move by move"),
    Command("results", "bot.commands.results", "the bot's results per opponent, from its opponent store"),
    Command("analyse", "bot.commands.analyse", "causes of loss and chases, counted from game records"),
    Command("suite", "bot.commands.suite", "positions from our lost games: what the engine must or must not play"),
    Command("ucc", "bot.commands.ucc", "play one game under the UCC 2012 Stratego manager (stdin/stdout)"),
    Command("gauntlet", "bot.commands.gauntlet",
            "one engine against UCC programs at a tournament clock: W/D/L, score interval, causes of loss"),
)
COMMANDS_BY_NAME = {command.name: command for command in COMMANDS}
COMMAND_MODULES = [command.module for command in COMMANDS]

DEFAULT_COMMAND = "play"  # without a command: a local game against a built-in opponent, board shown


def command_module(argv: Sequence[str]) -> str | None:
    """The module of the command ``argv`` names first, if any (``rank-values`` -> bot.commands.rank_values)."""
    if not argv or argv[0].startswith("-"):
        return None
    command = COMMANDS_BY_NAME.get(argv[0])
    return command.module if command is not None else None


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for (bot/__init__.py says why)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings=option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        from bot import __version__

        print(f"perspecto {__version__}")  # on stdout, as argparse's own version action prints it
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line: every command declared by its name and summary, and the one whose module is
    ``only`` registered in full by that module (the only command module imported)."""
    parser = argparse.ArgumentParser(
        prog="perspecto",
        description="Perspecto, a Stratego tournament bot. "
        "Without a command: one local game with the board shown.",
    )
    parser.add_argument("-V", "--version", action=_VersionAction, help="show the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        if command.module == only:
            importlib.import_module(command.module).register(sub)
        else:  # declared for the list of commands only: never parsed (command_module chose ``only``)
            sub.add_parser(command.name, help=command.summary, add_help=False)
    return parser


def _is_config_error(exc: BaseException) -> TypeGuard[ConfigError]:
    """A command refused its configuration (bot/settings.py's ConfigError). Looked up in sys.modules: a
    command that never imported bot.settings cannot have raised one, and importing it costs pydantic."""
    settings = sys.modules.get("bot.settings")
    return settings is not None and isinstance(exc, settings.ConfigError)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(command_module(argv))
    args = parser.parse_args(argv)
    if args.command is None:  # the default command
        argv = [DEFAULT_COMMAND]
        args = build_parser(command_module(argv)).parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if not _is_config_error(exc):
            raise
        from bot.commands.config import report_config_error  # a command refused its configuration

        report_config_error(exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
