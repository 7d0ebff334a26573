"""Rules as data: board size, lakes, setup rows and piece counts.

Classic and Barrage ship; a smaller board is another ``Ruleset`` value, not a fork of the code.
Squares are written the way the tournament page does: columns A.., rows 1.. from red's side.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from engine_ext.rules.pieces import Rank, Side

MAX_WIDTH = 12
MAX_HEIGHT = 12
COLUMNS = "ABCDEFGHIJKL"


@dataclass(frozen=True, order=True)
class Square:
    """A board square; ``col`` and ``row`` count from 0 (A1 is col 0, row 0)."""

    # Ordering compares by column then row; boards iterate rows themselves where order matters.
    col: int
    row: int

    def __str__(self) -> str:
        return f"{COLUMNS[self.col]}{self.row + 1}"

    @classmethod
    def parse(cls, text: str) -> Square:
        t = text.strip().upper()
        if len(t) < 2 or t[0] not in COLUMNS or not t[1:].isdigit():
            raise ValueError(f"bad square {text!r} (expected a column letter and a row number, like A1)")
        row = int(t[1:]) - 1
        if row < 0 or row >= MAX_HEIGHT:
            raise ValueError(f"bad square {text!r}: row out of range")
        return cls(COLUMNS.index(t[0]), row)

    def adjacent(self, other: Square) -> bool:
        return abs(self.col - other.col) + abs(self.row - other.row) == 1


@dataclass(frozen=True)
class Ruleset:
    name: str
    width: int
    height: int
    lakes: frozenset[Square]
    setup_rows: int
    pieces: Mapping[Rank, int] = field(hash=False)

    def __post_init__(self) -> None:
        if not (2 <= self.width <= MAX_WIDTH and 2 <= self.height <= MAX_HEIGHT):
            raise ValueError(f"ruleset {self.name}: board {self.width}x{self.height} out of range")
        if 2 * self.setup_rows > self.height:
            raise ValueError(f"ruleset {self.name}: setup rows overlap")
        if self.pieces.get(Rank.FLAG, 0) != 1:
            raise ValueError(f"ruleset {self.name}: exactly one flag a side")
        if self.piece_total > self.width * self.setup_rows:
            raise ValueError(f"ruleset {self.name}: more pieces than setup squares")

    @property
    def piece_total(self) -> int:
        return sum(self.pieces.values())

    @property
    def fills_setup_area(self) -> bool:
        """Classic fills all setup squares; Barrage leaves most of them empty."""
        return self.piece_total == self.width * self.setup_rows

    def on_board(self, sq: Square) -> bool:
        return 0 <= sq.col < self.width and 0 <= sq.row < self.height

    def is_lake(self, sq: Square) -> bool:
        return sq in self.lakes

    def setup_squares(self, side: Side) -> list[Square]:
        """The side's setup area, front row first (the order of the Gravon data)."""
        if side == Side.RED:
            rows = range(self.setup_rows - 1, -1, -1)
        else:
            rows = range(self.height - self.setup_rows, self.height)
        return [Square(c, r) for r in rows for c in range(self.width)]

    def in_setup_area(self, side: Side, sq: Square) -> bool:
        if side == Side.RED:
            return 0 <= sq.row < self.setup_rows and 0 <= sq.col < self.width
        return self.height - self.setup_rows <= sq.row < self.height and 0 <= sq.col < self.width

    def validate_setup(self, side: Side, placement: Mapping[Square, Rank]) -> None:
        """Raise ``SetupError`` naming the first problem: a square outside the area, or a wrong count."""
        for sq, rank in placement.items():
            if not self.on_board(sq):
                raise SetupError(f"{side} piece on {sq}: not on the {self.width}x{self.height} board")
            if not self.in_setup_area(side, sq):
                raise SetupError(f"{side} piece on {sq}: outside {side}'s setup rows")
            if rank == Rank.UNKNOWN:
                raise SetupError(f"{side} piece on {sq}: rank unknown")
        counts = Counter(placement.values())
        for rank in Rank:
            want = self.pieces.get(rank, 0)
            have = counts.get(rank, 0)
            if have != want:
                raise SetupError(f"{side} has {have} {rank.label}(s), the {self.name} ruleset needs {want}")


    def random_placement(self, side: Side, rng: random.Random) -> dict[Square, Rank]:
        """A legal placement with no plan at all: pieces shuffled over the setup area (tests, perft)."""
        squares = self.setup_squares(side)
        rng.shuffle(squares)
        ranks = [rank for rank, n in self.pieces.items() for _ in range(n)]
        return dict(zip(squares, ranks, strict=False))


class SetupError(ValueError):
    """A setup that breaks the ruleset; the message says which square or which count."""


def _lakes(*names: str) -> frozenset[Square]:
    return frozenset(Square.parse(n) for n in names)


CLASSIC = Ruleset(
    name="classic",
    width=10,
    height=10,
    lakes=_lakes("C5", "D5", "C6", "D6", "G5", "H5", "G6", "H6"),
    setup_rows=4,
    pieces={
        Rank.FLAG: 1, Rank.BOMB: 6, Rank.SPY: 1, Rank.SCOUT: 8, Rank.MINER: 5, Rank.SERGEANT: 4,
        Rank.LIEUTENANT: 4, Rank.CAPTAIN: 4, Rank.MAJOR: 3, Rank.COLONEL: 2, Rank.GENERAL: 1,
        Rank.MARSHAL: 1,
    },
)

BARRAGE = Ruleset(
    name="barrage",
    width=10,
    height=10,
    lakes=CLASSIC.lakes,
    setup_rows=4,
    pieces={
        Rank.FLAG: 1, Rank.MARSHAL: 1, Rank.GENERAL: 1, Rank.MINER: 1, Rank.SCOUT: 2, Rank.SPY: 1,
        Rank.BOMB: 1,
    },
)

# A small board for quick tests and experiments: 6x6, two one-square lakes, two setup rows.
MINI = Ruleset(
    name="mini",
    width=6,
    height=6,
    lakes=_lakes("B3", "E4"),
    setup_rows=2,
    pieces={
        Rank.FLAG: 1, Rank.BOMB: 2, Rank.SPY: 1, Rank.SCOUT: 2, Rank.MINER: 2, Rank.SERGEANT: 1,
        Rank.CAPTAIN: 1, Rank.GENERAL: 1, Rank.MARSHAL: 1,
    },
)

RULESETS: dict[str, Ruleset] = {r.name: r for r in (CLASSIC, BARRAGE, MINI)}


def get_ruleset(name: str) -> Ruleset:
    try:
        return RULESETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown ruleset {name!r} (known: {', '.join(RULESETS)})") from None
