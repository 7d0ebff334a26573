"""Suspected raiders (not in the thesis): unseen pieces at our flag's door are searched as miners."""

from __future__ import annotations

import time

import pytest

from engine_ext.engine.facade import Engine
from engine_ext.engine.raiders import flag_gates, raid_suspects, searched_position
from engine_ext.engine.settings import builtin_settings
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import Move, Square
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC

MINERS = 5  # a classic army's miners


def squares(placement: dict[str, Rank]) -> dict[Square, Rank]:
    return {Square.parse(name): rank for name, rank in placement.items()}


# Our flag on J1 behind bombs on I1 and J2 (the gates); a lieutenant on I3.
RED = {"J1": Rank.FLAG, "I1": Rank.BOMB, "J2": Rank.BOMB, "I3": Rank.LIEUTENANT, "A2": Rank.SERGEANT}
BLUE = {"J5": Rank.MINER, "I6": Rank.MINER, "F6": Rank.CAPTAIN, "A10": Rank.FLAG, "B10": Rank.MARSHAL,
        "A9": Rank.BOMB}


def red_view(moves: list[str], red: dict[str, Rank] | None = None, blue: dict[str, Rank] | None = None) -> Game:
    """Red's view after ``moves`` (blue's pieces unknown to red until they fight)."""
    game = RefereedGame(RulesOptions(ruleset=CLASSIC), squares(red or RED), squares(blue or BLUE),
                        validate_setups=False)
    for text in moves:
        game.play(Move.parse(text))
    return game.view(Side.RED)


def pid_at(game: Game, name: str) -> int:
    square = Square.parse(name)
    return game.position.piece_id(game.position.square(square.col, square.row))


def test_the_gates_are_the_bombs_beside_the_flag_or_the_flag_itself() -> None:
    view = red_view([])
    assert sorted(flag_gates(view.position, int(Side.RED))) == [(8, 0), (9, 1)]
    bare = red_view([], red={"J1": Rank.FLAG, "E4": Rank.BOMB, "A2": Rank.SERGEANT})
    assert flag_gates(bare.position, int(Side.RED)) == [(9, 0)]
    flagless = red_view([], red={"E4": Rank.BOMB, "A2": Rank.SERGEANT})
    assert flag_gates(flagless.position, int(Side.RED)) == []


def test_a_moved_unseen_piece_next_to_a_gate_is_a_suspect() -> None:
    # Blue's miner walks J5-J4-J3: at J4 it is two steps from the gate J2, at J3 one.
    two_away = red_view(["A2-A3", "J5-J4"])
    at_door = red_view(["A2-A3", "J5-J4", "A3-A4", "J4-J3"])
    red = int(Side.RED)
    assert raid_suspects(two_away.position, red, 1, MINERS) == []
    assert raid_suspects(two_away.position, red, 2, MINERS) == [pid_at(two_away, "J4")]
    assert raid_suspects(at_door.position, red, 1, MINERS) == [pid_at(at_door, "J3")]
    assert raid_suspects(at_door.position, red, -1, MINERS) == []  # off
    # The captain on F6 has not moved, so it is no suspect even within the radius.
    assert pid_at(at_door, "F6") not in raid_suspects(at_door.position, red, 9, MINERS)


def test_no_more_suspects_than_unseen_miners_nearest_first() -> None:
    view = red_view(["A2-A3", "J5-J4", "A3-A4", "J4-J3", "A4-A5", "I6-I5", "A5-A6", "I5-I4"])
    red = int(Side.RED)
    j3, i4 = pid_at(view, "J3"), pid_at(view, "I4")
    assert raid_suspects(view.position, red, 3, MINERS) == [j3, i4]  # J3 one step from J2, I4 three from I1
    assert raid_suspects(view.position, red, 3, 1) == [j3]
    assert raid_suspects(view.position, red, 3, 0) == []


def test_a_seen_miner_counts_against_the_unseen_ones() -> None:
    # Blue's miner on A5 attacks our sergeant and loses: red has seen one miner (now captured), so of
    # one miner at the start none is left unseen and the piece at the door is no suspect.
    blue = {**BLUE, "A5": Rank.MINER}
    red = {**RED, "A4": Rank.SERGEANT}
    view = red_view(["A2-A3", "J5-J4", "A3-A2", "J4-J3", "A2-A3", "A5-A4"], red=red, blue=blue)
    assert view.position.piece(pid_at(view, "A4"))[2] == int(Rank.SERGEANT)  # our sergeant won
    side = int(Side.RED)
    assert raid_suspects(view.position, side, 1, 2) == [pid_at(view, "J3")]
    assert raid_suspects(view.position, side, 1, 1) == []


def test_the_searched_position_is_a_copy_with_the_suspects_as_miners() -> None:
    view = red_view(["A2-A3", "J5-J4", "A3-A4", "J4-J3"])
    j3 = pid_at(view, "J3")
    searched, suspects = searched_position(view.position, int(Side.RED), 1, MINERS)
    assert suspects == [j3]
    assert searched.piece(j3)[2] == int(Rank.MINER)
    assert view.position.piece(j3)[2] == int(Rank.UNKNOWN)  # the view itself is untouched
    same, none = searched_position(view.position, int(Side.RED), -1, MINERS)
    assert same is view.position and none == []


@pytest.mark.parametrize("radius", [-1, 1])
def test_the_engine_answers_the_raid_only_when_it_searches_the_raider(radius: int) -> None:
    # Blue's unseen piece stands next to our bomb J2, our flag behind it; our lieutenant is next to
    # it. Searched as a miner, it takes J2 and then the flag unless the lieutenant takes it: the move
    # saves the flag (own_flag_value 1000 in the perspecto profile). Averaged over blue's pool, the
    # opponent's view never plays the raid and the search sees no flag at stake.
    view = red_view(["A2-A3", "J5-J4", "A3-A4", "J4-J3"])
    settings = builtin_settings("perspecto").model_copy(update={
        "max_depth": 5, "seed": 3, "threads": 1, "random_amplitude": 0.0, "raider_radius": radius})
    engine = Engine(settings)
    engine.start_game(view, Side.RED)
    now = time.monotonic()
    choice = engine.choose_move(view, now + 30.0, now + 60.0)
    said = any("searched as miners" in reason and "J3" in reason for reason in choice.reasons)
    assert said == (radius >= 0)
    if radius >= 0:
        assert choice.move == Move.parse("I3-J3") and choice.value >= 1000.0
    else:
        assert choice.value < 1000.0
