"""The strategic search (thesis 9.2, Appendix 1): each rule on a small board, the force formula,
the moved-piece factors, scouts' long strikes, the two-move lookahead, and the compiled version
against the plain reference on random positions."""

from __future__ import annotations

import math
import random
from dataclasses import astuple

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.chase.lookahead import LookAhead, scan
from engine_ext.engine import reference_strategic as ref
from engine_ext.engine.facade import initial_counts
from engine_ext.engine.scales import get_scale
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import StrategicParams, builtin_settings, search_params
from engine_ext.engine.strategic import flag_defence_py, flag_suspicions_py, strategic_scores_py
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, MINI, Square
from tests.helpers import play_random, random_game

RED, BLUE = 0, 1
UP, DOWN, LEFT, RIGHT = (0, 1), (0, -1), (-1, 0), (1, 0)
Piece = tuple[int, int, int, int]  # col, row, owner, rank


def board(pieces: list[Piece], *, width: int = 10, height: int = 10, side: int = RED,
          lakes: tuple[tuple[int, int], ...] = ()) -> Position:
    """A position on an open board; red's pieces are put first as the core wants."""
    ordered = [p for p in pieces if p[2] == RED] + [p for p in pieces if p[2] == BLUE]
    return Position(width, height, list(lakes), ordered, side=side)


def move(pos: Position, frm: tuple[int, int], step: tuple[int, int], dist: int = 1) -> int:
    to = (frm[0] + step[0] * dist, frm[1] + step[1] * dist)
    return pos.square(*frm) | (pos.square(*to) << 8)


def probs(pos: Position, **by_square: tuple[float, float]) -> tuple[list[float], list[float]]:
    """p_flag and p_bomb by piece id, all 0 except for the squares named like ``c4_7=(pf, pb)``."""
    pf = [0.0] * pos.piece_count
    pb = [0.0] * pos.piece_count
    for key, (f, b) in by_square.items():
        col, row = (int(x) for x in key[1:].split("_"))
        pid = pos.piece_id(pos.square(col, row))
        pf[pid], pb[pid] = f, b
    return pf, pb


def own_score(pos: Position, frm: tuple[int, int], step: tuple[int, int],
              pf: list[float] | None = None, pb: list[float] | None = None, dist: int = 1,
              hunt: float = 0.0, miner_pull: float = 1.0, guard: float = 0.0, home: float = 0.0) -> float:
    """One move's own score (no lookahead), checked against the reference on the way."""
    if pf is None or pb is None:
        pf, pb = probs(pos)
    m = [move(pos, frm, step, dist)]
    params = StrategicParams(hunt_force=hunt, miner_pull=miner_pull, miner_guard=guard, home_guard=home)
    got = strategic_scores_py(pos, pos.side, pf, pb, m, lookahead=False, params=params)[0]
    slow = ref.strategic_scores(pos, pos.side, pf, pb, m, lookahead=False, params=params)[0]
    assert got == pytest.approx(slow, abs=1e-9)
    return got


# --- the 21 rules, one at a time -------------------------------------------------------------------
# Own piece at (4, 1), one opponent piece at (4, 7): L = 6 and, with one opponent piece, t = 1, so
# a step up scores force / 6, a step down -force / 6, and a step sideways nothing.

UNKNOWN = Rank.UNKNOWN
RULE_CASES = [
    # (rule, own rank, target rank, p_flag, p_bomb, force)
    (1, Rank.SPY, Rank.MARSHAL, 0.0, 0.0, 40.0),
    (2, Rank.MINER, Rank.BOMB, 0.0, 1.0, 16.0),
    (3, Rank.MINER, UNKNOWN, 0.0, 0.5, 16.0 * 0.5 - 2.0),  # rule 4 always pulls along
    (4, Rank.MINER, UNKNOWN, 0.0, 0.0, -2.0),
    (5, Rank.MINER, UNKNOWN, 0.25, 0.0, 80.0 * 0.25 - 2.0),
    (6, Rank.SERGEANT, UNKNOWN, 0.0, 0.0, 1.0),
    (7, Rank.LIEUTENANT, UNKNOWN, 0.0, 0.0, 1.0),
    (8, Rank.CAPTAIN, UNKNOWN, 0.0, 0.0, 0.5),
    (9, Rank.CAPTAIN, Rank.MAJOR, 0.0, 0.0, -6.0),
    (9, Rank.CAPTAIN, Rank.MARSHAL, 0.0, 0.0, -6.0),
    (10, Rank.MAJOR, Rank.CAPTAIN, 0.0, 0.0, 8.0),
    (10, Rank.MAJOR, Rank.SPY, 0.0, 0.0, 8.0),
    (11, Rank.MAJOR, Rank.COLONEL, 0.0, 0.0, -10.0),
    (11, Rank.MAJOR, Rank.MARSHAL, 0.0, 0.0, -10.0),
    (12, Rank.COLONEL, Rank.SCOUT, 0.0, 0.0, 8.0),
    (13, Rank.COLONEL, Rank.MAJOR, 0.0, 0.0, 16.0),
    (14, Rank.COLONEL, Rank.GENERAL, 0.0, 0.0, -16.0),
    (14, Rank.COLONEL, Rank.MARSHAL, 0.0, 0.0, -16.0),
    (15, Rank.GENERAL, Rank.MINER, 0.0, 0.0, 4.0),
    (16, Rank.GENERAL, Rank.MAJOR, 0.0, 0.0, 16.0),
    (16, Rank.GENERAL, Rank.COLONEL, 0.0, 0.0, 16.0),
    (17, Rank.GENERAL, Rank.MARSHAL, 0.0, 0.0, -20.0),
    (18, Rank.MARSHAL, Rank.SERGEANT, 0.0, 0.0, 4.0),
    (19, Rank.MARSHAL, Rank.MAJOR, 0.0, 0.0, 16.0),
    (19, Rank.MARSHAL, Rank.COLONEL, 0.0, 0.0, 16.0),
    (20, Rank.MARSHAL, Rank.GENERAL, 0.0, 0.0, 32.0),
    # 21 on an open unknown (nothing walls it in here); the ranks' own unknown rules add to it.
    (21, Rank.SERGEANT, UNKNOWN, 0.5, 0.0, 1.0 + 40.0),
    (21, Rank.LIEUTENANT, UNKNOWN, 0.5, 0.0, 1.0 + 40.0),
    (21, Rank.CAPTAIN, UNKNOWN, 0.5, 0.0, 0.5 + 40.0),
    (21, Rank.MAJOR, UNKNOWN, 0.5, 0.0, 40.0),
    (21, Rank.COLONEL, UNKNOWN, 0.5, 0.0, 40.0),
    (21, Rank.GENERAL, UNKNOWN, 0.5, 0.0, 40.0),
    (21, Rank.MARSHAL, UNKNOWN, 0.5, 0.0, 40.0),
]


@pytest.mark.parametrize(("rule", "own", "target", "pf", "pb", "force"), RULE_CASES)
def test_each_rule_pulls_with_its_force(rule: int, own: Rank, target: Rank, pf: float, pb: float,
                                        force: float) -> None:
    pos = board([(4, 1, RED, own), (4, 7, BLUE, target)])
    f, b = probs(pos, c4_7=(pf, pb))
    assert own_score(pos, (4, 1), UP, f, b) == pytest.approx(force / 6)
    assert own_score(pos, (4, 1), DOWN, f, b) == pytest.approx(-force / 6)
    assert own_score(pos, (4, 1), LEFT, f, b) == pytest.approx(0.0)
    assert own_score(pos, (4, 1), RIGHT, f, b) == pytest.approx(0.0)


# The endgame hunt (not in the thesis): a pull of ``hunt`` towards every known mover the piece beats,
# on top of the rules; nothing towards what it does not beat, nor towards bombs, the flag, unknowns.
HUNT_CASES = [
    # (own rank, target rank, force without the hunt, with a hunt of 32)
    (Rank.LIEUTENANT, Rank.SCOUT, 0.0, 32.0),            # no thesis rule for a known lower piece
    (Rank.MARSHAL, Rank.MINER, 4.0, 4.0 + 32.0),         # rule 18 and the hunt
    (Rank.MINER, Rank.SCOUT, 0.0, 32.0),
    (Rank.SPY, Rank.MARSHAL, 40.0, 40.0 + 32.0),         # the spy beats the marshal it strikes
    (Rank.SERGEANT, Rank.SERGEANT, 0.0, 0.0),            # both die: not a win
    (Rank.CAPTAIN, Rank.MAJOR, -6.0, -6.0),              # rule 9 only
    (Rank.MINER, Rank.BOMB, 16.0, 16.0),                 # rule 2 only: a bomb is no mover
    (Rank.COLONEL, UNKNOWN, 0.0, 0.0),
]


@pytest.mark.parametrize(("own", "target", "without", "with_hunt"), HUNT_CASES)
def test_the_hunt_pulls_towards_known_movers_the_piece_beats(own: Rank, target: Rank, without: float,
                                                             with_hunt: float) -> None:
    pos = board([(4, 1, RED, own), (4, 7, BLUE, target)])
    assert own_score(pos, (4, 1), UP) == pytest.approx(without / 6)
    assert own_score(pos, (4, 1), UP, hunt=32.0) == pytest.approx(with_hunt / 6)


def test_miner_pull_scales_the_miners_pulls_towards_unknowns() -> None:
    # Not in the thesis: ``miner_pull`` multiplies rules 3 (16 * P(bomb)) and 5 (80 * P(flag)); rule 4
    # (-2 towards every unknown), rule 2 (a known bomb) and the other ranks' rules stay as written.
    pos = board([(4, 1, RED, Rank.MINER), (4, 7, BLUE, UNKNOWN)])
    f, b = probs(pos, c4_7=(0.25, 0.5))
    thesis = 16 * 0.5 - 2 + 80 * 0.25
    assert own_score(pos, (4, 1), UP, f, b) == pytest.approx(thesis / 6)
    assert own_score(pos, (4, 1), UP, f, b, miner_pull=0.4) == pytest.approx((0.4 * (16 * 0.5 + 80 * 0.25) - 2) / 6)
    assert own_score(pos, (4, 1), UP, f, b, miner_pull=0.0) == pytest.approx(-2 / 6)
    bomb = board([(4, 1, RED, Rank.MINER), (4, 7, BLUE, Rank.BOMB)])
    assert own_score(bomb, (4, 1), UP, miner_pull=0.4) == pytest.approx(16 / 6)
    major = board([(4, 1, RED, Rank.MAJOR), (4, 7, BLUE, UNKNOWN)])
    f, b = probs(major, c4_7=(0.25, 0.5))
    assert own_score(major, (4, 1), UP, f, b, miner_pull=0.4) == own_score(major, (4, 1), UP, f, b)


@pytest.mark.parametrize(("own", "miner_row", "without", "with_guard"), [
    (Rank.MAJOR, 5, 8.0 / 4, (8.0 + 64.0) / 4),     # rule 10 and the guard: the miner 5 steps from our flag
    (Rank.MAJOR, 6, 8.0 / 5, 8.0 / 5),              # 6 steps from our flag: rule 10 only
    (Rank.SERGEANT, 5, 0.0, 64.0 / 4),              # no thesis rule, the guard alone
    (Rank.MINER, 5, 0.0, 0.0),                      # a miner only ties a miner
    (Rank.SPY, 5, 0.0, 0.0),                        # a spy loses to it
])
def test_the_guard_pulls_towards_a_known_miner_near_our_flag(own: Rank, miner_row: int, without: float,
                                                             with_guard: float) -> None:
    # Not in the thesis (``guard``): our flag on (5, 1), our piece on (4, 1), their known miner on
    # (4, miner_row); one opponent piece, so t = 1.
    pos = board([(5, 1, RED, Rank.FLAG), (4, 1, RED, own), (4, miner_row, BLUE, Rank.MINER)])
    assert own_score(pos, (4, 1), UP) == pytest.approx(without)
    assert own_score(pos, (4, 1), UP, guard=64.0) == pytest.approx(with_guard)
    unknown = board([(5, 1, RED, Rank.FLAG), (4, 1, RED, own), (4, miner_row, BLUE, UNKNOWN)])
    assert own_score(unknown, (4, 1), UP, guard=64.0) == own_score(unknown, (4, 1), UP)


def test_the_home_guards_hold_the_stations_next_to_the_bombs_by_our_flag() -> None:
    # Not in the thesis (``home``): our flag on F1 (5, 0) behind bombs on E1, G1 and F2 (the gates);
    # their known scout, which pulls no sergeant, far off; one opponent piece, so t = 1.
    fort = [(5, 0, RED, Rank.FLAG), (4, 0, RED, Rank.BOMB), (6, 0, RED, Rank.BOMB), (5, 1, RED, Rank.BOMB),
            (0, 9, BLUE, Rank.SCOUT)]
    # E2 is next to two gates (E1, F2), as is G2; a sergeant 4 steps above E2 (6 from G2) guards E2
    # and is pulled down with 16 / 4.
    far = board([*fort, (4, 5, RED, Rank.SERGEANT)])
    assert own_score(far, (4, 5), DOWN) == 0.0
    assert own_score(far, (4, 5), DOWN, home=16.0) == pytest.approx(16.0 / 4)
    assert own_score(far, (4, 5), UP, home=16.0) == pytest.approx(-16.0 / 4)
    # On its station it feels no pull, and leaving costs twice the pull at the shortest distance.
    held = board([*fort, (4, 1, RED, Rank.SERGEANT)])
    assert own_score(held, (4, 1), UP, home=16.0) == pytest.approx(-2 * 16.0 / 4)
    assert own_score(held, (4, 1), LEFT, home=16.0) == pytest.approx(-2 * 16.0 / 4)
    # The gate left uncovered (G1) gets the second station, H1 (the lower of H1 and G2), and the
    # nearest sergeant to major left: the major on I4, pulled along (-1, -3) with 16 / 4. A colonel
    # nearer still is no guard.
    two = board([*fort, (4, 1, RED, Rank.SERGEANT), (8, 3, RED, Rank.MAJOR), (7, 1, RED, Rank.COLONEL)])
    assert own_score(two, (8, 3), DOWN, home=16.0) == pytest.approx(
        own_score(two, (8, 3), DOWN) + 16.0 / 4 * 3 / math.sqrt(10))
    assert own_score(two, (7, 1), DOWN, home=16.0) == own_score(two, (7, 1), DOWN)
    # Between stations next to as many gates, the one with the nearer guard: from H4 that is G2.
    near_g2 = board([*fort, (7, 3, RED, Rank.SERGEANT)])
    assert own_score(near_g2, (7, 3), DOWN, home=16.0) == pytest.approx(16.0 / 4 * 2 / math.sqrt(5))
    # With no sergeant to major left, a colonel guards.
    reserve = board([*fort, (4, 5, RED, Rank.COLONEL)])
    assert own_score(reserve, (4, 5), DOWN, home=16.0) == pytest.approx(
        own_score(reserve, (4, 5), DOWN) + 16.0 / 4)
    # A corner flag's two bombs share one station (B2): one guard, the second sergeant is free.
    corner = board([(0, 0, RED, Rank.FLAG), (1, 0, RED, Rank.BOMB), (0, 1, RED, Rank.BOMB),
                    (1, 4, RED, Rank.SERGEANT), (5, 5, RED, Rank.SERGEANT), (0, 9, BLUE, Rank.SCOUT)])
    assert own_score(corner, (1, 4), DOWN, home=16.0) == pytest.approx(16.0 / 4)
    assert own_score(corner, (5, 5), DOWN, home=16.0) == 0.0
    # With no bomb beside it the flag is its own gate: the station is the lowest square next to it.
    bare = board([(5, 0, RED, Rank.FLAG), (4, 4, RED, Rank.SERGEANT), (0, 9, BLUE, Rank.SCOUT)])
    assert own_score(bare, (4, 4), DOWN, home=16.0) == pytest.approx(16.0 / 4)
    # Without a flag on the board there is nothing to guard.
    flagless = board([(5, 4, RED, Rank.SERGEANT), (0, 9, BLUE, Rank.SCOUT)])
    assert own_score(flagless, (5, 4), DOWN, home=16.0) == 0.0


def test_the_rule_table_has_the_21_rules_of_appendix_1() -> None:
    assert [r.number for r in ref.RULES] == list(range(1, 22))
    assert {r.number for r in ref.RULES} == {case[0] for case in RULE_CASES}


# Which (own, target) pairs any rule links when P(flag) is 0 (the flag rules 5 and 21 then add
# nothing): "lower" is the European f>4, captain down to spy.
LOWER = {Rank.CAPTAIN, Rank.LIEUTENANT, Rank.SERGEANT, Rank.MINER, Rank.SCOUT, Rank.SPY}
PULLED_BY: dict[Rank, set[Rank]] = {
    Rank.SPY: {Rank.MARSHAL},
    Rank.SCOUT: set(),
    Rank.MINER: {Rank.BOMB, UNKNOWN},
    Rank.SERGEANT: {UNKNOWN},
    Rank.LIEUTENANT: {UNKNOWN},
    Rank.CAPTAIN: {UNKNOWN, Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL},
    Rank.MAJOR: LOWER | {Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL},
    Rank.COLONEL: LOWER | {Rank.MAJOR, Rank.GENERAL, Rank.MARSHAL},
    Rank.GENERAL: LOWER | {Rank.MAJOR, Rank.COLONEL, Rank.MARSHAL},
    Rank.MARSHAL: LOWER | {Rank.MAJOR, Rank.COLONEL, Rank.GENERAL},
}


@pytest.mark.parametrize("own", list(PULLED_BY))
@pytest.mark.parametrize("target", list(Rank))
def test_no_pull_without_a_rule(own: Rank, target: Rank) -> None:
    """Pairs outside the table feel nothing (equal ranks, the flag, every pull on scouts...)."""
    pos = board([(4, 1, RED, own), (4, 7, BLUE, target)])
    score = own_score(pos, (4, 1), UP)
    assert (score != 0.0) == (target in PULLED_BY[own])


# --- rule 21: open and walled-in unknowns ---------------------------------------------------------

def _walled(neighbours: dict[tuple[int, int], Rank], own: Rank = Rank.MARSHAL) -> Position:
    """A red piece at (4, 1); the suspected flag at (4, 9) on blue's back row with the given
    neighbours (the board edge closes its top)."""
    pieces: list[Piece] = [(4, 1, RED, own), (4, 9, BLUE, UNKNOWN)]
    pieces += [(c, r, BLUE, rank) for (c, r), rank in neighbours.items()]
    return board(pieces)


WALL = {(3, 9): UNKNOWN, (5, 9): UNKNOWN, (4, 8): UNKNOWN}


def _flag_pull(pos: Position) -> float:
    """How much P(flag) = 0.5 on (4, 9) adds to the step up from (4, 1)."""
    with_flag = own_score(pos, (4, 1), UP, *probs(pos, c4_9=(0.5, 0.0)))
    return with_flag - own_score(pos, (4, 1), UP)


@pytest.mark.parametrize("wall", [WALL, {(3, 9): Rank.BOMB, (5, 9): Rank.BOMB, (4, 8): UNKNOWN}])
def test_rule_21_skips_a_target_walled_in_by_unmoved_pieces(wall: dict[tuple[int, int], Rank]) -> None:
    assert _flag_pull(_walled(wall)) == 0.0


@pytest.mark.parametrize("opening", [
    {(3, 9): UNKNOWN, (5, 9): UNKNOWN},  # an empty square below
    {**WALL, (4, 8): Rank.MARSHAL},  # a known piece that can move is no wall (and pulls no marshal)
])
def test_rule_21_pulls_once_one_side_is_open(opening: dict[tuple[int, int], Rank]) -> None:
    assert _flag_pull(_walled(opening)) == pytest.approx(40.0 / 8)


def test_rule_21_a_moved_neighbour_is_no_wall() -> None:
    # Blue's unknown steps from (4, 7) to (4, 8): it has moved, so it walls nothing in.
    pos = board([(4, 1, RED, Rank.MARSHAL), (4, 9, BLUE, UNKNOWN), (3, 9, BLUE, UNKNOWN),
                 (5, 9, BLUE, UNKNOWN), (4, 7, BLUE, UNKNOWN)], side=BLUE)
    pos.make(move(pos, (4, 7), UP))
    assert _flag_pull(pos) == pytest.approx(40.0 / 8)


def test_rule_21_lakes_and_edges_close_sides() -> None:
    # In the corner with a lake below: no open side although no piece stands next to it.
    pos = board([(4, 1, RED, Rank.MARSHAL), (0, 9, BLUE, UNKNOWN), (1, 9, BLUE, UNKNOWN)], lakes=((0, 8),))
    f, b = probs(pos, c0_9=(0.5, 0.0))
    assert own_score(pos, (4, 1), UP, f, b) == 0.0


def test_the_miner_flag_rule_ignores_walls() -> None:
    walled = _walled({(c, r): Rank.BOMB for c, r in WALL}, own=Rank.MINER)
    assert _flag_pull(walled) == pytest.approx(40.0 / 8)


# --- the force formula: 1 / L with L at least 4, 1 / t, x and y parts -------------------------------

@pytest.mark.parametrize(("marshal", "expected"), [
    ((0, 2), 40.0 / 4), ((0, 3), 40.0 / 4), ((0, 4), 40.0 / 4), ((0, 5), 40.0 / 5), ((0, 8), 40.0 / 8),
    ((1, 1), 40.0 / 4 / math.sqrt(2)),  # two steps away, diagonally: L is raised to 4
])
def test_force_falls_as_one_over_steps_at_least_four(marshal: tuple[int, int], expected: float) -> None:
    pos = board([(0, 0, RED, Rank.SPY), (*marshal, BLUE, Rank.MARSHAL)])
    assert own_score(pos, (0, 0), UP) == pytest.approx(expected)


def test_steps_ignore_lakes() -> None:
    """L counts steps on the grid as the crow flies; a lake in between changes nothing."""
    open_board = board([(0, 0, RED, Rank.SPY), (0, 6, BLUE, Rank.MARSHAL)])
    lake = board([(0, 0, RED, Rank.SPY), (0, 6, BLUE, Rank.MARSHAL)], lakes=((0, 3), (1, 3)))
    assert own_score(lake, (0, 0), UP) == own_score(open_board, (0, 0), UP) == pytest.approx(40.0 / 6)


@pytest.mark.parametrize(("left", "t"), [(5, 1.0), (10, 1.0), (15, 1.5), (30, 3.0), (40, 4.0)])
def test_force_falls_with_the_opponent_pieces_left(left: int, t: float) -> None:
    # The marshal plus bombs on blue's back rows: bombs pull no spy, but they count.
    filler = [(c, r, BLUE, Rank.BOMB) for r in (9, 8, 7, 6) for c in range(10)][: left - 1]
    pos = board([(0, 0, RED, Rank.SPY), (9, 0, BLUE, Rank.MARSHAL), *filler])
    assert own_score(pos, (0, 0), RIGHT) == pytest.approx(40.0 / (9 * t))


def test_force_splits_into_x_and_y_along_the_line() -> None:
    pos = board([(2, 1, RED, Rank.SPY), (5, 5, BLUE, Rank.MARSHAL)])  # dx 3, dy 4: L 7, distance 5
    assert own_score(pos, (2, 1), UP) == pytest.approx(40.0 / 7 * 4 / 5)
    assert own_score(pos, (2, 1), RIGHT) == pytest.approx(40.0 / 7 * 3 / 5)
    assert own_score(pos, (2, 1), LEFT) == pytest.approx(-40.0 / 7 * 3 / 5)


def test_forces_from_several_targets_add_up() -> None:
    pos = board([(4, 0, RED, Rank.SERGEANT), (0, 4, BLUE, UNKNOWN), (8, 4, BLUE, UNKNOWN)])
    assert own_score(pos, (4, 0), UP) == pytest.approx(2 * (1.0 / 8) * 4 / math.hypot(4, 4))
    assert own_score(pos, (4, 0), LEFT) == pytest.approx(0.0)


def test_a_sergeant_advancing_at_the_start_scores_about_one() -> None:
    """9.2: "värderas en framryckning med sergeant i början av spelet till ca 1"."""
    pos = random_game(CLASSIC, 7).position.copy()
    for pid in range(pos.piece_count):
        sq, owner, _rank, _moved = pos.piece(pid)
        if owner == BLUE:
            pos.set_rank(pid, UNKNOWN)
        elif sq == pos.square(4, 3):
            pos.set_rank(pid, Rank.SERGEANT)
    assert 0.8 < own_score(pos, (4, 3), UP) < 1.5


# --- moved pieces -----------------------------------------------------------------------------------

FACTOR_CASES = [
    (Rank.SPY, Rank.MARSHAL, 2.0), (Rank.MINER, Rank.BOMB, 2.0), (Rank.SERGEANT, UNKNOWN, 1.0),
    (Rank.LIEUTENANT, UNKNOWN, 1.0), (Rank.CAPTAIN, UNKNOWN, 1.0), (Rank.MAJOR, Rank.CAPTAIN, 1.0),
    (Rank.COLONEL, Rank.CAPTAIN, 2.0), (Rank.GENERAL, Rank.CAPTAIN, 2.0), (Rank.MARSHAL, Rank.CAPTAIN, 2.0),
]


@pytest.mark.parametrize(("own", "target", "factor"), FACTOR_CASES)
def test_moved_pieces_get_their_factor(own: Rank, target: Rank, factor: float) -> None:
    # Red's piece steps (4, 0) -> (4, 1), blue's scout (9, 9) -> (8, 9); compare with the same
    # squares set up unmoved.
    moved = board([(4, 0, RED, own), (4, 7, BLUE, target), (9, 9, BLUE, Rank.SCOUT)])
    moved.make(move(moved, (4, 0), UP))
    moved.make(move(moved, (9, 9), LEFT))
    unmoved = board([(4, 1, RED, own), (4, 7, BLUE, target), (8, 9, BLUE, Rank.SCOUT)])
    base = own_score(unmoved, (4, 1), UP)
    assert base != 0.0
    assert own_score(moved, (4, 1), UP) == pytest.approx(factor * base)


# --- scouts' long strikes -----------------------------------------------------------------------------

def test_long_strike_scores_flag_suspicions_and_distance() -> None:
    pos = board([(0, 2, RED, Rank.SCOUT), (0, 9, BLUE, UNKNOWN), (5, 5, BLUE, UNKNOWN)])
    assert flag_suspicions_py(pos, RED) == [0.0, 1.0, 0.0]  # back row and never moved
    assert own_score(pos, (0, 2), UP, dist=7) == pytest.approx(1.0 + 0.7)
    # next to a known bomb: a second suspicion
    pos = board([(0, 2, RED, Rank.SCOUT), (0, 9, BLUE, UNKNOWN), (1, 9, BLUE, Rank.BOMB)])
    assert flag_suspicions_py(pos, RED) == [0.0, 2.0, 0.0]
    assert own_score(pos, (0, 2), UP, dist=7) == pytest.approx(2.0 + 0.7)


def test_long_strike_on_a_piece_that_has_moved_scores_its_steps() -> None:
    pos = board([(0, 0, RED, Rank.SCOUT), (9, 0, RED, Rank.SERGEANT), (0, 8, BLUE, UNKNOWN)], side=BLUE)
    # Blue's unknown walks down four times while red's sergeant shuffles.
    for blue_from, red_from, red_step in (((0, 8), (9, 0), UP), ((0, 7), (9, 1), DOWN),
                                          ((0, 6), (9, 0), UP)):
        pos.make(move(pos, blue_from, DOWN))
        pos.make(move(pos, red_from, red_step))
    pos.make(move(pos, (0, 5), DOWN))
    assert pos.side == RED and pos.piece(2)[3] == 4
    assert flag_suspicions_py(pos, RED)[2] == 0.0
    assert own_score(pos, (0, 0), UP, dist=4) == pytest.approx(0.1 * 4 + 0.1 * 4)


def test_given_flag_suspicions_are_used() -> None:
    pos = board([(0, 2, RED, Rank.SCOUT), (0, 9, BLUE, UNKNOWN)])
    pf, pb = probs(pos)
    m = [move(pos, (0, 2), UP, 7)]
    got = strategic_scores_py(pos, RED, pf, pb, m, flag_suspicion=[0.0, 3.0], lookahead=False)
    assert got == [pytest.approx(3.0 + 0.7)]


def test_scouts_plain_moves_and_short_strikes_score_nothing() -> None:
    pos = board([(0, 2, RED, Rank.SCOUT), (0, 3, BLUE, UNKNOWN), (5, 2, BLUE, UNKNOWN)])
    assert own_score(pos, (0, 2), UP) == 0.0  # a strike next door is a capture: left out
    assert own_score(pos, (0, 2), RIGHT, dist=3) == 0.0  # a plain range move
    assert own_score(pos, (0, 2), RIGHT, dist=5) == pytest.approx(0.0 + 0.5)  # a long strike


def test_long_strike_lookahead_plays_it_as_a_win() -> None:
    # After the strike the scout stands on (0, 9); the spy's step to the marshal is the best next.
    pos = board([(0, 2, RED, Rank.SCOUT), (5, 0, RED, Rank.SPY), (0, 9, BLUE, UNKNOWN),
                 (5, 8, BLUE, Rank.MARSHAL)])
    pf, pb = probs(pos)
    strike = move(pos, (0, 2), UP, 7)
    assert strategic_scores_py(pos, RED, pf, pb, [strike]) == [pytest.approx(1.7 + 40.0 / 8)]


# --- captures and the lookahead ---------------------------------------------------------------------

def test_captures_score_nothing() -> None:
    pos = board([(4, 6, RED, Rank.SPY), (4, 7, BLUE, Rank.MARSHAL), (0, 0, RED, Rank.SERGEANT),
                 (9, 9, BLUE, UNKNOWN)])
    pf, pb = probs(pos)
    m = [move(pos, (4, 6), UP)]
    assert strategic_scores_py(pos, RED, pf, pb, m) == [0.0]
    assert ref.strategic_scores(pos, RED, pf, pb, m) == [0.0]


def test_lookahead_adds_the_best_next_own_move() -> None:
    pos = board([(0, 0, RED, Rank.SPY), (0, 8, BLUE, Rank.MARSHAL), (9, 0, RED, Rank.FLAG)])
    pf, pb = probs(pos)
    first = 40.0 / 8
    second = 2 * 40.0 / 7  # the spy again, a step closer and moved now (x2)
    assert strategic_scores_py(pos, RED, pf, pb, [move(pos, (0, 0), UP)]) == [pytest.approx(first + second)]


def test_lookahead_adds_the_own_score_again_when_nothing_is_better() -> None:
    # The spy's only way on is back; every other red piece is a bomb or the flag.
    pos = board([(0, 0, RED, Rank.SPY), (0, 2, RED, Rank.BOMB), (1, 1, RED, Rank.BOMB),
                 (1, 0, RED, Rank.FLAG), (0, 8, BLUE, Rank.MARSHAL)])
    pf, pb = probs(pos)
    assert strategic_scores_py(pos, RED, pf, pb, [move(pos, (0, 0), UP)]) == [pytest.approx(2 * 40.0 / 8)]


def test_lookahead_counts_another_piece_s_next_move() -> None:
    # A scout's plain move scores 0; the best next move is the spy's step towards the marshal.
    pos = board([(9, 0, RED, Rank.SCOUT), (0, 0, RED, Rank.SPY), (0, 8, BLUE, Rank.MARSHAL)])
    pf, pb = probs(pos)
    assert strategic_scores_py(pos, RED, pf, pb, [move(pos, (9, 0), UP)]) == [pytest.approx(40.0 / 8)]


def test_lookahead_leaves_out_next_captures() -> None:
    """A sergeant between two unknowns steps up against the pull (-0.05); its only next move is
    back (-0.05 again); the boxed miner's only move is a capture, which does not count as 0."""
    pos = board([
        (0, 4, RED, Rank.SERGEANT), (1, 5, RED, Rank.BOMB), (0, 6, RED, Rank.BOMB),
        (5, 0, RED, Rank.MINER), (4, 0, RED, Rank.BOMB), (6, 0, RED, Rank.BOMB), (9, 0, RED, Rank.FLAG),
        (0, 0, BLUE, UNKNOWN), (0, 9, BLUE, UNKNOWN), (5, 1, BLUE, Rank.BOMB),
    ])
    pf, pb = probs(pos)
    up = move(pos, (0, 4), UP)
    assert own_score(pos, (0, 4), UP) == pytest.approx(1 / 5 - 1 / 4)
    assert strategic_scores_py(pos, RED, pf, pb, [up]) == [pytest.approx(2 * (1 / 5 - 1 / 4))]
    assert ref.strategic_scores(pos, RED, pf, pb, [up]) == [pytest.approx(2 * (1 / 5 - 1 / 4))]


def test_the_position_comes_back_unchanged() -> None:
    pos = play_random(random_game(CLASSIC, 3), 40, 3).position.copy()
    before = pos.snapshot()
    pf = [0.1] * pos.piece_count
    strategic_scores_py(pos, pos.side, pf, pf, pos.moves())
    assert pos.snapshot() == before


def test_side_need_not_be_the_side_to_move() -> None:
    pieces: list[Piece] = [(0, 0, RED, Rank.SPY), (5, 0, RED, Rank.MINER), (0, 8, BLUE, Rank.MARSHAL),
                           (5, 8, BLUE, UNKNOWN)]
    red_to_move, blue_to_move = board(pieces), board(pieces, side=BLUE)
    pf, pb = probs(red_to_move, c5_8=(0.3, 0.3))
    moves = red_to_move.moves()
    before = blue_to_move.snapshot()
    got = strategic_scores_py(blue_to_move, RED, pf, pb, moves)
    assert got == strategic_scores_py(red_to_move, RED, pf, pb, moves)
    assert blue_to_move.snapshot() == before


def test_bad_input_is_refused() -> None:
    pos = board([(0, 0, RED, Rank.SPY), (0, 8, BLUE, Rank.MARSHAL)])
    pf, pb = probs(pos)
    with pytest.raises(ValueError):
        strategic_scores_py(pos, RED, pf[:1], pb, [])
    with pytest.raises(ValueError):
        strategic_scores_py(pos, RED, pf, pb, [move(pos, (0, 8), DOWN)])  # not red's piece
    with pytest.raises(ValueError):
        strategic_scores_py(pos, 2, pf, pb, [])


# --- the flag defence by distance (not in the thesis; docs/strategic.md, departure 13) --------------------

BLOCKERS = StrategicParams(flag_defence_force=128.0)


def raid_board(pieces: list[Piece], raider: tuple[tuple[int, int], tuple[int, int]] | None = None) -> Position:
    """A position with red to move; ``raider`` (from, to): a blue piece that has just stepped, so it has moved."""
    if raider is None:
        return board(pieces)
    pos = board(pieces, side=BLUE)
    pos.make(pos.square(*raider[0]) | (pos.square(*raider[1]) << 8))
    return pos


def threats(pos: Position) -> list[tuple[tuple[int, int], int, tuple[int, int], int, int, bool]]:
    """The compiled rows (the reference's too), squares as coordinates."""
    rows = flag_defence_py(pos, RED)
    assert rows == [astuple(row) for row in ref.flag_defence(pos, RED)[0]]
    return [(pos.coords(pos.piece(a)[0]), cost, pos.coords(block), nearest, steps, sent)
            for a, cost, block, nearest, steps, sent in rows]


def test_a_captain_is_sent_to_the_way_of_an_unseen_mover_near_our_flag() -> None:
    # Our flag on E1 (4, 0); their unseen piece has stepped to (4, 4), four steps from it; our captain on
    # (8, 4) is eight steps from the flag, seven from (4, 1), the last square of the raider's way.
    pos = raid_board([(4, 0, RED, Rank.FLAG), (8, 4, RED, Rank.CAPTAIN), (0, 1, RED, Rank.SERGEANT),
                      (4, 5, BLUE, UNKNOWN), (9, 9, BLUE, Rank.FLAG)], raider=((4, 5), (4, 4)))
    captain = pos.piece_id(pos.square(8, 4))
    assert threats(pos) == [((4, 4), 4, (4, 1), captain, 7, True)]
    pf, pb = probs(pos)
    moves = pos.moves()
    own = dict(zip(moves, strategic_scores_py(pos, RED, pf, pb, moves, lookahead=False, params=BLOCKERS),
                   strict=True))
    assert own == pytest.approx(dict(zip(moves, ref.strategic_scores(pos, RED, pf, pb, moves, lookahead=False,
                                                                     params=BLOCKERS), strict=True)))
    left, down, up, right = (move(pos, (8, 4), d) for d in (LEFT, DOWN, UP, RIGHT))
    # Both steps that shorten the captain's way score above every other move; a step away scores below 0.
    others = [score for m, score in own.items() if m not in (left, down)]
    assert min(own[left], own[down]) > max(others)
    assert own[up] < 0 and own[right] < 0
    # With the lookahead too, and without the setting the step down (along no Appendix 1 pull) is worth nothing.
    full = dict(zip(moves, strategic_scores_py(pos, RED, pf, pb, moves, params=BLOCKERS), strict=True))
    assert min(full[left], full[down]) > max(score for m, score in full.items() if m not in (left, down))
    plain = strategic_scores_py(pos, RED, pf, pb, [down], lookahead=False, params=StrategicParams())[0]
    assert plain == pytest.approx(0.0)
    assert own[down] == pytest.approx(128.0 / 7)  # force / (L * t), L = 7 steps, t = 1


def test_a_defender_nearer_than_the_raider_is_not_sent() -> None:
    # The raider is eight steps from our flag, our captain two: no race yet, so no blocker and no pull.
    # (The raider's way goes through the captain, a step and a fight: 9.)
    pos = raid_board([(4, 0, RED, Rank.FLAG), (4, 2, RED, Rank.CAPTAIN), (4, 9, BLUE, UNKNOWN),
                      (9, 9, BLUE, Rank.FLAG)], raider=((4, 9), (4, 8)))
    captain = pos.piece_id(pos.square(4, 2))
    assert threats(pos) == [((4, 8), 9, (4, 1), captain, 1, False)]
    pf, pb = probs(pos)
    moves = pos.moves()
    assert (strategic_scores_py(pos, RED, pf, pb, moves, params=BLOCKERS)
            == strategic_scores_py(pos, RED, pf, pb, moves, params=StrategicParams()))


def test_a_miner_s_way_to_the_flag_goes_through_our_bombs() -> None:
    # Our flag in the corner, walled in by three bombs: their known miner on (3, 0) takes the bomb on
    # (1, 0) and then the flag: 1 + 2 (the step and the defusing) + 1. Its blocking square is (2, 0).
    walled: list[Piece] = [(0, 0, RED, Rank.FLAG), (1, 0, RED, Rank.BOMB), (0, 1, RED, Rank.BOMB),
                           (1, 1, RED, Rank.BOMB), (5, 5, RED, Rank.SERGEANT), (3, 0, BLUE, Rank.MINER),
                           (9, 9, BLUE, Rank.FLAG)]
    pos = raid_board(walled)
    sergeant = pos.piece_id(pos.square(5, 5))
    # The race: 1 step to (2, 0) against the sergeant's 8: it is sent.
    assert threats(pos) == [((3, 0), 4, (2, 0), sergeant, 8, True)]
    # A captain and up only against an unseen mover: no piece of ours stops it, and a piece that has not
    # moved is no threat at all.
    unseen = [p if p[3] != Rank.MINER else (4, 0, BLUE, UNKNOWN) for p in walled]
    moved = raid_board(unseen, raider=((4, 0), (3, 0)))
    assert threats(moved) == [((3, 0), 4, (2, 0), -1, -1, False)]
    assert threats(raid_board([p if p[3] != Rank.MINER else (3, 0, BLUE, UNKNOWN) for p in walled])) == []
    # Our own movable piece on the way costs a step and a fight, like a bomb.
    blocked = raid_board([*walled, (2, 0, RED, Rank.SCOUT)])
    assert threats(blocked)[0][1:3] == (5, (2, 0))
    # Lakes round the corner instead of bombs: no way in, no threat.
    lakes = ((1, 0), (0, 1), (1, 1))
    closed = board([p for p in walled if p[3] != Rank.BOMB], lakes=lakes)
    assert flag_defence_py(closed, RED) == [] == ref.flag_defence(closed, RED)[0]


def test_a_blocker_s_strike_on_its_raider_scores_the_strongest_step() -> None:
    # Our sergeant next to the miner that walks to our walled-in flag is sent; its strike on the miner is
    # the block itself: 128 / (4 * t), where every other strike scores 0 (9.2).
    pos = raid_board([(0, 0, RED, Rank.FLAG), (1, 0, RED, Rank.BOMB), (0, 1, RED, Rank.BOMB), (1, 1, RED, Rank.BOMB),
                      (3, 1, RED, Rank.SERGEANT), (4, 4, RED, Rank.MAJOR), (3, 0, BLUE, Rank.MINER),
                      (4, 5, BLUE, UNKNOWN), (9, 9, BLUE, Rank.FLAG)])
    strike, other = move(pos, (3, 1), DOWN), move(pos, (4, 4), UP)
    pf, pb = probs(pos)
    for lookahead in (True, False):
        got = strategic_scores_py(pos, RED, pf, pb, [strike, other], lookahead=lookahead, params=BLOCKERS)
        assert got == ref.strategic_scores(pos, RED, pf, pb, [strike, other], lookahead=lookahead, params=BLOCKERS)
        assert got == [pytest.approx(128.0 / 4), 0.0]


def test_each_piece_blocks_one_raider_the_most_urgent_first() -> None:
    # Two known miners race to our flag on (4, 0); the nearer one, on (4, 3), gets our nearest sergeant,
    # the other the next nearest piece that beats a miner.
    pos = raid_board([(4, 0, RED, Rank.FLAG), (6, 3, RED, Rank.SERGEANT), (0, 6, RED, Rank.MAJOR),
                      (4, 3, BLUE, Rank.MINER), (1, 4, BLUE, Rank.MINER), (9, 9, BLUE, Rank.FLAG)])
    sergeant, major = pos.piece_id(pos.square(6, 3)), pos.piece_id(pos.square(0, 6))
    rows = threats(pos)
    assert [(row[0], row[3], row[5]) for row in rows] == [((4, 3), sergeant, True), ((1, 4), major, True)]


# --- compiled against the reference -----------------------------------------------------------------

def _view(seed: int, plies: int, hide: float, classic: bool, range_attacks: bool) -> Position:
    ruleset = CLASSIC if classic else MINI
    game = play_random(random_game(ruleset, seed, range_attacks=range_attacks), plies, seed)
    pos = game.position.copy()
    rng = random.Random(seed)
    for pid in range(pos.piece_count):
        sq, owner, _rank, _moved = pos.piece(pid)
        if owner != pos.side and sq >= 0 and rng.random() < hide:
            pos.set_rank(pid, UNKNOWN)
    return pos


@pytest.mark.long
@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    plies=st.integers(0, 120),
    hide=st.floats(0.0, 1.0),
    classic=st.booleans(),
    range_attacks=st.booleans(),
    given_suspicion=st.booleans(),
    prob_seed=st.integers(0, 10_000),
)
def test_compiled_equals_reference(seed: int, plies: int, hide: float, classic: bool, range_attacks: bool,
                                   given_suspicion: bool, prob_seed: int) -> None:
    pos = _view(seed, plies, hide, classic, range_attacks)
    rng = random.Random(prob_seed)
    n = pos.piece_count
    pf = [rng.choice([0.0, rng.random() * 0.5]) for _ in range(n)]
    pb = [rng.random() for _ in range(n)]
    susp = [float(rng.randint(0, 2)) for _ in range(n)] if given_suspicion else None
    moves = pos.moves()
    fast = strategic_scores_py(pos, pos.side, pf, pb, moves, susp)
    slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, susp)
    assert fast == pytest.approx(slow, abs=1e-9)
    # With the endgame hunt, the miner's pulls scaled and the guard, the home guard, and the flag's blockers.
    for params in (StrategicParams(hunt_force=32.0), StrategicParams(miner_pull=0.4, miner_guard=64.0),
                   StrategicParams(home_guard=16.0), StrategicParams(home_guard=64.0, flag_defence_force=128.0)):
        fast = strategic_scores_py(pos, pos.side, pf, pb, moves, susp, params=params)
        slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, susp, params=params)
        assert fast == pytest.approx(slow, abs=1e-9)
    assert flag_suspicions_py(pos, pos.side) == ref.flag_suspicions(pos, pos.side)
    assert flag_defence_py(pos, pos.side) == [astuple(row) for row in ref.flag_defence(pos, pos.side)[0]]


# --- the two-squares chase model (not in the thesis; docs/two-squares.md, *The engine's use*) -----------

VALUES = [list(get_scale("thesis").base_array())] * 2  # a known piece's value by [side][rank]
LIMIT = 5  # the tournament's two-squares N
# A two-column trap: lakes fill column 2, so columns 0 and 1 are closed on every side. Each side has a
# sergeant in the open columns 3..5 to play elsewhere.
CORRIDOR = tuple((2, row) for row in range(6))


def chase_board(pieces: list[Piece], lakes: tuple[tuple[int, int], ...] = CORRIDOR) -> Position:
    spare = [(4, 0, RED, int(Rank.SERGEANT)), (4, 5, BLUE, int(Rank.SERGEANT))]
    return board(pieces + spare, width=6, height=6, lakes=lakes)


def chase_terms(pos: Position, weight: float = 1.0) -> dict[tuple[tuple[int, int], tuple[int, int]], float]:
    """Each legal move's chase term (its score with the model less its score without), compiled and
    reference agreeing; keyed by (from, to) coordinates."""
    pf, pb = probs(pos)
    moves = pos.moves()
    on = StrategicParams(chase_weight=weight)
    fast = strategic_scores_py(pos, pos.side, pf, pb, moves, params=on, piece_values=VALUES, two_squares=LIMIT)
    slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, params=on, piece_values=VALUES, two_squares=LIMIT)
    assert fast == pytest.approx(slow, abs=1e-9)
    plain = strategic_scores_py(pos, pos.side, pf, pb, moves, params=StrategicParams(), piece_values=VALUES,
                                two_squares=LIMIT)
    return {(pos.coords(m & 0xFF), pos.coords(m >> 8)): f - p for m, f, p in zip(moves, fast, plain, strict=True)}


def chase_value(rank: Rank, attacker_moves: int) -> float:
    return VALUES[0][int(rank)] * ref.CHASE_DISCOUNT ** (attacker_moves - 1)


def verdict_after(pos: Position, frm: tuple[int, int], to: tuple[int, int]) -> LookAhead | None:
    """The look-ahead's verdict on the chase in the trap (columns 0..2) after the move (None: none)."""
    after = pos.copy()
    after.make(pos.square(*frm) | (pos.square(*to) << 8))
    found = [c for c in scan(after, LIMIT, 10) if c.attacker.col <= 2 and c.defender.col <= 2]
    assert len(found) <= 1
    return found[0].verdict if found else None


def test_the_chase_model_carries_on_an_enforced_chase() -> None:
    # Our colonel below their known captain in the closed two-column trap: a capture the rule enforces.
    pos = chase_board([(0, 1, RED, int(Rank.COLONEL)), (0, 4, BLUE, int(Rank.CAPTAIN))])
    (root,) = scan(pos, LIMIT)
    assert root.verdict.captured and root.verdict.attacker_moves is not None
    terms = chase_terms(pos, weight=0.5)
    before = chase_value(Rank.CAPTAIN, root.verdict.attacker_moves)
    for (frm, to), term in terms.items():
        after = verdict_after(pos, frm, to)
        assert after is not None
        kept = chase_value(Rank.CAPTAIN, after.attacker_moves) if after.attacker_moves is not None else 0.0
        assert term == pytest.approx(0.5 * (kept - before))
    forward = terms[((0, 1), (0, 2))]
    assert forward > 0
    assert forward == max(terms.values())              # closing in beats waiting and stepping back
    assert terms[((0, 1), (0, 0))] < terms[((4, 0), (4, 1))]
    # Stepping onto the neighbouring line lets the captain go (the sideways count, seed 6).
    sideways = verdict_after(pos, (0, 1), (1, 1))
    assert sideways is not None and not sideways.captured and sideways.reason == "count"
    assert terms[((0, 1), (1, 1))] == pytest.approx(-0.5 * before)


def test_an_endangered_piece_leaves_before_the_trap_closes() -> None:
    # Their known general above our captain in a two-column trap whose top (rows 4, 5) opens onto
    # columns 2..5: stepping sideways now reaches the refuge; waiting, the general closes in.
    lakes = tuple((2, row) for row in range(4))
    pos = chase_board([(0, 1, RED, int(Rank.CAPTAIN)), (0, 2, BLUE, int(Rank.GENERAL))], lakes)
    (root,) = scan(pos, LIMIT)
    assert root.verdict.captured and root.attacker_side == BLUE
    assert verdict_after(pos, (0, 1), (1, 1)) is not None
    assert not verdict_after(pos, (0, 1), (1, 1)).captured     # type: ignore[union-attr]
    terms = chase_terms(pos)
    assert root.verdict.attacker_moves is not None
    assert terms[((0, 1), (1, 1))] == pytest.approx(chase_value(Rank.CAPTAIN, root.verdict.attacker_moves))
    assert terms[((0, 1), (1, 1))] == max(terms.values())
    # Deeper into the trap, or playing elsewhere (the general then takes the captain), loses.
    assert terms[((0, 1), (0, 0))] < 0
    assert terms[((4, 0), (4, 1))] == pytest.approx(chase_value(Rank.CAPTAIN, root.verdict.attacker_moves)
                                                    - chase_value(Rank.CAPTAIN, 1))


def test_a_defender_out_of_the_scans_reach_is_still_chased() -> None:
    # The root's pairs are followed after the move whatever the distance: stepping from 3 to 4 squares
    # away in a closed trap is no escape.
    pos = chase_board([(0, 2, RED, int(Rank.CAPTAIN)), (0, 5, BLUE, int(Rank.GENERAL))])
    (root,) = scan(pos, LIMIT)
    after = verdict_after(pos, (0, 2), (0, 1))
    assert after is not None and after.captured and after.attacker_moves is not None
    assert root.verdict.attacker_moves is not None
    term = chase_terms(pos)[((0, 2), (0, 1))]
    assert term == pytest.approx(chase_value(Rank.CAPTAIN, root.verdict.attacker_moves)
                                 - chase_value(Rank.CAPTAIN, after.attacker_moves))
    assert term < chase_value(Rank.CAPTAIN, root.verdict.attacker_moves)   # not counted as an escape


@pytest.mark.parametrize(("border_piece", "counted"), [
    ((2, 3, BLUE, int(Rank.UNKNOWN)), False),   # may be a stronger piece: it protects the captain
    ((2, 3, BLUE, int(Rank.SERGEANT)), False),  # known, weaker than the colonel: cannot protect it
    ((2, 3, BLUE, int(Rank.GENERAL)), False),   # beats the colonel
    ((2, 3, RED, int(Rank.BOMB)), True),        # our own piece: part of the barrier
])
def test_risk_management_drops_a_chase_a_border_piece_may_protect(border_piece: Piece, counted: bool) -> None:
    lakes = tuple(sq for sq in CORRIDOR if sq != border_piece[:2])
    pos = chase_board([(0, 1, RED, int(Rank.COLONEL)), (0, 4, BLUE, int(Rank.CAPTAIN)), border_piece], lakes)
    (root,) = [c for c in scan(pos, LIMIT) if c.defender.col == 0]
    assert root.verdict.captured
    protected = bool(root.protectors)
    assert protected == (border_piece[2] == BLUE and border_piece[3] != int(Rank.SERGEANT))
    terms = chase_terms(pos)
    assert (terms[((0, 1), (0, 2))] > 0) == (counted or not protected)


def test_a_sure_escape_stops_appendix_1_pulling_the_chaser() -> None:
    # Rule 10 pulls our major towards their known captain (8). Behind a wall of lakes the captain is out
    # of reach ("separate"); on an open board it reaches a refuge: the pull stops (the pointless chase).
    walled = board([(0, 4, RED, int(Rank.MAJOR)), (2, 5, BLUE, int(Rank.CAPTAIN))], width=4, height=8,
                   lakes=tuple((1, row) for row in range(8)))
    open_board = board([(0, 4, RED, int(Rank.MAJOR)), (2, 5, BLUE, int(Rank.CAPTAIN))], width=8, height=8)
    for pos, reason in ((walled, "separate"), (open_board, "refuge")):
        assert [c.verdict.reason for c in scan(pos, LIMIT)] == [reason]
        pf, pb = probs(pos)
        up = [move(pos, (0, 4), UP)]
        on = StrategicParams(chase_weight=1.0)
        without = strategic_scores_py(pos, RED, pf, pb, up, lookahead=False)[0]
        fast = strategic_scores_py(pos, RED, pf, pb, up, lookahead=False, params=on, piece_values=VALUES,
                                   two_squares=LIMIT)[0]
        slow = ref.strategic_scores(pos, RED, pf, pb, up, lookahead=False, params=on, piece_values=VALUES,
                                    two_squares=LIMIT)[0]
        assert without > 0.0
        assert fast == slow == 0.0


def test_an_enforced_chase_keeps_appendix_1_pulling() -> None:
    # In the closed trap the colonel's pull towards the captain (rule 12) stays; the model adds its term.
    pos = chase_board([(0, 1, RED, int(Rank.COLONEL)), (0, 4, BLUE, int(Rank.CAPTAIN))])
    (root,) = scan(pos, LIMIT)
    after = verdict_after(pos, (0, 1), (0, 2))
    assert root.verdict.attacker_moves is not None and after is not None and after.attacker_moves is not None
    pf, pb = probs(pos)
    up = [move(pos, (0, 1), UP)]
    without = strategic_scores_py(pos, RED, pf, pb, up, lookahead=False)[0]
    with_model = strategic_scores_py(pos, RED, pf, pb, up, lookahead=False, params=StrategicParams(chase_weight=1.0),
                                     piece_values=VALUES, two_squares=LIMIT)[0]
    assert without > 0.0
    assert with_model - without == pytest.approx(chase_value(Rank.CAPTAIN, after.attacker_moves)
                                                 - chase_value(Rank.CAPTAIN, root.verdict.attacker_moves))


def test_the_chase_model_is_off_without_weight_rule_or_values() -> None:
    pos = chase_board([(0, 1, RED, int(Rank.COLONEL)), (0, 4, BLUE, int(Rank.CAPTAIN))])
    pf, pb = probs(pos)
    moves = pos.moves()
    plain = strategic_scores_py(pos, RED, pf, pb, moves)
    on = StrategicParams(chase_weight=1.0)
    assert strategic_scores_py(pos, RED, pf, pb, moves, params=on, piece_values=VALUES) == plain  # no rule
    assert strategic_scores_py(pos, RED, pf, pb, moves, params=on, two_squares=LIMIT) == plain    # no values
    assert strategic_scores_py(pos, RED, pf, pb, moves, piece_values=VALUES, two_squares=LIMIT) == plain
    assert strategic_scores_py(pos, RED, pf, pb, moves, params=on, piece_values=VALUES, two_squares=LIMIT) != plain


def test_the_reference_chase_model_wants_the_side_to_move() -> None:
    pos = chase_board([(0, 1, RED, int(Rank.COLONEL)), (0, 4, BLUE, int(Rank.CAPTAIN))])
    pf, pb = probs(pos)
    with pytest.raises(ValueError, match="side to move"):
        ref.strategic_scores(pos, BLUE, pf, pb, [], params=StrategicParams(chase_weight=1.0), piece_values=VALUES,
                             two_squares=LIMIT)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    plies=st.integers(0, 400),
    hide=st.floats(0.0, 1.0),
    classic=st.booleans(),
    weight=st.sampled_from([0.25, 1.0]),
    hunt=st.booleans(),
)
def test_compiled_equals_reference_with_the_chase_model(seed: int, plies: int, hide: float, classic: bool,
                                                        weight: float, hunt: bool) -> None:
    pos = _view(seed, plies, hide, classic, True)
    pf, pb = [0.0] * pos.piece_count, [0.1] * pos.piece_count
    moves = pos.moves()
    params = StrategicParams(chase_weight=weight, hunt_force=32.0 if hunt else 0.0)
    fast = strategic_scores_py(pos, pos.side, pf, pb, moves, params=params, piece_values=VALUES, two_squares=LIMIT)
    slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, params=params, piece_values=VALUES, two_squares=LIMIT)
    assert fast == pytest.approx(slow, abs=1e-9)


def test_random_positions_exercise_the_chase_model() -> None:
    # The property above is not vacuous: on seeded random games with every rank known, the model changes
    # the scores of many positions, both by its terms and by dropped pulls.
    changed = 0
    for seed in range(30):
        pos = _view(seed, 150 + 10 * seed, 0.0, True, True)
        pf, pb = [0.0] * pos.piece_count, [0.1] * pos.piece_count
        moves = pos.moves()
        on = strategic_scores_py(pos, pos.side, pf, pb, moves, params=StrategicParams(chase_weight=1.0),
                                 piece_values=VALUES, two_squares=LIMIT)
        off = strategic_scores_py(pos, pos.side, pf, pb, moves, piece_values=VALUES, two_squares=LIMIT)
        slow = ref.strategic_scores(pos, pos.side, pf, pb, moves, params=StrategicParams(chase_weight=1.0),
                                    piece_values=VALUES, two_squares=LIMIT)
        assert on == pytest.approx(slow, abs=1e-9)
        changed += on != off
    assert changed >= 10


def test_the_search_runner_hands_the_chase_model_its_values_and_the_rule() -> None:
    # The engine's path (SearchRunner.strategic, as the facade calls it): their known general next to our
    # captain in a two-column trap (blue bombs on C1..C4) that opens at the top. With the model the
    # captain steps onto the other line, the way out (the unit test above on a small board).
    red = {Square.parse("A2"): Rank.CAPTAIN, Square.parse("J1"): Rank.FLAG, Square.parse("H1"): Rank.SERGEANT}
    blue = {Square.parse("A3"): Rank.GENERAL, Square.parse("J10"): Rank.FLAG, Square.parse("J7"): Rank.SCOUT}
    blue |= {Square(2, row): Rank.BOMB for row in range(4)}
    view = Game(RulesOptions(ruleset=CLASSIC, two_squares=5), red, blue, validate_setups=False)  # all known
    legal = view.legal_codes()
    moves = [view.move_of(code) for code in legal]
    settings = builtin_settings("perspecto")
    runner = SearchRunner(view.position, int(Side.RED), initial_counts(view), search_params(settings, two_squares=5))
    plain = runner.strategic(legal, StrategicParams())
    chasing = runner.strategic(legal, StrategicParams(chase_weight=1.0))
    assert moves[max(range(len(legal)), key=chasing.__getitem__)] == Move.parse("A2-B2")
    assert chasing[moves.index(Move.parse("A2-B2"))] > plain[moves.index(Move.parse("A2-B2"))]
    assert chasing[moves.index(Move.parse("A2-A1"))] < plain[moves.index(Move.parse("A2-A1"))]
    # Without the two-squares rule in the search there is no chase to model.
    unruled = SearchRunner(view.position, int(Side.RED), initial_counts(view), search_params(settings, two_squares=0))
    assert unruled.strategic(legal, StrategicParams(chase_weight=1.0)) == plain
