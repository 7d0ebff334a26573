"""The psychological model (9.3): the Py rule, the marshal-captain example, the move analysis."""

from __future__ import annotations

import random
import time

import pytest

from engine_ext.engine.facade import Engine
from engine_ext.engine.psychology import Psychology, hold_back_threshold, py_probability
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import EngineSettings, FearSettings, builtin_settings, search_params
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.core import Position
from engine_ext.rules.game import RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, MINI, Square

CLASSIC_COUNTS = [CLASSIC.pieces.get(Rank(code), 0) for code in range(13)]


def test_py_rule() -> None:
    assert py_probability(0.97, 0.0) == 0.97
    assert py_probability(0.97, 0.24) == pytest.approx(0.97 - 0.97 * 0.24)
    assert py_probability(0.5, 1.0) == 0.0


def test_thesis_threshold_number() -> None:
    # 9.3: +25 for the captain, -70 when the unknown piece is the spy, P = 0.97: ownFear >= 0.24.
    assert hold_back_threshold(0.97, 25, 70) == pytest.approx(0.24, abs=0.005)


# --- the marshal-captain example in the search ------------------------------------------------------


def marshal_position() -> tuple[Position, dict[str, int]]:
    """Our marshal (seen by the opponent) on E4 next to their known captain on E5; behind the captain
    their unknown piece on E6, which has moved towards our marshal since it was seen. Their marshal
    is known (far away), so only their spy beats ours: P(our marshal survives) = 1 - 1/31 = 0.97.
    Our major, colonels and general stand far off so that their captain keeps its 25 (7.5's notches)."""
    red = [("E4", Rank.MARSHAL), ("A1", Rank.FLAG), ("B1", Rank.GENERAL), ("C1", Rank.COLONEL),
           ("D1", Rank.COLONEL), ("G1", Rank.MAJOR), ("H1", Rank.MAJOR), ("I1", Rank.MAJOR)]
    blue = [("E5", Rank.CAPTAIN), ("E6", Rank.UNKNOWN), ("A10", Rank.MARSHAL), ("J10", Rank.UNKNOWN)]
    pieces: list[tuple[int, int, int, int]] = []
    ids: dict[str, int] = {}
    for owner, group in ((0, red), (1, blue)):
        for name, rank in group:
            sq = Square.parse(name)
            ids[name] = len(pieces)
            pieces.append((sq.col, sq.row, owner, int(rank)))
    lakes = [(sq.col, sq.row) for sq in CLASSIC.lakes]
    return Position(10, 10, lakes, pieces, 0), ids


def marshal_choice(own_fear: float) -> tuple[float, list[float]]:
    """The value over the passive move of taking the captain, and of every root move (depth 2)."""
    pos, ids = marshal_position()
    settings = builtin_settings("perspecto").model_copy(update={"random_amplitude": 0.0})
    params = search_params(settings, own_fear=own_fear, est_opp_fear=0.3, est_own_fear=own_fear)
    runner = SearchRunner(pos, 0, CLASSIC_COUNTS, params, public=[ids["E4"]],
                          approached=[(ids["E6"], ids["E4"])], moved=[ids["E6"], ids["E4"]])
    moves = pos.moves(False)
    values = runner.search_depth(moves, 2)
    take = pos.square(4, 3) | (pos.square(4, 4) << 8)
    return values[moves.index(take)], values


def test_marshal_takes_the_captain_below_the_threshold() -> None:
    p = 1 - 1 / 31  # 0.968: the thesis's "0.97"
    threshold = hold_back_threshold(p, 25, 70)
    assert threshold == pytest.approx(0.2386, abs=1e-3)
    for own_fear in (0.0, 0.20, 0.23):
        value, values = marshal_choice(own_fear)
        # Their unknown piece then attacks with P = 1 - Py; if it fails it would not have attacked
        # (the passive move), so the line is worth 25 - 95 * (1 - Py) (marshal 125 - 30 while the spy lives).
        py = py_probability(p, own_fear)
        assert value == pytest.approx(25 - 95 * (1 - py), abs=1e-9)
        assert max(values) == value, f"ownFear {own_fear}: the capture should be the best move"


def test_marshal_holds_back_from_ownfear_024() -> None:
    for own_fear in (0.24, 0.30, 0.50):
        value, values = marshal_choice(own_fear)
        assert value < 0
        assert max(values) > value, f"ownFear {own_fear}: the marshal should hold back"


# --- the move analysis (estOppFear) -------------------------------------------------------------------


def analysis_game() -> tuple[RefereedGame, Engine]:
    red = {Square.parse(s): r for s, r in {
        "A1": Rank.FLAG, "C2": Rank.SERGEANT, "D2": Rank.MINER, "F2": Rank.SCOUT, "B1": Rank.LIEUTENANT,
    }.items()}
    blue = {Square.parse(s): r for s, r in {
        "F6": Rank.FLAG, "D4": Rank.CAPTAIN, "A5": Rank.MARSHAL, "E6": Rank.BOMB, "A6": Rank.SERGEANT,
    }.items()}
    options = RulesOptions(ruleset=MINI, two_squares=None, more_squares=False)
    game = RefereedGame(options, red, blue, validate_setups=False)
    engine = Engine(EngineSettings(engine="pemm", seed=1))
    engine.start_game(game.view(Side.RED), Side.RED, "opponent")
    return game, engine


def play(game: RefereedGame, engine: Engine, text: str) -> float:
    game.play(Move.parse(text))
    engine.observe(game.view(Side.RED), game.view(Side.RED).history[-1])
    return engine.est_opp_fear


def test_est_opp_fear_rules() -> None:
    game, engine = analysis_game()
    assert engine.est_opp_fear == pytest.approx(0.3)
    assert play(game, engine, "D2-D3") == pytest.approx(0.3)
    # Their captain takes our miner: it was not known before, so nothing is learnt.
    assert play(game, engine, "D4xD3") == pytest.approx(0.3)
    # Our sergeant (unknown to them) steps next to their known captain.
    assert play(game, engine, "C2-C3") == pytest.approx(0.3)
    # They decline the attack: +0.04, once for this pair of pieces.
    assert play(game, engine, "A5-A4") == pytest.approx(0.34)
    assert play(game, engine, "F2-F3") == pytest.approx(0.34)
    assert play(game, engine, "A4-A5") == pytest.approx(0.34)
    # Our scout (unknown, moved) steps next to the captain too; they attack it with the known captain
    # (above lieutenant): -0.04. The sergeant pair was counted before.
    assert play(game, engine, "F3-E3") == pytest.approx(0.34)
    assert play(game, engine, "D3xE3") == pytest.approx(0.30)
    # Our sergeant follows; the captain declines again, but that pair was counted already.
    assert play(game, engine, "C3-D3") == pytest.approx(0.30)
    assert play(game, engine, "A5-A4") == pytest.approx(0.30)
    # We attack their known captain with an unknown moved piece (the sergeant): -0.02.
    assert play(game, engine, "D3xE3") == pytest.approx(0.28)


def test_low_ranks_and_unmoved_pieces_teach_nothing() -> None:
    game, engine = analysis_game()
    # Their sergeant (not above lieutenant) declining to attack changes nothing; neither does their
    # captain standing next to our lieutenant that has never moved.
    play(game, engine, "B1-B2")  # lieutenant moves: now moved
    play(game, engine, "A6-B6")
    play(game, engine, "B2-B1")
    assert engine.est_opp_fear == pytest.approx(0.3)


def test_est_opp_fear_clamped_and_kept_per_opponent() -> None:
    game, engine = analysis_game()
    engine.est_opp_fear = 0.99
    for text in ("D2-D3", "D4xD3", "C2-C3", "A5-A4"):
        play(game, engine, text)
    assert engine.est_opp_fear == 1.0
    engine.est_opp_fear = 5.0
    assert engine.est_opp_fear == 1.0
    engine.est_opp_fear = -1.0
    assert engine.est_opp_fear == 0.0
    # A new game against the same opponent starts from what was learnt (10.3.3) ...
    engine.est_opp_fear = 0.42
    engine.start_game(game.view(Side.RED), Side.RED, "opponent")
    assert engine.est_opp_fear == pytest.approx(0.42)
    # ... a new opponent from the configured start.
    engine.start_game(game.view(Side.RED), Side.RED, "someone else")
    assert engine.est_opp_fear == pytest.approx(0.3)


def test_own_fear_draws_and_est_own_fear() -> None:
    psy = Psychology(FearSettings(), random.Random(7))
    draws = [psy.redraw_own_fear() for _ in range(200)]
    assert all(0.2 <= d <= 0.5 for d in draws)
    assert max(draws) - min(draws) > 0.2
    psy.est_opp_fear = 0.3
    assert psy.est_own_fear == pytest.approx((psy.own_fear + 0.3) / 2)
    fixed = Psychology(FearSettings(est_own_fear=0.1, own_fear_min=0.4, own_fear_max=0.4), random.Random(1))
    assert (fixed.own_fear, fixed.est_own_fear) == (0.4, 0.1)
    with pytest.raises(ValueError):
        FearSettings(own_fear_min=0.6, own_fear_max=0.5)


# --- ownFear's bluff scale (not in the thesis; engine_ext/engine/psychology.py) ----------------------------


def bluff_game(step: float = 0.1) -> tuple[RefereedGame, Engine]:
    red = {Square.parse(s): r for s, r in {
        "A1": Rank.FLAG, "C1": Rank.SERGEANT, "F1": Rank.SCOUT,
    }.items()}
    blue = {Square.parse(s): r for s, r in {
        "C4": Rank.SCOUT, "C6": Rank.MINER, "D6": Rank.CAPTAIN, "A6": Rank.MARSHAL, "E6": Rank.BOMB,
        "F6": Rank.FLAG,
    }.items()}
    options = RulesOptions(ruleset=MINI, two_squares=None, more_squares=False)
    game = RefereedGame(options, red, blue, validate_setups=False)
    engine = Engine(EngineSettings(engine="perspecto", seed=1, fear=FearSettings(bluff_step=step)))
    engine.start_game(game.view(Side.RED), Side.RED, "opponent")
    return game, engine


def test_bluff_scale_falls_for_a_bluff_and_rises_for_a_backed_approach() -> None:
    game, engine = bluff_game()
    # Our sergeant takes their scout on C4: now they know it (their scout never approached it).
    for text in ("C1-C2", "A6-A5", "C2-C3", "A5-A6", "C3xC4"):
        play(game, engine, text)
    assert engine.own_fear_scale == 1.0
    # Their unknown miner walks up to our known sergeant; we take it: it was a bluff.
    for text in ("C6-C5", "F1-F2", "A6-A5"):
        play(game, engine, text)
    assert engine.own_fear_scale == 1.0
    drawn = engine.own_fear
    play(game, engine, "C4xC5")
    assert engine.own_fear_scale == pytest.approx(0.9)
    assert engine.own_fear == pytest.approx(drawn * 0.9)
    assert any("a bluff" in e for e in engine.last_analysis[-1].events)
    # Their unknown captain walks up to it and takes it: that approach was backed.
    for text in ("D6-D5", "F2-F1", "D5xC5"):
        play(game, engine, text)
    assert engine.own_fear_scale == pytest.approx(1.0)
    assert any("not a bluff" in e for e in engine.last_analysis[-1].events)
    # The scale is kept per opponent, like estOppFear, and starts at 1 for a new one.
    engine.own_fear_scale = 0.4
    engine.start_game(game.view(Side.RED), Side.RED, "opponent")
    assert engine.own_fear_scale == pytest.approx(0.4)
    engine.start_game(game.view(Side.RED), Side.RED, "someone else")
    assert engine.own_fear_scale == 1.0


def test_bluff_step_zero_is_the_thesis() -> None:
    game, engine = bluff_game(step=0.0)
    for text in ("C1-C2", "A6-A5", "C2-C3", "A5-A6", "C3xC4", "C6-C5", "F1-F2", "A6-A5", "C4xC5"):
        play(game, engine, text)
    assert engine.own_fear_scale == 1.0


def test_values_set_before_the_first_move_survive_it() -> None:
    # The bot primes a fresh engine from its store before the game's first move; the first
    # choose_move (which starts the game when start_game was not called) must keep those values.
    game, _engine = bluff_game()
    engine = Engine(builtin_settings("perspecto").model_copy(update={"max_depth": 2, "seed": 1}))
    engine.est_opp_fear = 0.12
    engine.own_fear_scale = 0.5
    now = time.monotonic()
    engine.choose_move(game.view(Side.RED), now + 10, now + 20)
    assert engine.est_opp_fear == pytest.approx(0.12)
    assert engine.own_fear_scale == pytest.approx(0.5)
