"""bench/soak, short: 50 games of real bots over TCP and MQTT on a real ``perspecto host`` with every fault once
(kill -9 of a bot, a broker restart, a full disk, a reconnecting flood, both cores busy) (issue 46)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mqtt_broker import mosquitto_binary

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.mqtt
def test_a_short_soak_with_every_fault_costs_honest_bots_no_game_and_loses_no_result(tmp_path: Path) -> None:
    mosquitto_binary()  # fails clearly without mosquitto
    report_path = tmp_path / "soak.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "soak"), "--games", "50", "--seed", "7", "--fault-every", "7",
         "--json", str(report_path), "--work", str(tmp_path / "work")],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=1200,
    )
    assert report_path.is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    report = json.loads(report_path.read_text())
    assert report["host_exit"] == 0 and not report["stalled"] and report["games"] >= 50, done.stdout[-3000:]
    every = {"kill", "broker", "flood", "cpu"} | ({"disk"} if report["tmpfs"] else set())
    assert every <= set(report["fault_counts"]), report["faults"]
    assert not [f for f in report["faults"] if "error" in f], report["faults"]
    assert report["honest_forfeits"] == [], report["honest_forfeits"]
    assert report["results_lost"] == [], report["results_lost"]
    assert report["standings_disagree"] == [], report["standings_disagree"]
    # a record can be missing only for a reason the host gave (the full disk), never silently
    assert all(entry["record_error"] for entry in report["records_missing"]), report["records_missing"]
    assert done.returncode == 0, done.stdout[-3000:]
