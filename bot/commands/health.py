"""``perspecto health``: is the bot daemon alive and connected? (the Docker HEALTHCHECK; docs/operating.md)"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bot.daemon.health import DEFAULT_MAX_AGE, check_health, health_path, read_health
from bot.safe_text import visible


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "health",
        help="check the bot daemon's heartbeat (exit 0 healthy, 1 not)",
        description="Read the heartbeat file the bot daemon rewrites every few seconds "
        "($PERSPECTO_STATE_DIR/health.json) and exit 0 when it is fresh and the bot is connected (states "
        "connected, idle, in_game), 1 when it is stale, missing or says disconnected. Prints the state.",
    )
    p.add_argument("--state-dir", type=Path, help="the daemon's state directory (default $PERSPECTO_STATE_DIR, "
                   "else ~/.local/state/perspecto)")
    p.add_argument("--file", type=Path, help="the heartbeat file itself (overrides --state-dir)")
    p.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE,
                   help="seconds after which the heartbeat is stale (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the heartbeat file's fields as JSON")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    path = args.file or health_path(args.state_dir)
    healthy, line = check_health(path, max_age=args.max_age)
    if args.json:
        print(json.dumps({"healthy": healthy, "summary": line, "heartbeat": read_health(path)}, sort_keys=True))
    else:
        print(visible(line))  # the game's id is the host's, the reasons the file's: no escape codes raw
    return 0 if healthy else 1
