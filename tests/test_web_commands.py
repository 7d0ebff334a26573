"""The web view from the commands: the host's observers see a real game between bot processes over TCP;
``perspecto replay FILE --web``, ``perspecto play --web`` and the lab's ``perspecto match --web`` serve
their games until they are stopped."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.host.referee import GameEnded, GameStarted, Host, HostSettings, MovePlayed
from bot.web.feed import GameFeed
from bot.web.timeline import REFEREE, cells
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from tests.web_records import random_record

REPO = Path(__file__).resolve().parents[1]


class Clumsy:
    """An observer that fails at everything: the games must not notice."""

    def __init__(self) -> None:
        self.calls = 0

    def game_started(self, event: GameStarted) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")

    def move_played(self, event: MovePlayed) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")

    def game_over(self, event: GameEnded) -> None:
        self.calls += 1
        raise RuntimeError("observer bug")


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[Host]:
    host = Host(HostSettings(move_limit=200, move_time_max=1.0, grace=0.3, call_timeout=3.0,
                             records_dir=tmp_path / "records"))
    await host.start()
    yield host
    await host.close()


async def start_bot(port: int, token: str, seed: int, state: Path) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "bot", "--profile", "random", "--connect", f"127.0.0.1:{port}",
        "--token", token, "--name", f"random-{token}", "--seed", str(seed), "--log-level", "warning",
        "--state-dir", str(state / token),
        cwd=REPO, env=dict(os.environ), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )


async def test_the_feed_sees_every_move_of_a_real_game(host: Host, tmp_path: Path) -> None:
    feed, clumsy = GameFeed(results=lambda: host.results), Clumsy()
    host.observe(clumsy)
    host.observe(feed)
    bots = [await start_bot(host.port, "a", 1, tmp_path), await start_bot(host.port, "b", 2, tmp_path)]
    try:
        red = await host.wait_for_bot(token="a", timeout=30)
        blue = await host.wait_for_bot(token="b", timeout=30)
        result = await host.play_game(red, blue)
    finally:
        for bot in bots:
            if bot.returncode is None:
                bot.kill()
            await bot.wait()
    assert not result.forfeits and result.record_path is not None, result.summary()
    assert clumsy.calls == result.plies + 2  # told of everything, and its failures cost nothing
    doc = await feed.document(result.game_id)
    assert doc is not None and doc["status"] == "finished" and doc["result"]["reason"] == result.reason
    record = GameRecord.load(result.record_path)
    assert [m["notation"] for m in doc["moves"]] == [m.notation() for m in record.moves]
    assert [m["ply"] for m in doc["moves"]] == list(range(1, result.plies + 1))
    board = dict(doc["start"][REFEREE])
    for move in doc["moves"]:
        for square, cell in move["changes"][REFEREE].items():
            if cell is None:
                board.pop(square)
            else:
                board[square] = cell
    *_, (final, _last) = replay_positions(record)
    assert board == cells(final)
    think = doc["clock"]["think"]
    assert think["red"] == pytest.approx(result.think_seconds[Side.RED], abs=0.01)
    assert think["blue"] == pytest.approx(result.think_seconds[Side.BLUE], abs=0.01)
    assert [row["name"] for row in feed.standings() or []] == sorted(result.names.values())


def fetch_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


async def test_replay_serves_a_record_until_stopped(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    random_record(9, plies=50, game_id="nine").save(path)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "replay", str(path), "--web", "127.0.0.1:0", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(20):
            line = (await process.stdout.readline()).decode()
        assert line.startswith("web view: http://127.0.0.1:"), line
        url = line.split()[-1]
        listing = await asyncio.to_thread(fetch_json, url + "api/games")
        assert [g["id"] for g in listing["games"]] == ["one"] and listing["standings"] is None
        doc = await asyncio.to_thread(fetch_json, url + "api/games/one")
        assert len(doc["moves"]) == 50
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(10):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def web_command(*args: str) -> tuple[asyncio.subprocess.Process, str]:
    """Start ``perspecto ARGS`` and read its page's URL from what it prints."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=REPO, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert process.stdout is not None
    async with asyncio.timeout(30):
        while True:
            line = (await process.stdout.readline()).decode()
            assert line, "it stopped before it served the page"
            if line.startswith("web view: "):
                return process, line.split()[-1]


async def games_when(url: str, ready: Any, timeout: float = 60.0) -> dict[str, Any]:
    """Poll the page's list of games until ``ready(listing)``."""
    async with asyncio.timeout(timeout):
        while True:
            listing = await asyncio.to_thread(fetch_json, url + "api/games")
            if ready(listing):
                return listing
            await asyncio.sleep(0.3)


async def stop(process: asyncio.subprocess.Process) -> int:
    """Once it has nothing left to play and says the page stays up, SIGTERM ends it."""
    assert process.stdout is not None
    async with asyncio.timeout(30):
        while b"the web view stays up" not in await process.stdout.readline():
            pass
    process.send_signal(signal.SIGTERM)
    async with asyncio.timeout(20):
        return await process.wait()


@pytest.mark.long
async def test_the_lab_shows_its_games_as_their_records_appear(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    random_record(1, plies=10, game_id="earlier").save(records / "earlier.json")  # an earlier run's
    os.utime(records / "earlier.json", (1e9, 1e9))
    process, url = await web_command("match", "random", "random", "--games", "2", "--concurrency", "1", "--seed", "1",
                                     "--records", str(records), "--web", "127.0.0.1:0")
    try:
        listing = await games_when(url, lambda g: len(g["games"]) == 2)
        assert {g["source"] for g in listing["games"]} == {"record"}
        assert all(g["id"].startswith("random-a-vs-random-b-s1-") for g in listing["games"])
        for game in listing["games"]:
            doc = await asyncio.to_thread(fetch_json, url + "api/games/" + game["id"])
            assert len(doc["moves"]) == game["plies"] and "error" not in doc
        assert await stop(process) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


@pytest.mark.long
async def test_play_shows_its_game_live_and_keeps_it_after_the_end(tmp_path: Path) -> None:
    process, url = await web_command("play", "--profile", "random", "--opponent", "random", "--seed", "3",
                                     "--move-limit", "150", "--records", str(tmp_path / "records"),
                                     "--web", "127.0.0.1:0")
    try:
        listing = await games_when(url, lambda g: [x["status"] for x in g["games"]] == ["finished"])
        game = listing["games"][0]
        assert game["source"] == "host" and game["plies"] == 150 and game["result"]["reason"] == "move_limit"
        assert sum(row["games"] for row in listing["standings"]) == 2
        doc = await asyncio.to_thread(fetch_json, url + "api/games/" + game["id"])
        assert len(doc["moves"]) == 150 and all(m["seconds"] is not None for m in doc["moves"])
        assert await stop(process) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_bad_web_address_is_a_usage_error(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "replay", str(tmp_path / "x.json"), "--web", "localhost:port", cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    _out, err = await process.communicate()
    assert process.returncode == 2 and b"--web" in err


@pytest.mark.long
async def test_a_signal_during_a_match_stops_it_and_the_page(tmp_path: Path) -> None:
    process, url = await web_command("play", "--profile", "random", "--opponent", "random", "--move-limit", "4000",
                                     "--move-time-max", "1", "--records", str(tmp_path / "records"),
                                     "--web", "127.0.0.1:0")
    try:
        await games_when(url, lambda g: bool(g["games"]) and g["games"][0]["plies"] > 0)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(30):
            assert await process.wait() == 128 + signal.SIGTERM
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def run_cli(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=REPO, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode()


@pytest.mark.long
async def test_the_web_address_taken_or_no_records_for_the_lab(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out = await run_cli("host", "--listen", "127.0.0.1:0", "--web", f"127.0.0.1:{port}", "--no-records")
        assert code == 1 and f"cannot serve the web view on 127.0.0.1:{port}" in out
    code, out = await run_cli("match", "random", "random", "--games", "2", "--no-records", "--web", "0")
    assert code == 2 and "not with --no-records" in out
