"""The lobby of a real ``perspecto host`` over TCP: what ``--max-games`` counts (issue 46, item 5)."""

from __future__ import annotations

import json

from tests.mqtt_broker import BotProcesses
from tests.test_host_hostile import RawPeer
from tests.test_host_signals import HostProcess, until_state


async def test_max_games_counts_games_played_not_games_a_pairing_planned(
    host_process: HostProcess, bots: BotProcesses
) -> None:
    """``--max-games 2 --games-per-pairing 2``: the bot of token ``crash`` dies in game 1 (its connection gone
    at its first call), comes back as a real bot, and the host plays game 2 with it before it stops. Before, the
    host counted the pairing's two games as started when it began and stopped after one game."""
    host = host_process
    await host.start("--token", "honest", "--token", "crash", "--games-per-pairing", "2", "--max-games", "2",
                     "--move-time-max", "2", "--move-time-average", "0.2", "--move-limit", "100",
                     "--resume-grace", "0")
    await bots.start("honest", "--connect", f"127.0.0.1:{host.port}")
    await until_state(bots, "honest", "idle")
    crasher = await RawPeer.connect(host.port)
    await crasher.hello("crash", name="bot-crash")
    first = await crasher.receive(timeout=60)  # the host's first call of game 1
    assert first is not None and "method" in first, first
    crasher.close()  # a crash: the connection gone without a word
    await host.line_with("by forfeit", timeout=60)
    await bots.start("crash", "--connect", f"127.0.0.1:{host.port}", seed=2)  # restarted
    assert await host.exit_code(timeout=120) == 0, host.stderr[-3000:]
    [path] = (host.records / "standings").glob("*.json")
    document = json.loads(path.read_text())
    assert document["final"] is True
    assert document["games"] == 2, document["results"]
    first_game, second_game = document["results"]
    assert first_game["reason"] == "forfeit_crash"
    assert second_game["reason"] != "forfeit_crash" and {second_game["red"], second_game["blue"]} == {
        "bot-honest", "bot-crash"}
