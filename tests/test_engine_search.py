"""The compiled searches against the plain reference (engine_ext/engine/reference_search.py) on tiny
positions: the same values, the same nodes, the same move; and a few tactics by hand."""

from __future__ import annotations

import math
import random
import threading
import time
from typing import Any

import pytest

from engine_ext.engine.facade import Engine, initial_counts
from engine_ext.engine.knowledge import KnowledgeView
from engine_ext.engine.reference_search import Reference, best_index
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import SearchParams, builtin_settings, search_params
from engine_ext.research.selfplay import semi_random_game
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, MINI, Square


def mini_view(seed: int, plies: int | None = None) -> Game:
    """A MINI game after some random plies, as the side to move sees it."""
    game = semi_random_game(RulesOptions(ruleset=MINI), seed)
    rng = random.Random(seed)
    for _ in range(plies if plies is not None else rng.randint(4, 30)):
        if game.result is not None:
            break
        game.play(rng.choice(game.referee.legal_moves()))
    assert game.result is None
    return game.view(game.referee.side_to_move)


def params_for(profile: str, **changes: Any) -> SearchParams:
    # The thesis's local search unless a case asks for the flag area: on the small boards here the
    # area around the flag is most of the board, which makes the plain reference search crawl.
    settings = builtin_settings(profile).model_copy(update={"random_amplitude": 0.0, "flag_area": -1, **changes})
    return search_params(settings, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)


def compare(view: Game, params: SearchParams, depth: int) -> None:
    moves = view.legal_codes()
    me = int(view.side_to_move)
    compiled = SearchRunner(view.position, me, initial_counts(view), params)
    values = compiled.search_depth(moves, depth)
    pruned = Reference(view.position, me, initial_counts(view), params)
    expected = pruned.search(moves, depth)
    plain = Reference(view.position, me, initial_counts(view), params, prune=False)
    unpruned = plain.search(moves, depth)
    assert values == pytest.approx(expected, abs=1e-9)
    assert values == pytest.approx(unpruned, abs=1e-9), "the cut-off changed a value"
    assert compiled.nodes == pruned.nodes
    assert plain.nodes >= pruned.nodes
    assert best_index(values) == best_index(unpruned)


CASES = [
    ("minimax", 4, {}),
    ("expectiminimax", 4, {}),
    ("pemm", 4, {}),
    ("perspecto", 5, {}),
    ("perspecto", 4, {"local_radius": -1}),
    ("perspecto", 5, {"scout_runs": True}),
    ("perspecto", 4, {"variable_depth": False, "average_margin": 0.0}),
    ("expectiminimax", 3, {"failed_attack_passive": True, "psychology": True}),
    ("perspecto", 5, {"flag_area": 1, "own_flag_value": 1000.0}),
    ("perspecto", 5, {"flag_area": 2, "local_radius": 1}),
    ("perspecto", 5, {"flee": True, "full_plies": 2, "en_prise_plies": 2, "last_piece_plies": 3}),
    ("perspecto", 5, {"flee": True, "skip_lost_captures": True, "full_plies": 2, "en_prise_plies": 2,
                      "last_piece_plies": 3}),
    ("perspecto", 5, {"fight_reach": 3, "local_radius": 1}),
    ("perspecto", 5, {"pemm_plies": 2}),
    ("perspecto", 6, {"pemm_plies": 4}),
]

# A shape whose restricted plies (3 to 5) a tiny position reaches in the plain reference's time.
SHORT_SHAPE = {"full_plies": 2, "en_prise_plies": 2, "last_piece_plies": 3}


@pytest.mark.parametrize(("profile", "depth", "changes"), CASES)
@pytest.mark.parametrize("seed", [1, pytest.param(2, marks=pytest.mark.long)])
def test_compiled_search_matches_reference(profile: str, depth: int, changes: dict[str, Any], seed: int) -> None:
    compare(mini_view(seed), params_for(profile, **changes), depth)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(3, 24))
@pytest.mark.parametrize("profile", ["minimax", "expectiminimax", "pemm", "perspecto"])
def test_compiled_search_matches_reference_more(profile: str, seed: int) -> None:
    compare(mini_view(seed), params_for(profile), 6 if profile == "perspecto" else 4)


@pytest.mark.parametrize("line_approach", [True, False])
def test_matches_reference_with_psychology_and_history(line_approach: bool) -> None:
    # A longer game: pieces shown, pieces that came towards shown ones, fears in play.
    view = mini_view(11, plies=40)
    compare(view, params_for("perspecto", line_approach=line_approach), 5)


# The quiescence's settings and positions where each changes the tree past the en-prise ply (a threatened
# piece's steps to safety; the lost captures left out).
QUIESCENCE_CASES = [("flee", 4, None), ("flee", 2, 40), ("flee", 15, 40),
                    ("skip_lost_captures", 1, None), ("skip_lost_captures", 2, 40)]


@pytest.mark.parametrize(("setting", "seed", "plies"), QUIESCENCE_CASES)
def test_the_quiescence_matches_reference(setting: str, seed: int, plies: int | None) -> None:
    # The setting changes the tree there, and the compiled search is still equal to the reference (values,
    # nodes, move).
    view = mini_view(seed, plies)
    counts = []
    for on in (False, True):
        runner = SearchRunner(view.position, int(view.side_to_move), initial_counts(view),
                              params_for("perspecto", **{setting: on}, **SHORT_SHAPE))
        runner.search_depth(view.legal_codes(), 5)
        counts.append(runner.nodes)
    assert counts[1] != counts[0], f"{setting} did not change the tree: the test position lost its case"
    compare(view, params_for("perspecto", **{setting: True}, **SHORT_SHAPE), 5)


def sparse_classic_view() -> Game:
    """Eight pieces a side on the classic board after a few random plies, red to move."""
    rng = random.Random(5)
    red = {Square.parse(s): r for s, r in {
        "A1": Rank.FLAG, "B1": Rank.BOMB, "D3": Rank.GENERAL, "E4": Rank.SCOUT, "F3": Rank.MINER,
        "G4": Rank.SPY, "H2": Rank.CAPTAIN, "C4": Rank.SERGEANT,
    }.items()}
    blue = {Square.parse(s): r for s, r in {
        "J10": Rank.FLAG, "I10": Rank.BOMB, "D7": Rank.MARSHAL, "E7": Rank.SCOUT, "F6": Rank.MINER,
        "B7": Rank.COLONEL, "H7": Rank.LIEUTENANT, "C7": Rank.MAJOR,
    }.items()}
    game = Game(RulesOptions(ruleset=CLASSIC), red, {sq: Rank.UNKNOWN for sq in blue}, validate_setups=False)
    referee = Game(RulesOptions(ruleset=CLASSIC), red, blue, validate_setups=False)
    for _ in range(12):
        move = rng.choice(referee.legal_moves())
        record = referee.play(move)
        game.play_observed(move, record.attacker, record.defender)
    if game.side_to_move != Side.RED:
        move = rng.choice(referee.legal_moves())
        record = referee.play(move)
        game.play_observed(move, record.attacker, record.defender)
    return game


@pytest.mark.long
def test_matches_reference_on_a_sparse_classic_board() -> None:
    game = sparse_classic_view()
    compare(game, params_for("perspecto", scout_runs=True), 4)
    compare(game, params_for("perspecto"), 6)
    compare(game, params_for("perspecto", flag_area=3, own_flag_value=1000.0), 5)
    compare(game, params_for("perspecto", fight_reach=4), 5)
    compare(game, params_for("perspecto", pemm_plies=3), 6)
    compare(game, params_for("expectiminimax"), 4)


@pytest.mark.slow
def test_matches_reference_on_a_sparse_classic_board_deeper() -> None:
    compare(sparse_classic_view(), params_for("perspecto", scout_runs=True), 6)


@pytest.mark.parametrize("changes", [{}, {"fight_reach": 3}, {"pemm_plies": 3}])
def test_threads_change_nothing(changes: dict[str, Any]) -> None:
    view = mini_view(3)
    params = params_for("perspecto", **changes)
    moves = view.legal_codes()
    one = SearchRunner(view.position, int(view.side_to_move), initial_counts(view), params, threads=1)
    two = SearchRunner(view.position, int(view.side_to_move), initial_counts(view), params, threads=2)
    assert one.search_depth(moves, 6) == two.search_depth(moves, 6)
    assert one.nodes == two.nodes
    assert two.threads == 2


# --- tactics by hand ------------------------------------------------------------------------------------


def sparse(red: dict[str, Rank], blue: dict[str, Rank]) -> tuple[Position, dict[str, int]]:
    pieces: list[tuple[int, int, int, int]] = []
    ids: dict[str, int] = {}
    for owner, group in ((0, red), (1, blue)):
        for name, rank in group.items():
            sq = Square.parse(name)
            ids[name] = len(pieces)
            pieces.append((sq.col, sq.row, owner, int(rank)))
    return Position(10, 10, [(s.col, s.row) for s in CLASSIC.lakes], pieces, 0), ids


COUNTS = [CLASSIC.pieces.get(Rank(code), 0) for code in range(13)]


def best_move(pos: Position, params: SearchParams, depth: int, **known: Any) -> int:
    runner = SearchRunner(pos, 0, COUNTS, params, **known)
    moves = pos.moves(False)
    values = runner.search_depth(moves, depth)
    return moves[best_index(values)]


def code(pos: Position, frm: str, to: str) -> int:
    a, b = Square.parse(frm), Square.parse(to)
    return pos.square(a.col, a.row) | (pos.square(b.col, b.row) << 8)


@pytest.mark.parametrize("profile", ["minimax", "expectiminimax", "pemm", "perspecto"])
def test_every_search_takes_a_free_piece(profile: str) -> None:
    # Our colonel next to their known general-free major: take it.
    pos, ids = sparse({"A1": Rank.FLAG, "E4": Rank.COLONEL}, {"J10": Rank.UNKNOWN, "E5": Rank.MAJOR})
    assert best_move(pos, params_for(profile), 3, public=[ids["E4"]]) == code(pos, "E4", "E5")


@pytest.mark.parametrize("profile", ["minimax", "expectiminimax", "pemm", "perspecto"])
def test_every_search_saves_a_threatened_piece(profile: str) -> None:
    # Their known marshal is next to our general, which they have seen: move it away (or lose 85).
    pos, ids = sparse({"A1": Rank.FLAG, "E4": Rank.GENERAL}, {"J10": Rank.UNKNOWN, "E5": Rank.MARSHAL})
    move = best_move(pos, params_for(profile), 3, public=[ids["E4"]])
    assert move in (code(pos, "E4", "D4"), code(pos, "E4", "F4"), code(pos, "E4", "E3"))


def test_the_flag_area_searches_a_raid_whatever_the_root_move() -> None:
    # Their known miner stands next to the bomb beside our flag; our only movable piece is far away.
    # The local area of the marshal's moves (radius 2) does not reach the flag: without the flag area
    # the raid is never searched and every move is worth the same as passing; with it, the raid is in
    # every line, so the miner's moves are searched below each root move.
    pos, ids = sparse({"A1": Rank.FLAG, "A2": Rank.BOMB, "B1": Rank.BOMB, "J5": Rank.MARSHAL},
                      {"A3": Rank.MINER, "J10": Rank.UNKNOWN})
    moves = pos.moves(False)
    assert all(m & 0xFF == pos.square(9, 4) for m in moves)
    nodes = {}
    for area in (-1, 3):
        params = params_for("perspecto", flag_area=area, own_flag_value=1000.0)
        runner = SearchRunner(pos, 0, COUNTS, params, public=[ids["A3"]], moved=[ids["A3"]])
        runner.search_depth(moves, 4)
        nodes[area] = runner.nodes
        reference = Reference(pos, 0, COUNTS, params, public=[ids["A3"]], moved=[ids["A3"]])
        reference.search(moves, 4)
        assert reference.nodes == runner.nodes
    assert nodes[3] > nodes[-1]


@pytest.mark.parametrize(("theirs", "reach", "fought"), [
    (Rank.GENERAL, 4, True),    # their known general four steps from our captain: a fight
    (Rank.GENERAL, 3, False),   # ... beyond the reach
    (Rank.CAPTAIN, 4, False),   # equals: neither takes the other
    (Rank.UNKNOWN, 4, False),   # a piece we have not seen: the local area's business
])
def test_a_fight_joins_the_area_of_every_root_move(theirs: Rank, reach: int, fought: bool) -> None:
    # Our marshal's moves on the J file are the root moves; the captain on E2 and what stands on E6 are far
    # outside their radius-2 areas. A fight within ``fight_reach`` brings the squares between the two into
    # every area, so the walk and the flight are searched below every root move (more nodes); anything else
    # adds nothing. The compiled search and the reference agree on the values and the nodes either way.
    pos, ids = sparse({"A1": Rank.FLAG, "E2": Rank.CAPTAIN, "J5": Rank.MARSHAL}, {"J10": Rank.UNKNOWN, "E6": theirs})
    moves = [m for m in pos.moves(False) if m & 0xFF == pos.square(9, 4)]
    nodes = {}
    for fight_reach in (-1, reach):
        params = params_for("perspecto", fight_reach=fight_reach)
        runner = SearchRunner(pos, 0, COUNTS, params, moved=[ids["E6"]])
        values = runner.search_depth(moves, 5)
        nodes[fight_reach] = runner.nodes
        reference = Reference(pos, 0, COUNTS, params, moved=[ids["E6"]])
        assert values == pytest.approx(reference.search(moves, 5), abs=1e-9)
        assert reference.nodes == runner.nodes
    assert (nodes[reach] > nodes[-1]) == fought


def test_thesis_figure_11_the_opponent_sees_differently() -> None:
    # 8.2, Fig 11: their unknown piece can strike our major (which has moved, so it is no bomb) or
    # our miner (never moved). In our view the miner is the easier prey; in theirs the major is the
    # safer strike (the miner might be a bomb). Expectiminimax uses our view for both; p-e-minimax
    # keeps the two apart. Our whole army stands on the board so that their view of our pool is real.
    placement = {str(sq): rank for sq, rank in CLASSIC.random_placement(Side.RED, random.Random(3)).items()}
    swap = next(sq for sq, rank in placement.items() if rank == Rank.MAJOR)
    placement[swap], placement["E4"] = placement["E4"], Rank.MAJOR
    miner = next(sq for sq, rank in placement.items() if rank == Rank.MINER)
    del placement[miner]
    placement["F5"] = Rank.MINER
    pos, ids = sparse(placement, {"J10": Rank.UNKNOWN, "E5": Rank.UNKNOWN})
    view = KnowledgeView(pos, 0, COUNTS, public=[], approached=[], moved=[ids["E4"], ids["E5"]])
    ours_major = view.attack_outcomes(0, ids["E5"], ids["E4"])[0]
    ours_miner = view.attack_outcomes(0, ids["E5"], ids["F5"])[0]
    theirs_major = view.attack_outcomes(1, ids["E5"], ids["E4"])[0]
    theirs_miner = view.attack_outcomes(1, ids["E5"], ids["F5"])[0]
    assert ours_miner > ours_major
    assert theirs_major > theirs_miner


def test_an_approach_inside_the_search_line_brings_fear() -> None:
    # Our captain on E4 is known to them; their unknown piece on E7 has not come towards it (yet).
    # Only if a step towards it inside the search counts (line_approach) does ownFear weigh on the
    # lines where it comes and strikes, so the values differ between the two readings. (With the thesis's
    # stand-in for a failed strike, doing nothing, the strike is worth making in every line, so its chance
    # shows; with the best other move as the stand-in they see it is better not to come at all.)
    pos, ids = sparse({"A1": Rank.FLAG, "E4": Rank.CAPTAIN}, {"J10": Rank.UNKNOWN, "E7": Rank.UNKNOWN})
    moves = pos.moves(False)
    values = {}
    for line_approach in (True, False):
        params = params_for("perspecto", line_approach=line_approach, failed_attack_alternative=False)
        runner = SearchRunner(pos, 0, COUNTS, params, public=[ids["E4"]], approached=[],
                              moved=[ids["E7"]])
        values[line_approach] = runner.search_depth(moves, 5)
    assert values[True] != pytest.approx(values[False])


# --- limits that do not depend on the machine: the node budget and the fixed depth -----------------------

NO_DEADLINE = math.inf


def classic_view(seed: int = 4, plies: int = 30) -> Game:
    """A classic game after some random plies, as the side to move sees it."""
    game = semi_random_game(RulesOptions(ruleset=CLASSIC), seed)
    rng = random.Random(seed)
    for _ in range(plies):
        game.play(rng.choice(game.referee.legal_moves()))
    return game.view(game.referee.side_to_move)


def budget_run(view: Game, params: SearchParams, nodes: int | None, threads: int = 1) -> dict[str, Any]:
    runner = SearchRunner(view.position, int(view.side_to_move), initial_counts(view), params, threads=threads)
    return runner.run(view.legal_codes(), NO_DEADLINE, NO_DEADLINE, nodes)


def test_a_node_budget_gives_the_same_search_twice_and_on_any_number_of_threads() -> None:
    view = classic_view()
    params = params_for("perspecto", random_amplitude=2.0, flag_area=3)
    first = budget_run(view, params, 50_000)
    again = budget_run(view, params, 50_000)
    two = budget_run(view, params, 50_000, threads=2)
    for other in (again, two):
        for key in ("depth", "values", "nodes", "ply_nodes", "limit"):
            assert other[key] == first[key], key
        assert [n for _, _, n in other["iterations"]] == [n for _, _, n in first["iterations"]]
    assert two["threads"] == 1, "a budget searches on one thread"
    assert first["limit"] == "nodes"
    assert 0 < first["depth"] < params.max_depth


def test_a_budget_keeps_the_last_complete_iteration_within_it() -> None:
    # Every budget: the answer is a complete iteration (the same values as that depth searched alone)
    # whose nodes, all iterations counted, stay within the budget. Both ways the budget ends the
    # deepening occur: the forecast declines an iteration, or an iteration passes the budget and is
    # thrown away.
    view = classic_view()
    params = params_for("perspecto", random_amplitude=2.0)
    moves = view.legal_codes()
    declined = thrown_away = 0
    for budget in (int(200 * 1.25**k) for k in range(40)):  # 200 to 1.2 million
        result = budget_run(view, params, budget)
        assert result["limit"] == "nodes"
        assert 1 <= result["depth"] < params.max_depth
        assert result["iterations"][-1][2] <= budget
        alone = SearchRunner(view.position, int(view.side_to_move), initial_counts(view), params)
        assert result["values"] == alone.search_depth(moves, result["depth"])
        if result["aborted"]:
            thrown_away += 1
            assert result["nodes"] > budget
        else:
            declined += 1
            assert result["nodes"] <= budget
    assert declined > 0
    assert thrown_away > 0


def test_a_budget_that_does_not_bind_changes_nothing() -> None:
    view = classic_view()
    params = params_for("perspecto", random_amplitude=2.0, max_depth=7)
    free = budget_run(view, params, None)
    generous = budget_run(view, params, 10**12)
    for key in ("depth", "values", "nodes", "ply_nodes", "limit", "aborted"):
        assert generous[key] == free[key], key
    assert free["limit"] == "depth"
    assert free["depth"] == 7


def test_a_budget_below_the_first_iteration_still_answers_a_legal_move() -> None:
    view = classic_view()
    engine = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3}))
    choice = engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, nodes=1)
    assert choice.move in view.legal_moves()
    assert choice.depth == 0
    assert choice.limit == "nodes"


def test_the_engine_under_a_budget_is_the_same_on_one_thread_or_two() -> None:
    view = classic_view(seed=6, plies=60)
    choices = []
    for threads in (1, 2, 2):
        engine = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3, "threads": threads}))
        choices.append(engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, nodes=200_000))
    first = choices[0]
    assert first.limit == "nodes"
    for other in choices[1:]:
        assert (other.move, other.value, other.depth, other.nodes) == (first.move, first.value, first.depth,
                                                                        first.nodes)


def test_the_hard_deadline_still_wins_over_a_budget() -> None:
    view = classic_view()
    engine = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3}))
    now = time.monotonic()
    choice = engine.choose_move(view, now, now, nodes=10**9)
    assert choice.limit == "time"
    assert choice.move in view.legal_moves()
    assert choice.depth < engine.settings.max_depth


def test_the_choice_says_a_stop_request_ended_it() -> None:
    view = classic_view()
    engine = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3}))
    stop = threading.Event()
    stop.set()
    choice = engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, stop, nodes=10**9)
    assert choice.limit == "stop"
    assert choice.move in view.legal_moves()


@pytest.mark.parametrize("depth", [3, 6])
def test_a_fixed_depth_searches_exactly_that_deep(depth: int) -> None:
    view = classic_view()
    engine = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3, "threads": 1}))
    choice = engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, depth=depth)
    assert choice.depth == depth
    assert choice.limit == "depth"
    # The same as the settings' max_depth set to it: the keyword is that setting for one move.
    same = Engine(builtin_settings("perspecto").model_copy(update={"seed": 3, "threads": 1, "max_depth": depth}))
    other = same.choose_move(view, NO_DEADLINE, NO_DEADLINE)
    assert (other.move, other.value, other.nodes) == (choice.move, choice.value, choice.nodes)


def test_bad_limits_are_refused_with_a_clear_message() -> None:
    view = classic_view()
    engine = Engine(builtin_settings("perspecto"))
    with pytest.raises(ValueError, match="node budget"):
        engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, nodes=0)
    with pytest.raises(ValueError, match=r"search depth must be 1\.\.24"):
        engine.choose_move(view, NO_DEADLINE, NO_DEADLINE, depth=25)
    with pytest.raises(ValueError, match="node budget"):
        budget_run(view, params_for("perspecto"), 0)

