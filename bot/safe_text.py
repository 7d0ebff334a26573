"""Text that others chose (a bot's name, an opponent's, a forfeit's detail), made safe to print on a terminal.

A bot names itself in its hello, and a host names the opponent: either can put terminal escape codes in a
name (to clear the screen, retitle the window, hide text) or rich markup (``[red]``). Everything printed with
rich that came from a peer or from a file a peer's words reach goes through ``terminal_safe`` first.
"""

from __future__ import annotations

import unicodedata

from rich.markup import escape

# Unicode categories never printed as they are: control characters (ESC, BEL, newlines...), format
# characters (right-to-left overrides that reorder what follows), unassigned and private-use code points, and
# lone surrogates.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cn", "Co", "Cs"})


def _visible(char: str) -> str:
    if unicodedata.category(char) not in _HIDDEN_CATEGORIES:
        return char
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible(text: str) -> str:
    """``text`` with every control or format character written as its escape (``\\x1b``), as ``repr`` would."""
    return "".join(_visible(char) for char in text)


def terminal_safe(text: str) -> str:
    """``text`` to print with rich: control characters escaped and rich markup shown as written."""
    return escape(visible(text))
