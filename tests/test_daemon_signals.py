"""``perspecto bot`` and signals: the first SIGTERM/SIGINT finishes the game (or hands it back after the
grace period) and exits 0; a second one exits at once with 128 + the signal. The bot processes show it end
to end; the grace policy itself is also driven in-process by a timer the test ends."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.daemon.service import BotDaemon, DaemonOptions
from bot.host.referee import Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from protocol.codec import host_codec
from protocol.endpoint import Channel, Endpoint, memory_pipe
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    CreateAISetupParams,
    GameOverParams,
    HelloParams,
    HelloResult,
)
from tests.helpers import ChannelWrapper, option
from tests.mqtt_broker import BotProcesses

NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}
# Seconds of slack on the real deadlines below (a process that starts Python, a loaded machine): the
# bounds still tell "at once" and "at the end of the grace" from the alternatives they rule out.
SLACK = 5.0


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    # A resume grace, to show that a bot that says goodbye is not waited for.
    instance = Host(HostSettings(move_limit=200, move_time_max=2.0, grace=0.3, call_timeout=3.0,
                                 records_dir=tmp_path / "records", resume_grace=10.0))
    await instance.start()
    yield instance
    await instance.close()


def connect(host: Host) -> tuple[str, str]:
    return ("--connect", f"127.0.0.1:{host.port}")


class SignalAt:
    """An on_move observer: at ``ply`` it sends the signals to the process (and notes when), then paces
    the game by ``pace`` seconds a move so that it outlasts a short grace."""

    def __init__(self, process: asyncio.subprocess.Process, ply: int, *signals: int, pace: float = 0.0) -> None:
        self.process = process
        self.ply = ply
        self.signals = signals
        self.pace = pace
        self.sent_at: float | None = None

    async def __call__(self, game: Game, played: MoveResult | None) -> None:
        if self.sent_at is None and game.ply >= self.ply:
            self.sent_at = time.monotonic()
            for signum in self.signals:
                self.process.send_signal(signum)
                await asyncio.sleep(0.2)
        if self.pace:
            await asyncio.sleep(self.pace)


async def exit_code(process: asyncio.subprocess.Process, timeout: float = 15.0) -> int:
    return await asyncio.wait_for(process.wait(), timeout)


async def test_sigterm_while_idle_says_goodbye_and_exits_0(host: Host, bots: BotProcesses) -> None:
    process = await bots.start("idle", *connect(host))
    session = await host.wait_for_bot(token="idle", timeout=30)
    sent = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert await exit_code(process) == 0
    assert time.monotonic() - sent < SLACK  # not the 60 s grace: no game to finish
    await session.endpoint.wait_closed()
    assert session.left  # it said goodbye
    [goodbye] = bots.events("idle", "bot.goodbye_sent")
    assert goodbye["reason"] == "shutting down"


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.long)], ids=["SIGTERM", "SIGINT"]
)
async def test_a_signal_mid_game_finishes_the_game_then_exits_0(
    signum: int, host: Host, bots: BotProcesses
) -> None:
    a = await bots.start("a", *connect(host), "--shutdown-grace", "60", seed=1)
    await bots.start("b", *connect(host), seed=2)
    red = await host.wait_for_bot(token="a", timeout=30)
    blue = await host.wait_for_bot(token="b", timeout=30)
    signaller = SignalAt(a, 20, signum)
    result = await host.play_game(red, blue, on_move=signaller)
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert await exit_code(a) == 0
    assert red.left and not red.alive  # gone after the game: it takes no new one
    assert [e["state"] for e in bots.events("a", "bot.health")][-1] == "disconnected"
    assert bots.events("a", "bot.goodbye_sent")[0]["reason"] == "shutting down"
    [stop] = bots.events("a", "bot.stop_requested")
    assert stop["signal"] == signal.Signals(signum).name and stop["in_game"] is True


async def test_a_game_that_outlasts_the_grace_is_handed_back(host: Host, bots: BotProcesses) -> None:
    a = await bots.start("a", *connect(host), "--shutdown-grace", "1", seed=3)
    await bots.start("b", *connect(host), seed=4)
    red = await host.wait_for_bot(token="a", timeout=30)
    blue = await host.wait_for_bot(token="b", timeout=30)
    signaller = SignalAt(a, 10, signal.SIGTERM, pace=0.05)  # 200 plies at 50 ms: far longer than 1 s
    result = await host.play_game(red, blue, on_move=signaller)
    assert await exit_code(a) == 0
    assert signaller.sent_at is not None
    handed_back_after = time.monotonic() - signaller.sent_at
    # the protocol's reading of a bot that leaves mid-game: it forfeits, and nobody waits for it to resume
    assert result.reason == "forfeit_crash" and result.forfeits == {Side.RED}, result.summary()
    assert "goodbye" in (result.detail or "")
    # at the end of the 1 s grace, not at the end of the game (200 plies at 50 ms: 10 s away)
    assert handed_back_after < 1 + SLACK, f"handed back {handed_back_after:.2f} s after the signal"
    [handed] = bots.events("a", "bot.game_handed_back")
    assert handed["game"] == result.game_id
    assert bots.events("a", "bot.goodbye_sent")[0]["reason"] == "shutting down: the game is handed back"
    done = list((bots.state_dir("a") / "journal" / "done").glob(f"{result.game_id}-*.jsonl"))
    assert len(done) == 1 and '"end":"handed back"' in done[0].read_text()


@pytest.mark.long
@pytest.mark.parametrize(
    "signum, code",
    [(signal.SIGTERM, 143), pytest.param(signal.SIGINT, 130, marks=pytest.mark.long)],
    ids=["SIGTERM", "SIGINT"],
)
async def test_a_second_signal_quits_at_once(signum: int, code: int, host: Host, bots: BotProcesses) -> None:
    """No goodbye, no waiting: the process is gone within moments, its journal left behind, so a new
    process picks the game up again (the host gives it its resume grace)."""
    a = await bots.start("a", *connect(host), "--shutdown-grace", "60", seed=5)
    await bots.start("b", *connect(host), seed=6)
    red = await host.wait_for_bot(token="a", timeout=30)
    blue = await host.wait_for_bot(token="b", timeout=30)
    signaller = SignalAt(a, 10, signum, signum, pace=0.02)
    game = asyncio.create_task(host.play_game(red, blue, on_move=signaller))
    assert await exit_code(a) == code
    assert signaller.sent_at is not None and time.monotonic() - signaller.sent_at < SLACK  # not the 60 s grace
    assert bots.events("a", "bot.quit_now") and not bots.events("a", "bot.goodbye_sent")
    assert (bots.state_dir("a") / "journal" / "bot-a.jsonl").exists()
    restarted = await bots.start("a", *connect(host), seed=5)
    result = await game
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert bots.events("a", "bot.resumed")
    await red.goodbye("test over")
    assert await exit_code(restarted) == 0


# --- the grace policy in-process, its timer ended by the test ------------------------------------------------


class GraceTimer:
    """The daemon's ``sleep`` for its shutdown grace: it ends when the test says, not after any time."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.running = asyncio.Event()
        self._ended = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.running.set()
        await self._ended.wait()

    def end(self) -> None:
        self._ended.set()


class HostDouble:
    """The host's end of a memory pipe: answers hello."""

    def __init__(self) -> None:
        self.greeted = asyncio.Event()

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        assert isinstance(params, HelloParams)
        self.greeted.set()
        return HelloResult(host="double", version="0", protocol=PROTOCOL_VERSION, session="s-1")

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        pass


class Wiretap(ChannelWrapper):
    """Keeps the goodbyes that reach the host, read off the wire: an endpoint that sees the connection end
    right after a notification does not get round to handling it."""

    def __init__(self, inner: Channel) -> None:
        super().__init__(inner)
        self.goodbyes: list[str] = []

    async def receive(self) -> bytes:
        data = await self.inner.receive()
        for line in data.splitlines():
            message = json.loads(line)
            if message.get("method") == "goodbye":
                self.goodbyes.append(message["params"]["reason"])
        return data


InAGame = tuple[BotDaemon, Endpoint, Wiretap, "asyncio.Task[int]"]


@asynccontextmanager
async def daemon_in_a_game(timer: GraceTimer) -> AsyncIterator[InAGame]:
    """A daemon (60 s grace, timed by ``timer``) in a game its host has just started."""
    bot_end, host_end = memory_pipe()
    double = HostDouble()
    wire = Wiretap(host_end)
    host = Endpoint(wire, host_codec(), double)
    serving = asyncio.create_task(host.run())
    connections = 0

    async def connect() -> Channel:
        nonlocal connections
        connections += 1
        assert connections == 1, "the daemon came back after stopping"
        return bot_end

    client = BotClient(get_profile("random"), seed=1)
    daemon = BotDaemon(client, HelloParams(name="b", version="0", protocol=PROTOCOL_VERSION), connect,
                       transport="memory", options=DaemonOptions(handle_signals=False, shutdown_grace=60.0),
                       sleep=timer.sleep)
    running = asyncio.create_task(daemon.run())
    try:
        await asyncio.wait_for(double.greeted.wait(), 5)
        for name, value in (("gameId", "g-1"), ("colour", "red"), ("opponent", "tester")):
            await host.call("setGameOption", option(name, value), timeout=5)
        assert client.in_game
        yield daemon, host, wire, running
        await asyncio.wait_for(serving, 5)  # the bot hung up: the host has read all it sent
    finally:
        running.cancel()
        await host.close("test over")
        with contextlib.suppress(asyncio.CancelledError):
            await serving


async def test_a_game_is_handed_back_when_the_grace_ends_and_not_before() -> None:
    timer = GraceTimer()
    async with daemon_in_a_game(timer) as (daemon, host, wire, running):
        daemon.request_stop()
        await asyncio.wait_for(timer.running.wait(), 5)
        assert timer.asked == [60.0]
        # During the grace the bot plays on: it answers the host's calls and says no goodbye.
        assert await host.call("createAISetup", CreateAISetupParams(), timeout=5) == Ack()
        assert not running.done() and wire.goodbyes == [] and daemon.client.in_game
        timer.end()
        assert await asyncio.wait_for(running, 5) == 0
    assert wire.goodbyes == ["shutting down: the game is handed back"]
    assert not daemon.client.in_game


async def test_a_game_that_ends_within_the_grace_is_not_handed_back() -> None:
    timer = GraceTimer()
    async with daemon_in_a_game(timer) as (daemon, host, wire, running):
        daemon.request_stop()
        await asyncio.wait_for(timer.running.wait(), 5)
        await host.notify("gameOver", GameOverParams(game_id="g-1", winner=None, reason="move_limit", plies=0,
                                                     red_score=3, blue_score=3, red_setup={}, blue_setup={}))
        assert await asyncio.wait_for(running, 5) == 0  # the grace's timer never ended
    assert wire.goodbyes == ["shutting down"]
    assert [r.game_id for r in daemon.client.results] == ["g-1"]
