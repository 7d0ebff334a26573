"""The strategic search of the Perspecto thesis (9.2, Appendix 1) written plainly, for the tests.

Slow on purpose: the position is read off the ``Position`` wrapper into dicts, every score is worked
out from scratch, and the rules are a table that reads like Appendix 1. The compiled version in
engine_ext/engine/strategic.pyx must give the same numbers; docs/strategic.md explains each choice.
Nothing in the bot uses this module.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from engine_ext.chase.lookahead import scan
from engine_ext.engine.settings import StrategicParams
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import ATTACKER_WINS, Rank, combat

MIN_STEPS = 4  # "L är antal steg mellan pjäserna (lägst 4)"

# The European "lower than a major" (f>4): captain down to spy.
_LOWER = frozenset({Rank.CAPTAIN, Rank.LIEUTENANT, Rank.SERGEANT, Rank.MINER, Rank.SCOUT, Rank.SPY})


@dataclass(frozen=True)
class Rule:
    """One attraction rule: own rank, which opponent pieces pull, and the force as a function of
    the target's flag and bomb probabilities."""

    number: int
    notation: str  # as the thesis writes it (European ranks)
    own: frozenset[Rank]
    targets: frozenset[Rank] | None  # known ranks that pull; None: unknown pieces
    force: Callable[[float, float], float]  # (p_flag, p_bomb) -> force
    open_only: bool = False  # the target must not be walled in


def _const(value: float) -> Callable[[float, float], float]:
    return lambda _pf, _pb: value


def _ranks(*ranks: Rank) -> frozenset[Rank]:
    return frozenset(ranks)


_ABOVE_MINER = _ranks(Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN, Rank.MAJOR, Rank.COLONEL,
                      Rank.GENERAL, Rank.MARSHAL)

RULES: tuple[Rule, ...] = (
    Rule(1, "[S, f1, 40]", _ranks(Rank.SPY), _ranks(Rank.MARSHAL), _const(40.0)),
    Rule(2, "[8, fB, 16]", _ranks(Rank.MINER), _ranks(Rank.BOMB), _const(16.0)),
    Rule(3, "[8, fX, pB*16]", _ranks(Rank.MINER), None, lambda _pf, pb: 16.0 * pb),
    Rule(4, "[8, fO, -2]", _ranks(Rank.MINER), None, _const(-2.0)),
    Rule(5, "[8, fX, 80*pF]", _ranks(Rank.MINER), None, lambda pf, _pb: 80.0 * pf),
    Rule(6, "[7, fO, 1]", _ranks(Rank.SERGEANT), None, _const(1.0)),
    Rule(7, "[6, fO, 1]", _ranks(Rank.LIEUTENANT), None, _const(1.0)),
    Rule(8, "[5, fO, 0.5]", _ranks(Rank.CAPTAIN), None, _const(0.5)),
    Rule(9, "[5, f<5, -6]", _ranks(Rank.CAPTAIN),
         _ranks(Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL), _const(-6.0)),
    Rule(10, "[4, f>4, 8]", _ranks(Rank.MAJOR), _LOWER, _const(8.0)),
    Rule(11, "[4, f<4, -10]", _ranks(Rank.MAJOR), _ranks(Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL),
         _const(-10.0)),
    Rule(12, "[3, f>4, 8]", _ranks(Rank.COLONEL), _LOWER, _const(8.0)),
    Rule(13, "[3, f=4, 16]", _ranks(Rank.COLONEL), _ranks(Rank.MAJOR), _const(16.0)),
    Rule(14, "[3, f<3, -16]", _ranks(Rank.COLONEL), _ranks(Rank.GENERAL, Rank.MARSHAL), _const(-16.0)),
    Rule(15, "[2, f>4, 4]", _ranks(Rank.GENERAL), _LOWER, _const(4.0)),
    Rule(16, "[2, f=4 | f=3, 16]", _ranks(Rank.GENERAL), _ranks(Rank.MAJOR, Rank.COLONEL), _const(16.0)),
    Rule(17, "[2, f=1, -20]", _ranks(Rank.GENERAL), _ranks(Rank.MARSHAL), _const(-20.0)),
    Rule(18, "[1, f>4, 4]", _ranks(Rank.MARSHAL), _LOWER, _const(4.0)),
    Rule(19, "[1, f=4 | f=3, 16]", _ranks(Rank.MARSHAL), _ranks(Rank.MAJOR, Rank.COLONEL), _const(16.0)),
    Rule(20, "[1, f=2, 32]", _ranks(Rank.MARSHAL), _ranks(Rank.GENERAL), _const(32.0)),
    Rule(21, "[<8, fX(op), 80*pF]", _ABOVE_MINER, None, lambda pf, _pb: 80.0 * pf, open_only=True),
)

# The guard (not in the thesis): known opponent miners this near our flag pull the pieces that beat them.
GUARD_RADIUS = 5
CHASE_DISTANCE = 3  # the chase model's pairs: at most this many steps apart
CHASE_DISCOUNT = 0.9  # a capture in k attacker moves is worth the piece's value times this ** (k - 1)
# The look-ahead's escapes that stop Appendix 1's pull: out of reach, a refuge, a closed trap's count.
_SURE_ESCAPES = frozenset({"separate", "refuge", "count"})
# The home guards (not in the thesis): at most this many, each a sergeant to major on a station.
HOME_GUARDS = 2
_HOME_RANKS = frozenset({Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN, Rank.MAJOR})
_RESERVE_RANKS = frozenset({Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL})  # guards when no lower one is left
_STEPS = ((0, 1), (0, -1), (-1, 0), (1, 0))
# The flag defence by distance (not in the thesis): at most this many blockers; FAR: no way there.
FLAG_DEFENDERS = 4
FAR = 30000
# The miner's pulls towards likely bombs and flags, which ``miner_pull`` scales (not in the thesis).
_MINER_PULLS = frozenset({3, 5})
# Known opponent ranks the endgame hunt chases (not in the thesis): every movable rank.
_MOVERS = frozenset(Rank(code) for code in range(Rank.SPY, Rank.MARSHAL + 1))
# The ranks the rules pull (scouts have none): the hunt pulls the same pieces.
_HAS_RULES = frozenset(rank for rule in RULES for rank in rule.own)

# Appendix 1, last paragraph: the factor on every force of an own piece that has moved.
MOVED_FACTOR: dict[Rank, float] = {
    Rank.SPY: 2.0, Rank.MINER: 2.0,
    Rank.SERGEANT: 1.0, Rank.LIEUTENANT: 1.0, Rank.CAPTAIN: 1.0, Rank.MAJOR: 1.0,
    Rank.COLONEL: 2.0, Rank.GENERAL: 2.0, Rank.MARSHAL: 2.0,
}


@dataclass
class _Piece:
    pid: int
    col: int
    row: int
    owner: int
    rank: Rank
    moved: int


@dataclass
class _Board:
    """A plain copy of the position: live pieces by id and by square."""

    width: int
    height: int
    lakes: frozenset[tuple[int, int]]
    range_attacks: bool
    pieces: dict[int, _Piece]

    @classmethod
    def of(cls, pos: Position) -> _Board:
        lakes = frozenset(
            (c, r) for r in range(pos.height) for c in range(pos.width) if pos.piece_id(pos.square(c, r)) == -2
        )
        pieces = {}
        for pid in range(pos.piece_count):
            sq, owner, rank, moved = pos.piece(pid)
            if sq >= 0:
                col, row = pos.coords(sq)
                pieces[pid] = _Piece(pid, col, row, owner, Rank(rank), moved)
        return cls(pos.width, pos.height, lakes, pos.range_attacks, pieces)

    def at(self, col: int, row: int) -> _Piece | None:
        for piece in self.pieces.values():
            if piece.col == col and piece.row == row:
                return piece
        return None

    def passable(self, col: int, row: int) -> bool:
        return 0 <= col < self.width and 0 <= row < self.height and (col, row) not in self.lakes

    def played(self, frm: tuple[int, int], to: tuple[int, int]) -> _Board:
        """A copy after the move, the mover winning any strike (Figure 9's ``make(win)``)."""
        pieces = {pid: _Piece(**vars(p)) for pid, p in self.pieces.items()}
        board = _Board(self.width, self.height, self.lakes, self.range_attacks, pieces)
        mover = board.at(*frm)
        target = board.at(*to)
        assert mover is not None
        if target is not None:
            del board.pieces[target.pid]
        mover.col, mover.row = to
        mover.moved += 1
        return board

    def own_moves(self, side: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Every move of ``side`` (the rules written out again, not the core's generator)."""
        moves = []
        for piece in sorted(self.pieces.values(), key=lambda p: p.pid):
            if piece.owner != side or not piece.rank.movable:
                continue
            reach = max(self.width, self.height) if piece.rank == Rank.SCOUT else 1
            for dc, dr in ((0, 1), (0, -1), (-1, 0), (1, 0)):
                for dist in range(1, reach + 1):
                    col, row = piece.col + dc * dist, piece.row + dr * dist
                    if not self.passable(col, row):
                        break
                    other = self.at(col, row)
                    if other is None:
                        moves.append(((piece.col, piece.row), (col, row)))
                        continue
                    if other.owner != side and (dist == 1 or self.range_attacks):
                        moves.append(((piece.col, piece.row), (col, row)))
                    break
        return moves


def flag_suspicions(pos: Position, side: int) -> list[float]:
    """7.5: each unknown opponent piece that has not moved gets a suspicion on the opponent's back
    row, and one for standing one step from a (known) bomb."""
    board = _Board.of(pos)
    opp = 1 - side
    back = 0 if opp == 0 else board.height - 1
    out = [0.0] * pos.piece_count
    for piece in board.pieces.values():
        if piece.owner != opp or piece.rank != Rank.UNKNOWN or piece.moved:
            continue
        count = 1.0 if piece.row == back else 0.0
        neighbours = [board.at(piece.col + dc, piece.row + dr) for dc, dr in ((0, 1), (0, -1), (-1, 0), (1, 0))]
        if any(n is not None and n.owner == opp and n.rank == Rank.BOMB for n in neighbours):
            count += 1.0
        out[piece.pid] = count
    return out


def _is_open(board: _Board, target: _Piece) -> bool:
    """Appendix 1, rule 21: not walled in by opponent pieces that have never moved (unknown, or
    known bombs and flag); off-board squares and lakes are walls too."""
    for dc, dr in ((0, 1), (0, -1), (-1, 0), (1, 0)):
        col, row = target.col + dc, target.row + dr
        if not board.passable(col, row):
            continue
        other = board.at(col, row)
        if (other is None or other.owner != target.owner or other.moved
                or other.rank not in (Rank.UNKNOWN, Rank.BOMB, Rank.FLAG)):
            return True
    return False


def target_force(own: Rank, target: Rank, p_flag: float, p_bomb: float, is_open: bool,
                 hunt: float = 0.0, miner_pull: float = 1.0) -> float:
    """The summed force of every rule pulling a piece of rank ``own`` towards one opponent piece of
    known rank ``target`` (``Rank.UNKNOWN`` when the viewer has not seen it), plus ``hunt`` (the
    endgame hunt, not in the thesis) when the target is a known mover that ``own`` beats; rules 3 and
    5 times ``miner_pull`` (not in the thesis)."""
    force = 0.0
    for rule in RULES:
        if own not in rule.own:
            continue
        if rule.targets is None:
            hit = target == Rank.UNKNOWN and (is_open or not rule.open_only)
        else:
            hit = target in rule.targets
        if hit:
            force += rule.force(p_flag, p_bomb) * (miner_pull if rule.number in _MINER_PULLS else 1.0)
    return force + hunt_pull(own, target, hunt)


def hunt_pull(own: Rank, target: Rank, hunt: float) -> float:
    """The endgame hunt's pull (not in the thesis): ``hunt`` towards a known mover ``own`` beats."""
    if hunt != 0.0 and own in _HAS_RULES and target in _MOVERS and combat(own, target) == ATTACKER_WINS:
        return hunt
    return 0.0


@dataclass(frozen=True)
class _Home:
    """The home guards (not in the thesis): their force and, per guard, its piece id and station."""

    force: float
    guards: tuple[tuple[int, tuple[int, int]], ...]

    @classmethod
    def of(cls, board: _Board, side: int, force: float) -> _Home | None:
        """The gates are our bombs next to our flag (none: the flag itself); a station is a square
        next to a gate that holds neither our flag nor our bomb. Stations are taken greedily: the one
        next to the most gates not yet covered, among those the one whose free guard is nearest, then
        the lowest (row, col); a guard is the nearest sergeant to major not yet one (a colonel to
        marshal when none is left; the lowest id among equals)."""
        flag = next((p for p in board.pieces.values() if p.owner == side and p.rank == Rank.FLAG), None)
        if not force or flag is None:
            return None

        def own_bomb(col: int, row: int) -> bool:
            piece = board.at(col, row)
            return piece is not None and piece.owner == side and piece.rank == Rank.BOMB

        def next_to(a: tuple[int, int], b: tuple[int, int]) -> bool:
            return abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1

        around = [(flag.col + dc, flag.row + dr) for dc, dr in _STEPS]
        gates = [sq for sq in around if own_bomb(*sq)] or [(flag.col, flag.row)]
        stations = {(g[0] + dc, g[1] + dr) for g in gates for dc, dr in _STEPS}
        stations = {sq for sq in stations
                    if board.passable(*sq) and sq != (flag.col, flag.row) and not own_bomb(*sq)}
        guards: list[tuple[int, tuple[int, int]]] = []

        def free_guard(station: tuple[int, int]) -> tuple[int, int] | None:
            """(steps, id) of the nearest piece not yet a guard: a sergeant to major, or when none
            is left a colonel to marshal."""
            taken = {pid for pid, _ in guards}
            for ranks in (_HOME_RANKS, _RESERVE_RANKS):
                free = [(abs(p.col - station[0]) + abs(p.row - station[1]), p.pid) for p in board.pieces.values()
                        if p.owner == side and p.rank in ranks and p.pid not in taken]
                if free:
                    return min(free)
            return None

        uncovered = list(gates)
        while uncovered and len(guards) < HOME_GUARDS:
            cover = {sq: sum(next_to(sq, g) for g in uncovered) for sq in stations}
            most = max(cover.values(), default=0)
            if most == 0:
                break
            options = []
            for sq in stations:
                if cover[sq] == most:
                    guard = free_guard(sq)
                    if guard is None:
                        return cls(force, tuple(guards)) if guards else None
                    options.append((guard[0], sq[1], sq[0], guard[1], sq))
            _steps, _row, _col, pid, station = min(options)
            guards.append((pid, station))
            uncovered = [g for g in uncovered if not next_to(station, g)]
        return cls(force, tuple(guards)) if guards else None

    def station(self, pid: int) -> tuple[int, int] | None:
        return next((station for guard, station in self.guards if guard == pid), None)


@dataclass(frozen=True)
class FlagThreat:
    """One opponent piece that threatens our flag, as the flag defence by distance sees it at the root."""

    attacker: int  # its piece id
    cost: int  # its path cost to our flag
    block: int  # the blocking square (the core's square number): the last of its way before our bomb or flag
    nearest: int  # our nearest free piece that stops it (-1: none)
    nearest_steps: int  # that piece's steps to the blocking square (-1: none)
    sent: bool  # that piece is sent to the blocking square


def _attack_step(pos: Position, sq: int, side: int) -> int:
    """An opponent piece's step onto ``sq`` on its way to ``side``'s flag: 1 onto an empty square, its own
    side's piece or the flag, 2 onto our bomb (every threat may be a miner: the step and the defusing) or our
    movable piece (the step and the fight), FAR onto a lake or off the board."""
    pid = pos.piece_id(sq)
    if pid == -2:
        return FAR
    if pid < 0:
        return 1
    _sq, owner, rank, _moved = pos.piece(pid)
    return 2 if owner == side and rank != Rank.FLAG else 1


def _neighbours(pos: Position, sq: int) -> list[int]:
    stride = pos.width + 2
    return [sq + stride, sq - stride, sq - 1, sq + 1]


def attack_costs(pos: Position, side: int, flag_sq: int) -> tuple[dict[int, int], dict[int, int]]:
    """Each reachable square's path cost to ``side``'s flag for an opponent piece and the next square of
    a cheapest way: Dijkstra from the flag backwards, squares settled by (cost, square), a way replaced
    only by a cheaper one."""
    cost = {flag_sq: 0}
    nxt: dict[int, int] = {}
    done: set[int] = set()
    heap = [(0, flag_sq)]
    while heap:
        here, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        step = _attack_step(pos, u, side)
        for v in _neighbours(pos, u):
            if pos.piece_id(v) == -2 or v in done:
                continue
            if here + step < cost.get(v, FAR):
                cost[v] = here + step
                nxt[v] = u
                heapq.heappush(heap, (cost[v], v))
    return cost, nxt


def steps_to(pos: Position, side: int, target: int) -> dict[int, int]:
    """Each square's steps to ``target`` for a piece of ``side``: lakes, our bombs and our flag are in the
    way; every other piece makes way or is taken."""
    steps = {target: 0}
    frontier = [target]
    while frontier:
        following = []
        for u in frontier:
            for v in _neighbours(pos, u):
                pid = pos.piece_id(v)
                if pid == -2 or v in steps:
                    continue
                if pid >= 0:
                    _sq, owner, rank, _moved = pos.piece(pid)
                    if owner == side and rank in (Rank.BOMB, Rank.FLAG):
                        continue
                steps[v] = steps[u] + 1
                following.append(v)
        frontier = following
    return steps


def stops(own: Rank, attacker: Rank) -> bool:
    """A piece of ours that can block ``attacker``: one that beats a miner against a known miner; a
    captain or higher against an unseen mover (it beats most of what a mover may be)."""
    if attacker == Rank.MINER:
        return own.movable and own != Rank.UNKNOWN and combat(own, Rank.MINER) == ATTACKER_WINS
    return Rank.CAPTAIN <= own <= Rank.MARSHAL


def flag_defence(pos: Position, side: int) -> tuple[list[FlagThreat], list[tuple[int, dict[int, int], int]]]:
    """The flag defence by distance (not in the thesis; docs/strategic.md, departure 13): every known
    opponent miner and unseen opponent piece that has moved, with a way to our flag, most urgent first
    (lowest path cost, then lowest id); each gets our nearest piece that stops it and is not sent yet (fewest
    steps to its blocking square, then lowest id), sent when the threat's cost to that square is at most
    the piece's steps plus one, FLAG_DEFENDERS at most. Returns the rows and the blockers (id, steps to
    their blocking square by square, the threat's id)."""
    own = [(pid, *pos.piece(pid)) for pid in range(pos.piece_count)]
    flag_sq = next((sq for _pid, sq, owner, rank, _m in own if sq >= 0 and owner == side and rank == Rank.FLAG), -1)
    if flag_sq < 0:
        return [], []
    cost, nxt = attack_costs(pos, side, flag_sq)

    def gate(sq: int) -> bool:
        pid = pos.piece_id(sq)
        if sq == flag_sq:
            return True
        return pid >= 0 and pos.piece(pid)[1] == side and pos.piece(pid)[2] == Rank.BOMB

    threats = sorted((cost[sq], pid) for pid, sq, owner, rank, moved in own
                     if sq >= 0 and owner != side and sq in cost
                     and (rank == Rank.MINER or (rank == Rank.UNKNOWN and moved > 0)))
    rows: list[FlagThreat] = []
    blockers: list[tuple[int, dict[int, int]]] = []
    foes: list[int] = []
    for total, attacker in threats:
        block = pos.piece(attacker)[0]
        while not gate(nxt[block]):
            block = nxt[block]
        steps = steps_to(pos, side, block)
        sent_ids = {pid for pid, _steps in blockers}
        free = [(steps.get(sq, FAR), pid) for pid, sq, owner, rank, _m in own
                if sq >= 0 and owner == side and pid not in sent_ids
                and stops(Rank(rank), Rank(pos.piece(attacker)[2]))]
        free = [option for option in free if option[0] < FAR]
        nearest_steps, nearest = min(free) if free else (-1, -1)
        sent = nearest >= 0 and len(blockers) < FLAG_DEFENDERS and total - cost[block] <= nearest_steps + 1
        if sent:
            blockers.append((nearest, steps))
            foes.append(attacker)
        rows.append(FlagThreat(attacker, total, block, nearest, nearest_steps, sent))
    return rows, [(pid, steps, foe) for (pid, steps), foe in zip(blockers, foes, strict=True)]


def _blocker_strike(board: _Board, blockers: Sequence[tuple[int, dict[int, int], int]], force: float, pid: int,
                    target: int) -> float:
    """A blocker's strike on the threat it is sent against: the block itself, the strongest step's pull,
    ``force`` / (4 * t); every other strike scores 0."""
    if not any(blocker == pid and foe == target for blocker, _steps, foe in blockers):
        return 0.0
    t = max(1.0, sum(1 for p in board.pieces.values() if p.owner != board.pieces[pid].owner) / 10.0)
    return force / (MIN_STEPS * t)


def _blocker_score(board: _Board, blockers: Sequence[tuple[int, dict[int, int], int]], force: float, pid: int,
                   frm: int, to: int) -> float:
    """A blocker's step: ``force`` / (L * t) when it shortens its way to the blocking square (L: its steps
    there before the move, at least 4), as much below 0 when it lengthens it."""
    for blocker, steps, _foe in blockers:
        if blocker != pid:
            continue
        before, after = steps.get(frm, FAR), steps.get(to, FAR)
        if before >= FAR or after == before:
            return 0.0
        t = max(1.0, sum(1 for p in board.pieces.values() if p.owner != board.pieces[pid].owner) / 10.0)
        c = force / (max(MIN_STEPS, before) * t)
        return c if after < before else -c
    return 0.0


def _pull(board: _Board, piece: _Piece, p_flag: Sequence[float], p_bomb: Sequence[float],
          hunt: float = 0.0, miner_pull: float = 1.0, guard: float = 0.0,
          home: _Home | None = None, no_pull: frozenset[tuple[int, int]] = frozenset()) -> tuple[float, float]:
    """The summed (x, y) pull on one own piece, before the moved-piece factor. ``no_pull``: pairs
    (own pid, target pid) of a chase the target escapes, where only the hunt still pulls."""
    opp = 1 - piece.owner
    flag = (next((p for p in board.pieces.values() if p.owner == piece.owner and p.rank == Rank.FLAG), None)
            if guard else None)
    targets = sorted((p for p in board.pieces.values() if p.owner == opp), key=lambda p: p.pid)
    t = max(1.0, len(targets) / 10.0)
    fx = fy = 0.0
    for target in targets:
        if (piece.pid, target.pid) in no_pull:
            force = hunt_pull(piece.rank, target.rank, hunt)
        else:
            force = target_force(piece.rank, target.rank, p_flag[target.pid], p_bomb[target.pid],
                                 target.rank == Rank.UNKNOWN and _is_open(board, target), hunt, miner_pull)
        if (flag is not None and target.rank == Rank.MINER
                and combat(piece.rank, Rank.MINER) == ATTACKER_WINS
                and abs(target.col - flag.col) + abs(target.row - flag.row) <= GUARD_RADIUS):
            force += guard  # the guard: a known miner near our flag (not in the thesis)
        if force == 0.0:
            continue
        dx, dy = target.col - piece.col, target.row - piece.row
        steps = max(MIN_STEPS, abs(dx) + abs(dy))
        dist = math.sqrt(dx * dx + dy * dy)
        c = force / (steps * t)
        fx += c * dx / dist
        fy += c * dy / dist
    station = home.station(piece.pid) if home is not None else None
    if home is not None and station is not None and station != (piece.col, piece.row):
        # A home guard away from its station is pulled back to it.
        dx, dy = station[0] - piece.col, station[1] - piece.row
        c = home.force / (max(MIN_STEPS, abs(dx) + abs(dy)) * t)
        dist = math.sqrt(dx * dx + dy * dy)
        fx += c * dx / dist
        fy += c * dy / dist
    return fx, fy


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _score(board: _Board, frm: tuple[int, int], to: tuple[int, int], p_flag: Sequence[float],
           p_bomb: Sequence[float], susp: Sequence[float], hunt: float = 0.0,
           miner_pull: float = 1.0, guard: float = 0.0, home: _Home | None = None,
           no_pull: frozenset[tuple[int, int]] = frozenset()) -> float | None:
    """One move's own score; None for a strike the strategic search leaves out."""
    mover = board.at(*frm)
    assert mover is not None
    target = board.at(*to)
    travelled = abs(to[0] - frm[0]) + abs(to[1] - frm[1])
    if target is not None:
        if mover.rank != Rank.SCOUT or travelled < 2:
            return None
        # A scout's long strike: suspicions of the piece struck, else 0.1 per step it took.
        points = susp[target.pid] if susp[target.pid] > 0 else 0.1 * target.moved
        return points + 0.1 * travelled
    fx, fy = _pull(board, mover, p_flag, p_bomb, hunt, miner_pull, guard, home, no_pull)
    factor = MOVED_FACTOR.get(mover.rank, 1.0) if mover.moved else 1.0
    score = (fx * _sign(to[0] - frm[0]) + fy * _sign(to[1] - frm[1])) * factor
    if home is not None and home.station(mover.pid) == frm:
        t = max(1.0, sum(1 for p in board.pieces.values() if p.owner != mover.owner) / 10.0)
        score -= 2.0 * home.force / (MIN_STEPS * t)  # a home guard leaving its station
    return score


# The answer (not in the thesis; issue 45): their known pieces of these ranks in our half each get one
# responder, the most dangerous first.
_ANSWERED = (Rank.MARSHAL, Rank.GENERAL, Rank.COLONEL, Rank.MAJOR)
FLIGHT_STEPS = 2  # our pieces the raider beats this many path steps from it or nearer step back to the answer
AMBUSH_STEPS = 2  # a responder the raider beats when it attacks (the spy) waits this many path steps off


def _in_our_half(board: _Board, side: int, row: int) -> bool:
    half = board.height // 2
    return row < half if side == 0 else row >= board.height - half


def path_steps(board: _Board, side: int, start: tuple[int, int]) -> dict[tuple[int, int], int]:
    """Path steps from ``start`` to every square reachable from it: lakes and the pieces of ``side``'s
    opponent block (the piece on ``start`` excepted); ``side``'s own pieces do not, for they can step
    aside (and the raider takes what it beats)."""
    steps = {start: 0}
    frontier = deque([start])
    while frontier:
        col, row = frontier.popleft()
        for dc, dr in _STEPS:
            sq = (col + dc, row + dr)
            if sq in steps or not board.passable(*sq):
                continue
            piece = board.at(*sq)
            if piece is not None and piece.owner != side:
                continue
            steps[sq] = steps[(col, row)] + 1
            frontier.append(sq)
    return steps


def answers(board: _Board, side: int) -> list[tuple[_Piece, _Piece]]:
    """(raider, responder) pairs: each known opponent marshal, general, colonel or major in ``side``'s
    half, the highest first (the lowest id among equals), gets the own piece not yet a responder that
    beats it attacking (the spy their marshal) or, when ``side`` is not behind in pieces on the board,
    has its rank (a trade), the nearest by ``path_steps`` from the raider; among equals one that wins
    before a trade, then the lowest rank, then the lowest id. A raider with no such piece in reach has
    no answer."""
    ours = sum(1 for p in board.pieces.values() if p.owner == side)
    level = ours >= len(board.pieces) - ours
    raiders = sorted((p for p in board.pieces.values()
                      if p.owner != side and p.rank in _ANSWERED and _in_our_half(board, side, p.row)),
                     key=lambda p: (-int(p.rank), p.pid))
    taken: set[int] = set()
    pairs = []
    for raider in raiders:
        steps = path_steps(board, side, (raider.col, raider.row))
        options = []
        for piece in board.pieces.values():
            if piece.owner != side or not piece.rank.movable or piece.pid in taken:
                continue
            wins = combat(piece.rank, raider.rank) == ATTACKER_WINS
            if not (wins or (piece.rank == raider.rank and level)):
                continue
            far = steps.get((piece.col, piece.row))
            if far is not None:
                options.append((far, 0 if wins else 1, int(piece.rank), piece.pid, piece))
        if options:
            responder = min(options, key=lambda o: o[:4])[4]
            taken.add(responder.pid)
            pairs.append((raider, responder))
    return pairs


def answer_terms(pos: Position, side: int, force: float, moves: Sequence[int]) -> list[float]:
    """Each root move's answer term (not in the thesis; issue 45): for every (raider, responder) of
    ``answers``, the responder's move scores ``force`` when it shortens its path to the raider and
    ``-force`` when it lengthens it (the spy against their marshal, which the raider beats attacking it, aims
    at AMBUSH_STEPS instead); a move of an own piece the raider beats, standing at most
    FLIGHT_STEPS path steps from it, scores ``force`` when it lengthens its path to the raider and
    shortens its path to the responder (a step back towards the answer, not just aside). Strikes: 0."""
    out = [0.0] * len(moves)
    if force == 0.0:
        return out
    board = _Board.of(pos)
    for raider, responder in answers(board, side):
        to_raider = path_steps(board, side, (raider.col, raider.row))
        to_responder = path_steps(board, side, (responder.col, responder.row))
        for i, move in enumerate(moves):
            frm, to = pos.coords(move & 0xFF), pos.coords(move >> 8)
            mover = board.at(*frm)
            if mover is None or board.at(*to) is not None:
                continue
            far = 1 << 20  # out of reach, as the compiled search counts it
            before, after = to_raider.get(frm, far), to_raider.get(to, far)
            if mover.pid == responder.pid:
                if combat(raider.rank, responder.rank) == ATTACKER_WINS:
                    # Next to the raider the spy would be struck first: it waits at AMBUSH_STEPS.
                    before = abs(before - AMBUSH_STEPS) if before < far else far
                    after = abs(after - AMBUSH_STEPS) if after < far else far
                if after != before:
                    out[i] += force if after < before else -force
            elif (combat(raider.rank, mover.rank) == ATTACKER_WINS and before <= FLIGHT_STEPS and after > before
                  and to_responder.get(to, far) < to_responder.get(frm, far)):
                out[i] += force
    return out


def strategic_scores(
    pos: Position,
    side: int,
    p_flag: Sequence[float],
    p_bomb: Sequence[float],
    moves: Sequence[int],
    flag_suspicion: Sequence[float] | None = None,
    lookahead: bool = True,
    params: StrategicParams | None = None,
    piece_values: Sequence[Sequence[float]] | None = None,
    two_squares: int = 0,
) -> list[float]:
    """Figure 9: each move's score plus the best score of a next own move (its own score when no
    next move beats it); strikes other than scouts' long ones score 0. Without ``lookahead``, each
    move's own score. ``params`` holds what is not in the thesis (None: the thesis's search):
    ``hunt_force`` (the endgame hunt's force, 0: off), ``miner_pull`` (the factor on rules 3 and 5),
    ``miner_guard`` (the pull towards a known miner within ``GUARD_RADIUS`` steps of our flag) and
    ``home_guard`` (the force that keeps up to ``HOME_GUARDS`` sergeants to majors on stations next to
    the bombs by our flag; chosen at the root); ``flag_defence_force`` (the pull of the blockers that
    ``flag_defence`` sends, chosen at the root). ``chase_weight`` (0: off) with ``piece_values`` (a known piece's
    value by side and rank) and the game's ``two_squares`` limit: the chase model (``chase_balance``)."""
    params = params if params is not None else StrategicParams()
    hunt, miner_pull, guard, home = params.hunt_force, params.miner_pull, params.miner_guard, params.home_guard
    susp = list(flag_suspicion) if flag_suspicion is not None else flag_suspicions(pos, side)
    board = _Board.of(pos)
    home_guard = _Home.of(board, side, home)
    blockers = flag_defence(pos, side)[1] if params.flag_defence_force != 0.0 else []
    force = params.flag_defence_force
    chasing = params.chase_weight > 0.0 and piece_values is not None and two_squares > 0
    no_pull: frozenset[tuple[int, int]] = frozenset()
    if chasing:
        assert piece_values is not None
        if pos.side != side:
            raise ValueError("the chase model scores the moves of the side to move")
        escapes: set[tuple[int, int]] = set()
        tracked: set[tuple[int, int]] = set()
        chase_balance(pos, side, piece_values, two_squares, escapes=escapes, track=tracked)
        root = chase_balance(pos, side, piece_values, two_squares, tracked=tracked)
        no_pull = frozenset(escapes)
    out: list[float] = []
    for move in moves:
        frm, to = pos.coords(move & 0xFF), pos.coords(move >> 8)
        score = _score(board, frm, to, p_flag, p_bomb, susp, hunt, miner_pull, guard, home_guard, no_pull)
        if score is None:
            # A strike, sorted out (9.2), but for a blocker's strike on the threat it is sent against.
            mover, struck = board.at(*frm), board.at(*to)
            assert mover is not None and struck is not None
            out.append(_blocker_strike(board, blockers, force, mover.pid, struck.pid) if blockers else 0.0)
            continue
        # The flag's blockers count at the root only: as next moves they would lift every quiet move alike.
        mover = board.at(*frm)
        assert mover is not None
        blocker = (_blocker_score(board, blockers, force, mover.pid, move & 0xFF, move >> 8)
                   if blockers and board.at(*to) is None else 0.0)
        if not lookahead:
            out.append(score + blocker)
            continue
        after = board.played(frm, to)
        best = score
        for nfrm, nto in after.own_moves(side):
            next_score = _score(after, nfrm, nto, p_flag, p_bomb, susp, hunt, miner_pull, guard, home_guard,
                                no_pull)
            if next_score is not None and next_score > best:
                best = next_score
        out.append(score + best + blocker)
    if chasing:
        assert piece_values is not None
        for i, move in enumerate(moves):
            if pos.piece_id(move >> 8) >= 0:
                continue  # strikes score nothing in the strategic search
            after_move = pos.copy()
            after_move.make(move)
            balance = chase_balance(after_move, side, piece_values, two_squares, tracked=tracked)
            out[i] += params.chase_weight * (balance - root)
    if params.answer_force:
        for i, term in enumerate(answer_terms(pos, side, params.answer_force, moves)):
            out[i] += term
    if params.progress_force > 0.0 and lookahead:
        progress = progress_scores(board, side, [(pos.coords(m & 0xFF), pos.coords(m >> 8)) for m in moves],
                                   params.progress_top, p_flag)
        for i, steps in enumerate(progress):
            out[i] += params.progress_force * steps
    return out


# --- the progress term (not in the thesis; issue 45, docs/engine.md "A won endgame") ------------------------

# Sent to the unmoved candidates for their flag: cheap pieces, and the miner that clears the bombs.
_EXPENDABLE = frozenset({Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT})


def progress_targets(board: _Board, side: int, own: Rank, top: int,
                     p_flag: Sequence[float] | None = None) -> list[_Piece]:
    """What a piece of rank ``own`` makes progress towards: a known opponent mover it beats, a moved unknown one
    when ``own`` is above ``top`` (their strongest movable rank left); and for an expendable piece or one with
    nothing else to hunt the unmoved unknown pieces (flag candidates) with at least half the highest P(flag)
    among them (all when none has any; ``p_flag`` None: all)."""
    theirs = [p for pid, p in sorted(board.pieces.items()) if p.owner != side]
    hunted = [p for p in theirs
              if (p.rank == Rank.UNKNOWN and p.moved > 0 and own > top)
              or (p.rank in _MOVERS and combat(own, p.rank) == ATTACKER_WINS)]
    if own in _EXPENDABLE or not hunted:
        unmoved = [p for p in theirs if p.rank == Rank.UNKNOWN and p.moved == 0]
        floor = 0.5 * max((p_flag[p.pid] for p in unmoved), default=0.0) if p_flag is not None else 0.0
        hunted += [p for p in unmoved if p_flag is None or p_flag[p.pid] >= floor]
    return hunted


def progress_distances(board: _Board, side: int, own: Rank, top: int,
                       p_flag: Sequence[float] | None = None) -> dict[tuple[int, int], int] | None:
    """Steps from every square reached to the nearest target of a piece of rank ``own``: a breadth-first walk
    from the targets over empty squares, an occupied square reached but not walked through. None: no target."""
    targets = progress_targets(board, side, own, top, p_flag)
    if not targets:
        return None
    occupied = {(p.col, p.row) for p in board.pieces.values()}
    dist = {(p.col, p.row): 0 for p in targets}
    frontier = [(p.col, p.row) for p in targets]
    while frontier:
        step = []
        for col, row in frontier:
            if dist[(col, row)] > 0 and (col, row) in occupied:
                continue
            for dc, dr in ((0, -1), (0, 1), (-1, 0), (1, 0)):
                nb = (col + dc, row + dr)
                if not board.passable(*nb) or nb in dist:
                    continue
                dist[nb] = dist[(col, row)] + 1
                step.append(nb)
        frontier = step
    return dist


def progress_scores(board: _Board, side: int, moves: Sequence[tuple[tuple[int, int], tuple[int, int]]],
                    top: int, p_flag: Sequence[float] | None = None) -> list[int]:
    """For each move, the steps it takes its piece nearer to its nearest target (negative: away; a last square
    the walk never reached counts one step further than the first); strikes and pieces without a target: 0."""
    maps: dict[Rank, dict[tuple[int, int], int] | None] = {}
    out = []
    for frm, to in moves:
        piece = board.at(*frm)
        if board.at(*to) is not None or piece is None or piece.rank not in _MOVERS:
            out.append(0)
            continue
        if piece.rank not in maps:
            maps[piece.rank] = progress_distances(board, side, piece.rank, top, p_flag)
        dist = maps[piece.rank]
        if dist is None or frm not in dist:
            out.append(0)
            continue
        out.append(dist[frm] - dist.get(to, dist[frm] + 1))
    return out


def chase_balance(pos: Position, side: int, piece_values: Sequence[Sequence[float]], limit: int, *,
                  escapes: set[tuple[int, int]] | None = None, track: set[tuple[int, int]] | None = None,
                  tracked: Iterable[tuple[int, int]] = ()) -> float:
    """The chase balance of ``pos`` for ``side`` (not in the thesis; docs/two-squares.md): for every
    chase pair whose capture the look-ahead foresees in k attacker moves, the chased piece's
    value times CHASE_DISCOUNT ** (k - 1), added when ``side`` chases and taken off when ``side``'s piece is
    chased; none where the look-ahead's ``protectors`` (pieces of the chased side on the trap's border whose
    rank is unknown or beats the attacker) may protect it. ``escapes`` collects (attacker pid, defender pid)
    of ``side``'s chases the defender escapes for sure (reason separate, refuge or count). The pairs are
    those within ``CHASE_DISTANCE`` steps and the ``tracked`` ones; ``track`` collects every pair taken."""
    balance = 0.0
    for chase in scan(pos, limit, CHASE_DISTANCE, also=tracked):
        attacker = pos.piece_id(pos.square(chase.attacker.col, chase.attacker.row))
        defender = pos.piece_id(pos.square(chase.defender.col, chase.defender.row))
        if track is not None:
            track.add((attacker, defender))
        moves = chase.verdict.attacker_moves
        if not chase.verdict.captured or moves is None:
            if escapes is not None and chase.attacker_side == side and chase.verdict.reason in _SURE_ESCAPES:
                escapes.add((attacker, defender))
            continue
        if chase.protectors:
            continue  # a piece on the trap's border may protect the chased one
        _sq, owner, rank, _moved = pos.piece(defender)
        value = piece_values[owner][rank] * CHASE_DISCOUNT ** (moves - 1)
        balance += value if chase.attacker_side == side else -value
    return balance


__all__ = ["MOVED_FACTOR", "RULES", "FlagThreat", "Rule", "answer_terms", "answers", "attack_costs", "chase_balance",
           "flag_defence", "flag_suspicions", "hunt_pull", "path_steps", "progress_scores", "steps_to", "stops",
           "strategic_scores", "target_force"]
