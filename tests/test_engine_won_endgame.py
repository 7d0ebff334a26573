"""A won endgame is won (issue 45, docs/engine.md "A won endgame"): the trade bias of the side ahead in the
evaluation and the progress term in the strategic search, compiled against the reference and on hand-made
positions."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.engine import reference_strategic as ref
from engine_ext.engine.evaluation import AHEAD_MARGIN as COMPILED_MARGIN
from engine_ext.engine.evaluation import ValuesView
from engine_ext.engine.facade import Engine, quiet_plies
from engine_ext.engine.reference_search import Reference
from engine_ext.engine.scales import THESIS
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import (
    AHEAD_MARGIN,
    StrategicParams,
    builtin_settings,
    strategic_params,
)
from engine_ext.engine.strategic import strategic_scores_py
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Square
from tests.test_engine_evaluation import build, counts
from tests.test_engine_search import params_for
from tests.test_strategic import _view

BASE, SPECIAL = THESIS.base_array(), THESIS.special_array()
F, B, SPY, SC, MI, SG, CA, MJ, CO, GE, MA, U = (
    Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.CAPTAIN, Rank.MAJOR, Rank.COLONEL,
    Rank.GENERAL, Rank.MARSHAL, Rank.UNKNOWN)
START = (F, B, B, SC, MI, SG, MJ, CO, GE, MA)


def test_the_margin_is_one_number() -> None:
    assert COMPILED_MARGIN == AHEAD_MARGIN


# --- trades favour the side ahead ---------------------------------------------------------------------------

AHEAD_RED = {"A1": F, "B1": B, "C2": MA, "D2": CO, "E2": MJ}   # marshal, colonel, major
AHEAD_BLUE = {"A8": F, "B8": B, "C7": MJ, "D7": SG}           # a major and a sergeant


def test_an_even_trade_scores_for_us_when_ahead() -> None:
    pos, _ = build(AHEAD_RED, AHEAD_BLUE)
    # Blue started with what it has (its pool is then empty: no unseen piece of it is counted alive).
    initial = counts(list(AHEAD_BLUE.values()))
    plain = ValuesView(pos, 0, initial, BASE, SPECIAL)
    biased = ValuesView(pos, 0, initial, BASE, SPECIAL, ahead_trade_bias=0.1)
    assert biased.ahead() and plain.ahead()
    assert biased.material(0) == 125 + 55 + 35 and biased.material(1) == 35 + 15
    assert plain.piece(1, int(MJ)) - plain.piece(0, int(MJ)) == 0       # without the bias an even trade is even
    assert biased.piece(0, int(MJ)) == pytest.approx(35 * 0.9)
    for rank in (SC, MI, SG, MJ, CO, MA):
        gain = biased.piece(1, int(rank)) - biased.piece(0, int(rank))   # theirs taken, ours lost
        assert gain > 0, rank
    # Theirs, bombs and flags keep their values.
    for rank in (MJ, SG):
        assert biased.piece(1, int(rank)) == plain.piece(1, int(rank))
    assert biased.piece(0, int(B)) == plain.piece(0, int(B))
    assert biased.piece(0, int(F)) == plain.piece(0, int(F))


def test_the_bias_starts_from_the_lower_of_the_notched_values() -> None:
    # Their general, colonel and marshal gone (they started with them: blue's pool is what it lacks on the
    # board), our major counts as a marshal; theirs counts as a colonel (our general gone). Trading majors
    # would cost us 70 without the bias; with it, our major is worth a tenth less than theirs.
    red = {"A1": F, "B1": B, "C2": MA, "D2": CO, "E2": MJ}
    blue = {"A8": F, "B8": B, "C7": MJ, "D7": SG, "E7": SC, "F7": SC, "G7": SC}
    pos, _ = build(red, blue)
    start = counts([F, B, MJ, SG, SC, SC, SC, MA, CO, GE])
    # Shown captures are not in a bare Position: tell the view which of blue's ranks are gone by marking
    # nothing unseen (every blue piece is on the board and known), so blue's pool is GE, CO, MA, alive.
    plain = ValuesView(pos, 0, start, BASE, SPECIAL)
    biased = ValuesView(pos, 0, start, BASE, SPECIAL, ahead_trade_bias=0.1)
    assert biased.piece(0, int(MJ)) == pytest.approx(min(plain.piece(0, int(MJ)), plain.piece(1, int(MJ))) * 0.9
                                                     if biased.ahead() else plain.piece(0, int(MJ)))


def test_no_bias_when_not_ahead() -> None:
    red = {"A1": F, "B1": B, "C2": MJ, "D2": SG}
    blue = {"A8": F, "B8": B, "C7": MJ, "D7": SG}
    pos, _ = build(red, blue)
    plain = ValuesView(pos, 0, counts(list(blue.values())), BASE, SPECIAL)
    biased = ValuesView(pos, 0, counts(list(blue.values())), BASE, SPECIAL, ahead_trade_bias=0.1)
    assert not biased.ahead()
    for rank in range(13):
        assert biased.piece(0, rank) == plain.piece(0, rank)
    assert biased.piece(1, int(MJ)) - biased.piece(0, int(MJ)) == 0   # an even trade is even
    # Behind: the other side (seen from blue) is not biased either.
    behind = ValuesView(build(AHEAD_RED, AHEAD_BLUE)[0], 1, counts(list(AHEAD_BLUE.values())), BASE, SPECIAL,
                        ahead_trade_bias=0.1)
    assert not behind.ahead()
    assert behind.piece(1, int(MJ)) - behind.piece(0, int(MJ)) == 0   # the side behind keeps even trades even


def ahead_view() -> Game:
    """Red far ahead on the classic board, blue's pieces unseen, a few plies played."""
    rng = random.Random(3)
    red = {Square.parse(s): r for s, r in {
        "A1": F, "B1": B, "D3": MA, "E4": SC, "F3": MI, "H2": CO, "C4": SG, "G4": MJ,
    }.items()}
    blue = {Square.parse(s): r for s, r in {
        "J10": F, "I10": B, "E7": SC, "F6": MI, "H7": SG, "C7": MJ,
    }.items()}
    game = Game(RulesOptions(ruleset=CLASSIC), red, {sq: U for sq in blue}, validate_setups=False)
    referee = Game(RulesOptions(ruleset=CLASSIC), red, blue, validate_setups=False)
    for _ in range(10):
        move = rng.choice(referee.legal_moves())
        record = referee.play(move)
        game.play_observed(move, record.attacker, record.defender)
    return game


BLUE_START = counts([F, B, SC, MI, SG, MJ])   # blue started with what it has: its pool holds no phantom army


@pytest.mark.parametrize("bias", [0.0, 0.1, 0.3])
def test_the_search_matches_the_reference_when_ahead(bias: float) -> None:
    game = ahead_view()
    params = params_for("perspecto", ahead_trade_bias=bias)
    me = int(game.side_to_move)
    compiled = SearchRunner(game.position, me, BLUE_START, params)
    reference = Reference(game.position, me, BLUE_START, params)
    assert compiled.ahead() == reference.ahead == (me == 0)
    moves = game.legal_codes()
    values = compiled.search_depth(moves, 4)
    assert values == pytest.approx(reference.search(moves, 4), abs=1e-9)
    assert compiled.nodes == reference.nodes


# --- the progress term ----------------------------------------------------------------------------------------


@pytest.mark.long
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 150), hide=st.floats(0.0, 1.0), classic=st.booleans(),
       top=st.integers(0, 10), force=st.sampled_from([1.0, 4.0, 8.0]))
def test_progress_compiled_equals_reference(seed: int, plies: int, hide: float, classic: bool, top: int,
                                            force: float) -> None:
    pos = _view(seed, plies, hide, classic, False)
    rng = random.Random(seed)
    n = pos.piece_count
    pf = [rng.random() * 0.3 for _ in range(n)]
    pb = [rng.random() for _ in range(n)]
    moves = pos.moves()
    for params in (StrategicParams(progress_force=force, progress_top=top),
                   StrategicParams(progress_force=force, progress_top=top, hunt_force=32.0, miner_pull=0.15)):
        fast = strategic_scores_py(pos, pos.side, pf, pb, moves, params=params)
        slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, params=params)
        assert fast == pytest.approx(slow, abs=1e-9)


def test_progress_compiled_equals_reference_on_a_few_positions() -> None:
    for seed in range(6):
        pos = _view(seed, 40 + 20 * seed, 0.6, seed % 2 == 0, False)
        n = pos.piece_count
        moves = pos.moves()
        params = StrategicParams(progress_force=4.0, progress_top=seed)
        fast = strategic_scores_py(pos, pos.side, [0.1] * n, [0.2] * n, moves, params=params)
        slow = ref.strategic_scores(pos, pos.side, [0.1] * n, [0.2] * n, moves, params=params)
        assert fast == pytest.approx(slow, abs=1e-9)


# A hand-made won endgame on a 8 x 8 board without lakes: our marshal and colonel against their (known)
# major and four unmoved unknown pieces in their back corner.
ENDGAME_RED = {"A1": F, "B1": B, "D4": MA, "F3": CO}
ENDGAME_BLUE = {"H8": U, "G8": U, "H7": U, "A8": U, "B6": MJ}


def endgame_position() -> tuple[Position, dict[str, int]]:
    pos, ids = build(ENDGAME_RED, ENDGAME_BLUE)
    for name in ("B6",):
        pos.set_moved(ids[name]) if hasattr(pos, "set_moved") else None
    return pos, ids


def code(pos: Position, text: str) -> int:
    move = Move.parse(text)
    return pos.square(move.frm.col, move.frm.row) | (pos.square(move.to.col, move.to.row) << 8)


def test_progress_rewards_steps_towards_the_targets() -> None:
    pos, _ = build(ENDGAME_RED, ENDGAME_BLUE)
    moves = [code(pos, t) for t in ("D4-C4", "D4-E4", "D4-D5", "D4-D3", "F3-F4", "F3-E3", "F3-G3", "F3-F2")]
    n = pos.piece_count
    zero = [0.0] * n
    plain = strategic_scores_py(pos, 0, zero, zero, moves, params=StrategicParams())
    with_term = strategic_scores_py(pos, 0, zero, zero, moves, params=StrategicParams(progress_force=4.0))
    steps = [round((b - a) / 4.0) for a, b in zip(plain, with_term, strict=True)]
    # The marshal's target is their known major on B6 (3 + 2 steps from D4); the colonel's too (it beats a major).
    assert steps == [1, -1, 1, -1, 1, 1, -1, -1]
    assert with_term == pytest.approx(ref.strategic_scores(pos, 0, zero, zero, moves,
                                                          params=StrategicParams(progress_force=4.0)))


def test_expendable_pieces_go_for_the_unmoved_pieces() -> None:
    red = {"A1": F, "B1": B, "D4": SG, "D2": MA}
    blue = {"H8": U, "A5": SC}   # an unmoved unknown piece, and a known scout both beat
    pos, _ = build(red, blue)
    board = ref._Board.of(pos)
    # The sergeant (expendable) goes for the scout and the unmoved piece; the marshal only for the scout.
    assert {(p.col, p.row) for p in ref.progress_targets(board, 0, SG, 10)} == {(7, 7), (0, 4)}
    assert {(p.col, p.row) for p in ref.progress_targets(board, 0, MA, 10)} == {(0, 4)}
    # The nearest target counts: from D4 the scout (4 steps), so a step right is a step away.
    assert ref.progress_scores(board, 0, [((3, 3), (4, 3)), ((3, 3), (2, 3))], 10) == [-1, 1]
    n = pos.piece_count
    zero = [0.0] * n
    # With P(flag): only the unmoved pieces with at least half the highest count.
    blue2 = {"H8": U, "A8": U, "A5": SC}
    pos2, ids2 = build(red, blue2)
    pf = [0.0] * pos2.piece_count
    pf[ids2["H8"]], pf[ids2["A8"]] = 0.8, 0.2
    got = {(p.col, p.row) for p in ref.progress_targets(ref._Board.of(pos2), 0, SG, 10, pf)}
    assert got == {(7, 7), (0, 4)}
    moves2 = [code(pos2, t) for t in ("D4-E4", "D4-C4", "D4-D5", "D2-E2")]
    params2 = StrategicParams(progress_force=2.0)
    assert strategic_scores_py(pos2, 0, pf, [0.0] * pos2.piece_count, moves2, params=params2) == pytest.approx(
        ref.strategic_scores(pos2, 0, pf, [0.0] * pos2.piece_count, moves2, params=params2))
    moves = [code(pos, t) for t in ("D4-E4", "D4-C4", "D2-E2", "D2-C2")]
    params = StrategicParams(progress_force=1.0)
    assert strategic_scores_py(pos, 0, zero, zero, moves, params=params) == pytest.approx(
        ref.strategic_scores(pos, 0, zero, zero, moves, params=params))


def test_the_facade_turns_progress_on_when_ahead_and_quiet() -> None:
    settings_ = builtin_settings("perspecto")
    assert strategic_params(settings_, 3, ahead=True, quiet_plies=20).progress_force == settings_.progress_force
    assert strategic_params(settings_, 3, ahead=True, quiet_plies=19).progress_force == 0.0
    assert strategic_params(settings_, 3, ahead=False, quiet_plies=500).progress_force == 0.0
    assert builtin_settings("perspecto").model_copy(update={"progress_force": 0.0}).progress_force == 0.0
    # The home guards hold off miners: none once they have no miner left.
    assert strategic_params(settings_, 3, their_miners=1).home_guard == settings_.home_guard
    assert strategic_params(settings_, 3, their_miners=0).home_guard == 0.0


# The suite's won_endgame-15 made by hand: their known captain is trapped in our corner (A1, our bomb on B1) next
# to our colonel, our last mover; they have no piece left that beats it (their colonel died on our bomb on E5).
# The capture can always wait a move, so the search gives it little over the passive move, and the colonel
# walks round A2-A3-B3-B2 for ever. The ruleset's army is the one on the board, so the pools are exact.
TRAP_RULES = dataclasses.replace(CLASSIC, name="trap", pieces={F: 1, B: 4, SPY: 1, SG: 1, CA: 1, CO: 1})
TRAP_RED = {"D1": F, "B1": B, "C1": B, "E1": B, "E5": B, "A2": CO}
TRAP_BLUE = {"J10": F, "I10": B, "J9": B, "H10": B, "I8": SPY, "A10": SG, "A1": CA, "E6": CO}


def shuffled_endgame(rounds: int) -> Game:
    """The trap after their colonel's death and ``rounds`` times round the square for both sides."""
    red = {Square.parse(s): r for s, r in TRAP_RED.items()}
    blue = {Square.parse(s): r for s, r in TRAP_BLUE.items()}
    game = Game(RulesOptions(ruleset=TRAP_RULES), red, {sq: (r if r == CA else U) for sq, r in blue.items()},
                validate_setups=False)
    referee = Game(RulesOptions(ruleset=TRAP_RULES), red, blue, validate_setups=False)
    lines = [("A2-B2", "E6-E5"), ("B2-A2", "I8-H8")]
    lines += [("A2-A3", "H8-H7"), ("A3-B3", "H7-I7"), ("B3-B2", "I7-I8"), ("B2-A2", "I8-H8")] * rounds
    for pair in lines:
        for text in pair:
            move = Move.parse(text)
            record = referee.play(move)
            game.play_observed(move, record.attacker, record.defender)
    return game


@pytest.mark.parametrize("seed", [1, 2])
def test_the_progress_term_ends_the_shuffle(seed: int) -> None:
    game = shuffled_endgame(3)
    assert game.side_to_move == Side.RED and quiet_plies(game) == 26
    base = builtin_settings("perspecto").model_copy(update={"threads": 1, "seed": seed})
    chosen = {}
    for force in (0.0, 8.0):
        engine = Engine(base.model_copy(update={"progress_force": force}))
        chosen[force] = str(engine.choose_move(game, math.inf, math.inf, nodes=20000).move)
    assert chosen[0.0] == "A2-B2"       # round the square again
    assert chosen[8.0] == "A2-A1"       # the captain taken
    # Before the quiet plies are up the term is off: the same shuffle.
    early = shuffled_endgame(2)
    assert quiet_plies(early) == 18
    engine = Engine(base.model_copy(update={"progress_force": 8.0}))
    assert str(engine.choose_move(early, math.inf, math.inf, nodes=20000).move) == "A2-B2"
