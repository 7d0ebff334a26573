"""``perspecto config check|show``: validate the configuration, or print the merged result."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.profiles import load_configuration
from bot.settings import ConfigDirMissing, ConfigError, config_dir
from bot.tables import print_table


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="check or show the configuration (perspecto.toml and profiles)")
    actions = p.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="validate everything; exit 1 naming each bad key "
                               "(2: the directory is not there)")
    check.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    check.set_defaults(func=run_check)
    show = actions.add_parser("show", help="print the merged configuration, secrets masked")
    show.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    show.add_argument("--opponent", help="also say which profile this opponent name selects")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=run_show)


def report_config_error(exc: ConfigError) -> None:
    """How configuration errors are shown, by ``config check`` and by every command that refuses to start
    (bot/cli.py): one problem a line, never wrapped, so that a name can be found in a log."""
    err = Console(stderr=True)
    err.print("[red]configuration has errors:[/red]")
    for line in str(exc).splitlines():
        err.print(f"  {line}", markup=False, highlight=False, soft_wrap=True)


def _exit_code(exc: ConfigError) -> int:
    """2 when the directory named is not there (the command was given a bad argument), 1 when the
    configuration it holds has errors."""
    return 2 if isinstance(exc, ConfigDirMissing) else 1


def run_check(args: argparse.Namespace) -> int:
    console = Console()
    try:
        settings, profiles = load_configuration(args.config)
    except ConfigError as exc:
        report_config_error(exc)
        return _exit_code(exc)
    console.print(
        f"configuration OK: {config_dir(args.config)} — {len(profiles.files)} profile file(s), "
        f"transport {settings.connection.transport}, default profile {profiles.select(None).name!r}"
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    try:
        settings, profiles = load_configuration(args.config)
    except ConfigError as exc:
        report_config_error(exc)
        return _exit_code(exc)
    data: dict[str, Any] = {
        "config_dir": str(config_dir(args.config)),
        "settings": settings.redacted(),
        "profiles": {
            # engine_params: what the profile sets over its engine's built-in settings, as the file says it.
            name: {**p.model_dump(mode="json"), "engine_params": p.engine_params_set(),
                   "file": str(profiles.files.get(name, "(built in)"))}
            for name, p in sorted(profiles.profiles.items())
        },
    }
    if args.opponent is not None:
        data["selected_for"] = {args.opponent: settings.profile or profiles.select(args.opponent).name}
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    console = Console()
    console.print(f"[bold]configuration directory[/bold] {data['config_dir']}")
    console.print_json(json.dumps(data["settings"]))
    table = Table(title="profiles")
    for column in ("name", "engine", "match", "priority", "setup", "file"):
        table.add_column(column, overflow="fold")  # a narrow terminal folds a long name, never cuts it
    for name, p in data["profiles"].items():
        setup = p["setup"]["mode"] + (f" {p['setup']['name']}" if p["setup"]["name"] else "")
        table.add_row(name, p["engine"], ", ".join(p["match"]) or "-", str(p["priority"]), setup, p["file"])
    print_table(console, table)
    if args.opponent is not None:
        console.print(f"opponent {args.opponent!r} gets profile [bold]{data['selected_for'][args.opponent]}[/bold]")
    return 0
