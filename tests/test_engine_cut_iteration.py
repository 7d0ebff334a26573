"""An iteration the clock cuts (``partial_share``): the root moves are searched best first, what the cut
iteration finished is exact, and the facade ranks it ahead of the rest only when it holds the last best move."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.engine.facade import initial_counts, rank_root_moves
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import builtin_settings, search_params
from engine_ext.lab.signature import bench_positions
from tests.test_engine_search import mini_view, params_for


def test_without_a_cut_iteration_the_totals_decide() -> None:
    values, totals, order, finished = rank_root_moves([1.0, 3.0, 2.0], [0.0, -2.5, 0.0], None)
    assert (values, totals, order, finished) == ([1.0, 3.0, 2.0], [1.0, 0.5, 2.0], [2, 0, 1], 0)


def test_a_cut_iteration_that_finished_the_last_best_ranks_its_moves_first() -> None:
    # Move 2 was best (2.0); the cut iteration finished it (now 0.5) and move 1 (now 4.0 + bonus -2.5): move 1
    # wins at the deeper ply, and move 0, unfinished, stays behind both although its old total is higher.
    values, totals, order, finished = rank_root_moves([1.0, 3.0, 2.0], [0.0, -2.5, 0.0], [None, 4.0, 0.5])
    assert finished == 2
    assert order == [1, 2, 0]
    assert values == [1.0, 4.0, 0.5]
    assert totals == [1.0, 1.5, 0.5]


def test_a_cut_iteration_without_the_last_best_is_not_used() -> None:
    values, _totals, order, finished = rank_root_moves([1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [9.0, None, None])
    assert finished == 0
    assert order == [1, 2, 0]
    assert values == [1.0, 3.0, 2.0]


def test_what_a_cut_iteration_finished_is_exact_and_starts_with_the_last_best() -> None:
    # One worker takes the root moves in the search's order, so if any move of the cut iteration is finished,
    # the complete iteration's best (value plus bonus) is; and each finished value is the one a full iteration
    # at that depth gives. A share near 0 starts every iteration before the deadline, so the deadline cuts one;
    # whether it had finished a move by then depends on the machine: the budgets are tried until one has.
    view = bench_positions(1, 80, 80)[0].view
    me = int(view.side_to_move)
    settings = builtin_settings("perspecto").model_copy(update={"max_depth": 24, "flee": True})
    params = search_params(settings, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)
    moves = view.legal_codes()
    bonus = [0.5 * (i % 3) for i in range(len(moves))]
    for budget in (0.05, 0.1, 0.2, 0.4, 0.8, 0.02, 0.01):
        runner = SearchRunner(view.position, me, initial_counts(view), params, threads=1)
        start = time.monotonic()
        result = runner.run(moves, start + budget, start + budget, bonus=bonus, partial_share=1e-6)
        cut = result["partial"]
        if cut is not None:
            break
    else:
        pytest.fail("no cut iteration with a finished move at any budget")
    assert cut["depth"] == result["depth"] + 1
    totals = [v + b for v, b in zip(result["values"], bonus, strict=True)]
    best = max(range(len(moves)), key=lambda i: (totals[i], -i))
    assert cut["values"][best] is not None
    fresh = SearchRunner(view.position, me, initial_counts(view), params, threads=1)
    full = fresh.search_depth(moves, cut["depth"])
    for value, exact in zip(cut["values"], full, strict=True):
        if value is not None:
            assert value == pytest.approx(exact, abs=1e-9)


def test_no_cut_iteration_under_a_node_budget() -> None:
    view = bench_positions(1, 80, 80)[0].view
    settings = builtin_settings("perspecto").model_copy(update={"max_depth": 24})
    params = search_params(settings, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)
    runner = SearchRunner(view.position, int(view.side_to_move), initial_counts(view), params)
    result = runner.run(view.legal_codes(), float("inf"), float("inf"), 20000, partial_share=1.0)
    assert result["limit"] == "nodes"
    assert result["partial"] is None


@settings(max_examples=20, deadline=None)
@given(st.randoms(use_true_random=False))
def test_a_root_moves_value_does_not_depend_on_the_order(rng: random.Random) -> None:
    # What lets an iteration search the last one's best first: the same values, move by move, and the same
    # nodes in any order of the root moves.
    view = mini_view(7)
    me = int(view.side_to_move)
    params = params_for("perspecto", flee=True, skip_lost_captures=True, full_plies=2, en_prise_plies=2,
                        last_piece_plies=3)
    moves = view.legal_codes()
    shuffled = list(moves)
    rng.shuffle(shuffled)
    first = SearchRunner(view.position, me, initial_counts(view), params, threads=1)
    values = dict(zip(moves, first.search_depth(moves, 5), strict=True))
    second = SearchRunner(view.position, me, initial_counts(view), params, threads=1)
    again = dict(zip(shuffled, second.search_depth(shuffled, 5), strict=True))
    assert again == values
    assert second.nodes == first.nodes
