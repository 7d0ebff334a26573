"""The per-opponent store: contents, and survival of a kill -9 in the middle of writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.opponent_store import OpponentStore

REPO = Path(__file__).resolve().parents[1]


def test_history_sums_results_setups_and_fear(tmp_path: Path) -> None:
    with OpponentStore(tmp_path / "o.sqlite") as store:
        store.record_game("probe", "win", setup="fortress", est_opp_fear=0.34)
        store.record_game("probe", "loss", setup="lakes", est_opp_fear=0.30)
        store.record_game("probe", "loss", setup="lakes", est_opp_fear=0.26)
        store.record_game("other", "draw", setup="fortress")
    with OpponentStore(tmp_path / "o.sqlite") as store:  # a restart reads the same
        hist = store.history("probe")
        assert hist.results == {"win": 1, "loss": 2} and hist.games == 3
        assert hist.est_opp_fear == pytest.approx(0.26)
        assert hist.last_setup == "lakes"
        assert hist.setups_lost == {"lakes": 2}
        assert store.history("other").est_opp_fear is None
        assert store.history("nobody").games == 0
        assert store.opponents() == ["other", "probe"]


def test_bad_values_are_refused(tmp_path: Path) -> None:
    with OpponentStore(tmp_path / "o.sqlite") as store:
        with pytest.raises(ValueError, match="result"):
            store.record_game("x", "won")
        with pytest.raises(ValueError, match="est_opp_fear"):
            store.record_game("x", "win", est_opp_fear=1.5)
        assert store.history("x").games == 0


WRITER = """
import sys
from pathlib import Path
from bot.opponent_store import OpponentStore
store = OpponentStore(Path(sys.argv[1]))
i = 0
while True:
    store.record_game("victim", "win" if i % 2 else "loss", setup=f"s{i}", plies=i, est_opp_fear=(i % 100) / 100)
    i += 1
    if i == 50:
        print("ready", flush=True)
"""


def test_kill_minus_nine_in_the_middle_of_writes_loses_nothing_committed(tmp_path: Path) -> None:
    path = tmp_path / "o.sqlite"
    for _round in range(3):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        with OpponentStore(path) as store:
            assert store.integrity_ok()
            hist = store.history("victim")
            # every game row is whole: plies match the setup name written in the same statement
            rows = store._db.execute("SELECT setup, plies FROM game").fetchall()
            assert all(setup == f"s{plies}" for setup, plies in rows)
            assert hist.games == len(rows) >= 50
            # the fear estimate was written in the same transaction as the last game row
            last_plies = store._db.execute("SELECT plies FROM game ORDER BY id DESC LIMIT 1").fetchone()[0]
            assert hist.est_opp_fear == pytest.approx((last_plies % 100) / 100)
