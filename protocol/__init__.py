"""The Stratego AI API over a socket: JSON-RPC 2.0 messages, one per line (docs/protocol.md).

``messages`` holds the typed params and results of every method, ``codec`` the sans-I/O framing and
matching, ``endpoint`` the async call/answer machinery over any byte channel, ``tcp`` the TCP transport,
``mqtt`` (a package) the MQTT transport, ``link`` what generic code may ask a channel about its peer's reach.

Importing the package imports none of them: ``protocol.ucc`` (the UCC codec) is imported by ``perspecto
ucc`` before its setup is out, and ``protocol.messages`` costs pydantic (docs/ucc.md, start-up).
``PROTOCOL_VERSION`` is looked up in ``messages`` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from protocol.messages import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]


def __getattr__(name: str) -> object:
    if name == "PROTOCOL_VERSION":
        from protocol.messages import PROTOCOL_VERSION

        return PROTOCOL_VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
