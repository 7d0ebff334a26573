"""``top_bomb_limit`` (issue 32): in our own view an attack of our marshal or general on an enemy piece we
do not know that has not moved fails when its P(bomb) at the root is above the limit; every other attack,
the opponent's view, and a piece that has moved are priced as before; the compiled search and the plain
reference agree with the limit on (the same values, the same nodes, the same move)."""

from __future__ import annotations

import random

import pytest

from engine_ext.engine.facade import initial_counts
from engine_ext.engine.search import SearchRunner
from engine_ext.rules.pieces import Rank
from tests.test_engine_beliefs_search import (
    BLUE,
    E8,
    OPP,
    OWN,
    RED,
    build,
    compare,
    mini_view,
    one_hot,
    params_for,
    random_beliefs,
)

# Blue's E8 is a bomb with 0.45 (the band where our marshal and general met a bomb 7 times in 9 against
# PeternLewis), else a general or a scout.
LIKELY_BOMB = one_hot({E8: {Rank.BOMB: 0.45, Rank.GENERAL: 0.25, Rank.SCOUT: 0.3}})


def test_above_the_limit_our_marshal_and_general_do_not_test_the_piece() -> None:
    view, ids = build(RED, BLUE, beliefs=LIKELY_BOMB, top_bomb_limit=0.3)
    assert view.p_bomb()[E8] == pytest.approx(0.45)
    assert view.attack_outcomes(OWN, ids["H1"], E8) == pytest.approx((0.0, 1.0, 0.0, 0.0))
    assert view.attack_outcomes(OWN, ids["G1"], E8) == pytest.approx((0.0, 1.0, 0.0, 0.0))


def test_below_the_limit_and_off_the_attack_is_priced_from_the_beliefs() -> None:
    for limit in (0.5, 1.0):
        view, ids = build(RED, BLUE, beliefs=LIKELY_BOMB, top_bomb_limit=limit)
        # The marshal beats the general and the scout: 0.55.
        assert view.attack_outcomes(OWN, ids["H1"], E8) == pytest.approx((0.55, 0.45, 0.0, 0.0))


def test_the_other_pieces_the_opponents_view_and_moved_pieces_keep_their_price() -> None:
    view, ids = build(RED, BLUE, beliefs=LIKELY_BOMB, top_bomb_limit=0.3)
    # Our miner takes a bomb: it beats the bomb and the scout, 0.75.
    assert view.attack_outcomes(OWN, ids["F1"], E8)[0] == pytest.approx(0.75)
    # The opponent's view of our marshal's attack, as we model it, is not ours to restrain.
    assert view.attack_outcomes(OPP, ids["H1"], E8)[0] > 0.0
    # A piece that has moved is no bomb: the limit does not apply.
    moved, ids = build(RED, BLUE, moved=("E8",), beliefs=LIKELY_BOMB, top_bomb_limit=0.3)
    assert moved.p_bomb()[E8] == 0.0
    assert moved.attack_outcomes(OWN, ids["H1"], E8)[0] == pytest.approx(1.0)


def test_their_marshal_on_our_unmoved_piece_is_not_restrained() -> None:
    # Blue to move is not what build gives; the rule is about the attacker being ours, so the reverse
    # attack (their unknown piece on our unmoved piece) keeps its price with the limit at 0.
    view, ids = build(RED, BLUE, beliefs=LIKELY_BOMB, top_bomb_limit=0.0)
    plain, _ = build(RED, BLUE, beliefs=LIKELY_BOMB)
    assert view.attack_outcomes(OWN, E8, ids["B1"]) == pytest.approx(plain.attack_outcomes(OWN, E8, ids["B1"]))


@pytest.mark.parametrize("seed", [1, 2, 3, 5])
@pytest.mark.parametrize("limit", [0.0, 0.3])
def test_compiled_search_matches_reference_with_the_limit(seed: int, limit: float) -> None:
    view = mini_view(seed, random.Random(seed).randint(4, 40))
    compare(view, params_for(top_bomb_limit=limit), 5, random_beliefs(seed))


@pytest.mark.parametrize("seed", [1, 4])
def test_compiled_search_matches_reference_with_the_limit_on_the_pools(seed: int) -> None:
    view = mini_view(seed, random.Random(seed).randint(4, 40))
    compare(view, params_for(top_bomb_limit=0.1, beliefs=False), 5, None)


def test_the_limit_changes_the_search_the_comparisons_above_run() -> None:
    # Seed 1 at 0.3 (and at 0.0) searches other values than without the limit, so the comparisons with
    # the reference above check the rule itself, not only that it is never reached.
    view = mini_view(1, random.Random(1).randint(4, 40))
    moves, me = view.legal_codes(), int(view.side_to_move)
    values = {}
    for limit in (1.0, 0.3):
        runner = SearchRunner(view.position, me, initial_counts(view), params_for(top_bomb_limit=limit),
                              beliefs=random_beliefs(1))
        values[limit] = runner.search_depth(moves, 5)
    assert values[1.0] != values[0.3]
