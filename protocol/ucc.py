"""A sans-I/O codec for the UCC 2012 Stratego manager protocol (docs/ucc.md).

The referee program ``stratego`` talks to a bot over stdin/stdout, one line at a time. This module only
turns lines into typed values and back; the game loop (bot/ucc/player.py) and the adapter that runs such
a program as an opponent (bot/ucc/opponent.py) do the I/O.

Coordinates: the referee's board has RED at the top (y 0..3) and y growing downwards; ours has red on
rows 1-4 (row index 0..3) counting away from red. So UCC (x, y) is our ``Square(col=x, row=y)``: both
count from red's back row, and x runs with our columns A..J. Seen from above, the referee's picture is
ours turned upside down; lakes, setup areas and adjacency are identical, so no move changes meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from engine_ext.rules.game import Move, MoveResult
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Ruleset, SetupError, Square

__all__ = [
    "BOARD_ROW_CHARS",
    "BoardRow",
    "ColourLine",
    "Direction",
    "MoveLine",
    "Outcome",
    "OutcomeKind",
    "QuitLine",
    "RefereeEvent",
    "StartLine",
    "Surrender",
    "UccBoard",
    "UccMove",
    "UccProtocolError",
    "format_board_rows",
    "format_colour_line",
    "format_move_line",
    "format_quit",
    "format_setup_lines",
    "from_square",
    "outcome_of",
    "parse_answer",
    "parse_board_rows",
    "parse_rank_letter",
    "parse_referee_line",
    "parse_setup_lines",
    "rank_letter",
    "to_square",
]


class UccProtocolError(ValueError):
    """A line that does not fit the protocol; the message quotes it and says what is wrong."""


# --- pieces -------------------------------------------------------------------------------------------

_LETTER_OF: dict[Rank, str] = {
    Rank.MARSHAL: "1", Rank.GENERAL: "2", Rank.COLONEL: "3", Rank.MAJOR: "4", Rank.CAPTAIN: "5",
    Rank.LIEUTENANT: "6", Rank.SERGEANT: "7", Rank.MINER: "8", Rank.SCOUT: "9", Rank.SPY: "s",
    Rank.BOMB: "B", Rank.FLAG: "F",
}
_RANK_OF: dict[str, Rank] = {letter: rank for rank, letter in _LETTER_OF.items()}

EMPTY, LAKE, ENEMY = ".", "+", "#"
# Some builds of the referee mark BLUE's hidden pieces '*' rather than '#'; both mean "enemy".
_ENEMY_MARKS = frozenset("#*")
BOARD_ROW_CHARS = frozenset(_RANK_OF) | {EMPTY, LAKE} | _ENEMY_MARKS
_BOARD_ROW = re.compile(r"[1-9sBF.+#*]+")


def rank_letter(rank: Rank) -> str:
    """The UCC letter of a rank (1 marshal .. 9 scout, s spy, B bomb, F flag)."""
    try:
        return _LETTER_OF[rank]
    except KeyError:
        raise UccProtocolError(f"{rank.label} has no UCC letter") from None


def parse_rank_letter(letter: str) -> Rank:
    try:
        return _RANK_OF[letter]
    except KeyError:
        raise UccProtocolError(f"{letter!r} is not a UCC piece letter (1-9, s, B, F)") from None


# --- coordinates and moves ----------------------------------------------------------------------------


def to_square(x: int, y: int) -> Square:
    """UCC (x, y) to our square: y counts from RED's back row as our rows count from red's."""
    return Square(x, y)


def from_square(square: Square) -> tuple[int, int]:
    return square.col, square.row


class Direction(StrEnum):
    UP = "UP"  # towards y 0, RED's back row
    DOWN = "DOWN"
    LEFT = "LEFT"
    RIGHT = "RIGHT"

    @property
    def delta(self) -> tuple[int, int]:
        return _DELTAS[self]


_DELTAS = {Direction.UP: (0, -1), Direction.DOWN: (0, 1), Direction.LEFT: (-1, 0), Direction.RIGHT: (1, 0)}


@dataclass(frozen=True)
class UccMove:
    """``X Y DIRECTION [N]``: the piece on (x, y) goes ``steps`` squares towards ``direction``."""

    x: int
    y: int
    direction: Direction
    steps: int = 1

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise UccProtocolError(f"a move of {self.steps} squares")

    @property
    def target(self) -> tuple[int, int]:
        dx, dy = self.direction.delta
        return self.x + dx * self.steps, self.y + dy * self.steps

    def to_move(self, ruleset: Ruleset = CLASSIC) -> Move:
        """Our move; a square off the board is a protocol error (legality is the caller's business)."""
        move = Move(to_square(self.x, self.y), to_square(*self.target))
        for sq in (move.frm, move.to):
            if not ruleset.on_board(sq):
                raise UccProtocolError(f"{self.format()!r} leaves the {ruleset.width}x{ruleset.height} board")
        return move

    @classmethod
    def from_move(cls, move: Move) -> UccMove:
        (x0, y0), (x1, y1) = from_square(move.frm), from_square(move.to)
        if (x0 != x1) == (y0 != y1):
            raise UccProtocolError(f"{move} is not a straight move along a row or a column")
        if x0 == x1:
            direction = Direction.DOWN if y1 > y0 else Direction.UP
        else:
            direction = Direction.RIGHT if x1 > x0 else Direction.LEFT
        return cls(x0, y0, direction, move.distance)

    def format(self) -> str:
        base = f"{self.x} {self.y} {self.direction.value}"
        return base if self.steps == 1 else f"{base} {self.steps}"

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class Surrender:
    """The bot's answer ``SURRENDER`` in place of a move."""

    def format(self) -> str:
        return "SURRENDER"


# --- outcomes -----------------------------------------------------------------------------------------


class OutcomeKind(StrEnum):
    OK = "OK"
    ILLEGAL = "ILLEGAL"
    KILLS = "KILLS"  # the mover won the fight
    DIES = "DIES"  # the mover lost
    BOTHDIE = "BOTHDIE"
    VICTORY_FLAG = "VICTORY_FLAG"
    # Any other keyword the referee may end a game with (VICTORY_ATTRITION, SURRENDER, DRAW, ...).
    OTHER_END = "OTHER_END"


_COMBAT = frozenset({OutcomeKind.KILLS, OutcomeKind.DIES, OutcomeKind.BOTHDIE})
_END_KEYWORD = re.compile(r"(VICTORY|DRAW|SURRENDER)[A-Z_]*")


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    attacker: Rank | None = None  # revealed by a fight (always both, or neither)
    defender: Rank | None = None
    keyword: str = ""  # the word on the wire; differs from ``kind`` only for OTHER_END

    def __post_init__(self) -> None:
        if not self.keyword:
            if self.kind is OutcomeKind.OTHER_END:
                raise UccProtocolError("an OTHER_END outcome needs its keyword")
            object.__setattr__(self, "keyword", self.kind.value)
        if (self.attacker is None) != (self.defender is None):
            raise UccProtocolError(f"{self.keyword}: give both ranks of a fight or neither")
        if self.kind in _COMBAT and self.attacker is None:
            raise UccProtocolError(f"{self.keyword} needs the attacker's and the defender's ranks")

    @property
    def is_combat(self) -> bool:
        return self.kind in _COMBAT

    @property
    def ends_game(self) -> bool:
        return self.kind in (OutcomeKind.VICTORY_FLAG, OutcomeKind.OTHER_END)

    def format(self) -> str:
        if self.attacker is None or self.defender is None:
            return self.keyword
        return f"{self.keyword} {rank_letter(self.attacker)} {rank_letter(self.defender)}"


def outcome_of(result: MoveResult) -> Outcome:
    """The outcome the referee reports for a move played on a full-information game."""
    if result.attacker is None or result.defender is None:
        return Outcome(OutcomeKind.OK)
    if result.defender == Rank.FLAG:
        return Outcome(OutcomeKind.VICTORY_FLAG)
    kind = {"x": OutcomeKind.KILLS, "o": OutcomeKind.DIES, "xo": OutcomeKind.BOTHDIE}[result.outcome or ""]
    return Outcome(kind, result.attacker, result.defender)


# --- referee lines --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ColourLine:
    """``COLOUR OPPONENT WIDTH HEIGHT``: the first line of a game."""

    colour: Side
    opponent: str
    width: int = 10
    height: int = 10

    def format(self) -> str:
        return format_colour_line(self.colour, self.opponent, self.width, self.height)


@dataclass(frozen=True)
class StartLine:
    """``START``: RED's first turn (no opponent move to report)."""

    def format(self) -> str:
        return "START"


@dataclass(frozen=True)
class MoveLine:
    """A move with its outcome: the opponent's move, or the echo of our own."""

    move: UccMove
    outcome: Outcome

    def format(self) -> str:
        return format_move_line(self.move, self.outcome)


@dataclass(frozen=True)
class BoardRow:
    """One of the ten rows sent before every move, top (y 0) first."""

    cells: str

    def format(self) -> str:
        return self.cells


@dataclass(frozen=True)
class QuitLine:
    """``QUIT [RESULT]``: the game is over; the bot must exit at once."""

    result: str | None = None

    def format(self) -> str:
        return format_quit(self.result)


RefereeEvent = ColourLine | StartLine | MoveLine | BoardRow | QuitLine


def _int(token: str, what: str, line: str) -> int:
    if not token.isdigit():
        raise UccProtocolError(f"{line!r}: {what} {token!r} is not a number")
    return int(token)


def _parse_move_tokens(tokens: list[str], line: str) -> tuple[UccMove, list[str]]:
    """``X Y DIRECTION [N]`` from the front of ``tokens``; returns the move and the tokens left."""
    if len(tokens) < 3:
        raise UccProtocolError(f"{line!r}: a move is X Y DIRECTION [N]")
    x, y = _int(tokens[0], "x", line), _int(tokens[1], "y", line)
    try:
        direction = Direction(tokens[2].upper())
    except ValueError:
        raise UccProtocolError(f"{line!r}: direction {tokens[2]!r} is not UP, DOWN, LEFT or RIGHT") from None
    rest = tokens[3:]
    steps = 1
    if rest and rest[0].isdigit():
        steps = int(rest[0])
        rest = rest[1:]
    if steps < 1:
        raise UccProtocolError(f"{line!r}: a move of {steps} squares")
    return UccMove(x, y, direction, steps), rest


def _parse_outcome(tokens: list[str], line: str) -> Outcome:
    if not tokens:
        raise UccProtocolError(f"{line!r}: the move has no outcome")
    word, ranks = tokens[0].upper(), tokens[1:]
    if word in OutcomeKind.__members__ and word != OutcomeKind.OTHER_END:
        kind = OutcomeKind(word)
    elif _END_KEYWORD.fullmatch(word):
        kind = OutcomeKind.OTHER_END
    else:
        raise UccProtocolError(f"{line!r}: unknown outcome {tokens[0]!r}")
    if len(ranks) not in (0, 2):
        raise UccProtocolError(f"{line!r}: {word} takes the attacker's and the defender's ranks, or none")
    attacker = defender = None
    if ranks:
        if kind in (OutcomeKind.OK, OutcomeKind.ILLEGAL):
            raise UccProtocolError(f"{line!r}: {word} takes no ranks")
        attacker, defender = parse_rank_letter(ranks[0]), parse_rank_letter(ranks[1])
    elif kind in _COMBAT:
        raise UccProtocolError(f"{line!r}: {word} needs the attacker's and the defender's ranks")
    return Outcome(kind, attacker, defender, word)


def parse_referee_line(line: str) -> RefereeEvent:
    """One line from the referee, as a typed event; ``UccProtocolError`` if it fits none."""
    text = line.strip()
    tokens = text.split()
    if not tokens:
        raise UccProtocolError("an empty line")
    head = tokens[0].upper()
    if head == "QUIT":
        return QuitLine(" ".join(tokens[1:]) or None)
    if head == "START" and len(tokens) == 1:
        return StartLine()
    if head in ("RED", "BLUE"):
        if len(tokens) < 3:
            raise UccProtocolError(f"{text!r}: expected COLOUR OPPONENT WIDTH HEIGHT")
        width, height = _int(tokens[-2], "width", text), _int(tokens[-1], "height", text)
        return ColourLine(Side.parse(head), " ".join(tokens[1:-2]), width, height)
    if len(tokens) == 1 and _BOARD_ROW.fullmatch(text):
        return BoardRow(text)
    if tokens[0].isdigit():
        move, rest = _parse_move_tokens(tokens, text)
        return MoveLine(move, _parse_outcome(rest, text))
    raise UccProtocolError(f"{text!r} is no line of the UCC protocol")


def parse_answer(line: str) -> UccMove | Surrender:
    """A bot's answer to a move request: ``X Y DIRECTION [N]`` or ``SURRENDER``."""
    text = line.strip()
    if text.upper() == "SURRENDER":
        return Surrender()
    move, rest = _parse_move_tokens(text.split(), text)
    if rest:
        raise UccProtocolError(f"{text!r}: unexpected {' '.join(rest)!r} after the move")
    return move


def format_colour_line(colour: Side, opponent: str, width: int = 10, height: int = 10) -> str:
    # The opponent name is one token on the wire in practice; keep it so (it ends at the first space).
    name = "_".join(opponent.split()) or "unknown"
    return f"{colour.name} {name} {width} {height}"


def format_move_line(move: UccMove, outcome: Outcome) -> str:
    return f"{move.format()} {outcome.format()}"


def format_quit(result: str | None = None) -> str:
    return f"QUIT {result}" if result else "QUIT"


# --- setups -------------------------------------------------------------------------------------------


def _setup_rows(side: Side, ruleset: Ruleset) -> list[int]:
    """The y of each setup line in the order they are written: top of the board downwards."""
    if side == Side.RED:
        return list(range(ruleset.setup_rows))  # y 0 (back row) first
    return list(range(ruleset.height - ruleset.setup_rows, ruleset.height))  # front row first


def format_setup_lines(placement: Mapping[Square, Rank], side: Side, ruleset: Ruleset = CLASSIC) -> list[str]:
    """Our placement as the setup lines: RED's back row first, BLUE's front row first."""
    lines = []
    for y in _setup_rows(side, ruleset):
        row = []
        for x in range(ruleset.width):
            rank = placement.get(to_square(x, y))
            row.append(EMPTY if rank is None else rank_letter(rank))
        lines.append("".join(row))
    return lines


def parse_setup_lines(lines: Sequence[str], side: Side, ruleset: Ruleset = CLASSIC) -> dict[Square, Rank]:
    """A program's setup lines as a placement, checked against the ruleset (``UccProtocolError`` naming
    the line, or the ruleset's reason)."""
    ys = _setup_rows(side, ruleset)
    if len(lines) != len(ys):
        raise UccProtocolError(f"{side} sent {len(lines)} setup line(s), expected {len(ys)}")
    placement: dict[Square, Rank] = {}
    for number, (line, y) in enumerate(zip(lines, ys, strict=True), start=1):
        text = line.strip()
        if len(text) != ruleset.width:
            raise UccProtocolError(f"setup line {number} {text!r}: {len(text)} letters, expected {ruleset.width}")
        for x, letter in enumerate(text):
            if letter == EMPTY:
                continue
            try:
                placement[to_square(x, y)] = parse_rank_letter(letter)
            except UccProtocolError as exc:
                raise UccProtocolError(f"setup line {number} {text!r}: {exc}") from None
    try:
        ruleset.validate_setup(side, placement)
    except SetupError as exc:
        raise UccProtocolError(f"illegal setup: {exc}") from None
    return placement


# --- board rows ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class UccBoard:
    """The board as one side sees it in the referee's rows: its own ranks, where enemies stand."""

    own: dict[Square, Rank] = field(default_factory=dict)
    enemy: frozenset[Square] = frozenset()


def format_board_rows(
    pieces: Mapping[Square, tuple[Side, Rank]], viewer: Side, ruleset: Ruleset = CLASSIC
) -> list[str]:
    """The ten rows the referee sends ``viewer``: own pieces by letter, enemies '#', lakes '+'."""
    rows = []
    for y in range(ruleset.height):
        cells = []
        for x in range(ruleset.width):
            sq = to_square(x, y)
            piece = pieces.get(sq)
            if ruleset.is_lake(sq):
                cells.append(LAKE)
            elif piece is None:
                cells.append(EMPTY)
            elif piece[0] == viewer and piece[1] != Rank.UNKNOWN:
                cells.append(rank_letter(piece[1]))
            else:
                cells.append(ENEMY)
        rows.append("".join(cells))
    return rows


def parse_board_rows(rows: Iterable[str], ruleset: Ruleset = CLASSIC) -> UccBoard:
    """Read the rows (top first); a wrong count, width, letter or lake is a ``UccProtocolError``."""
    rows = [r.strip() for r in rows]
    if len(rows) != ruleset.height:
        raise UccProtocolError(f"{len(rows)} board rows, expected {ruleset.height}")
    own: dict[Square, Rank] = {}
    enemy: set[Square] = set()
    for y, row in enumerate(rows):
        if len(row) != ruleset.width:
            raise UccProtocolError(f"board row {y} {row!r}: {len(row)} squares, expected {ruleset.width}")
        for x, cell in enumerate(row):
            sq = to_square(x, y)
            if (cell == LAKE) != ruleset.is_lake(sq):
                raise UccProtocolError(f"board row {y} {row!r}: the lakes are not where {ruleset.name} has them")
            if cell in _ENEMY_MARKS:
                enemy.add(sq)
            elif cell not in (EMPTY, LAKE):
                try:
                    own[sq] = parse_rank_letter(cell)
                except UccProtocolError as exc:
                    raise UccProtocolError(f"board row {y} {row!r}: {exc}") from None
    return UccBoard(own, frozenset(enemy))
