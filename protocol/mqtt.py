"""The MQTT transport: the same JSON-RPC messages as the TCP transport, carried through an MQTT broker.

Topics (docs/mqtt.md), for one host ``<host-id>`` and each bot ``<bot-id>``::

    perspecto/<host-id>/presence                 the host's presence (retained; last will: offline)
    perspecto/<host-id>/bot/<bot-id>/to-host     the bot's messages to the host
    perspecto/<host-id>/bot/<bot-id>/to-bot      the host's messages to the bot
    perspecto/<host-id>/bot/<bot-id>/presence    the bot's presence (retained; last will: offline)

The payload of a message is one JSON-RPC message exactly as on TCP, without its newline. Everything is
published with QoS 1 on MQTT v5 persistent sessions (a stable client id, clean start off, a session expiry),
so the broker queues what arrives while a client is away. QoS 1 means *at least once*: a stream layer
(``ReliableStream``) numbers each side's messages in MQTT v5 user properties (``stream``, ``to``, ``seq``,
``ack``, ``ctl``), the receiver drops what it already has and puts overtaken messages back in order, and
the sender keeps every message until the other side acknowledges it and publishes it again when the other
side is back after an outage. The ``Channel`` above therefore sees every message once, in order, across
broker restarts and cut connections; it never sees the outage itself, because reconnecting (with jittered
backoff) happens in here.

A *stream* is one channel's lifetime (a random id). A bot process that restarts comes back with a new
stream: messages the broker still holds for the old one are dropped here, and the resume handshake
(docs/mqtt.md) picks the game up instead.

``MqttChannel`` is the bot's end. ``MqttHostListener`` is the host's: one broker connection, and one
``HostMqttChannel`` per bot stream, handed to the host like an accepted TCP connection.

Nothing outside this module imports aiomqtt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import ssl
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import aiomqtt
import structlog
from aiomqtt.exceptions import MqttCodeError, MqttConnectError
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from protocol import errors
from protocol.endpoint import Endpoint
from protocol.tcp import backoff_delays

log = structlog.get_logger()

TOPIC_ROOT = "perspecto"
ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
_ID = re.compile(ID_PATTERN)
DEFAULT_PORT, DEFAULT_TLS_PORT = 1883, 8883

ACK_DELAY = 0.1  # seconds before a receipt goes out on its own (usually an answer carries it sooner)
WATCH_INTERVAL = 0.5  # seconds between checks for overdue acknowledgements and long outages
CTL_CLOSE = "close"  # an ordered end of stream
CTL_ACK = "ack"  # a receipt alone, no payload
CTL_RESET = "reset"  # host to bot: that stream is over on the host's side (it ended or never existed)
MAX_ENDED_STREAMS = 1000

# CONNACK reason codes that no retry will change (MQTT 3.1.1: 1, 2, 4, 5; MQTT 5: 0x81.. below):
# malformed, protocol error, bad version, bad client id, bad credentials, not authorised, banned, bad auth.
_PERMANENT_CONNACK = frozenset({1, 2, 4, 5, 129, 130, 132, 133, 134, 135, 138, 140})


# paho reports every dropped socket on its own logger; our structured log says it once, with the reconnect.
_PAHO_LOG = logging.getLogger("protocol.mqtt.paho")
_PAHO_LOG.setLevel(logging.CRITICAL)
_PAHO_LOG.propagate = False


class MqttRefused(errors.ConnectFailed):
    """The broker turned us away for a reason retrying cannot fix: credentials, authorisation, TLS."""


# --- settings ------------------------------------------------------------------------------------------


class MqttSettings(BaseModel):
    """Where the broker is and how to talk to it; ``from_url`` reads the usual URL form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    host_id: str = Field(default="local", pattern=ID_PATTERN, description="the host's topic namespace")
    username: str | None = None
    password: SecretStr | None = None
    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    tls_insecure: bool = Field(default=False, description="do not verify the broker's certificate (tests only)")
    keepalive: int = Field(default=10, ge=1, le=65535, description="seconds; a dead link shows in 1.5 times this")
    session_expiry: int = Field(default=3600, ge=0, description="seconds the broker keeps a session for us")
    link_timeout: float = Field(default=60.0, gt=0, description="seconds the peer may be unreachable")
    connect_timeout: float = Field(default=10.0, gt=0)
    retry_base: float = Field(default=0.1, gt=0)
    retry_cap: float = Field(default=5.0, gt=0)
    retransmit_after: float = Field(default=5.0, gt=0, description="resend what is unacknowledged this long")
    close_timeout: float = Field(default=2.0, ge=0, description="seconds a closing channel waits for receipts")
    slow_round_trip: float = Field(default=0.02, ge=0, description="seconds; a bot warns when the round trip "
                                   "through the broker, measured at connect, is longer (0: no warning)")

    @model_validator(mode="after")
    def _tls_files(self) -> MqttSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("a client certificate needs both cert_file and key_file")
        return self

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> MqttSettings:
        """``mqtt://[user[:password]@]host[:port][/host-id][?ca=F&cert=F&key=F&insecure=1]``, or
        ``mqtts://`` for TLS (default port 8883). ``overrides`` win over the URL."""
        parts = urlsplit(url)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ValueError(f"bad MQTT URL {redact_url(url)!r} (expected mqtt://host:port or mqtts://host:port)")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"bad MQTT URL {redact_url(url)!r}: bad port") from None
        tls = parts.scheme == "mqtts"
        values: dict[str, Any] = {"host": parts.hostname, "tls": tls,
                                  "port": port or (DEFAULT_TLS_PORT if tls else DEFAULT_PORT)}
        if parts.username:
            values["username"] = unquote(parts.username)
        if parts.password is not None:
            values["password"] = unquote(parts.password)
        path = parts.path.strip("/")
        if path:
            values["host_id"] = path
        query = {key: items[-1] for key, items in parse_qs(parts.query).items()}
        for key, field in (("ca", "ca_file"), ("cert", "cert_file"), ("key", "key_file")):
            if key in query:
                values[field] = Path(query.pop(key))
                values["tls"] = True
        if "insecure" in query:
            values["tls_insecure"] = query.pop("insecure").lower() in ("1", "true", "yes")
        for key in ("keepalive", "session_expiry", "link_timeout", "slow_round_trip"):
            if key in query:
                values[key] = query.pop(key)
        if query:
            raise ValueError(f"unknown MQTT URL parameter(s): {', '.join(sorted(query))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    @property
    def url(self) -> str:
        """The broker's URL without the password, for banners and logs."""
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}/{self.host_id}"

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.cert_file is not None and self.key_file is not None:
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        if self.tls_insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def redact_url(url: str) -> str:
    return re.sub(r"(://[^:/@\s]+):[^@\s]*@", r"\1:***@", url)


def check_id(value: str, what: str = "id") -> str:
    if not _ID.match(value):
        raise ValueError(f"bad {what} {value!r}: 1-64 characters of A-Z a-z 0-9 _ . -")
    return value


def bot_id_from_name(name: str) -> str:
    """A topic-safe bot id from a hello name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "bot"


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


# --- exactly once, in order, over at least once ----------------------------------------------------------


@dataclass
class Frame:
    seq: int
    payload: bytes = b""
    ctl: str | None = None  # None: a JSON-RPC message; CTL_CLOSE: the end of the stream
    sent_at: float = 0.0


class ReliableStream:
    """One direction pair of a stream, sans-I/O: the sender numbers its frames from 1 and keeps each one
    until the receiver acknowledges it; the receiver acknowledges the highest number up to which it has
    everything, drops frames it already has (QoS 1 and our own resending both duplicate) and holds back
    frames that overtook a missing one."""

    MAX_HELD = 10_000

    def __init__(self) -> None:
        self._next_seq = 1
        self._unacked: dict[int, Frame] = {}  # in sending order
        self._held: dict[int, Frame] = {}
        self.received = 0  # every frame up to this number has been delivered
        self.peer_acked = 0
        self.sent = self.delivered = self.duplicates = self.retransmissions = 0

    def send(self, payload: bytes, ctl: str | None = None) -> Frame:
        frame = Frame(self._next_seq, payload, ctl)
        self._next_seq += 1
        self._unacked[frame.seq] = frame
        self.sent += 1
        return frame

    def acknowledge(self, ack: int) -> None:
        ack = min(ack, self._next_seq - 1)  # a receipt for something never sent is ignored
        if ack <= self.peer_acked:
            return
        self.peer_acked = ack
        for seq in [s for s in self._unacked if s <= ack]:
            del self._unacked[seq]

    def receive(self, frame: Frame) -> list[Frame]:
        """The frames now deliverable, in order (none for a duplicate or an early frame)."""
        if frame.seq <= self.received or frame.seq in self._held:
            self.duplicates += 1
            return []
        if frame.seq != self.received + 1:
            if len(self._held) < self.MAX_HELD:
                self._held[frame.seq] = frame
            return []
        ready = [frame]
        self.received = frame.seq
        while (following := self._held.pop(self.received + 1, None)) is not None:
            ready.append(following)
            self.received += 1
        self.delivered += len(ready)
        return ready

    def unacked(self) -> list[Frame]:
        return list(self._unacked.values())

    @property
    def all_acked(self) -> bool:
        return not self._unacked


def _publish_properties(stream: str, to: str | None, seq: int | None, ack: int, ctl: str | None) -> Properties:
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


class DownClock:
    """Seconds a link has been down, in all, so that move clocks can leave the outages out."""

    def __init__(self, down: bool = False) -> None:
        self._since: float | None = time.monotonic() if down else None
        self._total = 0.0

    @property
    def down(self) -> bool:
        return self._since is not None

    def set(self, down: bool) -> bool:
        """Record the state; True when it changed."""
        if down == self.down:
            return False
        now = time.monotonic()
        if down:
            self._since = now
        else:
            assert self._since is not None
            self._total += now - self._since
            self._since = None
        return True

    def current(self) -> float:
        """Seconds of the outage going on now (0 while up)."""
        return 0.0 if self._since is None else time.monotonic() - self._since

    def total(self) -> float:
        return self._total + self.current()


# --- the round trip through the broker ------------------------------------------------------------------

NAGLE_FIX = "set_tcp_nodelay true in the broker's mosquitto.conf (docs/mqtt.md, Broker configuration)"


@dataclass(frozen=True)
class RoundTrip:
    """One measurement at connect (medians of a few probes): seconds from publishing a message until the
    broker handed it back (``echo``) and until the broker's receipt of it came (``receipt``)."""

    echo: float
    receipt: float

    @property
    def seconds(self) -> float:
        """What a call waits for: both of the broker's answers."""
        return max(self.echo, self.receipt)

    @property
    def lag(self) -> float:
        """How far apart the broker's two answers came. The broker writes them back to back, so only
        Nagle's algorithm on its socket (holding the second until we acknowledge the first) parts them."""
        return abs(self.receipt - self.echo)


def slow_round_trip(measured: RoundTrip, threshold: float) -> dict[str, Any] | None:
    """The warning's fields when the round trip is over ``threshold`` seconds (0: never), naming the
    likely cause and its fix; None when it is fine."""
    if threshold <= 0 or measured.seconds <= threshold:
        return None
    fields: dict[str, Any] = {"round_trip_ms": round(measured.seconds * 1000, 1),
                              "threshold_ms": round(threshold * 1000, 1)}
    if measured.lag > threshold / 2:
        fields.update(cause="the broker holds small messages back (Nagle's algorithm): every call waits for it",
                      fix=NAGLE_FIX)
    else:
        fields.update(cause="the network between the bot and the broker",
                      fix="a broker nearer to the bots and the host")
    return fields


# --- one broker connection, kept up --------------------------------------------------------------------


@dataclass(frozen=True)
class _Outgoing:
    topic: str
    payload: bytes
    properties: Properties | None = None
    retain: bool = False


def _connack_code(exc: MqttCodeError) -> int | None:
    rc = exc.rc
    if isinstance(rc, ReasonCode):
        return int(rc.value)
    return rc if isinstance(rc, int) else None


def _is_permanent(exc: BaseException) -> bool:
    if isinstance(exc, MqttConnectError):
        return _connack_code(exc) in _PERMANENT_CONNACK
    text = str(exc)
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text


class _Link:
    """One MQTT v5 connection kept up across broker outages: it reconnects with jittered exponential
    backoff (the persistent session keeps our subscriptions and queues our messages meanwhile) and
    publishes from a queue, so nobody above waits on the network. Whatever was queued when the connection
    dropped is discarded: the owners publish their unacknowledged frames, receipts and presence again in
    ``on_connected``."""

    def __init__(
        self,
        settings: MqttSettings,
        *,
        client_id: str,
        subscriptions: list[str],
        will: aiomqtt.Will,
        on_connected: Callable[[], None],
        on_message: Callable[[aiomqtt.Message], None],
        on_state: Callable[[bool], None],
        what: str,
        echo_topic: str | None = None,
    ) -> None:
        self.settings = settings
        self.client_id = client_id
        self.subscriptions = subscriptions
        self.echo_topic = echo_topic  # for measure_round_trip; its messages never reach on_message
        self._echoes: dict[bytes, asyncio.Future[float]] = {}  # probe payload -> when it came back
        self.will = will
        self._on_connected = on_connected
        self._on_message = on_message
        self._on_state = on_state
        self.what = what
        self.up = False
        self.connections = 0
        self.outages: list[float] = []  # seconds each outage lasted, from losing the link to having it back
        self._lost_at: float | None = None
        self._client: aiomqtt.Client | None = None
        self._queue: asyncio.Queue[_Outgoing] = asyncio.Queue()
        self._stop = asyncio.Event()
        self._first: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._tls = settings.ssl_context()  # built once: it reads the certificate files

    async def start(self, attempts: int | None = None) -> None:
        """Connect; returns once connected. Raises MqttRefused for what retrying cannot fix, ConnectFailed
        after ``attempts`` failed attempts (None: keep trying)."""
        self._first = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._run(attempts))
        try:
            await asyncio.shield(self._first)
        except BaseException:
            await self.stop()
            raise

    def publish(self, item: _Outgoing) -> None:
        if self.up:
            self._queue.put_nowait(item)

    async def stop(self, final: list[_Outgoing] | None = None) -> None:
        """Publish ``final`` (waiting for the broker's receipts, briefly), then disconnect cleanly: a clean
        disconnect does not trigger the last will."""
        client = self._client
        if client is not None and self.up and final:
            for item in final:
                with contextlib.suppress(aiomqtt.MqttError, TimeoutError):
                    await client.publish(item.topic, item.payload, qos=1, retain=item.retain,
                                         properties=item.properties,
                                         timeout=max(self.settings.close_timeout, 0.1))
        self._stop.set()
        if self._task is not None:
            try:
                # Not cancelled at once: a connect running in a thread must finish and disconnect, or it
                # would linger and take over the session of whoever uses this client id next.
                async with asyncio.timeout(self.settings.connect_timeout + 5.0):
                    await asyncio.shield(self._task)
            except TimeoutError:
                self._task.cancel()
            except Exception:
                pass
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _new_client(self) -> aiomqtt.Client:
        connect_properties = Properties(PacketTypes.CONNECT)
        connect_properties.SessionExpiryInterval = self.settings.session_expiry
        password = self.settings.password.get_secret_value() if self.settings.password else None
        return aiomqtt.Client(
            self.settings.host,
            self.settings.port,
            identifier=self.client_id,
            protocol=aiomqtt.ProtocolVersion.V5,
            clean_start=False,  # never: the session (subscriptions, queued messages) must survive reconnects
            properties=connect_properties,
            will=self.will,
            username=self.settings.username,
            password=password,
            tls_context=self._tls,
            keepalive=self.settings.keepalive,
            timeout=self.settings.connect_timeout,
            # Small messages, one answer at a time: Nagle's delay would add tens of ms to every call.
            socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)],
            logger=_PAHO_LOG,
        )

    def _set_up(self, up: bool) -> None:
        if up == self.up:
            return
        self.up = up
        now = time.monotonic()
        if up:
            if self._lost_at is not None:
                self.outages.append(now - self._lost_at)
            self._lost_at = None
        else:
            self._lost_at = now
        with contextlib.suppress(Exception):
            self._on_state(up)

    async def _run(self, attempts: int | None) -> None:
        delays = backoff_delays(base=self.settings.retry_base, cap=self.settings.retry_cap)
        failures = 0
        while not self._stop.is_set():
            error: BaseException | None = None
            try:
                await self._connection()
                delays = backoff_delays(base=self.settings.retry_base, cap=self.settings.retry_cap)
                failures = 0
            except Exception as exc:  # whatever broke the connection, we reconnect (unless it is permanent)
                error = exc
            finally:
                self._client = None
                self._set_up(False)
                while not self._queue.empty():
                    self._queue.get_nowait()
            if self._stop.is_set():
                break
            if error is not None:
                failures += 1
                first = self._first is not None and not self._first.done()
                if _is_permanent(error):
                    log.error("mqtt.refused", link=self.what, broker=self.settings.url, error=str(error))
                    if first:
                        assert self._first is not None
                        self._first.set_exception(MqttRefused(f"{self.settings.url}: {error}"))
                    return
                if first and attempts is not None and failures >= attempts:
                    assert self._first is not None
                    self._first.set_exception(errors.ConnectFailed(
                        f"could not connect to {self.settings.url} after {failures} attempts: {error}"))
                    return
            delay = next(delays)
            log.info("mqtt.reconnect", link=self.what, broker=self.settings.url, delay=round(delay, 3),
                     error=str(error) if error else "connection lost")
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._stop.wait()
        if self._first is not None and not self._first.done():
            self._first.set_exception(errors.ConnectFailed(f"{self.what}: stopped before connecting"))

    async def _connection(self) -> None:
        client = self._new_client()
        async with client:
            if self._stop.is_set():
                return
            topics = [(topic, 1) for topic in self.subscriptions]
            if self.echo_topic is not None:
                # QoS 0 on the way back, so that we send nothing in reply to the echo, just as nothing
                # answers the broker's receipt of a call. The broker's next small write (here its receipt
                # of the probe, in a call the host's answer) then waits for our delayed ACK when Nagle's
                # algorithm is on at the broker, so the probe suffers exactly what a call suffers.
                topics.append((self.echo_topic, 0))
            await client.subscribe(topics)
            self._client = client
            self.connections += 1
            self._set_up(True)
            if self._first is not None and not self._first.done():
                self._first.set_result(None)
            else:
                log.info("mqtt.reconnected", link=self.what, outage=round(self.outages[-1], 3)
                         if self.outages else None)
            self._on_connected()
            sender = asyncio.create_task(self._send(client))
            receiver = asyncio.create_task(self._receive(client))
            stop = asyncio.create_task(self._stop.wait())
            try:
                await asyncio.wait({sender, receiver, stop}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sender, receiver, stop):
                    task.cancel()
                await asyncio.gather(sender, receiver, stop, return_exceptions=True)
            for task in (sender, receiver):
                if not task.cancelled() and task.exception() is not None:
                    raise aiomqtt.MqttError(f"connection lost: {task.exception()}")

    async def _send(self, client: aiomqtt.Client) -> None:
        while True:
            item = await self._queue.get()
            await client.publish(item.topic, item.payload, qos=1, retain=item.retain,
                                 properties=item.properties)

    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            if self.echo_topic is not None and str(message.topic) == self.echo_topic:
                self._on_echo(message)
                continue
            try:
                self._on_message(message)
            except Exception:  # one bad message must not take the link down
                log.exception("mqtt.message_failed", link=self.what, topic=str(message.topic))

    def _on_echo(self, message: aiomqtt.Message) -> None:
        payload = message.payload if isinstance(message.payload, bytes) else b""
        waiting = self._echoes.pop(payload, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(time.monotonic())

    def tcp_nodelay(self) -> bool | None:
        """Whether our socket to the broker sends small messages at once (None: not connected, or no TCP
        socket to ask)."""
        paho = getattr(self._client, "_client", None)  # aiomqtt's paho client; its socket() is public
        sock = paho.socket() if paho is not None else None
        if not isinstance(sock, socket.socket):
            return None
        return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    async def measure_round_trip(self, probes: int = 5, timeout: float = 2.0) -> RoundTrip | None:
        """Publish ``probes`` messages (QoS 1) to the echo topic one after another and time, for each, the
        broker's handing it back and its receipt (PUBACK); the medians, or None if the link is down or a
        probe did not come back within ``timeout`` (a broker whose access rules forbid the topic, say)."""
        client = self._client
        if self.echo_topic is None or client is None or not self.up:
            return None
        echoes: list[float] = []
        receipts: list[float] = []
        loop = asyncio.get_running_loop()
        try:
            for _ in range(probes):
                payload = uuid.uuid4().hex.encode()
                echoed = self._echoes[payload] = loop.create_future()
                async with asyncio.timeout(timeout):
                    sent = time.monotonic()
                    await client.publish(self.echo_topic, payload, qos=1)
                    receipts.append(time.monotonic() - sent)
                    echoes.append(await echoed - sent)
        except (TimeoutError, aiomqtt.MqttError):
            return None
        finally:
            self._echoes.clear()
        return RoundTrip(echo=statistics.median(echoes), receipt=statistics.median(receipts))


# --- both ends of a stream -----------------------------------------------------------------------------


class _StreamEnd:
    """What the bot's channel and the host's per-bot channels share: the reliable stream, the inbox the
    endpoint reads, receipts, resending, and the clock of outages."""

    def __init__(self, settings: MqttSettings, *, stream: str, out_topic: str) -> None:
        self.settings = settings
        self.stream = stream  # ours
        self.peer_stream: str | None = None
        self.out_topic = out_topic
        self.close_reason: str | None = None
        self.stale = 0  # messages for another stream (an earlier process, an earlier host) dropped
        self.reliable = ReliableStream()
        self.down = DownClock()
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._ended = False  # the end of stream is in the inbox
        self._closed = False  # closed on our side
        self._peer_closed = False
        self._ack_timer: asyncio.TimerHandle | None = None
        self._all_acked = asyncio.Event()
        self._all_acked.set()

    # the Channel protocol

    async def receive(self) -> bytes:
        data = await self._inbox.get()
        if not data:
            self._inbox.put_nowait(b"")  # every later receive sees the end too
        return data

    async def send(self, data: bytes) -> None:
        if self._ended or self._closed:
            raise ConnectionResetError(self.close_reason or "channel closed")
        self._publish(self.reliable.send(data.removesuffix(b"\n")))

    def link_down_seconds(self) -> float:
        """Seconds the peer has been out of reach since the channel opened (outages included)."""
        return self.down.total()

    def current_outage(self) -> float:
        """Seconds the outage going on now has lasted (0 while the peer is in reach)."""
        return self.down.current()

    @property
    def link_up(self) -> bool:
        return not self.down.down

    def stats(self) -> dict[str, Any]:
        r = self.reliable
        return {"sent": r.sent, "received": r.delivered, "duplicates": r.duplicates,
                "retransmissions": r.retransmissions, "stale": self.stale,
                "down_seconds": round(self.down.total(), 3)}

    # internals

    def _link(self) -> _Link:
        raise NotImplementedError

    def _publish(self, frame: Frame, *, again: bool = False) -> None:
        if again:
            self.reliable.retransmissions += 1
        frame.sent_at = time.monotonic()
        self._cancel_ack()  # the frame carries the receipt
        self._all_acked.clear()
        props = _publish_properties(self.stream, self.peer_stream, frame.seq, self.reliable.received, frame.ctl)
        self._link().publish(_Outgoing(self.out_topic, frame.payload, props))

    def _republish_all(self) -> None:
        """Publish every unacknowledged frame again, and our receipt: the other side is back, and may have
        lost what the broker had not delivered yet."""
        for frame in self.reliable.unacked():
            self._publish(frame, again=True)
        self._send_ack()

    def _republish_overdue(self) -> None:
        limit = time.monotonic() - self.settings.retransmit_after
        overdue = [f for f in self.reliable.unacked() if f.sent_at < limit]
        for frame in overdue:
            self._publish(frame, again=True)

    def _schedule_ack(self) -> None:
        if self._ack_timer is None:
            self._ack_timer = asyncio.get_running_loop().call_later(ACK_DELAY, self._send_ack)

    def _cancel_ack(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None

    def _send_ack(self) -> None:
        self._ack_timer = None
        if self.reliable.received == 0:
            return
        props = _publish_properties(self.stream, self.peer_stream, None, self.reliable.received, CTL_ACK)
        self._link().publish(_Outgoing(self.out_topic, b"", props))

    def _on_envelope(self, envelope: Envelope) -> None:
        self.reliable.acknowledge(envelope.ack)
        if self.reliable.all_acked:
            self._all_acked.set()
        if envelope.seq is None:
            return
        ready = self.reliable.receive(Frame(envelope.seq, envelope.payload, envelope.ctl))
        self._schedule_ack()  # a duplicate too: the sender resends because it missed our receipt
        for frame in ready:
            if self._ended:
                break
            if frame.ctl == CTL_CLOSE:
                self._peer_closed = True
                self._end("the peer closed the stream")
            elif frame.ctl is None:
                self._inbox.put_nowait(frame.payload + b"\n")

    def _end(self, reason: str) -> None:
        if self._ended:
            return
        self._ended = True
        self.close_reason = self.close_reason or reason
        self._inbox.put_nowait(b"")

    async def _send_close(self) -> None:
        """An ordered end of stream, and a short wait for the receipts of everything sent."""
        if self._ended or self._peer_closed or self.peer_stream is None:
            return
        self._publish(self.reliable.send(b"", CTL_CLOSE))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.close_timeout):
                await self._all_acked.wait()


class MqttChannel(_StreamEnd):
    """The bot's end: its own broker connection (client id ``perspecto-<host-id>-bot-<bot-id>``), the
    host's presence followed, messages published to ``to-host`` and read from ``to-bot``."""

    def __init__(self, settings: MqttSettings, bot_id: str, *, name: str | None = None) -> None:
        check_id(bot_id, "bot id")
        topics = Topics(settings.host_id)
        super().__init__(settings, stream=uuid.uuid4().hex[:12], out_topic=topics.to_host(bot_id))
        self.bot_id = bot_id
        self.topics = topics
        self._presence_topic = topics.bot_presence(bot_id)
        self._in_topic = topics.to_bot(bot_id)
        self._name = name
        self._host_online = False
        self._host_found = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None
        self._round_trip_check: asyncio.Task[None] | None = None
        self.round_trip: RoundTrip | None = None  # measured once the channel is open
        self.on_link_change: Callable[[bool], None] | None = None
        self._link_obj = _Link(
            settings,
            client_id=bot_client_id(settings.host_id, bot_id),
            subscriptions=[self._in_topic, topics.host_presence],
            will=aiomqtt.Will(self._presence_topic, self._presence("offline", "lost"), qos=1, retain=True),
            on_connected=self._on_connected,
            on_message=self._on_message,
            on_state=lambda _up: self._update_down(),
            what=f"bot {bot_id}",
            echo_topic=topics.bot_echo(bot_id),
        )

    @classmethod
    async def open(
        cls,
        settings: MqttSettings,
        bot_id: str,
        *,
        name: str | None = None,
        connect_attempts: int | None = None,
        host_timeout: float | None = None,
    ) -> MqttChannel:
        """Connect to the broker and wait for the host to be there (its presence online); raises
        MqttRefused, ConnectFailed, or ConnectFailed when no host shows up within ``host_timeout``."""
        channel = cls(settings, bot_id, name=name)
        await channel._link_obj.start(connect_attempts)
        try:
            async with asyncio.timeout(host_timeout):
                await channel._host_found.wait()
        except TimeoutError:
            await channel._link_obj.stop()
            raise errors.ConnectFailed(
                f"no host {settings.host_id!r} on {settings.url} within {host_timeout:g} s") from None
        except BaseException:
            await channel._link_obj.stop()
            raise
        channel.down = DownClock(down=not channel._reachable())
        channel._watcher = asyncio.create_task(channel._watch())
        log.info("mqtt.channel_open", broker=settings.url, bot=bot_id, stream=channel.stream,
                 host_stream=channel.peer_stream)
        # Measured beside the session's start rather than before it: a slow or silent probe delays nothing.
        channel._round_trip_check = asyncio.create_task(channel._check_round_trip())
        return channel

    @property
    def peer(self) -> str:
        return f"{self.settings.url} (host stream {self.peer_stream})"

    @property
    def broker_outages(self) -> list[float]:
        return list(self._link_obj.outages)

    async def close(self) -> None:
        if self._closed:
            return
        await self._send_close()
        self._closed = True
        self._end("closed locally")
        if self._ack_timer is not None:  # a receipt still due (of the host's close, say): send it now
            self._cancel_ack()
            self._send_ack()
        if self._watcher is not None:
            self._watcher.cancel()
        if self._round_trip_check is not None:
            self._round_trip_check.cancel()
        await self._link_obj.stop([_Outgoing(self._presence_topic, self._presence("offline", "closed"),
                                             retain=True)])
        log.info("mqtt.channel_closed", bot=self.bot_id, reason=self.close_reason, **self.stats())

    async def _check_round_trip(self) -> None:
        """Measure the round trip through the broker once, and warn once if it is slow (docs/mqtt.md)."""
        measured = await self._link_obj.measure_round_trip()
        self.round_trip = measured
        self.report_round_trip(measured)

    def report_round_trip(self, measured: RoundTrip | None) -> None:
        if measured is None:
            log.info("mqtt.round_trip_unmeasured", bot=self.bot_id, echo_topic=self._link_obj.echo_topic,
                     why="no echo came back (a broker that forbids the topic, or the link went down)")
            return
        log.info("mqtt.round_trip", bot=self.bot_id, round_trip_ms=round(measured.seconds * 1000, 2),
                 echo_ms=round(measured.echo * 1000, 2), receipt_ms=round(measured.receipt * 1000, 2),
                 tcp_nodelay=self._link_obj.tcp_nodelay())
        slow = slow_round_trip(measured, self.settings.slow_round_trip)
        if slow is not None:
            log.warning("mqtt.slow_round_trip", bot=self.bot_id, broker=self.settings.url, **slow)

    # internals

    def _link(self) -> _Link:
        return self._link_obj

    def _presence(self, state: str, reason: str | None = None, *, probe: bool = False) -> bytes:
        return presence_payload(state, self.stream, "bot", name=self._name, reason=reason, probe=probe)

    def _reachable(self) -> bool:
        return self._link_obj.up and self._host_online

    def _update_down(self) -> None:
        if self.down.set(not self._reachable()) and self.on_link_change is not None:
            self.on_link_change(self.link_up)

    def _on_connected(self) -> None:
        # Until the host answers the probe, it counts as out of reach (and its clocks stand still); its
        # answer resends whatever it has not acknowledged.
        self._link_obj.publish(_Outgoing(self._presence_topic, self._presence("online", probe=True), retain=True))
        if self.peer_stream is not None:
            self._host_online = False
            self._update_down()

    def _on_message(self, message: aiomqtt.Message) -> None:
        topic = str(message.topic)
        if topic == self.topics.host_presence:
            presence = read_presence(message)
            if presence is not None:
                self._on_host_presence(presence)
        elif topic == self._in_topic:
            envelope = read_envelope(message)
            if envelope is None or envelope.stream != self.peer_stream or envelope.to != self.stream:
                self.stale += 1  # for an earlier process of this bot, or from an earlier host
                return
            if envelope.ctl == CTL_RESET:
                self._end("the host no longer knows this stream")
                return
            self._on_envelope(envelope)

    def _on_host_presence(self, presence: Presence) -> None:
        if self.peer_stream is None:
            if presence.online:
                self.peer_stream = presence.stream
                self._host_online = True
                self._host_found.set()
            return
        if presence.stream != self.peer_stream:
            if presence.online:
                self._end("the host restarted")
            return
        if presence.online:
            if not presence.live:
                return  # a retained copy says nothing about now
            if presence.probe:  # the host has just connected: tell it we are here
                self._link_obj.publish(_Outgoing(self._presence_topic, self._presence("online"), retain=True))
            if not self._host_online:
                self._host_online = True
                self._republish_all()  # the host may have lost what it had not acknowledged
        elif presence.reason == "closed":
            self._end("the host shut down")
        else:
            self._host_online = False
        self._update_down()

    async def _watch(self) -> None:
        while not self._ended:
            await asyncio.sleep(WATCH_INTERVAL)
            if self.down.current() > self.settings.link_timeout:
                self._end(f"the host was out of reach for {self.settings.link_timeout:g} s")
            elif self.link_up:
                self._republish_overdue()


class HostMqttChannel(_StreamEnd):
    """The host's end of one bot stream, on the listener's shared connection."""

    def __init__(self, listener: MqttHostListener, bot_id: str, bot_stream: str) -> None:
        super().__init__(listener.settings, stream=listener.stream, out_topic=listener.topics.to_bot(bot_id))
        self.listener = listener
        self.bot_id = bot_id
        self.peer_stream = bot_stream
        self._bot_online = True
        self.down = DownClock(down=not listener.link_up)

    @property
    def peer(self) -> str:
        return f"mqtt:{self.bot_id}/{self.peer_stream}"

    async def close(self) -> None:
        """End the stream; the listener keeps resending the end until the bot acknowledges it."""
        if self._closed:
            return
        if not self._ended and not self._peer_closed:
            self._publish(self.reliable.send(b"", CTL_CLOSE))
        self._closed = True
        self._end("closed locally")

    def _link(self) -> _Link:
        return self.listener.link

    def _update_down(self) -> None:
        self.down.set(not (self.listener.link_up and self._bot_online))

    def _on_bot_presence(self, presence: Presence) -> None:
        if presence.online:
            if not presence.live:
                return  # a retained copy says nothing about now
            if not self._bot_online:
                self._bot_online = True
                self._republish_all()
        else:
            self._bot_online = False
            if presence.reason == "closed":
                self._end("the bot closed its connection")
        self._update_down()

    @property
    def finished(self) -> bool:
        """Closed or ended, and nothing left to deliver: the listener may forget it."""
        return self._ended and (self.reliable.all_acked or not self._bot_online)


class MqttHostListener:
    """The host's end: one broker connection (client id ``perspecto-<host-id>-host``) subscribed to every
    bot's ``to-host`` and ``presence``. A message from a bot stream it does not know yet opens a
    ``HostMqttChannel`` and hands it to ``on_channel`` (as ``tcp.serve`` does with a connection); the
    channel is closed when ``on_channel`` returns. A new stream of the same bot (it restarted) ends the old
    one's channel."""

    def __init__(
        self, settings: MqttSettings, on_channel: Callable[[HostMqttChannel], Awaitable[None]]
    ) -> None:
        self.settings = settings
        self.on_channel = on_channel
        self.topics = Topics(settings.host_id)
        self.stream = uuid.uuid4().hex[:12]
        self.stale = 0
        self._channels: dict[str, HostMqttChannel] = {}  # the current stream of each bot
        self._presence: dict[str, Presence] = {}
        self._ended_streams: dict[tuple[str, str], None] = {}  # insertion order: the oldest go first
        self._tasks: set[asyncio.Task[None]] = set()
        self._watcher: asyncio.Task[None] | None = None
        base = self.topics.base
        self.link = _Link(
            settings,
            client_id=host_client_id(settings.host_id),
            subscriptions=[f"{base}/bot/+/to-host", f"{base}/bot/+/presence"],
            will=aiomqtt.Will(self.topics.host_presence, self._presence_payload("offline", "lost"), qos=1,
                              retain=True),
            on_connected=self._on_connected,
            on_message=self._on_message,
            on_state=lambda _up: self._update_down(),
            what=f"host {settings.host_id}",
        )

    @property
    def link_up(self) -> bool:
        return self.link.up

    @property
    def address(self) -> str:
        return self.settings.url

    def channels(self) -> list[HostMqttChannel]:
        return list(self._channels.values())

    async def start(self, connect_attempts: int | None = 20) -> None:
        await self.link.start(connect_attempts)
        self._watcher = asyncio.create_task(self._watch())
        log.info("mqtt.host_listening", broker=self.settings.url, stream=self.stream)

    async def close(self) -> None:
        for channel in self._channels.values():
            if not channel._ended:
                await channel.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.close_timeout):
                while not all(c.reliable.all_acked or not c._bot_online for c in self._channels.values()):
                    await asyncio.sleep(0.05)
        if self._watcher is not None:
            self._watcher.cancel()
        for task in list(self._tasks):
            task.cancel()
        await self.link.stop([_Outgoing(self.topics.host_presence, self._presence_payload("offline", "closed"),
                                        retain=True)])

    # internals

    def _presence_payload(self, state: str, reason: str | None = None, *, probe: bool = False) -> bytes:
        return presence_payload(state, self.stream, "host", reason=reason, probe=probe)

    def _update_down(self) -> None:
        for channel in self._channels.values():
            channel._update_down()

    def _on_connected(self) -> None:
        # Every bot counts as out of reach until it answers the probe (a broker that died sent no last
        # wills, so what we knew may be stale); each answer resends what that bot has not acknowledged.
        self.link.publish(_Outgoing(self.topics.host_presence, self._presence_payload("online", probe=True),
                                    retain=True))
        for channel in self._channels.values():
            channel._bot_online = False
            channel._update_down()

    def _on_message(self, message: aiomqtt.Message) -> None:
        found = self.topics.bot_of(str(message.topic))
        if found is None:
            return
        bot_id, kind = found
        if kind == "presence":
            presence = read_presence(message)
            if presence is not None:
                self._on_bot_presence(bot_id, presence)
        elif kind == "to-host":
            envelope = read_envelope(message)
            if envelope is None or envelope.to != self.stream:
                self.stale += 1  # for an earlier host process, or not ours
                return
            self._on_bot_envelope(bot_id, envelope)

    def _on_bot_presence(self, bot_id: str, presence: Presence) -> None:
        self._presence[bot_id] = presence
        if presence.online and presence.live and presence.probe:  # a bot has just connected: we are here
            self.link.publish(_Outgoing(self.topics.host_presence, self._presence_payload("online"), retain=True))
        channel = self._channels.get(bot_id)
        if channel is None:
            return
        if presence.stream != channel.peer_stream:
            if presence.online:
                self._retire(channel, "the bot came back as a new process")
            return
        channel._on_bot_presence(presence)

    def _on_bot_envelope(self, bot_id: str, envelope: Envelope) -> None:
        channel = self._channels.get(bot_id)
        if channel is not None and channel.peer_stream == envelope.stream:
            channel._on_envelope(envelope)
            return
        presence = self._presence.get(bot_id)
        late = (bot_id, envelope.stream) in self._ended_streams or (
            presence is not None and presence.online and presence.stream != envelope.stream)
        if late or envelope.seq is None or envelope.ctl == CTL_CLOSE:
            # A stream that has ended here: tell the bot, or it would wait on a session nobody serves.
            self.stale += 1
            props = _publish_properties(self.stream, envelope.stream, None, 0, CTL_RESET)
            self.link.publish(_Outgoing(self.topics.to_bot(bot_id), b"", props))
            return
        if channel is not None:
            self._retire(channel, "the bot came back as a new process")
        channel = HostMqttChannel(self, bot_id, envelope.stream)
        self._channels[bot_id] = channel
        channel._on_envelope(envelope)
        task = asyncio.create_task(self._serve(channel))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _retire(self, channel: HostMqttChannel, reason: str) -> None:
        channel._end(reason)
        assert channel.peer_stream is not None
        self._ended_streams[(channel.bot_id, channel.peer_stream)] = None
        if len(self._ended_streams) > MAX_ENDED_STREAMS:
            del self._ended_streams[next(iter(self._ended_streams))]
        if self._channels.get(channel.bot_id) is channel:
            del self._channels[channel.bot_id]

    async def _serve(self, channel: HostMqttChannel) -> None:
        log.info("mqtt.bot_stream", bot=channel.bot_id, stream=channel.peer_stream)
        try:
            await self.on_channel(channel)
        except Exception:
            log.exception("mqtt.channel_failed", peer=channel.peer)
        finally:
            await channel.close()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL)
            for channel in list(self._channels.values()):
                if not channel._ended and channel.down.current() > self.settings.link_timeout:
                    channel._end(f"the bot was out of reach for {self.settings.link_timeout:g} s")
                if channel._closed and channel.finished:
                    self._retire(channel, "closed")
                elif channel.link_up:
                    channel._republish_overdue()


# --- calls whose clock stops during outages ---------------------------------------------------------------


async def call_pausing_outages(
    endpoint: Endpoint, method: str, params: BaseModel, timeout: float
) -> BaseModel:
    """``endpoint.call`` with a deadline that stands still while the channel reports its peer out of reach
    (``link_down_seconds``, the MQTT channels): a broker outage is nobody's move time. Channels without
    that (TCP) get the plain call."""
    down = getattr(endpoint.channel, "link_down_seconds", None)
    if down is None:
        return await endpoint.call(method, params, timeout=timeout)
    call = asyncio.ensure_future(endpoint.call(method, params, timeout=None))
    started, paused_before = time.monotonic(), down()
    try:
        while True:
            remaining = timeout - (time.monotonic() - started - (down() - paused_before))
            if remaining <= 0:
                raise errors.CallTimeout(method, timeout)
            # Wake up at least every second: an outage that began meanwhile moves the deadline.
            done, _ = await asyncio.wait({call}, timeout=min(remaining, 1.0))
            if done:
                return call.result()
    finally:
        if not call.done():
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, errors.ProtocolError):
                await call


def outage_seconds(channel: object) -> float:
    """Seconds the channel's peer has been out of reach so far (0 for channels that cannot tell)."""
    down = getattr(channel, "link_down_seconds", None)
    return float(down()) if down is not None else 0.0


def current_outage(channel: object) -> float:
    """Seconds the channel's peer has been out of reach without a break until now (0 if it cannot tell)."""
    outage = getattr(channel, "current_outage", None)
    return float(outage()) if outage is not None else 0.0

