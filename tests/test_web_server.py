"""The web view's server and feed (bot/web/server.py, bot/web/feed.py) through aiohttp's test client: the
page and its files, the JSON of games, the WebSocket of changes, record folders, and that it only reads."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import WSMsgType
from aiohttp.test_utils import TestClient, TestServer
from yarl import URL

from bot.host.referee import GameEnded, GameResult, GameStarted, MovePlayed
from bot.web.feed import GameFeed, Listener, RecordsFolder
from bot.web.outlook import red_chance
from bot.web.server import web_app
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from tests.web_records import random_record, replayed


@pytest.fixture
async def feed_and_client() -> AsyncIterator[tuple[GameFeed, list[GameResult], TestClient[Any, Any]]]:
    results: list[GameResult] = []
    feed = GameFeed(results=lambda: results)
    client = TestClient(TestServer(web_app(feed)))
    await client.start_server()
    yield feed, results, client
    await client.close()


async def receive(ws: Any, kind: str) -> dict[str, Any]:
    """The next message of ``kind`` on the WebSocket (others are skipped)."""
    async with asyncio.timeout(5):
        while True:
            message = await ws.receive()
            assert message.type == WSMsgType.TEXT, message
            data = json.loads(message.data)
            if data["type"] == kind:
                return data


def play_through_feed(feed: GameFeed, record: GameRecord, plies: int) -> None:
    """Tell ``feed`` what a host tells its observers while it referees ``record``'s first ``plies`` plies."""
    positions = replay_positions(record)
    game, _ = next(positions)
    setups = {side: {sq: rank for sq, (_s, rank) in game.pieces(side).items()} for side in Side}
    names = {Side.RED: record.red.name, Side.BLUE: record.blue.name}
    feed.game_started(GameStarted(game_id=record.game_id, names=names, options=game.options, setups=setups,
                                  started=record.started, move_time_max=2.0))
    for index, (_game, played) in enumerate(positions):
        if index >= plies:
            break
        assert played is not None
        feed.move_played(MovePlayed(game_id=record.game_id, ply=index + 1, played=played,
                                    recorded=record.moves[index], seconds=0.01))


async def test_the_page_and_its_files(feed_and_client: Any) -> None:
    _feed, _results, client = feed_and_client
    page = await client.get("/")
    assert page.status == 200 and '<script src="/static/app.js">' in await page.text()
    for name, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        response = await client.get(f"/static/{name}")
        assert response.status == 200 and kind in response.headers["Content-Type"]
    assert (await client.get("/static/../feed.py")).status in (403, 404)


async def test_viewers_can_only_read(feed_and_client: Any) -> None:
    feed, _results, client = feed_and_client
    record = random_record(1, plies=10)
    play_through_feed(feed, record, 5)
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        for path in ("/", "/api/games", f"/api/games/{record.game_id}"):
            assert (await client.request(method, path)).status == 405, (method, path)
    async with client.ws_connect("/api/live") as ws:
        await receive(ws, "hello")
        await ws.send_str(json.dumps({"type": "move", "game": record.game_id}))  # ignored
        play_through_feed(feed, random_record(2, plies=3, game_id="other"), 1)
        assert (await receive(ws, "game"))["game"]["id"] == "other"  # still served, nothing acted on
    assert len((await (await client.get(f"/api/games/{record.game_id}")).json())["moves"]) == 5


async def test_a_live_game_on_the_api_and_the_websocket(feed_and_client: Any) -> None:
    feed, results, client = feed_and_client
    record = random_record(4, plies=40)
    async with client.ws_connect("/api/live") as ws:
        hello = await receive(ws, "hello")
        assert hello["games"] == [] and hello["standings"] == []
        play_through_feed(feed, record, 0)
        started = (await receive(ws, "game"))["game"]
        assert (started["id"], started["status"], started["red"]) == (record.game_id, "live", "red-bot")
        assert started["clock"]["to_move"] == "red" and started["clock"]["move_time_max"] == 2.0

        doc = await (await client.get(f"/api/games/{record.game_id}")).json()
        assert doc["moves"] == [] and doc["board"]["width"] == 10 and len(doc["start"]["referee"]) == 80

        positions = list(replay_positions(record))
        for ply in range(1, 4):
            _game, played = positions[ply]
            assert played is not None
            feed.move_played(MovePlayed(game_id=record.game_id, ply=ply, played=played,
                                        recorded=record.moves[ply - 1], seconds=0.5))
            message = await receive(ws, "move")
            assert message["game"] == record.game_id and message["move"]["ply"] == ply
            assert message["move"]["notation"] == record.moves[ply - 1].notation()
            assert message["clock"]["to_move"] == str(played.side.other)
        assert message["clock"]["think"] == {"red": 1.0, "blue": 0.5}
        # Each side's clock at this ply, from the host's seconds; red's chances on the referee's board.
        assert message["move"]["took"] == 0.5 and message["move"]["used"] == {"red": 1.0, "blue": 0.5}
        assert message["move"]["outlook"] == red_chance(replayed(record, 3))

        doc = await (await client.get(f"/api/games/{record.game_id}")).json()
        assert [m["move"] for m in doc["moves"]] == [m.move for m in record.moves[:3]]

        record.moves = record.moves[:3]
        record.result = {"winner": None, "reason": "adjourned", "plies": 3, "forfeits": []}
        result = GameResult(game_id=record.game_id, names={Side.RED: "red-bot", Side.BLUE: "blue-bot"},
                            winner=None, reason="adjourned", plies=3, record=record)
        results.append(result)
        feed.game_over(GameEnded(result))
        over = (await receive(ws, "game"))["game"]
        assert over["status"] == "finished" and over["result"]["reason"] == "adjourned"
        standings = (await receive(ws, "standings"))["standings"]
        assert {row["name"] for row in standings} == {"red-bot", "blue-bot"}
    listing = await (await client.get("/api/games")).json()
    assert [g["status"] for g in listing["games"]] == ["finished"] and len(listing["standings"]) == 2


async def test_a_game_forfeited_in_its_setup_is_listed_without_a_board(feed_and_client: Any) -> None:
    feed, _results, client = feed_and_client
    result = GameResult(game_id="g-1", names={Side.RED: "a", Side.BLUE: "b"}, winner=Side.BLUE,
                        reason="forfeit_illegal_setup", plies=0, forfeits=frozenset({Side.RED}))
    feed.game_over(GameEnded(result))
    doc = await (await client.get("/api/games/g-1")).json()
    assert doc["result"]["reason"] == "forfeit_illegal_setup" and "board" not in doc
    assert "no board" in doc["error"]
    assert (await client.get("/api/games/no-such-game")).status == 404


async def test_a_folder_of_records(tmp_path: Path, feed_and_client: Any) -> None:
    feed, _results, client = feed_and_client
    old = tmp_path / "old.json"
    random_record(1, plies=20).save(old)
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    folder = RecordsFolder(feed, tmp_path, since=time.time() - 60)
    async with client.ws_connect("/api/live") as ws:
        await receive(ws, "hello")
        await folder.poll()
        assert feed.games == {}  # older than ``since``: an earlier run's

        fresh = tmp_path / "fresh.json"
        random_record(2, plies=30).save(fresh)
        (tmp_path / "notes.json").write_text('{"not": "a record"}')
        await folder.poll()
        listed = (await receive(ws, "game"))["game"]
        assert (listed["id"], listed["source"], listed["plies"]) == ("fresh", "record", 30)
        assert list(feed.games) == ["fresh"]
        doc = await (await client.get("/api/games/fresh")).json()
        assert len(doc["moves"]) == 30 and "error" not in doc

        broken = GameRecord.load(fresh)
        broken.moves[4].move = "A1-A2"  # red's back row: not a legal move there
        broken.save(tmp_path / "broken.json")
        await folder.poll()
        doc = await (await client.get("/api/games/broken")).json()
        assert "cannot show this game" in doc["error"] and "ply 5" in doc["error"]

        fresh.unlink()
        await folder.poll()
        assert (await receive(ws, "removed"))["game"] == "fresh"
    assert set(feed.games) == {"broken"}


def test_a_page_that_falls_behind_is_dropped() -> None:
    listener = Listener(backlog=3)
    for n in range(3):
        listener.put({"n": n})
    assert not listener.dropped.is_set()
    listener.put({"n": 3})
    assert listener.dropped.is_set() and listener.queue.qsize() == 3


def strings_in(data: Any) -> list[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(data, str):
        return [data]
    if isinstance(data, dict):
        return [s for key, value in data.items() for s in (key, *strings_in(value))]
    if isinstance(data, list):
        return [s for value in data for s in strings_in(value)]
    return []


async def test_no_json_names_where_the_records_are(tmp_path: Path, feed_and_client: Any) -> None:
    """Viewers see games by id and records by file name: no absolute path in the list, a game, an error
    or a WebSocket message, whatever went wrong with the file."""
    feed, results, client = feed_and_client
    folder = tmp_path / "secret-folder" / "records"
    folder.mkdir(parents=True)
    random_record(1, plies=20).save(folder / "good.json")
    broken = random_record(2, plies=20)
    broken.moves[4].move = "A1-A2"
    broken.save(folder / "broken.json")
    random_record(3, plies=10).save(folder / "gone.json")
    records = RecordsFolder(feed, folder)
    seen: list[Any] = []
    async with client.ws_connect("/api/live") as ws:
        seen.append(await receive(ws, "hello"))
        await records.poll()
        (folder / "gone.json").unlink()  # listed, then gone before it is opened: an OSError naming the path
        host_game = random_record(4, plies=12, game_id="host-1")
        play_through_feed(feed, host_game, 12)
        result = GameResult(game_id="host-1", names={Side.RED: "red-bot", Side.BLUE: "blue-bot"}, winner=None,
                            reason="adjourned", plies=12, record=host_game, record_path=folder / "host-1.json")
        results.append(result)
        feed.game_over(GameEnded(result))
        listing = await (await client.get("/api/games")).json()
        seen.append(listing)
        assert {g["id"] for g in listing["games"]} == {"good", "broken", "gone", "host-1"}
        for game in listing["games"]:
            seen.append(await (await client.get(f"/api/games/{game['id']}")).json())
        kinds = []
        while "standings" not in kinds:  # the records, the host game's start, moves and end, then standings
            seen.append(json.loads((await asyncio.wait_for(ws.receive(), 5)).data))
            kinds.append(seen[-1]["type"])
        assert kinds.count("game") == 5 and kinds.count("move") == 12
    by_id = {doc["id"]: doc for doc in seen if "id" in doc}
    assert "ply 5" in by_id["broken"]["error"] and "cannot read gone.json" in by_id["gone"]["error"]
    assert by_id["host-1"]["record"] == "host-1.json"
    text = [s for data in seen for s in strings_in(data)]
    assert not [s for s in text if "secret-folder" in s or str(tmp_path) in s]
    assert not [s for s in text if s.startswith("/") or "\\" in s]


@pytest.mark.parametrize("wanted", ["..", "%2E%2E", "...", ".hidden", "%2Ehidden", "a..b", "..%2F..%2Fetc%2Fpasswd",
                                    "a%2Fb", "a%5Cb", "C:x", "%2Fetc%2Fpasswd", "a%00b", "x" * 200])
async def test_a_path_like_game_id_is_refused(feed_and_client: Any, wanted: str) -> None:
    """Refused before anything is looked up (sent as written: the client would tidy ``..`` away)."""
    _feed, _results, client = feed_and_client
    response = await client.session.get(URL(f"{client.make_url('/api/games/')}{wanted}", encoded=True))
    assert response.status == 400 and await response.text() == "a game id is a plain name, not a path"


async def test_a_record_file_with_an_odd_name_gets_a_plain_id(tmp_path: Path, feed_and_client: Any) -> None:
    feed, _results, client = feed_and_client
    for name in (".hidden.json", "a..b c.json", "ümlaut:1.json"):
        random_record(len(name), plies=6).save(tmp_path / name)
    await RecordsFolder(feed, tmp_path).poll()
    assert sorted(feed.games) == ["_mlaut_1", "a.b_c", "hidden"]
    for game_id in feed.games:
        doc = await (await client.get(f"/api/games/{game_id}")).json()
        assert len(doc["moves"]) == 6
