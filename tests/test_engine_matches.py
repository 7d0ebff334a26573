"""Every engine must beat a random mover (the thesis's first test, Table 6: 86-14-0 for minimax).

The quick run plays the small board with time to spare, Perspecto cut to 7 plies (on a 6x6 board the
local area is the whole board); every search finishes, so the games are the same every run. The slow
run plays the classic board at half a second a move with the profiles as they are.
"""

from __future__ import annotations

import pytest

from engine_ext.engine.facade import Engine
from engine_ext.engine.settings import builtin_settings
from engine_ext.research.selfplay import play_game, semi_random_game
from engine_ext.rules.game import RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import CLASSIC, MINI

SEARCHING = ["minimax", "expectiminimax", "pemm", "perspecto"]


def match(profile: str, games: int, options: RulesOptions, move_seconds: float,
          max_depth: int | None = None) -> tuple[int, int, int]:
    wins = draws = losses = 0
    for i in range(games):
        settings = builtin_settings(profile)
        engine = Engine(settings.model_copy(update={"seed": i, "max_depth": max_depth or settings.max_depth}))
        mover = Engine(builtin_settings("random").model_copy(update={"seed": 1000 + i}))
        game = semi_random_game(options, 500 + i)
        ours = Side.RED if i % 2 == 0 else Side.BLUE
        red, blue = (engine, mover) if ours == Side.RED else (mover, engine)
        result = play_game(game, red, blue, move_seconds=move_seconds)
        if result.winner == ours:
            wins += 1
        elif result.winner is None:
            draws += 1
        else:
            losses += 1
    return wins, draws, losses


@pytest.mark.parametrize("profile", [*SEARCHING[:-1], pytest.param("perspecto", marks=pytest.mark.long)])
def test_beats_the_random_mover_on_the_small_board(profile: str) -> None:
    depth = 7 if profile == "perspecto" else None
    wins, _draws, losses = match(profile, 4, RulesOptions(ruleset=MINI, move_limit=600), 30.0, depth)
    assert wins >= 3 and losses == 0


@pytest.mark.slow
@pytest.mark.parametrize("profile", SEARCHING)
def test_beats_the_random_mover_on_the_classic_board(profile: str) -> None:
    wins, draws, losses = match(profile, 6, RulesOptions(ruleset=CLASSIC, move_limit=1000), 0.5)
    assert wins >= 5 and wins > draws + losses
