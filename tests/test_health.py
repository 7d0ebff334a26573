"""The heartbeat file and ``perspecto health`` (the Docker HEALTHCHECK)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main as cli
from bot.daemon.health import HealthReporter, check_health, default_state_dir, health_path, read_health, write_health
from bot.host.referee import Host, HostSettings
from tests.mqtt_broker import REPO, BotProcesses, free_port


def beat(path: Path, state: str, age: float = 0.0, **extra: Any) -> None:
    now = time.time() - age
    write_health(path, {"state": state, "pid": 1, "updated_ts": now, "game_id": None, **extra})


@pytest.mark.parametrize("state, age, healthy, says", [
    ("idle", 1.0, True, "healthy: idle"),
    ("in_game", 1.0, True, "healthy: in_game (game g-7)"),
    ("connected", 1.0, True, "healthy: connected"),
    ("disconnected", 1.0, False, "unhealthy: disconnected"),
    ("idle", 31.0, False, "stale: idle"),
    ("dancing", 1.0, False, "unhealthy: dancing"),
])
def test_check_health(tmp_path: Path, state: str, age: float, healthy: bool, says: str) -> None:
    path = tmp_path / "health.json"
    beat(path, state, age, game_id="g-7" if state == "in_game" else None)
    ok, line = check_health(path, max_age=30)
    assert ok is healthy and line.startswith(says), line


def test_a_missing_or_broken_file_is_unhealthy(tmp_path: Path) -> None:
    assert check_health(tmp_path / "nope.json") == (False, f"no heartbeat file at {tmp_path / 'nope.json'} "
                                                           "(is the daemon running?)")
    (tmp_path / "broken.json").write_text('{"state": "idle", "upd')
    assert not check_health(tmp_path / "broken.json")[0]
    (tmp_path / "old.json").write_text('{"state": "idle"}')
    assert check_health(tmp_path / "old.json") == (False, f"{tmp_path / 'old.json'}: no updated_ts")


def test_the_command_exits_0_or_1_and_prints_the_state(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSPECTO_STATE_DIR", str(tmp_path))
    assert default_state_dir() == tmp_path and health_path() == tmp_path / "health.json"
    assert cli(["health"]) == 1
    assert "no heartbeat file" in capsys.readouterr().out
    beat(tmp_path / "health.json", "in_game", game_id="g-1")
    assert cli(["health"]) == 0
    assert capsys.readouterr().out.startswith("healthy: in_game (game g-1)")
    beat(tmp_path / "health.json", "idle", age=10)
    assert cli(["health", "--max-age", "5"]) == 1
    assert cli(["health", "--max-age", "20", "--json"]) == 0
    out = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(out)["healthy"] is True and json.loads(out)["heartbeat"]["state"] == "idle"
    other = tmp_path / "elsewhere" / "beat.json"
    beat(other, "disconnected")
    assert cli(["health", "--file", str(other)]) == 1


def test_the_installed_command_runs_without_a_daemon(tmp_path: Path) -> None:
    """What the Docker HEALTHCHECK runs: no daemon, no file, exit 1."""
    run = subprocess.run([sys.executable, "-m", "bot.cli", "health"], cwd=REPO, capture_output=True, text=True,
                         env={**os.environ, "PERSPECTO_STATE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)},
                         timeout=60)
    assert run.returncode == 1 and "no heartbeat file" in run.stdout


async def test_the_reporter_writes_on_change_and_beats_between(tmp_path: Path) -> None:
    path = tmp_path / "health.json"
    status: dict[str, Any] = {"state": "disconnected", "game_id": None}
    reporter = HealthReporter(path, lambda: dict(status), interval=0.05)
    reporter.start()
    first = read_health(path)
    assert first is not None and first["state"] == "disconnected" and first["pid"] == os.getpid()
    status.update(state="in_game", game_id="g-2")
    reporter.refresh()  # a change is written at once
    now = read_health(path)
    assert now is not None and (now["state"], now["game_id"]) == ("in_game", "g-2")
    await asyncio.sleep(0.2)  # and the heartbeat keeps it fresh
    later = read_health(path)
    assert later is not None and later["updated_ts"] > now["updated_ts"] and later["since"] == now["since"]
    await reporter.stop({"state": "disconnected", "stopped": True})
    final = read_health(path)
    assert final is not None and final["state"] == "disconnected" and final["stopped"] is True
    assert reporter.history == ["disconnected", "in_game", "disconnected"]
    assert not list(tmp_path.glob(".*.tmp"))  # written by rename: no leftovers


async def test_the_states_of_a_session(tmp_path: Path) -> None:
    """A bot started before its host: disconnected, then connected and idle, in_game during a game (with
    its id), idle after it, and disconnected once it has stopped; ``perspecto health`` agrees."""
    port = free_port()
    bots = BotProcesses(tmp_path / "bots")
    process = await bots.start("h", "--connect", f"127.0.0.1:{port}", "--health-interval", "0.2")
    path = bots.state_dir("h") / "health.json"
    seen: list[tuple[str, str | None]] = []

    async def watch() -> None:
        while True:
            data = read_health(path)
            if data is not None and (not seen or seen[-1] != (data["state"], data.get("game_id"))):
                seen.append((data["state"], data.get("game_id")))
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    host = Host(HostSettings(port=port, move_limit=100, move_time_max=2.0, call_timeout=3.0))
    try:
        for _ in range(500):  # the bot is up and knocking before the host listens
            if seen:
                break
            await asyncio.sleep(0.02)
        assert seen and seen[0] == ("disconnected", None)
        assert not check_health(path)[0]
        await host.start()
        await bots.start("o", "--connect", f"127.0.0.1:{port}", seed=2)
        bot = await host.wait_for_bot(token="h", timeout=30)
        other = await host.wait_for_bot(token="o", timeout=30)
        await asyncio.sleep(0.1)
        assert check_health(path, max_age=5)[0]
        result = await host.play_game(bot, other)
        await asyncio.sleep(0.3)
        assert check_health(path, max_age=5)[1].startswith("healthy: idle")
        await bot.goodbye("test over")
        assert await asyncio.wait_for(process.wait(), 15) == 0
        await asyncio.sleep(0.1)
    finally:
        watcher.cancel()
        await bots.stop()
        await host.close()
    states = [state for state, _ in seen]
    assert states[0] == "disconnected" and states[-1] == "disconnected"
    assert ("in_game", result.game_id) in seen
    game_start = seen.index(("in_game", result.game_id))
    assert "idle" in states[:game_start] and "idle" in states[game_start:]
    final = read_health(path)
    assert final is not None and final.get("stopped") is True and final["games"] == 1
    assert not check_health(path)[0]
    log_states = [e["state"] for e in bots.events("h", "bot.health")]
    assert log_states[0] == "disconnected" and "connected" in log_states and log_states[-1] == "disconnected"
