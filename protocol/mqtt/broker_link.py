"""One broker connection kept up across outages (``BrokerLink``: the only user of aiomqtt's client), and the
round trip through the broker it measures at connect (docs/mqtt.md, Broker configuration)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import statistics
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiomqtt
import structlog
from aiomqtt.exceptions import MqttCodeError, MqttConnectError
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from protocol import errors
from protocol.mqtt.settings import MqttSettings
from protocol.tcp import backoff_delays

log = structlog.get_logger()

# CONNACK reason codes that no retry will change (MQTT 3.1.1: 1, 2, 4, 5; MQTT 5: 0x81.. below):
# malformed, protocol error, bad version, bad client id, bad credentials, not authorised, banned, bad auth.
_PERMANENT_CONNACK = frozenset({1, 2, 4, 5, 129, 130, 132, 133, 134, 135, 138, 140})


# paho reports every dropped socket on its own logger; our structured log says it once, with the reconnect.
_PAHO_LOG = logging.getLogger("protocol.mqtt.paho")
_PAHO_LOG.setLevel(logging.CRITICAL)
_PAHO_LOG.propagate = False


class MqttRefused(errors.ConnectFailed):
    """The broker turned us away for a reason retrying cannot fix: credentials, authorisation, TLS."""


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
class Outgoing:
    """A message waiting in the link's queue to be published (QoS 1)."""

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


class BrokerLink:
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
        self._queue: asyncio.Queue[Outgoing] = asyncio.Queue()
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

    def publish(self, item: Outgoing) -> None:
        if self.up:
            self._queue.put_nowait(item)

    async def stop(self, final: list[Outgoing] | None = None) -> None:
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
