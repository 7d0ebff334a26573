"""The bounds that keep what a peer sends from costing us more than we allow (docs/host.md, threat model).

Two kinds, both sans-I/O:

- what we *repeat* of a peer's text: an error message, a validation error naming its unknown keys, a method
  name it made up. ``clip`` cuts it to ``PEER_TEXT_MAX`` characters before it goes into anything we send or
  log, so every message we compose stays far below the line bound, whatever the peer sent;
- what a connection may *cost* before it has said hello (``Allowance``, spent through a ``Budget``): bytes,
  messages, invalid messages, and the log lines about them. A stranger who can reach the port gets a few
  answered mistakes, not the event loop.
"""

from __future__ import annotations

from dataclasses import dataclass

# Characters of a peer's text kept when we repeat it (in an error answer, a forfeit's detail, a log line).
PEER_TEXT_MAX = 500
# Characters of the free-text fields we send (gameOver's detail, illegalSetup's reason, goodbye's reason):
# two clipped peer texts and the host's own words about them fit.
DETAIL_MAX = 1600
# Characters of a request id we accept: an error answer repeats the id, so it must be short too.
ID_MAX = 128
# Bytes one character can take in our JSON (ensure_ascii off): a control character is written \u00XX.
JSON_BYTES_PER_CHAR = 6
# The smallest line bound under which every message the host composes fits (docs/host.md): a gameOver with a
# full DETAIL_MAX detail of control characters, the longest id and both setups of the largest ruleset is 15,169
# bytes (at 2,000 characters it was up to 17,569: hypothesis found a gameOver of 16,387).
MIN_MAX_LINE = 16 * 1024


def clip(text: str, limit: int = PEER_TEXT_MAX) -> str:
    """``text`` cut to at most ``limit`` characters, saying how long it was (never longer than ``limit``)."""
    if len(text) <= limit:
        return text
    marker = f"... ({len(text)} characters in all)"
    return text[: max(0, limit - len(marker))] + marker[: limit]


@dataclass(frozen=True)
class Allowance:
    """What one connection may cost before it is trusted (before its hello is welcomed)."""

    bytes: int = 128 * 1024  # received: a hello is well under 1 KB; room for one oversized line before it
    messages: int = 8  # lines that decode to something (valid or not); blank keep-alive lines are free
    errors: int = 3  # invalid messages: each is answered, so a confused client still hears why
    log_lines: int = 3  # warnings about its invalid messages; one more line says the rest go unlogged


class Budget:
    """An ``Allowance`` being spent. ``spend`` returns why the connection is over budget (None while it is
    not); ``may_log`` says whether one more warning about it may be written (and counts it)."""

    def __init__(self, allowance: Allowance | None = None) -> None:
        self.allowance = allowance or Allowance()
        self.bytes = 0
        self.messages = 0
        self.errors = 0
        self.logged = 0
        self.lifted = False  # the connection said hello: from now on only the log lines are counted

    def lift(self) -> None:
        self.lifted = True

    def spend(self, *, bytes: int = 0, messages: int = 0, errors: int = 0) -> str | None:
        self.bytes += bytes
        self.messages += messages
        self.errors += errors
        if self.lifted:
            return None
        a = self.allowance
        if self.bytes > a.bytes:
            return f"sent more than {a.bytes} bytes before hello"
        if self.messages > a.messages:
            return f"sent more than {a.messages} messages before hello"
        if self.errors > a.errors:
            return f"sent more than {a.errors} invalid messages before hello"
        return None

    def may_log(self) -> bool:
        """True for the first ``log_lines`` warnings of the connection (trusted or not)."""
        self.logged += 1
        return self.logged <= self.allowance.log_lines

    @property
    def unlogged(self) -> int:
        return max(0, self.logged - self.allowance.log_lines)
