"""End to end: real games over real TCP sockets on 127.0.0.1 between bot processes.

The host runs in the test's event loop; every bot is its own process: ``python -m bot.cli bot`` for the
real bot, tests/bots/raw_bot.py for the misbehaving ones.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.host.referee import BotSession, GameResult, Host, HostSettings
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.referee import SCORE_FORFEIT, SCORE_WIN
from engine_ext.rules.replay import replay_positions

REPO = Path(__file__).resolve().parents[1]
RAW_BOT = REPO / "tests" / "bots" / "raw_bot.py"
NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


class Bots:
    """Bot processes started by one test, all stopped at its end."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.processes: list[asyncio.subprocess.Process] = []

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable, *args, cwd=REPO, env=dict(os.environ),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        self.processes.append(process)
        return process

    async def real(self, token: str, seed: int) -> asyncio.subprocess.Process:
        return await self.spawn(
            "-m", "bot.cli", "bot", "--profile", "random", "--connect", f"127.0.0.1:{self.port}",
            "--token", token, "--name", f"random-{token}", "--seed", str(seed), "--log-level", "warning",
        )

    async def raw(self, mode: str, token: str) -> asyncio.subprocess.Process:
        return await self.spawn(str(RAW_BOT), str(self.port), mode, "--token", token)

    async def stop(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.kill()
            await process.wait()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    settings = HostSettings(
        move_limit=300, move_time_max=1.0, grace=0.3, call_timeout=3.0, records_dir=tmp_path / "records"
    )
    host = Host(settings)
    await host.start()
    yield host
    await host.close()


@pytest.fixture
async def bots(host: Host) -> AsyncIterator[Bots]:
    bots = Bots(host.port)
    yield bots
    await bots.stop()


async def claim(host: Host, *tokens: str) -> list[BotSession]:
    return [await host.wait_for_bot(token=token, timeout=30) for token in tokens]


def assert_replays(result: GameResult) -> None:
    assert result.record_path is not None and result.record_path.exists()
    record = GameRecord.load(result.record_path)
    positions = list(replay_positions(record))
    assert len(positions) == result.plies + 1
    assert record.result is not None and record.result["reason"] == result.reason


async def test_real_games_between_bot_processes(host: Host, bots: Bots) -> None:
    a = await bots.real("a", seed=1)
    b = await bots.real("b", seed=2)
    session_a, session_b = await claim(host, "a", "b")
    results = [await host.play_game(session_a, session_b), await host.play_game(session_b, session_a)]
    for result in results:
        assert result.reason in NORMAL_ENDS, result.summary()
        assert not result.forfeits
        assert 0 < result.plies <= 300
        scores = {result.score(Side.RED), result.score(Side.BLUE)}
        assert scores in ({3}, {6, 1})
        assert_replays(result)
    assert results[0].names[Side.RED] == "random-a" and results[1].names[Side.RED] == "random-b"
    # goodbye ends the bot processes cleanly
    for session in (session_a, session_b):
        await session.goodbye("test over")
    assert await asyncio.wait_for(a.wait(), 10) == 0
    assert await asyncio.wait_for(b.wait(), 10) == 0


@pytest.mark.long
async def test_misbehaving_bots_forfeit_while_other_games_go_on(host: Host, bots: Bots) -> None:
    for i in range(1, 6):
        await bots.real(f"good{i}", seed=i)
    await bots.raw("illegal_move", "illegal")
    await bots.raw("timeout", "sleeper")
    await bots.raw("disconnect", "quitter")
    good1, good2, good3, good4, good5 = await claim(host, "good1", "good2", "good3", "good4", "good5")
    illegal, sleeper, quitter = await claim(host, "illegal", "sleeper", "quitter")

    normal, illegal_game, timeout_game, crash_game = await asyncio.gather(
        host.play_game(good1, good2),
        host.play_game(illegal, good3),  # the illegal mover is red: its first move
        host.play_game(good4, sleeper),  # the sleeper is blue: silent at ply 1
        host.play_game(quitter, good5),
    )

    assert normal.reason in NORMAL_ENDS and not normal.forfeits
    assert_replays(normal)

    assert illegal_game.reason == "forfeit_illegal_move"
    assert illegal_game.forfeits == {Side.RED} and illegal_game.winner == Side.BLUE
    assert illegal_game.plies == 0 and "flag never moves" in (illegal_game.detail or "")
    assert (illegal_game.score(Side.RED), illegal_game.score(Side.BLUE)) == (SCORE_FORFEIT, SCORE_WIN)

    assert timeout_game.reason == "forfeit_timeout"
    assert timeout_game.forfeits == {Side.BLUE} and timeout_game.winner == Side.RED
    assert timeout_game.plies == 1 and timeout_game.think_seconds[Side.BLUE] >= 1.0

    assert crash_game.reason == "forfeit_crash"
    assert crash_game.forfeits == {Side.RED} and crash_game.winner == Side.BLUE

    # The host keeps serving: the opponents of the bad bots play on, and the illegal mover stays connected.
    assert illegal.alive and not quitter.alive
    again = await host.play_game(good3, good5)
    assert again.reason in NORMAL_ENDS and not again.forfeits
    assert sum(r.game_id == again.game_id for r in host.results) == 1
    assert len(host.results) == 5


async def test_illegal_setup_gets_a_second_chance_then_forfeits(host: Host, bots: Bots) -> None:
    await bots.real("good", seed=7)
    await bots.raw("bad_setup_once", "once")
    await bots.raw("bad_setup", "never")
    good, once, never = await claim(host, "good", "once", "never")

    second_chance = await host.play_game(once, good)
    # The second setup was legal, so the game got to the moves (and the bot's flag move lost it).
    assert second_chance.reason == "forfeit_illegal_move" and second_chance.forfeits == {Side.RED}
    assert second_chance.record is not None and second_chance.record.red.setup

    refused = await host.play_game(good, never)
    assert refused.reason == "forfeit_illegal_setup"
    assert refused.forfeits == {Side.BLUE} and refused.winner == Side.RED and refused.plies == 0
    assert "dragon" in (refused.detail or "")


@pytest.mark.long
async def test_host_command_pairs_bots_and_stops_after_max_games(tmp_path: Path) -> None:
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "host", "--listen", "127.0.0.1:0", "--max-games", "2",
        "--move-limit", "150", "--records", str(tmp_path), cwd=REPO, env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    bots = Bots(0)
    try:
        assert host.stdout is not None
        banner = (await asyncio.wait_for(host.stdout.readline(), 20)).decode()
        assert "listening on 127.0.0.1:" in banner
        bots.port = int(banner.split("127.0.0.1:")[1].split()[0])
        first = await bots.real("x", seed=3)
        second = await bots.real("y", seed=4)
        out, err = await asyncio.wait_for(host.communicate(), 60)
        assert host.returncode == 0, err.decode()
        text = out.decode()
        assert text.count(" plies") == 2
        assert "random-x" in text and "random-y" in text and "score" in text
        assert len(list(tmp_path.glob("*.json"))) == 2
        # the standings: saved next to the records, both games in them
        [saved] = (tmp_path / "standings").glob("*.json")
        standings = json.loads(saved.read_text())
        assert standings["final"] is True and standings["games"] == 2
        assert {b["name"]: b["games"] for b in standings["bots"]} == {"random-x": 2, "random-y": 2}
        assert sorted(Path(r["record"]).name for r in standings["results"]) == sorted(
            p.name for p in tmp_path.glob("*.json"))
        # the host said goodbye at the end: both bots exit cleanly
        assert await asyncio.wait_for(first.wait(), 10) == 0
        assert await asyncio.wait_for(second.wait(), 10) == 0
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()
        await bots.stop()


async def test_a_dropped_bot_reconnects(host: Host, bots: Bots) -> None:
    bot = await bots.real("r", seed=1)  # `perspecto bot`: the daemon of bot/daemon/service.py
    [first] = await claim(host, "r")
    await first.endpoint.close("the network failed")  # no goodbye: the bot must come back
    second = await host.wait_for_bot(token="r", timeout=10)
    assert second.id != first.id and second.alive
    await second.goodbye("done")
    assert await asyncio.wait_for(bot.wait(), 10) == 0
