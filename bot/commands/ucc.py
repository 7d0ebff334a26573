"""``perspecto ucc``: play one game as a child process of the UCC 2012 referee (docs/ucc.md)."""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import stat
import sys
import threading
from pathlib import Path

import structlog

from bot import __version__
from bot.config import BotProfile, ProfileError
from bot.profiles import ProfileSet, load_configuration
from bot.settings import config_dir
from bot.ucc.player import DEFAULT_MOVE_TIME, run_ucc
from bot.ucc.witness import EndWitness

log = structlog.get_logger()

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ucc",
        help="play one game under the UCC 2012 Stratego manager (stdin/stdout)",
        description="Play one game as a child process of the UCC 2012 referee `stratego`: referee lines "
        "on stdin, answers on stdout, logs on stderr. The referee runs a bare path with no arguments, so "
        "first write a wrapper with these options: perspecto ucc --write-wrapper ./perspecto-ucc --profile "
        "random; then: stratego -T 2 ./perspecto-ucc other_bot (docs/ucc.md).",
    )
    p.add_argument("--profile", default=None, help="play this profile against everyone (default, as for "
                   "perspecto bot: the configuration's profile setting, else chosen per opponent by the name the "
                   "referee gives, else the default profile)")
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--move-time", type=float, default=DEFAULT_MOVE_TIME, metavar="S",
                   help=f"the referee's time for a move, its -T (default {DEFAULT_MOVE_TIME:g} s)")
    p.add_argument("--seed", type=int, default=None, help="seed for the setup, the engine and fallback moves")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="stderr log level (default info)")
    p.add_argument("--write-wrapper", type=Path, metavar="PATH",
                   help="play no game: write an executable sh script at PATH that runs this perspecto ucc with "
                   "the other options given (and the configuration directory, made absolute), for the referee")
    p.set_defaults(func=run)


def configure_logging(level: str) -> None:
    """structlog to stderr only: stdout carries the protocol and nothing else."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S.%f"),
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def run(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    if not args.move_time > 0:
        log.error("ucc.bad_option", option="--move-time", value=args.move_time)
        return 2
    try:
        profile, profiles = choose_profile(args.config, args.profile)
        profile.create_engine(args.seed)  # a bad engine configuration fails here, before the game
    except ProfileError as exc:
        log.error("ucc.bad_profile", error=str(exc))
        return 2
    if args.write_wrapper is not None:
        return write_wrapper(args, profile, profiles)
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # a stray print anywhere must not corrupt the protocol
    witness = EndWitness.start()  # before any thread starts: it forks
    try:
        code = run_ucc(profile, move_time=args.move_time, seed=args.seed, in_fd=0, out=protocol_out,
                       select_profile=profiles.select if profiles is not None else None, witness=witness)
    finally:
        sys.stdout = protocol_out
    try:
        protocol_out.flush()
    except (BrokenPipeError, ValueError):  # the referee closed our stdout: keep exit quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    if any(t.name == "ucc-engine" and t.is_alive() for t in threading.enumerate()):
        # QUIT came while the engine was thinking; the referee wants us gone at once.
        sys.stderr.flush()
        os._exit(code)
    return code


def choose_profile(config: str | None, forced: str | None) -> tuple[BotProfile, ProfileSet | None]:
    """The profile to play as ``perspecto bot`` chooses it: ``--profile``, else the configuration's
    ``profile``; otherwise the default profile now and the ProfileSet to choose by the opponent's name
    (the referee's colour line gives it). A bad configuration raises ConfigError (bot/cli.py: exit 2)."""
    settings, profiles = load_configuration(config)
    forced = forced or settings.profile
    if forced:
        return profiles.get(forced), None
    return profiles.select(None), profiles


def perspecto_command() -> list[str]:
    """This very Perspecto by absolute path: the console script that runs, else the one beside this
    interpreter (a venv's bin/), else this interpreter with ``-m bot.cli``."""
    running = Path(sys.argv[0])
    if running.name == "perspecto" and running.is_file():
        return [os.path.abspath(running)]
    beside = Path(sys.executable).parent / "perspecto"  # not resolved: a venv's python is a symlink
    if beside.is_file() and os.access(beside, os.X_OK):
        return [os.path.abspath(beside)]
    return [os.path.abspath(sys.executable), "-m", "bot.cli"]


WRAPPER_MARK = "# perspecto ucc wrapper"


def wrapper_text(args: argparse.Namespace) -> str:
    """The sh script: exec Perspecto's UCC player with the options given (the referee passes none)."""
    command = [*perspecto_command(), "ucc"]
    folder = config_dir(args.config)
    if folder.is_dir():
        command += ["--config", str(folder.resolve())]  # the referee's working directory is not ours
    if args.profile:
        command += ["--profile", args.profile]
    if args.move_time != DEFAULT_MOVE_TIME:
        command += ["--move-time", f"{args.move_time:g}"]
    if args.seed is not None:
        command += ["--seed", str(args.seed)]
    if args.log_level != "info":
        command += ["--log-level", args.log_level]
    return (
        "#!/bin/sh\n"
        f"{WRAPPER_MARK}, written by perspecto {__version__} (perspecto ucc --write-wrapper).\n"
        "# The UCC 2012 referee runs a bare path with no arguments; this gives Perspecto its own.\n"
        f'exec {shlex.join(command)} "$@"\n'
    )


def write_wrapper(args: argparse.Namespace, profile: BotProfile, profiles: ProfileSet | None) -> int:
    path: Path = args.write_wrapper
    if path.exists() and (not path.is_file() or WRAPPER_MARK not in path.read_text(errors="replace")[:200]):
        log.error("ucc.wrapper_refused", path=str(path), why="there is a file of something else there")
        return 2
    try:
        path.write_text(wrapper_text(args), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        log.error("ucc.wrapper_failed", path=str(path), error=exc.strerror or str(exc))
        return 2
    folder = config_dir(args.config)
    plays = (f"profile {profile.name!r}" if profiles is None else
             f"the profile chosen by the opponent's name, else {profile.name!r}")
    where = f"configuration {folder.resolve()}" if folder.is_dir() else "no configuration: the built-in profiles"
    print(f"wrote {path}: it plays {plays} ({where}).\n"
          f"Under the referee: stratego -T {args.move_time:g} {shlex.quote(str(path))} OTHER_PROGRAM")
    return 0
