"""What a game's history shows about hidden pieces: the behaviours the belief model weighs.

``GameTracker`` replays a game's moves on its own copy of the position, from the setups on, and says
after each move which pieces are revealed (a fight shows both ranks, a move of more than one square
shows a scout) and which *behaviours* of still-hidden pieces it saw. The belief model
(engine_ext/beliefs/model.py) and the fitting of the likelihoods (engine_ext/beliefs/fit.py) both use
this one tracker, so the tables are estimated on exactly the events the model later applies them to.

Behaviours, always of a hidden piece towards a piece of the other side whose rank it has seen
(``known_rank``; a piece reacts to what it knows):
- ``near``: the hidden piece moved one square while within ``NEAR`` squares (Manhattan) of such a
  piece: outcome ``approach`` (closer) or ``flee`` (farther);
- ``threat``: such a piece has just moved next to the hidden piece (a new threat); on its own next
  move the threatened side either left it standing (``stay``) or moved it (``move``). An attack shows
  both ranks, so it is hard evidence and no behaviour.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS, Rank

NEAR = 2  # Manhattan distance within which a move counts as a reaction to a known piece
R_UNKNOWN = int(Rank.UNKNOWN)
_RESULT = {None: 0, "x": ATTACKER_WINS, "o": DEFENDER_WINS, "xo": BOTH_DIE}


@dataclass(frozen=True)
class Behaviour:
    pid: int  # the hidden piece that behaved
    situation: str  # "near" or "threat"
    outcome: str  # near: approach / flee; threat: stay / move
    known_rank: int  # the rank of the other side's revealed piece it reacted to
    ply: int  # plies played before the move that showed it


class GameTracker:
    """Replays ``game``'s history from the setups; ``catch_up(game)`` consumes new history entries."""

    def __init__(self, game: Game) -> None:
        pos = game.position.copy()
        for _ in range(len(game.history)):
            pos.unmake()
        self.pos: Position = pos
        count = pos.piece_count
        self.piece_count = count
        self.owner = [pos.piece(pid)[1] for pid in range(count)]
        self.start_square = [pos.piece(pid)[0] for pid in range(count)]
        self.shown = [False] * count  # rank revealed to the other side
        self.seen = 0  # history entries consumed
        self._coords: dict[int, tuple[int, int]] = {}
        # New threats made by the last move: (threatened hidden piece, the known piece next to it).
        self._threats: list[tuple[int, int]] = []

    # Reading -------------------------------------------------------------------------------------

    def square(self, pid: int) -> int:
        return int(self.pos.piece(pid)[0])

    def alive(self, pid: int) -> bool:
        return self.pos.piece(pid)[0] >= 0

    def rank(self, pid: int) -> int:
        """The rank as the tracked position knows it (``Rank.UNKNOWN`` for a hidden opponent piece)."""
        return int(self.pos.piece(pid)[2])

    def moves(self, pid: int) -> int:
        return int(self.pos.piece(pid)[3])

    @property
    def ply(self) -> int:
        return int(self.pos.ply)

    def _xy(self, sq: int) -> tuple[int, int]:
        xy = self._coords.get(sq)
        if xy is None:
            xy = self.pos.coords(sq)
            self._coords[sq] = xy
        return xy

    def _distance(self, a: int, b: int) -> int:
        ax, ay = self._xy(a)
        bx, by = self._xy(b)
        return abs(ax - bx) + abs(ay - by)

    # Replaying -----------------------------------------------------------------------------------

    def catch_up(self, game: Game) -> list[Behaviour]:
        out: list[Behaviour] = []
        for entry in game.history[self.seen:]:
            out.extend(self.step(entry))
        return out

    def step(self, entry: MoveResult) -> list[Behaviour]:
        """Play one history entry; the behaviours it showed."""
        pos = self.pos
        frm = pos.square(entry.move.frm.col, entry.move.frm.row)
        to = pos.square(entry.move.to.col, entry.move.to.row)
        mover = pos.piece_id(frm)
        target = pos.piece_id(to)
        if mover < 0:
            raise ValueError(f"history entry {entry.notation()}: no piece on {entry.move.frm} in the tracked game")
        ply = self.ply
        out: list[Behaviour] = []
        # Answers to the threats the other side's last move made.
        for threatened, threatener in self._threats:
            if not (self.alive(threatened) and self.alive(threatener)) or self.shown[threatened]:
                continue
            if threatened == mover:
                if target >= 0:
                    continue  # an attack: both ranks are shown, hard evidence
                outcome = "move"
            else:
                outcome = "stay"
            out.append(Behaviour(threatened, "threat", outcome, self.rank(threatener), ply))
        self._threats = []
        long_move = entry.move.distance > 1
        if target < 0 and not long_move and not self.shown[mover]:
            side = self.owner[mover]
            for pid in range(self.piece_count):
                if self.owner[pid] == side or not self.shown[pid]:
                    continue
                sq = self.square(pid)
                if sq < 0:
                    continue
                before = self._distance(frm, sq)
                if before > NEAR:
                    continue
                after = self._distance(to, sq)
                outcome = "approach" if after < before else "flee"  # a step changes the distance by one
                out.append(Behaviour(mover, "near", outcome, self.rank(pid), ply))
        # Reveals, then the move itself.
        if target >= 0:
            for pid, rank in ((mover, entry.attacker), (target, entry.defender)):
                if rank is not None and self.rank(pid) == R_UNKNOWN:
                    pos.set_rank(pid, int(rank))
                self.shown[pid] = True
        elif long_move:
            if self.rank(mover) == R_UNKNOWN:
                pos.set_rank(mover, int(Rank.SCOUT))
            self.shown[mover] = True
        pos.make(frm | (to << 8), _RESULT.get(entry.outcome, -1) if target >= 0 else 0)
        self.seen += 1
        # New threats: a known piece that moved next to hidden pieces it was not next to before.
        if target < 0 and self.shown[mover]:
            side = self.owner[mover]
            for pid in range(self.piece_count):
                if self.owner[pid] == side or self.shown[pid]:
                    continue
                sq = self.square(pid)
                if sq >= 0 and self._distance(to, sq) == 1 and self._distance(frm, sq) > 1:
                    self._threats.append((pid, mover))
        return out
