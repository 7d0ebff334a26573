"""Setups as values, and the three ways users write them.

A ``Setup`` is a ruleset plus one cell a setup square, in *position index* order: index 0 is the
front row's leftmost square, the front row comes first and the back row last (the order of the
Gravon data and of ``Ruleset.setup_squares``). A cell holds a ``Rank`` or ``None`` (empty, Barrage).

Column order: both sides use the board's columns A..J left to right; only the rows flip. Position
``(row_from_front, col)`` is square ``(col, setup_rows - 1 - row_from_front)`` for red (front row 4 on
the classic board, back row 1) and ``(col, height - setup_rows + row_from_front)`` for blue (front row
7, back row 10). So the same setup text gives blue a left-right mirror image *from blue's own seat*;
the classic and Barrage lakes are symmetric, so this never changes legality.

Notations (rows of ``ruleset.width`` letters, front row first, back row last, ``.`` for empty):

- American (the rules seed): M marshal, 9 general, 8 .. 4, N miner, S scout, X spy, B bomb, F flag;
- UCC (the 2012 manager): 1 marshal, 2 general, 3 .. 7, 8 miner, 9 scout, s spy, B bomb, F flag;
- Gravon (the data files): A empty, B bomb, C spy, D scout, E miner, F sergeant .. L marshal, M flag.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Ruleset, SetupError, Square


class Notation(StrEnum):
    AMERICAN = "american"
    UCC = "ucc"
    GRAVON = "gravon"


EMPTY = "."
# Where every notation (and the board pictures' symbols) is explained in one table; the errors about a
# setup's letters and the --help of the commands that read setups point to it.
LEGEND = "docs/setups.md, section Notation"

# One letter a rank in each notation; ``None`` is the empty square.
_LETTERS: dict[Notation, dict[Rank | None, str]] = {
    Notation.AMERICAN: {
        Rank.MARSHAL: "M", Rank.GENERAL: "9", Rank.COLONEL: "8", Rank.MAJOR: "7", Rank.CAPTAIN: "6",
        Rank.LIEUTENANT: "5", Rank.SERGEANT: "4", Rank.MINER: "N", Rank.SCOUT: "S", Rank.SPY: "X",
        Rank.BOMB: "B", Rank.FLAG: "F", None: EMPTY,
    },
    Notation.UCC: {
        Rank.MARSHAL: "1", Rank.GENERAL: "2", Rank.COLONEL: "3", Rank.MAJOR: "4", Rank.CAPTAIN: "5",
        Rank.LIEUTENANT: "6", Rank.SERGEANT: "7", Rank.MINER: "8", Rank.SCOUT: "9", Rank.SPY: "s",
        Rank.BOMB: "B", Rank.FLAG: "F", None: EMPTY,
    },
    Notation.GRAVON: {
        None: "A", Rank.BOMB: "B", Rank.SPY: "C", Rank.SCOUT: "D", Rank.MINER: "E", Rank.SERGEANT: "F",
        Rank.LIEUTENANT: "G", Rank.CAPTAIN: "H", Rank.MAJOR: "I", Rank.COLONEL: "J", Rank.GENERAL: "K",
        Rank.MARSHAL: "L", Rank.FLAG: "M",
    },
}


def _reader(notation: Notation) -> dict[str, Rank | None]:
    table = {letter: rank for rank, letter in _LETTERS[notation].items()}
    if notation is Notation.AMERICAN:
        # American letters are case-blind; lowercase is a common way to type them.
        table.update({letter.lower(): rank for letter, rank in list(table.items())})
    elif notation is Notation.UCC:
        # UCC's spy is lowercase ``s``; an uppercase S would be an American scout, so only B/F fold.
        table.update({"b": Rank.BOMB, "f": Rank.FLAG})
    else:
        table.update({letter.lower(): rank for letter, rank in list(table.items())})
        table[EMPTY] = None  # '.' is accepted for empty in every notation
    return table


_READERS = {n: _reader(n) for n in Notation}


def rank_letter(rank: Rank | None, notation: Notation | str = Notation.AMERICAN) -> str:
    """The one-letter code of ``rank`` (``None`` = empty) in ``notation``."""
    return _LETTERS[Notation(notation)][rank]


@dataclass(frozen=True)
class Setup:
    """One side's initial placement, independent of the side: cells in position-index order."""

    ruleset: Ruleset
    cells: tuple[Rank | None, ...]

    def __post_init__(self) -> None:
        want = self.ruleset.width * self.ruleset.setup_rows
        if len(self.cells) != want:
            raise SetupError(f"a {self.ruleset.name} setup has {want} squares, got {len(self.cells)}")

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def from_mapping(cls, ruleset: Ruleset, pieces: Mapping[int, Rank]) -> Setup:
        """From position index (front row first) to rank; indices left out are empty."""
        size = ruleset.width * ruleset.setup_rows
        cells: list[Rank | None] = [None] * size
        for index, rank in pieces.items():
            if not 0 <= index < size:
                raise SetupError(f"position {index} is outside the {size} setup squares of {ruleset.name}")
            cells[index] = rank
        return cls(ruleset, tuple(cells))

    @classmethod
    def from_placement(cls, ruleset: Ruleset, side: Side, placement: Mapping[Square, Rank]) -> Setup:
        """The inverse of ``placement(side)``; a square outside the side's setup rows is an error."""
        index_of = {sq: i for i, sq in enumerate(ruleset.setup_squares(side))}
        pieces: dict[int, Rank] = {}
        for sq, rank in placement.items():
            index = index_of.get(sq)
            if index is None:
                raise SetupError(f"{side} piece on {sq}: outside {side}'s setup rows")
            pieces[index] = rank
        return cls.from_mapping(ruleset, pieces)

    # -- views --------------------------------------------------------------------------------
    @property
    def pieces(self) -> dict[int, Rank]:
        """Position index (front row first) to rank, empty squares left out."""
        return {i: r for i, r in enumerate(self.cells) if r is not None}

    def placement(self, side: Side) -> dict[Square, Rank]:
        """The board squares this setup occupies when ``side`` plays it."""
        squares = self.ruleset.setup_squares(side)
        return {squares[i]: r for i, r in enumerate(self.cells) if r is not None}

    def square(self, index: int, side: Side = Side.RED) -> Square:
        return self.ruleset.setup_squares(side)[index]

    def rows(self) -> list[tuple[Rank | None, ...]]:
        """The rows, front row first."""
        w = self.ruleset.width
        return [self.cells[r * w:(r + 1) * w] for r in range(self.ruleset.setup_rows)]

    def index_of(self, rank: Rank) -> list[int]:
        return [i for i, r in enumerate(self.cells) if r == rank]

    def neighbours(self, index: int) -> Iterator[int]:
        """Orthogonal neighbours of a position inside the setup area (the same for both sides)."""
        w, rows = self.ruleset.width, self.ruleset.setup_rows
        row, col = divmod(index, w)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            r, c = row + dr, col + dc
            if 0 <= r < rows and 0 <= c < w:
                yield r * w + c

    def mirrored(self) -> Setup:
        """Left-right mirror image (legal whenever the original is: the setup area has no lakes)."""
        flipped: list[Rank | None] = []
        for row in self.rows():
            flipped.extend(reversed(row))
        return Setup(self.ruleset, tuple(flipped))

    @property
    def key(self) -> str:
        """A compact identity: the Gravon letters on one line."""
        return format_setup(self, Notation.GRAVON, row_separator="")

    def validate(self, side: Side = Side.RED) -> None:
        """Raise ``SetupError`` with the ruleset's exact reason when the setup is illegal."""
        self.ruleset.validate_setup(side, self.placement(side))

    def is_legal(self) -> bool:
        try:
            self.validate()
        except SetupError:
            return False
        return True

    def to_text(self, notation: Notation | str = Notation.AMERICAN, row_separator: str = "\n") -> str:
        return format_setup(self, notation, row_separator=row_separator)

    def __str__(self) -> str:
        return format_setup(self, Notation.AMERICAN, row_separator="/")


def format_setup(
    setup: Setup, notation: Notation | str = Notation.AMERICAN, *, row_separator: str = "\n"
) -> str:
    """Rows of letters, front row first, joined by ``row_separator``."""
    letters = _LETTERS[Notation(notation)]
    return row_separator.join("".join(letters[r] for r in row) for row in setup.rows())


def _split_rows(text: str, ruleset: Ruleset) -> list[str]:
    """Rows from text: one per line, or separated by '/', spaces or commas, or one run of all letters."""
    tokens = [t for t in text.replace("/", " ").replace(",", " ").split() if t]
    if len(tokens) == 1 and len(tokens[0]) == ruleset.width * ruleset.setup_rows:
        whole = tokens[0]
        tokens = [whole[i:i + ruleset.width] for i in range(0, len(whole), ruleset.width)]
    if len(tokens) != ruleset.setup_rows:
        raise SetupError(
            f"got {len(tokens)} row(s), a {ruleset.name} setup has {ruleset.setup_rows} rows "
            f"of {ruleset.width} letters (front row first; the notations: {LEGEND})"
        )
    for number, row in enumerate(tokens, start=1):
        if len(row) != ruleset.width:
            raise SetupError(
                f"row {number} (counting from the front) has {len(row)} letters, "
                f"the {ruleset.name} board is {ruleset.width} wide (the notations: {LEGEND})"
            )
    return tokens


def _decode(rows: list[str], ruleset: Ruleset, notation: Notation) -> Setup:
    reader = _READERS[notation]
    cells: list[Rank | None] = []
    for number, row in enumerate(rows, start=1):
        for col, letter in enumerate(row):
            if letter not in reader:
                raise SetupError(
                    f"letter {letter!r} in row {number} column {'ABCDEFGHIJKL'[col]} "
                    f"is not a piece in {notation} notation (the notations: {LEGEND})"
                )
            cells.append(reader[letter])
    return Setup(ruleset, tuple(cells))


def detect_notation(text: str, ruleset: Ruleset = CLASSIC) -> Notation:
    """The notation ``text`` is written in: the only one that reads it as a legal setup, else the only
    one whose letters fit; ``SetupError`` when none or several fit."""
    rows = _split_rows(text, ruleset)
    readable: list[tuple[Notation, Setup]] = []
    for notation in Notation:
        try:
            readable.append((notation, _decode(rows, ruleset, notation)))
        except SetupError:
            continue
    if not readable:
        raise SetupError(f"the letters fit none of the american, ucc or gravon notations (the notations: {LEGEND})")
    if len(readable) == 1:
        return readable[0][0]
    legal = [n for n, s in readable if s.is_legal()]
    if len(legal) == 1:
        return legal[0]
    names = ", ".join(n for n, _ in readable)
    raise SetupError(f"the letters fit several notations ({names}); name the notation (the notations: {LEGEND})")


def parse_setup(
    text: str,
    ruleset: Ruleset = CLASSIC,
    notation: Notation | str | None = None,
    *,
    validate: bool = True,
) -> Setup:
    """Read a setup written front row first. ``notation=None`` detects it. With ``validate`` an
    illegal setup raises ``SetupError`` with the ruleset's reason (a count or a square)."""
    chosen = Notation(notation) if notation is not None else detect_notation(text, ruleset)
    setup = _decode(_split_rows(text, ruleset), ruleset, chosen)
    if validate:
        setup.validate()
    return setup


def ucc_setup_lines(setup: Setup, side: Side) -> list[str]:
    """The rows the UCC manager expects, top of its board downwards: red (at the top) writes its back
    row first, blue its front row first; x runs with our columns A.."""
    rows = format_setup(setup, Notation.UCC).splitlines()
    return list(reversed(rows)) if side == Side.RED else rows
