"""A witness process that logs the end of a UCC game when the referee kills the player first.

The UCC 2012 referee sends ``QUIT`` and then, in its ``Program`` destructor, waits "2" for the program to
exit before ``SIGKILL``; its timer counts microseconds (``usleep``), so the kill comes at once and the
player's own ``ucc.quit`` line is written only when it wins that race. The referee also stops a program
(SIGSTOP) while the other side moves, so a player whose flag is taken never runs again at all.

So ``perspecto ucc`` forks this witness before the game. The player tells it, through a pipe, the state
of the game after every line (one JSON object a line), the ``QUIT`` line as soon as its reader thread
sees it, and that it has logged its own end. When the pipe closes (the player has exited or was killed)
without that last word, the witness logs ``ucc.killed`` with the last state and the ``QUIT`` line, if
one came, on the same stderr, and exits. It holds no end of the referee's pipes (its stdin and stdout are
``/dev/null``), so the referee sees the player's exit exactly as before.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any

from bot.safe_text import clip
from engine_ext.bounded_read import JsonTooDeep, check_json_depth

# The most of the referee's QUIT line told to the witness (its result names a program by its path, 4 KiB at most;
# the log cuts a value to 1000 characters anyway): the reader keeps up to 256 KiB of a line.
QUIT_LINE_MAX = 4096
# The most of one message the witness reads: the longest is the QUIT line's, at most 12 bytes a character in
# JSON (a character outside the BMP as two escapes), about 48 KiB. A longer one is dropped as it comes.
MAX_MESSAGE_BYTES = 64 * 2**10
# How deep a message nests: {"state": {...}}.
MAX_MESSAGE_DEPTH = 4


class EndWitness:
    """The player's side of the pipe to the witness; writes never block the game for long and never fail it."""

    def __init__(self, fd: int, pid: int) -> None:
        self._fd = fd
        self.pid = pid

    @classmethod
    def start(cls, configure_logging: Callable[[], None] | None = None) -> EndWitness | None:
        """Fork the witness (before any thread starts); None where there is no fork. ``configure_logging``
        sets structlog up in the witness before it logs: ``perspecto ucc`` forks it before its setup is
        out, when structlog is not even imported yet (bot/ucc/opening.py)."""
        if not hasattr(os, "fork"):
            return None
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the witness
            try:
                os.close(write_end)
                _watch(read_end, configure_logging)
            finally:
                os._exit(0)
        os.close(read_end)
        return cls(write_end, pid)

    def _tell(self, message: dict[str, Any]) -> None:
        if self._fd < 0:
            return
        try:
            os.write(self._fd, json.dumps(message, default=str).encode() + b"\n")
        except OSError:  # the witness is gone; the game goes on without it
            self._fd = -1

    def state(self, fields: dict[str, Any]) -> None:
        """The game as it stands: what ``ucc.killed`` reports if the player dies now."""
        self._tell({"state": fields})

    def quit(self, line: str) -> None:
        """The referee's QUIT line, told before the player handles it."""
        self._tell({"quit": clip(line, QUIT_LINE_MAX)})

    def log_quit(self, line: str) -> None:
        """The referee's QUIT line, which the witness is to log as ``ucc.quit`` once the player has gone: the
        player exits at once before its logs are set up (the opening stage, bot/ucc/opening.py)."""
        self._tell({"quit": clip(line, QUIT_LINE_MAX), "log_quit": True})

    def done(self) -> None:
        """The player has logged its own end: the witness stays silent."""
        self._tell({"done": True})


def _watch(fd: int, configure_logging: Callable[[], None] | None = None) -> None:
    """The witness: read the player's messages until the pipe closes, then log the end if it is unlogged."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C for the player must not silence its witness
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)  # let go of the referee's pipes: only the player holds them
    os.dup2(devnull, 1)
    state: dict[str, Any] = {}
    quit_line: str | None = None
    done = False
    log_quit = False  # the player left the QUIT line's log to us
    for message in _messages(fd):
        if isinstance(message.get("state"), dict):
            state = message["state"]
        if isinstance(message.get("quit"), str):
            quit_line = message["quit"]
        done = done or bool(message.get("done"))
        log_quit = log_quit or bool(message.get("log_quit"))
    if not done:
        import structlog  # here: the player may fork the witness before it has imported structlog

        if configure_logging is not None:
            configure_logging()
        if log_quit:
            result = (quit_line or "").split(maxsplit=1)[1:]
            structlog.get_logger().info("ucc.quit", result=result[0] if result else None, **state)
            return
        why = ("killed right after QUIT, as the referee kills its programs" if quit_line is not None else
               "ended (killed, stopped and killed, or crashed) before any QUIT reached it")
        structlog.get_logger().warning("ucc.killed", why=why, quit=quit_line, **state)


def _messages(fd: int) -> Iterator[dict[str, Any]]:
    """The player's messages, one JSON object a line, until the pipe closes: each byte looked at once, a line
    kept to ``MAX_MESSAGE_BYTES`` (a longer one, or one that is no JSON object, is skipped)."""
    line = bytearray()
    too_long = False  # the line being read is past the bound: skipped up to its end
    while chunk := os.read(fd, 65536):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if not too_long and len(line) + end - start <= MAX_MESSAGE_BYTES:
                line += chunk[start:end]
                message = _message(bytes(line))
                if message is not None:
                    yield message
            line.clear()
            too_long = False
            start = end + 1
        if not too_long:
            line += chunk[start:]
            if len(line) > MAX_MESSAGE_BYTES:
                line.clear()
                too_long = True


def _message(raw: bytes) -> dict[str, Any] | None:
    try:
        text = raw.decode()
        check_json_depth(text, MAX_MESSAGE_DEPTH)
        message = json.loads(text)
    except (ValueError, JsonTooDeep):
        return None
    return message if isinstance(message, dict) else None
