"""A full or read-only disk, end to end with real ``perspecto host`` and ``perspecto bot`` processes (issue 31,
point 4). A folder that cannot be written is made two ways: a file where the folder should be (works
anywhere, root included, which chmod 0555 would not stop), and a real full disk, a 64 KB tmpfs filled to the
last byte (needs ``mount``: skipped where it is not allowed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.daemon.opponent_store import OpponentStore
from bot.host.referee import Host, HostSettings
from tests.helpers import kill_left_over, start_bot_process
from tests.test_host_e2e import Bots

REPO = Path(__file__).resolve().parents[1]
NORMAL_ENDS = {"flag", "no_moves", "no_movable_pieces", "move_limit"}


def fill(folder: Path) -> None:
    """Write until the disk says it is full."""
    with open(folder / "filler", "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 64 KB tmpfs with no byte left."""
    mount_point = tmp_path / "full"
    mount_point.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount_point)],
                             capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        fill(mount_point)
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True, check=False)


@pytest.fixture(params=["blocked", "full"])
def unwritable(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A folder path that cannot be written: under a file, or on a full disk."""
    if request.param == "blocked":
        blocker = tmp_path / "blocker"
        blocker.write_text("a file where a folder should be")
        return blocker / "folder"
    folder: Path = request.getfixturevalue("full_disk") / "folder"
    with contextlib.suppress(OSError):  # a directory may still fit on a full tmpfs: the files will not
        folder.mkdir()
    return folder


@pytest.mark.long
async def test_the_host_keeps_every_result_when_its_records_cannot_be_written(unwritable: Path,
                                                                              tmp_path: Path) -> None:
    """--max-games 2: both games played and scored, the standings (on a healthy disk) hold both and say
    which records were not saved; exit 0. It used to lose every result and exit 1 after the first game."""
    standings = tmp_path / "standings.json"
    host = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "host", "--listen", "127.0.0.1:0", "--max-games", "2",
        "--move-limit", "60", "--records", str(unwritable), "--standings", str(standings),
        cwd=REPO, env={**os.environ, "COLUMNS": "200"}, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    bots = Bots(0)
    try:
        assert host.stdout is not None
        banner = (await asyncio.wait_for(host.stdout.readline(), 20)).decode()
        bots.port = int(banner.split("127.0.0.1:")[1].split()[0])
        first = await bots.real("x", seed=3)
        second = await bots.real("y", seed=4)
        out, err = await asyncio.wait_for(host.communicate(), 90)
        assert host.returncode == 0, err.decode()
        assert await asyncio.wait_for(first.wait(), 10) == 0
        assert await asyncio.wait_for(second.wait(), 10) == 0
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()
        await bots.stop()
    text, log = out.decode(), err.decode()
    assert "Traceback" not in log and "never retrieved" not in log
    assert text.count(" plies") == 2 and text.count("record was not saved") == 2
    assert "2 game record(s) not saved" in text
    assert log.count("host.record_not_saved") == 2
    saved = json.loads(standings.read_text())
    assert saved["final"] is True and saved["games"] == 2
    assert {b["name"]: b["games"] for b in saved["bots"]} == {"random-x": 2, "random-y": 2}
    assert all(r["record"] is None and str(unwritable) in r["record_error"] for r in saved["results"])
    assert len(saved["not_saved"]) == 2


async def play_one_game(tmp_path: Path, state_dir: Path) -> tuple[str, str, int]:
    """A real ``perspecto bot`` (learning and journal on) with ``state_dir`` against a second one with a
    healthy folder, one game on an in-process host; the game's end, the first bot's log and exit code."""
    host = Host(HostSettings(move_limit=40, move_time_max=1.0, grace=0.3, call_timeout=5.0))
    await host.start()
    bots = [await start_bot_process(host.port, token, seed=1, state_dir=folder, log_level="info",
                                    env={**os.environ, "PERSPECTO_LOG_JSON": "1"})
            for token, folder in (("under-test", state_dir), ("other", tmp_path / "healthy"))]
    try:
        red, blue = [await host.wait_for_bot(token=token, timeout=30) for token in ("under-test", "other")]
        first = await host.play_game(red, blue)
        second = await host.play_game(blue, red)  # the next game too: the journal's failure cost it once
        for session in (red, blue):
            await session.goodbye("test over")
        logs = [await asyncio.wait_for(bot.communicate(), 20) for bot in bots]
    finally:
        await kill_left_over(bots)
        await host.close()
    for result in (first, second):
        assert not result.forfeits and result.reason in NORMAL_ENDS, result.detail
    assert bots[0].returncode is not None
    return first.reason, logs[0][1].decode(), bots[0].returncode


@pytest.mark.long
async def test_a_bot_whose_state_folder_cannot_be_written_plays_on(unwritable: Path, tmp_path: Path) -> None:
    """It used to exit 1 with a traceback at start (a read-only folder), or forfeit its games (a full one)."""
    _reason, log, code = await play_one_game(tmp_path, unwritable)
    assert code == 0, log
    assert "Traceback" not in log
    events = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    names = {e["event"] for e in events}
    assert "bot.store_unavailable" in names
    assert names & {"bot.journal_unavailable", "bot.journal_write_failed"}
    assert sum(e["event"] == "bot.game_not_stored" for e in events) == 2


async def test_a_bot_with_a_damaged_store_moves_it_aside_and_plays_on(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "opponents.sqlite").write_bytes(b"SQLite format 3\0" + b"\x13" * 8000)  # a header, then garbage
    _reason, log, code = await play_one_game(tmp_path, state)
    assert code == 0, log
    assert "Traceback" not in log and "bot.store_moved_aside" in log
    assert len(list(state.glob("opponents.sqlite.corrupt-*"))) == 1
    with OpponentStore(state / "opponents.sqlite") as store:
        assert store.history("other").games == 2


@pytest.mark.long
def test_a_match_plays_on_when_its_records_cannot_be_written(tmp_path: Path) -> None:
    """``perspecto match --via-host``: the bots' logs and the records go under --records; neither is a reason
    to stop (the bots' state folders are under it too)."""
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a folder should be")
    run = subprocess.run(
        [sys.executable, "-m", "bot.cli", "match", "random", "random", "--via-host", "--games", "2", "--move-limit",
         "60", "--seed", "5", "--records", str(blocker / "records")],
        cwd=REPO, env={**os.environ, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "random-a vs random-b: 2 games" in run.stdout
    assert "2 game record(s) not saved" in run.stdout
    assert "Traceback" not in run.stderr
