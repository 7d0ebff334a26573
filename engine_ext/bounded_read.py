"""Reading a file whole, with a bound on its size, and its JSON with a bound on its depth: how every reader of a
file someone else may have put there takes it (a game record in a folder a host, the lab or anybody writes to;
the daemon's heartbeat).

``path.read_text()`` reads whatever the path holds: ``perspecto replay /dev/zero`` grew to 8.3 GB in 30 s
(issue 46). Here at most one byte more than the bound is read, so ``/dev/zero``, a huge (or sparse) file or
an endless pipe stops at once with ``FileTooLarge``. The bound is the caller's, one named constant a kind of
file (``engine_ext.rules.record.MAX_RECORD_BYTES``, ``bot.daemon.health.MAX_HEALTH_FILE_BYTES``).

Python's JSON parser recurses once a level of nesting: ``'[' * 200000`` in a records folder stopped
``perspecto analyse`` with a RecursionError, which no reader caught (issue 46). ``check_json_depth`` refuses
such a text before it is parsed, with a ``JsonTooDeep`` that is a ValueError like every other bad file's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# A JSON string (an unterminated one runs to the end, so that the scan stays linear), and what is not a bracket.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")


class FileTooLarge(ValueError):
    """The file holds more than its kind of file may; the message says how much that is."""


class JsonTooDeep(ValueError):
    """JSON nested deeper than its kind of file may be."""


def size_text(n: int) -> str:
    """``16 MiB``, ``64 KiB``, ``300 bytes``: a bound as people read it."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


def read_bounded(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them: ``FileTooLarge`` (naming ``what`` the file should be and
    the bound) when it holds more; ``OSError`` when it cannot be read."""
    # O_NONBLOCK only for the open: a FIFO no program writes to would otherwise block the open forever (a
    # reader of a folder would hang on a ``*.json`` FIFO); opened so, it reads as empty. The reads then block
    # as usual, so a pipe that is being written is read, up to the bound.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:  # one byte past the bound is enough to know it is too large
            chunk = os.read(fd, min(limit + 1 - size, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise FileTooLarge(f"larger than {size_text(limit)}, the most {what} may hold")
    return b"".join(chunks)


def check_json_depth(text: str, limit: int) -> None:
    """``JsonTooDeep`` when ``text`` nests arrays and objects deeper than ``limit``, checked before it is parsed:
    strings dropped (a bracket in a name is no nesting) and the brackets left counted, the dropping at the
    regular expressions' speed and the counting stopped at the first level too deep."""
    depth = 0
    for bracket in _NOT_BRACKETS.sub("", _JSON_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            raise JsonTooDeep(f"JSON nested deeper than {limit} levels")
