"""The Stratego AI API over a socket: JSON-RPC 2.0 messages, one per line (docs/protocol.md).

``messages`` holds the typed params and results of every method, ``codec`` the sans-I/O framing and
matching, ``endpoint`` the async call/answer machinery over any byte channel, ``tcp`` the TCP transport,
``mqtt`` (a package) the MQTT transport, ``link`` what generic code may ask a channel about its peer's reach.
"""

from protocol.messages import PROTOCOL_VERSION

__all__ = ["PROTOCOL_VERSION"]
