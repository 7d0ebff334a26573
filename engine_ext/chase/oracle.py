"""The exact oracle of the two-squares chase: retrograde analysis of one attacker against one defender.

A stronger piece (the attacker) chases a weaker one (the defender) among pieces that stand still
(the obstacles). The two-squares rule as the game plays it (``engine_ext.rules.core.breaks_two_squares``,
the tournament's pseudocode) limits each side to N consecutive moves between the same two squares.
The oracle decides whether the attacker can force the capture, and in how many attacker moves,
against the defender's longest resistance. It is the truth the seed's fast look-ahead
(issue 24's seed, the two-squares rule capture model: source material, not in this repository) is to
be tested against; docs/two-squares.md describes the model.

The model, and why:

- Both pieces step one square (no scouts: a scout's long moves are another problem, and the
  tournament does not enforce ISF 10.2 anyway). Obstacles are impassable for both and never move;
  nobody captures an obstacle and no obstacle captures anybody (protection by a strong piece is the
  seed's risk management, not the chase).
- The attacker captures by moving onto the defender's square; that move obeys the two-squares rule
  like any other (attacks count). The defender never attacks the attacker: it would lose the piece,
  which is no better for it than being captured.
- A *pass* is a move of another piece of the same side. The game's rule looks at the side's last N
  moves, so a pass resets that side's two-squares count. The defender may pass when it chooses
  (``ChaseRules.defender_may_pass``, default on: the seed's defender only moves away when attacked,
  and its side moves other pieces meanwhile); when it has no legal move at all it passes anyway (its
  side must move something). The attacker may pass too (``attacker_may_pass``, default on: the game
  allows it). A defender that passes while attacked is simply captured next move.
- State: (attacker square, defender square, each piece's two-squares history, side to move). A
  history is the square the piece's last move came from and how many consecutive moves of the side
  went between those two squares (0 after a pass or at the start). A move back to ``came_from``
  is refused when the count has reached N; otherwise it adds one, and any other move starts at 1.

Solving: the squares both pieces can ever reach (one component of the non-obstacle squares) are
numbered, and the value of every state is computed at once with numpy: ``dist_a`` (attacker to move)
is the least over the attacker's moves of 1 (a capture) or 1 + ``dist_d`` of the next state;
``dist_d`` (defender to move) is the greatest over the defender's moves of ``dist_a``. Starting
from "never" everywhere, iteration k finds exactly the states won within k attacker moves (the
attractor of the capture states, as in endgame tablebases); it stops when nothing changes, which
happens after at most (longest forced capture + 1) rounds. States still at "never" then are the
defender's escapes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from engine_ext.rules.notation import Move
from engine_ext.rules.rulesets import Ruleset, Square

__all__ = [
    "FRESH", "ChaseBoard", "ChaseInputError", "ChaseRules", "ChaseSolution", "ChaseState",
    "PieceHistory", "Role", "Verdict", "decide", "parse_diagram", "solve",
]

NEVER = 1 << 20  # "no forced capture": larger than any distance, small enough that NEVER + 1 fits
# Directions as (column step, row step); the opposite of direction i is i ^ 2.
_STEPS = ((0, 1), (1, 0), (0, -1), (-1, 0))


class ChaseInputError(ValueError):
    """A chase the oracle cannot take: a piece off the board, on a lake or an obstacle, a bad history."""


class Role(StrEnum):
    ATTACKER = "attacker"
    DEFENDER = "defender"

    @property
    def other(self) -> Role:
        return Role.DEFENDER if self is Role.ATTACKER else Role.ATTACKER


@dataclass(frozen=True)
class PieceHistory:
    """One piece's two-squares history: its last move came from ``came_from``, and ``count``
    consecutive moves of its side went between ``came_from`` and the piece's square."""

    came_from: Square | None = None
    count: int = 0


FRESH = PieceHistory()


@dataclass(frozen=True)
class ChaseRules:
    limit: int = 5  # N: at most N moves non-stop between the same two squares (5 tournament, 3 thesis)
    defender_may_pass: bool = True
    attacker_may_pass: bool = True

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= 50:
            raise ChaseInputError(f"two-squares limit must be 1..50, not {self.limit}")


@dataclass(frozen=True)
class ChaseBoard:
    """The fixed part of a chase: the board and the squares the other pieces stand on."""

    ruleset: Ruleset
    obstacles: frozenset[Square] = field(default_factory=frozenset)

    def is_open(self, sq: Square) -> bool:
        return self.ruleset.on_board(sq) and not self.ruleset.is_lake(sq) and sq not in self.obstacles


@dataclass(frozen=True)
class ChaseState:
    attacker: Square
    defender: Square
    to_move: Role
    attacker_history: PieceHistory = FRESH
    defender_history: PieceHistory = FRESH

    def history(self, role: Role) -> PieceHistory:
        return self.attacker_history if role is Role.ATTACKER else self.defender_history

    def square(self, role: Role) -> Square:
        return self.attacker if role is Role.ATTACKER else self.defender


@dataclass(frozen=True)
class Verdict:
    captured: bool
    # Attacker moves up to and including the capture, against the defender's longest resistance.
    attacker_moves: int | None = None

    def __str__(self) -> str:
        return f"capture in {self.attacker_moves} attacker moves" if self.captured else "escape"


def parse_diagram(text: str, ruleset: Ruleset) -> tuple[ChaseBoard, Square, Square]:
    """A chase from a text board, top row first, one character a square (spaces ignored):
    ``.`` empty, ``#`` obstacle, ``~`` lake (must match the ruleset), ``A`` attacker, ``D`` defender.
    Lines may start with a row number and ``|``; a line of column letters is skipped."""
    rows = []
    for line in text.strip("\n").splitlines():
        body = line.split("|", 1)[1] if "|" in line else line
        cells = body.replace(" ", "")
        if not cells or cells == "ABCDEFGHIJKL"[:ruleset.width]:
            continue  # a blank or a column label line
        rows.append(cells)
    if len(rows) != ruleset.height or any(len(r) != ruleset.width for r in rows):
        raise ChaseInputError(f"diagram must be {ruleset.height} rows of {ruleset.width} squares")
    obstacles: set[Square] = set()
    found: dict[str, Square] = {}
    for i, cells in enumerate(rows):
        row = ruleset.height - 1 - i
        for col, ch in enumerate(cells):
            sq = Square(col, row)
            if (ch == "~") != ruleset.is_lake(sq):
                raise ChaseInputError(f"{sq}: lakes in the diagram differ from the {ruleset.name} ruleset")
            if ch == "#":
                obstacles.add(sq)
            elif ch in "AD":
                if ch in found:
                    raise ChaseInputError(f"two {ch} in the diagram")
                found[ch] = sq
            elif ch not in ".~":
                raise ChaseInputError(f"{sq}: unknown diagram character {ch!r}")
    if set(found) != {"A", "D"}:
        raise ChaseInputError("the diagram needs one attacker A and one defender D")
    return ChaseBoard(ruleset, frozenset(obstacles)), found["A"], found["D"]


def _component(board: ChaseBoard, start: Square) -> list[Square]:
    """The non-obstacle squares reachable from ``start`` by single steps, in a fixed order."""
    seen = {start}
    todo = [start]
    while todo:
        sq = todo.pop()
        for dc, dr in _STEPS:
            nxt = Square(sq.col + dc, sq.row + dr)
            if nxt not in seen and board.is_open(nxt):
                seen.add(nxt)
                todo.append(nxt)
    return sorted(seen, key=lambda s: (s.row, s.col))


def _direction(frm: Square, to: Square) -> int:
    step = (to.col - frm.col, to.row - frm.row)
    return _STEPS.index(step)


class ChaseSolution:
    """The values of every state of one chase board (both pieces in one component)."""

    def __init__(self, board: ChaseBoard, squares: list[Square], rules: ChaseRules) -> None:
        self.board = board
        self.rules = rules
        self.squares = squares
        self._index = {sq: i for i, sq in enumerate(squares)}
        n = rules.limit
        self._t = 1 + 4 * n  # history codes: 0 fresh, 1 + dir * n + (count - 1)
        size = len(squares) * self._t
        self._neighbour = np.full((len(squares), 4), -1, dtype=np.int64)
        for i, square in enumerate(squares):
            for d, (dc, dr) in enumerate(_STEPS):
                found = self._index.get(Square(square.col + dc, square.row + dr))
                if found is not None:
                    self._neighbour[i, d] = found
        # One piece's moves as maps of (square, history) codes: for step direction d, the
        # destination square (-1: no such move) and the code after the move.
        self._dest = np.full((4, size), -1, dtype=np.int64)
        self._after = np.zeros((4, size), dtype=np.int64)
        for code in range(size):
            here, hist = divmod(code, self._t)
            back, count = ((hist - 1) // n, (hist - 1) % n + 1) if hist else (-1, 0)
            for d in range(4):
                j = int(self._neighbour[here, d])
                if j < 0:
                    continue
                if d == back and count >= n:
                    continue  # the two-squares rule: this would be move N + 1 between the same squares
                new_count = count + 1 if d == back else 1
                self._dest[d, code] = j
                self._after[d, code] = j * self._t + 1 + (d ^ 2) * n + new_count - 1
        self._square_of = np.arange(size) // self._t
        self._passed = self._square_of * self._t  # the same square, history reset
        self.dist_a, self.dist_d = self._solve(size)  # int32, NEVER where no capture is forced

    # Solving --------------------------------------------------------------------------------------

    def _solve(self, size: int) -> tuple[NDArray[np.int32], NDArray[np.int32]]:
        """Rows index the attacker's (square, history), columns the defender's."""
        rules = self.rules
        dist_a = np.full((size, size), NEVER, dtype=np.int32)
        dist_d = np.full((size, size), NEVER, dtype=np.int32)
        d_square = self._square_of
        # The defender never stands on the attacker's square: those entries stay NEVER.
        same_square = self._square_of[:, None] == d_square[None, :]
        while True:
            new_d = np.full((size, size), -1, dtype=np.int32)
            can_move = np.zeros((size, size), dtype=bool)
            for d in range(4):
                cols = np.nonzero(self._dest[d] >= 0)[0]
                if cols.size == 0:
                    continue
                legal = self._dest[d, cols][None, :] != self._square_of[:, None]  # not onto the attacker
                vals = np.where(legal, dist_a[:, self._after[d, cols]], -1)
                new_d[:, cols] = np.maximum(new_d[:, cols], vals)
                can_move[:, cols] |= legal
            passed = dist_a[:, self._passed]
            if rules.defender_may_pass:
                new_d = np.maximum(new_d, passed)
            else:
                new_d = np.where(can_move, new_d, passed)
            new_d[same_square] = NEVER
            new_a = np.full((size, size), NEVER, dtype=np.int32)
            for d in range(4):
                rows = np.nonzero(self._dest[d] >= 0)[0]
                if rows.size == 0:
                    continue
                vals = 1 + new_d[self._after[d, rows], :]
                capture = self._dest[d, rows][:, None] == d_square[None, :]
                new_a[rows, :] = np.minimum(new_a[rows, :], np.where(capture, 1, vals))
            if rules.attacker_may_pass:
                new_a = np.minimum(new_a, 1 + new_d[self._passed, :])
            np.minimum(new_a, NEVER, out=new_a)
            new_a[same_square] = NEVER
            if np.array_equal(new_a, dist_a) and np.array_equal(new_d, dist_d):
                return dist_a, dist_d
            dist_a, dist_d = new_a, new_d

    # Reading states -------------------------------------------------------------------------------

    def _code(self, state: ChaseState, role: Role) -> int:
        sq = state.square(role)
        hist = state.history(role)
        i = self._index.get(sq)
        if i is None:
            raise ChaseInputError(f"the {role} on {sq} is not on this chase's squares")
        if hist.came_from is None or hist.count == 0:
            return i * self._t
        return i * self._t + 1 + _direction(sq, hist.came_from) * self.rules.limit + hist.count - 1

    def value(self, state: ChaseState) -> int:
        """Attacker moves to the forced capture, or ``NEVER``."""
        row, col = self._code(state, Role.ATTACKER), self._code(state, Role.DEFENDER)
        table = self.dist_a if state.to_move is Role.ATTACKER else self.dist_d
        return int(table[row, col])

    def verdict(self, state: ChaseState) -> Verdict:
        v = self.value(state)
        return Verdict(True, v) if v < NEVER else Verdict(False)

    def legal_moves(self, state: ChaseState) -> list[Move | None]:
        """The mover's moves in the model; ``None`` is a pass (a move of another piece of its side).
        An attacker's move onto the defender is the capture."""
        role = state.to_move
        code = self._code(state, role)
        here = state.square(role)
        out: list[Move | None] = []
        for d in range(4):
            j = self._dest[d, code]
            if j < 0:
                continue
            to = self.squares[j]
            if role is Role.DEFENDER and to == state.attacker:
                continue
            out.append(Move(here, to))
        may_pass = self.rules.attacker_may_pass if role is Role.ATTACKER else self.rules.defender_may_pass
        if may_pass or (role is Role.DEFENDER and not out):
            out.append(None)
        return out

    def after(self, state: ChaseState, move: Move | None) -> ChaseState:
        """The state after ``move`` of the side to move (not for the capture itself)."""
        role = state.to_move
        if move is None:
            hist = FRESH
            to = state.square(role)
        else:
            old = state.history(role)
            again = old.came_from == move.to and old.count > 0
            hist = PieceHistory(move.frm, old.count + 1 if again else 1)
            to = move.to
        if role is Role.ATTACKER:
            return ChaseState(to, state.defender, Role.DEFENDER, hist, state.defender_history)
        return ChaseState(state.attacker, to, Role.ATTACKER, state.attacker_history, hist)

    def attacker_move(self, state: ChaseState) -> Move | None:
        """A move that keeps the shortest forced capture (the capture itself when it is there)."""
        if state.to_move is not Role.ATTACKER:
            raise ChaseInputError("the defender is to move")
        best: tuple[int, Move | None] | None = None
        for move in self.legal_moves(state):
            if move is not None and move.to == state.defender:
                return move
            v = 1 + self.value(self.after(state, move))
            if best is None or v < best[0]:
                best = (v, move)
        if best is None or best[0] >= NEVER:
            raise ChaseInputError("no forced capture from this state")
        return best[1]

    def principal_line(self, state: ChaseState) -> list[Move | None]:
        """A forced capture played out: the attacker's shortest way against the defender's longest
        resistance (among equally long replies a real move before a pass), ending with the capture."""
        if self.value(state) >= NEVER:
            raise ChaseInputError("no forced capture from this state")
        line: list[Move | None] = []
        while True:
            if state.to_move is Role.ATTACKER:
                move = self.attacker_move(state)
                line.append(move)
                if move is not None and move.to == state.defender:
                    return line
            else:
                replies = self.legal_moves(state)
                move = max(replies, key=lambda m: (self.value(self.after(state, m)), m is not None))
                line.append(move)
            state = self.after(state, move)


def _check(board: ChaseBoard, state: ChaseState, rules: ChaseRules) -> None:
    for role in Role:
        sq = state.square(role)
        if not board.is_open(sq):
            raise ChaseInputError(f"the {role} on {sq}: off the board, a lake or an obstacle")
        hist = state.history(role)
        if (hist.came_from is None) != (hist.count == 0):
            raise ChaseInputError(f"the {role}'s history needs both a square and a count, or neither")
        if hist.came_from is not None and not hist.came_from.adjacent(sq):
            raise ChaseInputError(f"the {role} on {sq} cannot have come from {hist.came_from}")
        if not 0 <= hist.count <= rules.limit:
            raise ChaseInputError(f"the {role}'s count {hist.count} is outside 0..{rules.limit}")
    if state.attacker == state.defender:
        raise ChaseInputError("attacker and defender on one square")


def solve(board: ChaseBoard, state: ChaseState, rules: ChaseRules | None = None) -> ChaseSolution | None:
    """Solve every state of the component the pieces stand in; ``None`` when the attacker can never
    reach the defender (they stand in separate components: an escape)."""
    rules = rules or ChaseRules()
    _check(board, state, rules)
    squares = _component(board, state.attacker)
    if state.defender not in squares:
        return None
    return ChaseSolution(board, squares, rules)


def decide(board: ChaseBoard, state: ChaseState, rules: ChaseRules | None = None) -> Verdict:
    solution = solve(board, state, rules)
    return Verdict(False) if solution is None else solution.verdict(state)
