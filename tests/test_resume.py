"""Resuming a game (docs/mqtt.md): the journal, its replay, the resume handshake, and the host's side of it.

Most tests run the whole stack in one event loop, the host and the bot daemons joined by in-memory pipes,
so that a connection can be failed at an exact point; the last one kills a real bot process over TCP.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import stat
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.daemon.journal import GameJournal, JournalEntry, JournalError, ResumableHandler, read_finished, replay
from bot.daemon.service import BotDaemon, DaemonOptions
from bot.host.referee import BotSession, GameResult, Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from protocol import errors
from protocol.codec import InvalidMessage, host_codec
from protocol.endpoint import MemoryChannel, memory_pipe
from protocol.messages import (
    PROTOCOL_VERSION,
    RESUME_FEATURE,
    GetAIMoveParams,
    HelloParams,
    HelloResult,
    MoveModel,
)
from tests.helpers import ChannelWrapper
from tests.mqtt_broker import BotProcesses, journal_moves

NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


class DroppingChannel(ChannelWrapper):
    """The bot's end of a pipe that breaks as the bot sends the answer ``breaks_on`` picks: that answer is
    lost, as when a connection dies just after the bot wrote it."""

    def __init__(self, inner: MemoryChannel, breaks_on: Callable[[bytes], bool]) -> None:
        super().__init__(inner)
        self.breaks_on = breaks_on
        self.dropped: list[bytes] = []

    async def send(self, data: bytes) -> None:
        if self.breaks_on(data):
            self.dropped.append(data)
            await self.inner.close()
            raise ConnectionResetError("the connection broke as the answer went out")
        await self.inner.send(data)


class Stack:
    """A host and bot daemons in this event loop, each bot connection an in-memory pipe."""

    def __init__(self, host: Host, tmp_path: Path) -> None:
        self.host = host
        self.tmp_path = tmp_path
        self.daemons: dict[str, BotDaemon] = {}
        self.tasks: dict[str, asyncio.Task[int]] = {}
        self.connections: dict[str, int] = {}
        self.wrap: dict[str, Callable[[MemoryChannel], Any]] = {}  # token -> wrapper for its next connection

    def journal(self, token: str) -> GameJournal:
        return GameJournal(self.tmp_path / f"state-{token}" / "journal", f"bot-{token}")

    def start(self, token: str, seed: int, *, journal: bool = True) -> BotDaemon:
        async def connect() -> Any:
            bot_end, host_end = memory_pipe()
            self.host._spawn(self.host._serve_connection(host_end))
            self.connections[token] = self.connections.get(token, 0) + 1
            wrap = self.wrap.pop(token, None)
            return wrap(bot_end) if wrap is not None else bot_end

        client = BotClient(get_profile("random"), seed=seed)
        hello = HelloParams(name=f"bot-{token}", version="test", protocol=PROTOCOL_VERSION, token=token)
        daemon = BotDaemon(client, hello, connect, transport="memory", journal=self.journal(token) if journal else None,
                           options=DaemonOptions(handle_signals=False, hello_timeout=5.0))
        self.daemons[token] = daemon
        self.tasks[token] = asyncio.create_task(daemon.run())
        return daemon

    async def claim(self, *tokens: str) -> list[BotSession]:
        return [await self.host.wait_for_bot(token=token, timeout=10) for token in tokens]

    async def stop(self) -> None:
        for daemon in self.daemons.values():
            daemon.request_stop()  # says goodbye itself, wherever it is
        for task in self.tasks.values():
            try:
                async with asyncio.timeout(5):
                    await task
            except TimeoutError:
                task.cancel()


@pytest.fixture
async def stack(tmp_path: Path) -> AsyncIterator[Stack]:
    host = Host(HostSettings(move_limit=200, move_time_max=2.0, grace=0.3, call_timeout=3.0,
                             records_dir=tmp_path / "records", resume_grace=5.0))
    await host.start()
    instance = Stack(host, tmp_path)
    yield instance
    await instance.stop()
    await host.close()


def at_ply(ply: int, action: Callable[[Game], Any]) -> Callable[[Game, MoveResult | None], Any]:
    """An on_move observer that runs ``action`` once, when the game reaches ``ply``."""
    done = False

    async def observe(game: Game, played: MoveResult | None) -> None:
        nonlocal done
        if not done and game.ply >= ply:
            done = True
            outcome = action(game)
            if asyncio.iscoroutine(outcome):
                await outcome

    return observe


def finished_journal(stack: Stack, token: str, game_id: str) -> Path:
    [path] = (stack.tmp_path / f"state-{token}" / "journal" / "done").glob(f"{game_id}-*.jsonl")
    return path


def assert_played_through(result: GameResult, stack: Stack, *tokens: str) -> None:
    assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
    assert result.record is not None
    recorded = [m.move for m in result.record.moves]
    for token in tokens:
        assert journal_moves(finished_journal(stack, token, result.game_id)) == recorded


async def settle(stack: Stack, *tokens: str) -> None:
    """Let gameOver reach the bots (the host does not wait for notifications to be read)."""
    for _ in range(100):
        if all(not stack.daemons[t].client.in_game for t in tokens):
            return
        await asyncio.sleep(0.02)


# --- the handshake --------------------------------------------------------------------------------------


def test_a_plain_hello_is_the_1_0_message() -> None:
    plain = HelloParams(name="b", version="1", protocol="1.0")
    assert plain.to_wire() == {"name": "b", "version": "1", "protocol": "1.0", "token": None}
    answer = HelloResult(host="h", version="1", protocol="1.0", session="s")
    assert set(answer.to_wire()) == {"host", "version", "protocol", "session"}
    resuming = HelloParams(name="b", version="1", protocol="1.0", features=[RESUME_FEATURE], resume_game="g-1",
                           resume_calls=12, resume_key="k3y")
    assert resuming.to_wire()["resumeGame"] == "g-1" and resuming.to_wire()["resumeCalls"] == 12
    assert resuming.to_wire()["resumeKey"] == "k3y"
    keyed = HelloResult(host="h", version="1", protocol="1.0", session="s", resume_key="k3y")
    assert keyed.to_wire()["resumeKey"] == "k3y"


@pytest.mark.parametrize("params, problem", [
    ({"resumeGame": "g"}, "come together"),
    ({"resumeCalls": 3}, "come together"),
    ({"resumeGame": "g", "resumeCalls": 3}, "resumeKey come together"),  # the name alone proves nothing
    ({"resumeKey": "k"}, "come together"),
    ({"resumeGame": "g", "resumeCalls": 1, "resumeKey": ""}, "resumeKey"),
    ({"resumeGame": "g", "resumeCalls": 1, "resumeKey": "k" * 129}, "resumeKey"),
    ({"resumeGame": "g", "resumeCalls": -1}, "resumeCalls"),
    ({"resumeGame": "", "resumeCalls": 1}, "resumeGame"),
    ({"features": "resume"}, "features"),
])
def test_resume_fields_are_validated(params: dict[str, Any], problem: str) -> None:
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "hello",
                       "params": {"name": "b", "version": "1", "protocol": "1.0", **params}}).encode() + b"\n"
    [event] = host_codec().feed(line)
    assert isinstance(event, InvalidMessage) and event.error.code == errors.ErrorCode.INVALID_PARAMS
    assert problem in event.error.message


async def say_hello(host: Host, **params: Any) -> dict[str, Any]:
    """The host's answer to one hello on a fresh in-memory connection (raw lines, as any peer could send)."""
    bot_end, host_end = memory_pipe()
    host._spawn(host._serve_connection(host_end))
    hello = {"jsonrpc": "2.0", "id": 1, "method": "hello", "params": params}
    await bot_end.send(json.dumps(hello).encode() + b"\n")
    answer: dict[str, Any] = json.loads(await asyncio.wait_for(bot_end.receive(), 5))
    return answer


async def test_the_host_gives_each_session_that_can_resume_its_own_key() -> None:
    host = Host(HostSettings())
    try:
        base = {"name": "b", "version": "1", "protocol": "1.0"}
        plain = await say_hello(host, **base)
        assert set(plain["result"]) == {"host", "version", "protocol", "session"}  # 1.0, no key
        first = (await say_hello(host, **base, features=[RESUME_FEATURE]))["result"]
        second = (await say_hello(host, **base, features=[RESUME_FEATURE]))["result"]
        assert len(first["resumeKey"]) >= 40 and first["resumeKey"] != second["resumeKey"]
        keys = {s.id: s.resume_key for s in host.sessions.values()}
        assert keys[first["session"]] == first["resumeKey"] and keys[plain["result"]["session"]] is None
        # a game nobody plays: not resumed, whatever the key; the connection becomes a session of its own
        late = await say_hello(host, **base, features=[RESUME_FEATURE], resumeGame="g-0", resumeCalls=3,
                               resumeKey=first["resumeKey"])
        assert late["result"]["resumed"] is False and late["result"]["resumeKey"] not in (None, first["resumeKey"])
    finally:
        await host.close()


# --- the journal ------------------------------------------------------------------------------------------


def test_the_journal_keeps_the_resume_key_for_its_owner_only(tmp_path: Path) -> None:
    journal = GameJournal(tmp_path, "bot")
    journal.begin("s3cret-key")
    journal.record("getAIMove", GetAIMoveParams(ply=0), error=errors.OutOfOrder("no setup yet"))
    journal.close()
    assert stat.S_IMODE(journal.path.stat().st_mode) == 0o600
    again = GameJournal(tmp_path, "bot")
    again.load()
    assert again.open and again.resume_key == "s3cret-key"
    handler = ResumableHandler(BotClient(get_profile("random"), seed=1), again)
    assert handler.resume_fields("g-1") is None  # nothing restored yet: no key to present
    handler.restored(again.entries)
    assert handler.resume_fields("g-1") == {"resume_game": "g-1", "resume_calls": 1, "resume_key": "s3cret-key"}
    assert handler.resume_fields(None) is None
    # a journal written before keys existed: the game cannot be resumed, so none is asked for
    keyless = GameJournal(tmp_path / "old", "bot")
    keyless.begin()
    keyless.close()
    keyless.load()
    assert keyless.resume_key is None
    assert ResumableHandler(BotClient(get_profile("random"), seed=1), keyless).resume_fields("g-1") is None


async def test_the_journal_replays_a_game_into_a_fresh_client(stack: Stack, tmp_path: Path) -> None:
    """At ply 50 the journal is copied and the bot's view of the game noted; replayed into a new client,
    the copy gives the same view: pieces, what is known of the opponent's, the ply, the side to move."""
    stack.start("a", seed=1)
    stack.start("b", seed=2)
    red, blue = await stack.claim("a", "b")
    snapshot: dict[str, Any] = {}

    def take(game: Game) -> None:
        client = stack.daemons["a"].client
        shutil.copy(stack.journal("a").path, tmp_path / "copy.jsonl")
        assert client.game is not None
        snapshot.update(ply=client.game.ply, pieces=client.game.pieces(), setup=dict(client.own_setup),
                        opponent=client.opponent_pieces(), legal=client.game.legal_moves())

    result = await stack.host.play_game(red, blue, on_move=at_ply(50, take))
    assert result.plies > 50
    copy = GameJournal(tmp_path / "replayed", "bot-a")
    copy.directory.mkdir(parents=True)
    shutil.copy(tmp_path / "copy.jsonl", copy.path)
    copy.load()
    assert copy.open and copy.game_id == result.game_id
    fresh = BotClient(get_profile("random"), seed=99)  # another seed: the setup must come from the journal
    await replay(copy.entries, fresh)
    assert fresh.game is not None and fresh.game.ply == snapshot["ply"] == 50
    assert fresh.own_setup == snapshot["setup"]
    assert fresh.game.pieces() == snapshot["pieces"]
    assert fresh.opponent_pieces() == snapshot["opponent"]
    assert fresh.game.legal_moves() == snapshot["legal"]
    assert fresh.pending_move is None and fresh.colour == Side.RED


def test_a_torn_last_line_is_ignored_and_one_process_holds_the_journal(tmp_path: Path) -> None:
    journal = GameJournal(tmp_path, "bot")
    assert journal.lock()
    journal.begin()
    journal.record("getAIMove", GetAIMoveParams(ply=0), error=errors.OutOfOrder("no setup yet"))
    journal.close()
    with open(journal.path, "a") as out:
        out.write('{"n":2,"method":"getAIM')  # killed in the middle of a write
    again = GameJournal(tmp_path, "bot")
    assert again.lock()
    again.load()
    assert [e.n for e in again.entries] == [1] and again.entries[0].error == {"code": -32002, "message": "no setup yet"}
    assert not GameJournal(tmp_path, "bot").lock()  # the same bot id in a second live process
    with open(again.path, "a") as out:
        out.write('{"n":5,"method":"getAIMove","params":{"ply":1},"result":{}}\n{"n":6}\n')
    with pytest.raises(JournalError, match="call 5 after 1"):
        again.load()
    again.close()


async def test_a_call_sent_again_is_answered_from_memory_not_played_twice() -> None:
    client = BotClient(get_profile("random"), seed=3)
    handler = ResumableHandler(client)
    entry_params = GetAIMoveParams(ply=0)
    # a journal says the last call was getAIMove at ply 0, answered A4-A5; the host saw one answer fewer
    handler.calls, handler.last = 3, JournalEntry(3, "getAIMove", {"ply": 0}, result={"from": "A4", "to": "A5"})
    handler.expect_resend(2)
    answer = await handler.handle_request("getAIMove", entry_params)
    assert isinstance(answer, MoveModel) and (str(answer.frm), str(answer.to)) == ("A4", "A5")
    assert handler.resent_answers == 1 and handler.calls == 3
    handler.expect_resend(3)  # the host saw every answer: nothing to resend
    assert handler._resend is None


# --- resuming in the middle of a game -------------------------------------------------------------------


async def test_a_dropped_connection_resumes_the_game(stack: Stack) -> None:
    stack.start("a", seed=4)
    stack.start("b", seed=5)
    red, blue = await stack.claim("a", "b")
    first = red.endpoint

    async def drop(game: Game) -> None:
        await red.endpoint.close("the network failed")

    result = await stack.host.play_game(red, blue, on_move=at_ply(40, drop))
    await settle(stack, "a", "b")
    assert_played_through(result, stack, "a", "b")
    assert red.endpoint is not first and red.alive and stack.host.sessions[red.id] is red
    assert stack.daemons["a"].resumes == 1 and stack.connections["a"] == 2


async def test_an_answer_lost_on_the_way_is_given_again_from_the_journal(stack: Stack) -> None:
    """The connection dies just as the bot sends its move at ply 21: the bot has journaled the move, the host
    never saw it. Back with resumeCalls one more than the host counted, the bot answers the getAIMove the
    host sends again with the same move, from the journal, without asking its engine a second time."""
    stack.start("a", seed=6)
    stack.start("b", seed=7)
    red, blue = await stack.claim("a", "b")
    dropped: list[DroppingChannel] = []

    def arm(game: Game) -> None:
        def wrap(channel: MemoryChannel) -> DroppingChannel:
            dropping = DroppingChannel(channel, lambda data: b'"result":{"from"' in data)
            dropped.append(dropping)
            return dropping

        stack.wrap["b"] = wrap  # b's next connection is the dropping one
        stack.host._spawn(blue.endpoint.close("make b reconnect through the dropping channel"))

    result = await stack.host.play_game(red, blue, on_move=at_ply(20, arm))
    await settle(stack, "a", "b")
    assert_played_through(result, stack, "a", "b")
    [channel] = dropped
    [lost] = channel.dropped
    handler = stack.daemons["b"].handler
    assert handler.resent_answers == 1 and stack.daemons["b"].resumes == 2
    resent_move = json.loads(lost)["result"]
    journal = finished_journal(stack, "b", result.game_id).read_text().splitlines()
    moves_answered = [json.loads(line)["result"] for line in journal if '"method":"getAIMove"' in line]
    assert resent_move in moves_answered and moves_answered.count(resent_move) >= 1
    blue_moves = [m.move for m in result.record.moves if m.side == "blue"]  # type: ignore[union-attr]
    assert len(moves_answered) == len(blue_moves)  # one journaled answer per blue move: none played twice


async def test_a_resume_whose_count_does_not_fit_is_refused_and_the_game_forfeited(stack: Stack) -> None:
    stack.start("a", seed=8)
    stack.start("b", seed=9)
    red, blue = await stack.claim("a", "b")

    async def corrupt(game: Game) -> None:
        stack.daemons["a"].handler.calls -= 5  # as if the bot had lost part of its journal
        await red.endpoint.close("the network failed")

    result = await stack.host.play_game(red, blue, on_move=at_ply(30, corrupt))
    assert result.reason == "forfeit_crash" and result.forfeits == {Side.RED}
    assert "resume refused" in (result.detail or "")
    assert stack.daemons["a"].resumes == 0
    # the bot dropped the game and is a fresh, free session again
    fresh = await stack.host.wait_for_bot(token="a", timeout=5)
    assert fresh is not red
    await settle(stack, "a")
    assert not stack.daemons["a"].client.in_game


async def test_a_bot_with_the_wrong_key_is_refused_and_starts_afresh(tmp_path: Path) -> None:
    """A resume with a key that is not the seat's (its journal from another session, say) is refused to that
    connection: the seat waits out its grace and forfeits, and the bot comes back as a fresh session."""
    host = Host(HostSettings(move_limit=200, move_time_max=2.0, grace=0.3, call_timeout=3.0, resume_grace=1.0))
    await host.start()
    stack = Stack(host, tmp_path)
    try:
        stack.start("a", seed=1)
        stack.start("b", seed=2)
        red, blue = await stack.claim("a", "b")

        async def lose_the_key(game: Game) -> None:
            assert red.resume_key is not None and stack.daemons["a"].handler.resume_key == red.resume_key
            stack.daemons["a"].handler.resume_key = "not-the-key"
            await red.endpoint.close("the network failed")

        result = await host.play_game(red, blue, on_move=at_ply(30, lose_the_key))
        assert result.reason == "forfeit_crash" and result.forfeits == {Side.RED}
        assert "did not come back" in (result.detail or ""), result.detail
        fresh = await host.wait_for_bot(token="a", timeout=5)
        assert fresh is not red and fresh.resume_key not in (None, red.resume_key)
        assert stack.daemons["a"].resumes == 0 and not stack.daemons["a"].client.in_game
        _entries, end = read_finished(finished_journal(stack, "a", result.game_id))
        assert end is not None and end["end"] == "resume refused"
    finally:
        await stack.stop()
        await host.close()


async def test_without_a_resume_grace_a_dropped_bot_forfeits_at_once(tmp_path: Path) -> None:
    host = Host(HostSettings(move_limit=200, move_time_max=2.0, call_timeout=3.0))
    await host.start()
    stack = Stack(host, tmp_path)
    try:
        stack.start("a", seed=1)
        stack.start("b", seed=2)
        red, blue = await stack.claim("a", "b")
        result = await host.play_game(red, blue, on_move=at_ply(10, lambda g: red.endpoint.close("gone")))
        assert result.reason == "forfeit_crash" and result.forfeits == {Side.RED}
    finally:
        await stack.stop()
        await host.close()


# --- a real process, killed, over TCP ------------------------------------------------------------------------


@pytest.mark.long
async def test_a_bot_process_killed_mid_game_resumes_over_tcp(tmp_path: Path) -> None:
    host = Host(HostSettings(move_limit=300, move_time_max=1.0, grace=0.3, call_timeout=3.0,
                             records_dir=tmp_path / "records", resume_grace=20.0))
    port = await host.start()
    bots = BotProcesses(tmp_path / "bots")
    processes: dict[str, asyncio.subprocess.Process] = {}
    connect = ("--connect", f"127.0.0.1:{port}")
    try:
        processes["a"] = await bots.start("a", *connect, seed=11)
        processes["b"] = await bots.start("b", *connect, seed=12)
        red, blue = await asyncio.gather(*(host.wait_for_bot(token=t, timeout=30) for t in ("a", "b")))

        async def kill_and_restart(game: Game) -> None:
            processes["b"].kill()
            await processes["b"].wait()
            processes["b"] = await bots.start("b", *connect, seed=12)

        result = await host.play_game(red, blue, on_move=at_ply(60, kill_and_restart))
        assert result.reason in NORMAL_ENDS and not result.forfeits, result.summary()
        assert result.record_path is not None
        recorded = [m.move for m in GameRecord.load(result.record_path).moves]
        for token in ("a", "b"):
            assert journal_moves(await bots.finished_journal(token, result.game_id)) == recorded
        [replayed] = bots.events("b", "bot.journal_replayed")
        assert replayed["game"] == result.game_id
        # the new process presented the key its journal kept from the first one's hello
        header = json.loads((await bots.finished_journal("b", result.game_id)).read_text().splitlines()[0])
        assert header["resumeKey"] == blue.resume_key is not None
        for session in (red, blue):
            await session.goodbye("test over")
        for process in processes.values():
            assert await asyncio.wait_for(process.wait(), 15) == 0
    finally:
        await bots.stop()
        await host.close()


async def test_a_host_without_the_extension_gets_a_plain_hello() -> None:
    """A 1.0 host refuses the unknown hello fields with -32602: the bot says a plain hello instead."""
    bot_end, host_end = memory_pipe()
    hellos: list[dict[str, Any]] = []

    async def old_host() -> None:
        buffer = b""
        while len(hellos) < 2:
            buffer += await host_end.receive()
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                message = json.loads(line)
                hellos.append(message["params"])
                if set(message["params"]) - {"name", "version", "protocol", "token"}:
                    error = {"code": -32602, "message": "hello: features: Extra inputs are not permitted"}
                    reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
                else:
                    reply = {"jsonrpc": "2.0", "id": message["id"],
                             "result": {"host": "old", "version": "0", "protocol": "1.0", "session": "s"}}
                await host_end.send(json.dumps(reply).encode() + b"\n")
        await host_end.send(b'{"jsonrpc":"2.0","method":"goodbye","params":{"reason":"bye"}}\n')

    async def connect() -> Any:
        return bot_end

    serving = asyncio.create_task(old_host())
    daemon = BotDaemon(BotClient(get_profile("random"), seed=1),
                       HelloParams(name="b", version="test", protocol=PROTOCOL_VERSION), connect,
                       transport="memory", options=DaemonOptions(handle_signals=False))
    assert await asyncio.wait_for(daemon.run(), 10) == 0
    await serving
    assert hellos[0]["features"] == [RESUME_FEATURE] and "features" not in hellos[1]
