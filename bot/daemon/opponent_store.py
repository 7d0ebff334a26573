"""What the bot learns about each opponent, kept across games and restarts.

One SQLite file. Each finished game is one transaction, so a kill -9 in the middle of a write
leaves either the whole game or none of it (SQLite's journal does the atomic part). What is kept
per opponent: the engine's estimate of the opponent's fear (thesis 10.3.3 keeps estOppFear across
games), the results with the points the host gave, which setups we played and how they fared
(``perspecto results`` shows it all, bot/commands/results.py), and the opponent's own setups as the host
revealed them at each game's end (the belief model's prior against it, engine_ext/beliefs/prior.py).

A store the bot cannot read (``open_store``: not a database, or damaged) is moved aside, renamed
``opponents.sqlite.corrupt-<UTC time>``, and a fresh one started: what was learnt is lost, the games are
not. A store that cannot be opened for writing (a full or read-only state folder) leaves the bot without
one for the process: it plays on, learning nothing across games, and says so (``OpponentMemory.problem``).

The schema only grows: a column added later is added to an older store when it is opened (``_COLUMNS_ADDED``),
empty in the rows written before it, and every reader copes with the empty value.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import structlog

log = structlog.get_logger()

# The store's file in the bot's state directory.
STORE_FILE = "opponents.sqlite"


def store_path(state_dir: Path) -> Path:
    return state_dir / STORE_FILE


# ``adjourned``: the host stopped the game unfinished; no result and no points, but what was learnt stays.
RESULTS = ("win", "draw", "loss", "forfeit_win", "forfeit_loss", "adjourned")
# The tournament's table (bot/host/referee.py), for games stored before the host's points were.
RESULT_SCORES = {"win": 6, "draw": 3, "loss": 1, "forfeit_win": 6, "forfeit_loss": 0, "adjourned": 0}
# The opponent's setups the prior blends in: its most recent games, at most this many.
SETUPS_KEPT = 50

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
    game_id TEXT NOT NULL DEFAULT '',
    score INTEGER,
    ruleset TEXT NOT NULL DEFAULT '',
    opponent_setup TEXT,
    opponent_seen TEXT,
    opponent_seen_side TEXT
);
CREATE INDEX IF NOT EXISTS game_by_opponent ON game (opponent, id);
"""

# Columns that stores written before them lack: (table, column, type), added empty when such a store is opened.
_COLUMNS_ADDED = (
    ("opponent", "own_fear_scale", "REAL"),  # ownFear's bluff scale: not learnt yet
    ("game", "score", "INTEGER"),  # the points the host gave: RESULT_SCORES of the result instead
    ("game", "ruleset", "TEXT NOT NULL DEFAULT ''"),  # the ruleset of the opponent's setup
    ("game", "opponent_setup", "TEXT"),  # the opponent's setup as revealed: not known
    ("game", "opponent_seen", "TEXT"),  # what the game showed of it: nothing kept
    ("game", "opponent_seen_side", "TEXT"),  # the colour the opponent played then
)


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


@dataclass
class SetupUse:
    """One setup played against an opponent and how it fared; ``name`` None: a setup without a name (the
    generated fallback, or an outside program's own)."""

    name: str | None
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0


@dataclass
class OpponentSummary:
    """Everything the store knows about one opponent, for ``perspecto results``. Wins and losses count the
    forfeits too (``forfeit_wins``: the opponent forfeited; ``forfeit_losses``: we did)."""

    name: str
    results: dict[str, int] = field(default_factory=dict)  # RESULTS -> games
    score: int = 0  # the points the host gave (the tournament's table for games stored without them)
    est_opp_fear: float | None = None
    own_fear_scale: float | None = None
    setups: list[SetupUse] = field(default_factory=list)  # most played first
    last_game: float | None = None  # time.time() of the last finished game

    @property
    def games(self) -> int:
        return sum(self.results.values())

    @property
    def wins(self) -> int:
        return self.results.get("win", 0) + self.results.get("forfeit_win", 0)

    @property
    def draws(self) -> int:
        return self.results.get("draw", 0)

    @property
    def losses(self) -> int:
        return self.results.get("loss", 0) + self.results.get("forfeit_loss", 0)


class OpponentStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # Not tied to the opening thread: ``perspecto ucc`` opens it while the engine loads, reads it on the loading
        # thread and writes the game's end on the game loop, one after the other, never at once.
        self._db = sqlite3.connect(str(path), timeout=10.0, isolation_level=None, check_same_thread=False)
        try:
            # WAL keeps readers going while a game is written; FULL sync makes a commit survive power loss.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._add_missing_columns()
        except BaseException:  # a damaged file or a full disk: the caller decides, no connection is left open
            self._db.close()
            raise

    def _add_missing_columns(self) -> None:
        for table, column, kind in _COLUMNS_ADDED:
            columns = {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}
            if column not in columns:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")

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
        score: int | None = None,
        ruleset: str = "",
        opponent_setup: str | None = None,
        opponent_seen: str | None = None,
        opponent_seen_side: str | None = None,
        replace: bool = False,
    ) -> None:
        """Store one finished game, the points the host gave for it (None: not known, the tournament's table
        counts) and the fear estimates after it, all or nothing. ``opponent_setup`` is the opponent's whole
        setup as the host revealed it (Gravon letters, front row first); ``opponent_seen``, for a host that
        reveals none (the UCC referee), the part of it the game showed, as played (engine_ext/beliefs/observed.py:
        the squares not seen empty), with the colour the opponent played (``opponent_seen_side``, "red" or
        "blue"). ``replace``: the game ``game_id`` (not
        empty) may be stored already, as far as it was played (``perspecto ucc`` keeps a game as it goes, the
        referee killing its programs as soon as it ends): that row is brought up to date instead."""
        if result not in RESULTS:
            raise ValueError(f"result must be one of {', '.join(RESULTS)}, not {result!r}")
        if score is not None and score < 0:
            raise ValueError(f"score must not be negative, not {score}")
        for key, value in (("est_opp_fear", est_opp_fear), ("own_fear_scale", own_fear_scale)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{key} must be within [0, 1], not {value}")
        if replace and not game_id:
            raise ValueError("replace needs the game's id")
        now = time.time()
        with self._transaction() as db:
            if replace:
                updated = db.execute(
                    "UPDATE game SET finished = ?, result = ?, reason = ?, setup = ?, plies = ?, score = ?, "
                    "ruleset = ?, opponent_setup = ?, opponent_seen = ?, opponent_seen_side = ? "
                    "WHERE opponent = ? AND game_id = ?",
                    (now, result, reason, setup, plies, score, ruleset, opponent_setup, opponent_seen,
                     opponent_seen_side, opponent, game_id),
                ).rowcount
            if not replace or not updated:
                db.execute(
                    "INSERT INTO game (opponent, finished, result, reason, setup, plies, game_id, score, ruleset, "
                    "opponent_setup, opponent_seen, opponent_seen_side) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (opponent, now, result, reason, setup, plies, game_id, score, ruleset, opponent_setup,
                     opponent_seen, opponent_seen_side),
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

    def opponent_setups(self, opponent: str, ruleset: str, limit: int = SETUPS_KEPT) -> list[str]:
        """The opponent's revealed setups in ``ruleset``'s games, oldest first, the last ``limit``."""
        rows = self._db.execute(
            "SELECT opponent_setup FROM game WHERE opponent = ? AND ruleset = ? AND opponent_setup IS NOT NULL "
            "ORDER BY id DESC LIMIT ?", (opponent, ruleset, limit),
        ).fetchall()
        return [r[0] for r in reversed(rows)]

    def opponent_seen(self, opponent: str, ruleset: str, limit: int = SETUPS_KEPT) -> list[tuple[str, str]]:
        """What the games in ``ruleset`` that revealed no whole setup showed of the opponent's, with the colour
        it played (``record_game``'s ``opponent_seen`` and ``opponent_seen_side``), oldest first, the last
        ``limit``."""
        rows = self._db.execute(
            "SELECT opponent_seen, opponent_seen_side FROM game WHERE opponent = ? AND ruleset = ? "
            "AND opponent_setup IS NULL AND opponent_seen IS NOT NULL AND opponent_seen_side IS NOT NULL "
            "ORDER BY id DESC LIMIT ?", (opponent, ruleset, limit),
        ).fetchall()
        return [(r[0], r[1]) for r in reversed(rows)]

    def opponents(self) -> list[str]:
        rows = self._db.execute("SELECT DISTINCT opponent FROM game UNION SELECT name FROM opponent ORDER BY 1")
        return [r[0] for r in rows]

    def summary(self, opponent: str) -> OpponentSummary:
        """The opponent's games, points, learnt values and setups, in one read transaction (a bot writing a
        game meanwhile shows in all of it or in none)."""
        out = OpponentSummary(opponent)
        default_score = " ".join(f"WHEN '{result}' THEN {points}" for result, points in RESULT_SCORES.items())
        self._db.execute("BEGIN")
        try:
            row = self._db.execute("SELECT est_opp_fear, own_fear_scale FROM opponent WHERE name = ?",
                                   (opponent,)).fetchone()
            if row is not None:
                out.est_opp_fear, out.own_fear_scale = row
            for result, count, points, last in self._db.execute(
                f"SELECT result, COUNT(*), SUM(COALESCE(score, CASE result {default_score} ELSE 0 END)), "
                "MAX(finished) FROM game WHERE opponent = ? GROUP BY result", (opponent,)
            ):
                out.results[result] = count
                out.score += int(points or 0)
                out.last_game = last if out.last_game is None else max(out.last_game, last)
            for setup, result, count in self._db.execute(
                "SELECT setup, result, COUNT(*) FROM game WHERE opponent = ? GROUP BY setup, result", (opponent,)
            ):
                use = next((u for u in out.setups if u.name == setup), None)
                if use is None:
                    use = SetupUse(setup)
                    out.setups.append(use)
                use.games += count
                use.wins += count if result in ("win", "forfeit_win") else 0
                use.draws += count if result == "draw" else 0
                use.losses += count if result in ("loss", "forfeit_loss") else 0
        finally:
            self._db.execute("COMMIT")
        out.setups.sort(key=lambda u: (-u.games, u.name or ""))
        return out

    def integrity_ok(self) -> bool:
        return self._db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def quick_check_ok(self) -> bool:
        """SQLite's quick check (no index cross-checks): enough to find a damaged file when it is opened."""
        return self._db.execute("PRAGMA quick_check").fetchone()[0] == "ok"


# SQLite's own word for a file that is not a database or is damaged (the rest are the disk's or the folder's).
_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB")


def is_damaged(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` says the file itself is bad (so moving it aside helps), not that it cannot be written."""
    name = getattr(exc, "sqlite_errorname", "")
    if name:
        return any(name.startswith(damaged) for damaged in _DAMAGED)
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


def move_aside(path: Path, now: float | None = None) -> Path:
    """Rename a damaged store (and its WAL files) out of the way: ``<name>.corrupt-<UTC time>``."""
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        companion = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError):
            os.replace(companion, target.with_name(target.name + suffix))
    return target


def _open_checked(path: Path) -> OpponentStore:
    store = OpponentStore(path)
    try:
        if not store.quick_check_ok():
            raise sqlite3.DatabaseError("the store failed SQLite's quick check")
    except BaseException:
        store.close()
        raise
    return store


def open_store(path: Path) -> tuple[OpponentStore | None, str | None]:
    """The bot's store at ``path`` and None, or None and why there is none. A damaged store is moved aside
    and a fresh one started; a store that cannot be opened (a full or read-only state folder) is no store
    for this process: the bot plays on without what it learnt, and says so. Never raises."""
    try:
        return _open_checked(path), None
    except sqlite3.Error as exc:
        if not is_damaged(exc):
            return _no_store(path, exc)
        damaged = exc
    except OSError as exc:  # the state folder cannot be made
        return _no_store(path, exc)
    try:
        aside = move_aside(path)
    except OSError as exc:
        return _no_store(path, exc, damaged=damaged)
    log.error("bot.store_moved_aside", path=str(path), moved_to=str(aside), error=str(damaged),
              detail="the store was damaged: a fresh one is started; what was learnt is in the file moved aside")
    try:
        return _open_checked(path), None
    except (sqlite3.Error, OSError) as exc:
        return _no_store(path, exc)


def _no_store(path: Path, exc: BaseException, *, damaged: BaseException | None = None) -> tuple[None, str]:
    why = f"{path}: {exc}" + (f" (and it is damaged: {damaged})" if damaged is not None else "")
    log.error("bot.store_unavailable", path=str(path), error=str(exc),
              damaged=None if damaged is None else str(damaged),
              detail="no opponent store for this process: nothing learnt is used or kept")
    return None, why
