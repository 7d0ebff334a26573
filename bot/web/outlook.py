"""Red's winning chances after each move, on one scale for every engine (the web view's graph).

The engines do not share a scale: our engine's ``info.value`` is the chosen move's gain over the passive
move plus a strategic score, in its own units (a relative figure, not a judgement of the position), the
random mover and the UCC programs send none. So the graph does not read the engines at all: it reads the
referee's board, the same way for every game, whoever plays it.

Each side's **material** is the sum of its movable pieces on the board, each at its rank's total value on
the thesis's scale (rank value plus special value, Stengård 2006, Table 4: ``engine_ext/engine/scales.py``):
spy 40, scout 17, miner 30, sergeant 15, lieutenant 20, captain 25, major 35, colonel 55, general 85,
marshal 95. Bombs and the flag count nothing (they cannot win a game, only lose it slowly). Red's share of
the difference, ``d = (red - blue) / (red + blue)`` (from -1 to 1), goes through a logistic:

    P(red wins) = 1 / (1 + exp(-STEEPNESS * d))

With ``STEEPNESS`` 8, losing the marshal with all else equal (``d`` about -0.05 on the classic board) is
40 %, a quarter of the army (by value) down 24 %, half of it 6.5 % (tests/test_web_outlook.py). A game the
rules ended (the flag taken, a side with no move) stands at 1 or 0 for its winner, 0.5 for a draw (no
movable pieces, the move limit). It is an estimate for spectators, the same for all engines and rulesets,
and hides nothing: a viewer of the referee's view sees every piece it counts.
"""

from __future__ import annotations

import math

from engine_ext.engine.scales import THESIS
from engine_ext.rules.game import Game
from engine_ext.rules.pieces import Rank, Side

STEEPNESS = 8.0
# What a piece on the board is worth to the outlook; ranks not named (bomb, flag) are worth nothing.
MATERIAL: dict[Rank, float] = {
    rank: THESIS.total(rank)
    for rank in (Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN, Rank.MAJOR,
                 Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL)
}


def material(game: Game, side: Side) -> float:
    """The value of ``side``'s movable pieces on the referee's board."""
    return sum(MATERIAL.get(rank, 0.0) for _side, rank in game.pieces(side).values())


def red_chance(game: Game) -> float:
    """Red's chance to win, from 0 to 1, on the referee's board (both setups known), rounded to 4 places."""
    if game.result is not None:
        winner = game.result.winner
        return 0.5 if winner is None else 1.0 if winner == Side.RED else 0.0
    red, blue = material(game, Side.RED), material(game, Side.BLUE)
    if red + blue <= 0:
        return 0.5
    share = (red - blue) / (red + blue)
    return round(1.0 / (1.0 + math.exp(-STEEPNESS * share)), 4)
