"""Moves and whole-board codes as text.

The board code is the letter code of the Gravon setup data, one letter a square, row 1 (A1..J1)
first and the last row last: ``A`` empty, ``_`` lake; red ``B`` bomb, ``C`` spy, ``D`` scout,
``E`` miner, ``F`` sergeant, ``G`` lieutenant, ``H`` captain, ``I`` major, ``J`` colonel,
``K`` general, ``L`` marshal, ``M`` flag; blue ``N``..``Y`` in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square

# Gravon order after the empty square: bomb, spy, scout, ..., marshal, flag.
GRAVON_ORDER = (
    Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN,
    Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL, Rank.FLAG,
)
EMPTY_LETTER = "A"
LAKE_LETTER = "_"


def piece_letter(side: Side, rank: Rank) -> str:
    base = ord("B") if side == Side.RED else ord("N")
    return chr(base + GRAVON_ORDER.index(rank))


def parse_piece_letter(letter: str) -> tuple[Side, Rank]:
    code = ord(letter) - ord("B")
    if 0 <= code < 12:
        return Side.RED, GRAVON_ORDER[code]
    if 12 <= code < 24:
        return Side.BLUE, GRAVON_ORDER[code - 12]
    raise ValueError(f"bad piece letter {letter!r}")


@dataclass(frozen=True)
class BoardCode:
    """A parsed board code: the pieces and the lakes it shows."""

    width: int
    height: int
    lakes: frozenset[Square]
    pieces: dict[Square, tuple[Side, Rank]]

    @classmethod
    def parse(cls, code: str, width: int = 10) -> BoardCode:
        text = code.strip()
        if not text or len(text) % width:
            raise ValueError(f"board code has {len(text)} letters: not whole rows of {width}")
        height = len(text) // width
        lakes: set[Square] = set()
        pieces: dict[Square, tuple[Side, Rank]] = {}
        for i, letter in enumerate(text.upper()):
            sq = Square(i % width, i // width)
            if letter == LAKE_LETTER:
                lakes.add(sq)
            elif letter != EMPTY_LETTER:
                try:
                    pieces[sq] = parse_piece_letter(letter)
                except ValueError:
                    raise ValueError(f"board code: bad letter {letter!r} at {sq}") from None
        return cls(width, height, frozenset(lakes), pieces)

    def check_lakes(self, ruleset: Ruleset) -> None:
        if (self.width, self.height) != (ruleset.width, ruleset.height):
            raise ValueError(
                f"board code is {self.width}x{self.height}, ruleset {ruleset.name} is "
                f"{ruleset.width}x{ruleset.height}"
            )
        if self.lakes != ruleset.lakes:
            wrong = sorted(str(s) for s in self.lakes ^ ruleset.lakes)
            raise ValueError(f"board code's lakes differ from ruleset {ruleset.name} at {', '.join(wrong)}")


@dataclass(frozen=True, order=True)
class Move:
    frm: Square
    to: Square

    def __str__(self) -> str:
        return f"{self.frm}-{self.to}"

    @classmethod
    def parse(cls, text: str) -> Move:
        """Accept ``A4-A5`` and the thesis's record forms ``A4xA5``, ``A4oA5``, ``A4xoA5``."""
        t = text.strip().upper()
        for sep in ("XO", "-", "X", "O"):
            if sep in t:
                a, _, b = t.partition(sep)
                return cls(Square.parse(a), Square.parse(b))
        raise ValueError(f"bad move {text!r} (expected like A4-A5)")

    @property
    def distance(self) -> int:
        return abs(self.frm.col - self.to.col) + abs(self.frm.row - self.to.row)
