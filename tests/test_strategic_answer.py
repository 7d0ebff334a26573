"""The answer to their known high pieces (issue 45, not in the thesis; docs/engine.md, *The answer*): the
responder each known opponent marshal, general, colonel or major in our half gets, its pull, and the flight of
our pieces in the raider's way towards it; compiled against the plain reference."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.engine import reference_strategic as ref
from engine_ext.engine.settings import StrategicParams, builtin_settings, strategic_params
from engine_ext.engine.strategic import strategic_scores_py
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank
from tests.test_strategic import BLUE, RED, UNKNOWN, _view, board, probs

FORCE = 8.0
ON = StrategicParams(answer_force=FORCE)
Sq = tuple[int, int]


def scores(pos: Position, params: StrategicParams, lookahead: bool = True) -> dict[tuple[Sq, Sq], float]:
    """Every legal move's strategic score, compiled and reference agreeing; keyed by (from, to)."""
    pf, pb = probs(pos)
    moves = pos.moves()
    fast = strategic_scores_py(pos, pos.side, pf, pb, moves, lookahead=lookahead, params=params)
    slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, lookahead=lookahead, params=params)
    assert fast == pytest.approx(slow, abs=1e-9)
    return {(pos.coords(m & 0xFF), pos.coords(m >> 8)): s for m, s in zip(moves, fast, strict=True)}


def of(moves: dict[tuple[Sq, Sq], float], frm: Sq) -> dict[Sq, float]:
    return {to: s for (f, to), s in moves.items() if f == frm}


# Their known general on F4 (5, 3) in our half, our captain beside it on E4 (4, 3), our marshal five path
# steps off on C2 (2, 1); their unknown pieces on their back row pull our captain up (Appendix 1, rule 8).
RAID = [(2, 1, RED, int(Rank.MARSHAL)), (4, 3, RED, int(Rank.CAPTAIN)), (9, 0, RED, int(Rank.FLAG)),
        (8, 0, RED, int(Rank.BOMB)), (5, 3, BLUE, int(Rank.GENERAL))] + [
        (col, 9, BLUE, int(UNKNOWN)) for col in (0, 2, 4, 6, 8)]


def test_the_marshal_answers_their_general_and_the_captain_steps_back_towards_it() -> None:
    pos = board(RAID)
    assert pos.side == RED
    b = ref._Board.of(pos)
    (pair,) = ref.answers(b, RED)
    assert (pair[0].rank, pair[1].rank) == (Rank.GENERAL, Rank.MARSHAL)
    assert ref.path_steps(b, RED, (5, 3))[(2, 1)] == 5
    off, on = scores(pos, StrategicParams()), scores(pos, ON)
    marshal_off, marshal_on = of(off, (2, 1)), of(on, (2, 1))
    closer = {(3, 1), (2, 2)}  # right and up: four steps from the general; left and down: six
    for to in marshal_on:
        assert marshal_on[to] - marshal_off[to] == pytest.approx(FORCE if to in closer else -FORCE)
    assert max(marshal_on, key=marshal_on.__getitem__) in closer
    # The captain: down (E3) and left (D4) step away from the general and nearer the marshal; up (E5) steps
    # away from the general only, aside. Without the answer the unknown pieces above make aside the better.
    captain_off, captain_on = of(off, (4, 3)), of(on, (4, 3))
    assert captain_off[(4, 4)] > captain_off[(4, 2)]
    assert captain_on[(4, 2)] > captain_on[(4, 4)]
    assert captain_on[(4, 2)] - captain_off[(4, 2)] == pytest.approx(FORCE)
    assert captain_on[(3, 3)] - captain_off[(3, 3)] == pytest.approx(FORCE)
    assert captain_on[(4, 4)] == pytest.approx(captain_off[(4, 4)])


def test_no_answer_outside_our_half_or_without_an_able_piece() -> None:
    # Their general in their own half: none. Our captain alone cannot answer it: none.
    far = board([(2, 1, RED, int(Rank.MARSHAL)), (4, 3, RED, int(Rank.CAPTAIN)), (5, 6, BLUE, int(Rank.GENERAL))])
    assert ref.answers(ref._Board.of(far), RED) == []
    assert scores(far, ON) == scores(far, StrategicParams())
    alone = board([(4, 3, RED, int(Rank.CAPTAIN)), (5, 3, BLUE, int(Rank.GENERAL))])
    assert ref.answers(ref._Board.of(alone), RED) == []


def test_the_spy_answers_their_marshal_and_a_trade_needs_material() -> None:
    spy_far = [(0, 0, RED, int(Rank.SPY)), (5, 1, RED, int(Rank.MARSHAL)), (5, 3, BLUE, int(Rank.MARSHAL))]
    pairs = ref.answers(ref._Board.of(board(spy_far)), RED)
    assert [p[1].rank for p in pairs] == [Rank.MARSHAL]  # level: the nearer marshal trades
    behind = [*spy_far, (9, 9, BLUE, int(UNKNOWN)), (8, 9, BLUE, int(UNKNOWN))]
    pairs = ref.answers(ref._Board.of(board(behind)), RED)
    assert [p[1].rank for p in pairs] == [Rank.SPY]  # behind by a piece: no trade, the spy
    # Two raiders: the marshal answered first; each responder once.
    two = [(0, 0, RED, int(Rank.SPY)), (5, 1, RED, int(Rank.MARSHAL)), (5, 3, BLUE, int(Rank.MARSHAL)),
           (7, 3, BLUE, int(Rank.GENERAL)), (9, 9, BLUE, int(UNKNOWN)), (8, 9, BLUE, int(UNKNOWN))]
    pairs = ref.answers(ref._Board.of(board(two)), RED)
    assert [(p[0].rank, p[1].rank) for p in pairs] == [(Rank.MARSHAL, Rank.SPY), (Rank.GENERAL, Rank.MARSHAL)]
    scores(board(two), ON)


def test_the_spy_waits_two_steps_off_their_marshal() -> None:
    # Their known marshal on F4 (5, 3) in our half; our spy, its responder (we are behind: no trade), on C2
    # (2, 1), five path steps off, then on E3 (4, 2), two off. Next to the marshal the spy would be struck
    # first (a spy loses when attacked), so the spy closes to two steps and waits there: the step into
    # the marshal's reach scores -force, the step back out of it +force.
    pieces = [(9, 0, RED, int(Rank.FLAG)), (8, 0, RED, int(Rank.BOMB)), (5, 3, BLUE, int(Rank.MARSHAL))] + [
        (col, 9, BLUE, int(UNKNOWN)) for col in (0, 2, 4, 6, 8)]
    far = board([(2, 1, RED, int(Rank.SPY)), *pieces])
    (pair,) = ref.answers(ref._Board.of(far), RED)
    assert (pair[0].rank, pair[1].rank) == (Rank.MARSHAL, Rank.SPY)
    spy_on, spy_off = of(scores(far, ON), (2, 1)), of(scores(far, StrategicParams()), (2, 1))
    assert spy_on[(3, 1)] - spy_off[(3, 1)] == pytest.approx(FORCE)  # nearer: four steps off
    assert spy_on[(1, 1)] - spy_off[(1, 1)] == pytest.approx(-FORCE)
    near = board([(4, 2, RED, int(Rank.SPY)), *pieces])
    spy_on, spy_off = of(scores(near, ON), (4, 2)), of(scores(near, StrategicParams()), (4, 2))
    assert spy_on[(5, 2)] - spy_off[(5, 2)] == pytest.approx(-FORCE)  # next to the marshal: struck first
    assert spy_on[(4, 3)] - spy_off[(4, 3)] == pytest.approx(-FORCE)
    assert spy_on[(3, 2)] - spy_off[(3, 2)] == pytest.approx(-FORCE)  # three off: farther than the ambush
    adjacent = board([(5, 2, RED, int(Rank.SPY)), *pieces])
    spy_on, spy_off = of(scores(adjacent, ON), (5, 2)), of(scores(adjacent, StrategicParams()), (5, 2))
    assert spy_on[(5, 1)] - spy_off[(5, 1)] == pytest.approx(FORCE)  # out of its reach, to the ambush


def test_blue_answers_in_its_own_half() -> None:
    mirrored = [(col, 9 - row, 1 - owner, rank) for col, row, owner, rank in RAID]
    pos = board(mirrored, side=BLUE)
    (pair,) = ref.answers(ref._Board.of(pos), BLUE)
    assert (pair[0].rank, pair[1].rank) == (Rank.GENERAL, Rank.MARSHAL)
    on = of(scores(pos, ON), (4, 6))
    off = of(scores(pos, StrategicParams()), (4, 6))
    assert on[(4, 7)] - off[(4, 7)] == pytest.approx(FORCE)


def test_the_trial_profile_sets_it() -> None:
    # On trial (config/profiles/issue45-trial.toml), off in the built-in profiles until the paired verdict.
    assert builtin_settings("perspecto").answer_force == 0.0
    assert builtin_settings("pemm").answer_force == 0.0
    trial = builtin_settings("perspecto").model_copy(update={"answer_force": FORCE})
    assert strategic_params(trial, 20).answer_force == FORCE


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(0, 200), hide=st.floats(0.0, 0.6), classic=st.booleans(),
       range_attacks=st.booleans(), prob_seed=st.integers(0, 10_000))
def test_compiled_equals_reference_with_the_answer(seed: int, plies: int, hide: float, classic: bool,
                                                   range_attacks: bool, prob_seed: int) -> None:
    pos = _view(seed, plies, hide, classic, range_attacks)
    rng = random.Random(prob_seed)
    n = pos.piece_count
    pf = [rng.choice([0.0, rng.random() * 0.5]) for _ in range(n)]
    pb = [rng.random() for _ in range(n)]
    moves = pos.moves()
    for params in (ON, StrategicParams(answer_force=FORCE, home_guard=64.0, miner_guard=64.0, miner_pull=0.15)):
        fast = strategic_scores_py(pos, pos.side, pf, pb, moves, params=params)
        slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, params=params)
        assert fast == pytest.approx(slow, abs=1e-9)
        plain = strategic_scores_py(pos, pos.side, pf, pb, moves, params=StrategicParams(
            home_guard=params.home_guard, miner_guard=params.miner_guard, miner_pull=params.miner_pull))
        terms = ref.answer_terms(pos, pos.side, FORCE, moves)
        assert [f - p for f, p in zip(fast, plain, strict=True)] == pytest.approx(terms, abs=1e-9)


def test_random_positions_exercise_the_answer() -> None:
    """The random comparison above is only worth something if the answer fires in it: count positions."""
    fired = 0
    for seed in range(60):
        pos = _view(seed, 60 + seed * 2, 0.3, seed % 2 == 0, False)
        moves = pos.moves()
        terms = ref.answer_terms(pos, pos.side, FORCE, moves)
        pf, pb = probs(pos)
        fast = strategic_scores_py(pos, pos.side, pf, pb, moves, params=ON)
        plain = strategic_scores_py(pos, pos.side, pf, pb, moves, params=StrategicParams())
        assert [f - p for f, p in zip(fast, plain, strict=True)] == pytest.approx(terms, abs=1e-9)
        fired += any(terms)
    assert fired >= 5  # 9 of these 60
