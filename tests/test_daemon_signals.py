"""``perspecto bot`` and signals: the first SIGTERM/SIGINT finishes the game (or hands it back after the
grace period) and exits 0; a second one exits at once with 128 + the signal."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.host import Host, HostSettings
from engine_ext.game import Game, MoveResult
from engine_ext.pieces import Side
from tests.mqtt_broker import BotProcesses

NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    # A resume grace, to show that a bot that says goodbye is not waited for.
    instance = Host(HostSettings(move_limit=200, move_time_max=2.0, grace=0.3, call_timeout=3.0,
                                 records_dir=tmp_path / "records", resume_grace=10.0))
    await instance.start()
    yield instance
    await instance.close()


@pytest.fixture
async def bots(tmp_path: Path) -> AsyncIterator[BotProcesses]:
    processes = BotProcesses(tmp_path / "bots")
    yield processes
    await processes.stop()


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
    assert time.monotonic() - sent < 5
    await session.endpoint.wait_closed()
    assert session.left  # it said goodbye
    [goodbye] = bots.events("idle", "bot.goodbye_sent")
    assert goodbye["reason"] == "shutting down"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
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
    assert handed_back_after < 1 + 3, f"handed back {handed_back_after:.2f} s after the signal"
    [handed] = bots.events("a", "bot.game_handed_back")
    assert handed["game"] == result.game_id
    assert bots.events("a", "bot.goodbye_sent")[0]["reason"] == "shutting down: the game is handed back"
    done = list((bots.state_dir("a") / "journal" / "done").glob(f"{result.game_id}-*.jsonl"))
    assert len(done) == 1 and '"end":"handed back"' in done[0].read_text()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
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
    assert signaller.sent_at is not None and time.monotonic() - signaller.sent_at < 3
    assert bots.events("a", "bot.quit_now") and not bots.events("a", "bot.goodbye_sent")
    assert (bots.state_dir("a") / "journal" / "bot-a.jsonl").exists()
    restarted = await bots.start("a", *connect(host), seed=5)
    result = await game
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert bots.events("a", "bot.resumed")
    await red.goodbye("test over")
    assert await exit_code(restarted) == 0
