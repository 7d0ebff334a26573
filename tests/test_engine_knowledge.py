"""The knowledge unit against the thesis's formulas (7.3, 7.5, 9.3), on small constructed positions.

Numbers are worked out by hand in the comments; ranks are the project's codes (American: spy 1 ..
marshal 10, flag 0, bomb 11, unknown 12).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from engine_ext.engine.knowledge import KnowledgeView, history_facts
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.core import Position
from engine_ext.rules.game import RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import MINI, Square

OWN, OPP = 0, 1
F, B, SPY, SC, MI, SG, CA, GE, MA, U = (
    Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.CAPTAIN, Rank.GENERAL,
    Rank.MARSHAL, Rank.UNKNOWN,
)


def counts(**by_name: int) -> list[int]:
    out = [0] * 13
    for name, n in by_name.items():
        out[int(Rank[name.upper()])] = n
    return out


def build(
    red: dict[str, Rank], blue: dict[str, Rank], side: int = 0, size: int = 8
) -> tuple[Position, dict[str, int]]:
    """A Position on an empty size x size board; returns it and the piece id of each square named."""
    ids: dict[str, int] = {}
    pieces: list[tuple[int, int, int, int]] = []
    for owner, placement in ((0, red), (1, blue)):
        for name, rank in placement.items():
            sq = Square.parse(name)
            ids[name] = len(pieces)
            pieces.append((sq.col, sq.row, owner, int(rank)))
    return Position(size, size, [], pieces, side), ids


def approx(x: float | Fraction) -> object:
    return pytest.approx(float(x), abs=1e-12)


# --- the five cases ---------------------------------------------------------------------------------

# Each side starts with F1 B2 S1 Sc2 Mi2 Sg1 Ca1 Ge1 Ma1 (the MINI counts: 12 pieces, 9 movable).
MINI_COUNTS = counts(flag=1, bomb=2, spy=1, scout=2, miner=2, sergeant=1, captain=1, general=1, marshal=1)


def mini(**options: bool) -> tuple[KnowledgeView, dict[str, int]]:
    # Blue's captain is known (revealed); blue's other 11 pieces unknown, three of them moved.
    red = {"A1": F, "B1": B, "C1": B, "D1": SPY, "E1": SC, "F1": SC, "A2": MI, "B2": MI, "C2": SG,
           "D2": CA, "E2": GE, "F2": MA}
    blue = {"A8": U, "B8": U, "C8": U, "D8": U, "E8": U, "F8": U, "A7": U, "B7": U, "C7": U, "D7": U,
            "E7": U, "F7": CA}
    pos, ids = build(red, blue)
    moved = [ids["A7"], ids["B7"], ids["C7"], ids["D2"]]
    # The opponent has seen our captain on D2 (which has moved), nothing else of ours.
    view = KnowledgeView(pos, 0, MINI_COUNTS, public=[ids["D2"]], approached=[], moved=moved, **options)
    return view, ids


@pytest.fixture
def mini_view() -> tuple[KnowledgeView, dict[str, int]]:
    return mini()


def test_pools_both_perspectives(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, _ids = mini_view
    # Theirs as we see them: everything but the known captain.
    assert view.pool(1) == counts(flag=1, bomb=2, spy=1, scout=2, miner=2, sergeant=1, general=1, marshal=1)
    assert (view.n_unknown(1), view.n_movable(1), view.n_moved(1)) == (11, 8, 3)
    # Ours as they see us: everything but the captain they have seen (which has moved, so m = 0).
    assert view.pool(0) == counts(flag=1, bomb=2, spy=1, scout=2, miner=2, sergeant=1, general=1, marshal=1)
    assert (view.n_unknown(0), view.n_movable(0), view.n_moved(0)) == (11, 8, 0)


def test_case_1_unknown_attacker_known_defender(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, _ = mini_view
    # Their unknown piece attacks our known captain: general and marshal win, no captain left in the
    # pool to tie: |V(A,6)| = 2 of |O(A,r>1)| = 8.
    assert view.case1(1, int(CA)) == approx(Fraction(2, 8))
    # Against our marshal: the spy wins and the marshal ties (half): 1.5 / 8.
    assert view.case1(1, int(MA)) == approx(Fraction(3, 16))


def test_case_2_known_attacker_moved_defender(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, _ = mini_view
    # Our sergeant on a moved unknown: beats spy, 2 scouts, 2 miners, ties the sergeant: 5.5 / 8.
    assert view.case2(1, int(SG)) == approx(Fraction(11, 16))


def test_case_3_known_attacker_unmoved_defender(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, _ = mini_view
    # s = 5.5 * (8 - 3) / 8; plus the flag; over the 11 - 3 unmoved unknown pieces.
    assert view.case3(1, int(SG)) == approx((Fraction(11, 2) * Fraction(5, 8) + 1) / 8)
    # A miner adds the bombs: V = spy + 2 scouts + half of 2 miners = 4; s = 4 * 5/8; + flag + 2 bombs.
    assert view.case3(1, int(MI)) == approx((4 * Fraction(5, 8) + 3) / 8)


def test_cases_4_and_5_unknown_against_unknown() -> None:
    # Each side: flag, bomb, spy, scout, marshal; nothing known; one moved piece a side.
    five = counts(flag=1, bomb=1, spy=1, scout=1, marshal=1)
    red = {"A1": F, "B1": B, "C1": SPY, "D1": SC, "E1": MA}
    blue = {"A8": U, "B8": U, "C8": U, "D8": U, "E8": U}
    pos, ids = build(red, blue)
    view = KnowledgeView(pos, 0, five, public=[], approached=[], moved=[ids["D1"], ids["D8"]])
    # Known rank k against a moved unknown red defender (pool spy, scout, marshal):
    # spy 1.5/3 (ties the spy, kills the marshal), scout 1.5/3, marshal 2.5/3.
    assert view.case2(0, int(SPY)) == approx(Fraction(1, 2))
    assert view.case2(0, int(MA)) == approx(Fraction(5, 6))
    # Case 4: blue's unknown attacker, summed over its pool (1/3 each).
    assert view.case4(1) == approx(Fraction(1, 3) * (Fraction(1, 2) + Fraction(1, 2) + Fraction(5, 6)))
    # Case 5: against an unmoved red piece: s = V * 2/3, plus the flag, over 4 unmoved pieces:
    # spy (1 + 1)/4, scout (1 + 1)/4, marshal (5/3 + 1)/4.
    case5 = Fraction(1, 3) * (Fraction(1, 2) + Fraction(1, 2) + Fraction(2, 3))
    assert view.case5(1) == approx(case5)
    # Red's unknown-to-them attacker on blue: the same numbers by symmetry.
    assert view.case4(0) == approx(view.case4(1))
    assert view.case5(0) == approx(case5)


def test_attack_outcomes_per_perspective(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, ids = mini_view
    sergeant, moved_unknown, unmoved_unknown = ids["C2"], ids["C7"], ids["E8"]
    # Our view: our sergeant is known to us; theirs unknown. Their view: our sergeant unknown too.
    win, lose, both, passive = view.attack_outcomes(OWN, sergeant, moved_unknown)
    assert (win, lose, both, passive) == (approx(Fraction(11, 16)), approx(Fraction(5, 16)), 0.0, 0.0)
    assert view.attack_outcomes(OPP, sergeant, moved_unknown)[0] == approx(view.case4(0))
    assert view.attack_outcomes(OPP, sergeant, unmoved_unknown)[0] == approx(view.case5(0))
    # Known against known is certain; equal ranks kill both.
    captain, their_captain = ids["D2"], ids["F7"]
    assert view.attack_outcomes(OWN, captain, their_captain) == (0.0, 0.0, 1.0, 0.0)
    assert view.attack_outcomes(OPP, captain, their_captain) == (0.0, 0.0, 1.0, 0.0)


def test_failed_unknown_attack_on_a_known_piece_is_passive(mini_view: tuple[KnowledgeView, dict[str, int]]) -> None:
    view, ids = mini_view
    # Their unknown piece attacks our captain, which they have seen: a failure would never have been
    # played, so it counts as the passive move (8.3).
    p = float(Fraction(2, 8))
    assert view.attack_outcomes(OWN, ids["C7"], ids["D2"]) == approx_tuple((p, 0.0, 0.0, 1 - p))
    # ... against our sergeant, which they have not seen, a failure is a real loss.
    p_sg = view.case1(1, int(SG))
    assert view.attack_outcomes(OWN, ids["C7"], ids["C2"]) == approx_tuple((p_sg, 1 - p_sg, 0.0, 0.0))
    # Switched off (the baselines of section 8): a plain loss.
    assert view.attack_outcomes(OWN, ids["C7"], ids["D2"], False) == approx_tuple((p, 1 - p, 0.0, 0.0))


def approx_tuple(values: tuple[float, ...]) -> object:
    return pytest.approx(values, abs=1e-12)


# --- the psychological model inside the probabilities (9.3) ----------------------------------------


def psych_view(
    approached: list[tuple[str, str]], fears: tuple[float, float, float]
) -> tuple[KnowledgeView, dict[str, int]]:
    red = {"A1": F, "D4": CA, "F1": GE, "B2": SG}
    blue = {"A8": U, "D5": U, "F5": CA, "F4": U}
    pos, ids = build(red, blue)
    pairs = [(ids[a], ids[b]) for a, b in approached]
    view = KnowledgeView(pos, 0, MINI_COUNTS, public=[ids["D4"]], approached=pairs,
                         moved=[ids["D5"], ids["B2"], ids["F4"]], fears=fears, psychology=True)
    return view, ids


def test_own_fear_lowers_our_known_piece_against_an_approaching_unknown() -> None:
    own_fear, est_opp_fear, est_own_fear = 0.3, 0.5, 0.4
    plain, ids = psych_view([], (own_fear, est_opp_fear, est_own_fear))
    scared, _ = psych_view([("D5", "D4")], (own_fear, est_opp_fear, est_own_fear))
    captain, unknown = ids["D4"], ids["D5"]
    p = plain.attack_outcomes(OWN, captain, unknown)[0]
    assert p == approx(plain.case2(1, int(CA)))
    # Our captain attacks: Py = P - P * ownFear in our view, estOwnFear in theirs.
    assert scared.attack_outcomes(OWN, captain, unknown)[0] == approx(p - p * own_fear)
    p_opp = plain.attack_outcomes(OPP, captain, unknown)[0]
    assert scared.attack_outcomes(OPP, captain, unknown)[0] == approx(p_opp - p_opp * est_own_fear)
    # Their unknown attacks our captain: our captain's chance 1 - P1 becomes (1 - P1)(1 - ownFear).
    p1 = plain.case1(1, int(CA))
    keep = (1 - p1) - (1 - p1) * own_fear
    assert scared.attack_outcomes(OWN, unknown, captain) == approx_tuple((1 - keep, 0.0, 0.0, keep))


def test_est_opp_fear_lowers_their_known_piece_in_their_view_only() -> None:
    own_fear, est_opp_fear, est_own_fear = 0.3, 0.5, 0.4
    plain, ids = psych_view([], (own_fear, est_opp_fear, est_own_fear))
    scared, _ = psych_view([("B2", "F5")], (own_fear, est_opp_fear, est_own_fear))
    their_captain, our_sergeant = ids["F5"], ids["B2"]
    # Their known captain attacks our sergeant, unseen by them, that has come towards it.
    p_opp = plain.attack_outcomes(OPP, their_captain, our_sergeant)[0]
    assert scared.attack_outcomes(OPP, their_captain, our_sergeant)[0] == approx(p_opp - p_opp * est_opp_fear)
    # We know our sergeant: our own view stays certain.
    assert scared.attack_outcomes(OWN, their_captain, our_sergeant) == (1.0, 0.0, 0.0, 0.0)


def test_no_fear_without_approach_or_without_being_known() -> None:
    view, ids = psych_view([("F4", "B2")], (0.9, 0.9, 0.9))
    # Our sergeant is not known to them: their approach to it cannot be a trap.
    p = view.case1(1, int(SG))
    assert view.attack_outcomes(OWN, ids["F4"], ids["B2"])[0] == approx(p)


# --- flag and bomb probabilities (7.5) ---------------------------------------------------------------


def test_flag_suspicions_and_probabilities() -> None:
    # Blue's back row is row 8. A8, B8 unmoved unknown on it; B8 also next to blue's known bomb C8;
    # C7 is off the back row but next to the bomb; D7 is neither; E8 has moved.
    red = {"A1": F, "B1": MI}
    blue = {"A8": U, "B8": U, "C8": B, "D7": U, "C7": U, "E8": U}
    pos, ids = build(red, blue)
    view = KnowledgeView(pos, 0, MINI_COUNTS, public=[], approached=[], moved=[ids["E8"]])
    susp = view.suspicion()
    assert [susp[ids[s]] for s in ("A8", "B8", "D7", "C7", "E8")] == [1.0, 2.0, 0.0, 1.0, 0.0]
    p_flag = view.p_flag()
    assert p_flag[ids["B8"]] == approx(Fraction(2, 4))
    assert p_flag[ids["A8"]] == approx(Fraction(1, 4))
    assert p_flag[ids["E8"]] == 0.0  # it has moved
    assert p_flag[ids["C8"]] == 0.0  # a known bomb
    # Bombs: one of blue's two is known (C8); the other is among the pool's 11 - 1 unmoved unknown
    # pieces (as in case 3 of 7.3).
    p_bomb = view.p_bomb()
    assert p_bomb[ids["A8"]] == approx(Fraction(1, 10))
    assert p_bomb[ids["C8"]] == 1.0
    assert p_bomb[ids["E8"]] == 0.0


# --- history facts ------------------------------------------------------------------------------------


def _mini_game() -> RefereedGame:
    red = {Square.parse(s): r for s, r in {"A1": F, "C2": SG, "D2": MI, "F2": SC}.items()}
    blue = {Square.parse(s): r for s, r in {"F6": F, "D4": CA, "A5": MA, "E6": B}.items()}
    return RefereedGame(RulesOptions(ruleset=MINI, two_squares=None, more_squares=False), red, blue,
                        validate_setups=False)


def test_history_facts_shown_pieces_and_approaches() -> None:
    game = _mini_game()
    for text in ("D2-D3", "D4xD3", "C2-C3", "A5-A4", "F2-F5"):
        game.play(Move.parse(text))
    view = game.view(Side.RED)
    pos = view.position
    shown, pairs = history_facts(pos)
    ids = {str(sq): pos.piece_id(pos.square(sq.col, sq.row)) for sq in (Square.parse(s) for s in ("D3", "C3", "F5"))}
    captain = ids["D3"]
    # The attack showed both pieces (the miner is gone but was shown); the scout's run showed it.
    assert captain in shown and ids["F5"] in shown
    assert ids["C3"] not in shown
    # The sergeant moved towards the captain after the captain was shown: a pair for 9.3.
    assert (ids["C3"], captain) in pairs
    # The miner moved towards the captain before the captain was known: no pair.
    assert not any(target == captain and mover != ids["C3"] for mover, target in pairs)
