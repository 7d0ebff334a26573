"""Text that others chose (a bot's name, an opponent's, a forfeit's detail), made safe to print on a terminal.

A bot names itself in its hello, and a host names the opponent: either can put terminal escape codes in a
name (to clear the screen, retitle the window, hide text) or rich markup (``[red]``). Everything printed with
rich that came from a peer or from a file a peer's words reach goes through ``terminal_safe`` first; a log
renderer that writes a peer's words on a terminal, through ``visible``. Text a peer may make as long as it
likes is cut with ``clip`` before it is kept or logged.
"""

from __future__ import annotations

import unicodedata

# Unicode categories never printed as they are: control characters (ESC, BEL, newlines...), format
# characters (right-to-left overrides that reorder what follows), unassigned and private-use code points, and
# lone surrogates.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})


def _visible(char: str, keep: str) -> str:
    if char in keep or unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every control or format character written as its escape (``\\x1b``), as ``repr`` would;
    the characters of ``keep`` (``"\\n"`` for a board we drew ourselves) stay as they are."""
    return "".join(_visible(char, keep) for char in text)


def terminal_safe(text: str) -> str:
    """``text`` to print with rich: control characters escaped and rich markup shown as written."""
    from rich.markup import escape  # here: ``perspecto ucc`` uses the rest before its setup is out

    return escape(visible(text))


def clip(text: str, limit: int) -> str:
    """``text`` with at most ``limit`` characters of it, saying how long it was when cut."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
