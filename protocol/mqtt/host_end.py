"""The host's end of the MQTT transport: ``MqttHostListener``, one broker connection for every bot, and a
``HostMqttChannel`` per bot stream, handed to the host like an accepted TCP connection."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Awaitable, Callable

import aiomqtt
import structlog

from protocol.mqtt.broker_link import BrokerLink, Outgoing
from protocol.mqtt.settings import MqttSettings
from protocol.mqtt.stream import CTL_CLOSE, CTL_RESET, DownClock
from protocol.mqtt.stream_end import WATCH_INTERVAL, StreamEnd
from protocol.mqtt.topics import (
    Envelope,
    Presence,
    Topics,
    host_client_id,
    presence_payload,
    publish_properties,
    read_envelope,
    read_presence,
)

log = structlog.get_logger()

MAX_ENDED_STREAMS = 1000  # bot streams remembered as ended, so that their late messages get a reset


class HostMqttChannel(StreamEnd):
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

    def _link(self) -> BrokerLink:
        return self.listener.link

    def _update_down(self) -> None:
        self._set_down(not (self.listener.link_up and self._bot_online))

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
        self.link = BrokerLink(
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
        await self.link.stop([Outgoing(self.topics.host_presence, self._presence_payload("offline", "closed"),
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
        self.link.publish(Outgoing(self.topics.host_presence, self._presence_payload("online", probe=True),
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
            self.link.publish(Outgoing(self.topics.host_presence, self._presence_payload("online"), retain=True))
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
            props = publish_properties(self.stream, envelope.stream, None, 0, CTL_RESET)
            self.link.publish(Outgoing(self.topics.to_bot(bot_id), b"", props))
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
