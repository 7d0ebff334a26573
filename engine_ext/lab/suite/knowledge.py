"""What our side knew at a ply of a game: the facts the suite's predicates and situations are written over.

Built from the side's view (engine_ext/lab/suite/view.py): our pieces with their ranks; each enemy piece
with the rank it has shown (``Rank.UNKNOWN`` while unseen) and whether it has moved; the pieces each side has
lost, by rank (every capture shows the captured piece); and which of our pieces the opponent has been shown.
Nothing is deduced beyond that: a piece is known when it was shown, as in the lab's analyses
(engine_ext/lab/game_events.py).

Distances are path distances: single steps along rows and columns over empty squares (lakes and every
other piece block), the last step onto the target itself. A scout's long move counts as its steps.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from engine_ext.rules.game import Game
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square

TOP_RANKS = (Rank.MARSHAL, Rank.GENERAL)


def beats(attacker: Rank, defender: Rank) -> bool:
    """The attacker wins the fight (the rules' combat: the spy takes the marshal when it attacks, the miner
    defuses a bomb, anything takes the flag, otherwise the higher rank)."""
    if defender == Rank.FLAG:
        return True
    if defender == Rank.BOMB:
        return attacker == Rank.MINER
    if attacker == Rank.SPY and defender == Rank.MARSHAL:
        return True
    return attacker > defender


@dataclass(frozen=True)
class EnemyPiece:
    rank: Rank  # Rank.UNKNOWN until shown
    moved: bool

    @property
    def unseen(self) -> bool:
        return self.rank == Rank.UNKNOWN


@dataclass(frozen=True)
class Knowledge:
    """One side's knowledge of the board when it was to move."""

    side: Side
    ruleset: Ruleset
    ours: dict[Square, Rank]
    theirs: dict[Square, EnemyPiece]
    our_lost: Counter[Rank]
    their_lost: Counter[Rank]
    shown_to_them: frozenset[Square]  # our pieces whose rank the opponent has been shown
    their_last_move: Move | None = None  # the move that made it our turn (None at the start)

    @classmethod
    def from_view(cls, view: Game, side: Side) -> Knowledge:
        ours: dict[Square, Rank] = {}
        theirs: dict[Square, EnemyPiece] = {}
        shown = set()
        for square, (owner, rank) in view.pieces().items():
            if owner == side:
                ours[square] = rank
                if view._revealed(square):  # the rules' own record of what fights and long moves showed
                    shown.add(square)
            else:
                theirs[square] = EnemyPiece(rank, view.has_moved(square))
        our_lost: Counter[Rank] = Counter()
        their_lost: Counter[Rank] = Counter()
        for played in view.history:
            if played.outcome is None or played.attacker is None or played.defender is None:
                continue
            mover_lost = played.outcome in ("o", "xo")
            target_lost = played.outcome in ("x", "xo")
            for fell, rank, owner in ((mover_lost, played.attacker, played.side),
                                      (target_lost, played.defender, played.side.other)):
                if fell:
                    (our_lost if owner == side else their_lost)[rank] += 1
        last = view.history[-1] if view.history and view.history[-1].side != side else None
        return cls(side, view.options.ruleset, ours, theirs, our_lost, their_lost, frozenset(shown),
                   last.move if last is not None and last.outcome in (None, "x") else None)

    # --- counts -------------------------------------------------------------------------------------------

    def initial(self, rank: Rank) -> int:
        return int(self.ruleset.pieces.get(rank, 0))

    def unseen(self, rank: Rank) -> int:
        """Their pieces of ``rank`` neither lost nor shown on the board: still hidden among the unseen."""
        shown = sum(1 for piece in self.theirs.values() if piece.rank == rank)
        return max(0, self.initial(rank) - self.their_lost[rank] - shown)

    def their_remaining(self, rank: Rank) -> int:
        return max(0, self.initial(rank) - self.their_lost[rank])

    def our_movers(self) -> dict[Square, Rank]:
        return {sq: rank for sq, rank in self.ours.items() if rank.movable}

    def their_strongest_mover(self) -> Rank | None:
        """Their highest movable rank still on the board (known exactly: every lost piece was shown)."""
        ranks = [rank for rank in Rank if rank.movable and rank != Rank.UNKNOWN and self.their_remaining(rank) > 0]
        return max(ranks, default=None)

    def their_mover_count(self) -> int:
        return sum(self.their_remaining(rank) for rank in Rank if rank.movable and rank != Rank.UNKNOWN)

    def square_of(self, rank: Rank) -> Square | None:
        """Our piece of ``rank`` (the first, for a rank with several)."""
        return next((sq for sq, r in sorted(self.ours.items(), key=lambda item: (item[0].row, item[0].col))
                     if r == rank), None)

    def flag(self) -> Square | None:
        return self.square_of(Rank.FLAG)

    # --- the board ----------------------------------------------------------------------------------------

    def neighbours(self, square: Square) -> Iterator[Square]:
        for dc, dr in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            near = Square(square.col + dc, square.row + dr)
            if self.ruleset.on_board(near) and not self.ruleset.is_lake(near):
                yield near

    def empty(self, square: Square) -> bool:
        return square not in self.ours and square not in self.theirs

    def path_distance(self, frm: Square, targets: Iterable[Square], *, through: Square | None = None) -> int | None:
        """Steps from ``frm`` onto the nearest of ``targets`` over empty squares (``through``: a square to
        count as empty too, the one a move leaves); None when none can be reached."""
        goals = set(targets)
        if not goals:
            return None
        if frm in goals:
            return 0
        seen = {frm}
        frontier: deque[tuple[Square, int]] = deque([(frm, 0)])
        while frontier:
            square, steps = frontier.popleft()
            for near in self.neighbours(square):
                if near in seen:
                    continue
                seen.add(near)
                if near in goals:
                    return steps + 1
                if self.empty(near) or near == through:
                    frontier.append((near, steps + 1))
        return None

    def distance_after(self, move: Move, targets: Iterable[Square]) -> int | None:
        """The moved piece's path distance to ``targets`` from where ``move`` puts it (its old square empty)."""
        return self.path_distance(move.to, targets, through=move.frm)

    def in_our_half(self, square: Square) -> bool:
        half = self.ruleset.height // 2
        return square.row < half if self.side == Side.RED else square.row >= self.ruleset.height - half

    def material(self) -> tuple[int, int]:
        """Movable pieces left: ours and theirs."""
        return len(self.our_movers()), self.their_mover_count()
