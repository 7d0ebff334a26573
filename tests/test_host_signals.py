"""The host stops cleanly (docs/host.md, Stopping): on SIGTERM/SIGINT it pairs no new games, lets the games
under way finish within ``--stop-grace`` or adjourns them, says goodbye to every bot, prints and saves the
standings and exits 0; a second signal quits at once. A game that never started because a bot said goodbye
is void: neither scored nor recorded.

The first tests run the host and the bots in this event loop (bots joined by in-memory pipes), so that a
game can be adjourned or a bot can leave at an exact point; the others run ``perspecto host`` as a real
process on a free port, with real bot processes, and signal it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.host.referee import ADJOURNED, BotSession, GameResult, Host, HostSettings, MoveObserver, standings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.referee import VOID
from engine_ext.rules.replay import replay_positions
from protocol.codec import bot_codec
from protocol.endpoint import Endpoint, memory_pipe
from protocol.messages import PROTOCOL_VERSION, RESUME_FEATURE, GameOverParams, GoodbyeParams, HelloParams
from tests.mqtt_broker import BotProcesses

REPO = Path(__file__).resolve().parents[1]
RAW_BOT = REPO / "tests" / "bots" / "raw_bot.py"
NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


# --- in this event loop -------------------------------------------------------------------------------------


class LeavingClient(BotClient):
    """Says goodbye as soon as a game is over, as a daemon signalled during that game does."""

    endpoint: Endpoint | None = None

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        await super().handle_notification(method, params)
        if isinstance(params, GameOverParams) and self.endpoint is not None:
            await self.endpoint.notify("goodbye", GoodbyeParams(reason="shutting down"))


class MemoryBot:
    """The real bot's request handler (``BotClient``, random profile) in this event loop, joined to the host
    by an in-memory pipe; it says hello with the resume feature, as the daemon does."""

    def __init__(self, host: Host, token: str, seed: int, *, leaves_after_game: bool = False) -> None:
        self.host = host
        self.token = token
        self.client = (LeavingClient if leaves_after_game else BotClient)(get_profile("random"), seed=seed)
        self.endpoint: Endpoint | None = None
        self.serving: asyncio.Task[None] | None = None

    async def connect(self) -> BotSession:
        bot_end, host_end = memory_pipe()
        self.host._spawn(self.host._serve_connection(host_end))
        self.endpoint = Endpoint(bot_end, bot_codec(), self.client)
        if isinstance(self.client, LeavingClient):
            self.client.endpoint = self.endpoint
        self.serving = asyncio.create_task(self.endpoint.run())
        hello = HelloParams(name=f"bot-{self.token}", version="test", protocol=PROTOCOL_VERSION, token=self.token,
                            features=[RESUME_FEATURE])
        await self.endpoint.call("hello", hello, timeout=5)
        return await self.host.wait_for_bot(token=self.token, timeout=5)

    async def say_goodbye(self) -> None:
        """What a stopping bot does between games: goodbye, and the host hangs up."""
        assert self.endpoint is not None
        await self.endpoint.notify("goodbye", GoodbyeParams(reason="shutting down"))
        await asyncio.wait_for(self.endpoint.wait_closed(), 5)

    async def stop(self) -> None:
        if self.endpoint is not None:
            await self.endpoint.close("test over")
        if self.serving is not None:
            await self.serving


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    instance = Host(HostSettings(move_limit=300, move_time_max=2.0, grace=0.3, call_timeout=3.0,
                                 records_dir=tmp_path / "records", resume_grace=0.5))
    await instance.start()
    yield instance
    await instance.close()


@pytest.fixture
async def memory_bots(host: Host) -> AsyncIterator[list[MemoryBot]]:
    bots: list[MemoryBot] = []
    yield bots
    for bot in bots:
        await bot.stop()


async def connected(host: Host, bots: list[MemoryBot], *tokens: str, leave_after_game: bool = False
                    ) -> list[BotSession]:
    sessions = []
    for seed, token in enumerate(tokens, start=1):
        bot = MemoryBot(host, token, seed, leaves_after_game=leave_after_game)
        bots.append(bot)
        sessions.append(await bot.connect())
    return sessions


def paced_until(ply: int, action: asyncio.Event) -> MoveObserver:
    """An on_move observer: from ``ply`` on it sets ``action`` and slows the game down (a game under way
    when the host stops)."""

    async def observe(game: Game, played: MoveResult | None) -> None:
        if game.ply >= ply:
            action.set()
            await asyncio.sleep(0.05)

    return observe


def records(host: Host) -> list[Path]:
    assert host.settings.records_dir is not None
    return sorted(host.settings.records_dir.glob("*.json"))


async def until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_an_adjourned_game_is_recorded_with_its_moves_and_scored_for_nobody(
    host: Host, memory_bots: list[MemoryBot]
) -> None:
    red, blue = await connected(host, memory_bots, "a", "b")
    reached = asyncio.Event()
    game = asyncio.create_task(host.play_game(red, blue, on_move=paced_until(10, reached)))
    await asyncio.wait_for(reached.wait(), 20)
    await host.adjourn_games("the host stopped")
    result = game.result()  # adjourn_games returns once the game is over
    assert result.reason == ADJOURNED and result.adjourned and result.winner is None and not result.forfeits
    assert result.detail == "the host stopped" and result.plies >= 10
    assert (result.score(Side.RED), result.score(Side.BLUE)) == (0, 0)
    assert result.summary().endswith(f"adjourned after {result.plies} plies: the host stopped")
    assert host.results == [result]
    # The record has the moves so far, and they replay.
    [path] = records(host)
    record = GameRecord.load(path)
    assert record.result is not None and record.result["reason"] == ADJOURNED
    assert record.result["scores"] == {"red": 0, "blue": 0}
    assert len(list(replay_positions(record))) == result.plies + 1
    # In the standings: a game each, adjourned, no points.
    tallies = standings(host.results)
    for name in ("bot-a", "bot-b"):
        t = tallies[name]
        assert (t.games, t.adjourned, t.wins, t.draws, t.losses, t.forfeits, t.score) == (1, 1, 0, 0, 0, 0, 0)
    # Both bots heard the game is over, so they are free for the next one.
    await until(lambda: all(b.client.results for b in memory_bots))
    for bot in memory_bots:
        assert bot.client.results[-1].reason == ADJOURNED and not bot.client.in_game


async def test_a_game_both_bots_left_before_it_started_is_void(host: Host, memory_bots: list[MemoryBot]) -> None:
    red, blue = await connected(host, memory_bots, "a", "b")
    for bot in memory_bots:
        await bot.say_goodbye()
    result = await host.play_game(red, blue)
    assert result.reason == VOID and result.void and not result.forfeits and result.plies == 0, result.summary()
    assert "bot-a (red) and bot-b (blue) said goodbye" in (result.detail or "")
    assert host.results == [] and records(host) == [] and standings([result]) == {}


async def test_a_void_game_is_not_a_win_for_the_bot_that_stayed(host: Host, memory_bots: list[MemoryBot]) -> None:
    red, blue, third = await connected(host, memory_bots, "a", "b", "c")
    await memory_bots[0].say_goodbye()
    result = await host.play_game(red, blue)
    assert result.void and result.detail == "the game never started: bot-a (red) said goodbye", result.summary()
    assert host.results == [] and records(host) == []
    # The bot that stayed was told the game is off (it had begun its setup), and plays its next game normally.
    stayed = memory_bots[1]
    await until(lambda: bool(stayed.client.results))
    assert stayed.client.results[-1].reason == VOID and not stayed.client.in_game
    after = await host.play_game(blue, third)
    assert after.reason in NORMAL_ENDS and not after.forfeits, after.summary()
    assert host.results == [after] and len(records(host)) == 1


async def test_stopping_both_bots_between_games_scores_and_records_no_extra_game(
    host: Host, memory_bots: list[MemoryBot]
) -> None:
    """Issue 19, point 6: both bots leave as their first game ends, while the lobby starts their second."""
    for session in await connected(host, memory_bots, "a", "b", leave_after_game=True):
        host.release(session)  # to the lobby
    reported: list[GameResult] = []
    lobby = asyncio.create_task(host.serve_lobby(games_per_pairing=2, on_result=reported.append))
    await until(lambda: not host.sessions, 60)  # both gone
    host.stop_pairing()
    await asyncio.wait_for(lobby, 10)
    assert len(reported) == 1 and host.results == reported
    [game] = reported
    assert game.reason in NORMAL_ENDS and game.plies > 0, game.summary()
    assert [p.stem for p in records(host)] == [game.game_id]
    assert {name: t.games for name, t in standings(host.results).items()} == {"bot-a": 1, "bot-b": 1}


async def test_stop_pairing_ends_an_idle_lobby_and_lets_a_running_game_finish(
    host: Host, memory_bots: list[MemoryBot]
) -> None:
    for session in await connected(host, memory_bots, "a", "b"):
        host.release(session)  # to the lobby
    reported: list[GameResult] = []
    lobby = asyncio.create_task(host.serve_lobby(games_per_pairing=5, on_result=reported.append))
    await until(lambda: any(b.client.in_game for b in memory_bots))
    host.stop_pairing()
    await asyncio.wait_for(lobby, 60)
    # The game under way was played out; none of the other four started.
    assert len(reported) == 1 and reported[0].reason in NORMAL_ENDS, [r.summary() for r in reported]
    assert len(records(host)) == 1


async def test_the_forfeit_after_the_resume_grace_says_so(host: Host, memory_bots: list[MemoryBot]) -> None:
    red, blue = await connected(host, memory_bots, "a", "b")
    reached = asyncio.Event()
    game = asyncio.create_task(host.play_game(red, blue, on_move=paced_until(5, reached)))
    await asyncio.wait_for(reached.wait(), 20)
    await memory_bots[1].stop()  # the connection dies, no goodbye, and the bot never comes back
    result = await asyncio.wait_for(game, 20)
    assert result.reason == "forfeit_crash" and result.forfeits == {Side.BLUE}, result.summary()
    assert "did not come back within the resume grace of 0.5 s" in (result.detail or "")


# --- perspecto host as a real process -----------------------------------------------------------------------


class HostProcess:
    """``perspecto host`` on a free port, its stdout read line by line as it comes."""

    def __init__(self, records: Path) -> None:
        self.records = records
        self.process: asyncio.subprocess.Process | None = None
        self.lines: list[str] = []
        self.port = 0
        self._new_line = asyncio.Event()
        self._readers: list[asyncio.Task[None]] = []
        self.stderr = ""

    async def start(self, *options: str) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", "host", "--listen", "127.0.0.1:0", "--records", str(self.records),
            *options, cwd=REPO, env={**os.environ, "COLUMNS": "200"},
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        self._readers = [asyncio.create_task(self._read_stdout()), asyncio.create_task(self._read_stderr())]
        banner = await self.line_with("listening on 127.0.0.1:", timeout=60)  # a loaded machine starts slowly
        self.port = int(banner.split("127.0.0.1:")[1].split()[0])

    async def _read_stdout(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        async for raw in self.process.stdout:
            self.lines.append(raw.decode(errors="replace"))
            self._new_line.set()

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        self.stderr = (await self.process.stderr.read()).decode(errors="replace")

    @property
    def out(self) -> str:
        return "".join(self.lines)

    async def line_with(self, text: str, timeout: float = 30.0) -> str:
        async with asyncio.timeout(timeout):
            while True:
                for line in self.lines:
                    if text in line:
                        return line
                self._new_line.clear()
                await self._new_line.wait()

    def send_signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    async def exit_code(self, timeout: float = 60.0) -> int:
        assert self.process is not None
        code = await asyncio.wait_for(self.process.wait(), timeout)
        await asyncio.gather(*self._readers)
        return code

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        for reader in self._readers:
            reader.cancel()


def health(bots: BotProcesses, token: str) -> str | None:
    try:
        return str(json.loads((bots.state_dir(token) / "health.json").read_text())["state"])
    except (OSError, ValueError, KeyError):
        return None  # not written yet, or caught mid-rename


async def until_state(bots: BotProcesses, token: str, state: str, timeout: float = 60.0) -> None:
    await until(lambda: health(bots, token) == state, timeout)


async def real_bot_against_a_silent_one(host: HostProcess, bots: BotProcesses) -> asyncio.subprocess.Process:
    """A real bot (red: it arrives first) and tests/bots/raw_bot.py in ``timeout`` mode (blue: sets up, then
    never answers getAIMove), so that the game is under way for as long as the host lets it."""
    await bots.start("a", "--connect", f"127.0.0.1:{host.port}")
    await until_state(bots, "a", "idle")
    silent = await asyncio.create_subprocess_exec(
        sys.executable, str(RAW_BOT), str(host.port), "timeout", "--token", "silent", cwd=REPO,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    bots.processes.append(silent)  # stopped with the others
    await until_state(bots, "a", "in_game")
    return silent


def saved_standings(host: HostProcess) -> dict[str, Any]:
    [path] = (host.records / "standings").glob("*.json")
    assert f"standings saved to {path}" in host.out.replace("\n", "")
    document = json.loads(path.read_text())
    assert document["format"] == "perspecto-standings/1" and document["final"] is True
    assert isinstance(document, dict)
    return document


@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, pytest.param(signal.SIGINT, marks=pytest.mark.long)], ids=["SIGTERM", "SIGINT"]
)
async def test_a_signal_adjourns_a_game_that_outlasts_the_stop_grace(
    signum: int, host_process: HostProcess, bots: BotProcesses
) -> None:
    await host_process.start("--move-time-max", "30", "--stop-grace", "1")
    silent = await real_bot_against_a_silent_one(host_process, bots)
    host_process.send_signal(signum)
    await host_process.line_with(f"{signal.Signals(signum).name}: stopping")
    adjourned = await host_process.line_with("adjourned after")
    silent.kill()  # asleep in getAIMove: it would never read the goodbye the host waits to be heard
    assert await host_process.exit_code() == 0, host_process.stderr
    assert "Traceback" not in host_process.stderr and "CancelledError" not in host_process.stderr
    # The standings: printed and saved, the adjourned game in them, scored for nobody.
    assert "1 games, 1 adjourned" in host_process.out and "bot-a" in host_process.out
    document = saved_standings(host_process)
    [result] = document["results"]
    assert result["reason"] == ADJOURNED and result["scores"] == {"red": 0, "blue": 0}
    assert result["game_id"] in adjourned
    tallies = {b["name"]: (b["games"], b["adjourned"], b["score"]) for b in document["bots"]}
    assert tallies == {"bot-a": (1, 1, 0), "raw-timeout": (1, 1, 0)}
    record = GameRecord.load(Path(result["record"]))
    assert record.result is not None and record.result["reason"] == ADJOURNED
    assert len(record.moves) == result["plies"] <= 1
    # The real bot heard the game was adjourned, then the goodbye, and exited 0.
    assert await asyncio.wait_for(bots.processes[0].wait(), 30) == 0
    assert [e["reason"] for e in bots.events("a", "bot.game_over")] == [ADJOURNED]
    assert [e["reason"] for e in bots.events("a", "bot.goodbye")] == ["the host is shutting down"]


async def test_a_signal_lets_the_games_under_way_finish_then_says_goodbye(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    await host_process.start("--move-limit", "300", "--move-time-max", "5", "--stop-grace", "120")
    a = await bots.start("a", "--connect", f"127.0.0.1:{host_process.port}", seed=1)
    b = await bots.start("b", "--connect", f"127.0.0.1:{host_process.port}", seed=2)
    await until_state(bots, "a", "in_game")
    host_process.send_signal(signal.SIGTERM)
    assert await host_process.exit_code(150) == 0, host_process.stderr
    assert "SIGTERM: stopping" in host_process.out and "Traceback" not in host_process.stderr
    document = saved_standings(host_process)
    results = document["results"]
    assert results, host_process.out
    for result in results:  # played out, none adjourned; no game started after the signal
        assert result["reason"] in NORMAL_ENDS, result
        assert Path(result["record"]).exists()
    assert sorted(p.name for p in host_process.records.glob("*.json")) == sorted(
        f"{r['game_id']}.json" for r in results)
    for token, process in (("a", a), ("b", b)):
        assert await asyncio.wait_for(process.wait(), 30) == 0
        assert [e["reason"] for e in bots.events(token, "bot.goodbye")] == ["the host is shutting down"]


async def test_a_signal_to_an_idle_host_exits_0_with_empty_standings(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    await host_process.start()
    lonely = await bots.start("a", "--connect", f"127.0.0.1:{host_process.port}")
    await until_state(bots, "a", "idle")
    host_process.send_signal(signal.SIGINT)
    assert await host_process.exit_code() == 0, host_process.stderr
    assert "0 games" in host_process.out and "Traceback" not in host_process.stderr
    assert saved_standings(host_process)["games"] == 0
    assert await asyncio.wait_for(lonely.wait(), 30) == 0
    assert bots.events("a", "bot.goodbye")


@pytest.mark.long
@pytest.mark.parametrize(
    "signum, code",
    [(signal.SIGTERM, 143), pytest.param(signal.SIGINT, 130, marks=pytest.mark.long)],
    ids=["SIGTERM", "SIGINT"],
)
async def test_a_second_signal_quits_at_once(
    signum: int, code: int, host_process: HostProcess, bots: BotProcesses
) -> None:
    await host_process.start("--move-time-max", "600", "--stop-grace", "600")
    await real_bot_against_a_silent_one(host_process, bots)
    host_process.send_signal(signum)
    await host_process.line_with("stopping")
    host_process.send_signal(signum)
    # Without the second signal the host would wait 600 s for the silent bot's move.
    assert await host_process.exit_code(60) == code
    assert "again: quitting now" in host_process.out
    assert "Traceback" not in host_process.stderr


def test_a_void_game_is_not_in_what_the_bot_learns(tmp_path: Path) -> None:
    from bot.daemon.learning import OpponentMemory
    from bot.daemon.opponent_store import OpponentStore

    with OpponentStore(tmp_path / "o.sqlite") as store:
        memory = OpponentMemory(store)
        memory.record("probe", won=None, reason=VOID, setup="s1", plies=0, engine=None, game_id="g-1")
        assert store.history("probe").games == 0
        memory.record("probe", won=None, reason="move_limit", setup="s1", plies=2000, engine=None, game_id="g-2")
        assert store.history("probe").results == {"draw": 1}


async def test_standings_that_cannot_be_saved_are_still_printed(host_process: HostProcess, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the standings' folder would be")
    await host_process.start("--standings", str(blocker / "standings.json"))
    host_process.send_signal(signal.SIGTERM)
    assert await host_process.exit_code() == 0, host_process.stderr
    assert "cannot save the standings" in host_process.out and "0 games" in host_process.out
    assert "standings saved to" not in host_process.out and "Traceback" not in host_process.stderr


@pytest.mark.long
async def test_bots_stopped_during_a_game_leave_no_extra_game_behind(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    """Issue 19, point 6, as it was seen: both bots get SIGTERM in their first game of a pairing of two;
    they finish it and say goodbye just as the host starts the second."""
    await host_process.start("--move-limit", "300", "--move-time-max", "5", "--games-per-pairing", "2")
    a = await bots.start("a", "--connect", f"127.0.0.1:{host_process.port}", seed=1)
    b = await bots.start("b", "--connect", f"127.0.0.1:{host_process.port}", seed=2)
    await until_state(bots, "a", "in_game")
    for process in (a, b):
        process.send_signal(signal.SIGTERM)
    for process in (a, b):
        assert await asyncio.wait_for(process.wait(), 60) == 0
    first = await host_process.line_with(" plies")
    host_process.send_signal(signal.SIGTERM)
    assert await host_process.exit_code() == 0, host_process.stderr
    assert "after 0 plies" not in host_process.out and "void" not in host_process.out  # no line for a void game
    document = saved_standings(host_process)
    [result] = document["results"]
    assert result["game_id"] in first and result["reason"] in NORMAL_ENDS and result["plies"] > 0
    assert {t["name"]: t["games"] for t in document["bots"]} == {"bot-a": 1, "bot-b": 1}
    assert [p.stem for p in host_process.records.glob("*.json")] == [result["game_id"]]


async def test_a_goodbye_as_the_connection_dies_ends_the_wait_for_a_resume(tmp_path: Path) -> None:
    """A bot that says goodbye and hangs up at once in a game forfeits it then, not after the whole resume
    grace: the goodbye read with the end of the stream is still handled, and wakes a wait for a resume."""
    host = Host(HostSettings(move_limit=300, move_time_max=2.0, grace=0.3, call_timeout=3.0,
                             records_dir=tmp_path / "records", resume_grace=60.0))
    await host.start()
    bots: list[MemoryBot] = []
    try:
        red, blue = await connected(host, bots, "a", "b")
        reached = asyncio.Event()
        game = asyncio.create_task(host.play_game(red, blue, on_move=paced_until(5, reached)))
        await asyncio.wait_for(reached.wait(), 20)
        leaving = bots[1].endpoint
        assert leaving is not None
        await leaving.notify("goodbye", GoodbyeParams(reason="shutting down"))
        await leaving.close("gone")
        result = await asyncio.wait_for(game, 20)  # far less than the 60 s resume grace
        assert result.forfeits == {Side.BLUE}, result.summary()
    finally:
        for bot in bots:
            await bot.stop()
        await host.close()
