"""The opponent's setup as far as one game showed it: the belief model's prior for the next game.

A host that reveals the opponent's whole setup at the end (the Metaforge host) gives the opponent store
whole setups. The UCC referee reveals nothing: what a game shows of the opponent's setup is the pieces
whose rank a fight or a scout's run showed, each on the square it started on. Programs that play one
setup, or a few, give most of it away over a few games (PeternLewis of the UCC 2012 sparring set plays
the same 40 pieces every game; the bombs our general meets in one game are where they were in the last).

``seen_setup`` reads that partial setup off a game view; cells not seen are empty (None), and the prior
(prior.py) counts, square by square, only the games that saw the square.

Orientation. ``Setup`` indexes a side's squares front row first, columns A to J for both colours, so a
program that sees the board from its own seat (it turns the board round when it plays blue, as a person
does) puts a piece on mirrored columns when its colour changes. The store keeps what was seen in the
opponent's own view, as if it had played red (``as_red`` mirrors blue's columns), and ``for_side`` turns it
back for the colour it plays now. A program that does not turn the board shows its setup mirrored across
colours; the prior then finds the squares disagreeing and keeps more of the human statistics.
"""

from __future__ import annotations

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
        self.shown = 0  # the opponent's pieces shown so far

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
        self.shown = len(placement)
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


def as_red(setup: Setup, side: Side) -> Setup:
    """``setup``, played by ``side``, as the player would have set it up playing red (its own view)."""
    return _mirrored(setup) if Side(side) == Side.BLUE else setup


def for_side(setup: Setup, side: Side) -> Setup:
    """A setup kept in its player's own view (``as_red``), as that player sets it up playing ``side``."""
    return _mirrored(setup) if Side(side) == Side.BLUE else setup


def parse_seen(text: str, ruleset: Ruleset) -> Setup:
    """A stored partial setup (``Setup.key``: Gravon letters, unseen squares empty); ValueError if unreadable."""
    from setups.notation import Notation, parse_setup

    return parse_setup(text, ruleset, Notation.GRAVON, validate=False)
