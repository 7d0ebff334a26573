"""Causes of loss in a finished game: how each side's marshal and general left the board, how a flag fell.

Issue 22 asks for these counts from the lab's records, before and after a change to the engine's beliefs.
``LossObserver`` is fed by ``engine_ext.lab.game_events.walk`` and gives, for every marshal and general
(``TRACKED_RANKS``), one ``PieceFate``: it survived, or the one fight that removed it, classified as

- ``bomb``: it attacked a bomb;
- ``spy``: the spy attacked it (only a marshal);
- ``higher``: it lost to a higher piece, attacking it or attacked by it;
- ``trade``: it met a piece of its own rank and both fell.

A marshal or a general can leave the board only in a fight, and these four are every way such a fight is
lost, so each piece has exactly one fate. Each lost fight says whether the piece it met was known to the
lost piece's owner beforehand (shown: it had fought or made a scout's long move), whether the lost piece
itself was known to the opponent, whether the piece it met had moved before that fight, and the row it
stood on (attacked from, for an attacker) counted from its owner's back row (1 is the back row). A bomb
never moves, so ``opponent_moved`` is always false for ``bomb``; what decides is whether it was known.

For the flag, a ``FlagFall`` when it was taken: the raider's rank, whether the raider was known to the
flag's owner, the owner's movable pieces within distance 2 of the flag ("guards") and the distance of the
nearest one (distance: steps along rows and columns, lakes ignored), and the bombs that stood next to the
flag in the setup and how many of them were left.

For a known raider in one's own half, a ``TakenInHalf`` for every piece lost in one's own half (rows 1 to 5
from one's back row) to an attacking enemy piece whose rank had been shown before that attack (issue 32:
"a known enemy general walks through our half and takes piece after piece"). ``run`` counts the raider's
takes of this kind in a row (any other fight of the raider ends its run): the longest run of a game is the
figure issue 32 quotes ("12 in a row").

For an attack that could only lose, a ``HopelessAttack``: the attacker's side had been shown the rank of
the piece it attacked, and that piece beat the attacker (combat is certain once both ranks are known). It
loses the piece and shows its rank for nothing: letting the opponent take it would have cost the opponent a
move as well (docs/engine.md, *Attacks that lose for certain*).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from engine_ext.lab.game_events import PlyEvent, ReplayView
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Square

TRACKED_RANKS = (Rank.MARSHAL, Rank.GENERAL)
GUARD_DISTANCE = 2  # a movable piece this close to its flag (or closer) counts as a guard
BACK_ROWS = 2  # rows 1 and 2 from the owner's side are its "back rows"
HALF_ROWS = 5  # rows 1 to 5 from a side's back row are its half of the board


class Cause(StrEnum):
    SURVIVED = "survived"
    BOMB = "bomb"
    SPY = "spy"
    HIGHER = "higher"
    TRADE = "trade"


class BombState(StrEnum):
    """What was left of the bombs next to the flag when it fell."""

    NONE = "none"  # no bomb stood next to the flag in the setup
    INTACT = "intact"  # all of them still stood
    BREACHED = "breached"  # some were removed
    REMOVED = "removed"  # all were removed


@dataclass(frozen=True)
class PieceFate:
    """How one marshal or general ended the game. The fight fields are None for a survivor."""

    side: Side
    rank: Rank
    cause: Cause
    ply: int | None = None
    attacked: bool | None = None  # it was the attacker of the fight that removed it
    opponent_rank: Rank | None = None
    opponent_known: bool | None = None  # the piece it met was known to its owner before the fight
    known_to_opponent: bool | None = None  # it was itself known to the opponent before the fight
    opponent_moved: bool | None = None  # the piece it met had moved before the fight
    opponent_row: int | None = None  # the piece it met stood on this row from its owner's back row (1: back)

    @property
    def lost(self) -> bool:
        return self.cause is not Cause.SURVIVED

    @property
    def on_back_rows(self) -> bool:
        return self.opponent_row is not None and self.opponent_row <= BACK_ROWS


@dataclass(frozen=True)
class FlagFall:
    """A flag taken: by what, seen or unseen, and how it was guarded at that moment."""

    side: Side  # the flag's owner
    ply: int
    square: Square
    raider_rank: Rank
    raider_known: bool  # the raider's rank was known to the flag's owner before it took the flag
    guards: int  # the owner's movable pieces within GUARD_DISTANCE of the flag
    nearest_guard: int | None  # distance of the owner's nearest movable piece; None: it had none left
    bombs_at_start: int  # the owner's bombs next to the flag in the setup
    bombs_left: int  # of those, still standing when the flag fell

    @property
    def bomb_state(self) -> BombState:
        if self.bombs_at_start == 0:
            return BombState.NONE
        if self.bombs_left == self.bombs_at_start:
            return BombState.INTACT
        return BombState.REMOVED if self.bombs_left == 0 else BombState.BREACHED


@dataclass(frozen=True)
class TakenInHalf:
    """A piece of ``side`` taken in its own half by an enemy piece whose rank ``side`` had been shown."""

    side: Side  # the side that lost the piece
    ply: int
    square: Square
    taken: Rank
    raider_rank: Rank
    run: int  # 1 for the raider's first such take, 2 for its second in a row, ...


@dataclass(frozen=True)
class HopelessAttack:
    """An attack by ``side`` on a piece whose rank ``side`` had been shown and which beat the attacker."""

    side: Side  # the side that attacked (and lost its piece)
    ply: int
    square: Square  # the attacked piece's square
    attacker: Rank
    defender: Rank


def distance(a: Square, b: Square) -> int:
    return abs(a.col - b.col) + abs(a.row - b.row)


@dataclass
class LossObserver:
    """Collects the fates of the marshals and generals and the flag's fall over one replayed game."""

    fates: list[PieceFate] = field(default_factory=list)
    flags: list[FlagFall] = field(default_factory=list)
    taken_in_half: list[TakenInHalf] = field(default_factory=list)
    hopeless: list[HopelessAttack] = field(default_factory=list)
    _runs: dict[int, int] = field(default_factory=dict)  # raider pid -> its takes in a row so far
    _tracked: dict[int, tuple[Side, Rank]] = field(default_factory=dict)  # pid -> (side, rank), still alive
    _flag_bombs: dict[int, list[int]] = field(default_factory=dict)  # flag pid -> ids of its bombs

    def start(self, view: ReplayView) -> None:
        for pid in view.piece_ids():
            piece = view.piece(pid)
            if piece.rank in TRACKED_RANKS:
                self._tracked[pid] = (piece.side, piece.rank)
            elif piece.rank == Rank.FLAG and piece.square is not None:
                bombs = []
                for nb in view.neighbours(piece.square):
                    other = view.pid_at(nb)
                    if other is not None:
                        info = view.piece(other)
                        if info.side == piece.side and info.rank == Rank.BOMB:
                            bombs.append(other)
                self._flag_bombs[pid] = bombs

    def observe(self, event: PlyEvent, view: ReplayView) -> None:
        if event.target is None or event.target_rank is None:
            return
        if event.mover in self._tracked and not event.mover_survives:
            self._lost(event, event.mover, attacked=True, view=view)
        if event.target in self._tracked and event.target_falls:
            self._lost(event, event.target, attacked=False, view=view)
        if event.target_rank == Rank.FLAG:
            self._flag_fell(event, view)
        if event.target_known and event.outcome == "o":
            self.hopeless.append(HopelessAttack(side=event.side, ply=event.ply, square=event.to,
                                                attacker=event.mover_rank, defender=event.target_rank))
        self._raid(event, view)

    def _raid(self, event: PlyEvent, view: ReplayView) -> None:
        """A known raider's take in the victim's half; any other fight of the raider ends its run."""
        assert event.target_rank is not None
        victim = event.side.other
        if (event.outcome == "x" and event.mover_known and event.target_rank != Rank.FLAG
                and view.row_from_back(victim, event.to) <= HALF_ROWS):
            run = self._runs.get(event.mover, 0) + 1
            self._runs[event.mover] = run
            self.taken_in_half.append(TakenInHalf(side=victim, ply=event.ply, square=event.to,
                                                  taken=event.target_rank, raider_rank=event.mover_rank, run=run))
        else:
            self._runs.pop(event.mover, None)
        if event.target is not None and event.outcome != "o":
            self._runs.pop(event.target, None)  # the target fell: its own run is over

    def _lost(self, event: PlyEvent, pid: int, *, attacked: bool, view: ReplayView) -> None:
        side, rank = self._tracked.pop(pid)
        assert event.target_rank is not None
        if attacked:
            other_rank, other_known, self_known = event.target_rank, event.target_known, event.mover_known
            other_moved, other_square = event.target_moved, event.to
        else:
            # The attacker was the opponent's mover: "known to the owner" means shown before this move.
            other_rank, other_known, self_known = event.mover_rank, event.mover_known, event.target_known
            other_moved, other_square = event.mover_moved, event.frm
        if event.outcome == "xo":
            cause = Cause.TRADE
        elif other_rank == Rank.BOMB:
            cause = Cause.BOMB
        elif other_rank == Rank.SPY:
            cause = Cause.SPY
        else:
            cause = Cause.HIGHER
        self.fates.append(PieceFate(
            side=side, rank=rank, cause=cause, ply=event.ply, attacked=attacked, opponent_rank=other_rank,
            opponent_known=other_known, known_to_opponent=self_known, opponent_moved=other_moved,
            opponent_row=view.row_from_back(side.other, other_square),
        ))

    def _flag_fell(self, event: PlyEvent, view: ReplayView) -> None:
        assert event.target is not None
        owner = event.side.other
        flag = event.to
        guards = [distance(piece.square, flag) for pid in view.piece_ids()
                  if (piece := view.piece(pid)).side == owner and piece.square is not None and piece.rank.movable]
        bombs = self._flag_bombs.get(event.target, [])
        self.flags.append(FlagFall(
            side=owner, ply=event.ply, square=flag, raider_rank=event.mover_rank, raider_known=event.mover_known,
            guards=sum(1 for d in guards if d <= GUARD_DISTANCE), nearest_guard=min(guards, default=None),
            bombs_at_start=len(bombs), bombs_left=sum(1 for b in bombs if view.piece(b).square is not None),
        ))

    def finish(self, view: ReplayView) -> None:
        for side, rank in self._tracked.values():
            self.fates.append(PieceFate(side=side, rank=rank, cause=Cause.SURVIVED))
        self._tracked.clear()
