"""The per-opponent store: contents, and survival of a kill -9 in the middle of writing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.daemon.opponent_store import OpponentStore

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


def test_bluff_scale_is_kept_apart_from_the_fear(tmp_path: Path) -> None:
    with OpponentStore(tmp_path / "o.sqlite") as store:
        store.record_game("probe", "win", est_opp_fear=0.3, own_fear_scale=0.7)
        store.record_game("probe", "win", est_opp_fear=0.25)  # no scale given: the stored one stays
        hist = store.history("probe")
        assert (hist.est_opp_fear, hist.own_fear_scale) == (pytest.approx(0.25), pytest.approx(0.7))
        with pytest.raises(ValueError, match="own_fear_scale"):
            store.record_game("probe", "win", own_fear_scale=-0.1)


def test_a_store_from_before_the_bluff_scale_gains_its_column(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.executescript("CREATE TABLE opponent (name TEXT PRIMARY KEY, est_opp_fear REAL, updated REAL NOT NULL);"
                     "INSERT INTO opponent VALUES ('probe', 0.2, 0);")
    db.close()
    with OpponentStore(path) as store:
        hist = store.history("probe")
        assert (hist.est_opp_fear, hist.own_fear_scale) == (pytest.approx(0.2), None)
        store.record_game("probe", "loss", own_fear_scale=0.9)
        hist = store.history("probe")
        assert (hist.est_opp_fear, hist.own_fear_scale) == (pytest.approx(0.2), pytest.approx(0.9))


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
from bot.daemon.opponent_store import OpponentStore
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


def test_the_bot_primes_a_fresh_engine_and_records_what_it_learnt(tmp_path: Path) -> None:
    from bot.daemon.engine_interface import create_engine
    from bot.daemon.learning import OpponentMemory
    from engine_ext.research.selfplay import semi_random_game
    from engine_ext.rules.game import RulesOptions
    from engine_ext.rules.pieces import Side
    from engine_ext.rules.rulesets import CLASSIC

    with OpponentStore(tmp_path / "o.sqlite") as store:
        store.record_game("probe", "win", est_opp_fear=0.12, own_fear_scale=0.5)
        memory = OpponentMemory(store)
        wrapper = create_engine("perspecto", {"max_depth": 2}, seed=1)
        memory.prime_engine(wrapper, "probe")
        engine = wrapper.engine  # type: ignore[attr-defined]
        now = time.monotonic()
        # The first move starts the game inside the engine: the primed values must survive it.
        engine.choose_move(semi_random_game(RulesOptions(ruleset=CLASSIC), 1).view(Side.RED), now + 10, now + 20)
        assert (engine.est_opp_fear, engine.own_fear_scale) == (pytest.approx(0.12), pytest.approx(0.5))
        engine.own_fear_scale = 0.4
        memory.record("probe", won=True, reason="flag", setup=None, plies=10, engine=wrapper, game_id="g")
        hist = store.history("probe")
        assert (hist.est_opp_fear, hist.own_fear_scale) == (pytest.approx(0.12), pytest.approx(0.4))


def test_only_engines_with_a_psychological_model_learn_fears(tmp_path: Path) -> None:
    # The typed interface (engine_ext.engine.facade.FearLearner): the search engines' wrapper is one, the
    # random mover is not, and a game against it records no fear and primes nothing.
    from bot.daemon.engine_interface import create_engine
    from bot.daemon.learning import OpponentMemory
    from engine_ext.engine.facade import FearLearner

    searcher, mover = create_engine("perspecto", {}, seed=1), create_engine("random", {}, seed=1)
    assert isinstance(searcher, FearLearner) and not isinstance(mover, FearLearner)
    with OpponentStore(tmp_path / "o.sqlite") as store:
        memory = OpponentMemory(store)
        memory.prime_engine(mover, "probe")
        memory.record("probe", won=False, reason="flag", setup=None, plies=10, engine=mover, game_id="g")
        hist = store.history("probe")
        assert (hist.games, hist.est_opp_fear, hist.own_fear_scale) == (1, None, None)


def test_a_store_from_before_the_opponent_setups_gains_their_columns(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.executescript(
        "CREATE TABLE game (id INTEGER PRIMARY KEY AUTOINCREMENT, opponent TEXT NOT NULL, finished REAL NOT NULL,"
        " result TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', setup TEXT, plies INTEGER NOT NULL DEFAULT 0,"
        " game_id TEXT NOT NULL DEFAULT '');"
        "INSERT INTO game (opponent, finished, result, setup) VALUES ('probe', 0, 'win', 'turtle');"
    )
    db.close()
    with OpponentStore(path) as store:
        assert store.history("probe").results == {"win": 1} and store.history("probe").last_setup == "turtle"
        assert store.opponent_setups("probe", "classic") == []  # old games knew no opponent setup
        store.record_game("probe", "loss", ruleset="classic", opponent_setup="A" * 40)
        store.record_game("probe", "loss", ruleset="barrage", opponent_setup="B" * 40)
        assert store.opponent_setups("probe", "classic") == ["A" * 40]
        assert store.integrity_ok()


def test_opponent_setups_come_back_oldest_first_and_only_the_last_ones(tmp_path: Path) -> None:
    with OpponentStore(tmp_path / "o.sqlite") as store:
        for i in range(5):
            store.record_game("probe", "win", ruleset="classic", opponent_setup=f"s{i}")
        store.record_game("probe", "win", ruleset="classic")  # a forfeit before any setup: none kept
        store.record_game("other", "win", ruleset="classic", opponent_setup="x")
        assert store.opponent_setups("probe", "classic") == [f"s{i}" for i in range(5)]
        assert store.opponent_setups("probe", "classic", limit=2) == ["s3", "s4"]


class _SetupLearningMover:
    """A random mover with a belief model's interface (engine_ext.beliefs.SetupLearner)."""

    name = "setup-learner"

    def __init__(self) -> None:
        import random

        self.rng = random.Random(5)
        self.opponent_setups: list[object] = []

    def choose_move(self, game: object, budget: object) -> object:
        return self.rng.choice(game.sendable_moves())  # type: ignore[attr-defined]


async def test_the_bot_keeps_each_revealed_opponent_setup_and_primes_the_next_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.daemon.client import BotClient
    from bot.daemon.learning import OpponentMemory
    from engine_ext.beliefs import SetupLearner
    from engine_ext.rules.pieces import Side
    from engine_ext.rules.rulesets import CLASSIC
    from protocol.messages import GameOverParams
    from setups.notation import Setup
    from tests.helpers import FakeHost, register

    engine = _SetupLearningMover()
    assert isinstance(engine, SetupLearner)
    with OpponentStore(tmp_path / "o.sqlite") as store:
        client = BotClient(register(monkeypatch, engine), seed=3, memory=OpponentMemory(store=store))
        revealed: list[Setup] = []
        for game in range(3):
            host = FakeHost(client, Side.RED, seed=game, game_id=f"g-{game}")
            referee = await host.start()
            assert engine.opponent_setups == revealed  # what the earlier games showed, oldest first
            blue = {sq: rank for sq, (_side, rank) in referee.pieces(Side.BLUE).items()}
            for _ in range(4):
                await host.ply()
            over = GameOverParams(game_id=f"g-{game}", winner=None, reason="move_limit", plies=referee.ply,
                                  red_score=3, blue_score=3, red_setup={}, blue_setup=blue)
            await client.handle_notification("gameOver", over)
            revealed.append(Setup.from_placement(CLASSIC, Side.BLUE, blue))
        assert len(store.opponent_setups("tester", "classic")) == 3


def test_the_search_engines_take_the_opponents_past_setups(tmp_path: Path) -> None:
    from bot.daemon.engine_interface import create_engine
    from bot.daemon.learning import OpponentMemory
    from engine_ext.beliefs import SetupLearner
    from engine_ext.rules.rulesets import CLASSIC
    from setups import generate_setup

    past = [generate_setup(CLASSIC, seed) for seed in (1, 2)]
    with OpponentStore(tmp_path / "o.sqlite") as store:
        for setup in past:
            store.record_game("probe", "win", ruleset="classic", opponent_setup=setup.key)
        store.record_game("probe", "win", ruleset="classic", opponent_setup="not a setup")  # damaged: skipped
        wrapper, mover = create_engine("perspecto", {}, seed=1), create_engine("random", {}, seed=1)
        assert isinstance(wrapper, SetupLearner) and not isinstance(mover, SetupLearner)
        memory = OpponentMemory(store)
        memory.prime_engine(wrapper, "probe", CLASSIC)
        assert wrapper.engine.opponent_setups == past  # type: ignore[attr-defined]
        memory.prime_engine(mover, "probe", CLASSIC)  # nothing to prime, no error
