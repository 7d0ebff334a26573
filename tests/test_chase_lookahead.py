"""The seed's fast look-ahead of the two-squares chase (engine_ext/chase/lookahead.pyx) against the
exact oracle (engine_ext/chase/oracle.py).

- the seed's examples (the positions of tests/test_chase_oracle.py): the same verdicts and the same
  numbers of attacker moves as the oracle;
- random local positions: the properties the look-ahead guarantees (hypothesis), and a seeded sweep
  whose agreement rate must stay at the measured level (docs/two-squares.md lists the disagreements);
- every chase on the 6 x 6 ``mini`` board, empty and with seeded obstacles (slow);
- the scan of a whole position: candidate pairs, both sides, histories from the moves played, the two
  lists for risk management.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.chase import (
    FRESH,
    ChaseBoard,
    ChaseInputError,
    ChaseRules,
    ChaseSolution,
    ChaseState,
    PieceHistory,
    Role,
    Verdict,
    decide,
    solve,
)
from engine_ext.chase.lookahead import LookAhead, look_ahead, scan
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, MINI, Square
from tests.test_chase_oracle import (
    E_5_1_1,
    E_5_2_3,
    E_5_2_4,
    E_5_2_5,
    ELEMENTARY,
    _game,
    _play,
    chase,
    diagram,
    random_chase,
    strip,
)

S = Square.parse


def as_verdict(answer: LookAhead) -> Verdict:
    return Verdict(answer.captured, answer.attacker_moves)


def assert_same(text: str, to_move: Role, limit: int, attacker_history: PieceHistory = FRESH,
                defender_history: PieceHistory = FRESH, count_off_by: int = 0) -> Verdict:
    """The look-ahead's verdict is the oracle's; so is its count, but for ``count_off_by`` (a known
    difference, listed in docs/two-squares.md)."""
    board, state = chase(text, to_move, attacker_history, defender_history)
    rules = ChaseRules(limit=limit)
    expected = decide(board, state, rules)
    answer = look_ahead(board, state, rules)
    assert answer.captured == expected.captured, text
    if expected.captured:
        assert answer.attacker_moves == expected.attacker_moves - count_off_by, text
    return expected


# The seed's examples ------------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [3, 5])
@pytest.mark.parametrize("distance", [0, 1, 2])
@pytest.mark.parametrize("to_move", list(Role))
def test_seed_4_1_1_one_line_closed_area(limit: int, distance: int, to_move: Role) -> None:
    """Capture, in (distance + 1)(N + 1) attacker moves with the defender to move (seed 4.1.1)."""
    verdict = assert_same(ELEMENTARY[distance], to_move, limit)
    if to_move is Role.DEFENDER:
        assert verdict == Verdict(True, (distance + 1) * (limit + 1))


def test_seed_4_1_1_one_row_closed_area() -> None:
    text = diagram("# # # # # A . . . D", "# # # # # . . . . .", *["# # # # # # # # # #"] * 2,
                   "# # ~ ~ # # ~ ~ # #", "# # ~ ~ # # ~ ~ # #", *["# # # # # # # # # #"] * 4)
    for to_move in Role:
        assert assert_same(text, to_move, 3).captured


@pytest.mark.parametrize("limit", [3, 5])
@pytest.mark.parametrize("to_move", list(Role))
def test_seed_4_1_2_neighbouring_lines_escape(limit: int, to_move: Role) -> None:
    assert assert_same(strip("D .", ". .", ". .", ". A"), to_move, limit) == Verdict(False)


@pytest.mark.parametrize("limit", [3, 5])
@pytest.mark.parametrize("to_move", list(Role))
def test_seed_5_1_1_closed_borders_and_the_border_pieces(limit: int, to_move: Role) -> None:
    """Seed 5.1.1: capture; the border pieces H7, I8, J8 are what risk management weighs."""
    assert assert_same(E_5_1_1, to_move, limit).captured
    board, state = chase(E_5_1_1, to_move)
    assert {"H7", "I8", "J8"} <= {str(sq) for sq in look_ahead(board, state, ChaseRules(limit=limit)).border}


@pytest.mark.parametrize("limit", [3, 5])
def test_seed_5_2_3_two_neighbouring_empty_border_squares(limit: int) -> None:
    assert assert_same(E_5_2_3, Role.DEFENDER, limit) == Verdict(False)
    assert assert_same(E_5_2_3, Role.ATTACKER, limit).captured
    lower = E_5_2_3.replace(" 6|# # ~ ~ # # ~ ~ A .", " 6|# # ~ ~ # # ~ ~ . .").replace(
        " 5|# # ~ ~ # # ~ ~ # #", " 5|# # ~ ~ # # ~ ~ A .")
    for to_move in Role:
        assert assert_same(lower, to_move, limit) == Verdict(False)


@pytest.mark.parametrize("limit", [3, 5])
def test_seed_5_2_4_a_2x2_refuge_and_its_exception(limit: int) -> None:
    """Seed 5.2.4 / A.5: the 2 x 2 area saves the defender, not when the attacker stands next to it;
    A.5.2: with H8 occupied there is no refuge."""
    assert assert_same(E_5_2_4, Role.DEFENDER, limit) == Verdict(False)
    after_line = E_5_2_4.replace(" 9|# # # # # # . . # #", " 9|# # # # # # D . # #").replace(
        " 8|# # # # # # . . D .", " 8|# # # # # # . A . .").replace(" 6|# # ~ ~ # # ~ ~ A .", " 6|# # ~ ~ # # ~ ~ . .")
    assert assert_same(after_line, Role.DEFENDER, limit, PieceHistory(S("I8"), 1), PieceHistory(S("H9"), 1)) \
        == Verdict(False)
    adjacent = E_5_2_4.replace(" 7|# # # # # # # # . .", " 7|# # # # # # # # A .").replace(
        " 6|# # ~ ~ # # ~ ~ A .", " 6|# # ~ ~ # # ~ ~ . .")
    assert assert_same(adjacent, Role.DEFENDER, limit).captured
    closed = E_5_2_4.replace(" 8|# # # # # # . . D .", " 8|# # # # # # . # D .")
    assert assert_same(closed, Role.DEFENDER, limit).captured


@pytest.mark.parametrize("limit", [3, 5])
def test_seed_5_2_5_a_3x2_refuge_next_to_the_attacker(limit: int) -> None:
    assert assert_same(E_5_2_5, Role.DEFENDER, limit) == Verdict(False)
    base = E_5_2_5.replace(" 8|# # # # # . . . D .", " 8|# # # # # {} A .").replace(
        " 7|# # # # # # # # A .", " 7|# # # # # # # # . .")
    wrong = base.format(". D .")
    right = base.format(". . .").replace(" 9|# # # # # . . . # #", " 9|# # # # # . . D # #")
    histories = (PieceHistory(S("I7"), 1), PieceHistory(S("H8"), 1))
    assert assert_same(wrong, Role.ATTACKER, limit, *histories).captured
    assert assert_same(right, Role.ATTACKER, limit, *histories) == Verdict(False)


@pytest.mark.parametrize("limit", [3, 5])
@pytest.mark.parametrize("to_move", list(Role))
def test_seed_5_2_1_5_2_2_5_2_6_built_to_the_prose(limit: int, to_move: Role) -> None:
    base = strip("D .", ". .", ". .", "A .")
    one = base.replace(" 9|# # # # # # # # . .", " 9|# # # # # # # . . .")
    two = base.replace("10|# # # # # # # # D .", "10|# # # # # # # . D .").replace(
        " 8|# # # # # # # # . .", " 8|# # # # # # # . . .")
    circuit = diagram("# # # # # # # # . .", "# # # # . . . . D .", "# # # # . # . # . .", "# # # # . . . # . .",
                      "# # ~ ~ # # ~ ~ A .", "# # ~ ~ # # ~ ~ # #", *["# # # # # # # # # #"] * 4)
    # With the attacker to move, the defender of 5.2.2 gains one move by stepping into a dead end.
    assert assert_same(one, to_move, limit).captured
    assert assert_same(two, to_move, limit, count_off_by=int(to_move is Role.ATTACKER)).captured
    assert assert_same(circuit, to_move, limit) == Verdict(False)


@pytest.mark.parametrize("limit", [3, 5])
def test_seed_6_the_count_of_sideways_moves(limit: int) -> None:
    """Seed 6.1 and 6.2 over every pair of counts: the same verdicts and counts as the oracle."""
    board, state = chase(strip("D .", "A .", ". .", ". ."), Role.DEFENDER)
    rules = ChaseRules(limit=limit)
    solution = solve(board, state, rules)
    assert solution is not None
    for a in range(1, limit + 1):
        for d in range(limit + 1):
            st6 = ChaseState(S("I9"), S("I10"), Role.DEFENDER, PieceHistory(S("J9"), a),
                             PieceHistory(S("J10"), d) if d else FRESH)
            assert as_verdict(look_ahead(board, st6, rules)) == solution.verdict(st6), ("6.1", a, d)
    board, state = chase(strip(". D", "A .", ". .", ". ."), Role.ATTACKER)
    solution = solve(board, state, rules)
    assert solution is not None
    for a in range(limit + 1):
        for d in range(1, limit + 1):
            st6 = ChaseState(S("I9"), S("J10"), Role.ATTACKER,
                             PieceHistory(S("J9"), a) if a else PieceHistory(S("I8"), 1), PieceHistory(S("I10"), d))
            assert as_verdict(look_ahead(board, st6, rules)) == solution.verdict(st6), ("6.2", a, d)


# Random local positions -----------------------------------------------------------------------------

WINDOW = [Square(c, r) for c in range(4, 10) for r in range(6, 10)] + [Square(c, r) for c in (8, 9) for r in (4, 5)]


@st.composite
def local_chases(draw: st.DrawFn) -> tuple[ChaseBoard, ChaseState, ChaseRules]:
    """The oracle tests' local window (columns E..J, rows 7..10 and beside the right lake): any set of
    open squares, attacker and defender on two of them, either side to move, N from 1 to 5."""
    open_flags = draw(st.lists(st.booleans(), min_size=len(WINDOW), max_size=len(WINDOW)))
    open_squares = [sq for sq, flag in zip(WINDOW, open_flags, strict=True) if flag]
    if len(open_squares) < 2:
        open_squares = WINDOW[:2]
    attacker, defender = draw(st.permutations(open_squares))[:2]
    obstacles = frozenset(sq for c in range(10) for r in range(10)
                          if (sq := Square(c, r)) not in open_squares and not CLASSIC.is_lake(sq))
    state = ChaseState(attacker, defender, draw(st.sampled_from(list(Role))))
    return ChaseBoard(CLASSIC, obstacles), state, ChaseRules(limit=draw(st.integers(1, 5)))


@settings(max_examples=300, deadline=None)
@given(local_chases())
def test_look_ahead_properties_on_local_positions(chase_case: tuple[ChaseBoard, ChaseState, ChaseRules]) -> None:
    """What the look-ahead promises whatever the position: an answer (never an error) with a count
    exactly when it is a capture; "separate" exactly when the oracle has nothing to solve; the
    verdicts it derives exactly (take: the attacker next to the defender and to move; pocket: a dead
    end the attacker shuts) equal the oracle's, count included; and it never announces a capture
    the oracle denies (its misses are escapes)."""
    board, state, rules = chase_case
    answer = look_ahead(board, state, rules)
    assert answer.captured == (answer.attacker_moves is not None)
    assert answer.attacker_moves is None or answer.attacker_moves >= 1
    solution = solve(board, state, rules)
    assert (solution is None) == (answer.reason == "separate")
    if solution is None:
        return
    truth = solution.verdict(state)
    if answer.reason in ("take", "pocket"):
        assert as_verdict(answer) == truth
    if answer.captured:
        assert truth.captured


# The measured agreement: every disagreement of this sweep is one of the kinds docs/two-squares.md lists.
SWEEP_POSITIONS = 1000
SWEEP_VERDICTS_AGREE = 969  # measured: 969 of the 1000 verdicts (docs/two-squares.md); must not drop
SWEEP_COUNTS_AGREE = 486    # measured: 486 of the 498 captures both call have the oracle's count


@pytest.mark.slow  # a thousand exact oracle solves: a measurement, in the slow suite
def test_seeded_sweep_agreement_with_the_oracle() -> None:
    verdicts = counts = both_capture = 0
    for seed in range(SWEEP_POSITIONS):
        rng = random.Random(seed)
        board, state = random_chase(rng)
        rules = ChaseRules(limit=rng.choice([2, 3, 5]))
        truth = decide(board, state, rules)
        answer = look_ahead(board, state, rules)
        verdicts += answer.captured == truth.captured
        if answer.captured and truth.captured:
            both_capture += 1
            counts += answer.attacker_moves == truth.attacker_moves
    print(f"look-ahead vs oracle: verdicts {verdicts}/{SWEEP_POSITIONS}, counts {counts}/{both_capture}")
    assert verdicts >= SWEEP_VERDICTS_AGREE
    assert counts >= SWEEP_COUNTS_AGREE


def mini_layout(layout: int) -> ChaseBoard:
    """The empty mini board (layout 0) or one with seeded obstacles on 10 to 45 % of its squares."""
    rng = random.Random(layout)
    density = 0.0 if layout == 0 else rng.uniform(0.1, 0.45)
    squares = [Square(c, r) for c in range(MINI.width) for r in range(MINI.height) if not MINI.is_lake(Square(c, r))]
    return ChaseBoard(MINI, frozenset(sq for sq in squares if rng.random() < density))


def mini_agreement(layouts: range, limits: tuple[int, ...]) -> tuple[int, int, list[str]]:
    """Every chase (attacker square, defender square, side to move; fresh histories) on the mini
    layouts, one oracle solve per component: (agreeing verdicts, chases, the disagreements)."""
    agree = total = 0
    misses: list[str] = []
    for layout in layouts:
        board = mini_layout(layout)
        squares = [Square(c, r) for c in range(MINI.width) for r in range(MINI.height) if board.is_open(Square(c, r))]
        for limit in limits:
            rules = ChaseRules(limit=limit)
            solutions: dict[Square, ChaseSolution] = {}
            for a in squares:
                for d in squares:
                    if a == d:
                        continue
                    for to_move in Role:
                        state = ChaseState(a, d, to_move)
                        solution = solutions.get(a)
                        if solution is None or d not in solution.squares:
                            solution = solve(board, state, rules)
                            if solution is not None:
                                solutions[a] = solution
                        truth = Verdict(False) if solution is None else solution.verdict(state)
                        answer = look_ahead(board, state, rules)
                        total += 1
                        if answer.captured == truth.captured:
                            agree += 1
                        else:
                            misses.append(f"layout {layout} N={limit} {a}->{d} {to_move}: {truth} / {answer}")
    return agree, total, misses


MINI_AGREE = 16128  # measured: 16128 of the 16408 chases, layouts 0..5, N = 3 and 5 (docs/two-squares.md)


@pytest.mark.slow
def test_mini_board_every_chase() -> None:
    agree, total, misses = mini_agreement(range(6), (3, 5))
    print(f"mini: {agree}/{total} verdicts agree; first misses: {misses[:5]}")
    assert total == 16408 and agree >= MINI_AGREE


# The scan of a whole position -----------------------------------------------------------------------

def test_scan_finds_the_pair_with_the_look_aheads_verdict_and_the_histories_played() -> None:
    """The chase of seed 6.1 played in a Game (tests/test_chase_oracle.py builds it: obstacles are red
    bombs, a red colonel chases a blue major): the scan finds the one pair, takes the two-squares
    histories from the moves played and gives the oracle's verdict; the bombs are the barrier."""
    board, state = chase(strip("D .", ". .", "A .", ". ."), Role.ATTACKER)
    rules = ChaseRules(limit=3)
    game = _game(board, state, 3)
    for text in ("I8-I9", "I10-J10", "I9-J9", "J10-I10", "J9-I9"):
        game = _play(game, Move.parse(text))
    after = ChaseState(S("I9"), S("I10"), Role.DEFENDER, PieceHistory(S("J9"), 2), PieceHistory(S("J10"), 2))
    [found] = scan(game.position, limit=3)
    assert (found.attacker, found.defender, found.attacker_side) == (S("I9"), S("I10"), int(Side.RED))
    assert as_verdict(found.verdict) == decide(board, after, rules) == Verdict(True, 2)
    # The border beyond the attacker's row: H10 (the board's edge and I10's other side are walls).
    assert found.protectors == () and found.barrier == (S("H10"),)
    # One attacker move fewer in the series and the defender is still caught; with the defender's
    # series one shorter than the attacker's it escapes (seed 6.1), and the scan sees the difference.
    game = _play(game, Move.parse("I10-J10"))
    [found] = scan(game.position, limit=3)
    assert found.verdict.captured == decide(board, ChaseState(
        S("I9"), S("J10"), Role.ATTACKER, PieceHistory(S("J9"), 2), PieceHistory(S("I10"), 3)), rules).captured


def test_scan_splits_the_border_into_protectors_and_barrier() -> None:
    """Seed 5.1.1 as a position: blue's unknown pieces on H7 and I8 may protect the defender, blue's
    known sergeant on J8 cannot (it does not beat the colonel)."""
    board, state = chase(E_5_1_1, Role.DEFENDER)
    pieces: list[tuple[int, int, int, int]] = []
    blue = {S("H7"): 12, S("I8"): 12, S("J8"): int(Rank.SERGEANT), state.defender: int(Rank.MAJOR)}
    for sq in sorted(board.obstacles - set(blue), key=lambda s: (s.row, s.col)):
        pieces.append((sq.col, sq.row, 0, int(Rank.BOMB)))
    pieces.append((state.attacker.col, state.attacker.row, 0, int(Rank.COLONEL)))
    pieces += [(sq.col, sq.row, 1, rank) for sq, rank in blue.items()]
    position = Position(10, 10, [(s.col, s.row) for s in CLASSIC.lakes], pieces, side=1)
    found = [c for c in scan(position, limit=5) if c.defender == state.defender]
    assert len(found) == 1 and found[0].attacker == state.attacker
    assert as_verdict(found[0].verdict) == decide(board, state, ChaseRules(limit=5))
    assert set(found[0].protectors) == {S("H7"), S("I8")}
    # The rest of the border is the lake and the board's edge: no piece of red's bars the way.
    assert found[0].barrier == ()


def test_scan_of_a_random_game_covers_both_sides_and_agrees_with_look_ahead() -> None:
    """A random classic game: every pair the scan reports is a known stronger piece near a known
    weaker one (no scouts, bombs or flags), and its verdict is look_ahead's on the same chase."""
    rng = random.Random(3)
    game = Game(RulesOptions(two_squares=None, more_squares=False, move_limit=8000),
                CLASSIC.random_placement(Side.RED, rng), CLASSIC.random_placement(Side.BLUE, rng))
    sides = set()
    for _ in range(400):
        if game.result is not None:
            break
        game.play(rng.choice(game.legal_moves()))
        for found in scan(game.position, limit=5):
            sides.add(found.attacker_side)
            pieces = game.pieces()
            a_side, a_rank = pieces[found.attacker]
            d_side, d_rank = pieces[found.defender]
            assert a_side != d_side and int(a_side) == found.attacker_side
            assert a_rank > d_rank and Rank.SCOUT not in (a_rank, d_rank) and d_rank.movable
            assert abs(found.attacker.col - found.defender.col) + abs(found.attacker.row - found.defender.row) <= 3
    assert sides == {0, 1}


def test_bad_input_gets_the_oracles_clear_error() -> None:
    board, state = chase(ELEMENTARY[0], Role.DEFENDER)
    with pytest.raises(ChaseInputError, match="obstacle"):
        look_ahead(board, ChaseState(S("A1"), state.defender, Role.ATTACKER))
    with pytest.raises(ChaseInputError, match="count"):
        look_ahead(board, ChaseState(state.attacker, state.defender, Role.ATTACKER, PieceHistory(S("J9"), 4)),
                   ChaseRules(limit=3))


def test_scan_also_takes_the_listed_pairs_at_any_distance() -> None:
    # The engine follows a chase pair found at the root after its move, however far the defender went.
    pieces = [(0, 0, 0, int(Rank.GENERAL)), (0, 5, 1, int(Rank.CAPTAIN))]
    position = Position(2, 8, [], pieces, side=0)
    assert scan(position, 5, 3) == []
    (found,) = scan(position, 5, 3, also=[(0, 1)])
    assert (found.attacker, found.defender, found.attacker_side) == (Square(0, 0), Square(0, 5), 0)
    assert found.verdict.captured   # a one-line corridor: the captain runs into the end
    assert scan(position, 5, 3, also=[(1, 0)]) == []    # the pair's attacker comes first
    with pytest.raises(ValueError, match="piece ids"):
        scan(position, 5, 3, also=[(0, 200)])
