"""Protocol 1.1's ``info`` on getAIMove answers: the wire model, the codec, what the bot builds and when it
sends it, the record and the replay's printing (docs/protocol.md, The info of a move)."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from bot.commands.replay import info_lines
from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.daemon.deadline import Answer
from bot.daemon.engine_interface import RandomEngine
from bot.daemon.move_info import move_info
from bot.daemon.service import BotDaemon, DaemonOptions
from engine_ext.engine.facade import EngineChoice, EngineMove, engine_factory
from engine_ext.rules.game import Move
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.rulesets import CLASSIC, Square
from protocol.codec import BadResult, Codec, IncomingRequest, IncomingResult, bot_codec, host_codec
from protocol.endpoint import Channel, Endpoint, memory_pipe
from protocol.messages import (
    BOT_TO_HOST,
    HOST_TO_BOT,
    INFO_REASON_LENGTH,
    INFO_REASONS_MAX,
    PROTOCOL_VERSION,
    CreateAISetupParams,
    GetAIMoveParams,
    GetAIMoveResult,
    GetAISetupPieceParams,
    GoodbyeParams,
    HelloParams,
    HelloResult,
    MethodSpec,
    MoveInfo,
    MoveModel,
    SetOpponentSetupPieceParams,
    protocol_compatible,
    takes_move_info,
)
from tests.helpers import FakeHost, option

A4, A5, A6 = Square.parse("A4"), Square.parse("A5"), Square.parse("A6")
FULL_INFO = {"depth": 4, "nodes": 51234, "time": 0.81, "value": -1.5, "pv": [{"from": "A4", "to": "A5"}],
             "reasons": ["p-e-minimax to ply 4", "next best B4-B5"]}


def host_reads(answer: dict[str, Any]) -> IncomingResult | BadResult:
    """What a host's codec makes of ``answer`` sent as the result of its getAIMove call."""
    host = host_codec()
    request_id, _ = host.request("getAIMove", GetAIMoveParams(ply=0))
    line = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": answer}).encode() + b"\n"
    [event] = host.feed(line)
    assert isinstance(event, IncomingResult | BadResult)
    return event


def test_the_version_is_1_1_and_talks_to_1_0() -> None:
    assert PROTOCOL_VERSION == "1.1"
    assert protocol_compatible("1.0") and protocol_compatible("1.9") and not protocol_compatible("2.1")


@pytest.mark.parametrize(("host", "takes"), [
    ("1.0", False), ("1.1", True), ("1.7", True), ("2.1", False), ("0.9", False), ("1", False), ("x.y", False),
])
def test_only_a_host_of_1_1_or_later_gets_info(host: str, takes: bool) -> None:
    assert takes_move_info(host) is takes


def test_info_round_trips_through_both_codecs() -> None:
    sent = GetAIMoveResult.model_validate({"from": "A4", "to": "A5", "info": FULL_INFO})
    bot = bot_codec()
    [call] = bot.feed(host_codec().request("getAIMove", GetAIMoveParams(ply=0))[1])
    assert isinstance(call, IncomingRequest) and isinstance(call.params, GetAIMoveParams)
    wire = json.loads(bot.result_bytes(call.id, sent))["result"]
    assert wire == {"from": "A4", "to": "A5", "info": FULL_INFO}
    event = host_reads(wire)
    assert isinstance(event, IncomingResult) and isinstance(event.result, GetAIMoveResult)
    assert event.result == sent and event.result.info_problem is None
    assert event.result.info is not None and event.result.info.to_wire() == FULL_INFO


def test_an_answer_without_info_is_the_1_0_message() -> None:
    answer = GetAIMoveResult.of(A4, A5)
    assert answer.to_wire() == {"from": "A4", "to": "A5"}
    assert MoveModel.model_validate(answer.to_wire()) == MoveModel.of(A4, A5)  # what a 1.0 host takes
    # unknown info fields are left off; a field the engine does not know is not sent
    assert MoveInfo(time=0.5).to_wire() == {"time": 0.5}
    event = host_reads({"from": "A4", "to": "A5", "info": {"time": 1, "selDepth": 9}})
    assert isinstance(event, IncomingResult) and isinstance(event.result, GetAIMoveResult)
    assert event.result.info == MoveInfo(time=1.0) and event.result.info_problem is None


@pytest.mark.parametrize(("info", "problem"), [
    ({"depth": -1}, "info.depth: Input should be greater than or equal to 0"),
    ({"nodes": "12"}, "info.nodes: Input should be a valid integer"),
    ({"depth": True}, "info.depth: Input should be a valid integer"),
    ({"pv": [{"from": "A4"}]}, "info.pv.0.to: Field required"),
    ({"pv": [{"from": "A4", "to": "Z9"}]}, "info.pv.0.to"),
    ({"reasons": ["x" * (INFO_REASON_LENGTH + 1)]}, "info.reasons.0: String should have at most"),
    ({"reasons": ["x"] * (INFO_REASONS_MAX + 1)}, "info.reasons: List should have at most"),
    ("thinking hard", "info: Input should be a valid dictionary"),
    ([1, 2], "info: Input should be a valid dictionary"),
])
def test_a_bad_info_is_dropped_and_the_move_stands(info: Any, problem: str) -> None:
    event = host_reads({"from": "A4", "to": "A5", "info": info})
    assert isinstance(event, IncomingResult) and isinstance(event.result, GetAIMoveResult)
    assert (event.result.frm, event.result.to, event.result.info) == (A4, A5, None)
    assert event.result.info_problem is not None and event.result.info_problem.startswith(problem)


def test_a_bad_move_is_still_a_bad_result_whatever_its_info() -> None:
    assert isinstance(host_reads({"from": "A4", "info": FULL_INFO}), BadResult)
    assert isinstance(host_reads({"from": "A4", "to": "A5", "info": FULL_INFO, "score": 3}), BadResult)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_info_like = st.fixed_dictionaries({}, optional={
    "depth": _json, "nodes": _json, "time": _json, "value": _json, "pv": _json, "reasons": _json,
}) | _json


@settings(max_examples=300, deadline=None)
@given(_info_like)
def test_whatever_the_info_a_legal_move_is_never_refused(info: Any) -> None:
    event = host_reads({"from": "A4", "to": "A5", "info": info})
    assert isinstance(event, IncomingResult) and isinstance(event.result, GetAIMoveResult)
    assert (event.result.frm, event.result.to) == (A4, A5)
    assert (event.result.info is None) == (info is None or event.result.info_problem is not None)


# --- what the bot sends ------------------------------------------------------------------------------------


def _choice(move: Move, reasons: tuple[str, ...] = ("searched",)) -> EngineChoice:
    return EngineChoice(move, 2.5, 3, 700, 0.2, reasons, "time", line=(move,))


def _engine_move(choice: EngineChoice | None) -> EngineMove:
    engine = engine_factory("perspecto")({}, 1)
    engine.last_choice = choice
    return engine


def test_the_engines_choice_becomes_the_info() -> None:
    move = Move(A4, A5)
    info = move_info(Answer(move, _engine_move(_choice(move)), seconds=0.21))
    assert info is not None
    assert info.to_wire() == {"depth": 3, "nodes": 700, "time": 0.21, "value": 2.5, "pv": [{"from": "A4", "to": "A5"}],
                              "reasons": ["searched"]}


def test_reasons_are_cut_to_the_protocols_bounds_not_refused() -> None:
    move = Move(A4, A5)
    long = tuple("r" * 500 for _ in range(INFO_REASONS_MAX + 5))
    info = move_info(Answer(move, _engine_move(_choice(move, long)), seconds=0.1))
    assert info is not None and info.reasons is not None
    assert len(info.reasons) == INFO_REASONS_MAX and all(len(r) == INFO_REASON_LENGTH for r in info.reasons)


def test_a_fallback_or_an_engine_without_an_account_sends_time_and_why() -> None:
    move = Move(A4, A5)
    stale = _engine_move(_choice(Move(A5, A6)))  # its last choice was another move: not this one's account
    assert move_info(Answer(move, stale, seconds=0.3)) == MoveInfo(time=0.3)
    assert move_info(Answer(move, RandomEngine(1), seconds=0.001)) == MoveInfo(time=0.001)
    fallback = move_info(Answer(move, _engine_move(_choice(move)), fallback="no move within 1.00 s", late=True,
                                seconds=1.0))
    assert fallback == MoveInfo(time=1.0, reasons=["fallback move: no move within 1.00 s"])


@pytest.mark.parametrize("send", [False, True])
async def test_the_client_sends_info_only_when_told_the_host_takes_it(send: bool) -> None:
    client = BotClient(get_profile("perspecto"), seed=5)
    client.send_move_info = send
    host = FakeHost(client, Side.RED, seed=2, moveTimeMax=2.0, moveTimeAverage=0.2)
    game = await host.start()
    answer = await host.call("getAIMove", GetAIMoveParams(ply=0))
    assert isinstance(answer, GetAIMoveResult)
    if not send:
        assert answer.to_wire() == {"from": str(answer.frm), "to": str(answer.to)}
        return
    assert answer.info is not None
    assert answer.info.pv == [MoveModel.of(answer.frm, answer.to)]
    assert answer.info.depth is not None and answer.info.depth >= 1 and (answer.info.nodes or 0) > 0
    assert answer.info.reasons and "p-e-minimax" in answer.info.reasons[0]
    assert Move(answer.frm, answer.to) in game.legal_moves()
    client.close()


# --- the record and the replay ---------------------------------------------------------------------------


def _record(moves: list[RecordedMove]) -> GameRecord:
    return GameRecord(ruleset="classic", options={}, red=RecordedPlayer("a", {}), blue=RecordedPlayer("b", {}),
                      moves=moves, game_id="g")


def test_the_record_keeps_info_and_omits_it_when_none() -> None:
    record = _record([RecordedMove("red", "A4-A5", info=FULL_INFO), RecordedMove("blue", "A7-A6")])
    data = json.loads(record.to_json())
    assert data["moves"] == [{"side": "red", "move": "A4-A5", "info": FULL_INFO}, {"side": "blue", "move": "A7-A6"}]
    again = GameRecord.from_json(record.to_json())
    assert again.moves[0].info == FULL_INFO and again.moves[1].info is None


def test_a_record_written_before_info_still_loads() -> None:
    old = ('{"format":"perspecto-record/1","ruleset":"classic","options":{},"red":{"name":"a","setup":{}},'
           '"blue":{"name":"b","setup":{}},"moves":[{"side":"red","move":"A4-A5"},{"side":"blue","move":"A7xA6",'
           '"outcome":"x","attacker":"scout","defender":"spy"}],"result":null,"game_id":"g","started":""}')
    record = GameRecord.from_json(old)
    assert [m.info for m in record.moves] == [None, None]
    assert json.loads(record.to_json())["moves"] == json.loads(old)["moves"]


def test_the_replay_prints_info_beside_the_move() -> None:
    assert info_lines(RecordedMove("red", "A4-A5", info=FULL_INFO)) == [
        "depth 4, 51234 nodes, 0.810 s, value -1.50, line A4-A5", "p-e-minimax to ply 4", "next best B4-B5",
    ]
    assert info_lines(RecordedMove("red", "A4-A5")) == []
    assert info_lines(RecordedMove("red", "A4-A5", info={"time": 0.002})) == ["0.002 s"]
    [unreadable] = info_lines(RecordedMove("red", "A4-A5", info={"depth": "deep"}))
    assert unreadable.startswith("info unreadable: depth")


async def test_sending_info_changes_no_move() -> None:
    """The same seed plays the same moves whether the host takes info or not: building it draws nothing
    from the bot's generator."""
    moves = {}
    for send in (False, True):
        client = BotClient(get_profile("random"), seed=9)
        client.send_move_info = send
        host = FakeHost(client, Side.BLUE, seed=4)
        game = await host.start()
        for _ in range(20):
            await host.ply()
        moves[send] = [str(entry.move) for entry in game.history]
        client.close()
    assert moves[True] == moves[False]


# --- the daemon asks the host's version ---------------------------------------------------------------------


async def _first_move_through_the_daemon(host_protocol: str, *, share_thinking: bool = True) -> BaseModel:
    """The real daemon on an in-memory connection to a host that says ``host_protocol`` in its hello answer and
    reads getAIMove answers as that version does: a 1.0 host's model forbids any field beyond the move."""
    bot_end, host_end = memory_pipe()
    move_result = GetAIMoveResult if takes_move_info(host_protocol) else MoveModel
    codec = Codec(BOT_TO_HOST, {**HOST_TO_BOT, "getAIMove": MethodSpec("getAIMove", GetAIMoveParams, move_result)})

    class Greeter:
        async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
            return HelloResult(host="h", version="0", protocol=host_protocol, session="s")

        async def handle_notification(self, method: str, params: BaseModel) -> None:
            pass

    host = Endpoint(host_end, codec, Greeter())
    host_task = asyncio.create_task(host.run())
    client = BotClient(get_profile("random"), seed=2)

    async def connect() -> Channel:
        return bot_end

    daemon = BotDaemon(client, HelloParams(name="b", version="0", protocol=PROTOCOL_VERSION), connect,
                       transport="memory",
                       options=DaemonOptions(handle_signals=False, share_thinking=share_thinking))
    session = asyncio.create_task(daemon.run())
    try:
        for name, value in (("gameId", "g-1"), ("colour", "red"), ("opponent", "host")):
            await host.call("setGameOption", option(name, value), timeout=5)
        await host.call("createAISetup", CreateAISetupParams(), timeout=5)
        for square in CLASSIC.setup_squares(Side.RED):
            if not CLASSIC.is_lake(square):
                await host.call("getAISetupPiece", GetAISetupPieceParams(square=square), timeout=5)
        for square in CLASSIC.random_placement(Side.BLUE, random.Random(1)):
            await host.call("setOpponentSetupPiece", SetOpponentSetupPieceParams(square=square), timeout=5)
        answer = await host.call("getAIMove", GetAIMoveParams(ply=0), timeout=10)
        await host.notify("goodbye", GoodbyeParams(reason="done"))
        assert await asyncio.wait_for(session, 5) == 0
    finally:
        session.cancel()
        await host.close("test over")
        await asyncio.wait_for(host_task, 5)
    return answer


async def test_a_1_0_host_gets_the_plain_move() -> None:
    answer = await _first_move_through_the_daemon("1.0")  # an info would be a BadResult here
    assert type(answer) is MoveModel


async def test_a_1_1_host_gets_the_info() -> None:
    answer = await _first_move_through_the_daemon("1.1")
    assert isinstance(answer, GetAIMoveResult) and answer.info is not None and answer.info.time is not None


async def test_a_bot_that_keeps_its_thinking_private_sends_none_to_a_1_1_host() -> None:
    """identity.share_thinking = false: the engine's reasons (its fear values among them) stay with the bot."""
    answer = await _first_move_through_the_daemon("1.1", share_thinking=False)
    assert isinstance(answer, GetAIMoveResult) and answer.info is None
