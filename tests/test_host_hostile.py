"""Hostile peers against a real ``perspecto host`` and a real ``perspecto bot`` (issue 31, docs/host.md's threat
model): a bot whose words would make an outgoing message too long, strangers flooding the port, error answers
over the line bound, escape codes in names, bad option values, the line bound's last byte and CONNECT on the
web view. Each test drives a real process over a real socket, where these defects were seen."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bot.commands.host import standings_table
from bot.commands.results import results_table, setups_table
from bot.daemon.opponent_store import OpponentStore
from bot.host.referee import GameResult, Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from protocol.codec import DEFAULT_MAX_LINE
from protocol.errors import ErrorCode
from protocol.limits import Allowance
from protocol.messages import PROTOCOL_VERSION
from protocol.tcp import TcpChannel, serve
from tests.bots.raw_bot import legal_setup
from tests.mqtt_broker import BotProcesses
from tests.test_host_signals import HostProcess, MemoryBot, connected, until, until_state

REPO = Path(__file__).resolve().parents[1]
Answer = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


class RawPeer:
    """One TCP connection speaking JSON lines by hand, so it can send what no well-behaved peer would."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int) -> RawPeer:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=4 * DEFAULT_MAX_LINE)
        return cls(reader, writer)

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def send_json(self, message: dict[str, Any]) -> None:
        await self.send(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    async def receive(self, timeout: float = 10.0) -> dict[str, Any] | None:
        """The next message; None at the end of the stream."""
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        return json.loads(line) if line else None

    async def hello(self, token: str, name: str = "hostile") -> dict[str, Any]:
        await self.send_json({"jsonrpc": "2.0", "id": "h", "method": "hello", "params": {
            "name": name, "version": "1", "protocol": PROTOCOL_VERSION, "token": token}})
        answer = await self.receive()
        assert answer is not None and "result" in answer, answer
        return answer

    async def serve(self, answer: Answer) -> None:
        """Answer the host's calls with ``answer(method, params)`` (a result, or an ``error`` object)."""
        while (message := await self.receive(timeout=120)) is not None:
            if "id" not in message or "method" not in message:
                continue  # a notification (gameOver, goodbye), or an answer
            reply = await answer(message["method"], message.get("params", {}))
            key = "error" if "code" in reply else "result"
            await self.send_json({"jsonrpc": "2.0", "id": message["id"], key: reply})

    def close(self) -> None:
        self.writer.close()


async def play_hostile_game(host: HostProcess, bots: BotProcesses, answer: Answer) -> dict[str, Any]:
    """A real bot against a raw peer that answers with ``answer``; the host plays one game and stops. Returns
    the standings file, after checking that the game left its summary line, its record and exit 0."""
    await host.start("--token", "honest", "--token", "hostile", "--games-per-pairing", "1", "--max-games", "1",
                     "--move-time-max", "2", "--move-time-average", "0.2")
    await bots.start("honest", "--connect", f"127.0.0.1:{host.port}")
    await until_state(bots, "honest", "idle")
    peer = await RawPeer.connect(host.port)
    try:
        await peer.hello("hostile")
        serving = asyncio.create_task(peer.serve(answer))
        assert await host.exit_code(timeout=90) == 0, host.stderr[-3000:]
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, TimeoutError):
            await serving
    finally:
        peer.close()
    [path] = (host.records / "standings").glob("*.json")
    document = json.loads(path.read_text())
    assert document["games"] == 1 and document["final"] is True
    [game] = document["results"]
    assert game["record"] is not None and Path(game["record"]).is_file()
    assert game["game_id"] in host.out  # the summary line
    return dict(game)


@pytest.mark.long
async def test_a_65_kb_error_in_a_setup_costs_the_hostile_bot_its_game_not_the_game_its_result(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    """Its error goes into illegalSetup's reason: clipped, the game ends in its forfeit, and is recorded."""
    async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "getAISetupPiece":
            return {"code": -32603, "message": "x" * 65_000}
        return {}

    game = await play_hostile_game(host_process, bots, answer)
    hostile = "red" if game["red"] == "hostile" else "blue"
    assert game["reason"] == "forfeit_illegal_setup" and game["scores"][hostile] == 0
    assert len(game["detail"]) < 3000


@pytest.mark.long
async def test_a_move_with_6000_unknown_keys_costs_the_hostile_bot_its_game_not_the_game_its_result(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    """The bad result's validation text (one line a key) goes into gameOver's detail: clipped, sent, recorded;
    the honest bot hears gameOver and is free again."""
    colour = {"value": "red"}

    async def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "setGameOption" and params.get("option") == "colour":
            colour["value"] = params["value"]
        if method == "getAISetupPiece":
            return {"rank": legal_setup(colour["value"])[params["square"]]}
        if method == "getAIMove":
            return {"from": "A4", "to": "A5", **{f"k{i}": 0 for i in range(6000)}}
        return {}

    game = await play_hostile_game(host_process, bots, answer)
    hostile = "red" if game["red"] == "hostile" else "blue"
    assert game["reason"] == "forfeit_illegal_move" and game["scores"][hostile] == 0
    assert len(game["detail"]) < 3000
    over = bots.events("honest", "bot.game_over")
    assert over and over[-1].get("game") == game["game_id"], over


async def test_a_host_bug_in_one_game_ends_it_adjourned_recorded_and_told_and_the_lobby_plays_on(
    tmp_path: Path,
) -> None:
    """Whatever fails inside a game task (here the game's own move observer), the game ends with a result:
    adjourned, in the results and the records, gameOver to both bots, and the lobby's next game is played."""
    host = Host(HostSettings(move_limit=40, move_time_max=2.0, move_time_average=0.5, grace=0.3, call_timeout=3.0,
                             records_dir=tmp_path / "records"))
    await host.start()
    bots: list[MemoryBot] = []
    try:
        red, blue = await connected(host, bots, "a", "b")

        async def broken(game: Game, played: MoveResult | None) -> None:
            if game.ply == 3:
                raise RuntimeError("a bug of the host's")

        result = await asyncio.wait_for(host.play_game(red, blue, on_move=broken), 60)
        assert result.adjourned and "a bug of the host's" in (result.detail or "") and result.plies == 3
        assert host.results == [result] and result.record_path is not None and result.record_path.is_file()
        await until(lambda: all(b.client.results for b in bots))
        host.release(red)
        host.release(blue)
        seen: list[GameResult] = []

        def failing_report(result: GameResult) -> None:  # the caller's bug (saving, printing) in every report
            seen.append(result)
            raise OSError("cannot print")

        lobby = await asyncio.wait_for(host.serve_lobby(games_per_pairing=1, max_games=2, on_result=failing_report),
                                       120)
        assert len(seen) == 2 and len(lobby) == 3
    finally:
        for bot in bots:
            await bot.stop()
        await host.close()


# --- strangers ---------------------------------------------------------------------------------------------


async def test_junk_from_strangers_is_dropped_within_its_budget_and_costs_a_few_log_lines(
    host_process: HostProcess,
) -> None:
    """Five connections with no token each send 200 KB of junk lines: each gets at most its allowance of
    answers, then the host hangs up; the host's log holds a few lines per connection, not one per line."""
    await host_process.start("--token", "secret", "--log-level", "info")
    junk = b"junk\n" * 40_000
    allowance = Allowance()

    async def flood() -> int:
        peer = await RawPeer.connect(host_process.port)
        with contextlib.suppress(ConnectionError):
            await peer.send(junk)
        answers = 0
        with contextlib.suppress(ConnectionError):
            while await peer.receive(timeout=20) is not None:
                answers += 1
        peer.close()
        return answers

    answers = await asyncio.wait_for(asyncio.gather(*(flood() for _ in range(5))), 60)
    assert all(n <= allowance.errors for n in answers), answers
    # still serving: a bot with the token is welcomed
    peer = await RawPeer.connect(host_process.port)
    await peer.hello("secret", name="late")
    peer.close()
    host_process.send_signal(2)
    assert await host_process.exit_code() == 0
    # about a dozen lines a connection at most (invalid messages, the drop, its end), not 40,000
    assert host_process.stderr.count("\n") < 5 * 12, host_process.stderr[-3000:]


async def test_an_error_answer_over_the_line_bound_is_clipped_and_sent_by_the_host(
    host_process: HostProcess,
) -> None:
    """A hello with 5,000 unknown keys: its -32602 would exceed 64 KB; the host clips it, answers, and the
    connection stays open for a proper hello. The line bound counts the newline: 65,536 bytes and no more."""
    await host_process.start("--token", "secret")
    peer = await RawPeer.connect(host_process.port)
    try:
        line = b'{"jsonrpc":"2.0","id":1,"method":"hello","params":{}}'
        await peer.send(line[:-1] + b" " * (DEFAULT_MAX_LINE - len(line)) + b"}\n")  # 65,537 bytes
        answer = await peer.receive()
        assert answer is not None and answer["error"]["code"] == ErrorCode.LINE_TOO_LONG, answer
        params = {"name": "x", "version": "1", "protocol": PROTOCOL_VERSION, **{f"k{i}": 0 for i in range(5000)}}
        await peer.send_json({"jsonrpc": "2.0", "id": 2, "method": "hello", "params": params})
        answer = await peer.receive()
        assert answer is not None and answer["id"] == 2 and answer["error"]["code"] == ErrorCode.INVALID_PARAMS
        assert len(answer["error"]["message"]) <= 2000
        await peer.hello("secret")
    finally:
        peer.close()


async def test_an_error_answer_over_the_line_bound_is_clipped_and_sent_by_the_bot(
    tmp_path: Path, bots: BotProcesses
) -> None:
    """A host's call with 6,000 unknown keys: the real bot answers -32602 (clipped), logs it and plays on."""
    lines: asyncio.Queue[bytes] = asyncio.Queue()
    peers: list[TcpChannel] = []

    async def on_channel(channel: TcpChannel) -> None:
        peers.append(channel)
        buffer = b""
        while data := await channel.receive():
            buffer += data
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                lines.put_nowait(line)
        lines.put_nowait(b"")

    server = await serve("127.0.0.1", 0, on_channel)
    port = server.sockets[0].getsockname()[1]

    async def next_message() -> dict[str, Any]:
        line = await asyncio.wait_for(lines.get(), 60)
        assert line, "the bot hung up"
        return dict(json.loads(line))

    try:
        await bots.start("b", "--connect", f"127.0.0.1:{port}")
        hello = await next_message()
        assert hello["method"] == "hello"
        [channel] = peers
        await channel.send(json.dumps({"jsonrpc": "2.0", "id": hello["id"], "result": {
            "host": "test", "version": "1", "protocol": PROTOCOL_VERSION, "session": "s"}}).encode() + b"\n")
        keys = {f"k{i}": 0 for i in range(6000)}
        await channel.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "getAISetupPiece",
                                       "params": {"square": "A1", **keys}}, separators=(",", ":")).encode() + b"\n")
        answer = await next_message()
        assert answer["id"] == 1 and answer["error"]["code"] == ErrorCode.INVALID_PARAMS
        await channel.send(b'{"jsonrpc":"2.0","id":2,"method":"setGameOption","params":{"option":"colour",'
                           b'"value":"red"}}\n')
        assert await next_message() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert bots.events("b", "rpc.invalid_message")  # and it says why
    finally:
        server.close()
        for channel in peers:
            await channel.close()


# --- names -------------------------------------------------------------------------------------------------

HOSTILE_NAME = "\x1b]0;owned\x07\x1b[2J[red]evil[/red]\u202e"


def printed(renderable: Any) -> str:
    out = io.StringIO()
    Console(file=out, width=300, force_terminal=True, color_system=None).print(renderable)
    return out.getvalue()


def test_the_hosts_standings_show_names_safely() -> None:
    result = GameResult("g1", {Side.RED: HOSTILE_NAME, Side.BLUE: "honest"}, Side.BLUE, "flag", 10)
    text = printed(standings_table([result]))
    assert "\x1b]0;" not in text and "\x1b[2J" not in text and "\u202e" not in text
    assert "\\x1b]0;owned\\x07\\x1b[2J[red]evil[/red]\\u202e" in text


async def test_perspecto_results_shows_names_safely(tmp_path: Path) -> None:
    store_file = tmp_path / "opponents.sqlite"
    with OpponentStore(store_file) as store:
        store.record_game(HOSTILE_NAME, "win", reason="flag", setup="[bold]x\x1b[5m", plies=10, game_id="g")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "results", "--store", str(store_file), cwd=REPO,
        env={**os.environ, "COLUMNS": "300", "FORCE_COLOR": "1"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    text = out.decode()
    assert process.returncode == 0, err
    assert "\x1b]0;" not in text and "\x1b[2J" not in text and "\x1b[5m" not in text, text
    assert "[red]evil[/red]" in text and "[bold]x" in text


def test_results_tables_show_names_safely(tmp_path: Path) -> None:
    with OpponentStore(tmp_path / "o.sqlite") as store:
        store.record_game(HOSTILE_NAME, "loss", reason="flag", setup="\x1b[31m", plies=3, game_id="g")
        summaries = [store.summary(name) for name in store.opponents()]
    for table in (results_table(summaries, tmp_path), setups_table(summaries)):
        assert "\x1b]0;" not in printed(table) and "\x1b[31m" not in printed(table)


# --- options -----------------------------------------------------------------------------------------------


async def run_cli(*args: str, timeout: float = 60.0) -> tuple[int | None, str]:
    """Run ``perspecto ARGS``; a process still running after ``timeout`` is killed (returncode None)."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=REPO, env={**os.environ, "COLUMNS": "300"},
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None, ""
    return process.returncode, out.decode()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("host", "--listen", "127.0.0.1:0", "--games-per-pairing", "0"), "--games-per-pairing must be 1 or more"),
        (("host", "--listen", "127.0.0.1:0", "--max-games", "-1"), "--max-games must be 1 or more"),
        (("host", "--listen", "127.0.0.1:0", "--move-time-max", "2", "--move-time-average", "5"),
         "--move-time-average (5 s) must not exceed --move-time-max (2 s)"),
        (("host", "--listen", "127.0.0.1:0", "--move-time-max", "5000", "--move-time-average", "1"),
         "move_time_max must be at most 3600 s"),
        (("bot", "--connect", "127.0.0.1:9", "--shutdown-grace", "-5"), "--shutdown-grace must be 0 or more"),
        (("bot", "--connect", "127.0.0.1:9", "--name", "n" * 65), "name must be 1 to 64 characters, not 65"),
    ],
    ids=["games-per-pairing", "max-games", "average-over-max", "move-time-max", "shutdown-grace", "name"],
)
async def test_bad_option_values_get_a_clear_error_and_exit_2(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    code, out = await run_cli(*args, "--state-dir" if args[0] == "bot" else "--records", str(tmp_path), timeout=30)
    assert code == 2, out[-2000:]
    assert says in " ".join(out.split()), out[-2000:]
    assert "Traceback" not in out


# --- the web view ------------------------------------------------------------------------------------------


async def test_connect_on_the_web_view_gets_405(host_process: HostProcess) -> None:
    await host_process.start("--web", "127.0.0.1:0")
    line = await host_process.line_with("http://127.0.0.1:")
    port = int(line.split("http://127.0.0.1:")[1].split("/")[0].split()[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for request in (b"CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
                        b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
                        b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"):
            writer.write(request)
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 10)
            assert status.split()[1] == b"405", (request, status)
            while (header := await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            await reader.readexactly(length)
    finally:
        writer.close()

