"""What a game shows of the opponent's setup, kept across games (issue 32): read off a game, kept in the
opponent store, blended into the prior, and carried by ``perspecto ucc`` from one game to the next."""

from __future__ import annotations

import argparse
import dataclasses
import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.commands.gauntlet_run.records import shown_setup
from bot.commands.ucc import open_memory, wrapper_text
from bot.config import builtin_profiles
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import OpponentStore
from bot.ucc.player import UccPlayer
from engine_ext.beliefs.observed import SetupWatch, for_colour, parse_seen, seen_setup, turns_setup
from engine_ext.beliefs.prior import DEFAULT_ALPHA, human_prior, opponent_prior
from engine_ext.lab.runner import Limits, Rules, _Side, make_player
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.rulesets import CLASSIC, Square
from setups.notation import Setup
from tests.test_ucc import InProcess, Referee, _limits

BOMB, FLAG, SPY = int(Rank.BOMB), int(Rank.FLAG), int(Rank.SPY)


def random_game(seed: int, plies: int) -> tuple[Game, dict[Side, dict[Square, Rank]]]:
    """A game of random moves, and both setups."""
    rng = random.Random(seed)
    setups = {side: CLASSIC.random_placement(side, rng) for side in Side}
    game = Game(RulesOptions(ruleset=CLASSIC), setups[Side.RED], setups[Side.BLUE])
    for _ in range(plies):
        if game.result is not None:
            break
        game.play(rng.choice(game.legal_moves()))
    return game, setups


# --- read off a game -------------------------------------------------------------------------------------


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 300), side=st.sampled_from(list(Side)))
def test_the_seen_setup_is_the_shown_pieces_on_their_start_squares(seed: int, plies: int, side: Side) -> None:
    game, setups = random_game(seed, plies)
    # Followed by hand: where each opponent piece started, by the square it stands on now.
    start_of = {sq: sq for sq in setups[side.other]}
    shown: set[Square] = set()
    for entry in game.history:
        mover = start_of.pop(entry.move.frm, None)
        target = start_of.get(entry.move.to)
        if mover is not None:
            if entry.outcome is not None or entry.move.distance > 1:
                shown.add(mover)  # a fight, or a scout's run
            if entry.outcome in (None, "x"):
                start_of[entry.move.to] = mover
        elif target is not None:
            shown.add(target)
            if entry.outcome in ("x", "xo"):
                del start_of[entry.move.to]
    seen = seen_setup(game, side)
    if not shown:
        assert seen is None
        return
    assert seen is not None
    truth = Setup.from_placement(CLASSIC, side.other, setups[side.other])
    index = {sq: i for i, sq in enumerate(CLASSIC.setup_squares(side.other))}
    assert {i for i, rank in enumerate(seen.cells) if rank is not None} == {index[sq] for sq in shown}
    assert all(rank is None or rank == truth.cells[i] for i, rank in enumerate(seen.cells))


def test_a_watch_kept_up_move_by_move_agrees_with_a_fresh_reading() -> None:
    game, setups = random_game(5, 400)
    replay = Game(RulesOptions(ruleset=CLASSIC), setups[Side.RED], setups[Side.BLUE])
    watch = SetupWatch(replay, Side.RED)
    for entry in game.history:
        replay.play(entry.move)
        kept = watch.update(replay)
        assert kept == seen_setup(replay, Side.RED)
    assert kept is not None and len(kept.pieces) > 5


def test_a_game_not_started_from_setups_shows_no_setup() -> None:
    red = {Square.parse("A1"): Rank.FLAG, Square.parse("E5"): Rank.MARSHAL}
    blue = {Square.parse("J10"): Rank.FLAG, Square.parse("E6"): Rank.SCOUT}
    game = Game(RulesOptions(ruleset=CLASSIC), red, blue, validate_setups=False)
    game.play(Move(Square.parse("E5"), Square.parse("E6")))
    assert seen_setup(game, Side.RED) is None  # E6 is none of blue's setup squares


def turned(placement: dict[Square, Rank]) -> dict[Square, Rank]:
    """Red's placement as a program that sees the board from its own seat sets it up playing blue."""
    return {Square(CLASSIC.width - 1 - sq.col, CLASSIC.height - 1 - sq.row): rank for sq, rank in placement.items()}


def rows_kept(placement: dict[Square, Rank]) -> dict[Square, Rank]:
    """Red's placement as a program that keeps its rows where they are sets it up playing blue (Celsius)."""
    return {Square(sq.col, CLASSIC.height - 1 - sq.row): rank for sq, rank in placement.items()}


def part(placement: dict[Square, Rank], side: Side, squares: int, seed: int) -> Setup:
    """Some of a side's setup, as a game would show it."""
    shown = random.Random(seed).sample(sorted(placement), squares)
    return Setup.from_placement(CLASSIC, side, {sq: placement[sq] for sq in shown})


@pytest.mark.parametrize(("blue_of", "turns"), [(turned, True), (rows_kept, False)])
def test_orientation_is_read_off_games_of_both_colours(blue_of: object, turns: bool) -> None:
    own = CLASSIC.random_placement(Side.RED, random.Random(3))
    as_blue = blue_of(own)  # type: ignore[operator]
    whole_red = Setup.from_placement(CLASSIC, Side.RED, own)
    whole_blue = Setup.from_placement(CLASSIC, Side.BLUE, as_blue)
    seen = [(part(own, Side.RED, 20, 1), Side.RED), (part(as_blue, Side.BLUE, 20, 2), Side.BLUE)]
    assert turns_setup(seen) is turns
    for side, whole in ((Side.RED, whole_red), (Side.BLUE, whole_blue)):
        # Every square it was shown in either colour, where the opponent puts it playing ``side``.
        for setup in for_colour(seen, side):
            assert all(c is None or c == whole.cells[i] for i, c in enumerate(setup.cells))
    # One colour only, or games that showed no square in common: kept as played.
    assert not turns_setup(seen[:1]) and for_colour(seen[:1], Side.BLUE) == [seen[0][0]]
    partial = Setup.from_mapping(CLASSIC, {0: Rank.SCOUT, 39: Rank.BOMB})
    assert parse_seen(partial.key, CLASSIC) == partial


# --- the prior -------------------------------------------------------------------------------------------


def test_a_square_no_game_showed_keeps_the_human_statistics() -> None:
    human = human_prior(CLASSIC)
    seen = [Setup.from_mapping(CLASSIC, {35: Rank.BOMB, 36: Rank.FLAG}), Setup.from_mapping(CLASSIC, {35: Rank.BOMB})]
    table, alphas = opponent_prior(CLASSIC, seen)
    assert table[20] == pytest.approx(human[20])  # never shown
    # The bomb on 35 in both games: this opponent repeats itself, and the square is its bomb's.
    assert table[35, BOMB] > 0.8 and alphas[BOMB] < DEFAULT_ALPHA
    # A rank no two games showed on one square takes the weight of those that were: the flag seen once.
    assert alphas[FLAG] == alphas[BOMB] and table[36, FLAG] > 0.5


def test_games_that_showed_different_squares_tell_nothing_of_the_weight() -> None:
    seen = [Setup.from_mapping(CLASSIC, {35: Rank.BOMB}), Setup.from_mapping(CLASSIC, {34: Rank.BOMB, 1: Rank.SPY})]
    _table, alphas = opponent_prior(CLASSIC, seen)
    assert (alphas == DEFAULT_ALPHA).all()


def test_whole_setups_give_the_prior_they_gave_before() -> None:
    # Whole setups show every square in every game: the per-square count is the number of setups.
    rng = random.Random(4)
    setups = [Setup.from_placement(CLASSIC, Side.RED, CLASSIC.random_placement(Side.RED, rng)) for _ in range(3)]
    table, alphas = opponent_prior(CLASSIC, setups)
    human = human_prior(CLASSIC)
    counts = np.zeros((len(setups[0].cells), 13))
    for setup in setups:
        for index, rank in setup.pieces.items():
            counts[index, int(rank)] += 1
    expected = (alphas * human + counts) / (alphas + len(setups))
    expected /= expected.sum(axis=1, keepdims=True)
    assert table == pytest.approx(expected)


# --- the store and the memory ----------------------------------------------------------------------------


def test_the_store_keeps_a_game_as_it_goes_and_its_end_in_one_row(tmp_path: Path) -> None:
    early = Setup.from_mapping(CLASSIC, {35: Rank.BOMB})
    later = Setup.from_mapping(CLASSIC, {35: Rank.BOMB, 2: Rank.SPY})
    with OpponentStore(tmp_path / "o.sqlite") as store:
        store.record_game("pl", "adjourned", reason="adjourned", game_id="g1", ruleset="classic",
                          opponent_seen=early.key, opponent_seen_side="red", replace=True)
        store.record_game("pl", "win", reason="flag", game_id="g1", ruleset="classic", opponent_seen=later.key,
                          opponent_seen_side="red", replace=True)
        store.record_game("pl", "loss", reason="flag", game_id="g2", ruleset="classic", opponent_seen=early.key,
                          opponent_seen_side="blue", replace=True)
        assert store.history("pl").results == {"win": 1, "loss": 1}
        assert store.opponent_seen("pl", "classic") == [(later.key, "red"), (early.key, "blue")]
        assert store.opponent_seen("pl", "barrage") == []
        with pytest.raises(ValueError, match="game's id"):
            store.record_game("pl", "win", replace=True)


def test_a_store_from_before_gains_the_seen_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(str(path))
    db.executescript("CREATE TABLE game (id INTEGER PRIMARY KEY AUTOINCREMENT, opponent TEXT NOT NULL, "
                     "finished REAL NOT NULL, result TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '', setup TEXT, "
                     "plies INTEGER NOT NULL DEFAULT 0, game_id TEXT NOT NULL DEFAULT '');"
                     "INSERT INTO game (opponent, finished, result) VALUES ('pl', 0, 'loss');")
    db.close()
    with OpponentStore(path) as store:
        assert store.opponent_seen("pl", "classic") == []
        store.record_game("pl", "win", game_id="g", ruleset="classic", opponent_seen="x" * 40,
                          opponent_seen_side="blue")
        assert store.opponent_seen("pl", "classic") == [("x" * 40, "blue")]


class Learner:
    """An engine that takes the opponent's past setups (engine_ext/beliefs/prior.py ``SetupLearner``)."""

    name = "learner"

    def __init__(self) -> None:
        self.opponent_setups: list[Setup] = []

    def choose_move(self, game: Game, budget: object) -> object:
        return random.Random(game.ply).choice(game.sendable_moves())


def test_the_memory_keeps_what_was_seen_as_played_with_its_colour(
        tmp_path: Path) -> None:
    seen = Setup.from_mapping(CLASSIC, {0: Rank.SCOUT, 39: Rank.BOMB})
    memory = OpponentMemory(OpponentStore(tmp_path / "o.sqlite"))
    memory.record("pl", won=False, reason="flag", setup=None, plies=90, engine=None, game_id="g1",
                  opponent_seen=seen, opponent_side=Side.BLUE)
    assert memory.store.opponent_seen("pl", "classic") == [(seen.key, "blue")]  # type: ignore[union-attr]
    for side in Side:  # one colour seen: nothing says the opponent turns its setup, kept as played
        engine = Learner()
        memory.prime_engine(engine, "pl", CLASSIC, side)
        assert engine.opponent_setups == [seen]
    engine = Learner()
    memory.prime_engine(engine, "pl", CLASSIC)  # no side: whole setups only, as the daemon asks
    assert engine.opponent_setups == []


# --- perspecto ucc from one game to the next -------------------------------------------------------------


def _play(memory: OpponentMemory, engine: Learner, seed: int, plies: int) -> Referee:
    player = UccPlayer(engine, seed=1, limits=_limits(0.5, 1.0), memory=memory)  # type: ignore[arg-type]
    bot = InProcess(player)
    ref = Referee(bot, Side.RED, seed=seed)
    ref.start()
    for _ in range(plies):
        if not ref.step():
            break
    bot.send("QUIT")
    assert bot.wait(5) == 0
    return ref


def test_a_ucc_game_keeps_what_it_showed_and_the_next_game_starts_from_it(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "state")
    first = Learner()
    ref = _play(memory, first, seed=4, plies=160)
    assert first.opponent_setups == []  # nothing known before the first game
    assert ref.game is not None
    shown = seen_setup(ref.game, Side.RED)
    assert shown is not None and sum(r is not None for r in shown.cells) >= 3
    [(kept, played)] = memory.store.opponent_seen("scripted-referee", "classic")  # type: ignore[union-attr]
    assert parse_seen(kept, CLASSIC) == shown and played == "blue"
    assert memory.store.history("scripted-referee").results == {"adjourned": 1}  # type: ignore[union-attr]
    second = Learner()
    with structlog.testing.capture_logs() as logs:
        _play(memory, second, seed=5, plies=4)
    assert second.opponent_setups == [shown]
    assert [e["seen"] for e in logs if e["event"] == "bot.opponent_setups_used"] == [1]


def test_quit_s_result_line_is_the_game_s_result_in_the_memory(tmp_path: Path) -> None:
    memory = open_memory(tmp_path / "state")
    for quit_line in ("QUIT ./perspecto RED VICTORY 80 40 20", "QUIT ./other BLUE VICTORY 81 20 40",
                      "QUIT ./other BLUE ILLEGAL 81 20 40", "QUIT", "QUIT ./perspecto RED DRAW_DEFAULT 5000 1 1"):
        player = UccPlayer(Learner(), seed=1, limits=_limits(0.5, 1.0), memory=memory)  # type: ignore[arg-type]
        bot = InProcess(player)
        ref = Referee(bot, Side.RED, seed=4)
        ref.start()
        for _ in range(40):
            ref.step()
        bot.send(quit_line)
        assert bot.wait(5) == 0
    assert memory.store.history("scripted-referee").results == {  # type: ignore[union-attr]
        "win": 1, "loss": 1, "forfeit_win": 1, "adjourned": 1, "draw": 1}


def test_a_memory_that_fails_costs_no_game(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(self: SetupWatch, game: Game) -> Setup | None:
        raise ValueError("a history the watch cannot follow")

    def refused(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug in the memory")

    monkeypatch.setattr(SetupWatch, "update", broken)
    memory = open_memory(tmp_path / "state")
    monkeypatch.setattr(memory, "prime_engine", refused)
    with structlog.testing.capture_logs() as logs:
        ref = _play(memory, Learner(), seed=4, plies=60)
    assert ref.bot_moves >= 25
    assert [e["step"] for e in logs if e["event"] == "ucc.memory_failed"] == ["prime", "read the game"]
    assert memory.store.history("scripted-referee").results == {"adjourned": 1}  # type: ignore[union-attr]


def test_a_store_that_cannot_be_opened_costs_no_game(tmp_path: Path) -> None:
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state folder should be")
    with structlog.testing.capture_logs() as logs:
        memory = open_memory(blocked)
        assert memory.store is None and memory.problem is not None
        engine = Learner()
        ref = _play(memory, engine, seed=4, plies=60)
    assert ref.bot_moves >= 25 and engine.opponent_setups == []
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["ucc.no_opponent_store"]
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["bot.store_unavailable", "bot.game_not_stored"]


# --- the gauntlet: both routes learn across a run's games ------------------------------------------------

def record_of(game: Game, setups: dict[Side, dict[Square, Rank]], names: dict[Side, str]) -> GameRecord:
    """A lab record of ``game`` (no result: nothing reads it here)."""
    def player(side: Side) -> RecordedPlayer:
        return RecordedPlayer(names[side], {str(sq): rank.name.lower() for sq, rank in setups[side].items()})

    moves = [RecordedMove(str(e.side), str(e.move), e.outcome, e.attacker.name.lower() if e.attacker else None,
                          e.defender.name.lower() if e.defender else None) for e in game.history]
    return GameRecord("classic", {"range_attacks": True, "two_squares": None, "more_squares": False,
                                  "move_limit": 8000}, player(Side.RED), player(Side.BLUE), moves)


def test_a_record_shows_the_opponent_setup_as_the_game_did() -> None:
    game, setups = random_game(9, 250)
    record = GameRecord.from_json(record_of(game, setups, {Side.RED: "ours", Side.BLUE: "theirs"}).to_json())
    for ours, name in ((Side.RED, "ours"), (Side.BLUE, "theirs")):
        direct = seen_setup(game, ours)
        assert direct is not None and shown_setup(record, name) == (direct.key, str(ours.other))


def test_the_lab_primes_our_engine_with_what_earlier_games_showed() -> None:
    seen = Setup.from_mapping(CLASSIC, {0: Rank.SCOUT, 39: Rank.BOMB})
    player = make_player("perspecto", builtin_profiles()["perspecto"], label="A")
    rules = Rules(two_squares=None, more_squares=False, move_limit=100, move_time_average=1.0, move_time_max=1.0)
    for colour in Side:
        side = _Side(dataclasses.replace(player, opponent_seen=((seen.key, "red"),)), 1, Limits(), rules, colour)
        assert side.engine.opponent_setups == [seen]  # type: ignore[attr-defined]
        assert _Side(player, 1, Limits(), rules, colour).engine.opponent_setups == []  # type: ignore[attr-defined]


def test_the_wrapper_carries_where_it_learns(tmp_path: Path) -> None:
    base = {"config": str(tmp_path), "profile": "perspecto", "move_time": 2.0, "seed": None, "log_level": "info"}
    learning = wrapper_text(argparse.Namespace(**base, no_learn=False, state_dir=Path("state")))
    assert f"--state-dir {(Path('state')).resolve()}" in learning
    assert "--no-learn" in wrapper_text(argparse.Namespace(**base, no_learn=True, state_dir=None))
    assert "--state-dir" not in wrapper_text(argparse.Namespace(**base, no_learn=False, state_dir=None))
