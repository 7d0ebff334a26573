"""End to end over real TCP: the engine's ``info`` goes from a real ``perspecto bot`` process through the host
into the game record and ``perspecto replay``; a bot of protocol 1.0 (no info) and a bot sending a bad info
play on unharmed (docs/protocol.md, The info of a move)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from pydantic import BaseModel, ConfigDict, Field

from bot.cli import main as cli_main
from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.host.referee import BotSession, Host, HostSettings
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from protocol.codec import bot_codec
from protocol.endpoint import Endpoint
from protocol.messages import GetAIMoveResult, HelloParams, HelloResult
from protocol.tcp import open_channel

REPO = Path(__file__).resolve().parents[1]
NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    settings = HostSettings(move_limit=30, move_time_max=1.0, move_time_average=0.1, grace=0.5, call_timeout=5.0,
                            records_dir=tmp_path / "records")
    host = Host(settings)
    await host.start()
    yield host
    await host.close()


@pytest.fixture
async def engine_bot(host: Host, tmp_path: Path) -> AsyncIterator[BotSession]:
    """``perspecto bot`` with the perspecto engine, its own process, over TCP."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "bot", "--profile", "perspecto", "--connect", f"127.0.0.1:{host.port}",
        "--token", "engine", "--name", "engine", "--seed", "1", "--state-dir", str(tmp_path / "engine-state"),
        "--log-level", "warning", cwd=REPO, env=dict(os.environ), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    try:
        yield await host.wait_for_bot(token="engine", timeout=30)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


class _RawAnswer(BaseModel):
    """A getAIMove answer as a careless bot writes it: whatever ``info`` it likes."""

    model_config = ConfigDict(populate_by_name=True)
    frm: str = Field(alias="from")
    to: str
    info: Any


class _BadInfo:
    """The real client's moves, each sent with an info no host can take."""

    def __init__(self, client: BotClient) -> None:
        self.client = client

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        answer = await self.client.handle_request(method, params)
        if isinstance(answer, GetAIMoveResult):
            return _RawAnswer(frm=str(answer.frm), to=str(answer.to), info={"depth": -1, "reasons": "none"})
        return answer

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        await self.client.handle_notification(method, params)


async def in_process_bot(host: Host, name: str, protocol: str, *, bad_info: bool = False) -> AsyncIterator[BotSession]:
    """The real bot client on a real TCP connection, saying hello with ``protocol`` itself: with "1.0" it is a
    1.0 bot on the wire (it never sends info, ``send_move_info`` stays False)."""
    client = BotClient(get_profile("random"), seed=11)
    handler = _BadInfo(client) if bad_info else client
    endpoint = Endpoint(await open_channel("127.0.0.1", host.port), bot_codec(), handler)
    serving = asyncio.create_task(endpoint.run())
    try:
        answer = await endpoint.call("hello", HelloParams(name=name, version="0", protocol=protocol, token=name),
                                     timeout=5)
        assert isinstance(answer, HelloResult) and answer.protocol == "1.1"
        yield await host.wait_for_bot(token=name, timeout=10)
    finally:
        await endpoint.close("test over")
        serving.cancel()
        client.close()


@pytest.fixture
async def old_bot(host: Host) -> AsyncIterator[BotSession]:
    async for session in in_process_bot(host, "old", "1.0"):
        yield session


@pytest.fixture
async def careless_bot(host: Host) -> AsyncIterator[BotSession]:
    async for session in in_process_bot(host, "careless", "1.1", bad_info=True):
        yield session


async def test_info_goes_from_the_engine_bot_into_the_record_and_the_replay(
    host: Host, engine_bot: BotSession, old_bot: BotSession, capsys: pytest.CaptureFixture[str]
) -> None:
    result = await host.play_game(engine_bot, old_bot)
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert result.record_path is not None
    record = GameRecord.load(result.record_path)
    engine_moves = [m for m in record.moves if m.side == str(Side.RED)]
    old_moves = [m for m in record.moves if m.side == str(Side.BLUE)]
    assert engine_moves and old_moves
    # Every move of the engine bot carries its info, and the info is about that move.
    for move in engine_moves:
        assert move.info is not None, move
        assert move.info["time"] >= 0 and move.info["reasons"]
        if "pv" not in move.info:  # a fallback move (the engine late on a loaded machine) says so instead
            assert move.info["reasons"][0].startswith("fallback move: "), move.info
            continue
        frm, to = move.move.split("-")
        assert move.info["pv"][0] == {"from": frm, "to": to}
    searched = [m.info for m in engine_moves if m.info and m.info.get("depth")]
    assert searched and all(info["nodes"] > 0 and "p-e-minimax" in info["reasons"][0] for info in searched)
    # The 1.0 bot sent none, and played the whole game all the same.
    assert all(m.info is None for m in old_moves)

    capsys.readouterr()
    assert cli_main(["replay", str(result.record_path), "--every", "1000"]) == 0
    out = capsys.readouterr().out
    first = engine_moves[0]
    assert f"1. red {first.notation()}" in out
    assert first.info is not None and first.info["reasons"][0][:40] in out.replace("\n", " ")


async def test_a_bad_info_is_dropped_and_logged_never_forfeited(
    host: Host, engine_bot: BotSession, careless_bot: BotSession
) -> None:
    with structlog.testing.capture_logs() as logs:
        result = await host.play_game(careless_bot, engine_bot)
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert result.record is not None
    careless_moves = [m for m in result.record.moves if m.side == str(Side.RED)]
    assert careless_moves and all(m.info is None for m in careless_moves)
    assert all(m.info is not None for m in result.record.moves if m.side == str(Side.BLUE))
    dropped = [entry for entry in logs if entry["event"] == "host.move_info_dropped"]
    assert len(dropped) == len(careless_moves)
    assert dropped[0]["bot"] == "careless" and "info.depth" in dropped[0]["problem"]
