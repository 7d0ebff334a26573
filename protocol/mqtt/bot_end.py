"""The bot's end of the MQTT transport: ``MqttChannel``, its own broker connection to one host."""

from __future__ import annotations

import asyncio
import uuid

import aiomqtt
import structlog

from protocol import errors
from protocol.mqtt.broker_link import BrokerLink, Outgoing, RoundTrip, slow_round_trip
from protocol.mqtt.settings import MqttSettings, check_id
from protocol.mqtt.stream import CTL_RESET, DownClock
from protocol.mqtt.stream_end import WATCH_INTERVAL, StreamEnd
from protocol.mqtt.topics import Presence, Topics, bot_client_id, presence_payload, read_envelope, read_presence

log = structlog.get_logger()


class MqttChannel(StreamEnd):
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
        self._link_obj = BrokerLink(
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
        await self._link_obj.stop([Outgoing(self._presence_topic, self._presence("offline", "closed"),
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

    def _link(self) -> BrokerLink:
        return self._link_obj

    def _presence(self, state: str, reason: str | None = None, *, probe: bool = False) -> bytes:
        return presence_payload(state, self.stream, "bot", name=self._name, reason=reason, probe=probe)

    def _reachable(self) -> bool:
        return self._link_obj.up and self._host_online

    def _update_down(self) -> None:
        self._set_down(not self._reachable())

    def _on_connected(self) -> None:
        # Until the host answers the probe, it counts as out of reach (and its clocks stand still); its
        # answer resends whatever it has not acknowledged.
        self._link_obj.publish(Outgoing(self._presence_topic, self._presence("online", probe=True), retain=True))
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
                self._link_obj.publish(Outgoing(self._presence_topic, self._presence("online"), retain=True))
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
