"""structlog configuration: readable lines on a terminal, JSON lines otherwise.

Game id, opponent and move number are bound with ``bind_game`` (contextvars), so every line logged
while a game runs carries them, whichever module logs it. Values of keys that look like secrets
are replaced before anything is rendered.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import MutableMapping
from typing import Any, TextIO

import structlog

SECRET_KEY = re.compile(r"(pass(word)?|secret|token|credential|api[_-]?key|auth)", re.IGNORECASE)
REDACTED = "***"
_URL_PASSWORD = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://[^:/@\s]+):(?P<pw>[^@\s]+)@", re.IGNORECASE)


def redact_secrets(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Hide secret-looking fields, and passwords written inside URLs (mqtt://user:pw@host)."""
    for key in list(event):
        value = event[key]
        if SECRET_KEY.search(key) and value not in (None, ""):
            event[key] = REDACTED
        elif isinstance(value, str) and "@" in value:
            event[key] = _URL_PASSWORD.sub(rf"\g<scheme>:{REDACTED}@", value)
    return event


def _visible_strings(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    """On a terminal, a string a peer chose (a bot's name, an error message) shows its control characters as
    escapes, never as terminal escape codes (bot/safe_text.py)."""
    from bot.safe_text import visible  # here: only a console log needs it

    for key, value in event.items():
        if isinstance(value, str):
            event[key] = visible(value)
    return event


def configure_logging(level: str = "info", fmt: str = "auto", stream: TextIO | None = None) -> None:
    """``fmt``: "console" (coloured, for people), "json" (for machines) or "auto" (console on a TTY)."""
    stream = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if stream.isatty() and not os.environ.get("PERSPECTO_LOG_JSON") else "json"
    if fmt not in ("console", "json"):
        raise ValueError(f"log format must be auto, console or json, not {fmt!r}")
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}")
    renderer: Any = structlog.processors.JSONRenderer()
    shown: list[Any] = []  # JSON escapes control characters on its own
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty())
        shown = [_visible_strings]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            redact_secrets,
            *shown,
            structlog.processors.StackInfoRenderer(),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )


def bind_game(game_id: str, opponent: str, **extra: Any) -> None:
    structlog.contextvars.bind_contextvars(game_id=game_id, opponent=opponent, **extra)


def bind_move(move_number: int) -> None:
    # "move_no", not "move": log calls pass the move itself as ``move=``.
    structlog.contextvars.bind_contextvars(move_no=move_number)


def clear_game() -> None:
    structlog.contextvars.unbind_contextvars("game_id", "opponent", "move_no")
