"""The MQTT transport: the same JSON-RPC messages as the TCP transport, carried through an MQTT broker.

Everything is published with QoS 1 on MQTT v5 persistent sessions (a stable client id, clean start off, a
session expiry), so the broker queues what arrives while a client is away. QoS 1 means *at least once*: a
stream layer numbers each side's messages, the receiver drops what it already has and puts overtaken
messages back in order, and the sender keeps every message until the other side acknowledges it and
publishes it again when the other side is back after an outage. The ``Channel`` above therefore sees every
message once, in order, across broker restarts and cut connections; it never sees the outage itself,
because reconnecting (with jittered backoff) happens in here. What it can learn about outages it reads
through the typed ``LinkStatus`` of protocol/link.py.

A *stream* is one channel's lifetime (a random id). A bot process that restarts comes back with a new
stream: messages the broker still holds for the old one are dropped here, and the resume handshake
(docs/mqtt.md) picks the game up instead.

The modules, from the bottom up (docs/mqtt.md):

- ``settings``: ``MqttSettings`` (where the broker is, its URL form) and the ids of hosts and bots;
- ``topics``: the topic names, presence messages, and the user properties that number a stream's messages;
- ``stream``: sans-I/O, exactly once in order over at least once (``ReliableStream``) and the clock of
  outages (``DownClock``);
- ``broker_link``: one broker connection kept up across outages (``BrokerLink``) and the round trip through
  the broker it measures; the only module that uses aiomqtt's client;
- ``stream_end``: what both ends of a stream share (``StreamEnd``: a ``Channel`` and a ``LinkStatus``);
- ``bot_end``: the bot's end, ``MqttChannel``;
- ``host_end``: the host's end, ``MqttHostListener`` and a ``HostMqttChannel`` per bot stream.

Nothing outside this package imports aiomqtt. The names below are this package's public interface.
"""

from protocol.link import call_pausing_outages, current_outage, outage_seconds  # their home is protocol.link
from protocol.mqtt.bot_end import MqttChannel
from protocol.mqtt.broker_link import NAGLE_FIX, BrokerLink, MqttRefused, Outgoing, RoundTrip, slow_round_trip
from protocol.mqtt.host_end import MAX_ENDED_STREAMS, HostMqttChannel, MqttHostListener
from protocol.mqtt.settings import (
    DEFAULT_PORT,
    DEFAULT_TLS_PORT,
    ID_PATTERN,
    MqttSettings,
    bot_id_from_name,
    check_id,
    redact_url,
)
from protocol.mqtt.stream import CTL_ACK, CTL_CLOSE, CTL_RESET, DownClock, Frame, ReliableStream
from protocol.mqtt.stream_end import ACK_DELAY, WATCH_INTERVAL, StreamEnd
from protocol.mqtt.topics import (
    TOPIC_ROOT,
    Envelope,
    Presence,
    Topics,
    bot_client_id,
    host_client_id,
    parse_presence,
    presence_payload,
    publish_properties,
    read_envelope,
    read_presence,
)

__all__ = [
    "ACK_DELAY",
    "CTL_ACK",
    "CTL_CLOSE",
    "CTL_RESET",
    "DEFAULT_PORT",
    "DEFAULT_TLS_PORT",
    "ID_PATTERN",
    "MAX_ENDED_STREAMS",
    "NAGLE_FIX",
    "TOPIC_ROOT",
    "WATCH_INTERVAL",
    "BrokerLink",
    "DownClock",
    "Envelope",
    "Frame",
    "HostMqttChannel",
    "MqttChannel",
    "MqttHostListener",
    "MqttRefused",
    "MqttSettings",
    "Outgoing",
    "Presence",
    "ReliableStream",
    "RoundTrip",
    "StreamEnd",
    "Topics",
    "bot_client_id",
    "bot_id_from_name",
    "call_pausing_outages",
    "check_id",
    "current_outage",
    "host_client_id",
    "outage_seconds",
    "parse_presence",
    "presence_payload",
    "publish_properties",
    "read_envelope",
    "read_presence",
    "redact_url",
    "slow_round_trip",
]
