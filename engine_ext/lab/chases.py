"""Chases in a finished game: a piece pursuing a weaker one it knows, and how each pursuit ended.

Issue 24 asks, before and after the two-squares capture model, how many chases end in a capture and how
many are pointless (docs/two-squares.md). ``ChaseObserver`` is fed by ``engine_ext.lab.game_events.walk``.

Definition. A *chase move* is a move of a piece X of side C (the chaser) that ends next to (one step along
a row or column from) an opposing movable piece Y of lower rank whose rank C has been shown (it fought or
made a scout's long move), or a move of X that attacks Y. A chase of Y by X is a run of chase moves of X:

1. it starts with a move of X that ends next to Y;
2. each of the opponent's replies moves Y away (a *flight*; every one-step move of a piece next to X
   leaves X's side, and a scout's long move does too), and X's next move ends next to Y again;
3. it ends with the first move that breaks this pattern, and the way it breaks is the chase's ``End``:
   - ``capture``: X attacks Y and takes it, or Y attacks X and falls;
   - ``escaped``: Y fled and no legal move of X (the two-squares and more-squares rules included) could
     end next to Y or take it;
   - ``abandoned``: X could follow (or Y stood still and X did not take it), and side C played something
     else: another piece, or X elsewhere;
   - ``game_over``: the game (or the record) ended during the chase;
   - ``chaser_fell``: X was taken (by Y, a spy taking a marshal, or by another piece) or fell in another
     fight;
   - ``chased_fell``: Y fell to another piece or in another fight.

Its *length* is the number of chase moves of X, the capturing move included. Only chases of at least
``MIN_CHASE_MOVES`` (3) are counted: an approach, a follow and a third move. ``capture`` is a chase that
paid; ``escaped``, ``abandoned`` and ``game_over`` are the pointless ones (the chase stopped, or the game
went on to its end, with no capture); the other two ends are neither.

X and Y are fixed pieces; a piece next to two weaker known pieces starts a candidate chase of each, and
only the one whose piece keeps fleeing goes on (one flight a turn), so a run is never counted twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from engine_ext.lab.game_events import PlyEvent, ReplayView
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Square

MIN_CHASE_MOVES = 3


class ChaseEnd(StrEnum):
    CAPTURE = "capture"
    ESCAPED = "escaped"
    ABANDONED = "abandoned"
    GAME_OVER = "game_over"
    CHASER_FELL = "chaser_fell"
    CHASED_FELL = "chased_fell"

    @property
    def pointless(self) -> bool:
        return self in (ChaseEnd.ESCAPED, ChaseEnd.ABANDONED, ChaseEnd.GAME_OVER)


@dataclass(frozen=True)
class Chase:
    """One counted chase: who chased whom, from which ply, for how many chase moves, and how it ended."""

    side: Side  # the chaser's side
    chaser_rank: Rank
    chased_rank: Rank
    start_ply: int
    end_ply: int  # the ply that ended it (the last ply of the record for game_over)
    length: int  # chase moves of the chaser, a capturing move included
    end: ChaseEnd


@dataclass
class _Pursuit:
    side: Side
    chaser: int
    chased: int
    chaser_rank: Rank
    chased_rank: Rank
    chased_square: Square
    start_ply: int
    length: int = 1
    fled: bool = False  # the chased piece moved since the chaser's last chase move
    can_follow: bool = True  # after a flight: some legal move of the chaser ends next to it or takes it


@dataclass
class ChaseObserver:
    """Collects the counted chases of one replayed game, both sides', in the order they ended."""

    chases: list[Chase] = field(default_factory=list)
    _active: list[_Pursuit] = field(default_factory=list)
    _last_ply: int = 0

    def start(self, view: ReplayView) -> None:
        self._active.clear()

    def observe(self, event: PlyEvent, view: ReplayView) -> None:
        self._last_ply = event.ply
        going: list[_Pursuit] = []
        for pursuit in self._active:
            end = self._step(pursuit, event, view)
            if end is None:
                going.append(pursuit)
            else:
                self._close(pursuit, end, event.ply)
        self._active = going
        if event.mover_survives:
            self._open(event, view)

    def finish(self, view: ReplayView) -> None:
        for pursuit in self._active:
            self._close(pursuit, ChaseEnd.GAME_OVER, self._last_ply)
        self._active = []

    def _step(self, p: _Pursuit, event: PlyEvent, view: ReplayView) -> ChaseEnd | None:
        """Advance one pursuit by one ply; the end it reaches, or None while it goes on."""
        if event.side == p.side:  # the chaser's side moves
            if event.target == p.chased:
                if event.mover == p.chaser:  # it has the higher rank, so it takes the chased piece
                    p.length += 1
                    return ChaseEnd.CAPTURE
                if event.target_falls:
                    return ChaseEnd.CHASED_FELL
            elif event.mover == p.chaser:
                if not event.mover_survives:
                    return ChaseEnd.CHASER_FELL
                if p.fled and event.to.adjacent(p.chased_square):
                    p.length += 1
                    p.fled = False
                    return None
            if p.fled and not p.can_follow:
                return ChaseEnd.ESCAPED
            return ChaseEnd.ABANDONED
        # The chased side moves.
        if event.mover == p.chased:
            if event.target == p.chaser:
                return ChaseEnd.CAPTURE if not event.mover_survives else ChaseEnd.CHASER_FELL
            if not event.mover_survives:
                return ChaseEnd.CHASED_FELL
            p.chased_square = event.to
            p.fled = True
            p.can_follow = self._can_follow(p, view)
            return None
        if event.target == p.chaser and event.target_falls:
            return ChaseEnd.CHASER_FELL
        return None

    @staticmethod
    def _can_follow(p: _Pursuit, view: ReplayView) -> bool:
        """Whether a legal move of the chaser (its side is to move) ends next to the chased piece or takes it."""
        game = view.game
        if game.result is not None:
            return False
        square = view.piece(p.chaser).square
        if square is None:
            return False
        return any(m.frm == square and (m.to == p.chased_square or m.to.adjacent(p.chased_square))
                   for m in game.legal_moves())

    def _open(self, event: PlyEvent, view: ReplayView) -> None:
        """Start a candidate pursuit of every weaker known piece the mover now stands next to."""
        for nb in view.neighbours(event.to):
            other = view.pid_at(nb)
            if other is None:
                continue
            rank = view.rank_of(other)
            if view.side_of(other) == event.side or not rank.movable or rank >= event.mover_rank:
                continue
            if not view.is_known(other):
                continue
            if any(p.chaser == event.mover and p.chased == other for p in self._active):
                continue
            self._active.append(_Pursuit(
                side=event.side, chaser=event.mover, chased=other, chaser_rank=event.mover_rank,
                chased_rank=rank, chased_square=nb, start_ply=event.ply,
            ))

    def _close(self, p: _Pursuit, end: ChaseEnd, ply: int) -> None:
        if p.length >= MIN_CHASE_MOVES:
            self.chases.append(Chase(side=p.side, chaser_rank=p.chaser_rank, chased_rank=p.chased_rank,
                                     start_ply=p.start_ply, end_ply=ply, length=p.length, end=end))
