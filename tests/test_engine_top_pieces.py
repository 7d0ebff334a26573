"""Issue 45: the top pieces are not for lotteries. Our marshal and general price an attack on an unseen piece
that has not moved, while it may be a bomb, as the attacker lost (``top_piece_rank``: compiled knowledge and
plain reference agree), and the spy guard charges a root move that leaves our known marshal next to a piece
that may be their spy (engine_ext/engine/spy_guard.py)."""

from __future__ import annotations

import pytest

from engine_ext.engine.facade import initial_counts
from engine_ext.engine.reference_search import Reference, best_index
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import SearchParams, builtin_settings, search_params
from engine_ext.engine.spy_guard import exposed_moves, spy_guard_charges, their_spy_seen
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import Square
from tests.test_engine_beliefs_search import mini_view
from tests.test_engine_knowledge import build

N_RANKS = 13
# Both sides: flag, 2 bombs, spy, scout, miner, general, marshal.
RED = {"A1": Rank.FLAG, "B1": Rank.BOMB, "C1": Rank.BOMB, "D1": Rank.SPY, "E1": Rank.SCOUT, "F1": Rank.MINER,
       "G3": Rank.GENERAL, "H3": Rank.MARSHAL}


def counts_of(placement: dict[str, Rank]) -> list[int]:
    counts = [0] * N_RANKS
    for rank in placement.values():
        counts[int(rank)] += 1
    return counts


def params(top_piece_rank: int, **changes: object) -> SearchParams:
    settings = builtin_settings("perspecto").model_copy(
        update={"random_amplitude": 0.0, "flag_area": -1, "top_piece_rank": top_piece_rank, **changes})
    return search_params(settings, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)


def code(pos: Position, frm: str, to: str) -> int:
    a, b = Square.parse(frm), Square.parse(to)
    return pos.square(a.col, a.row) | pos.square(b.col, b.row) << 8


BLUE = {"A8": Rank.UNKNOWN, "B8": Rank.UNKNOWN, "C8": Rank.UNKNOWN, "D8": Rank.UNKNOWN, "E8": Rank.UNKNOWN,
        "F8": Rank.UNKNOWN, "G4": Rank.UNKNOWN, "H4": Rank.UNKNOWN}


@pytest.mark.parametrize("beliefs", [True, False])
def test_our_top_pieces_count_an_attack_on_an_unmoved_unseen_piece_as_lost(beliefs: bool) -> None:
    pos, ids = build(RED, BLUE)
    counts = counts_of(RED)
    on = SearchRunner(pos, 0, counts, params(9, beliefs=beliefs), moved=[ids["H4"]])
    off = SearchRunner(pos, 0, counts, params(0, beliefs=beliefs), moved=[ids["H4"]])
    general_on_unmoved = code(pos, "G3", "G4")
    marshal_on_moved = code(pos, "H3", "H4")
    mine_on, theirs_on = on.root_outcomes(general_on_unmoved)
    mine_off, theirs_off = off.root_outcomes(general_on_unmoved)
    assert mine_on == (0.0, 1.0, 0.0, 0.0)
    assert mine_off[0] > 0.5  # the general beats most of what an unmoved piece may be
    # The opponent's view is its own: it knows its piece.
    assert theirs_on == theirs_off
    # A piece that has moved is no bomb: the top piece takes it as before.
    assert on.root_outcomes(marshal_on_moved) == off.root_outcomes(marshal_on_moved)


def test_the_rule_ends_once_their_bombs_are_all_seen() -> None:
    blue = dict(BLUE, B8=Rank.BOMB, C8=Rank.BOMB)  # both their bombs known
    pos, _ids = build(RED, blue)
    counts = counts_of(RED)
    on = SearchRunner(pos, 0, counts, params(9, beliefs=False))
    off = SearchRunner(pos, 0, counts, params(0, beliefs=False))
    move = code(pos, "G3", "G4")
    assert on.root_outcomes(move) == off.root_outcomes(move)
    assert on.root_outcomes(move)[0][0] > 0.0


def test_lower_pieces_and_the_rank_bound() -> None:
    pos, _ids = build(dict(RED, G3=Rank.MINER), BLUE)
    counts = counts_of(RED)
    move = code(pos, "G3", "G4")  # a miner on the unmoved piece: a bomb is its gain
    on = SearchRunner(pos, 0, counts, params(9))
    assert on.root_outcomes(move)[0][0] > 0.0
    # Only the marshal counts at rank 10: the general attacks as before.
    pos, _ids = build(RED, BLUE)
    marshal_only = SearchRunner(pos, 0, counts, params(10))
    general = code(pos, "G3", "G4")
    marshal = code(pos, "H3", "H4")
    assert marshal_only.root_outcomes(general)[0][0] > 0.0
    assert marshal_only.root_outcomes(marshal)[0] == (0.0, 1.0, 0.0, 0.0)


@pytest.mark.parametrize("seed", [3, 5, 8])
def test_compiled_search_matches_reference_with_the_rule(seed: int) -> None:
    view = mini_view(seed, 8)
    moves, me = view.legal_codes(), int(view.side_to_move)
    for rank in (9, 7):  # 7: majors and up, so the rule is in more lines of these small boards
        p = params(rank)
        compiled = SearchRunner(view.position, me, initial_counts(view), p)
        values = compiled.search_depth(moves, 4)
        reference = Reference(view.position, me, initial_counts(view), p)
        expected = reference.search(moves, 4)
        assert values == pytest.approx(expected, abs=1e-9)
        assert compiled.nodes == reference.nodes
        assert best_index(values) == best_index(expected)


def test_the_rule_changes_the_search_where_a_top_piece_faces_an_unmoved_piece() -> None:
    pos, _ids = build(RED, BLUE)
    moves = [code(pos, "G3", "G4"), code(pos, "G3", "F3"), code(pos, "H3", "H2")]
    counts = counts_of(RED)
    on = SearchRunner(pos, 0, counts, params(9)).search_depth(moves, 3)
    off = SearchRunner(pos, 0, counts, params(0)).search_depth(moves, 3)
    assert on[0] < off[0]
    assert on[0] < max(on[1:])


# --- the spy guard --------------------------------------------------------------------------------------


def guard_position() -> tuple[Position, dict[str, int]]:
    red = {"A1": Rank.FLAG, "D4": Rank.MARSHAL, "H1": Rank.SCOUT}
    blue = {"D6": Rank.UNKNOWN, "F4": Rank.UNKNOWN, "H8": Rank.UNKNOWN, "A8": Rank.SPY}
    return build(red, blue)


def test_a_marshal_move_next_to_a_possible_spy_is_charged() -> None:
    red = {"A1": Rank.FLAG, "D4": Rank.MARSHAL, "H1": Rank.SCOUT}
    blue = {"D6": Rank.UNKNOWN, "F4": Rank.UNKNOWN, "H8": Rank.UNKNOWN}
    pos, ids = build(red, blue)
    moves = [code(pos, "D4", "D5"), code(pos, "D4", "E4"), code(pos, "D4", "C4"), code(pos, "H1", "H2")]
    exposed = exposed_moves(pos, 0, moves, lambda pid: True, lambda pid: True)
    # D5 is next to D6, E4 next to F4; C4 is clear, and the scout's move leaves the marshal on D4 (clear).
    assert exposed == [True, True, False, False]
    assert spy_guard_charges(pos, 0, moves, lambda pid: True, lambda pid: True, 95.0) == [-95.0, -95.0, 0.0, 0.0]
    # Not known to the opponent, or no piece that may be the spy: nothing charged.
    assert exposed_moves(pos, 0, moves, lambda pid: False, lambda pid: True) == [False] * 4
    assert exposed_moves(pos, 0, moves, lambda pid: True, lambda pid: pid != ids["D6"]) == [False, True, False, False]


def test_a_marshal_beside_a_suspect_steps_away_and_may_take_it() -> None:
    red = {"A1": Rank.FLAG, "D4": Rank.MARSHAL, "H1": Rank.SCOUT}
    blue = {"D5": Rank.UNKNOWN, "H8": Rank.UNKNOWN}
    pos, _ids = build(red, blue)
    moves = [code(pos, "H1", "H2"), code(pos, "D4", "D3"), code(pos, "D4", "D5")]
    # Standing still beside it is charged; stepping away is not; taking it shows its rank (not charged).
    assert exposed_moves(pos, 0, moves, lambda pid: True, lambda pid: True) == [True, False, False]


def test_a_trade_with_their_known_marshal_is_never_charged() -> None:
    """Our marshal's attack on their known marshal leaves neither on the board: no exposure, whatever stands
    beside their marshal (an early form charged it, and our marshal stopped trading with theirs)."""
    red = {"A1": Rank.FLAG, "D4": Rank.MARSHAL, "H1": Rank.SCOUT}
    blue = {"D5": Rank.MARSHAL, "D6": Rank.UNKNOWN, "E5": Rank.UNKNOWN, "C8": Rank.UNKNOWN}
    pos, _ids = build(red, blue)
    moves = [code(pos, "D4", "D5"), code(pos, "D4", "E4")]
    assert exposed_moves(pos, 0, moves, lambda pid: True, lambda pid: True) == [False, True]


def test_no_guard_once_their_spy_is_seen() -> None:
    pos, _ids = guard_position()
    assert their_spy_seen(pos, 0)
    moves = [code(pos, "D4", "D5")]
    assert exposed_moves(pos, 0, moves, lambda pid: True, lambda pid: True) == [False]


def test_the_runner_tells_what_the_guard_needs() -> None:
    pos, ids = guard_position()
    runner = SearchRunner(pos, 0, counts_of({"A1": Rank.FLAG, "D4": Rank.MARSHAL, "H1": Rank.SCOUT, "B1": Rank.SPY}),
                          params(9), public=[ids["D4"]])
    assert runner.is_public(ids["D4"])
    assert not runner.is_public(ids["H1"])
    assert runner.is_public(ids["A8"])  # their spy, seen by us
    assert runner.piece_value(0, int(Rank.MARSHAL)) > runner.piece_value(0, int(Rank.SCOUT))
    with pytest.raises(ValueError, match="no piece id"):
        runner.is_public(500)
