"""Setups, notation and the partial-information view of the rules facade."""

from __future__ import annotations

import random

import pytest

from engine_ext.rules.game import Game, IllegalMove, RulesOptions
from engine_ext.rules.notation import BoardCode, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, SetupError, Square, get_ruleset
from tests.helpers import board_code, play_random, random_game


class TestSquaresAndMoves:
    def test_square_round_trip(self) -> None:
        for col in range(10):
            for row in range(10):
                sq = Square(col, row)
                assert Square.parse(str(sq)) == sq
        assert str(Square.parse("j10")) == "J10"

    @pytest.mark.parametrize("bad", ["", "A", "A0", "Z5", "AA", "5A", "A13"])
    def test_bad_squares(self, bad: str) -> None:
        with pytest.raises(ValueError):
            Square.parse(bad)

    @pytest.mark.parametrize(("text", "plain"), [("A5-A6", "A5-A6"), ("A5xA6", "A5-A6"), ("B2oB3", "B2-B3"),
                                                 ("C4xoC5", "C4-C5")])
    def test_thesis_move_notation(self, text: str, plain: str) -> None:
        assert str(Move.parse(text)) == plain

    def test_rank_styles(self) -> None:
        assert Rank.MARSHAL.symbol("american") == "10"
        assert Rank.MARSHAL.symbol("european") == "1"
        assert Rank.SPY.symbol("american") == "1"
        assert Rank.SPY.symbol("european") == "S"
        assert Rank.SCOUT.symbol("european") == "9"
        assert Rank.parse("Marshal") == Rank.MARSHAL
        assert Rank.parse("10") == Rank.MARSHAL
        with pytest.raises(ValueError):
            Rank.MARSHAL.symbol("klingon")

    def test_board_code_round_trip(self) -> None:
        game = play_random(random_game(CLASSIC, 7), 50, 8)
        code = game.board_code()
        assert len(code) == 100 and code[42:44] == "__"
        again = Game.from_board_code(code)
        assert again.board_code() == code
        parsed = BoardCode.parse(code)
        assert parsed.lakes == CLASSIC.lakes

    def test_board_code_errors_name_the_square(self) -> None:
        code = board_code({"A1": "M", "A10": "Y"})
        with pytest.raises(ValueError, match="B1"):
            BoardCode.parse(code[:1] + "!" + code[2:])
        with pytest.raises(ValueError, match="lakes"):
            Game.from_board_code(code.replace("_", "A"))


class TestSetups:
    def test_random_placements_are_legal(self) -> None:
        rng = random.Random(3)
        for ruleset in (CLASSIC, BARRAGE, get_ruleset("mini")):
            for side in Side:
                ruleset.validate_setup(side, ruleset.random_placement(side, rng))

    def test_wrong_count_names_the_rank_and_counts(self) -> None:
        placement = CLASSIC.random_placement(Side.RED, random.Random(1))
        sq = next(s for s, r in placement.items() if r == Rank.SCOUT)
        placement[sq] = Rank.MARSHAL
        with pytest.raises(SetupError, match=r"has 7 scout.*needs 8"):
            CLASSIC.validate_setup(Side.RED, placement)

    def test_square_outside_the_area_is_named(self) -> None:
        placement = CLASSIC.random_placement(Side.RED, random.Random(1))
        rank = placement.pop(Square.parse("A4"))
        placement[Square.parse("A5")] = rank
        with pytest.raises(SetupError, match="A5"):
            CLASSIC.validate_setup(Side.RED, placement)

    def test_barrage_leaves_squares_empty(self) -> None:
        placement = BARRAGE.random_placement(Side.BLUE, random.Random(2))
        assert len(placement) == 8
        BARRAGE.validate_setup(Side.BLUE, placement)
        with pytest.raises(SetupError, match="flag"):
            BARRAGE.validate_setup(Side.BLUE, {sq: Rank.BOMB if r == Rank.FLAG else r for sq, r in placement.items()})

    def test_game_refuses_illegal_setup(self) -> None:
        rng = random.Random(4)
        red = CLASSIC.random_placement(Side.RED, rng)
        with pytest.raises(SetupError):
            Game(RulesOptions(), red, red)  # red's squares are not blue's area


def hidden_view(seed: int) -> tuple[Game, Game]:
    """The host's full game and blue's view of it (red hidden)."""
    full = random_game(CLASSIC, seed)
    red_squares = {sq: Rank.UNKNOWN for sq in full.pieces(Side.RED)}
    blue = {sq: r for sq, (_s, r) in full.pieces(Side.BLUE).items()}
    return full, Game(full.options, red_squares, blue)


class TestPartialInformation:
    def test_view_follows_the_host_through_a_game(self) -> None:
        """Replaying the host's results into a hidden view never contradicts it and ends the same."""
        for seed in range(5):
            full, view = hidden_view(seed)
            rng = random.Random(seed)
            while full.result is None and full.ply < 400:
                move = rng.choice(full.legal_moves())
                assert move in view.legal_moves() or full.side_to_move == Side.RED
                result = full.play(move)
                view.play_observed(move, result.attacker, result.defender)
                for sq, (side, rank) in view.pieces().items():
                    assert full.piece_at(sq) is not None
                    real = full.piece_at(sq)
                    assert real is not None and real[0] == side
                    assert rank in (Rank.UNKNOWN, real[1])
            if full.result is not None and full.result.reason == "flag":
                assert view.result == full.result

    def test_hidden_pieces_may_move_like_scouts_until_known(self) -> None:
        _full, view = hidden_view(11)
        assert view.side_to_move == Side.RED and view.is_hidden(Side.RED)
        assert Move.parse("A4-A6") in view.legal_moves()
        view.reveal(Square.parse("A4"), Rank.SERGEANT)
        assert Move.parse("A4-A6") not in view.legal_moves()
        assert Move.parse("A4-A5") in view.legal_moves()

    def test_contradicting_reports_are_refused_and_change_nothing(self) -> None:
        code = board_code({"E4": "L", "J1": "M", "E5": "R", "A10": "Y"})
        game = Game.from_board_code(code, RulesOptions())
        view = Game(game.options, {Square.parse("E4"): Rank.MARSHAL, Square.parse("J1"): Rank.FLAG},
                    {Square.parse("E5"): Rank.UNKNOWN, Square.parse("A10"): Rank.UNKNOWN}, validate_setups=False)
        before = view.render()
        with pytest.raises(IllegalMove, match="marshal"):
            view.play_observed(Move.parse("E4-E5"), Rank.GENERAL, Rank.SERGEANT)
        with pytest.raises(IllegalMove, match="both ranks"):
            view.play_observed(Move.parse("E4-E5"))
        assert view.render() == before and view.ply == 0
        result = view.play_observed(Move.parse("E4-E5"), Rank.MARSHAL, Rank.SERGEANT)
        assert result.outcome == "x"
        assert view.piece_at(Square.parse("E5")) == (Side.RED, Rank.MARSHAL)

    def test_long_move_reveals_a_scout_and_bombs_do_not_move(self) -> None:
        view = Game(RulesOptions(), {Square.parse("A1"): Rank.FLAG, Square.parse("B1"): Rank.SERGEANT},
                    {Square.parse("A10"): Rank.UNKNOWN, Square.parse("A9"): Rank.UNKNOWN}, validate_setups=False,
                    side_to_move=Side.BLUE)
        view.play_observed(Move.parse("A9-A5"))
        assert view.piece_at(Square.parse("A5")) == (Side.BLUE, Rank.SCOUT)
        view.play_observed(Move.parse("B1-B2"))
        with pytest.raises(IllegalMove, match="is a scout"):
            view.reveal(Square.parse("A5"), Rank.BOMB)
        view.play_observed(Move.parse("A10-A9"))
        with pytest.raises(IllegalMove, match="has moved"):
            view.reveal(Square.parse("A9"), Rank.BOMB)


def test_record_round_trip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    record = GameRecord(
        ruleset="classic", options={"range_attacks": True},
        red=RecordedPlayer("a", {"A1": "flag"}), blue=RecordedPlayer("b", {"A10": "flag"}),
        moves=[RecordedMove("red", "A4-A5"), RecordedMove("blue", "A7-A5", "xo", "scout", "scout")],
        result={"winner": None, "reason": "move_limit", "plies": 2},
    )
    path = tmp_path / "g.json"
    record.save(path)
    again = GameRecord.load(path)
    assert again == record
    assert again.moves[1].notation() == "A7xoA5"
