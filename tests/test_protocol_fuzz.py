"""Fuzz both ends: random bytes and random valid-looking messages never crash or hang the codec, the bot or
the host, and never reach a handler as an unhandled exception (no -32603 answers)."""

from __future__ import annotations

import asyncio
import functools
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.daemon.service import BotDaemon, DaemonOptions
from bot.host.referee import BotSession, Host, HostSettings
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC
from protocol.codec import (
    BadResult,
    IncomingError,
    IncomingNotification,
    IncomingRequest,
    IncomingResult,
    InvalidMessage,
    LateResponse,
    bot_codec,
    host_codec,
)
from protocol.endpoint import Endpoint, MemoryChannel, memory_pipe
from protocol.errors import ErrorCode
from protocol.messages import BOT_TO_HOST, END_REASONS, GAME_OPTION_NAMES, HOST_TO_BOT, PROTOCOL_VERSION, HelloParams
from protocol.tcp import open_channel
from tests.helpers import ChannelWrapper

EVENT_TYPES = (
    IncomingRequest, IncomingNotification, IncomingResult, IncomingError, BadResult, LateResponse, InvalidMessage,
)
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- strategies ---------------------------------------------------------------------------------------------

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8)
)
json_values = st.recursive(
    json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
squares = st.builds(lambda c, r: f"{c}{r}", st.sampled_from("ABCDEFGHIJKLZa"), st.integers(0, 13))
plausible = st.one_of(
    squares,
    st.sampled_from([r.label for r in Rank] + ["dragon", "red", "blue", "x", "o", "xo", "classic", "mini", "barrage"]),
    st.integers(-2, 2100),
    st.booleans(),
    st.none(),
    json_values,
)
param_names = st.sampled_from([
    "square", "ply", "from", "to", "attacker", "defender", "outcome", "option", "value", "reason", "attemptsLeft",
    "gameId", "winner", "plies", "redScore", "blueScore", "redSetup", "blueSetup", "name", "version", "protocol",
])
params = st.one_of(
    st.dictionaries(param_names, plausible, max_size=6),
    st.fixed_dictionaries({"option": st.sampled_from([*GAME_OPTION_NAMES, "bogus"]), "value": plausible}),
    st.fixed_dictionaries({"from": squares, "to": squares}),
    json_values,
)
# Mostly well-formed envelopes with real method names, so most messages get past the framing to the
# parameter checks and the bot's state machine.
methods = st.sampled_from([*HOST_TO_BOT, *HOST_TO_BOT, *BOT_TO_HOST, "", "resign"]) | st.text(max_size=12)
ids = st.integers(1, 10**6) | st.integers(1, 10**6) | st.text(max_size=5) | st.none() | st.booleans() | st.floats()
messages = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0"] * 8 + ["1.0", 2]), "id": ids, "method": methods, "params": params},
    optional={"result": json_values},
)
notifications = st.fixed_dictionaries({"jsonrpc": st.just("2.0"), "method": methods, "params": params})


def encode(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def preamble() -> list[bytes]:
    """A correct start of a game (red's view, random blue squares), so the random calls that follow reach
    the setup and move states too."""
    calls: list[tuple[str, dict[str, Any]]] = [
        ("setGameOption", {"option": "colour", "value": "red"}),
        ("setGameOption", {"option": "moveTimeMax", "value": 0.5}),
        ("createAISetup", {}),
    ]
    calls += [("setOpponentSetupPiece", {"square": str(square)}) for square in CLASSIC.setup_squares(Side.BLUE)]
    return [encode({"jsonrpc": "2.0", "id": f"pre{i}", "method": m, "params": p}) for i, (m, p) in enumerate(calls)]


# --- the codec -------------------------------------------------------------------------------------------------


@FUZZ
@given(chunks=st.lists(st.binary(max_size=300), max_size=20))
def test_random_bytes_into_either_codec(chunks: list[bytes]) -> None:
    for codec in (bot_codec(max_line=256), host_codec(max_line=256)):
        for chunk in chunks:
            for event in codec.feed(chunk):
                assert isinstance(event, EVENT_TYPES)
                if isinstance(event, InvalidMessage) and event.reply:
                    codec.error_bytes(event.id, event.error)  # the answer is always encodable
            assert len(codec._buffer) <= 256
        for event in codec.eof():
            assert isinstance(event, EVENT_TYPES)


@FUZZ
@given(batch=st.lists(messages, max_size=15))
def test_random_messages_into_either_codec(batch: list[dict[str, Any]]) -> None:
    for codec in (bot_codec(), host_codec()):
        for event in codec.feed(b"".join(encode(m) for m in batch)):
            assert isinstance(event, EVENT_TYPES)
            if isinstance(event, InvalidMessage):
                assert event.error.code in {c.value for c in ErrorCode}


# --- the bot end ------------------------------------------------------------------------------------------------


async def drive_bot(lines: list[bytes]) -> list[dict[str, Any]]:
    """Send lines to a BotClient over a memory pipe; return every answer, up to the sentinel's."""
    host_end, bot_end = memory_pipe()
    client = BotClient(get_profile("random"), seed=1)
    bot = Endpoint(bot_end, bot_codec(), client)
    running = asyncio.create_task(bot.run())
    sentinel = encode({"jsonrpc": "2.0", "id": "sentinel", "method": "createAISetup", "params": {}})
    for line in [*lines, sentinel]:
        await host_end.send(line)
    answers: list[dict[str, Any]] = []
    buffer = b""
    async with asyncio.timeout(10):
        while not any(a.get("id") == "sentinel" for a in answers):
            buffer += await host_end.receive()
            *complete, buffer = buffer.split(b"\n")
            answers += [json.loads(line) for line in complete if line]
    assert not bot.closed
    await bot.close()
    await running
    return answers


@FUZZ
@given(batch=st.lists(messages | notifications, max_size=12), start_a_game=st.booleans())
def test_random_messages_to_the_bot(batch: list[dict[str, Any]], start_a_game: bool) -> None:
    lines = (preamble() if start_a_game else []) + [encode(m) for m in batch]
    answers = asyncio.run(drive_bot(lines))
    for answer in answers:
        assert answer["jsonrpc"] == "2.0" and ("result" in answer) != ("error" in answer)
        if "error" in answer:
            assert answer["error"]["code"] != ErrorCode.INTERNAL_ERROR, answer
    assert len(answers) <= len(lines) + 1


@FUZZ
@given(noise=st.lists(st.binary(min_size=1, max_size=200), max_size=8))
def test_random_bytes_to_the_bot(noise: list[bytes]) -> None:
    answers = asyncio.run(drive_bot([*noise, b"\n"]))
    assert all(a.get("error", {}).get("code") != ErrorCode.INTERNAL_ERROR for a in answers)


# --- the host end -----------------------------------------------------------------------------------------------


async def a_real_game_still_works(host: Host) -> None:
    """Two real bot daemons (bot/daemon/service.py, as `perspecto bot` runs them) over TCP play a game to its end."""
    daemons = [
        BotDaemon(BotClient(get_profile("random"), seed=seed),
                  HelloParams(name=f"ok{i}", version="0", protocol=PROTOCOL_VERSION, token=f"ok{i}"),
                  functools.partial(open_channel, "127.0.0.1", host.port), transport="tcp",
                  options=DaemonOptions(handle_signals=False))
        for i, seed in ((0, 1), (1, 2))
    ]
    running = [asyncio.create_task(daemon.run()) for daemon in daemons]
    red = await host.wait_for_bot(token="ok0", timeout=5)
    blue = await host.wait_for_bot(token="ok1", timeout=5)
    result = await host.play_game(red, blue)
    assert result.reason in END_REASONS and not result.forfeits
    for session in (red, blue):
        await session.goodbye("done")
    assert await asyncio.wait_for(asyncio.gather(*running), 5) == [0, 0]  # goodbye: both exit 0


@pytest.mark.long
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    noise=st.lists(st.binary(max_size=400), max_size=5),
    batch=st.lists(messages, max_size=8),
    say_hello_first=st.booleans(),
)
def test_random_input_to_the_host(noise: list[bytes], batch: list[dict[str, Any]], say_hello_first: bool) -> None:
    async def scenario() -> None:
        host = Host(HostSettings(move_limit=40, hello_timeout=0.5))
        await host.start()
        try:
            for payload in (noise, [encode(m) for m in batch]):
                _reader, writer = await asyncio.open_connection("127.0.0.1", host.port)
                if say_hello_first:
                    writer.write(encode({"jsonrpc": "2.0", "id": 1, "method": "hello",
                                         "params": {"name": "fuzz", "version": "0", "protocol": PROTOCOL_VERSION}}))
                for chunk in payload:
                    writer.write(chunk)
                await writer.drain()
                await asyncio.sleep(0.01)
                writer.close()
            await a_real_game_still_works(host)
        finally:
            await host.close()

    asyncio.run(scenario())


class ChaosChannel(ChannelWrapper):
    """Wraps a bot's channel and spoils its answers as told: garbage, a wrong result, silence, a hang-up."""

    def __init__(self, inner: MemoryChannel, skip: int, plan: list[int], rng: random.Random) -> None:
        super().__init__(inner)
        self.skip = skip  # answers passed through untouched before the plan starts
        self.plan = plan
        self.rng = rng

    async def send(self, data: bytes) -> None:
        if self.skip > 0:
            self.skip -= 1
            action = 0
        else:
            action = self.plan.pop() if self.plan else 0
        if action == 1:
            data = bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 60))) + b"\n"
        elif action == 2:  # the same id with a result of the wrong shape
            message = json.loads(data)
            message.pop("error", None)
            message["result"] = self.rng.choice([{}, {"rank": "dragon"}, {"from": "Z9", "to": "A1"}, [], 7, None])
            data = encode(message)
        elif action == 3:
            return  # silence: the host's deadline ends it
        elif action == 4:
            await self.inner.close()
            return
        await self.inner.send(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    skips=st.tuples(st.integers(0, 100), st.integers(0, 100)),
    plans=st.tuples(*[st.lists(st.sampled_from([0, 0, 0, 1, 2, 3, 4]), max_size=12)] * 2),
    seed=st.integers(0, 1000),
)
def test_the_host_survives_bots_that_answer_badly(
    skips: tuple[int, int], plans: tuple[list[int], list[int]], seed: int
) -> None:
    async def scenario() -> None:
        host = Host(HostSettings(ruleset="mini", move_limit=60, move_time_max=0.1, grace=0.0, call_timeout=0.1))
        sessions, tasks = [], []
        for name, skip, plan in zip(("red", "blue"), skips, plans, strict=True):
            host_end, bot_end = memory_pipe()
            endpoint = Endpoint(host_end, host_codec())
            chaos = ChaosChannel(bot_end, skip, list(reversed(plan)), random.Random(seed))
            bot = Endpoint(chaos, bot_codec(), BotClient(get_profile("random"), seed=seed))
            tasks += [asyncio.create_task(endpoint.run()), asyncio.create_task(bot.run())]
            sessions.append(BotSession(id=name, name=name, version="0", token=None, endpoint=endpoint))
        async with asyncio.timeout(30):
            result = await host.play_game(*sessions)
        assert result.reason in END_REASONS
        assert bool(result.forfeits) == result.reason.startswith("forfeit")
        assert result.record is not None and len(result.record.moves) == result.plies
        for session in sessions:
            await session.endpoint.close()
        await asyncio.wait_for(asyncio.gather(*tasks), 5)

    asyncio.run(scenario())
