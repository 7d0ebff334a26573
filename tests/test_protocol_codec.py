"""The wire protocol: every method round-trips; broken input gets the documented errors and the connection
stays usable; the endpoint's calls, deadlines and closes; the TCP adapter's limits and reconnects."""

from __future__ import annotations

import asyncio
import json
import random
import socket
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.host.referee import Host, HostSettings
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Square
from protocol import errors
from protocol.codec import (
    DEFAULT_MAX_LINE,
    BadResult,
    Codec,
    IncomingError,
    IncomingNotification,
    IncomingRequest,
    IncomingResult,
    InvalidMessage,
    LateResponse,
    bot_codec,
    host_codec,
)
from protocol.endpoint import Endpoint, memory_pipe
from protocol.errors import ErrorCode
from protocol.limits import ID_MAX, MIN_MAX_LINE, PEER_TEXT_MAX, Allowance, Budget, clip
from protocol.messages import (
    BOT_TO_HOST,
    HOST_TO_BOT,
    PROTOCOL_VERSION,
    Ack,
    CreateAISetupParams,
    GameOverParams,
    GetAIMoveParams,
    GetAIMoveResult,
    GetAISetupPieceParams,
    GetAISetupPieceResult,
    GoodbyeParams,
    HelloParams,
    HelloResult,
    IllegalSetupParams,
    MoveInfo,
    MoveModel,
    MoveReport,
    SetOpponentSetupPieceParams,
)
from protocol.tcp import backoff_delays, connect_with_backoff, open_channel, parse_address, serve
from tests.helpers import option

A4, A5 = Square.parse("A4"), Square.parse("A5")


# One example call (params, result) for every method; notifications have no result.
EXAMPLES: dict[str, list[tuple[BaseModel, BaseModel | None]]] = {
    "setGameOption": [
        (option("gameId", "g-1"), Ack()), (option("colour", "blue"), Ack()), (option("opponent", "Probe"), Ack()),
        (option("ruleset", "barrage"), Ack()), (option("rangeAttacks", False), Ack()),
        (option("twoSquares", None), Ack()), (option("twoSquares", 3), Ack()), (option("moreSquares", True), Ack()),
        (option("moveLimit", 2000), Ack()), (option("moveTimeMax", 15), Ack()), (option("moveTimeAverage", 4.5), Ack()),
    ],
    "createAISetup": [(CreateAISetupParams(), Ack())],
    "getAISetupPiece": [
        (GetAISetupPieceParams(square=Square.parse("J4")), GetAISetupPieceResult(rank=Rank.MARSHAL)),
        (GetAISetupPieceParams(square=Square.parse("A1")), GetAISetupPieceResult(rank=None)),
    ],
    "illegalSetup": [(IllegalSetupParams(reason="red has 2 flag(s)", attempts_left=1), Ack())],
    "setOpponentSetupPiece": [(SetOpponentSetupPieceParams(square=Square.parse("C7")), Ack())],
    "getAIMove": [
        (GetAIMoveParams(ply=17), GetAIMoveResult.of(A4, A5)),
        (GetAIMoveParams(ply=17), GetAIMoveResult(frm=A4, to=A5, info=MoveInfo(depth=3, nodes=812, time=0.25,
                                                                              value=-1.5, pv=[MoveModel.of(A4, A5)],
                                                                              reasons=["the only safe move"]))),
    ],
    "submitAIMoveResult": [
        (MoveReport.of(A4, A5), Ack()),
        (MoveReport.of(A4, A5, Rank.MINER, Rank.BOMB, "x"), Ack()),
    ],
    "submitOpponentMove": [
        (MoveReport.of(A4, A5, Rank.SCOUT, Rank.SCOUT, "xo"), Ack()),
        (MoveReport.of(A4, A5, Rank.SPY, Rank.GENERAL, "o"), Ack()),
    ],
    "gameOver": [(
        GameOverParams(
            game_id="g-1", winner=Side.RED, reason="flag", plies=321, red_score=6, blue_score=1,
            red_setup={Square.parse("A1"): Rank.FLAG}, blue_setup={Square.parse("A10"): Rank.FLAG},
        ),
        None,
    )],
    "goodbye": [(GoodbyeParams(reason="match over"), None)],
    "hello": [(
        HelloParams(name="perspecto", version="0.1.0", protocol=PROTOCOL_VERSION, token="t"),
        HelloResult(host="perspecto-host", version="0.1.0", protocol=PROTOCOL_VERSION, session="s1"),
    )],
}


def test_every_method_has_an_example() -> None:
    assert set(EXAMPLES) == set(HOST_TO_BOT) | set(BOT_TO_HOST)


@pytest.mark.parametrize("method", sorted(EXAMPLES))
def test_every_method_round_trips(method: str) -> None:
    for params, result in EXAMPLES[method]:
        sender, receiver = (bot_codec(), host_codec()) if method in BOT_TO_HOST else (host_codec(), bot_codec())
        if result is None:
            [event] = receiver.feed(sender.notification(method, params))
            assert event == IncomingNotification(method, params)
            continue
        request_id, data = sender.request(method, params)
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        [request] = receiver.feed(data)
        assert request == IncomingRequest(request_id, method, params)
        [answer] = sender.feed(receiver.result_bytes(request_id, result))
        assert answer == IncomingResult(request_id, method, result)
        assert sender.pending == {}


def test_wire_form_uses_the_documented_names() -> None:
    _id, data = host_codec().request("submitOpponentMove", MoveReport.of(A4, A5, Rank.MINER, Rank.BOMB, "x"))
    message = json.loads(data)
    assert message == {
        "jsonrpc": "2.0", "id": 1, "method": "submitOpponentMove",
        "params": {"from": "A4", "to": "A5", "attacker": "miner", "defender": "bomb", "outcome": "x"},
    }
    _id, data = host_codec().request("setGameOption", option("moveTimeMax", 15))
    assert json.loads(data)["params"] == {"option": "moveTimeMax", "value": 15.0}


def test_bytes_may_arrive_in_any_pieces() -> None:
    host = host_codec()
    stream = b"".join(host.request("getAIMove", GetAIMoveParams(ply=n))[1] for n in range(5))
    bot = bot_codec()
    events = [e for i in range(len(stream)) for e in bot.feed(stream[i : i + 1])]
    assert [e.params.ply for e in events if isinstance(e, IncomingRequest)] == [0, 1, 2, 3, 4]  # type: ignore[attr-defined]


def invalid(codec: Codec, line: bytes) -> InvalidMessage:
    [event] = codec.feed(line + b"\n")
    assert isinstance(event, InvalidMessage), event
    return event


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "getAIMove"', ErrorCode.PARSE_ERROR),
        (b"\xff\xfe{}", ErrorCode.PARSE_ERROR),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "getAIMove", "params": {"ply": NaN}}', ErrorCode.PARSE_ERROR),
        (b"[" * 50_000 + b"]" * 50_000, ErrorCode.PARSE_ERROR),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "createAISetup"}]', ErrorCode.INVALID_REQUEST),
        (b'"hello"', ErrorCode.INVALID_REQUEST),
        (b'{"id": 1, "method": "createAISetup"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "createAISetup"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "createAISetup"}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', ErrorCode.INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "createAISetup", "extra": 1}', ErrorCode.INVALID_REQUEST),
    ],
)
def test_malformed_lines_get_the_documented_errors(line: bytes, code: int) -> None:
    event = invalid(bot_codec(max_line=200_000), line)
    assert event.error.code == code
    assert event.reply  # the peer gets told (with id null when the id is unreadable)


def test_errors_name_the_bad_parameter() -> None:
    bot = bot_codec()
    cases = {
        b'{"jsonrpc":"2.0","id":3,"method":"getAISetupPiece","params":{"square":"Z1"}}': "square",
        b'{"jsonrpc":"2.0","id":3,"method":"getAIMove","params":{"ply":"7"}}': "ply",
        b'{"jsonrpc":"2.0","id":3,"method":"getAIMove","params":{"ply":1,"depth":3}}': "depth",
        b'{"jsonrpc":"2.0","id":3,"method":"setGameOption","params":{"option":"colour","value":"green"}}': "green",
        b'{"jsonrpc":"2.0","id":3,"method":"setGameOption","params":{"option":"colr","value":"red"}}': "colr",
        b'{"jsonrpc":"2.0","id":3,"method":"submitOpponentMove",'
        b'"params":{"from":"A4","to":"A5","attacker":"miner","defender":"bomb","outcome":"o"}}': "outcome 'x'",
        b'{"jsonrpc":"2.0","id":3,"method":"submitOpponentMove",'
        b'"params":{"from":"A4","to":"A5","attacker":"miner"}}': "together",
        b'{"jsonrpc":"2.0","id":3,"method":"getAIMove","params":[1]}': "object",
    }
    for line, named in cases.items():
        event = invalid(bot, line)
        assert event.error.code == ErrorCode.INVALID_PARAMS and event.id == 3 and event.reply
        assert named in event.error.message, event.error.message


def test_unknown_methods() -> None:
    bot = bot_codec()
    event = invalid(bot, b'{"jsonrpc":"2.0","id":"x9","method":"resign"}')
    assert event.error.code == ErrorCode.METHOD_NOT_FOUND and event.id == "x9" and event.reply
    # a notification is never answered, even with an error
    event = invalid(bot, b'{"jsonrpc":"2.0","method":"resign"}')
    assert event.error.code == ErrorCode.METHOD_NOT_FOUND and not event.reply
    # a call sent without an id is a notification: wrong, but still never answered
    event = invalid(bot, b'{"jsonrpc":"2.0","method":"createAISetup"}')
    assert event.error.code == ErrorCode.INVALID_REQUEST and not event.reply
    # the host does not take the bot's calls, nor the bot the host's
    assert invalid(host_codec(), b'{"jsonrpc":"2.0","id":1,"method":"getAIMove","params":{"ply":0}}').error.code \
        == ErrorCode.METHOD_NOT_FOUND


def test_oversized_lines_are_dropped_and_the_stream_goes_on() -> None:
    bot = bot_codec(max_line=1024)
    valid = host_codec().request("getAIMove", GetAIMoveParams(ply=4))[1]
    # reported as soon as the limit is passed, without waiting for a newline that may never come
    [event] = bot.feed(b"x" * 1500)
    assert isinstance(event, InvalidMessage) and event.error.code == ErrorCode.LINE_TOO_LONG and event.reply
    assert bot.feed(b"y" * 5000) == []
    events = bot.feed(b"zzz\n" + valid)
    assert events == [IncomingRequest(1, "getAIMove", GetAIMoveParams(ply=4))]
    # a whole oversized line in one chunk
    events = bot.feed(b"q" * 2000 + b"\n" + valid)
    assert [type(e) for e in events] == [InvalidMessage, IncomingRequest]
    assert len(bot._buffer) == 0


def test_blank_lines_and_a_last_line_without_newline() -> None:
    bot = bot_codec()
    assert bot.feed(b"\n\r\n  \n") == []
    data = host_codec().request("createAISetup", CreateAISetupParams())[1].rstrip(b"\n")
    assert bot.feed(data) == []
    assert bot.eof() == [IncomingRequest(1, "createAISetup", CreateAISetupParams())]


def test_responses_are_matched_to_calls() -> None:
    host = host_codec()
    first, _ = host.request("getAIMove", GetAIMoveParams(ply=0))
    second, _ = host.request("createAISetup", CreateAISetupParams())
    third, _ = host.request("getAIMove", GetAIMoveParams(ply=1))
    host.forget(third)
    events = host.feed(
        f'{{"jsonrpc":"2.0","id":{first},"error":{{"code":-32002,"message":"getAIMove before a setup"}}}}\n'.encode()
        + f'{{"jsonrpc":"2.0","id":{second},"result":{{"unexpected":1}}}}\n'.encode()
        + f'{{"jsonrpc":"2.0","id":{third},"result":{{"from":"A4","to":"A5"}}}}\n'.encode()
        + b'{"jsonrpc":"2.0","id":99,"result":{}}\n'
        + b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"not JSON"}}\n'
        + b'{"jsonrpc":"2.0","id":5,"result":{},"error":{"code":1,"message":"both"}}\n'
    )
    error, bad, late, unknown, peer_error, malformed = events
    assert isinstance(error, IncomingError) and error.method == "getAIMove"
    assert isinstance(error.error, errors.OutOfOrder) and error.error.message == "getAIMove before a setup"
    assert isinstance(bad, BadResult) and bad.method == "createAISetup" and "unexpected" in bad.detail
    assert late == LateResponse(third, "getAIMove")
    assert isinstance(unknown, InvalidMessage) and not unknown.reply
    assert isinstance(peer_error, IncomingError) and peer_error.id is None
    assert isinstance(malformed, InvalidMessage) and not malformed.reply  # never answer a response


def test_sending_checks_the_method_tables() -> None:
    host = host_codec()
    with pytest.raises(TypeError):
        host.request("getAIMove", CreateAISetupParams())
    with pytest.raises(ValueError, match="notification"):
        host.request("gameOver", EXAMPLES["gameOver"][0][0])
    with pytest.raises(ValueError, match="not a method"):
        host.request("hello", EXAMPLES["hello"][0][0])


def test_error_objects_map_to_their_classes() -> None:
    known = [(-32002, errors.OutOfOrder), (-32003, errors.IllegalMoveReported), (-32601, errors.MethodNotFound)]
    for code, cls in known:
        assert type(errors.RpcError.from_object(code, "m")) is cls
    unknown = errors.RpcError.from_object(-31000, "new in 1.1", {"x": 1})
    assert type(unknown) is errors.RpcError
    assert unknown.to_object() == {"code": -31000, "message": "new in 1.1", "data": {"x": 1}}


# --- the endpoint over an in-memory pipe ---------------------------------------------------------------


class Recorder:
    """A bot-side handler: slow on getAIMove, broken on illegalSetup, refusing setOpponentSetupPiece."""

    def __init__(self) -> None:
        self.notifications: list[str] = []  # handled notifications, in order

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        if method == "getAIMove":
            await asyncio.sleep(0.2)
            return MoveModel.of(A4, A5)
        if method == "illegalSetup":
            raise KeyError("a bug in the handler")
        if method == "setOpponentSetupPiece":
            raise errors.OutOfOrder("no setup yet")
        return Ack()

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        self.notifications.append(method)


async def test_endpoint_calls_errors_and_deadlines() -> None:
    host_end, bot_end = memory_pipe()
    recorder = Recorder()
    host = Endpoint(host_end, host_codec())
    bot = Endpoint(bot_end, bot_codec(), recorder)
    tasks = [asyncio.create_task(host.run()), asyncio.create_task(bot.run())]

    assert await host.call("createAISetup", CreateAISetupParams(), timeout=1) == Ack()
    with pytest.raises(errors.OutOfOrder, match="no setup yet"):
        await host.call("setOpponentSetupPiece", SetOpponentSetupPieceParams(square=A4), timeout=1)
    with pytest.raises(errors.InternalError, match="illegalSetup failed"):
        await host.call("illegalSetup", IllegalSetupParams(reason="r", attempts_left=0), timeout=1)
    with pytest.raises(errors.CallTimeout):
        await host.call("getAIMove", GetAIMoveParams(ply=0), timeout=0.05)
    # calls are handled in order: the notification waits for the slow move, whose late answer is dropped
    await host.notify("goodbye", GoodbyeParams(reason="bye"))
    await asyncio.sleep(0.3)
    assert recorder.notifications == ["goodbye"]
    assert not host.closed and not bot.closed
    assert await host.call("createAISetup", CreateAISetupParams(), timeout=1) == Ack()

    # a call waiting when the connection drops fails at once
    pending = asyncio.create_task(host.call("getAIMove", GetAIMoveParams(ply=1), timeout=5))
    await asyncio.sleep(0.01)
    await bot.close("test")
    with pytest.raises(errors.ConnectionClosed):
        await pending
    await asyncio.wait_for(asyncio.gather(*tasks), 1)
    with pytest.raises(errors.ConnectionClosed):
        await host.call("createAISetup", CreateAISetupParams(), timeout=1)


async def test_a_notification_sent_just_before_the_end_is_still_handled() -> None:
    """A goodbye written right before the connection closes reaches the handler (it once was dropped with
    the worker); a request queued behind a slow one when the connection ends is not handled any more."""

    class Slow(Recorder):
        def __init__(self) -> None:
            super().__init__()
            self.requests: list[str] = []

        async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
            self.requests.append(method)
            await asyncio.sleep(0.2)
            return Ack()

    host_end, bot_end = memory_pipe()
    recorder = Slow()
    bot = Endpoint(bot_end, bot_codec(), recorder)
    task = asyncio.create_task(bot.run())
    codec = host_codec()
    await host_end.send(codec.notification("goodbye", GoodbyeParams(reason="bye")))
    await host_end.close()
    await asyncio.wait_for(task, 2)
    assert recorder.notifications == ["goodbye"]

    host_end, bot_end = memory_pipe()
    recorder = Slow()
    bot = Endpoint(bot_end, bot_codec(), recorder)
    task = asyncio.create_task(bot.run())
    await host_end.send(codec.request("createAISetup", CreateAISetupParams())[1])
    await asyncio.sleep(0.05)  # the first request is being handled
    await host_end.send(codec.request("createAISetup", CreateAISetupParams())[1])
    await host_end.send(codec.notification("goodbye", GoodbyeParams(reason="bye")))
    await host_end.close()
    await asyncio.wait_for(task, 2)
    assert recorder.requests == ["createAISetup"]  # the queued one was dropped, the slow one cancelled
    assert recorder.notifications == ["goodbye"]


async def test_idle_timeout_closes_the_connection() -> None:
    a, _b = memory_pipe()
    endpoint = Endpoint(a, bot_codec(), idle_timeout=0.05)
    await asyncio.wait_for(endpoint.run(), 1)
    assert endpoint.closed and "nothing received" in (endpoint.close_reason or "")


# --- over TCP: a real bot endpoint, a raw client --------------------------------------------------------


async def raw_exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, line: bytes) -> dict[str, Any]:
    writer.write(line + b"\n")
    await writer.drain()
    return json.loads(await asyncio.wait_for(reader.readline(), 2))


async def test_bad_input_over_tcp_gets_errors_and_the_connection_stays_usable() -> None:
    client = BotClient(get_profile("random"), seed=1)

    async def on_channel(channel: Any) -> None:
        await Endpoint(channel, bot_codec(max_line=4096), client).run()

    server = await serve("127.0.0.1", 0, on_channel)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        reply = await raw_exchange(reader, writer, b"{oops")
        assert reply["id"] is None and reply["error"]["code"] == ErrorCode.PARSE_ERROR
        reply = await raw_exchange(reader, writer, b"x" * 10_000)
        assert reply["id"] is None and reply["error"]["code"] == ErrorCode.LINE_TOO_LONG
        reply = await raw_exchange(reader, writer, b'{"jsonrpc":"2.0","id":1,"method":"resign"}')
        assert reply == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "unknown method 'resign'"}}
        reply = await raw_exchange(reader, writer, b'{"jsonrpc":"2.0","id":2,"method":"getAIMove","params":{"ply":0}}')
        assert reply["id"] == 2 and reply["error"]["code"] == ErrorCode.OUT_OF_ORDER
        assert "no setup" in reply["error"]["message"]
        reply = await raw_exchange(
            reader, writer, b'{"jsonrpc":"2.0","id":3,"method":"getAISetupPiece","params":{"square":"A1"}}'
        )
        assert reply["error"]["code"] == ErrorCode.OUT_OF_ORDER
        # still usable: a proper call gets its result
        colour = b'{"jsonrpc":"2.0","id":4,"method":"setGameOption","params":{"option":"colour","value":"red"}}'
        reply = await raw_exchange(reader, writer, colour)
        assert reply == {"jsonrpc": "2.0", "id": 4, "result": {}}
        reply = await raw_exchange(reader, writer, b'{"jsonrpc":"2.0","id":5,"method":"createAISetup","params":{}}')
        assert reply == {"jsonrpc": "2.0", "id": 5, "result": {}}
        reply = await raw_exchange(
            reader, writer, b'{"jsonrpc":"2.0","id":6,"method":"getAISetupPiece","params":{"square":"A1"}}'
        )
        assert reply["result"]["rank"] in {r.label for r in Rank}
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


async def test_host_refuses_wrong_versions_and_tokens_and_a_second_hello() -> None:
    host = Host(HostSettings(tokens=frozenset({"sesame"})))
    port = await host.start()
    try:
        async def hello(**params: Any) -> dict[str, Any]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            message = {"name": "t", "version": "0", "protocol": PROTOCOL_VERSION, **params}
            line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hello", "params": message}).encode()
            reply = await raw_exchange(reader, writer, line)
            if "result" in reply:
                again = await raw_exchange(reader, writer, line.replace(b'"id": 1', b'"id": 2'))
                reply["again"] = again
            writer.close()
            return reply

        assert (await hello(protocol="2.0", token="sesame"))["error"]["code"] == ErrorCode.UNSUPPORTED_VERSION
        assert (await hello(token="guess"))["error"]["code"] == ErrorCode.AUTH_FAILED
        assert (await hello())["error"]["code"] == ErrorCode.AUTH_FAILED
        welcome = await hello(token="sesame", protocol="1.7")  # minor versions talk to each other
        assert welcome["result"]["protocol"] == PROTOCOL_VERSION
        assert welcome["again"]["error"]["code"] == ErrorCode.OUT_OF_ORDER
    finally:
        await host.close()


# --- the TCP adapter --------------------------------------------------------------------------------------


def test_backoff_is_jittered_exponential_and_capped() -> None:
    delays = backoff_delays(base=0.1, cap=2.0, rng=random.Random(5))
    values = [next(delays) for _ in range(40)]
    assert all(0 <= v <= 2.0 for v in values)
    assert all(v <= 0.1 * 2**i for i, v in enumerate(values[:5]))
    assert len({round(v, 6) for v in values}) > 30  # jittered, not a fixed ladder
    assert max(values[10:]) > 1.0  # grows towards the cap


async def test_connect_with_backoff_waits_for_a_late_host() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(errors.ConnectFailed, match="after 3 attempts"):
        await connect_with_backoff("127.0.0.1", port, attempts=3, base_delay=0.01, max_delay=0.02)

    async def open_later() -> asyncio.Server:
        await asyncio.sleep(0.2)
        return await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", port)

    late = asyncio.create_task(open_later())
    channel = await connect_with_backoff("127.0.0.1", port, attempts=100, base_delay=0.02, max_delay=0.05)
    assert channel.peer.endswith(f":{port}")
    await channel.close()
    server = await late
    server.close()
    await server.wait_closed()


async def test_a_peer_that_stops_reading_cannot_stall_a_sender() -> None:
    def never_read(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        transport = writer.transport
        assert isinstance(transport, asyncio.ReadTransport)
        transport.pause_reading()

    server = await asyncio.start_server(never_read, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    channel = await open_channel("127.0.0.1", port, write_timeout=0.2)
    channel._writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    endpoint = Endpoint(channel, host_codec())
    with pytest.raises(errors.ConnectionClosed):
        reason = GoodbyeParams(reason="x" * 60_000)
        for _ in range(100_000):
            await endpoint.notify("goodbye", reason)
    assert endpoint.closed
    server.close()


def test_parse_address() -> None:
    assert parse_address("127.0.0.1:7575") == ("127.0.0.1", 7575)
    assert parse_address("7575") == ("127.0.0.1", 7575)
    assert parse_address("[::1]:80") == ("::1", 80)
    with pytest.raises(ValueError):
        parse_address("host:port")
    with pytest.raises(ValueError):
        parse_address("host:70000")


def test_notifications_take_fields_a_later_minor_version_adds() -> None:
    line = (b'{"jsonrpc":"2.0","method":"goodbye","params":{"reason":"done","reconnectAfter":30}}\n'
            b'{"jsonrpc":"2.0","id":1,"method":"getAIMove","params":{"ply":3,"reconnectAfter":30}}\n')
    goodbye, move = bot_codec().feed(line)
    assert goodbye == IncomingNotification("goodbye", GoodbyeParams(reason="done"))
    assert isinstance(move, InvalidMessage) and move.error.code == ErrorCode.INVALID_PARAMS  # requests stay strict


async def test_a_closed_tcp_channel_refuses_to_send_with_a_connection_error() -> None:
    """A goodbye sent on a connection that just closed is a ConnectionError (the endpoint's ConnectionClosed),
    never the event loop's RuntimeError about a closed transport, which escaped as a traceback."""
    accepted: list[Any] = []

    async def on_channel(channel: Any) -> None:
        accepted.append(channel)
        await asyncio.sleep(0.2)

    server = await serve("127.0.0.1", 0, on_channel)
    port = server.sockets[0].getsockname()[1]
    try:
        channel = await open_channel("127.0.0.1", port)
        await channel.close()
        with pytest.raises(ConnectionError):
            await channel.send(b"{}\n")
        endpoint = Endpoint(channel, bot_codec())
        with pytest.raises(errors.ConnectionClosed):
            await endpoint.notify("goodbye", GoodbyeParams(reason="bye"))
    finally:
        server.close()
        await server.wait_closed()


# --- bounds: the line limit, and what we repeat of a peer's text (protocol/limits.py) ---------------------------


def compact(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"))


def test_the_line_limit_counts_the_newline() -> None:
    """docs/protocol.md: a line is at most max_line bytes, its newline included (65 536 by default)."""
    for split in (False, True):  # the line in one chunk, or its newline in a chunk of its own
        codec = bot_codec()
        head = b'{"jsonrpc":"2.0","id":1,"method":"createAISetup","params":{}'
        fits = head + b" " * (DEFAULT_MAX_LINE - 1 - len(head) - 1) + b"}"  # max_line - 1 bytes + the newline
        chunks = [fits, b"\n"] if split else [fits + b"\n"]
        expected = [IncomingRequest(1, "createAISetup", CreateAISetupParams())]
        assert [e for c in chunks for e in codec.feed(c)] == expected
        over = head + b" " * (DEFAULT_MAX_LINE - len(head) - 1) + b"}"  # max_line bytes + the newline
        chunks = [over, b"\n"] if split else [over + b"\n"]
        [event] = [e for c in chunks for e in codec.feed(c)]
        assert isinstance(event, InvalidMessage) and event.error.code == ErrorCode.LINE_TOO_LONG


def test_a_peers_text_is_clipped_before_it_is_repeated() -> None:
    """A result with 6,000 unknown keys, an error of 65 KB, a made-up method name of 60 KB: what we keep of
    each (and so every answer, log line and forfeit detail made of it) is PEER_TEXT_MAX characters."""
    host = host_codec()
    request_id, _ = host.request("getAIMove", GetAIMoveParams(ply=0))
    extra = {f"k{i}": 0 for i in range(6000)}
    line = compact({"jsonrpc": "2.0", "id": request_id, "result": {"from": "A4", "to": "A5", **extra}})
    [bad] = host.feed(line.encode() + b"\n")
    assert isinstance(bad, BadResult) and len(bad.detail) <= PEER_TEXT_MAX and "characters in all" in bad.detail
    request_id, _ = host.request("getAIMove", GetAIMoveParams(ply=0))
    line = compact({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32603, "message": "e" * 65_000}})
    [error] = host.feed(line.encode() + b"\n")
    assert isinstance(error, IncomingError) and len(error.error.message) <= PEER_TEXT_MAX
    bot = bot_codec()
    line = compact({"jsonrpc": "2.0", "id": 1, "method": "m" * 60_000})
    [unknown] = bot.feed(line.encode() + b"\n")
    assert isinstance(unknown, InvalidMessage) and len(unknown.error.message) <= PEER_TEXT_MAX
    line = compact({"jsonrpc": "2.0", "id": 1, "method": "getAIMove", "params": {"ply": 0, **extra}})
    [invalid_params] = bot.feed(line.encode() + b"\n")
    assert isinstance(invalid_params, InvalidMessage) and invalid_params.error.code == ErrorCode.INVALID_PARAMS
    assert len(invalid_params.error.message) <= PEER_TEXT_MAX
    # an id is repeated in the answer: a long one is refused (answered with id null)
    [long_id] = bot.feed(compact({"jsonrpc": "2.0", "id": "i" * 60_000, "method": "createAISetup"}).encode() + b"\n")
    assert isinstance(long_id, InvalidMessage) and long_id.id is None and long_id.reply


# Texts of any length up to 100,000 characters, lone surrogates and control characters among them (a plain
# st.text rarely makes a long one).
any_text = st.one_of(
    st.text(st.characters(exclude_categories=())),
    st.builds(lambda part, times: part * times, st.text(st.characters(exclude_categories=()), min_size=1, max_size=5),
              st.integers(1, 20_000)),
)


@given(
    message=any_text,
    request_id=st.one_of(st.none(), st.integers(), st.text(max_size=ID_MAX)),
    data=st.one_of(st.none(), any_text),
    max_line=st.sampled_from([MIN_MAX_LINE, DEFAULT_MAX_LINE]),
)
@settings(max_examples=60, deadline=None)
def test_an_error_answer_always_fits_the_line(
    message: str, request_id: int | str | None, data: str | None, max_line: int
) -> None:
    """docs/protocol.md: an error never closes the connection; so its answer is always sent, and fits."""
    line = bot_codec(max_line=max_line).error_bytes(request_id, errors.InternalError(message, data=data))
    assert len(line) <= max_line and line.endswith(b"\n")
    assert json.loads(line)["error"]["code"] == ErrorCode.INTERNAL_ERROR


@given(detail=any_text, reason=any_text)
@settings(max_examples=40, deadline=None)
def test_every_message_with_free_text_fits_the_smallest_line_bound(detail: str, reason: str) -> None:
    """What the host sends with text that may repeat a peer's (gameOver's detail, illegalSetup's reason,
    goodbye's reason) is clipped when made: it fits MIN_MAX_LINE whatever the text (the largest setups too)."""
    host = host_codec(max_line=MIN_MAX_LINE)
    setup = {Square(col, row): Rank.LIEUTENANT for col in range(12) for row in range(12)}
    over = GameOverParams(game_id="r" * 128, winner=Side.RED, reason="forfeit_illegal_setup", plies=0, red_score=6,
                          blue_score=0, red_setup=setup, blue_setup=setup, detail=detail)
    assert len(host.notification("gameOver", over)) <= MIN_MAX_LINE
    host.request("illegalSetup", IllegalSetupParams(reason=reason, attempts_left=1))
    host.notification("goodbye", GoodbyeParams(reason=reason))


def test_clip_and_the_budget() -> None:
    assert clip("short", 10) == "short"
    clipped = clip("x" * 1000, 100)
    assert len(clipped) == 100 and clipped.endswith("... (1000 characters in all)")
    budget = Budget(Allowance(bytes=100, messages=3, errors=2, log_lines=1))
    assert budget.spend(bytes=100, messages=1) is None
    assert budget.spend(bytes=1) == "sent more than 100 bytes before hello"
    budget = Budget(Allowance(bytes=100, messages=3, errors=2, log_lines=1))
    assert budget.spend(errors=2, messages=2) is None and budget.spend(errors=1) == "sent more than 2 invalid " \
        "messages before hello"
    budget.lift()  # welcomed: no more bounds but the log's
    assert budget.spend(bytes=10**9, messages=10**6, errors=10**6) is None
    assert budget.may_log() and not budget.may_log() and budget.unlogged == 1


async def test_a_stranger_over_its_budget_is_dropped_after_its_allowance_of_answers() -> None:
    host_end, peer_end = memory_pipe()
    endpoint = Endpoint(host_end, host_codec(), budget=Budget(Allowance(errors=3)))
    serving = asyncio.create_task(endpoint.run())
    await peer_end.send(b"junk\n" * 10_000)
    answers = []
    while data := await asyncio.wait_for(peer_end.receive(), 5):
        answers += data.splitlines()
    await asyncio.wait_for(serving, 5)
    assert len(answers) == 3 and endpoint.close_reason == "dropped: sent more than 3 invalid messages before hello"
