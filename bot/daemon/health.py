"""The daemon's heartbeat file, and the check that reads it (``perspecto health``, the Docker HEALTHCHECK).

``$PERSPECTO_STATE_DIR/health.json`` (default ``~/.local/state/perspecto``), rewritten atomically (a
temporary file renamed over it) every few seconds and at once when the state changes::

    {"state": "in_game", "game_id": "7d918c-0001", "pid": 4242, "updated": "2026-01-01T12:00:00.000Z",
     "updated_ts": 1767268800.0, "since": "...", "bot": "perspecto", "transport": "mqtt", "stopping": false,
     "not_saved": {}}

States: ``disconnected`` (no session with a host: connecting, reconnecting, the broker or the host out of
reach, or the daemon has stopped), ``connected`` (a connection, hello not yet answered), ``idle`` (a
session, no game), ``in_game``. The check passes when the file is fresh and the state is not
``disconnected``. ``not_saved`` names what the bot cannot write (``journal``, ``opponent_store``: why;
``games_not_stored``: how many); the check prints it, as a bot that plays on without them is still healthy.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from engine_ext.bounded_read import check_json_depth, read_bounded

log = structlog.get_logger()

STATE_DIR_ENV = "PERSPECTO_STATE_DIR"
HEALTH_FILE = "health.json"
STATES = ("disconnected", "connected", "idle", "in_game")
DEFAULT_INTERVAL = 5.0  # seconds between heartbeats
DEFAULT_MAX_AGE = 30.0  # seconds after which a heartbeat is stale (the Docker check runs every 30 s)
# The most of a heartbeat file read: one is a few hundred bytes (not_saved's reasons included), and a path that
# holds more (``--file /dev/zero`` read 8 GB) is no heartbeat.
MAX_HEALTH_FILE_BYTES = 64 * 2**10
MAX_HEALTH_FILE_DEPTH = 8  # its JSON's nesting: the heartbeat has 2 levels (not_saved is an object in it)


def default_state_dir() -> Path:
    """``$PERSPECTO_STATE_DIR``, else ``$XDG_STATE_HOME/perspecto``, else ``~/.local/state/perspecto``."""
    explicit = os.environ.get(STATE_DIR_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "state") / "perspecto"


def health_path(state_dir: Path | None = None) -> Path:
    return (state_dir or default_state_dir()) / HEALTH_FILE


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def write_health(path: Path, status: dict[str, Any]) -> None:
    """Replace the file in one rename, so a reader never sees half of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(status, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def _load_health(path: Path) -> dict[str, Any]:
    """The heartbeat; OSError (FileNotFoundError: none) or ValueError (too large, not one) saying why not."""
    text = read_bounded(path, MAX_HEALTH_FILE_BYTES, "a heartbeat file").decode("utf-8")
    check_json_depth(text, MAX_HEALTH_FILE_DEPTH)
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not an object")
    return data


def read_health(path: Path) -> dict[str, Any] | None:
    try:
        return _load_health(path)
    except (OSError, ValueError):
        return None


def check_health(path: Path, *, max_age: float = DEFAULT_MAX_AGE, now: float | None = None) -> tuple[bool, str]:
    """(healthy, one line saying why)."""
    try:
        data = _load_health(path)
    except FileNotFoundError:
        return False, f"no heartbeat file at {path} (is the daemon running?)"
    except (OSError, ValueError) as exc:
        return False, f"no heartbeat in {path}: {exc}"
    state, updated = data.get("state"), data.get("updated_ts")
    if not isinstance(updated, int | float):
        return False, f"{path}: no updated_ts"
    age = (time.time() if now is None else now) - float(updated)
    game = f" (game {data['game_id']})" if data.get("game_id") else ""
    stopping = ", stopping" if data.get("stopping") else ""
    line = f"{state}{game}{stopping}, updated {age:.1f} s ago, pid {data.get('pid')}"
    not_saved = data.get("not_saved")
    if isinstance(not_saved, dict) and not_saved:
        line += "; NOT SAVED: " + "; ".join(f"{what}: {why}" for what, why in sorted(not_saved.items()))
    if age > max_age:
        return False, f"stale: {line} (more than {max_age:g} s)"
    if state not in STATES or state == "disconnected":
        return False, f"unhealthy: {line}"
    return True, f"healthy: {line}"


class HealthReporter:
    """Writes the heartbeat: ``status()`` gives the fields (``state`` first of all); ``refresh`` writes
    at once if the state, game or stopping flag changed, and a task rewrites it every ``interval``."""

    def __init__(self, path: Path, status: Callable[[], dict[str, Any]], *, interval: float = DEFAULT_INTERVAL):
        self.path = path
        self.status = status
        self.interval = interval
        self.history: list[str] = []  # the states written, in order (tests, logs)
        self.write_error: str | None = None  # why the last write failed (logged once until it changes)
        self._last_key: tuple[Any, ...] | None = None
        self._since = time.time()
        self._task: asyncio.Task[None] | None = None

    def refresh(self, *, force: bool = False) -> None:
        status = self.status()
        key = (status.get("state"), status.get("game_id"), status.get("stopping"), repr(status.get("not_saved")))
        if key == self._last_key and not force:
            return
        if key[0] != (self._last_key or (None,))[0]:
            self._since = time.time()
            self.history.append(str(status.get("state")))
            log.info("bot.health", **{k: v for k, v in status.items() if k in ("state", "game_id", "stopping")})
        self._last_key = key
        now = time.time()
        status = {**status, "pid": os.getpid(), "updated": _iso(now), "updated_ts": round(now, 3),
                  "since": _iso(self._since)}
        try:
            write_health(self.path, status)
        except OSError as exc:  # a full or read-only disk must not stop the games
            if str(exc) != self.write_error:  # once, not at every call of every game
                log.warning("bot.health_write_failed", path=str(self.path), error=str(exc))
            self.write_error = str(exc)
            return
        if self.write_error is not None:
            log.info("bot.health_write_recovered", path=str(self.path))
            self.write_error = None

    def start(self) -> None:
        self.refresh(force=True)
        self._task = asyncio.create_task(self._beat())

    async def stop(self, final: dict[str, Any] | None = None) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if final is not None:
            status = self.status
            self.status = lambda: {**status(), **final}
            self.refresh(force=True)

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            self.refresh(force=True)
