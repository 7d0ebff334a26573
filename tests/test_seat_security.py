"""A game seat no other connection can take (issue 19, point 2), end to end over TCP and over MQTT.

On a host without tokens anyone may connect and say any name, and the opponent learns the game id from
``setGameOption``. The two attacks: a second connection says hello with the playing bot's name and
``resumeGame``, and either (1) a resume count that does not fit, which used to forfeit the victim ("resume
refused"), or (2) the right count, which used to hand it the victim's seat and its next ``getAIMove``.

The victims are real ``perspecto bot`` processes; the intruder is a bare channel that writes JSON lines,
as anyone could. Its own MQTT bot id is its own topics: what a broker's per-bot access rules allow it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from bot.host.referee import BotSession, GameResult, Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from protocol.endpoint import Channel
from protocol.errors import ErrorCode
from protocol.mqtt import MqttChannel, MqttSettings
from protocol.tcp import open_channel
from tests.mqtt_broker import BotProcesses, journal_moves, running_broker

NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}
GAME_ID = "seat-0001"
ATTACK_PLY = 40  # red, the victim, is to move next
GUESSED_KEY = "A" * 43  # what a resume key looks like, but not the victim's


class Intruder:
    """A connection that is not the victim's: raw JSON-RPC lines on a channel; keeps all the host sends."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.received: list[dict[str, Any]] = []
        self._buffer = b""

    async def _next(self) -> dict[str, Any] | None:
        while True:
            while b"\n" not in self._buffer:
                data = await self.channel.receive()
                if not data:
                    return None
                self._buffer += data
            line, self._buffer = self._buffer.split(b"\n", 1)
            if line.strip():
                message: dict[str, Any] = json.loads(line)
                self.received.append(message)
                return message

    async def hello(self, **params: Any) -> dict[str, Any]:
        """The host's answer to a hello with ``params``: a result or an error object."""
        request = {"jsonrpc": "2.0", "id": 1, "method": "hello", "params": params}
        await self.channel.send(json.dumps(request).encode() + b"\n")
        async with asyncio.timeout(10):
            while (message := await self._next()) is not None:
                if message.get("id") == 1 and "method" not in message:
                    return message
        raise AssertionError(f"the host hung up without answering the hello (got {self.received})")

    async def listen(self) -> None:
        """Whatever else the host sends (a call meant for the victim), until it hangs up."""
        while await self._next() is not None:
            pass

    @property
    def calls(self) -> list[str]:
        return [m["method"] for m in self.received if "method" in m]


@dataclass
class Network:
    host: Host
    bot_args: tuple[str, ...]  # how a bot process reaches the host
    open_channel: Callable[[str], Awaitable[Channel]]  # a new connection to the host, by an intruder id


@pytest.fixture(params=["tcp", pytest.param("mqtt", marks=[pytest.mark.mqtt, pytest.mark.long])])
async def network(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Network]:
    # No tokens: the host that the issue is about. resume_grace on: the resume path is open.
    settings: dict[str, Any] = dict(move_limit=300, move_time_max=1.0, grace=0.3, call_timeout=3.0,
                                    records_dir=tmp_path / "records", resume_grace=20.0)
    if request.param == "tcp":
        host = Host(HostSettings(**settings))
        port = await host.start()
        try:
            yield Network(host, ("--connect", f"127.0.0.1:{port}"), lambda _id: open_channel("127.0.0.1", port))
        finally:
            await host.close()
        return
    with running_broker(tmp_path / "broker") as broker:
        mqtt = MqttSettings.from_url(f"{broker.url}/seats")
        host = Host(HostSettings(**settings, mqtt=mqtt))
        await host.start()
        intruder_settings = MqttSettings.from_url(f"{broker.url}/seats")
        try:
            yield Network(host, ("--mqtt", mqtt.url),
                          lambda bot_id: MqttChannel.open(intruder_settings, bot_id, name=bot_id))
        finally:
            await host.close()


async def claim(host: Host, name: str) -> BotSession:
    """The free session of the bot called ``name`` (no tokens to tell bots apart here)."""
    async with asyncio.timeout(30):
        while True:
            for session in host.sessions.values():
                if session.name == name and session.alive and not session.busy:
                    session.busy = True
                    return session
            await asyncio.sleep(0.05)


async def start_game(network: Network, bots: BotProcesses) -> tuple[BotSession, BotSession]:
    # ``--token ""`` after the harness's own ``--token``: the bots send none, as on a host without tokens.
    await bots.start("a", *network.bot_args, seed=21, extra=("--token", ""))
    await bots.start("b", *network.bot_args, seed=22, extra=("--token", ""))
    return await claim(network.host, "bot-a"), await claim(network.host, "bot-b")


def hello_as_victim(**resume: Any) -> dict[str, Any]:
    return {"name": "bot-a", "version": "evil", "protocol": "1.0", "features": ["resume"],
            "resumeGame": GAME_ID, **resume}


async def check_untouched(result: GameResult, victim: BotSession, first: Any, bots: BotProcesses) -> None:
    """The game ended as a game ends, on the victim's one and only connection, and both bots saw every move."""
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert victim.endpoint is first
    assert not bots.events("a", "bot.resumed") and not bots.events("a", "bot.connection_lost")
    assert result.record is not None
    recorded = [m.move for m in result.record.moves]
    for token in ("a", "b"):
        assert journal_moves(await bots.finished_journal(token, result.game_id)) == recorded


async def test_a_bogus_resume_does_not_forfeit_the_victim(network: Network, bots: BotProcesses) -> None:
    """Attack 1: a hello with the victim's name, its game and a resume count that cannot fit. It used to
    close the victim's connection and forfeit it ("resume refused"); now it is refused to the intruder alone."""
    red, blue = await start_game(network, bots)
    first = red.endpoint
    answers: list[dict[str, Any]] = []

    async def attack(game: Game, played: MoveResult | None) -> None:
        if game.ply != ATTACK_PLY or answers:
            return
        for number, resume in enumerate(({"resumeCalls": 0, "resumeKey": GUESSED_KEY}, {"resumeCalls": 0})):
            intruder = Intruder(await network.open_channel(f"intruder-{number}"))
            try:
                answers.append(await intruder.hello(**hello_as_victim(**resume)))
            finally:
                await intruder.channel.close()

    result = await network.host.play_game(red, blue, game_id=GAME_ID, on_move=attack)
    await check_untouched(result, red, first, bots)
    assert [answer.get("error", {}).get("code") for answer in answers] == [
        ErrorCode.RESUME_REFUSED, ErrorCode.INVALID_PARAMS], answers
    assert "resumeKey" in answers[1]["error"]["message"]


@pytest.mark.long
async def test_a_resume_without_the_key_does_not_get_the_victims_move(network: Network, bots: BotProcesses) -> None:
    """Attack 2: the same hello with the right count (the host's own, as a perfect guess) at a point where
    the victim is to move next. It used to take the victim's seat and receive its getAIMove; now it gets an
    error, nothing else, and the victim plays its move on its own connection."""
    red, blue = await start_game(network, bots)
    first = red.endpoint
    intruders: list[Intruder] = []
    answers: list[dict[str, Any]] = []
    listening: list[asyncio.Task[None]] = []

    async def attack(game: Game, played: MoveResult | None) -> None:
        if game.ply != ATTACK_PLY or intruders:
            return
        assert game.side_to_move == Side.RED
        calls = network.host._live[GAME_ID].answered[Side.RED]  # nothing is in flight: the exact count
        # The keyless hello last: the game goes on as soon as it is answered.
        for number, resume in enumerate(({"resumeCalls": calls, "resumeKey": GUESSED_KEY}, {"resumeCalls": calls})):
            intruder = Intruder(await network.open_channel(f"intruder-{number}"))
            intruders.append(intruder)
            answers.append(await intruder.hello(**hello_as_victim(**resume)))
            listening.append(asyncio.create_task(intruder.listen()))

    try:
        result = await network.host.play_game(red, blue, game_id=GAME_ID, on_move=attack)
    finally:
        # All the game sent has arrived. (A connection whose hello did not validate stays open for a
        # hello that does, until the hello timeout: the intruders hang up themselves.)
        for task in listening:
            task.cancel()
        for intruder in intruders:
            await intruder.channel.close()
    assert [intruder.calls for intruder in intruders] == [[], []], "the host sent the victim's calls elsewhere"
    assert [answer.get("error", {}).get("code") for answer in answers] == [
        ErrorCode.RESUME_REFUSED, ErrorCode.INVALID_PARAMS], answers
    assert result.plies > ATTACK_PLY
    await check_untouched(result, red, first, bots)
