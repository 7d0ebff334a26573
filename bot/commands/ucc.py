"""``perspecto ucc``: play one game as a child process of the UCC 2012 referee (docs/ucc.md)."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading

import structlog

from bot.config import ProfileError, default_profile_name, get_profile
from bot.ucc_player import DEFAULT_MOVE_TIME, run_ucc

log = structlog.get_logger()

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ucc",
        help="play one game under the UCC 2012 Stratego manager (stdin/stdout)",
        description="Play one game as a child process of the UCC 2012 referee `stratego`: referee lines "
        "on stdin, answers on stdout, logs on stderr. Example: "
        'stratego -T 2 "perspecto ucc --profile random" other_bot',
    )
    p.add_argument("--profile", default=None, help="bot profile to play (default: the Perspecto engine if "
                   "registered, else random)")
    p.add_argument("--move-time", type=float, default=DEFAULT_MOVE_TIME, metavar="S",
                   help=f"the referee's time for a move, its -T (default {DEFAULT_MOVE_TIME:g} s)")
    p.add_argument("--seed", type=int, default=None, help="seed for the setup, the engine and fallback moves")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="stderr log level (default info)")
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
        profile = get_profile(args.profile or default_profile_name())
        profile.create_engine(args.seed)  # a bad engine configuration fails here, before the game
    except ProfileError as exc:
        log.error("ucc.bad_profile", error=str(exc))
        return 2
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # a stray print anywhere must not corrupt the protocol
    try:
        code = run_ucc(profile, move_time=args.move_time, seed=args.seed, in_fd=0, out=protocol_out)
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
