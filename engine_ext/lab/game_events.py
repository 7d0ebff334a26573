"""A game record replayed as a stream of typed ply events, for the lab's analyses of finished games.

``walk(record, observers)`` replays a ``GameRecord`` through the rules (``engine_ext.rules.replay.replay_positions``:
every move checked for legality, every attack's outcome and the stated result against the moves) and
hands each observer every ply as a ``PlyEvent`` with a ``ReplayView`` of the position after it. A piece
keeps one id for the whole game (the compiled position's piece id), so an observer can follow it.

What each side knows is tracked the way the rules facade shows pieces (``Game._shown``): a piece's rank
becomes known to the opponent when it takes part in an attack (as attacker or defender) or moves more than
one square (only a scout can). Knowledge a player could deduce (the last unrevealed piece of a rank, a piece
that moved cannot be a bomb) is not counted: "known" means shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine_ext.rules.game import Game, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import ReplayError, replay_positions
from engine_ext.rules.rulesets import Square

__all__ = ["Observer", "PieceInfo", "PlyEvent", "ReplayError", "ReplayView", "walk"]


@dataclass(frozen=True, slots=True)
class PieceInfo:
    """One piece as it stands: its id, owner, rank, square (None once captured) and whether it has moved."""

    pid: int
    side: Side
    rank: Rank
    square: Square | None
    moved: bool


@dataclass(frozen=True, slots=True)
class PlyEvent:
    """One move of the record, with what it met and what was known before it was played."""

    ply: int  # 1 for the first move
    side: Side
    frm: Square
    to: Square
    mover: int  # piece id
    mover_rank: Rank
    target: int | None  # the attacked piece's id; None for a move onto an empty square
    target_rank: Rank | None
    outcome: str | None  # "x" the attacker won, "o" it lost, "xo" both fell; None for a plain move
    mover_known: bool  # the mover's rank was known to the opponent before this move
    mover_moved: bool  # the mover had moved before this move
    target_known: bool  # the target's rank was known to the mover's side before this move
    target_moved: bool  # the target had moved before this move

    @property
    def mover_survives(self) -> bool:
        return self.outcome in (None, "x")

    @property
    def target_falls(self) -> bool:
        return self.outcome in ("x", "xo")


class ReplayView:
    """The replayed game after a ply: pieces by id and square, and what each side has been shown."""

    def __init__(self, game: Game) -> None:
        self.game = game
        self._pos = game.position
        self._shown: set[int] = set()
        ruleset = game.options.ruleset
        self._ruleset = ruleset
        # With full information a piece's owner and rank never change: read them once (the enums are slow
        # to build per ply), and the squares' core indices and neighbours once a square.
        pieces = [self._pos.piece(pid) for pid in range(self._pos.piece_count)]
        self._sides = [Side(owner) for _sq, owner, _rank, _moved in pieces]
        self._ranks = [Rank(rank) for _sq, _owner, rank, _moved in pieces]
        self._square_at: dict[int, Square] = {}
        self._index_of: dict[Square, int] = {}
        self._neighbours: dict[Square, list[Square]] = {}
        for row in range(ruleset.height):
            for col in range(ruleset.width):
                square = Square(col, row)
                index = self._pos.square(col, row)
                self._square_at[index] = square
                self._index_of[square] = index
        for square in self._index_of:
            self._neighbours[square] = [
                nb for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1))
                if (nb := Square(square.col + dc, square.row + dr)) in self._index_of and not ruleset.is_lake(nb)
            ]

    def piece(self, pid: int) -> PieceInfo:
        sq, _owner, _rank, moved = self._pos.piece(pid)
        return PieceInfo(pid, self._sides[pid], self._ranks[pid], self._square_at.get(sq), moved > 0)

    def side_of(self, pid: int) -> Side:
        return self._sides[pid]

    def rank_of(self, pid: int) -> Rank:
        return self._ranks[pid]

    def piece_ids(self) -> range:
        return range(self._pos.piece_count)

    def pid_at(self, square: Square) -> int | None:
        """The id of the piece on ``square``; None for an empty square, a lake or a square off the board."""
        index = self._index_of.get(square)
        if index is None:
            return None
        pid = self._pos.piece_id(index)
        return pid if pid >= 0 else None

    def neighbours(self, square: Square) -> list[Square]:
        """The squares one step along a row or column from ``square``, on the board and not lakes."""
        return self._neighbours.get(square, [])

    def is_known(self, pid: int) -> bool:
        """Whether the piece's rank has been shown to its opponent (an attack it took part in, a long move)."""
        return pid in self._shown

    def row_from_back(self, side: Side, square: Square) -> int:
        """The row of ``square`` counted from ``side``'s back row: 1 is the back row."""
        return square.row + 1 if side == Side.RED else self._ruleset.height - square.row

    def _show(self, event: PlyEvent) -> None:
        if event.target is not None:
            self._shown.update((event.mover, event.target))
        elif abs(event.frm.col - event.to.col) + abs(event.frm.row - event.to.row) > 1:
            self._shown.add(event.mover)


class Observer(Protocol):
    """An analysis fed by ``walk``: the starting position, every ply, and the end of the record."""

    def start(self, view: ReplayView) -> None: ...

    def observe(self, event: PlyEvent, view: ReplayView) -> None: ...

    def finish(self, view: ReplayView) -> None: ...


def walk(record: GameRecord, observers: Sequence[Observer]) -> ReplayView:
    """Replay ``record`` and feed every observer; returns the view of the final position. Raises
    ``ReplayError`` (naming the ply) for a record the rules refuse; observers are then left half-fed."""
    positions = replay_positions(record)
    game, _ = next(positions)
    view = ReplayView(game)
    for observer in observers:
        observer.start(view)
    for ply, recorded in enumerate(record.moves, start=1):
        before = _before(view, recorded.move)
        played = next(positions)[1]  # plays and checks the move: a bad one raises ReplayError here
        assert played is not None and before is not None  # the move was legal, so its squares are sound
        mover, mover_moved, target, target_known, target_moved = before
        target_rank = played.defender if target is not None else None
        event = PlyEvent(
            ply=ply, side=played.side, frm=played.move.frm, to=played.move.to, mover=mover,
            mover_rank=view.rank_of(mover), target=target, target_rank=target_rank, outcome=played.outcome,
            mover_known=view.is_known(mover), mover_moved=mover_moved, target_known=target_known,
            target_moved=target_moved,
        )
        view._show(event)
        for observer in observers:
            observer.observe(event, view)
    for _ in positions:  # the generator's end checks the record's stated result
        pass
    for observer in observers:
        observer.finish(view)
    return view


def _before(view: ReplayView, text: str) -> tuple[int, bool, int | None, bool, bool] | None:
    """The mover's id and whether it had moved, the target's id, whether the target was known and had moved,
    read before the move is played; None when the text names no piece (the replay then refuses the move
    with its reason)."""
    try:
        move = Move.parse(text)
    except ValueError:
        return None
    mover = view.pid_at(move.frm)
    if mover is None:
        return None
    mover_moved = view.piece(mover).moved
    target = view.pid_at(move.to)
    if target is None:
        return mover, mover_moved, None, False, False
    return mover, mover_moved, target, view.is_known(target), view.piece(target).moved
