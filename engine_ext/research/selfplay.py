"""Engine against engine without the bot: the referee core's game (engine_ext/rules/referee.py) and each
side's view.

Used by the engine's tests and by the strength lab's runner (engine_ext/lab/runner.py), which plays
matches with it: ``play_game`` here is the tests' quick loop, the runner the one with limits, pairs and
records. Each side's view hides the other side's ranks until an attack or a scout's run shows them,
exactly as the bot sees a game.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine_ext.engine.facade import Engine
from engine_ext.rules.game import Game, GameOver, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.referee import Ended, MoveAccepted, MoveSubmitted, Outcome, Referee
from engine_ext.rules.rulesets import Ruleset, Square


class RefereedGame:
    """The referee's core (engine_ext/rules/referee.py) and one view a side; ``submit`` keeps all three in
    step."""

    def __init__(self, options: RulesOptions, red: Mapping[Square, Rank], blue: Mapping[Square, Rank],
                 *, validate_setups: bool = True) -> None:
        self._validate = validate_setups
        self._attach(Referee.from_position(options, red, blue, validate_setups=validate_setups))

    @classmethod
    def around(cls, core: Referee) -> RefereedGame:
        """The views of a game whose setups the core has taken (the lab's runner)."""
        game = cls.__new__(cls)
        game._validate = False  # the core checked the setups
        game._attach(core)
        return game

    def _attach(self, core: Referee) -> None:
        self.core = core
        options = core.options
        red, blue = core.setups[Side.RED], core.setups[Side.BLUE]
        hidden_red = {sq: Rank.UNKNOWN for sq in red}
        hidden_blue = {sq: Rank.UNKNOWN for sq in blue}
        self.views = (
            Game(options, red, hidden_blue, validate_setups=self._validate),
            Game(options, hidden_red, blue, validate_setups=self._validate),
        )

    @property
    def referee(self) -> Game:
        """The full-information game."""
        assert self.core.game is not None
        return self.core.game

    def view(self, side: Side) -> Game:
        return self.views[side]

    @property
    def result(self) -> GameOver | None:
        return self.referee.result

    def submit(self, move: Move) -> Outcome:
        """The side to move plays ``move``; the core's outcome (an illegal move forfeits the game)."""
        outcome = self.core.submit(MoveSubmitted(self.referee.side_to_move, move))
        if isinstance(outcome, MoveAccepted):
            for view in self.views:
                view.play_observed(move, outcome.played.attacker, outcome.played.defender)
        return outcome

    def play(self, move: Move) -> MoveResult:
        """``submit`` for a caller that knows its move is legal: ``IllegalMove`` if it was not."""
        outcome = self.submit(move)
        if not isinstance(outcome, MoveAccepted):
            raise IllegalMove(outcome.verdict.detail or str(outcome.verdict) if isinstance(outcome, Ended)
                              else f"{move}: {outcome}")
        return outcome.played


@dataclass
class MatchGame:
    winner: Side | None
    reason: str
    plies: int
    seconds: dict[Side, float] = field(default_factory=dict)
    max_move_seconds: float = 0.0


def random_setup_game(options: RulesOptions, seed: int) -> RefereedGame:
    """Both sides set up with no plan at all (the flag may stand in the front row)."""
    rng = random.Random(seed)
    ruleset = options.ruleset
    return RefereedGame(options, ruleset.random_placement(Side.RED, rng), ruleset.random_placement(Side.BLUE, rng))


_KEPT_BACK = (Rank.MINER, Rank.SCOUT, Rank.SPY, Rank.MARSHAL, Rank.GENERAL)


def semi_random_placement(ruleset: Ruleset, side: Side, rng: random.Random) -> dict[Square, Rank]:
    """The thesis's "halvslumpmässig" setup (7.1): the flag somewhere on the back row with bombs
    around it, miners, scouts, the spy and the highest ranks kept off the front row, the middle
    ranks in front; everything else at random."""
    squares = ruleset.setup_squares(side)  # front row first
    width = ruleset.width
    front = set(squares[:width])
    back = squares[-width:]
    free = set(squares)
    placement: dict[Square, Rank] = {}

    def put(sq: Square, rank: Rank) -> None:
        placement[sq] = rank
        free.discard(sq)

    counts = dict(ruleset.pieces)
    flag_sq = rng.choice(back)
    put(flag_sq, Rank.FLAG)
    counts[Rank.FLAG] -= 1
    around = [sq for sq in free if sq.adjacent(flag_sq)]
    rng.shuffle(around)
    for sq in around[: counts.get(Rank.BOMB, 0)]:
        put(sq, Rank.BOMB)
        counts[Rank.BOMB] -= 1
    rear = [sq for sq in squares if sq not in front]
    for rank in (Rank.BOMB, *_KEPT_BACK):
        for _ in range(counts.get(rank, 0)):
            spots = [sq for sq in rear if sq in free] or sorted(free, key=lambda s: (s.row, s.col))
            put(rng.choice(spots), rank)
            counts[rank] -= 1
    rest = [rank for rank, n in counts.items() for _ in range(n)]
    rng.shuffle(rest)
    # Middle ranks go in front first, then whatever squares are left.
    order = [sq for sq in squares if sq in free]
    for sq, rank in zip(order, rest, strict=False):
        put(sq, rank)
    return placement


def semi_random_game(options: RulesOptions, seed: int) -> RefereedGame:
    rng = random.Random(seed)
    ruleset = options.ruleset
    return RefereedGame(options, semi_random_placement(ruleset, Side.RED, rng),
                        semi_random_placement(ruleset, Side.BLUE, rng))


def play_game(game: RefereedGame, red: Engine, blue: Engine, *, move_seconds: float = 0.5,
              hard_seconds: float | None = None, opponents: tuple[str, str] = ("blue", "red")) -> MatchGame:
    """Play to the end (the rules' move limit draws); each move gets ``move_seconds`` (soft) and
    ``hard_seconds`` (default 3x soft)."""
    engines = {Side.RED: red, Side.BLUE: blue}
    hard = hard_seconds if hard_seconds is not None else 3 * move_seconds
    red.start_game(game.view(Side.RED), Side.RED, opponents[0])
    blue.start_game(game.view(Side.BLUE), Side.BLUE, opponents[1])
    seconds = {Side.RED: 0.0, Side.BLUE: 0.0}
    slowest = 0.0
    while game.result is None:
        side = game.referee.side_to_move
        view = game.view(side)
        begun = time.monotonic()
        choice = engines[side].choose_move(view, begun + move_seconds, begun + hard)
        spent = time.monotonic() - begun
        seconds[side] += spent
        slowest = max(slowest, spent)
        game.play(choice.move)
        for s, engine in engines.items():
            engine.observe(game.view(s), game.view(s).history[-1])
    result = game.result
    assert result is not None
    return MatchGame(result.winner, result.reason, game.referee.ply, seconds, slowest)
