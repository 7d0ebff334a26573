"""What the bot learns about each opponent, kept across games and restarts.

One SQLite file. Each finished game is one transaction, so a kill -9 in the middle of a write
leaves either the whole game or none of it (SQLite's journal does the atomic part). What is kept
per opponent: the engine's estimate of the opponent's fear (thesis 10.3.3 keeps estOppFear across
games), the results, and which setups we played and how they fared.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

RESULTS = ("win", "draw", "loss", "forfeit_win", "forfeit_loss")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS opponent (
    name TEXT PRIMARY KEY,
    est_opp_fear REAL,
    own_fear_scale REAL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS game (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    opponent TEXT NOT NULL,
    finished REAL NOT NULL,
    result TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    setup TEXT,
    plies INTEGER NOT NULL DEFAULT 0,
    game_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS game_by_opponent ON game (opponent, id);
"""


@dataclass
class OpponentHistory:
    name: str
    est_opp_fear: float | None = None
    own_fear_scale: float | None = None
    results: dict[str, int] = field(default_factory=dict)
    last_setup: str | None = None
    setups_lost: dict[str, int] = field(default_factory=dict)  # setup name -> games lost with it

    @property
    def games(self) -> int:
        return sum(self.results.values())


class OpponentStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), timeout=10.0, isolation_level=None)
        # WAL keeps readers going while a game is written; FULL sync makes a commit survive power loss.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        # Stores written before ownFear's bluff scale existed get its column (empty: not learnt yet).
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(opponent)")}
        if "own_fear_scale" not in columns:
            self._db.execute("ALTER TABLE opponent ADD COLUMN own_fear_scale REAL")

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> OpponentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def history(self, opponent: str) -> OpponentHistory:
        hist = OpponentHistory(opponent)
        row = self._db.execute("SELECT est_opp_fear, own_fear_scale FROM opponent WHERE name = ?",
                               (opponent,)).fetchone()
        if row is not None:
            hist.est_opp_fear, hist.own_fear_scale = row
        for result, count in self._db.execute(
            "SELECT result, COUNT(*) FROM game WHERE opponent = ? GROUP BY result", (opponent,)
        ):
            hist.results[result] = count
        last = self._db.execute(
            "SELECT setup FROM game WHERE opponent = ? ORDER BY id DESC LIMIT 1", (opponent,)
        ).fetchone()
        hist.last_setup = last[0] if last else None
        for setup, count in self._db.execute(
            "SELECT setup, COUNT(*) FROM game WHERE opponent = ? AND setup IS NOT NULL "
            "AND result IN ('loss', 'forfeit_loss') GROUP BY setup",
            (opponent,),
        ):
            hist.setups_lost[setup] = count
        return hist

    def record_game(
        self,
        opponent: str,
        result: str,
        *,
        reason: str = "",
        setup: str | None = None,
        plies: int = 0,
        est_opp_fear: float | None = None,
        game_id: str = "",
        own_fear_scale: float | None = None,
    ) -> None:
        """Store one finished game and the fear estimates after it, all or nothing."""
        if result not in RESULTS:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}, not {result!r}")
        for key, value in (("est_opp_fear", est_opp_fear), ("own_fear_scale", own_fear_scale)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must be within [0, 1], not {value}")
        now = time.time()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO game (opponent, finished, result, reason, setup, plies, game_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (opponent, now, result, reason, setup, plies, game_id),
            )
            if est_opp_fear is not None or own_fear_scale is not None:
                # A value not given keeps what was stored.
                db.execute(
                    "INSERT INTO opponent (name, est_opp_fear, own_fear_scale, updated) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(name) DO UPDATE SET "
                    "est_opp_fear = COALESCE(excluded.est_opp_fear, est_opp_fear), "
                    "own_fear_scale = COALESCE(excluded.own_fear_scale, own_fear_scale), "
                    "updated = excluded.updated",
                    (opponent, est_opp_fear, own_fear_scale, now),
                )

    def opponents(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT opponent FROM game UNION SELECT name FROM opponent ORDER BY 1")
        return [r[0] for r in rows]

    def integrity_ok(self) -> bool:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
