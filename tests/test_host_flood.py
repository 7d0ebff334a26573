"""Strangers that reconnect after every drop (issue 46, item 7; docs/host.md, limits): what one address may cost
the host. The policy (a token bucket of unproven connections per address) is checked on a fake clock; the rest
on a real host over a real TCP socket."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from bot.host.referee import Host, HostSettings
from bot.host.strangers import StrangerLimit, address_of
from tests.helpers import FakeClock
from tests.mqtt_broker import BotProcesses
from tests.test_host_hostile import RawPeer
from tests.test_host_signals import HostProcess, until, until_state

REPO = Path(__file__).resolve().parents[1]


def test_the_bucket_refuses_past_its_burst_refills_at_its_rate_and_takes_nothing_from_welcomed_bots() -> None:
    clock = FakeClock()
    limit = StrangerLimit(rate=2.0, burst=3, clock=clock)
    for _ in range(20):  # a bot that reconnects and is welcomed every time
        assert limit.admit("10.0.0.1")
        limit.proved("10.0.0.1")
    assert [limit.admit("10.0.0.1") for _ in range(4)] == [True, True, True, False]
    assert limit.admit("10.0.0.2")  # another address has its own bucket
    clock.advance(0.4)
    assert not limit.admit("10.0.0.1")  # 0.8 of a token
    clock.advance(0.1)
    assert limit.admit("10.0.0.1") and not limit.admit("10.0.0.1")
    clock.advance(60)
    limit.forget_full()
    assert limit.addresses == 0  # refilled buckets are forgotten: memory only for who cost something lately
    assert address_of("::1:7575") == "::1" and address_of("1.2.3.4:5") == "1.2.3.4"


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[tuple[Host, FakeClock]]:
    clock = FakeClock()
    instance = Host(HostSettings(tokens=frozenset({"secret"}), records_dir=tmp_path / "records", stranger_rate=1.0,
                                 stranger_burst=3), clock=clock)
    await instance.start()
    yield instance, clock
    await instance.close()


async def stranger(port: int) -> dict[str, object] | None:
    """A hello with a wrong token: the host's answer, or None when it hung up without a word."""
    peer = await RawPeer.connect(port)
    try:
        with contextlib.suppress(ConnectionError):
            await peer.send_json({"jsonrpc": "2.0", "id": 1, "method": "hello", "params": {
                "name": "stranger", "version": "1", "protocol": "1.1", "token": "wrong"}})
        try:
            return await peer.receive(timeout=10)
        except ConnectionError:
            return None
    finally:
        peer.close()


async def test_an_address_past_its_strangers_allowance_is_closed_unread_and_bots_never_spend_it(
    host: tuple[Host, FakeClock],
) -> None:
    """Burst 3, rate 1 a second (on the fake clock): a bot with the token reconnects ten times from 127.0.0.1 and
    is welcomed every time; three strangers then get their refusal, the fourth is closed without an answer (its
    hello never read), and a second later (on the clock) one more stranger is answered. Before, every stranger
    was read and answered, however many came."""
    instance, clock = host
    for attempt in range(10):
        peer = await RawPeer.connect(instance.port)
        await peer.hello("secret", name=f"bot-{attempt}")
        peer.close()
    for _ in range(3):
        answer = await stranger(instance.port)
        assert answer is not None and answer["error"]["code"] == -32011, answer  # type: ignore[index]
    assert await stranger(instance.port) is None
    clock.advance(1.0)
    answer = await stranger(instance.port)
    assert answer is not None and "error" in answer, answer
    assert await stranger(instance.port) is None


async def test_strangers_are_summarised_once_a_second_not_logged_one_by_one(host: tuple[Host, FakeClock]) -> None:
    """Junk from 8 strangers (3 admitted and dropped, 5 refused): one summary line for 127.0.0.1 with both counts,
    and no line per junk message or per connection."""
    instance, _clock = host
    with structlog.testing.capture_logs() as logs:
        for _ in range(8):
            peer = await RawPeer.connect(instance.port)
            with contextlib.suppress(ConnectionError):
                await peer.send(b"junk\n" * 20)
                while await peer.receive(timeout=10) is not None:
                    pass
            peer.close()
        await until(lambda: any(line["event"] == "host.strangers" for line in logs), timeout=5)
        await asyncio.sleep(0.1)
    [summary] = [line for line in logs if line["event"] == "host.strangers"]
    assert summary["peer"] == "127.0.0.1" and summary["refused"] == 5 and summary["dropped"] == 3, summary
    assert summary["summary"] == "8 connections from 127.0.0.1 refused/dropped in the last 1 s"
    per_connection = [line for line in logs if line["event"] in ("rpc.invalid_message", "host.no_hello",
                                                                 "rpc.further_warnings_unlogged")]
    assert per_connection == [], per_connection


# --- a real host process, real bots and a reconnecting flood ---------------------------------------------------


@pytest.mark.long
async def test_ten_reconnecting_strangers_cost_the_log_a_line_a_second_and_the_bots_no_game(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    """bench/flood's flooder (ten strangers from 127.0.0.1, junk lines, a reconnect after every drop) for 6 s
    against a host whose two bots, on the same address, are playing: no forfeit, games go on, and the host's
    log stays within a few bytes per stranger's connection (before: about 800, a few lines each)."""
    host = host_process
    await host.start("--token", "a", "--token", "b", "--move-time-max", "2", "--move-time-average", "0.1",
                     "--move-limit", "100", "--resume-grace", "0")
    for token in ("a", "b"):
        await bots.start(token, "--connect", f"127.0.0.1:{host.port}")
    for token in ("a", "b"):
        await until_state(bots, token, "in_game")
    flooder = await asyncio.create_subprocess_exec(
        sys.executable, str(REPO / "bench" / "flood"), "--flood", str(host.port), "6", "10", "0", "--reconnect",
        stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(flooder.communicate(), 60)
    connections = int(json.loads(out)["connections"])
    games_then = host.out.count(" plies")
    await host.line_with(" plies", timeout=30)
    await until(lambda: host.out.count(" plies") > games_then, timeout=60)  # the bots play on after it
    host.send_signal(2)
    assert await host.exit_code(timeout=60) == 0
    assert "by forfeit" not in host.out, host.out
    assert connections > 100, connections  # it did reconnect
    # a line a second, and one for each stranger the allowance lets in (bench/flood measured 800 B a connection)
    assert len(host.stderr) < 20_000 and len(host.stderr) < 20 * connections, (connections, host.stderr[-2000:])
    assert "host.strangers" in host.stderr
