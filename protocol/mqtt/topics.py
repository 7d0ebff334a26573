"""The topics of one host and what is published on them (docs/mqtt.md, Topics)::

    perspecto/<host-id>/presence                 the host's presence (retained; last will: offline)
    perspecto/<host-id>/bot/<bot-id>/to-host     the bot's messages to the host
    perspecto/<host-id>/bot/<bot-id>/to-bot      the host's messages to the bot
    perspecto/<host-id>/bot/<bot-id>/presence    the bot's presence (retained; last will: offline)
    perspecto/<host-id>/bot/<bot-id>/echo        where a bot measures its round trip through the broker

A presence is a small JSON object (``Presence``). A message on ``to-host``/``to-bot`` is one JSON-RPC message
exactly as on TCP, without its newline, with the stream's numbering in MQTT v5 user properties
(``stream``, ``to``, ``seq``, ``ack``, ``ctl``): ``publish_properties`` writes them, ``read_envelope`` reads
them back.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import aiomqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

TOPIC_ROOT = "perspecto"


@dataclass(frozen=True)
class Topics:
    host_id: str

    @property
    def base(self) -> str:
        return f"{TOPIC_ROOT}/{self.host_id}"

    @property
    def host_presence(self) -> str:
        return f"{self.base}/presence"

    def to_host(self, bot_id: str) -> str:
        return f"{self.base}/bot/{bot_id}/to-host"

    def to_bot(self, bot_id: str) -> str:
        return f"{self.base}/bot/{bot_id}/to-bot"

    def bot_presence(self, bot_id: str) -> str:
        return f"{self.base}/bot/{bot_id}/presence"

    def bot_echo(self, bot_id: str) -> str:
        """Where a bot measures its round trip through the broker: it publishes there and reads it back."""
        return f"{self.base}/bot/{bot_id}/echo"

    def bot_of(self, topic: str) -> tuple[str, str] | None:
        """(bot id, kind) of a bot topic, kind one of to-host, to-bot, presence."""
        parts = topic.split("/")
        if len(parts) == 5 and parts[:3] == [TOPIC_ROOT, self.host_id, "bot"]:
            return parts[3], parts[4]
        return None


def bot_client_id(host_id: str, bot_id: str) -> str:
    return f"perspecto-{host_id}-bot-{bot_id}"


def host_client_id(host_id: str) -> str:
    return f"perspecto-{host_id}-host"


def presence_payload(state: str, stream: str, role: str, *, name: str | None = None,
                     reason: str | None = None, probe: bool = False) -> bytes:
    body: dict[str, Any] = {"state": state, "stream": stream, "role": role, "time": round(time.time(), 3)}
    if name is not None:
        body["name"] = name
    if reason is not None:
        body["reason"] = reason
    if probe:
        body["probe"] = True
    return json.dumps(body, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Presence:
    """A presence message. ``probe``: the sender has just (re)connected and asks the other side to say it
    is there. ``live``: published now, not a retained copy handed out on subscribing, which may be old
    (a broker that died sends no last wills): only a live ``online`` shows that the other side is there."""

    state: str  # online or offline
    stream: str
    reason: str | None = None  # offline: "lost" (the last will) or "closed"
    probe: bool = False
    live: bool = True

    @property
    def online(self) -> bool:
        return self.state == "online"


def parse_presence(payload: bytes, *, live: bool = True) -> Presence | None:
    try:
        body = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(body, dict) or body.get("state") not in ("online", "offline"):
        return None
    stream, reason = body.get("stream"), body.get("reason")
    if not isinstance(stream, str):
        return None
    return Presence(body["state"], stream, reason if isinstance(reason, str) else None,
                    probe=body.get("probe") is True, live=live)


def read_presence(message: aiomqtt.Message) -> Presence | None:
    payload = message.payload if isinstance(message.payload, bytes) else b""
    return parse_presence(payload, live=not message.retain)


def publish_properties(stream: str, to: str | None, seq: int | None, ack: int, ctl: str | None) -> Properties:
    props = Properties(PacketTypes.PUBLISH)
    items = [("stream", stream), ("ack", str(ack))]
    if to is not None:
        items.append(("to", to))
    if seq is not None:
        items.append(("seq", str(seq)))
    if ctl is not None:
        items.append(("ctl", ctl))
    props.UserProperty = items  # paho appends on assignment: one assignment of the whole list
    return props


@dataclass(frozen=True)
class Envelope:
    """A message on a to-host/to-bot topic, its user properties read."""

    stream: str
    to: str | None
    seq: int | None  # None: a receipt alone
    ack: int
    ctl: str | None
    payload: bytes


def read_envelope(message: aiomqtt.Message) -> Envelope | None:
    pairs = getattr(message.properties, "UserProperty", None) or []
    props = {str(k): str(v) for k, v in pairs}
    stream = props.get("stream")
    if not stream:
        return None
    try:
        seq = int(props["seq"]) if "seq" in props else None
        ack = int(props.get("ack", "0"))
    except ValueError:
        return None
    if seq is not None and seq < 1:
        return None
    payload = message.payload if isinstance(message.payload, bytes) else str(message.payload).encode()
    return Envelope(stream, props.get("to"), seq, ack, props.get("ctl"), payload)
