"""The games the web page shows, and the stream of what happens to them.

A ``GameFeed`` is the host's observer (bot/host/referee.py ``GameObserver``): it keeps a ``Timeline`` of
every game in progress, move by move, and the games that ended. It also takes record files (one given on
the command line, or a folder watched by ``RecordsFolder``: the lab's games as their records appear, or a
tournament's folder written by a host in another process). Every change goes to the listeners (the page's
WebSockets) as a small JSON message; a listener that cannot keep up is dropped, and its page reconnects and
fetches the game again.

What goes to a page names games by id and records by file name, never by where they are on the server: a
record's id is its file's name made safe (``safe_id``), and an error that would quote a path says the file's
name instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from bot.host.referee import GameEnded, GameResult, GameStarted, MovePlayed, standings
from bot.web.timeline import Timeline, timeline_of
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import ReplayError

log = structlog.get_logger()

LIVE, FINISHED = "live", "finished"
# Finished games whose boards stay built in memory (the rest are built again from their record when opened).
KEPT_TIMELINES = 16
# Messages a page may fall behind by before it is dropped (it reconnects and catches up).
LISTENER_BACKLOG = 2000


# A game id a page may ask for: no separators, no leading dot, no "..", nothing a path needs.
_UNSAFE = re.compile(r"[^A-Za-z0-9._~+-]")
ID_MAX = 128


def is_game_id(text: str) -> bool:
    """Whether ``text`` can be a game's id: ids are plain names, so anything path-like (a slash, a
    backslash, a leading dot, "..", a drive's colon, a control character) is not one."""
    return (0 < len(text) <= ID_MAX and not _UNSAFE.search(text) and not text.startswith(".")
            and ".." not in text)


def safe_id(name: str) -> str:
    """A file's stem made into a game id: each unsafe character becomes "_", leading dots go, runs of dots
    shrink to one."""
    text = re.sub(r"\.{2,}", ".", _UNSAFE.sub("_", name)).lstrip(".")[:ID_MAX]
    return text or "record"


def _without_paths(text: str, path: Path | None) -> str:
    """``text`` with ``path`` written as the file's name alone, and its folder left out."""
    if path is None:
        return text
    for full in sorted({str(path), str(path.resolve())}, key=len, reverse=True):
        text = text.replace(full, path.name)
    for folder in sorted({str(path.parent), str(path.resolve().parent)}, key=len, reverse=True):
        if folder not in ("", ".", "/"):
            text = text.replace(folder + os.sep, "").replace(folder, "the records' folder")
    return text


def _result_of(result: GameResult) -> dict[str, Any]:
    if result.record is not None and result.record.result is not None:
        return dict(result.record.result)
    return {"winner": None if result.winner is None else str(result.winner), "reason": result.reason,
            "plies": result.plies, "forfeits": sorted(str(s) for s in result.forfeits),
            **({"detail": result.detail} if result.detail else {})}


@dataclass
class WatchedGame:
    """One game on the page: a live one of this host, or a record."""

    id: str
    red: str
    blue: str
    source: str  # "host" (this process's host) or "record" (a file)
    status: str = LIVE
    started: str = ""
    plies: int = 0
    result: dict[str, Any] | None = None
    record: GameRecord | None = None  # a finished host game's record (kept by the host anyway)
    path: Path | None = None
    move_time_max: float | None = None
    to_move: str | None = None
    asked_at: float | None = None  # time.monotonic() when the side to move was asked (live games)
    think: dict[str, float] = field(default_factory=lambda: {"red": 0.0, "blue": 0.0})

    def clock(self) -> dict[str, Any]:
        elapsed = None
        if self.status == LIVE and self.asked_at is not None:
            elapsed = round(time.monotonic() - self.asked_at, 3)
        return {"to_move": self.to_move if self.status == LIVE else None, "elapsed": elapsed,
                "move_time_max": self.move_time_max, "think": {k: round(v, 3) for k, v in self.think.items()}}

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "red": self.red, "blue": self.blue, "source": self.source, "status": self.status,
                "started": self.started, "plies": self.plies, "result": self.result,
                "record": None if self.path is None else self.path.name, "clock": self.clock()}


def _boards_of(record: GameRecord | None, path: Path | None) -> Timeline | None:
    """A finished game's boards from its record (in memory, or read from ``path``); None when its setups
    were never both in. Touches nothing shared: it runs in a thread."""
    if record is None and path is not None:
        record = GameRecord.load(path)
    if record is None or not (record.red.setup and record.blue.setup):
        return None
    return timeline_of(record)


class Listener:
    """One page's queue of messages."""

    def __init__(self, backlog: int = LISTENER_BACKLOG) -> None:
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(maxsize=backlog)
        self.dropped = asyncio.Event()  # it fell too far behind: the page must reconnect

    def put(self, message: dict[str, Any]) -> None:
        if self.dropped.is_set():
            return
        try:
            self.queue.put_nowait(message)
        except asyncio.QueueFull:
            self.dropped.set()


class GameFeed:
    """The games and their changes; observes a host (``Host.observe(feed)``) and takes record files."""

    def __init__(self, results: Callable[[], list[GameResult]] | None = None) -> None:
        self.games: dict[str, WatchedGame] = {}
        self._timelines: dict[str, Timeline] = {}  # games in progress
        # Finished games' boards, the most recently opened last (None: a game without a board).
        self._finished: OrderedDict[str, Timeline | None] = OrderedDict()
        self._listeners: set[Listener] = set()
        self._results = results  # the host's results, for the standings; None: no standings (no host)

    # --- the listeners ------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def listen(self) -> Iterator[Listener]:
        listener = Listener()
        self._listeners.add(listener)
        try:
            yield listener
        finally:
            self._listeners.discard(listener)

    def _send(self, message: dict[str, Any]) -> None:
        for listener in list(self._listeners):
            listener.put(message)

    def _send_game(self, game: WatchedGame) -> None:
        self._send({"type": "game", "game": game.summary()})

    # --- what the page asks for ---------------------------------------------------------------------------

    def summaries(self) -> list[dict[str, Any]]:
        return [game.summary() for game in self.games.values()]

    def standings(self) -> list[dict[str, Any]] | None:
        if self._results is None:
            return None
        return [{"name": name, "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
                 "forfeits": t.forfeits, "adjourned": t.adjourned, "score": t.score}
                for name, t in standings(self._results()).items()]

    async def document(self, game_id: str) -> dict[str, Any] | None:
        """A game's JSON: who played, how it stands or ended, and its boards move by move; None: no such
        game. A record the rules engine cannot replay gives its reason in ``error`` and no boards. A finished
        game's boards are built in a thread from its record, off the loop where the host's games run."""
        game = self.games.get(game_id)
        if game is None:
            return None
        doc = game.summary()
        timeline = self._timelines.get(game_id)
        if timeline is None and game_id in self._finished:
            self._finished.move_to_end(game_id)
            timeline = self._finished[game_id]
        elif timeline is None:
            try:
                timeline = await asyncio.to_thread(_boards_of, game.record, game.path)
            except OSError as exc:  # its text names the file's full path: say the name and why alone
                doc["error"] = f"cannot show this game: cannot read {doc['record']}: {exc.strerror or 'unreadable'}"
                return doc
            except (ReplayError, ValueError, KeyError, TypeError) as exc:
                doc["error"] = f"cannot show this game: {_without_paths(str(exc), game.path)}"
                return doc
            if self.games.get(game_id) is game:  # not replaced meanwhile (a record file that changed)
                self._keep(game_id, timeline)
        if timeline is None:
            doc["error"] = "the game ended before both setups were in: there is no board to show"
            return doc
        doc.update(timeline.document())
        return doc

    def _keep(self, game_id: str, timeline: Timeline | None) -> None:
        self._finished[game_id] = timeline
        while len(self._finished) > KEPT_TIMELINES:
            self._finished.popitem(last=False)

    # --- the host's observer ------------------------------------------------------------------------------

    def game_started(self, event: GameStarted) -> None:
        game = WatchedGame(id=event.game_id, red=event.names[Side.RED], blue=event.names[Side.BLUE], source="host",
                           started=event.started, move_time_max=event.move_time_max, to_move=str(Side.RED),
                           asked_at=time.monotonic())
        self._timelines[game.id] = Timeline(event.options, event.setups)
        self.games[game.id] = game
        self._send_game(game)

    def move_played(self, event: MovePlayed) -> None:
        game, timeline = self.games.get(event.game_id), self._timelines.get(event.game_id)
        if game is None or timeline is None or event.ply != timeline.referee.ply + 1:
            return  # not a game this feed saw start (it was made after), or out of step: the end resyncs it
        entry = timeline.add(event.played.move, event.recorded, seconds=round(event.seconds, 4))
        game.plies = event.ply
        game.think[str(event.played.side)] += event.seconds
        game.to_move = str(event.played.side.other)
        game.asked_at = time.monotonic()
        self._send({"type": "move", "game": game.id, "move": entry, "clock": game.clock()})

    def game_over(self, event: GameEnded) -> None:
        result = event.result
        game = self.games.get(result.game_id)
        if game is None:  # it ended before its board was set up (a forfeit in the setup phase)
            game = WatchedGame(id=result.game_id, red=result.names[Side.RED], blue=result.names[Side.BLUE],
                               source="host")
            self.games[game.id] = game
        game.status = FINISHED
        game.plies = result.plies
        game.result = _result_of(result)
        game.record, game.path = result.record, result.record_path
        if result.record is not None and not game.started:
            game.started = result.record.started
        timeline = self._timelines.pop(game.id, None)
        if timeline is not None and timeline.referee.ply == result.plies:
            self._keep(game.id, timeline)  # complete: every move was told
        self._send_game(game)
        standings = self.standings()
        if standings is not None:
            self._send({"type": "standings", "standings": standings})

    # --- record files -------------------------------------------------------------------------------------

    def add_record(self, path: Path, record: GameRecord) -> WatchedGame:
        """A record file on the page (a new one, or one that changed since it was added)."""
        key = str(path.resolve())
        game_id = self._record_id(path, key)
        result = record.result
        game = WatchedGame(id=game_id, red=record.red.name, blue=record.blue.name, source="record",
                           status=FINISHED, started=record.started, plies=len(record.moves), result=result,
                           path=path)
        self.games[game_id] = game
        self._finished.pop(game_id, None)  # it may have changed
        self._send_game(game)
        return game

    def remove_record(self, path: Path) -> None:
        key = str(path.resolve())
        for game_id, game in list(self.games.items()):
            if game.source == "record" and game.path is not None and str(game.path.resolve()) == key:
                del self.games[game_id]
                self._finished.pop(game_id, None)
                self._send({"type": "removed", "game": game_id})

    def _record_id(self, path: Path, key: str) -> str:
        """The file's name without .json; a second file of the same name gets a number."""
        for game_id, game in self.games.items():
            if game.source == "record" and game.path is not None and str(game.path.resolve()) == key:
                return game_id
        base, n = safe_id(path.stem), 1
        game_id = base
        while game_id in self.games:
            n += 1
            game_id = f"{base}~{n}"
        return game_id


class RecordsFolder:
    """Watches a folder of records (its own files, not its subfolders): each new or changed record goes on
    the page, a deleted one comes off. ``since``: only files written from then on (a Unix time), as the lab
    adds its games to a folder that may hold older runs; ``limit``: the newest that many files at most."""

    def __init__(self, feed: GameFeed, folder: Path, *, since: float | None = None, interval: float = 1.0,
                 limit: int = 1000) -> None:
        self.feed = feed
        self.folder = folder
        self.since = since
        self.interval = interval
        self.limit = limit
        self._seen: dict[Path, float] = {}  # path -> mtime it was read at
        self._unreadable: dict[Path, float] = {}  # not a record (or half written) at that mtime

    def _scan(self) -> dict[Path, float]:
        found: list[tuple[float, Path]] = []
        try:
            with os.scandir(self.folder) as entries:
                for entry in entries:
                    if not entry.name.endswith(".json") or not entry.is_file():
                        continue
                    mtime = entry.stat().st_mtime
                    if self.since is None or mtime >= self.since:
                        found.append((mtime, Path(entry.path)))
        except FileNotFoundError:
            return {}
        found.sort(reverse=True)
        return {path: mtime for mtime, path in found[: self.limit]}

    async def poll(self) -> None:
        """One look at the folder."""
        now = await asyncio.to_thread(self._scan)
        for path in [p for p in self._seen if p not in now]:
            del self._seen[path]
            self.feed.remove_record(path)
        for path, mtime in sorted(now.items(), key=lambda item: item[1]):
            if self._seen.get(path) == mtime or self._unreadable.get(path) == mtime:
                continue
            try:
                record = await asyncio.to_thread(GameRecord.load, path)
            except (OSError, ValueError, KeyError, TypeError) as exc:
                self._unreadable[path] = mtime  # not a record; tried again only if it changes
                log.debug("web.not_a_record", path=str(path), problem=str(exc))
                continue
            self._unreadable.pop(path, None)
            self._seen[path] = mtime
            self.feed.add_record(path, record)

    async def run(self) -> None:
        while True:
            await self.poll()
            await asyncio.sleep(self.interval)
