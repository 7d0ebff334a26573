"""Property tests of the compiled rules core against the plain reference rules."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, GameOver, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side, combat
from engine_ext.rules.reference_rules import ReferenceBoard
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, MINI, Ruleset, Square
from tests.helpers import board_code, random_game

RULESETS = st.sampled_from([CLASSIC, BARRAGE, MINI])
NO_REPETITION = {"two_squares": None, "more_squares": False}


def reference_of(game: Game) -> ReferenceBoard:
    return ReferenceBoard.from_pieces(
        game.options.ruleset, game.pieces(), game.side_to_move, game.options.range_attacks
    )


def core_moves(game: Game) -> set[tuple[Square, Square]]:
    return {(m.frm, m.to) for m in (game.move_of(c) for c in game.position.moves(False))}


def walk(ruleset: Ruleset, seed: int, plies: int, range_attacks: bool = True):  # type: ignore[no-untyped-def]
    """Yield the positions of one random game, ``plies`` long at most."""
    game = random_game(ruleset, seed, range_attacks=range_attacks, **NO_REPETITION)
    rng = random.Random(seed + 1)
    for _ in range(plies):
        yield game
        if game.result is not None:
            return
        game.play(rng.choice(game.legal_moves()))
    yield game


@settings(max_examples=40, deadline=None)
@given(ruleset=RULESETS, seed=st.integers(0, 10**9), range_attacks=st.booleans())
def test_generated_moves_are_exactly_the_reference_moves(ruleset: Ruleset, seed: int, range_attacks: bool) -> None:
    for game in walk(ruleset, seed, 120, range_attacks):
        if game.result is not None and game.result.reason == "flag":
            break
        assert core_moves(game) == set(reference_of(game).moves())


@settings(max_examples=30, deadline=None)
@given(ruleset=RULESETS, seed=st.integers(0, 10**9))
def test_make_unmake_restores_the_position_exactly(ruleset: Ruleset, seed: int) -> None:
    for game in walk(ruleset, seed, 80):
        pos = game.position.copy()
        before = pos.snapshot()
        for code in pos.moves(False):
            pos.make(code)
            pos.unmake()
            assert pos.snapshot() == before


@settings(max_examples=30, deadline=None)
@given(ruleset=RULESETS, seed=st.integers(0, 10**9))
def test_piece_counts_are_conserved(ruleset: Ruleset, seed: int) -> None:
    total = ruleset.piece_total * 2
    for game in walk(ruleset, seed, 150):
        lost = sum({"x": 1, "o": 1, "xo": 2}.get(rec.outcome or "", 0) for rec in game.history)
        assert len(game.pieces()) + lost == total
        # one side's live counts never exceed the ruleset's counts
        for side in Side:
            counts = Counter(r for _s, (_o, r) in game.pieces(side).items())
            for rank, n in counts.items():
                assert n <= ruleset.pieces[rank]


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**9), plies=st.integers(0, 60), ruleset=RULESETS)
def test_perft_matches_the_reference(seed: int, plies: int, ruleset: Ruleset) -> None:
    game = list(walk(ruleset, seed, plies))[-1]
    depth = 2 if ruleset is CLASSIC else 3
    assert game.position.copy().perft(depth) == reference_of(game).perft(depth)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10**9))
def test_every_legal_move_passes_check_move_and_others_fail(seed: int) -> None:
    """The facade's reasons (check_move) agree with generation, with the repetition rules on."""
    game = random_game(CLASSIC, seed)
    rng = random.Random(seed)
    for _ in range(60):
        if game.result is not None:
            break
        legal = set(game.legal_moves())
        for move in legal:
            game.check_move(move)
        # a sample of non-moves must be refused
        squares = [Square(c, r) for c in range(10) for r in range(10)]
        for _ in range(30):
            candidate = Move(rng.choice(squares), rng.choice(squares))
            if candidate in legal:
                continue
            try:
                game.check_move(candidate)
            except ValueError:
                continue
            raise AssertionError(f"{candidate} accepted but not generated")
        game.play(rng.choice(sorted(legal)))


def test_combat_table_matches_the_rule_text() -> None:
    for a in Rank:
        for d in Rank:
            if Rank.UNKNOWN in (a, d) or a in (Rank.BOMB, Rank.FLAG):
                continue
            pos = Position(3, 2, [], [(0, 0, 0, int(a)), (1, 0, 1, int(d))])
            assert pos.combat_result(pos.square(0, 0) | (pos.square(1, 0) << 8)) == combat(a, d), (a, d)


def test_special_combats() -> None:
    from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS

    assert combat(Rank.SPY, Rank.MARSHAL) == ATTACKER_WINS
    assert combat(Rank.MARSHAL, Rank.SPY) == ATTACKER_WINS
    assert combat(Rank.MINER, Rank.BOMB) == ATTACKER_WINS
    assert combat(Rank.MARSHAL, Rank.BOMB) == DEFENDER_WINS
    assert combat(Rank.SCOUT, Rank.FLAG) == ATTACKER_WINS
    assert combat(Rank.CAPTAIN, Rank.CAPTAIN) == BOTH_DIE
    assert combat(Rank.SERGEANT, Rank.LIEUTENANT) == DEFENDER_WINS


def test_game_over_conditions() -> None:
    opts = RulesOptions(two_squares=None, more_squares=False)
    # Red scout in line with the blue flag: the range attack takes it and wins.
    game = Game.from_board_code(board_code({"A1": "M", "B1": "N", "A5": "D", "A10": "Y", "J10": "S"}), opts)
    assert game.result is None
    game.play(Move.parse("A5-A10"))
    assert game.result == GameOver(Side.RED, "flag")
    # Only bombs and flags on both sides: nobody can move, a draw.
    game = Game.from_board_code(board_code({"A1": "M", "B1": "B", "A10": "Y", "B10": "N"}), opts)
    assert game.result == GameOver(None, "no_movable_pieces")
    # Red to move with only a flag and a bomb while blue has a scout: red cannot move and loses.
    game = Game.from_board_code(board_code({"A1": "M", "B1": "B", "A10": "Y", "B10": "P"}), opts)
    assert game.result == GameOver(Side.BLUE, "no_moves")
    # A piece boxed in by its own bombs cannot move either.
    game = Game.from_board_code(board_code({"A1": "F", "A2": "B", "B1": "B", "J1": "M", "A10": "Y", "B10": "P"}), opts)
    assert game.result == GameOver(Side.BLUE, "no_moves")


def test_move_limit_draws() -> None:
    game = random_game(MINI, 5, move_limit=6, two_squares=None, more_squares=False)
    rng = random.Random(1)
    while game.result is None:
        game.play(rng.choice(game.legal_moves()))
    assert game.ply <= 6
    if game.ply == 6 and game.result.reason not in ("flag", "no_moves", "no_movable_pieces"):
        assert game.result.winner is None and game.result.reason == "move_limit"
