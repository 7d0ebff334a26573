"""The rules facade the rest of the project imports: a game with its options and history.

A ``Game`` wraps the compiled ``Position`` and adds what belongs to a whole game rather than to a
search node: setup validation, the two-squares and more-squares rules with their histories, the
move limit, the result, reasons for illegal moves, and partial information (a bot sees the
opponent's pieces as unknown until an attack or a scout's long move reveals them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from engine_ext.rules.core import Position
from engine_ext.rules.notation import BoardCode, Move, piece_letter
from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS, Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Ruleset, SetupError, Square
from engine_ext.rules.tournament import MOVE_LIMIT

__all__ = [
    "Game", "GameOver", "IllegalMove", "Move", "MoveResult", "RulesOptions", "SetupError",
]

MAX_MOVE_LIMIT = 8000  # the core keeps 8192 plies of history; leave room for a search

# game_status codes of the core
_ONGOING, _RED_FLAG, _BLUE_FLAG, _DRAW_NO_MOVABLE, _RED_NO_MOVES, _BLUE_NO_MOVES = range(6)
_NO_COMBAT = 0
_OUTCOME_TEXT = {ATTACKER_WINS: "x", DEFENDER_WINS: "o", BOTH_DIE: "xo"}


@dataclass(frozen=True)
class RulesOptions:
    ruleset: Ruleset = CLASSIC
    range_attacks: bool = True
    two_squares: int | None = 5  # at most N moves non-stop between the same two squares; None: off
    more_squares: bool = True
    move_limit: int = MOVE_LIMIT  # plies; the game is a draw when it is reached

    def __post_init__(self) -> None:
        if self.two_squares is not None and not 1 <= self.two_squares <= 50:
            raise ValueError(f"two_squares must be 1..50 or None, not {self.two_squares}")
        if not 1 <= self.move_limit <= MAX_MOVE_LIMIT:
            raise ValueError(f"move_limit must be 1..{MAX_MOVE_LIMIT}, not {self.move_limit}")

    @property
    def two_squares_limit_for_chases(self) -> int:
        # The more-squares pseudocode hands a move back along the chaser's last move to the
        # two-squares rule; with that rule switched off, use the ISF's five.
        return self.two_squares or 5


@dataclass(frozen=True)
class MoveResult:
    move: Move
    side: Side
    attacker: Rank | None = None  # revealed ranks of an attack
    defender: Rank | None = None
    outcome: str | None = None  # "x" attacker won, "o" attacker lost, "xo" both fell

    def notation(self) -> str:
        return str(self.move) if not self.outcome else f"{self.move.frm}{self.outcome}{self.move.to}"


@dataclass(frozen=True)
class GameOver:
    winner: Side | None
    reason: str  # "flag", "no_moves", "no_movable_pieces", "move_limit"

    def __str__(self) -> str:
        who = "draw" if self.winner is None else f"{self.winner} wins"
        return f"{who} ({self.reason.replace('_', ' ')})"


class IllegalMove(ValueError):
    """A move the rules forbid; the message says why."""


@dataclass
class _ChaseState:
    """One side's more-squares bookkeeping, as in the tournament's pseudocode."""

    forbidden: set[int] = field(default_factory=set)
    last_move: int | None = None
    # The same positions as the square of every piece id (-1: captured), so that our own moves can
    # also be judged by what stands on each square (``Game.sendable_codes``).
    layouts: dict[int, tuple[int, ...]] = field(default_factory=dict)  # by the identity hash


class Game:
    def __init__(
        self,
        options: RulesOptions,
        red: Mapping[Square, Rank],
        blue: Mapping[Square, Rank],
        *,
        side_to_move: Side = Side.RED,
        validate_setups: bool = True,
    ) -> None:
        self.options = options
        ruleset = options.ruleset
        self._hidden = [self._is_hidden(red), self._is_hidden(blue)]
        if validate_setups:
            for side, placement in ((Side.RED, red), (Side.BLUE, blue)):
                if self._hidden[side]:
                    self._validate_hidden(side, placement)
                else:
                    ruleset.validate_setup(side, placement)
        pieces = [(sq.col, sq.row, Side.RED, int(r)) for sq, r in sorted(red.items(), key=_square_key)]
        pieces += [(sq.col, sq.row, Side.BLUE, int(r)) for sq, r in sorted(blue.items(), key=_square_key)]
        for col, row, _side, _rank in pieces:
            sq = Square(col, row)
            if ruleset.is_lake(sq) or not ruleset.on_board(sq):
                raise SetupError(f"piece on {sq}: a lake or off the board")
        self._pos = Position(
            ruleset.width, ruleset.height, [(s.col, s.row) for s in ruleset.lakes], pieces,
            int(side_to_move), options.range_attacks,
        )
        self._chase = [_ChaseState(), _ChaseState()]
        self._shown: set[int] = set()  # piece ids whose rank an attack or a long move showed
        self.history: list[MoveResult] = []
        self.result: GameOver | None = None
        self._update_result()

    # Construction helpers ---------------------------------------------------------------------

    @staticmethod
    def _is_hidden(placement: Mapping[Square, Rank]) -> bool:
        return bool(placement) and all(r == Rank.UNKNOWN for r in placement.values())

    def _validate_hidden(self, side: Side, placement: Mapping[Square, Rank]) -> None:
        ruleset = self.options.ruleset
        for sq in placement:
            if not ruleset.on_board(sq) or not ruleset.in_setup_area(side, sq):
                raise SetupError(f"{side} piece on {sq}: outside {side}'s setup rows")
        if len(placement) != ruleset.piece_total:
            raise SetupError(f"{side} has {len(placement)} pieces, the {ruleset.name} ruleset needs "
                             f"{ruleset.piece_total}")

    @classmethod
    def from_board_code(
        cls, code: str, options: RulesOptions | None = None, side_to_move: Side = Side.RED
    ) -> Game:
        """A full-information position from a board code (any stage of a game; counts not checked)."""
        options = options or RulesOptions()
        board = BoardCode.parse(code, options.ruleset.width)
        board.check_lakes(options.ruleset)
        red = {sq: rank for sq, (side, rank) in board.pieces.items() if side == Side.RED}
        blue = {sq: rank for sq, (side, rank) in board.pieces.items() if side == Side.BLUE}
        return cls(options, red, blue, side_to_move=side_to_move, validate_setups=False)

    def copy(self) -> Game:
        other = Game.__new__(Game)
        other.options = self.options
        other._hidden = list(self._hidden)
        other._pos = self._pos.copy()
        other._chase = [_ChaseState(set(c.forbidden), c.last_move, dict(c.layouts)) for c in self._chase]
        other._shown = set(self._shown)
        other.history = list(self.history)
        other.result = self.result
        return other

    # Reading the position ---------------------------------------------------------------------

    @property
    def position(self) -> Position:
        """The compiled position (for the engine; do not make moves on it directly)."""
        return self._pos

    @property
    def side_to_move(self) -> Side:
        return Side(self._pos.side)

    @property
    def ply(self) -> int:
        return self._pos.ply

    def _sq(self, square: Square) -> int:
        return self._pos.square(square.col, square.row)

    def _square(self, sq: int) -> Square:
        col, row = self._pos.coords(sq)
        return Square(col, row)

    def code_of(self, move: Move) -> int:
        return self._sq(move.frm) | (self._sq(move.to) << 8)

    def move_of(self, code: int) -> Move:
        return Move(self._square(code & 0xFF), self._square(code >> 8))

    def piece_at(self, square: Square) -> tuple[Side, Rank] | None:
        if not self.options.ruleset.on_board(square):
            return None
        pid = self._pos.piece_id(self._sq(square))
        if pid < 0:
            return None
        _sq, owner, rank, _moved = self._pos.piece(pid)
        return Side(owner), Rank(rank)

    def has_moved(self, square: Square) -> bool:
        pid = self._pos.piece_id(self._sq(square))
        return pid >= 0 and self._pos.piece(pid)[3] > 0

    def pieces(self, side: Side | None = None) -> dict[Square, tuple[Side, Rank]]:
        out: dict[Square, tuple[Side, Rank]] = {}
        for pid in range(self._pos.piece_count):
            sq, owner, rank, _moved = self._pos.piece(pid)
            if sq >= 0 and (side is None or owner == side):
                out[self._square(sq)] = (Side(owner), Rank(rank))
        return out

    def is_hidden(self, side: Side) -> bool:
        return self._hidden[side]

    # Legality -----------------------------------------------------------------------------------

    def _breaks_repetition(self, code: int) -> str | None:
        opts = self.options
        if opts.two_squares and self._pos.breaks_two_squares(code, opts.two_squares):
            return (f"breaks the two-squares rule (more than {opts.two_squares} moves "
                    "between the same two squares)")
        if not opts.more_squares or self._pos.piece_id(code >> 8) >= 0:
            return None  # an attack is never a chase move
        chase = self._chase[self._pos.side]
        reverse = (code >> 8) | ((code & 0xFF) << 8)
        if chase.last_move == reverse:
            limit = opts.two_squares_limit_for_chases
            if not opts.two_squares and self._pos.breaks_two_squares(code, limit):
                return f"breaks the more-squares rule (back and forth more than {limit} times)"
            return None
        if not chase.forbidden:
            return None
        self._pos.make(code, _NO_COMBAT)
        repeated = self._pos.hash in chase.forbidden
        self._pos.unmake()
        return "breaks the more-squares rule (repeats a position of a chase)" if repeated else None

    def legal_codes(self) -> list[int]:
        if self.result is not None:
            return []
        return [c for c in self._pos.moves(True) if self._breaks_repetition(c) is None]

    def legal_moves(self) -> list[Move]:
        return [self.move_of(c) for c in self.legal_codes()]

    def sendable_codes(self) -> list[int]:
        """The legal moves that are safe for us to send: also legal when a "position" of the
        more-squares rule means what stands on each square rather than which piece stands there.

        The two readings differ only where pieces of one side and rank have swapped squares. We judge
        the opponent by the permissive identity reading (``legal_codes``), but a server that keys
        positions by square contents would call such a move of ours illegal, which forfeits the game.
        In a bot's view an unknown opponent piece counts as the same as any other unknown one (they
        may share a rank), which is the cautious side. Only when that leaves no move at all are the
        identity reading's moves offered, rather than none."""
        legal = self.legal_codes()
        layouts = self._chase[self._pos.side].layouts
        if not self.options.more_squares or not layouts:
            return legal
        forbidden = {self._contents(layout) for layout in layouts.values()}
        strict = [code for code in legal if not self._repeats_by_contents(code, forbidden)]
        return strict or legal

    def sendable_moves(self) -> list[Move]:
        return [self.move_of(c) for c in self.sendable_codes()]

    def _layout(self) -> tuple[int, ...]:
        return tuple(self._pos.piece(pid)[0] for pid in range(self._pos.piece_count))

    def _contents(self, layout: tuple[int, ...]) -> tuple[tuple[int, int, int], ...]:
        """What stands on each occupied square of ``layout``: (square, side, rank as known now)."""
        out = []
        for pid, sq in enumerate(layout):
            if sq >= 0:
                _sq, owner, rank, _moved = self._pos.piece(pid)
                out.append((sq, owner, rank))
        return tuple(sorted(out))

    def _repeats_by_contents(self, code: int, forbidden: set[tuple[tuple[int, int, int], ...]]) -> bool:
        """Whether ``code`` recreates one of the ``forbidden`` square contents. Attacks and going back
        along the previous move are judged as in ``_breaks_repetition`` (the readings agree there)."""
        if self._pos.piece_id(code >> 8) >= 0:
            return False
        reverse = (code >> 8) | ((code & 0xFF) << 8)
        if self._chase[self._pos.side].last_move == reverse:
            return False
        self._pos.make(code, _NO_COMBAT)
        after = self._contents(self._layout())
        self._pos.unmake()
        return after in forbidden

    def check_move(self, move: Move) -> None:
        """Raise ``IllegalMove`` with the reason if the side to move may not play ``move``."""
        self._check_geometry(move)
        reason = self._breaks_repetition(self.code_of(move))
        if reason:
            raise IllegalMove(f"{move}: {reason}")

    def _check_geometry(self, move: Move) -> None:
        ruleset = self.options.ruleset
        if self.result is not None:
            raise IllegalMove(f"{move}: the game is over ({self.result})")
        for sq in (move.frm, move.to):
            if not ruleset.on_board(sq):
                raise IllegalMove(f"{move}: {sq} is off the {ruleset.width}x{ruleset.height} board")
        mover = self.piece_at(move.frm)
        side = self.side_to_move
        if mover is None:
            raise IllegalMove(f"{move}: no piece on {move.frm}")
        if mover[0] != side:
            raise IllegalMove(f"{move}: the piece on {move.frm} is {mover[0]}'s, {side} is to move")
        rank = mover[1]
        if rank in (Rank.BOMB, Rank.FLAG):
            raise IllegalMove(f"{move}: a {rank.label} never moves")
        if ruleset.is_lake(move.to):
            raise IllegalMove(f"{move}: {move.to} is a lake")
        target = self.piece_at(move.to)
        if target is not None and target[0] == side:
            raise IllegalMove(f"{move}: {move.to} holds {side}'s own piece")
        if (move.frm.col != move.to.col and move.frm.row != move.to.row) or move.frm == move.to:
            raise IllegalMove(f"{move}: pieces move in straight lines along rows or columns")
        if move.distance > 1:
            if rank not in (Rank.SCOUT, Rank.UNKNOWN):
                raise IllegalMove(f"{move}: only a scout moves more than one square")
            for sq in _squares_between(move.frm, move.to):
                if ruleset.is_lake(sq):
                    raise IllegalMove(f"{move}: crosses the lake at {sq}")
                if self.piece_at(sq) is not None:
                    raise IllegalMove(f"{move}: jumps over the piece on {sq}")
            if target is not None and not self.options.range_attacks:
                raise IllegalMove(f"{move}: range attacks are off; a scout attacks from next to its target")

    # Playing ------------------------------------------------------------------------------------

    def play(self, move: Move) -> MoveResult:
        """Play a move of the side to move with full information (the host's referee)."""
        self.check_move(move)
        target = self.piece_at(move.to)
        attacker = self.piece_at(move.frm)
        assert attacker is not None
        if target is not None and Rank.UNKNOWN in (attacker[1], target[1]):
            raise IllegalMove(f"{move}: an attack on or by a hidden piece needs its rank; use play_observed")
        return self._apply(move, attacker[1] if target else None, target[1] if target else None)

    def play_observed(
        self, move: Move, attacker: Rank | None = None, defender: Rank | None = None
    ) -> MoveResult:
        """Play a move as a player sees it: an attack comes with both ranks revealed by the host.

        Raises ``IllegalMove`` (state unchanged) if the move breaks the rules or the reported
        ranks contradict what this view already knows.
        """
        self.check_move(move)
        mover = self.piece_at(move.frm)
        target = self.piece_at(move.to)
        assert mover is not None
        if target is None:
            if attacker is not None or defender is not None:
                raise IllegalMove(f"{move}: ranks reported for a move onto an empty square")
            if move.distance > 1 and mover[1] == Rank.UNKNOWN:
                self._reveal(move.frm, Rank.SCOUT)  # only a scout moves that far
            return self._apply(move, None, None)
        if attacker is None or defender is None:
            raise IllegalMove(f"{move}: an attack must report both ranks")
        if move.distance > 1 and attacker != Rank.SCOUT:
            raise IllegalMove(f"{move}: a range attack by a {attacker.label}; only scouts move that far")
        if attacker in (Rank.BOMB, Rank.FLAG, Rank.UNKNOWN):
            raise IllegalMove(f"{move}: the attacker is reported as {attacker.label}")
        self._check_reveal(move.frm, mover, attacker)
        self._check_reveal(move.to, target, defender)
        self._reveal(move.frm, attacker)
        self._reveal(move.to, defender)
        return self._apply(move, attacker, defender)

    def _check_reveal(self, square: Square, piece: tuple[Side, Rank], rank: Rank) -> None:
        side, known = piece
        if rank == Rank.UNKNOWN:
            raise IllegalMove(f"the piece on {square} is reported with no rank")
        if known != Rank.UNKNOWN:
            if known != rank:
                raise IllegalMove(f"the piece on {square} is a {known.label}, reported as {rank.label}")
            return
        pid = self._pos.piece_id(self._sq(square))
        if rank in (Rank.BOMB, Rank.FLAG) and self._pos.piece(pid)[3] > 0:
            raise IllegalMove(f"the piece on {square} has moved, yet is reported as a {rank.label}")
        seen = sum(1 for p in range(self._pos.piece_count)
                   if self._pos.piece(p)[1] == side and self._pos.piece(p)[2] == rank)
        if seen >= self.options.ruleset.pieces.get(rank, 0):
            raise IllegalMove(f"{side} has no {rank.label} left to be on {square}")

    def _reveal(self, square: Square, rank: Rank) -> None:
        pid = self._pos.piece_id(self._sq(square))
        if self._pos.piece(pid)[2] == Rank.UNKNOWN:
            self._pos.set_rank(pid, int(rank))

    def reveal(self, square: Square, rank: Rank) -> None:
        """Record that the hidden piece on ``square`` is ``rank`` (checked against what is known)."""
        piece = self.piece_at(square)
        if piece is None:
            raise IllegalMove(f"no piece on {square} to reveal")
        self._check_reveal(square, piece, rank)
        self._reveal(square, rank)

    def _apply(self, move: Move, attacker: Rank | None, defender: Rank | None) -> MoveResult:
        code = self.code_of(move)
        side = self.side_to_move
        opponent = self._chase[1 - side]
        if self.options.more_squares and (
            opponent.last_move is None or not self._adjacent(opponent.last_move >> 8, code & 0xFF)
        ):
            opponent.forbidden.clear()  # the opponent's chase is over: this move does not evade it
            opponent.layouts.clear()
        mover_id = self._pos.piece_id(code & 0xFF)
        target_id = self._pos.piece_id(code >> 8)
        if target_id >= 0:
            self._shown.update((mover_id, target_id))
        elif move.distance > 1:
            self._shown.add(mover_id)
        result = self._pos.make(code)
        if self.options.more_squares:
            mine = self._chase[side]
            mine.forbidden.add(self._pos.hash)
            mine.layouts[self._pos.hash] = self._layout()
            mine.last_move = code
        outcome = _OUTCOME_TEXT.get(result)
        record = MoveResult(move, side, attacker, defender, outcome)
        self.history.append(record)
        self._update_result()
        return record

    def _adjacent(self, a: int, b: int) -> bool:
        return self._square(a).adjacent(self._square(b))

    def _update_result(self) -> None:
        status = self._pos.status()
        if status == _RED_FLAG:
            self.result = GameOver(Side.RED, "flag")
        elif status == _BLUE_FLAG:
            self.result = GameOver(Side.BLUE, "flag")
        elif status == _DRAW_NO_MOVABLE:
            self.result = GameOver(None, "no_movable_pieces")
        elif status in (_RED_NO_MOVES, _BLUE_NO_MOVES):
            self.result = GameOver(Side.RED if status == _RED_NO_MOVES else Side.BLUE, "no_moves")
        elif not self.legal_codes():  # moves exist, but the repetition rules forbid them all
            self.result = GameOver(self.side_to_move.other, "no_moves")
        elif self._pos.ply >= self.options.move_limit:
            self.result = GameOver(None, "move_limit")

    # Output -------------------------------------------------------------------------------------

    def board_code(self) -> str:
        """The Gravon letter code of the board (full information only)."""
        ruleset = self.options.ruleset
        letters = []
        for row in range(ruleset.height):
            for col in range(ruleset.width):
                sq = Square(col, row)
                piece = self.piece_at(sq)
                if ruleset.is_lake(sq):
                    letters.append("_")
                elif piece is None:
                    letters.append("A")
                elif piece[1] == Rank.UNKNOWN:
                    raise ValueError(f"{sq} holds a hidden piece: no board code for a partial view")
                else:
                    letters.append(piece_letter(*piece))
        return "".join(letters)

    def render(self, style: str = "american", viewer: Side | None = None) -> str:
        """Plain-text board, row 10 at the top. ``viewer`` hides the other side's unrevealed ranks
        (``?``); red pieces in upper case letters, blue in lower case."""
        ruleset = self.options.ruleset
        lines = []
        for row in range(ruleset.height - 1, -1, -1):
            cells = []
            for col in range(ruleset.width):
                sq = Square(col, row)
                piece = self.piece_at(sq)
                if ruleset.is_lake(sq):
                    cells.append(" ~~")
                elif piece is None:
                    cells.append("  .")
                else:
                    side, rank = piece
                    shown = rank
                    if viewer is not None and side != viewer and not self._revealed(sq):
                        shown = Rank.UNKNOWN
                    sym = shown.symbol(style)
                    cells.append(f"{sym.lower() if side == Side.BLUE else sym:>3}")
            lines.append(f"{row + 1:>2} " + "".join(cells))
        lines.append("   " + "".join(f"{c:>3}" for c in "ABCDEFGHIJKL"[: ruleset.width]))
        return "\n".join(lines)

    def _revealed(self, square: Square) -> bool:
        """Whether the piece on ``square`` has shown its rank to the opponent."""
        return self._pos.piece_id(self._sq(square)) in self._shown


def _square_key(item: tuple[Square, Rank]) -> tuple[int, int]:
    return (item[0].row, item[0].col)


def _squares_between(a: Square, b: Square) -> Iterable[Square]:
    if a.col == b.col:
        step = 1 if b.row > a.row else -1
        return [Square(a.col, r) for r in range(a.row + step, b.row, step)]
    step = 1 if b.col > a.col else -1
    return [Square(c, a.row) for c in range(a.col + step, b.col, step)]
