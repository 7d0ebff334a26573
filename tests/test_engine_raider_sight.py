"""Raider sight (issue 32, docs/engine.md *Raider sight*): the opponent's general and marshal that we know
and that stand in our half are searched, in the opponent's view, as knowing every piece of ours they meet.
The knowledge prices their attacks exactly (and no other piece's); the compiled search agrees with the
plain reference (same values, same nodes, same move); and in a position where the raider stands next to
our unshown captain the search with sight moves the captain away, where without it it does not."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine_ext.engine.knowledge import KnowledgeView
from engine_ext.engine.reference_search import Reference, best_index
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import SearchParams, builtin_settings, search_params
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank
from tests.test_engine_knowledge import build

OWN, OPP = 0, 1
N_RANKS = 13
F, B, SPY, SC, MI, SG, CA, GE, MA, U = (Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT,
                                        Rank.CAPTAIN, Rank.GENERAL, Rank.MARSHAL, Rank.UNKNOWN)
# The MINI counts a side: F1 B2 S1 Sc2 Mi2 Sg1 Ca1 Ge1 Ma1.
MINI = (F, B, B, SPY, SC, SC, MI, MI, SG, CA, GE, MA)
RED = {"A1": F, "B1": B, "C1": B, "D1": SPY, "E1": SC, "F1": SC, "A2": MI, "B2": MI, "C2": SG, "D2": CA,
       "E2": GE, "F2": MA}


def counts() -> list[int]:
    out = [0] * N_RANKS
    for rank in MINI:
        out[int(rank)] += 1
    return out


def blue_with(raider: str, rank: Rank) -> dict[str, Rank]:
    """Blue's eleven other pieces unknown on its back two rows, one known ``rank`` on ``raider``."""
    squares = [f"{c}{r}" for r in (8, 7) for c in "ABCDEFGH"][:11]
    blue = {sq: U for sq in squares}
    blue[raider] = rank
    return blue


def view(raider: str, rank: Rank, sight: bool) -> tuple[KnowledgeView, dict[str, int]]:
    pos, ids = build(RED, blue_with(raider, rank))
    return KnowledgeView(pos, 0, counts(), moved=[ids[raider]], beliefs=True, raider_sight=sight), ids


# --- the knowledge --------------------------------------------------------------------------------------


@pytest.mark.parametrize("rank", [MA, GE])
def test_a_known_top_piece_in_our_half_prices_its_attacks_as_if_it_saw(rank: Rank) -> None:
    # Blue's known marshal (general) on D3, our half of the 8 x 8 board, next to our unshown captain
    # (D2): in the opponent's view it takes the captain for certain; without sight the pools price it.
    kn, ids = view("D3", rank, True)
    assert kn.attack_outcomes(OPP, ids["D3"], ids["D2"]) == (1.0, 0.0, 0.0, 0.0)
    assert kn.attack_outcomes(OPP, ids["D3"], ids["C1"]) == (0.0, 1.0, 0.0, 0.0)  # a bomb: it knows
    # ... and our unshown piece that attacks it is known to it as well: our spy takes a marshal.
    assert kn.attack_outcomes(OPP, ids["D1"], ids["D3"]) == ((1.0, 0.0, 0.0, 0.0) if rank == MA
                                                             else (0.0, 1.0, 0.0, 0.0))
    plain, _ = view("D3", rank, False)
    assert plain.attack_outcomes(OPP, ids["D3"], ids["D2"])[0] < 1.0
    # Our own view knows our pieces anyway: sight changes nothing there.
    assert kn.attack_outcomes(OWN, ids["D3"], ids["D2"]) == plain.attack_outcomes(OWN, ids["D3"], ids["D2"])


@pytest.mark.parametrize(("raider", "rank"), [("D5", MA), ("D3", Rank.COLONEL), ("D3", CA)])
def test_no_sight_for_a_piece_in_its_own_half_or_below_general(raider: str, rank: Rank) -> None:
    # Rows 1..4 are our half of the 8 x 8 board; D5 is the opponent's. A colonel or captain gets none.
    kn, ids = view(raider, rank, True)
    plain, _ = view(raider, rank, False)
    for target in ("D2", "C2", "A2"):
        assert kn.attack_outcomes(OPP, ids[raider], ids[target]) == plain.attack_outcomes(
            OPP, ids[raider], ids[target])


def test_blue_sees_our_half_from_its_side() -> None:
    # The same rule for blue to move: our half is then rows 5..8; red's known marshal on D6 is sighted.
    red = {"D6": MA, "A1": F}
    blue = {"D7": CA, "A8": F, "H8": B}
    pos, ids = build(red, blue, side=1)
    initial = [0] * N_RANKS
    for rank in (F, B, CA, MA):
        initial[int(rank)] = 1
    on = KnowledgeView(pos, 1, initial, moved=[ids["D6"]], raider_sight=True)
    off = KnowledgeView(pos, 1, initial, moved=[ids["D6"]])
    assert on.attack_outcomes(OPP, ids["D6"], ids["D7"]) == (1.0, 0.0, 0.0, 0.0)
    assert off.attack_outcomes(OPP, ids["D6"], ids["D7"])[0] < 1.0


# --- the search: compiled against the reference ------------------------------------------------------------


def params_for(**changes: Any) -> SearchParams:
    settings_ = builtin_settings("perspecto").model_copy(
        update={"random_amplitude": 0.0, "raider_sight": True, **changes})
    return search_params(settings_, own_fear=0.3, est_opp_fear=0.35, est_own_fear=0.32, two_squares=5)


def raid_position(seed: int) -> tuple[Position, list[int]]:
    """Red's MINI army shuffled on rows 1..3 of an 8 x 8 board, blue's unknown on rows 7..8, and blue's
    known marshal and general (both having moved) on free squares of rows 2..5; red to move."""
    rng = random.Random(seed)
    red_squares = rng.sample([f"{c}{r}" for r in (1, 2, 3) for c in "ABCDEFGH"], len(MINI))
    red = dict(zip(red_squares, rng.sample(MINI, len(MINI)), strict=True))
    free = [f"{c}{r}" for r in (2, 3, 4, 5) for c in "ABCDEFGH" if f"{c}{r}" not in red]
    raiders = rng.sample(free, 2)
    blue_squares = rng.sample([f"{c}{r}" for r in (7, 8) for c in "ABCDEFGH"], len(MINI) - 2)
    blue = {sq: U for sq in blue_squares}
    blue[raiders[0]], blue[raiders[1]] = MA, GE
    pos, ids = build(red, blue)
    return pos, [ids[raiders[0]], ids[raiders[1]]]


def legal(pos: Position) -> list[int]:
    return list(pos.moves())


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_compiled_search_matches_reference_with_raider_sight(seed: int) -> None:
    pos, raiders = raid_position(seed)
    params = params_for()
    moves = legal(pos)
    compiled = SearchRunner(pos, 0, counts(), params, moved=raiders)
    values = compiled.search_depth(moves, 5)
    reference = Reference(pos, 0, counts(), params, moved=raiders)
    expected = reference.search(moves, 5)
    assert values == pytest.approx(expected, abs=1e-9)
    assert compiled.nodes == reference.nodes
    assert best_index(values) == best_index(expected)
    assert reference.sighted == {pid for pid in raiders if 2 * pos.coords(pos.piece(pid)[0])[1] < 7}


def test_raider_sight_changes_the_search() -> None:
    # Over the seeds above, sight changes some root move's value: the setting is no no-op.
    changed = 0
    for seed in range(1, 7):
        pos, raiders = raid_position(seed)
        moves = legal(pos)
        on = SearchRunner(pos, 0, counts(), params_for(), moved=raiders).search_depth(moves, 4)
        off = SearchRunner(pos, 0, counts(), params_for(raider_sight=False), moved=raiders).search_depth(moves, 4)
        changed += on != pytest.approx(off, abs=1e-9)
    assert changed > 0


# --- what it is for ------------------------------------------------------------------------------------------


def test_the_captain_next_to_a_known_marshal_flees_with_sight() -> None:
    # Blue's known marshal has walked to G3, next to our unshown, unmoved captain on G2, which has room to
    # step aside (G1, H2) and nothing of ours that could take the marshal near it. Without sight our search
    # expects the opponent to fear a bomb on G2: a scout's move scores as well as the captain's flight.
    # With sight it expects the attack: only the captain's moves are worth anything over standing still.
    red = {"A1": F, "B1": B, "C1": B, "D1": SPY, "E1": SC, "F1": SC, "A2": MI, "B2": MI, "C2": SG, "G2": CA,
           "E2": GE, "F2": MA}
    pos, ids = build(red, blue_with("G3", MA))
    moves = legal(pos)
    captain_sq = pos.piece(ids["G2"])[0]
    flights = [i for i, move in enumerate(moves) if move & 0xFF == captain_sq]
    others = [i for i in range(len(moves)) if i not in flights]
    best = {}
    for sight in (False, True):
        values = SearchRunner(pos, 0, counts(), params_for(raider_sight=sight, threads=1),
                              moved=[ids["G3"]]).search_depth(moves, 5)
        best[sight] = (max(values[i] for i in flights), max(values[i] for i in others))
    flight, other = best[True]
    assert flight > other
    flight, other = best[False]
    assert other >= flight
