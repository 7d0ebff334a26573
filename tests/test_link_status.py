"""The typed link status (protocol/link.py): what generic code (the bot's daemon, the host) may learn about
a channel's peer without importing MQTT, and the call whose deadline stands still during an outage."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from engine_ext.rules.rulesets import Square
from protocol import errors
from protocol.codec import bot_codec, host_codec
from protocol.endpoint import Endpoint, MemoryChannel, memory_pipe
from protocol.link import (
    LinkStatus,
    call_pausing_outages,
    close_reason,
    current_outage,
    link_status,
    link_up,
    outage_seconds,
)
from protocol.messages import GetAIMoveParams, MoveModel
from protocol.mqtt import HostMqttChannel, MqttChannel, MqttHostListener, MqttSettings, Presence
from protocol.tcp import open_channel

REPO = Path(__file__).resolve().parent.parent


class SlowMover:
    """A bot-side handler whose getAIMove takes ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        await asyncio.sleep(self.seconds)
        return MoveModel.of(Square.parse("A4"), Square.parse("A5"))

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        return None


class UnreachableChannel(MemoryChannel):
    """An in-memory channel that reports its peer out of reach since it opened: a broker outage that lasts
    the whole call (the answer still arrives, as the broker's queue would hand it over afterwards)."""

    def __init__(self, inner: MemoryChannel) -> None:
        super().__init__(inner._inbox, inner._outbox, inner.peer)
        self.close_reason: str | None = None
        self.on_link_change = None
        self._down_since = time.monotonic()

    @property
    def link_up(self) -> bool:
        return False

    def link_down_seconds(self) -> float:
        return time.monotonic() - self._down_since

    def current_outage(self) -> float:
        return self.link_down_seconds()


async def test_the_mqtt_channels_have_a_link_status_and_the_others_none() -> None:
    settings = MqttSettings()
    bot_end = MqttChannel(settings, "bot-1")  # not opened: no broker needed to ask what it is
    listener = MqttHostListener(settings, lambda _channel: asyncio.sleep(0))
    host_end = HostMqttChannel(listener, "bot-1", "stream-1")
    assert isinstance(bot_end, LinkStatus) and isinstance(host_end, LinkStatus)
    assert link_status(bot_end) is bot_end and link_up(bot_end) and outage_seconds(bot_end) == 0.0
    # The listener has no broker connection, so the host's end of the stream starts out of reach.
    assert not link_up(host_end) and current_outage(host_end) >= 0.0
    host_end._end("the bot closed its connection")
    assert close_reason(host_end) == "the bot closed its connection"

    memory, _ = memory_pipe()
    server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0)
    try:
        tcp = await open_channel("127.0.0.1", server.sockets[0].getsockname()[1])
        for channel in (memory, tcp):
            assert link_status(channel) is None
            assert link_up(channel) and outage_seconds(channel) == 0.0 and current_outage(channel) == 0.0
            assert close_reason(channel) is None
        await tcp.close()
    finally:
        server.close()


async def test_the_host_end_reports_its_bot_going_out_of_reach_and_back() -> None:
    listener = MqttHostListener(MqttSettings(), lambda _channel: asyncio.sleep(0))
    channel = HostMqttChannel(listener, "bot-1", "stream-1")
    listener.link.up = True  # as if connected: the channel follows the bot's presence alone
    channel._update_down()
    changes: list[bool] = []
    status = link_status(channel)
    assert status is not None
    status.on_link_change = changes.append
    channel._on_bot_presence(Presence("offline", "stream-1", reason="lost"))
    assert changes == [False] and not link_up(channel)
    channel._on_bot_presence(Presence("online", "stream-1", live=False))  # a retained copy says nothing
    assert changes == [False]
    channel._on_bot_presence(Presence("online", "stream-1"))
    assert changes == [False, True] and link_up(channel)


async def test_a_calls_deadline_stands_still_while_the_peer_is_out_of_reach() -> None:
    """The answer takes longer than the call's timeout; the outage covers all of it, so the call still
    succeeds. The same call over a channel without a link status times out."""
    for unreachable in (True, False):
        host_side, bot_side = memory_pipe()
        channel: MemoryChannel = UnreachableChannel(host_side) if unreachable else host_side
        host = Endpoint(channel, host_codec())
        bot = Endpoint(bot_side, bot_codec(), SlowMover(0.4))
        tasks = [asyncio.create_task(host.run()), asyncio.create_task(bot.run())]
        try:
            if unreachable:
                assert await call_pausing_outages(host, "getAIMove", GetAIMoveParams(ply=0), 0.1) is not None
            else:
                with pytest.raises(errors.CallTimeout):
                    await call_pausing_outages(host, "getAIMove", GetAIMoveParams(ply=0), 0.1)
        finally:
            await host.close("test")
            await bot.close("test")
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


# What only an MQTT channel has: generic code asks for a LinkStatus instead of probing for these names.
_LINK_NAMES = "link_up|on_link_change|close_reason|link_down_seconds|current_outage"
_PROBE = re.compile(rf"\b(?:getattr|hasattr|setattr)\(\s*[\w.]*channel[\w.]*\s*,\s*[\"'](?:{_LINK_NAMES})[\"']")
_MQTT_IMPORT = re.compile(r"^\s*(?:import|from)\s+(?:aiomqtt|paho)\b", re.MULTILINE)


def _generic_sources() -> list[Path]:
    mqtt = REPO / "protocol" / "mqtt"
    sources = [p for folder in ("bot", "protocol", "setups", "engine_ext") for p in (REPO / folder).rglob("*.py")]
    return [p for p in sources if mqtt not in p.parents]


def test_generic_code_reaches_the_link_through_its_typed_status_and_never_imports_mqtt_libraries() -> None:
    sources = _generic_sources()
    names = {str(p.relative_to(REPO)) for p in sources}
    assert {"bot/daemon/service.py", "bot/host/referee.py"} <= names  # the daemon and the host are looked at
    probing = [f"{p.relative_to(REPO)}: {m.group(0)}" for p in sources for m in _PROBE.finditer(p.read_text())]
    assert probing == []
    importing = [str(p.relative_to(REPO)) for p in sources if _MQTT_IMPORT.search(p.read_text())]
    assert importing == []
