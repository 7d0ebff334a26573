"""The opponent's setup as far as one game showed it: the belief model's prior for the next game.

A host that reveals the opponent's whole setup at the end (the Metaforge host) gives the opponent store
whole setups. The UCC referee reveals nothing: what a game shows of the opponent's setup is the pieces
whose rank a fight or a scout's run showed, each on the square it started on. Programs that play one
setup, or a few, give most of it away over a few games (PeternLewis of the UCC 2012 sparring set plays
the same 40 pieces every game; the bombs our general meets in one game are where they were in the last).

``seen_setup`` reads that partial setup off a game view; cells not seen are empty (None), and the prior
(prior.py) counts, square by square, only the games that saw the square.

Orientation. ``Setup`` indexes a side's squares front row first, columns A to J for both colours. A
program that puts each row of its setup at the same distance from its back edge and in the same columns
for both colours (Celsius, Ramen) shows one setup on the same indices whatever its colour. One that sees
the board from its own seat turns its setup round when its colour changes: the same piece then stands on
the mirrored column. What a game showed is kept as played, with the colour; ``for_colour`` decides from the
games themselves, where games of both colours showed the same squares, whether this opponent turns its setup
(``turns_setup``), and hands the setups on as it would set up playing the colour it plays now. A program
that reverses its columns at random (PeternLewis, on an odd second) fits neither: its prior stands the right
way round in about half the games (reading each game's orientation off the game was measured and did not
gain: docs/engine.md, *Which way round*).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine_ext.beliefs.events import GameTracker
from engine_ext.rules.game import Game
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square
from setups.notation import Setup


class SetupWatch:
    """What a game shows of the opponent's setup, kept up as the game goes (each move replayed once)."""

    def __init__(self, game: Game, side: Side) -> None:
        self.side = Side(side)
        self._tracker = GameTracker(game)
        self._ruleset = game.options.ruleset
        opponent = self.side.other
        squares = set(self._ruleset.setup_squares(opponent))
        tracker = self._tracker
        self._starts: dict[int, Square] | None = {}
        for pid in range(tracker.piece_count):
            if tracker.owner[pid] != opponent:
                continue
            start = Square(*tracker.pos.coords(tracker.start_square[pid]))
            if start not in squares:  # not a game from its setups: its start squares say nothing of one
                self._starts = None
                break
            self._starts[pid] = start

    def update(self, game: Game) -> Setup | None:
        """The setup as far as ``game`` (the same game, further on) showed it; None: nothing shown, or the
        game did not start at the setups."""
        tracker = self._tracker
        tracker.catch_up(game)
        if self._starts is None:
            return None
        placement: dict[Square, Rank] = {}
        for pid, start in self._starts.items():
            rank = tracker.rank(pid)
            if tracker.shown[pid] and rank != int(Rank.UNKNOWN):
                placement[start] = Rank(rank)
        if not placement:
            return None
        return Setup.from_placement(self._ruleset, self.side.other, placement)


def seen_setup(game: Game, side: Side) -> Setup | None:
    """The setup of ``side``'s opponent as ``side`` saw it in ``game`` (a view from ``side``'s seat, or the
    full game): the pieces whose rank was shown, on their start squares; None when none was shown, or when
    the history does not start at the setups (a view rebuilt from a board)."""
    return SetupWatch(game, side).update(game)


def _mirrored(setup: Setup) -> Setup:
    """The same rows with their columns in reverse order."""
    width = setup.ruleset.width
    cells = setup.cells
    return Setup(setup.ruleset, tuple(cells[row + width - 1 - col]
                                      for row in range(0, len(cells), width) for col in range(width)))


def _agreement(a: Setup, b: Setup) -> int:
    """Squares both show with the same rank, less those they show with different ranks."""
    return sum((x == y) - (x != y) for x, y in zip(a.cells, b.cells, strict=True) if x is not None and y is not None)


def turns_setup(seen: Sequence[tuple[Setup, Side]]) -> bool:
    """Whether the opponent turns its setup round with its colour: what games of different colours showed
    agrees better with one of them mirrored than as it stands. No such evidence (games of one colour, or none
    showing the same squares): False, the setup kept as played."""
    reds = [setup for setup, side in seen if side == Side.RED]
    blues = [setup for setup, side in seen if side == Side.BLUE]
    kept = sum(_agreement(red, blue) for red in reds for blue in blues)
    turned = sum(_agreement(red, _mirrored(blue)) for red in reds for blue in blues)
    return turned > kept


def for_colour(seen: Sequence[tuple[Setup, Side]], side: Side) -> list[Setup]:
    """What earlier games showed of the opponent's setup (each as played, with the colour it played), as the
    opponent would set it up playing ``side`` now (``turns_setup``)."""
    turns = turns_setup(seen)
    return [_mirrored(setup) if turns and played != side else setup for setup, played in seen]


def parse_seen(text: str, ruleset: Ruleset) -> Setup:
    """A stored partial setup (``Setup.key``: Gravon letters, unseen squares empty); ValueError if unreadable."""
    from setups.notation import Notation, parse_setup

    return parse_setup(text, ruleset, Notation.GRAVON, validate=False)
