"""A full or read-only disk never costs a game or a result (issue 31, point 4).

The bot: a journal write that fails (ENOSPC, injected at the journal's fsync) leaves the game and the next one
playing, from memory; a store that cannot be read or written costs what is learnt, never the game; a damaged
``opponents.sqlite`` is moved aside and a fresh one started; a state folder that cannot be used at all is
logged and shown in the heartbeat (``not_saved``). Finished journals are bounded in number and in bytes.
The host and real processes: tests/test_full_disk_e2e.py.
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import structlog

from bot.config import get_profile
from bot.daemon import journal as journal_module
from bot.daemon.client import BotClient
from bot.daemon.health import check_health, read_health
from bot.daemon.journal import GameJournal, read_finished
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import OpponentStore, open_store
from bot.daemon.service import BotDaemon
from bot.host.referee import Host, HostSettings
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from protocol.endpoint import Channel
from protocol.messages import PROTOCOL_VERSION, HelloParams
from tests.helpers import FakeHost


class Disk:
    """The journal's fsync, failing with ENOSPC while ``full``: what a full disk does to a journal write."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.full = False
        real = journal_module.os.fdatasync

        def fdatasync(fd: int) -> None:
            if self.full:
                raise OSError(errno.ENOSPC, "No space left on device")
            real(fd)

        monkeypatch.setattr(journal_module.os, "fdatasync", fdatasync)


async def no_connection() -> Channel:
    raise AssertionError("the test plays the host itself")


def daemon_for(tmp_path: Path, client: BotClient, journal: GameJournal | None) -> BotDaemon:
    return BotDaemon(client, HelloParams(name="bot-t", version="0", protocol=PROTOCOL_VERSION), no_connection,
                     transport="memory", journal=journal, health_path=tmp_path / "health.json")


async def play(host: FakeHost, plies: int) -> None:
    for _ in range(plies):
        assert host.referee is not None
        if host.referee.result is not None:
            return
        await host.ply()


def beat(daemon: BotDaemon, tmp_path: Path) -> dict[str, Any]:
    assert daemon.health is not None
    daemon.health.refresh(force=True)
    data = read_health(tmp_path / "health.json")
    assert data is not None
    return data


async def test_a_full_disk_costs_neither_the_game_nor_the_next_one(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    disk = Disk(monkeypatch)
    store = OpponentStore(tmp_path / "opponents.sqlite")
    client = BotClient(get_profile("random"), seed=3, memory=OpponentMemory(store=store))
    journal = GameJournal(tmp_path / "journal", "bot-t")
    daemon = daemon_for(tmp_path, client, journal)
    host = FakeHost(client, Side.RED, seed=4, game_id="g-1", handler=daemon.handler)
    await host.start()
    await play(host, 4)
    assert journal.path.exists() and beat(daemon, tmp_path)["not_saved"] == {}

    disk.full = True
    with structlog.testing.capture_logs() as logs:
        await play(host, 6)  # every call answered: none raises
    [failed] = [e for e in logs if e["event"] == "bot.journal_write_failed"]
    assert failed["log_level"] == "error" and "No space left" in failed["error"]
    assert not journal.path.exists()  # a journal with calls missing would resume the game wrongly
    assert client.in_game and daemon.handler.last is not None  # a reconnect could still resume from memory
    heartbeat = beat(daemon, tmp_path)
    assert "No space left" in heartbeat["not_saved"]["journal"]
    _healthy, line = check_health(tmp_path / "health.json")  # (disconnected: the test is the host)
    assert "NOT SAVED: journal: " in line and "No space left" in line
    await daemon.handler.handle_notification("gameOver", host.game_over(winner=Side.RED, reason="flag"))
    assert store.history("tester").results == {"win": 1}  # the store is on another disk here

    # The next game, on the same full disk: played all the same.
    second = FakeHost(client, Side.BLUE, seed=5, game_id="g-2", handler=daemon.handler)
    await second.start()
    await play(second, 6)
    await daemon.handler.handle_notification("gameOver", second.game_over(winner=Side.RED, reason="flag"))
    assert store.history("tester").results == {"win": 1, "loss": 1}
    assert not list((tmp_path / "journal" / "done").glob("g-2-*"))

    # Space again: the next game is journaled, and the heartbeat says all is written.
    disk.full = False
    third = FakeHost(client, Side.RED, seed=6, game_id="g-3", handler=daemon.handler)
    await third.start()
    await play(third, 2)
    assert journal.path.exists() and beat(daemon, tmp_path)["not_saved"] == {}
    journal.close()
    store.close()


def finish_games(journal: GameJournal, games: int, lines: int) -> None:
    for number in range(games):
        journal.begin()
        for _ in range(lines):
            journal._append({"filler": "x" * 200})
        journal.entries = []
        journal.finish(f"game {number}")


def test_finished_journals_are_bounded_in_number_and_bytes(tmp_path: Path) -> None:
    journal = GameJournal(tmp_path, "bot-t", fsync=False, keep=5, keep_bytes=20_000)
    finish_games(journal, 12, lines=30)  # about 6.3 KB a game: three fit in 20 KB
    done = list((tmp_path / "done").glob("*.jsonl"))
    assert len(done) == 3 and sum(p.stat().st_size for p in done) <= 20_000
    journal = GameJournal(tmp_path / "many", "bot-t", fsync=False, keep=4, keep_bytes=10**9)
    finish_games(journal, 7, lines=1)
    assert len(list((tmp_path / "many" / "done").glob("*.jsonl"))) == 4
    big = GameJournal(tmp_path / "big", "bot-t", fsync=False, keep=4, keep_bytes=100)
    finish_games(big, 2, lines=30)  # the newest game stays, whatever its size
    assert len(list((tmp_path / "big" / "done").glob("*.jsonl"))) == 1


def test_a_damaged_store_is_moved_aside_and_a_fresh_one_started(tmp_path: Path) -> None:
    path = tmp_path / "opponents.sqlite"
    path.write_bytes(b"this is not a database, it was damaged" * 200)
    with structlog.testing.capture_logs() as logs:
        store, problem = open_store(path)
    assert store is not None and problem is None
    [aside] = tmp_path.glob("opponents.sqlite.corrupt-*")
    assert aside.read_bytes().startswith(b"this is not a database")
    [moved] = [e for e in logs if e["event"] == "bot.store_moved_aside"]
    assert moved["log_level"] == "error" and moved["moved_to"] == str(aside)
    store.record_game("probe", "win")
    assert store.history("probe").results == {"win": 1}
    store.close()


def test_a_store_damaged_inside_is_moved_aside_too(tmp_path: Path) -> None:
    path = tmp_path / "opponents.sqlite"
    with OpponentStore(path) as store:
        for number in range(300):
            store.record_game(f"opponent-{number % 7}", "win", reason="flag", setup="x" * 100)
    data = bytearray(path.read_bytes())
    data[4096: 3 * 4096] = b"\xff" * 2 * 4096  # two pages of the tables, scrambled
    path.write_bytes(bytes(data))
    store, problem = open_store(path)
    assert store is not None and problem is None and store.opponents() == []
    assert len(list(tmp_path.glob("opponents.sqlite.corrupt-*"))) == 1
    store.close()


def test_a_state_folder_that_cannot_be_made_is_no_store_and_no_crash(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state folder should be")
    with structlog.testing.capture_logs() as logs:
        store, problem = open_store(blocker / "opponents.sqlite")
    assert store is None and problem is not None and str(blocker) in problem
    assert [e["log_level"] for e in logs if e["event"] == "bot.store_unavailable"] == ["error"]
    assert blocker.read_text() == "a file where the state folder should be"  # nothing moved aside


class FailingStore(OpponentStore):
    """A store whose reads or writes fail as a damaged file or a full disk makes them."""

    fail_reads = False
    fail_writes = False

    def history(self, opponent: str) -> Any:
        if self.fail_reads:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return super().history(opponent)

    def opponent_setups(self, opponent: str, ruleset: str, limit: int = 50) -> list[str]:
        if self.fail_reads:
            raise sqlite3.DatabaseError("database disk image is malformed")
        return super().opponent_setups(opponent, ruleset, limit)

    def record_game(self, *args: Any, **kwargs: Any) -> None:
        if self.fail_writes:
            raise sqlite3.OperationalError("database or disk is full")
        super().record_game(*args, **kwargs)


async def test_a_store_that_fails_costs_what_is_learnt_never_the_game(tmp_path: Path) -> None:
    store = FailingStore(tmp_path / "opponents.sqlite")
    store.record_game("tester", "win", est_opp_fear=0.3)
    store.fail_reads = store.fail_writes = True
    memory = OpponentMemory(store=store)
    client = BotClient(get_profile("perspecto"), seed=3, memory=memory)
    daemon = daemon_for(tmp_path, client, None)
    host = FakeHost(client, Side.RED, seed=4, game_id="g-1", handler=daemon.handler)
    with structlog.testing.capture_logs() as logs:
        await host.start()  # createAISetup reads the store: it must answer all the same
        await daemon.handler.handle_notification("gameOver", host.game_over(winner=Side.RED, reason="flag"))
    events = {e["event"]: e for e in logs}
    assert events["bot.store_read_failed"]["log_level"] == "error"
    assert events["bot.store_write_failed"]["log_level"] == "error"
    assert len(client.results) == 1  # the result is kept in memory
    not_saved = beat(daemon, tmp_path)["not_saved"]
    assert "database or disk is full" in not_saved["opponent_store"] and not_saved["games_not_stored"] == 1
    store.fail_reads = store.fail_writes = False
    second = FakeHost(client, Side.BLUE, seed=5, game_id="g-2", handler=daemon.handler)
    await second.start()
    await daemon.handler.handle_notification("gameOver", second.game_over(winner=Side.RED, reason="flag"))
    assert store.history("tester").results == {"win": 1, "loss": 1}
    assert beat(daemon, tmp_path)["not_saved"] == {"games_not_stored": 1}
    store.close()


async def test_without_a_store_the_games_not_stored_are_counted(tmp_path: Path) -> None:
    memory = OpponentMemory(None, problem="/state/opponents.sqlite: read-only")
    client = BotClient(get_profile("random"), seed=3, memory=memory)
    daemon = daemon_for(tmp_path, client, None)
    host = FakeHost(client, Side.RED, seed=4, game_id="g-1", handler=daemon.handler)
    await host.start()
    await daemon.handler.handle_notification("gameOver", host.game_over(winner=Side.RED, reason="flag"))
    assert beat(daemon, tmp_path)["not_saved"] == {"opponent_store": "/state/opponents.sqlite: read-only",
                                                     "games_not_stored": 1}


async def test_a_journal_folder_that_cannot_be_made_leaves_the_bot_playing(tmp_path: Path) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("not a folder")
    client = BotClient(get_profile("random"), seed=3)
    daemon = daemon_for(tmp_path, client, GameJournal(blocker / "journal", "bot-t"))
    with structlog.testing.capture_logs() as logs:
        await daemon._restore()
    assert daemon.journal is None and daemon.handler.journal is None
    assert [e["log_level"] for e in logs if e["event"] == "bot.journal_unavailable"] == ["error"]
    host = FakeHost(client, Side.RED, seed=4, game_id="g-1", handler=daemon.handler)
    await host.start()
    await play(host, 4)
    assert str(blocker) in beat(daemon, tmp_path)["not_saved"]["journal"]


class UnwritableRecords:
    """GameRecord.save failing with ENOSPC: a records folder on a full disk."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def save(record: GameRecord, path: Path) -> None:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))

        monkeypatch.setattr(GameRecord, "save", save)


async def test_a_record_the_host_cannot_save_keeps_the_result(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: the result is the host's, counted and announced, with why its record is not on disk."""
    from tests.test_host_e2e import Bots

    UnwritableRecords(monkeypatch)
    host = Host(HostSettings(move_limit=30, move_time_max=1.0, grace=0.3, call_timeout=5.0,
                             records_dir=tmp_path / "records"))
    await host.start()
    bots = Bots(host.port)
    try:
        await bots.real("a", seed=1)
        await bots.real("b", seed=2)
        red, blue = [await host.wait_for_bot(token=t, timeout=30) for t in ("a", "b")]
        with structlog.testing.capture_logs() as logs:
            result = await host.play_game(red, blue)
        assert host.results == [result] and result.record is not None and result.record_path is None
        assert result.record_error is not None and "No space left" in result.record_error
        assert [e["log_level"] for e in logs if e["event"] == "host.record_not_saved"] == ["error"]
        for session in (red, blue):
            await session.goodbye("test over")
    finally:
        await bots.stop()
        await host.close()


def test_a_heartbeat_that_cannot_be_written_is_logged_once_not_at_every_call(tmp_path: Path) -> None:
    from bot.daemon.health import HealthReporter

    blocker = tmp_path / "state"
    blocker.write_text("not a folder")
    states = iter(["idle", "in_game", "idle", "in_game", "idle"])
    reporter = HealthReporter(blocker / "health.json", lambda: {"state": next(states)})
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):
            reporter.refresh()
    assert [e["event"] for e in logs if e["event"].startswith("bot.health_write")] == ["bot.health_write_failed"]
    assert reporter.write_error is not None


def test_games_that_end_in_the_same_microsecond_keep_a_journal_each(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Finished journals are named by the game and the microsecond it ended: a name taken already (the clock
    did not move, the same game id ended again) must not replace the journal kept under it, and the newest
    ones are the ones kept."""
    monkeypatch.setattr("bot.daemon.journal.time.time_ns", lambda: 1_795_812_179_861_000_000)
    journal = GameJournal(tmp_path, "bot-t", fsync=False, keep=3, keep_bytes=10**9)
    finish_games(journal, 5, lines=1)
    done = sorted((tmp_path / "done").glob("*.jsonl"))
    assert [p.name for p in done] == [f"game-bot-t-1795812179861000-{n}.jsonl" for n in (2, 3, 4)]
    assert [read_finished(p)[1]["end"] for p in done] == ["game 2", "game 3", "game 4"]
