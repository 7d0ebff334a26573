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

from bot.host.referee import GameEnded, GameResult, GameStarted, MovePlayed
from bot.web.feed import GameFeed, Listener, RecordsFolder
from bot.web.server import web_app
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from tests.web_records import random_record


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
