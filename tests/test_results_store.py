"""The opponent store's summaries for ``perspecto results``: points, forfeits, adjourned games, setups, and
stores written by older versions (bot/daemon/opponent_store.py, bot/daemon/learning.py)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from bot.cli import main as cli_main
from bot.daemon.engine_interface import create_engine
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import OpponentStore, SetupUse

# The store as the version before the game's points wrote it (ownFear's bluff scale already there), with the
# games such a store holds: no score column.
SCHEMA_BEFORE_SCORES = """
CREATE TABLE opponent (name TEXT PRIMARY KEY, est_opp_fear REAL, own_fear_scale REAL, updated REAL NOT NULL);
CREATE TABLE game (
    id INTEGER PRIMARY KEY AUTOINCREMENT, opponent TEXT NOT NULL, finished REAL NOT NULL, result TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '', setup TEXT, plies INTEGER NOT NULL DEFAULT 0, game_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX game_by_opponent ON game (opponent, id);
INSERT INTO opponent VALUES ('probe', 0.25, 0.8, 1);
INSERT INTO game (opponent, finished, result, reason, setup, plies, game_id) VALUES
    ('probe', 1767268800, 'win', 'flag', 'centre-block', 120, 'g1'),
    ('probe', 1767268900, 'forfeit_win', 'forfeit_timeout', 'centre-block', 3, 'g2'),
    ('probe', 1767269000, 'loss', 'flag', NULL, 200, 'g3'),
    ('probe', 1767269100, 'forfeit_loss', 'forfeit_illegal_move', 'double-bomb-row', 7, 'g4'),
    ('other', 1767269200, 'draw', 'move_limit', 'double-bomb-row', 2000, 'g5');
"""


def old_store(path: Path) -> Path:
    db = sqlite3.connect(str(path))
    db.executescript(SCHEMA_BEFORE_SCORES)
    db.close()
    return path


def test_an_old_store_reads_with_the_tournament_table_and_takes_new_games(tmp_path: Path) -> None:
    path = old_store(tmp_path / "old.sqlite")
    with OpponentStore(path) as store:
        probe = store.summary("probe")
        assert probe.results == {"win": 1, "forfeit_win": 1, "loss": 1, "forfeit_loss": 1}
        assert (probe.games, probe.wins, probe.draws, probe.losses) == (4, 2, 0, 2)
        assert probe.score == 6 + 6 + 1 + 0  # no points stored: the tournament's table
        assert (probe.est_opp_fear, probe.own_fear_scale) == (pytest.approx(0.25), pytest.approx(0.8))
        assert probe.setups == [SetupUse("centre-block", 2, 2, 0, 0), SetupUse(None, 1, 0, 0, 1),
                                SetupUse("double-bomb-row", 1, 0, 0, 1)]
        assert probe.last_game == 1767269100
        # A new game goes in with its points, beside the old ones.
        store.record_game("probe", "draw", reason="move_limit", setup="centre-block", score=3)
        store.record_game("probe", "win", reason="flag", setup="centre-block", score=5)  # another host's table
        assert store.summary("probe").score == 13 + 3 + 5
        other = store.summary("other")
        assert (other.games, other.draws, other.score, other.est_opp_fear) == (1, 1, 3, None)
    db = sqlite3.connect(str(path))
    assert "score" in {row[1] for row in db.execute("PRAGMA table_info(game)")}
    db.close()


def test_results_json_on_an_old_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = old_store(tmp_path / "old.sqlite")
    assert cli_main(["results", "--store", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["store"] == str(path)
    assert [o["name"] for o in out["opponents"]] == ["other", "probe"]
    probe = out["opponents"][1]
    assert {k: probe[k] for k in ("games", "wins", "draws", "losses", "forfeit_wins", "forfeit_losses", "adjourned",
                                  "score")} == {"games": 4, "wins": 2, "draws": 0, "losses": 2, "forfeit_wins": 1,
                                                "forfeit_losses": 1, "adjourned": 0, "score": 13}
    assert probe["setups"][0] == {"name": "centre-block", "games": 2, "wins": 2, "draws": 0, "losses": 0}
    assert probe["setups"][1]["name"] is None
    assert probe["last_game"] == "2026-01-01T12:05:00Z"
    assert (probe["est_opp_fear"], probe["own_fear_scale"]) == (0.25, 0.8)


def test_results_table_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = old_store(tmp_path / "old.sqlite")
    assert cli_main(["results", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "probe" in out and "centre-block" in out and "(unnamed)" in out and "0.250" in out
    assert cli_main(["results", "--store", str(tmp_path / "missing.sqlite")]) == 2
    assert "no opponent store" in capsys.readouterr().err
    assert not (tmp_path / "missing.sqlite").exists()  # looking does not create one
    (tmp_path / "junk.sqlite").write_text("not a database")
    assert cli_main(["results", "--store", str(tmp_path / "junk.sqlite")]) == 2
    assert "cannot read the opponent store" in capsys.readouterr().err
    with OpponentStore(tmp_path / "state" / "opponents.sqlite"):
        pass
    # --state-dir finds the store where `perspecto bot` keeps it
    assert cli_main(["results", "--state-dir", str(tmp_path / "state")]) == 0
    assert "no games" in capsys.readouterr().out


def test_the_bot_stores_points_adjourned_games_and_double_forfeits(tmp_path: Path) -> None:
    mover = create_engine("random", {}, seed=1)
    with OpponentStore(tmp_path / "o.sqlite") as store:
        memory = OpponentMemory(store)
        memory.record("probe", won=True, reason="flag", setup="a", plies=9, engine=mover, game_id="g1", score=6)
        memory.record("probe", won=None, reason="adjourned", setup="a", plies=9, engine=mover, game_id="g2",
                      score=0)
        memory.record("probe", won=None, reason="forfeit_crash", setup="b", plies=9, engine=mover, game_id="g3",
                      score=0)
        memory.record("probe", won=None, reason="move_limit", setup="b", plies=9, engine=mover, game_id="g4",
                      score=3)
        memory.record("probe", won=None, reason="void", setup="b", plies=0, engine=mover, game_id="g5", score=0)
        summary = store.summary("probe")
    assert summary.results == {"win": 1, "adjourned": 1, "forfeit_loss": 1, "draw": 1}
    assert (summary.games, summary.wins, summary.draws, summary.losses, summary.score) == (4, 1, 1, 1, 9)
