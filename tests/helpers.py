"""Test helpers: random games on any ruleset."""

from __future__ import annotations

import random

from engine_ext.game import Game, RulesOptions
from engine_ext.pieces import Side
from engine_ext.rulesets import Ruleset


def random_game(ruleset: Ruleset, seed: int, **options: object) -> Game:
    rng = random.Random(seed)
    opts = RulesOptions(ruleset=ruleset, **options)  # type: ignore[arg-type]
    return Game(opts, ruleset.random_placement(Side.RED, rng), ruleset.random_placement(Side.BLUE, rng))


def play_random(game: Game, plies: int, seed: int) -> Game:
    rng = random.Random(seed)
    for _ in range(plies):
        if game.result is not None:
            break
        game.play(rng.choice(game.legal_moves()))
    return game


def board_code(pieces: dict[str, str], ruleset: Ruleset | None = None) -> str:
    """A board code with the given Gravon letters on the named squares, e.g. {"A1": "M", "A10": "Y"}."""
    from engine_ext.rulesets import CLASSIC, Square

    ruleset = ruleset or CLASSIC
    letters = []
    for row in range(ruleset.height):
        for col in range(ruleset.width):
            sq = Square(col, row)
            letters.append("_" if ruleset.is_lake(sq) else pieces.get(str(sq), "A"))
    return "".join(letters)
