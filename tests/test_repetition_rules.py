"""Named scenarios for the two-squares and more-squares rules (2008 tournament pseudocode)."""

from __future__ import annotations

import pytest

from engine_ext.game import Game, GameOver, IllegalMove, RulesOptions
from engine_ext.notation import Move
from engine_ext.pieces import Side
from tests.helpers import board_code


def play(game: Game, *moves: str) -> None:
    for text in moves:
        game.play(Move.parse(text))


def allowed(game: Game, text: str) -> bool:
    return Move.parse(text) in game.legal_moves()


# Red: lieutenant A4, scout B4, flag J1. Blue: flag A10, scouts J7 and I10 to pass time with
# moves that never repeat a pair of squares.
BASE = {"A4": "G", "B4": "D", "J1": "M", "A10": "Y", "J7": "P", "I10": "P"}
BLUE_WAITING = ["J7-J6", "J6-J5", "J5-J4", "J4-J3", "J3-J2", "I10-I9", "I9-I8", "I8-I7"]


def game_with(pieces: dict[str, str], **options: object) -> Game:
    return Game.from_board_code(board_code(pieces), RulesOptions(**options))  # type: ignore[arg-type]


class TestTwoSquares:
    def test_sixth_move_between_two_squares_is_forbidden(self) -> None:
        game = game_with(BASE, two_squares=5, more_squares=False)
        red = ["A4-A5", "A5-A4", "A4-A5", "A5-A4", "A4-A5"]
        for r, b in zip(red, BLUE_WAITING, strict=False):
            play(game, r, b)
        assert not allowed(game, "A5-A4")
        with pytest.raises(IllegalMove, match="two-squares"):
            game.check_move(Move.parse("A5-A4"))
        # the same piece may still leave the pair of squares
        assert allowed(game, "A5-A6")

    def test_thesis_limit_of_three(self) -> None:
        game = game_with(BASE, two_squares=3, more_squares=False)
        for r, b in zip(["A4-A5", "A5-A4", "A4-A5"], BLUE_WAITING, strict=False):
            play(game, r, b)
        assert not allowed(game, "A5-A4")

    def test_five_moves_are_allowed(self) -> None:
        game = game_with(BASE, two_squares=5, more_squares=False)
        for r, b in zip(["A4-A5", "A5-A4", "A4-A5", "A5-A4"], BLUE_WAITING, strict=False):
            play(game, r, b)
        assert allowed(game, "A4-A5")

    def test_another_move_in_between_resets_the_count(self) -> None:
        game = game_with(BASE, two_squares=3, more_squares=False)
        for r, b in zip(["A4-A5", "A5-A4", "B4-B3", "A4-A5", "A5-A4"], BLUE_WAITING, strict=False):
            play(game, r, b)
        assert allowed(game, "A4-A5")

    def test_scout_moving_along_a_line(self) -> None:
        game = game_with(BASE, two_squares=5, more_squares=False)
        red = ["B4-B8", "B8-B4", "B4-B8", "B8-B4", "B4-B8"]
        for r, b in zip(red, BLUE_WAITING, strict=False):
            play(game, r, b)
        assert not allowed(game, "B8-B4")
        # other squares on the same line are other pairs: ISF article 10.2 is not enforced
        assert allowed(game, "B8-B5")
        assert allowed(game, "B8-B3")
        play(game, "B8-B5", BLUE_WAITING[5])
        assert allowed(game, "B5-B4")

    def test_off_means_off(self) -> None:
        game = game_with(BASE, two_squares=None, more_squares=False)
        for r, b in zip(["A4-A5", "A5-A4"] * 4, BLUE_WAITING, strict=False):
            play(game, r, b)
        assert allowed(game, "A4-A5")

    def test_no_legal_move_left_loses(self) -> None:
        # Red's only movable piece shuttles A1-A2 between its own bombs; when the rule forbids the
        # next shuttle, red has no legal move and loses.
        pieces = {"A1": "G", "B1": "B", "B2": "B", "A3": "B", "J1": "M", "A10": "Y", "J10": "P"}
        game = game_with(pieces, two_squares=3, more_squares=False)
        blue = ["J10-J9", "J9-J8", "J8-J7", "J7-J6"]
        for r, b in zip(["A1-A2", "A2-A1", "A1-A2"], blue, strict=False):
            play(game, r, b)
        assert game.result == GameOver(Side.BLUE, "no_moves")


# Red marshal chases a blue sergeant around the square E8-F8-F9-E9.
CHASE = {"E7": "L", "F8": "R", "J1": "M", "A10": "Y", "A4": "D", "J7": "P"}


class TestMoreSquares:

    def chased_round(self) -> Game:
        game = game_with(CHASE, two_squares=5, more_squares=True)
        play(
            game,
            "E7-E8", "F8-F9",   # threat, evade
            "E8-F8", "F9-E9",
            "F8-F9", "E9-E8",
            "F9-E9", "E8-F8",
        )
        return game

    def test_chasing_move_that_repeats_a_position_is_forbidden(self) -> None:
        game = self.chased_round()
        # E9-E8 would recreate the position after red's first chasing move.
        assert not allowed(game, "E9-E8")
        with pytest.raises(IllegalMove, match="more-squares"):
            game.check_move(Move.parse("E9-E8"))

    def test_moving_back_where_the_chaser_came_from_is_allowed(self) -> None:
        game = self.chased_round()
        assert allowed(game, "E9-F9")  # reverse of the chaser's last move (ISF 11.2)

    def test_the_rule_can_be_switched_off(self) -> None:
        game = game_with(CHASE, two_squares=5, more_squares=False)
        play(game, "E7-E8", "F8-F9", "E8-F8", "F9-E9", "F8-F9", "E9-E8", "F9-E9", "E8-F8")
        assert allowed(game, "E9-E8")

    def test_chase_ends_when_the_opponent_does_not_evade(self) -> None:
        game = self.chased_round()
        # Red plays elsewhere and back; blue answers far from red's last move each time, which
        # empties red's list of forbidden positions.
        play(game, "A4-A3", "J7-J6", "A3-A4", "J6-J7")
        assert allowed(game, "E9-E8")
