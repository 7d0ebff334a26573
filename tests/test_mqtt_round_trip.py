"""The bot's round trip through the broker, measured at connect: a broker without TCP_NODELAY (mosquitto's
default) holds each small answer back for some 40 ms, which made a game 40 times slower; the bot says so
once, naming the fix. Our own socket sends small messages at once."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog

from protocol.mqtt import (
    NAGLE_FIX,
    HostMqttChannel,
    MqttChannel,
    MqttHostListener,
    MqttSettings,
    RoundTrip,
    slow_round_trip,
)
from tests.mqtt_broker import Broker

HOST_ID = "rtt"


class StockBroker(Broker):
    """mosquitto as installed: without ``set_tcp_nodelay true``."""

    def _config(self) -> str:
        config = super()._config()
        assert "set_tcp_nodelay true\n" in config
        return config.replace("set_tcp_nodelay true\n", "")


@asynccontextmanager
async def bot_channel(broker: Broker) -> AsyncIterator[MqttChannel]:
    """A host listening on the broker and a bot channel open to it."""
    settings = MqttSettings.from_url(f"{broker.url}/{HOST_ID}")

    async def serve(channel: HostMqttChannel) -> None:
        await channel.receive()  # until the bot closes its stream

    listener = MqttHostListener(settings, serve)
    await listener.start()
    try:
        channel = await MqttChannel.open(settings, "bot-rtt", name="bot-rtt", connect_attempts=20, host_timeout=10)
        try:
            yield channel
        finally:
            await channel.close()
    finally:
        await listener.close()


async def connect_and_measure(broker: Broker) -> tuple[MqttChannel, list[MutableMapping[str, Any]]]:
    with structlog.testing.capture_logs() as logs:
        async with bot_channel(broker) as channel:
            assert channel._round_trip_check is not None
            await channel._round_trip_check
            assert channel._link_obj.tcp_nodelay() is True  # our side never waits to fill a segment
    return channel, logs


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


@pytest.mark.mqtt
async def test_a_broker_without_tcp_nodelay_is_named_once_with_the_fix(tmp_path: Path) -> None:
    broker = StockBroker(tmp_path / "broker")
    broker.start()
    try:
        channel, logs = await connect_and_measure(broker)
    finally:
        broker.stop(signal.SIGKILL)
    measured = channel.round_trip
    assert measured is not None and measured.lag > 0.02, measured  # some 40 ms of Nagle against ~1 ms
    [warning] = events(logs, "mqtt.slow_round_trip")
    assert warning["fix"] == NAGLE_FIX and "set_tcp_nodelay true" in warning["fix"]
    assert warning["log_level"] == "warning" and "Nagle" in warning["cause"]
    [info] = events(logs, "mqtt.round_trip")
    assert info["tcp_nodelay"] is True


@pytest.mark.mqtt
async def test_a_broker_with_tcp_nodelay_is_quiet(tmp_path: Path) -> None:
    broker = Broker(tmp_path / "broker")
    broker.start()
    try:
        channel, logs = await connect_and_measure(broker)
    finally:
        broker.stop(signal.SIGKILL)
    assert channel.round_trip is not None
    assert not events(logs, "mqtt.slow_round_trip"), channel.round_trip
    [info] = events(logs, "mqtt.round_trip")
    assert info["round_trip_ms"] == pytest.approx(channel.round_trip.seconds * 1000, abs=0.01)


# --- the verdict on a measured round trip (no broker) ---------------------------------------------------------


@pytest.mark.parametrize("echo, receipt, cause", [
    (0.0004, 0.0005, None),  # a broker on the same machine, TCP_NODELAY on
    (0.0004, 0.044, "Nagle"),  # the same broker without it: the receipt waits for our delayed ACK
    (0.044, 0.0004, "Nagle"),  # whichever of the two it holds back
    (0.060, 0.061, "network"),  # a distant broker: both answers late together
    (0.015, 0.019, None),  # under the threshold
])
def test_the_verdict_names_the_likely_cause(echo: float, receipt: float, cause: str | None) -> None:
    verdict = slow_round_trip(RoundTrip(echo=echo, receipt=receipt), threshold=0.02)
    if cause is None:
        assert verdict is None
    else:
        assert verdict is not None and cause in verdict["cause"]
        assert verdict["round_trip_ms"] == round(max(echo, receipt) * 1000, 1)
        assert (verdict["fix"] == NAGLE_FIX) == (cause == "Nagle")
    assert slow_round_trip(RoundTrip(echo=echo, receipt=receipt), threshold=0) is None  # 0: no warning


def test_a_measured_value_is_reported_once() -> None:
    settings = MqttSettings(host_id=HOST_ID, slow_round_trip=0.01)
    channel = MqttChannel(settings, "bot-x")
    with structlog.testing.capture_logs() as logs:
        channel.report_round_trip(RoundTrip(echo=0.002, receipt=0.046))
    assert [e["event"] for e in logs] == ["mqtt.round_trip", "mqtt.slow_round_trip"]
    assert logs[1]["round_trip_ms"] == 46.0 and logs[1]["threshold_ms"] == 10.0
    with structlog.testing.capture_logs() as logs:
        channel.report_round_trip(None)  # no echo came back: said, but no warning
    assert [e["event"] for e in logs] == ["mqtt.round_trip_unmeasured"]


def test_the_threshold_can_be_set_in_the_broker_url() -> None:
    assert MqttSettings.from_url("mqtt://broker:1883/t1").slow_round_trip == 0.02
    assert MqttSettings.from_url("mqtt://broker:1883/t1?slow_round_trip=0.1").slow_round_trip == 0.1
    assert MqttSettings.from_url("mqtt://broker:1883/t1?slow_round_trip=0").slow_round_trip == 0
    with pytest.raises(ValueError, match="slow_round_trip"):
        MqttSettings.from_url("mqtt://broker:1883/t1?slow_round_trip=-1")
