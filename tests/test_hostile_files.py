"""Hostile files against every reader of game records and of the heartbeat (issue 46): a remote bot's name with
terminal escape codes, a deeply nested JSON file in a records folder, a record whose fields are out of range,
and files without end (``/dev/zero``, a huge sparse file, a FIFO). Each test runs the real command
(``perspecto analyse``, ``replay``, ``replay --web``, ``gauntlet --report``, ``health``) or the lab's page as
``gauntlet --web`` runs it. A bad file is one line saying why; the good records beside it are still read."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main as cli_main
from bot.web.service import LabWeb
from engine_ext.bounded_read import size_text
from engine_ext.rules.record import MAX_RECORD_BYTES, MAX_RECORD_DEPTH, GameRecord, RecordError
from tests.test_web_commands import fetch_json, games_when, web_command
from tests.web_records import random_record

REPO = Path(__file__).resolve().parents[1]
# The bot name of issue 46: clear the screen, turn red, retitle the window.
HOSTILE_NAME = "\x1b[2J\x1b[31mevil\x1b]0;title\x07"
RAW = ("\x1b[2J", "\x1b]0;", "\x07")
SHOWN = "\\x1b[2J\\x1b[31mevil\\x1b]0;title\\x07"  # how it must show: escaped
NESTED = "[" * 200_000 + "]" * 200_000
# The address space a command under test may take: a reader without a bound fails here, not the machine.
MEMORY_CAP = 2 * 2**30


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def perspecto(*args: str, timeout: float = 60, colour: bool = False) -> subprocess.CompletedProcess[str]:
    """``perspecto ARGS`` as a process; ``colour``: forced, so that rich writes escape codes of its own, as on a
    terminal (and none of a record's)."""
    env = {key: value for key, value in os.environ.items() if key != "FORCE_COLOR"}
    env.update({"COLUMNS": "300", **({"FORCE_COLOR": "1"} if colour else {})})
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env=env, preexec_fn=_cap_memory)


def good_record(folder: Path, name: str, seed: int = 1, **players: str) -> Path:
    record = random_record(seed, plies=60, game_id=name)
    record.red.name = players.get("red", record.red.name)
    path = folder / f"{name}.json"
    record.save(path)
    return path


# --- 1. escape codes from a record's names and moves ---------------------------------------------------------


def test_analyse_shows_a_hostile_name_escaped(tmp_path: Path) -> None:
    path = good_record(tmp_path, "g", red=HOSTILE_NAME)
    run = perspecto("analyse", str(path), colour=True)
    assert run.returncode == 0, run.stderr
    assert not any(raw in run.stdout for raw in RAW), run.stdout
    assert run.stdout.count(SHOWN) == 7  # every table and line that names the player (issue 46 saw 7 raw)


def test_a_record_that_quotes_escape_codes_is_refused_escaped(tmp_path: Path) -> None:
    """A replay's complaint quotes the record (the move it refuses): replay and analyse print it escaped."""
    path = good_record(tmp_path, "g")
    data = json.loads(path.read_text())
    data["moves"][0]["move"] = "\x1b[2J\x1b]0;title\x07"
    path.write_text(json.dumps(data))
    for command in ("replay", "analyse"):
        run = perspecto(command, str(path), colour=True)
        assert run.returncode == 1 and "ply 1: \\x1b[2J\\x1b]0;title\\x07" in run.stdout, run.stdout + run.stderr
        assert not any(raw in run.stdout for raw in RAW), run.stdout


# --- 2. a deeply nested file in a records folder ----------------------------------------------------------------


def folder_with_a_nested_file(tmp_path: Path) -> Path:
    folder = tmp_path / "records"
    folder.mkdir()
    good_record(folder, "good", red="perspecto")
    (folder / "nested.json").write_text(NESTED)
    return folder


def test_analyse_and_the_gauntlet_report_skip_a_nested_file(tmp_path: Path) -> None:
    folder = folder_with_a_nested_file(tmp_path)
    said = f"nested.json: not a perspecto-record/1 record: JSON nested deeper than {MAX_RECORD_DEPTH} levels"
    run = perspecto("analyse", str(folder))
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert said in run.stdout and "1 games" in run.stdout and "1 of 2 records could not be analysed" in run.stdout
    run = perspecto("gauntlet", "--report", str(folder), "--profile", "perspecto")
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert "nested.json: left out: " in run.stdout and "blue-bot" in run.stdout  # the good game's opponent


async def test_replay_web_serves_a_folder_with_a_nested_file(tmp_path: Path) -> None:
    folder = folder_with_a_nested_file(tmp_path)
    process, url = await web_command("replay", str(folder), "--web", "127.0.0.1:0")
    try:
        await games_when(url, lambda listing: [g["id"] for g in listing["games"]] == ["good"], timeout=20)
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def drop_nested_then_a_record(folder: Path) -> None:
    """A nested file, then a record written after it: the folder's watcher meets the nested file first."""
    (folder / "nested.json").write_text(NESTED)
    later = good_record(folder, "later", seed=2)
    stamp = time.time() + 2
    os.utime(later, (stamp, stamp))


async def test_a_nested_file_dropped_while_the_page_serves_leaves_the_watcher_running(tmp_path: Path) -> None:
    folder = tmp_path / "records"
    folder.mkdir()
    good_record(folder, "first")
    process, url = await web_command("replay", str(folder), "--web", "127.0.0.1:0")
    try:
        await games_when(url, lambda listing: len(listing["games"]) == 1, timeout=20)
        drop_nested_then_a_record(folder)
        listing = await games_when(url, lambda listing: len(listing["games"]) == 2, timeout=20)
        assert sorted(g["id"] for g in listing["games"]) == ["first", "later"]
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(20):
            assert await process.wait() == 0  # it was 1, with the watcher's RecursionError as a traceback
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_the_lab_page_skips_a_nested_file(tmp_path: Path) -> None:
    """The page ``gauntlet --web`` (and ``match --web``) serves: LabWeb watching the records folder."""
    folder = tmp_path / "records"
    folder.mkdir()
    web = LabWeb("127.0.0.1:0", folder)
    url = web.start()
    try:
        drop_nested_then_a_record(folder)
        deadline = time.monotonic() + 20
        while [g["id"] for g in fetch_json(url + "api/games")["games"]] != ["later"]:
            assert time.monotonic() < deadline, "the record after the nested file never came"
            time.sleep(0.2)
    finally:
        web.stop()


# --- 3. fields out of range: one clear error where the record is parsed ---------------------------------------


@pytest.mark.parametrize(("change", "said"), [
    (lambda d: d.update(ruleset="../../x"), "ruleset: unknown ruleset '../../x' (known: classic, barrage, mini)"),
    (lambda d: d["options"].update(move_limit=1e30), "options.move_limit: input should be a valid integer, got 1e+30"),
    (lambda d: d["options"].update(move_limit=9000), "options: move_limit must be 1..8000, not 9000"),
    (lambda d: d["options"].update(two_squares="x"), "options.two_squares: input should be a valid integer, got 'x'"),
    (lambda d: d["options"].update(range_attacks=1), "options.range_attacks: input should be a valid boolean, got 1"),
    (None, f"not a perspecto-record/1 record: JSON nested deeper than {MAX_RECORD_DEPTH} levels"),
])
def test_replay_refuses_a_bad_field_with_one_line(change: Any, said: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = good_record(tmp_path, "g")
    if change is None:
        path.write_text(NESTED)
    else:
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))
    with pytest.raises(RecordError) as refused:  # what every reader gets: the web views, analyse, the lab
        GameRecord.load(path)
    assert said in str(refused.value)
    assert cli_main(["replay", str(path)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert f"cannot read {path}: " in out and said in out


def test_brackets_inside_strings_are_no_nesting(tmp_path: Path) -> None:
    """The depth is counted outside strings only: a name of brackets (and escaped quotes) is a name."""
    name = '[[[{{{' * 50 + '\\"[[[' * 50 + '"]]]'
    path = good_record(tmp_path, "g", red=name)
    assert GameRecord.load(path).red.name == name


def test_the_options_a_record_keeps_beside_the_rules_pass_as_they_are(tmp_path: Path) -> None:
    path = good_record(tmp_path, "g")
    data = json.loads(path.read_text())
    data["options"].update(nodes=None, move_time=2.0, referee="ucc2012", two_squares=None)
    path.write_text(json.dumps(data))
    assert GameRecord.load(path).options == data["options"]


# --- 4. files without end ---------------------------------------------------------------------------------------


def test_replay_and_health_stop_at_their_bound_on_dev_zero() -> None:
    started = time.monotonic()
    run = perspecto("replay", "/dev/zero", timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
    assert f"cannot read /dev/zero: larger than {size_text(MAX_RECORD_BYTES)}" in run.stdout, run.stdout
    run = perspecto("health", "--file", "/dev/zero", timeout=60)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert "no heartbeat in /dev/zero: larger than 64 KiB" in run.stdout, run.stdout
    assert time.monotonic() - started < 30


def test_analyse_skips_a_huge_file_and_a_fifo_in_a_folder(tmp_path: Path) -> None:
    """A 1 GiB sparse file is refused at the bound, unread; a FIFO nobody writes to reads as empty, not as a
    wait for ever; the good record beside them is analysed."""
    folder = tmp_path / "records"
    folder.mkdir()
    good_record(folder, "good")
    with (folder / "huge.json").open("wb") as f:
        f.truncate(2**30)
    os.mkfifo(folder / "pipe.json")
    run = perspecto("analyse", str(folder), timeout=60)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"huge.json: larger than {size_text(MAX_RECORD_BYTES)}, the most a game record may hold" in run.stdout
    assert "pipe.json: not JSON" in run.stdout and "1 games" in run.stdout
