"""Named scenarios for the two-squares and more-squares rules (2008 tournament pseudocode)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.rules.game import Game, GameOver, IllegalMove, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Square
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


# Two red lieutenants (A1, A2) swap squares while blue's sergeants (A3, C2) evade every chasing move, so
# red's more-squares list is never emptied. After eight plies A2-A1 recreates the position after red's
# first move by what stands on each square (a lieutenant on A1 and one on B2), though not piece by piece.
SWAP = {"A1": "G", "A2": "G", "J1": "M", "A3": "R", "C2": "R", "A10": "Y", "J10": "P"}
SWAP_MOVES = ["A2-B2", "C2-C1", "A1-B1", "C1-C2", "B2-A2", "A3-B3", "B1-B2", "B3-A3"]


class TestTwoReadingsOfAPosition:
    """Issue 19.13: our own moves must be legal whether a server keys a position by piece identity or by
    what stands on each square; the opponent is judged by the permissive identity reading."""

    def swapped(self) -> Game:
        game = game_with(SWAP, two_squares=5, more_squares=True)
        play(game, *SWAP_MOVES)
        return game

    def test_the_identity_reading_allows_the_swap(self) -> None:
        game = self.swapped()
        assert allowed(game, "A2-A1")  # how the opponent's moves are judged
        game.check_move(Move.parse("A2-A1"))

    def test_we_never_send_the_swap(self) -> None:
        game = self.swapped()
        sendable = game.sendable_moves()
        assert Move.parse("A2-A1") not in sendable
        assert set(sendable) == set(game.legal_moves()) - {Move.parse("A2-A1")}

    def test_a_random_mover_never_chooses_it(self) -> None:
        from bot.daemon.engine_interface import RandomEngine, SearchBudget

        game = self.swapped()
        chosen = {RandomEngine(seed).choose_move(game, SearchBudget.starting_now(1.0, 2.0)) for seed in range(200)}
        assert Move.parse("A2-A1") not in chosen
        assert len(chosen) > 1

    def test_the_search_engine_roots_only_at_sendable_moves(self) -> None:
        import time

        from engine_ext.engine.facade import Engine

        game = self.swapped()
        engine = Engine("minimax")
        choice = engine.choose_move(game, time.monotonic() + 0.2, time.monotonic() + 2.0)
        assert choice.move in game.sendable_moves()

    def test_when_the_strict_reading_leaves_nothing_the_identity_reading_answers(self) -> None:
        game = self.swapped()
        game._repeats_by_contents = lambda code, forbidden: True  # type: ignore[method-assign]
        assert game.sendable_codes() == game.legal_codes()

    def test_the_list_empties_with_the_chase(self) -> None:
        game = self.swapped()
        play(game, "B2-C2", "J10-J9")  # blue answers far from C2: red's chase is over
        play(game, "C2-B2", "J9-J10")
        # A2-A1 is no longer a repetition of anything listed (the list holds only C2-B2's position now)
        assert game.sendable_moves() == game.legal_moves()

    def test_a_copy_keeps_the_contents_list(self) -> None:
        game = self.swapped().copy()
        assert Move.parse("A2-A1") not in game.sendable_moves()


def chase_game(seed: int, plies: int = 120) -> int:
    """A random chase in the corner A1-D4: two red lieutenants, two blue sergeants. Red mostly moves next
    to a blue piece and blue mostly evades with a piece next to red's last move, so red's more-squares
    list lives long and the two lieutenants often swap squares. At every ply: what ``sendable_moves``
    offers is legal by identity; what it holds back recreates, square by square, a board that stood
    after one of the same side's earlier moves; it offers nothing only when nothing is legal.
    Returns how many moves it held back."""
    rng = random.Random(seed)
    corner = [f"{c}{r}" for c in "ABCD" for r in range(1, 5)]
    squares = rng.sample(corner, 4)
    pieces = {squares[0]: "G", squares[1]: "G", squares[2]: "R", squares[3]: "R", "J1": "M", "J10": "Y"}
    game = game_with(pieces, two_squares=5, more_squares=True)
    boards_after: dict[Side, list[dict[Square, tuple[Side, Rank]]]] = {Side.RED: [], Side.BLUE: []}
    held_back = 0
    for _ in range(plies):
        if game.result is not None:
            break
        legal = game.legal_moves()
        sendable = game.sendable_moves()
        assert set(sendable) <= set(legal)
        assert bool(sendable) == bool(legal)
        for move in set(legal) - set(sendable):
            held_back += 1
            after = game.copy()
            after.play(move)
            assert after.pieces() in boards_after[game.side_to_move]
        side = game.side_to_move
        quiet = [m for m in legal if game.piece_at(m.to) is None and m.to.col < 4 and m.to.row < 4]
        if side == Side.RED:
            blue = list(game.pieces(Side.BLUE))
            preferred = [m for m in quiet if any(m.to.adjacent(b) for b in blue)]
        else:
            last = game.history[-1].move.to
            preferred = [m for m in quiet if m.frm.adjacent(last)]
        pool = preferred if preferred and rng.random() < 0.9 else (quiet or legal)
        game.play(rng.choice(pool))
        boards_after[side].append(game.pieces())
    return held_back


@pytest.mark.slow  # a sweep of 300 games; test_chases_at_random checks the same in the default suite
def test_chases_hold_back_exactly_the_moves_that_repeat_a_board() -> None:
    assert sum(chase_game(seed) for seed in range(300)) > 0  # the sweep does meet swaps


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_chases_at_random(seed: int) -> None:
    chase_game(seed)
