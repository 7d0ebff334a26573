"""Beliefs in the search (issue 22): the compiled knowledge prices attacks from each unknown piece's rank
distribution when ``beliefs`` is on; the thesis's pools are the special case of a pool-shaped belief;
the compiled search and the plain reference agree with beliefs on; bad beliefs are refused by name; the
facade keeps one belief model a game, hands its rows to the search and names them in its reasons."""

from __future__ import annotations

import itertools
import random
import re
import time
from typing import Any

import numpy as np
import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.beliefs import BeliefModel
from engine_ext.engine import facade
from engine_ext.engine.facade import Engine, EngineMove, initial_counts, search_beliefs
from engine_ext.engine.knowledge import KnowledgeView
from engine_ext.engine.reference_search import Reference, best_index
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import SearchParams, builtin_settings, search_params
from engine_ext.engine.strategic import strategic_scores_py
from engine_ext.lab.signature import bench_positions
from engine_ext.research.selfplay import semi_random_game
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import MINI
from tests.test_engine_knowledge import build as position_of

OWN, OPP = 0, 1
N_RANKS = 13
MAX_PIECES = 96
FEARS = (0.3, 0.35, 0.32)


def mini_view(seed: int, plies: int) -> Game:
    game = semi_random_game(RulesOptions(ruleset=MINI), seed)
    rng = random.Random(seed)
    for _ in range(plies):
        if game.result is not None:
            break
        game.play(rng.choice(game.referee.legal_moves()))
    return game.view(game.referee.side_to_move)


def random_beliefs(seed: int) -> np.ndarray:
    """Rows that are no pool: random weights on every rank, some rows all on one rank, some empty."""
    rng = np.random.default_rng(seed)
    rows = rng.random((MAX_PIECES, N_RANKS)) ** 3
    for pid in rng.choice(MAX_PIECES, 12, replace=False):
        rows[pid] = 0.0
        rows[pid, rng.integers(0, 12)] = 1.0
    rows[rng.choice(MAX_PIECES, 4, replace=False)] = 0.0
    return rows


def opposing_pairs(pos: Position) -> list[tuple[int, int]]:
    alive = [pid for pid in range(pos.piece_count) if pos.piece(pid)[0] >= 0]
    return [(a, d) for a, d in itertools.permutations(alive, 2) if pos.piece(a)[1] != pos.piece(d)[1]]


# --- the knowledge ------------------------------------------------------------------------------------


@given(seed=st.integers(1, 10_000), plies=st.integers(0, 80), psychology=st.booleans())
@settings(max_examples=40, deadline=None)
def test_the_pool_as_beliefs_gives_the_thesis_cases(seed: int, plies: int, psychology: bool) -> None:
    # Beliefs on without a matrix: every piece's row is the pool's (case 3's share for an unmoved one),
    # and every attack in both views comes out as the five cases of 7.3 give it.
    view = mini_view(seed, plies)
    me, counts = int(view.side_to_move), initial_counts(view)
    pools = KnowledgeView(view.position, me, counts, psychology=psychology, fears=FEARS)
    rows = KnowledgeView(view.position, me, counts, psychology=psychology, fears=FEARS, beliefs=True)
    for a, d in opposing_pairs(view.position):
        for persp in (OWN, OPP):
            assert rows.attack_outcomes(persp, a, d) == pytest.approx(pools.attack_outcomes(persp, a, d), abs=1e-12)


def build(red: dict[str, Rank], blue: dict[str, Rank], moved: tuple[str, ...] = (),
          public: tuple[str, ...] = (), approached: tuple[tuple[str, str], ...] = (),
          beliefs: np.ndarray | None = None, **options: Any) -> tuple[KnowledgeView, dict[str, int]]:
    """Red to move on an empty 8 x 8 board, beliefs on; both sides start with red's pieces."""
    pos, ids = position_of(red, blue)
    counts = [0] * N_RANKS
    for rank in red.values():
        counts[int(rank)] += 1
    view = KnowledgeView(pos, 0, counts, public=[ids[n] for n in public],
                         approached=[(ids[m], ids[t]) for m, t in approached], moved=[ids[n] for n in moved],
                         beliefs=True, belief_matrix=beliefs, **options)
    return view, ids


def one_hot(rows: dict[int, dict[Rank, float]]) -> np.ndarray:
    matrix = np.zeros((MAX_PIECES, N_RANKS))
    for pid, dist in rows.items():
        for rank, p in dist.items():
            matrix[pid, int(rank)] = p
    return matrix


# Both sides: flag, 2 bombs, spy, scout, miner, general, marshal (the same counts a side).
RED = {"A1": Rank.FLAG, "B1": Rank.BOMB, "C1": Rank.BOMB, "D1": Rank.SPY, "E1": Rank.SCOUT, "F1": Rank.MINER,
       "G1": Rank.GENERAL, "H1": Rank.MARSHAL}
BLUE = {sq.replace("1", "8"): Rank.UNKNOWN for sq in RED}
E8 = 8 + 4  # blue's piece on E8: ids follow RED's order, then BLUE's


def test_a_piece_believed_a_bomb_beats_our_marshal_and_loses_to_our_miner() -> None:
    beliefs = one_hot({E8: {Rank.BOMB: 0.8, Rank.GENERAL: 0.2}})
    view, ids = build(RED, BLUE, beliefs=beliefs)
    assert ids["E8"] == E8
    win, lose, both, passive = view.attack_outcomes(OWN, ids["H1"], E8)
    # The marshal beats the general only: 0.2; the miner beats the bomb only: 0.8.
    assert (win, lose, both, passive) == pytest.approx((0.2, 0.8, 0.0, 0.0))
    assert view.attack_outcomes(OWN, ids["F1"], E8)[0] == pytest.approx(0.8)
    assert view.p_bomb()[E8] == pytest.approx(0.8)
    assert view.belief(E8)[int(Rank.BOMB)] == pytest.approx(0.8)


def test_a_piece_that_moves_is_no_bomb_at_the_root_or_in_the_search_line() -> None:
    beliefs = one_hot({E8: {Rank.BOMB: 0.8, Rank.GENERAL: 0.1, Rank.SPY: 0.1}})
    moved, ids = build(RED, BLUE, moved=("E8",), beliefs=beliefs)
    # Moved at the root: half general, half spy. Our marshal: beats the general, ties nothing, the
    # spy cannot take a marshal that attacks it, so 1.0; our miner: 0.5 (the spy).
    assert moved.belief(E8)[int(Rank.BOMB)] == 0.0
    assert moved.p_bomb()[E8] == 0.0
    assert moved.attack_outcomes(OWN, ids["H1"], E8)[0] == pytest.approx(1.0)
    assert moved.attack_outcomes(OWN, ids["F1"], E8)[0] == pytest.approx(0.5)
    # As the attacker it has moved too: on our known marshal only the spy wins.
    assert moved.attack_outcomes(OWN, E8, ids["H1"])[0] == pytest.approx(0.5)


def test_ranks_the_pool_has_run_out_of_get_nothing() -> None:
    # Blue's general has been seen on G8 (known), so a row that still gives E8 "general" is read without it.
    blue = dict(BLUE, G8=Rank.GENERAL)
    beliefs = one_hot({E8: {Rank.GENERAL: 0.5, Rank.BOMB: 0.5}})
    view, ids = build(RED, blue, beliefs=beliefs)
    assert view.belief(E8)[int(Rank.GENERAL)] == 0.0
    assert view.belief(E8)[int(Rank.BOMB)] == pytest.approx(1.0)
    assert view.attack_outcomes(OWN, ids["H1"], E8)[0] == 0.0


def test_an_empty_row_falls_back_to_the_pool() -> None:
    view, _ = build(RED, BLUE, beliefs=np.zeros((MAX_PIECES, N_RANKS)))
    pools, _ = build(RED, BLUE)
    assert view.belief(E8) == pools.belief(E8)
    assert sum(view.belief(E8)) == pytest.approx(1.0)


def test_our_pieces_in_the_opponents_view_use_our_rows() -> None:
    # The opponent (as we model it) is sure our H1 is the spy: its unknown piece E8 attacking H1 wins
    # in its view whatever E8 is; in ours H1 is our marshal and only their spy's attack could win.
    beliefs = one_hot({7: {Rank.SPY: 1.0}})
    view, ids = build(RED, BLUE, moved=("E8",), beliefs=beliefs)
    assert view.belief(ids["H1"])[int(Rank.SPY)] == 1.0
    their = view.attack_outcomes(OPP, E8, ids["H1"])
    ours = view.attack_outcomes(OWN, E8, ids["H1"])
    assert their[0] > ours[0]
    # A piece the opponent has seen is known to it: no row.
    shown, _ = build(RED, BLUE, public=("H1",), beliefs=beliefs)
    assert shown.belief(ids["H1"]) == [0.0] * N_RANKS


def test_the_fear_rule_stays_on_top_of_the_beliefs() -> None:
    # Their unknown E8 came towards our known marshal: Py = P - P * ownFear on our chance.
    beliefs = one_hot({E8: {Rank.GENERAL: 0.9, Rank.SPY: 0.1}})
    common: dict[str, Any] = dict(moved=("E8",), public=("H1",), beliefs=beliefs, psychology=True,
                                  fears=(0.4, 0.0, 0.0))
    calm, ids = build(RED, BLUE, **common)
    afraid, _ = build(RED, BLUE, approached=(("E8", "H1"),), **common)
    p = calm.attack_outcomes(OWN, ids["H1"], E8)[0]
    assert p == pytest.approx(1.0)
    assert afraid.attack_outcomes(OWN, ids["H1"], E8)[0] == pytest.approx(p - p * 0.4)


@pytest.mark.parametrize(("matrix", "message"), [
    (np.zeros((MAX_PIECES, 12)), r"shape \(at least 16, 13\)"),
    (np.zeros((5, N_RANKS)), r"shape \(at least 16, 13\)"),
    (np.full((MAX_PIECES, N_RANKS), np.nan), "finite and not negative"),
    (-np.ones((MAX_PIECES, N_RANKS)), "finite and not negative"),
])
def test_bad_beliefs_are_refused_by_name(matrix: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build(RED, BLUE, beliefs=matrix)


# --- the search: compiled against the reference ------------------------------------------------------


def params_for(**changes: Any) -> SearchParams:
    settings_ = builtin_settings("perspecto").model_copy(
        update={"random_amplitude": 0.0, "flag_area": -1, "beliefs": True, **changes})
    return search_params(settings_, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)


def compare(view: Game, params: SearchParams, depth: int, beliefs: np.ndarray | None) -> None:
    moves = view.legal_codes()
    me = int(view.side_to_move)
    compiled = SearchRunner(view.position, me, initial_counts(view), params, beliefs=beliefs)
    values = compiled.search_depth(moves, depth)
    reference = Reference(view.position, me, initial_counts(view), params, beliefs=beliefs)
    expected = reference.search(moves, depth)
    assert values == pytest.approx(expected, abs=1e-9)
    assert compiled.nodes == reference.nodes
    assert best_index(values) == best_index(expected)


@pytest.mark.parametrize("seed", [pytest.param(1, marks=pytest.mark.long), 2, 3])
@pytest.mark.parametrize("matrix", [True, False], ids=["random-rows", "pool-rows"])
def test_compiled_search_matches_reference_with_beliefs(seed: int, matrix: bool) -> None:
    view = mini_view(seed, random.Random(seed).randint(4, 40))
    compare(view, params_for(), 5, random_beliefs(seed) if matrix else None)


def test_compiled_search_matches_reference_with_beliefs_and_expectiminimax() -> None:
    view = mini_view(7, 30)
    settings_ = builtin_settings("expectiminimax").model_copy(update={"random_amplitude": 0.0, "beliefs": True})
    params = search_params(settings_, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)
    compare(view, params, 4, random_beliefs(7))


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(4, 16))
def test_compiled_search_matches_reference_with_beliefs_more(seed: int) -> None:
    compare(mini_view(seed, random.Random(seed).randint(4, 60)), params_for(), 6, random_beliefs(seed))


def test_beliefs_change_the_search_and_the_flag_shares() -> None:
    # The same position with beliefs on (random rows) searches other values than without: the setting
    # is not a no-op (and without a matrix, the flag shares move from the suspicions to the pool's rows).
    view = mini_view(2, 20)
    moves = view.legal_codes()
    me = int(view.side_to_move)
    off = SearchRunner(view.position, me, initial_counts(view), params_for(beliefs=False)).search_depth(moves, 4)
    on = SearchRunner(view.position, me, initial_counts(view), params_for(), beliefs=random_beliefs(2))
    assert on.search_depth(moves, 4) != pytest.approx(off, abs=1e-9)
    assert any(any(on.belief(pid)) for pid in range(view.position.piece_count))
    plain = SearchRunner(view.position, me, initial_counts(view), params_for(beliefs=False))
    assert not any(any(plain.belief(pid)) for pid in range(view.position.piece_count))


# --- the facade: the model per game, the rows to the search, the reasons --------------------------------


def bench_view(ply: int) -> Game:
    return next(p.view for p in bench_positions(1, 20, 80) if p.label.endswith(f"ply {ply:3d}"))


def beliefs_engine(**changes: Any) -> Engine:
    return Engine(builtin_settings("perspecto").model_copy(update={"beliefs": True, "seed": 1, "threads": 1,
                                                                   **changes}))


def test_search_beliefs_takes_each_piece_from_its_opponents_matrix() -> None:
    view = bench_view(20)
    me = int(view.side_to_move)
    enemy = np.full((MAX_PIECES, N_RANKS), 2.0)
    ours = np.full((MAX_PIECES, N_RANKS), 3.0)
    rows = search_beliefs(view.position, me, enemy, ours)
    for pid in range(view.position.piece_count):
        assert rows[pid, 0] == (3.0 if view.position.piece(pid)[1] == me else 2.0)


def test_the_engine_keeps_one_model_a_game_and_names_the_beliefs() -> None:
    # Ply 60 of the first bench game: an attack on an unknown piece is on the board (taken or left alone);
    # the reasons say what the beliefs make of that piece.
    view = bench_view(60)
    engine = beliefs_engine()
    engine.start_game(view, view.side_to_move, "someone")
    model = engine.belief_model
    assert model is not None and model.ply_seen == len(view.history)
    start = time.monotonic()
    choice = engine.choose_move(view, start + 60, start + 120, nodes=60_000)
    assert choice.move in [view.move_of(code) for code in view.legal_codes()]
    named = [r for r in choice.reasons if r.startswith("beliefs: ")]
    assert named, choice.reasons
    assert all(re.search(r"[A-J]\d+ is a [a-z]+ with [01]\.\d\d", r) for r in named)
    assert engine.belief_model is model  # the same game: updated, not rebuilt by the engine


def test_without_the_setting_no_model_and_no_belief_reasons() -> None:
    view = bench_view(60)
    engine = beliefs_engine(beliefs=False)
    engine.start_game(view, view.side_to_move)
    start = time.monotonic()
    choice = engine.choose_move(view, start + 60, start + 120, nodes=60_000)
    assert engine.belief_model is None
    assert not any(r.startswith("beliefs: ") for r in choice.reasons)


def test_a_failing_model_is_logged_and_the_move_priced_from_the_pools(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def __init__(self, *args: Any) -> None:
            raise RuntimeError("no statistics")

    monkeypatch.setattr(facade, "BeliefModel", Broken)
    view = bench_view(40)
    engine = beliefs_engine()
    with structlog.testing.capture_logs() as logs:
        engine.start_game(view, view.side_to_move)
        start = time.monotonic()
        choice = engine.choose_move(view, start + 60, start + 120, nodes=30_000)
    assert choice.move in [view.move_of(code) for code in view.legal_codes()]
    assert engine.belief_model is None
    assert any(entry["event"] == "engine.beliefs_failed" for entry in logs)


def test_the_opponents_past_setups_reach_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, ...]] = []
    real = facade.BeliefModel

    def recording(game: Game, side: Any, setups: tuple[Any, ...] = ()) -> Any:
        seen.append(setups)
        return real(game, side, setups)

    monkeypatch.setattr(facade, "BeliefModel", recording)
    engine = EngineMove(beliefs_engine())
    engine.opponent_setups = ["a setup"]  # type: ignore[list-item]
    assert engine.engine.opponent_setups == ["a setup"]
    engine.opponent_setups = []
    view = bench_view(20)
    engine.engine.start_game(view, view.side_to_move)
    assert seen == [()]


def test_the_strategic_targets_come_from_the_beliefs() -> None:
    # The strategic search (9.2) scores the root moves from the runner's P(flag), P(bomb) and flag
    # suspicions: with beliefs on these are the rows' flag and bomb columns.
    view = bench_view(60)
    me = int(view.side_to_move)
    model = BeliefModel(view, view.side_to_move)
    rows = search_beliefs(view.position, me, model.enemy_matrix(), model.own_matrix())
    legal = view.legal_codes()
    runner = SearchRunner(view.position, me, initial_counts(view), params_for(), beliefs=rows)
    knowledge = KnowledgeView(view.position, me, initial_counts(view), beliefs=True, belief_matrix=rows)
    pool = KnowledgeView(view.position, me, initial_counts(view))
    enemy = [pid for pid in range(view.position.piece_count)
             if view.position.piece(pid)[1] != me and view.position.piece(pid)[0] >= 0]
    for pid in (pid for pid in enemy if view.position.piece(pid)[2] == Rank.UNKNOWN):
        assert knowledge.p_flag()[pid] == pytest.approx(knowledge.belief(pid)[int(Rank.FLAG)])
        assert knowledge.p_bomb()[pid] == pytest.approx(knowledge.belief(pid)[int(Rank.BOMB)])
    ours = [pid for pid in range(view.position.piece_count) if view.position.piece(pid)[1] == me]

    def targets(k: KnowledgeView, which: str) -> list[float]:
        values = getattr(k, which)()
        return [float(view.position.piece(pid)[2] == (Rank.FLAG if which == "p_flag" else Rank.BOMB))
                if pid in ours else values[pid] for pid in range(view.position.piece_count)]

    expected = strategic_scores_py(view.position, me, targets(knowledge, "p_flag"), targets(knowledge, "p_bomb"),
                                   legal, [0.0 if pid in ours else s for pid, s in enumerate(knowledge.suspicion())])
    thesis = strategic_scores_py(view.position, me, targets(pool, "p_flag"), targets(pool, "p_bomb"), legal,
                                 [0.0 if pid in ours else s for pid, s in enumerate(pool.suspicion())])
    assert runner.strategic(legal) == pytest.approx(expected)
    assert expected != pytest.approx(thesis)
