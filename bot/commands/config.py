"""``perspecto config check|show``: validate the configuration, or print the merged result."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.config import BotProfile, ProfileError
from bot.profiles import ProfileSet
from bot.settings import ConfigError, DaemonSettings, config_dir, load_settings
from engine_ext.rulesets import get_ruleset


def register(sub: Any) -> None:
    p = sub.add_parser("config", help="check or show the configuration (perspecto.toml and profiles)")
    actions = p.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    check = actions.add_parser("check", help="validate everything; exit 1 naming each bad key")
    check.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    check.set_defaults(func=run_check)
    show = actions.add_parser("show", help="print the merged configuration, secrets masked")
    show.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    show.add_argument("--opponent", help="also say which profile this opponent name selects")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=run_show)


def load_all(directory: str | None) -> tuple[DaemonSettings, ProfileSet]:
    """Settings and profiles, with every problem found reported in one ``ConfigError``."""
    settings = load_settings(directory)
    try:
        profiles = ProfileSet.load(config_dir(directory), settings.default_profile)
    except ProfileError as exc:
        raise ConfigError(str(exc)) from None
    problems = [problem for profile in profiles.profiles.values() for problem in profile_problems(profile)]
    if settings.profile and settings.profile not in profiles.profiles:
        problems.append(f"perspecto.toml: profile: {settings.profile!r} does not exist")
    # "default" may be left to the built-in fallback; any other default must exist.
    if settings.default_profile != "default" and settings.default_profile not in profiles.profiles:
        problems.append(f"perspecto.toml: default_profile: {settings.default_profile!r} does not exist")
    if problems:
        raise ConfigError("\n".join(problems))
    return settings, profiles


def profile_problems(profile: BotProfile) -> list[str]:
    """What only shows when the profile is used: engine parameters and setup names."""
    problems = []
    try:
        profile.create_engine(seed=0)
    except (ProfileError, ValueError) as exc:
        problems.append(str(exc))
    try:
        from setups.choice import SetupChooser

        SetupChooser(profile.setup, get_ruleset("classic"))
    except Exception as exc:  # any failure is the profile's problem
        problems.append(f"profile {profile.name!r}: setup: {exc}")
    return problems


def run_check(args: argparse.Namespace) -> int:
    console = Console()
    try:
        settings, profiles = load_all(args.config)
    except ConfigError as exc:
        err = Console(stderr=True)
        err.print("[red]configuration has errors:[/red]")
        for line in str(exc).splitlines():
            err.print(f"  {line}", markup=False, highlight=False)
        return 1
    console.print(
        f"configuration OK: {config_dir(args.config)} — {len(profiles.files)} profile file(s), "
        f"transport {settings.connection.transport}, default profile {profiles.select(None).name!r}"
    )
    return 0


def run_show(args: argparse.Namespace) -> int:
    try:
        settings, profiles = load_all(args.config)
    except ConfigError as exc:
        Console(stderr=True).print(str(exc), markup=False, highlight=False)
        return 1
    data: dict[str, Any] = {
        "config_dir": str(config_dir(args.config)),
        "settings": settings.redacted(),
        "profiles": {
            name: {**p.model_dump(mode="json"), "file": str(profiles.files.get(name, "(built in)"))}
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
        table.add_column(column)
    for name, p in data["profiles"].items():
        setup = p["setup"]["mode"] + (f" {p['setup']['name']}" if p["setup"]["name"] else "")
        table.add_row(name, p["engine"], ", ".join(p["match"]) or "-", str(p["priority"]), setup, p["file"])
    console.print(table)
    if args.opponent is not None:
        console.print(f"opponent {args.opponent!r} gets profile [bold]{data['selected_for'][args.opponent]}[/bold]")
    return 0
