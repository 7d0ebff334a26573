"""The engine's search written plainly, for tests and benchmarks to check the compiled one against.

Slow on purpose and independent of the compiled engine: it reads the position through the core's
``Position`` wrapper only (pieces, and the history by unmaking a copy), keeps its own board as
Python lists, and works out the thesis's probabilities, values and searches from the text of the
specification (docs/engine.md) without any of the compiled modules. It takes the same
``SearchParams``; the random term must be off (amplitude 0), since its hash is the core's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from engine_ext.engine.settings import AHEAD_MARGIN, SearchParams
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS, Rank, combat

FLAG, BOMB, SPY, SCOUT, MINER, MARSHAL, UNKNOWN = (
    int(Rank.FLAG), int(Rank.BOMB), int(Rank.SPY), int(Rank.SCOUT), int(Rank.MINER), int(Rank.MARSHAL),
    int(Rank.UNKNOWN),
)
LIEUTENANT = int(Rank.LIEUTENANT)
MOVABLE = tuple(range(SPY, MARSHAL + 1))  # rank codes 1..10
OWN, OPP = 0, 1
WIN, LOSE, BOTH, PASSIVE = 0, 1, 2, 3
NULL = 0
BLOCKED = -2
TIE_EPSILON = 1e-9
Pair = tuple[float, float]


def victim_key(rank: int) -> int:
    """Move ordering only: the flag first, then the higher ranks, unknown pieces in the middle."""
    return {FLAG: 20, UNKNOWN: 6, BOMB: 1}.get(rank, rank + 1)


def win_weight(a: int, d: int) -> float:
    outcome = combat(Rank(a), Rank(d))
    return 1.0 if outcome == ATTACKER_WINS else 0.5 if outcome == BOTH_DIE else 0.0


@dataclass
class HistoryEntry:
    move: int
    attacker: int
    defender: int  # -1: a move onto an empty square
    result: int  # 0 no combat, else ATTACKER_WINS / DEFENDER_WINS / BOTH_DIE


class Board:
    """A plain board with the core's square numbering, so move codes are the same."""

    def __init__(self, pos: Position) -> None:
        self.width = pos.width
        self.height = pos.height
        self.stride = pos.width + 2
        self.range_attacks = pos.range_attacks
        size = self.stride * (self.height + 2)
        count = pos.piece_count
        self.owner = [pos.piece(pid)[1] for pid in range(count)]
        self.rank = [pos.piece(pid)[2] for pid in range(count)]
        self.first = [0, next((p for p in range(count) if self.owner[p] == 1), count)]
        self.end = [self.first[1], count]
        # Walk the history back on a copy to find every move, its pieces and its result.
        back = pos.copy()
        entries: list[HistoryEntry] = []
        while back.ply > 0:
            move = back.last_move()
            frm, to = move & 0xFF, move >> 8
            after = back.piece_id(to)
            back.unmake()
            attacker, defender = back.piece_id(frm), back.piece_id(to)
            if defender < 0:
                result = 0
            elif after == attacker:
                result = ATTACKER_WINS
            elif after == defender:
                result = DEFENDER_WINS
            else:
                result = BOTH_DIE
            entries.append(HistoryEntry(move, attacker, defender, result))
        entries.reverse()
        self.square = [back.piece(pid)[0] for pid in range(count)]
        self.moves = [0] * count
        self.board = [BLOCKED] * size
        for sq in range(size):
            occupant = back.piece_id(sq)
            self.board[sq] = -1 if occupant >= 0 else occupant
        for pid in range(count):
            if self.square[pid] >= 0:
                self.board[self.square[pid]] = pid
        self.side = back.side
        self.history: list[HistoryEntry] = []
        self.flag_lost = [False, False]
        # Replay: who has been seen, who moved towards a piece after it was seen (9.3).
        self.shown: set[int] = set()
        self.approached: set[tuple[int, int]] = set()
        for entry in entries:
            frm, to = entry.move & 0xFF, entry.move >> 8
            if entry.defender < 0:
                for k in range(self.first[1 - self.owner[entry.attacker]], self.end[1 - self.owner[entry.attacker]]):
                    ksq = self.square[k]
                    if ksq >= 0 and k in self.shown and self.dist(to, ksq) < self.dist(frm, ksq):
                        self.approached.add((entry.attacker, k))
                if self.dist(frm, to) > 1:
                    self.shown.add(entry.attacker)
            else:
                self.shown.update((entry.attacker, entry.defender))
            self.make(entry.move, entry.result)
        assert self.side == pos.side

    def col_row(self, sq: int) -> tuple[int, int]:
        return sq % self.stride - 1, sq // self.stride - 1

    def dist(self, a: int, b: int) -> int:
        (ac, ar), (bc, br) = self.col_row(a), self.col_row(b)
        return abs(ac - bc) + abs(ar - br)

    @property
    def ply(self) -> int:
        return len(self.history)

    def make(self, move: int, result: int) -> None:
        frm, to = move & 0xFF, move >> 8
        a, d = self.board[frm], self.board[to]
        self.moves[a] += 1
        if d < 0:
            result = 0
            self.board[frm], self.board[to], self.square[a] = -1, a, to
        elif result == ATTACKER_WINS:
            self._remove(d)
            self.board[frm], self.board[to], self.square[a] = -1, a, to
        elif result == DEFENDER_WINS:
            self._remove(a)
        else:
            self._remove(a)
            self._remove(d)
        self.history.append(HistoryEntry(move, a, d, result))
        self.side ^= 1

    def _remove(self, pid: int) -> None:
        self.board[self.square[pid]] = -1
        self.square[pid] = -1
        if self.rank[pid] == FLAG:
            self.flag_lost[self.owner[pid]] = True

    def unmake(self) -> None:
        entry = self.history.pop()
        self.side ^= 1
        frm, to = entry.move & 0xFF, entry.move >> 8
        a, d = entry.attacker, entry.defender
        self.moves[a] -= 1
        if entry.result == 0:
            self.board[to], self.board[frm], self.square[a] = -1, a, frm
        elif entry.result == ATTACKER_WINS:
            self.board[frm], self.square[a] = a, frm
            self._restore(d, to)
        elif entry.result == DEFENDER_WINS:
            self._restore(a, frm)
        else:
            self._restore(a, frm)
            self._restore(d, to)

    def _restore(self, pid: int, sq: int) -> None:
        self.board[sq] = pid
        self.square[pid] = sq
        if self.rank[pid] == FLAG:
            self.flag_lost[self.owner[pid]] = False

    def make_null(self) -> None:
        self.history.append(HistoryEntry(NULL, -1, -1, 0))
        self.side ^= 1

    def unmake_null(self) -> None:
        self.history.pop()
        self.side ^= 1

    def breaks_two_squares(self, move: int, limit: int) -> bool:
        reverse = (move >> 8) | ((move & 0xFF) << 8)
        for count in range(1, limit + 1):
            index = self.ply - 2 * count
            if index < 0:
                return False
            if self.history[index].move not in (move, reverse):
                return False
        return True


class Reference:
    """Knowledge, values and the searches over one root position."""

    def __init__(self, pos: Position, me: int, initial: Sequence[int], params: SearchParams, *,
                 public: Iterable[int] | None = None, approached: Iterable[tuple[int, int]] | None = None,
                 moved: Iterable[int] = (), prune: bool = True,
                 beliefs: ArrayLike | None = None) -> None:
        if params.random_amplitude != 0:
            raise ValueError("the reference search has no random term: set random_amplitude to 0")
        self.p = params
        self.prune = prune  # the exact cut-off in the opponent's view (docs/engine.md); off: plain search
        self.b = Board(pos)
        b = self.b
        for pid in moved:
            b.moves[pid] = max(b.moves[pid], 1)
        self.me, self.enemy = me, 1 - me
        self.initial = list(initial)
        shown = set(b.shown) if public is None else set(public)
        # public: ours when the opponent has seen them; theirs when we know the rank.
        self.public = [
            (pid in shown) if b.owner[pid] == me else b.rank[pid] != UNKNOWN for pid in range(len(b.rank))
        ]
        self.approached = set(b.approached) if approached is None else set(approached)
        self.fear = (params.own_fear, params.est_opp_fear, params.est_own_fear)
        self._pools()
        if params.beliefs:
            self._beliefs(beliefs)
        self._values()
        self.root_ply = b.ply
        self.nodes = 0
        self.kpub = list(self.public)
        self.area: set[int] = set()
        self.near: set[int] = set()
        self.fight, self.fight_near = self._fights()
        self.depth = 0

    # --- knowledge (7.3) -------------------------------------------------------------------------

    def _alive_unknown(self, side: int) -> list[int]:
        b = self.b
        return [pid for pid in range(b.first[side], b.end[side]) if b.square[pid] >= 0 and not self.public[pid]]

    def _pools(self) -> None:
        b, me, enemy = self.b, self.me, self.enemy
        self.pool = [[0] * 13, [0] * 13]
        self.alive = [[0] * 13, [0] * 13]
        seen = [0] * 13
        for pid in range(b.first[enemy], b.end[enemy]):
            if b.rank[pid] != UNKNOWN:
                seen[b.rank[pid]] += 1
                if b.square[pid] >= 0:
                    self.alive[enemy][b.rank[pid]] += 1
        for r in range(12):
            self.pool[enemy][r] = max(0, self.initial[r] - seen[r])
            self.alive[enemy][r] += self.pool[enemy][r]
        for pid in range(b.first[me], b.end[me]):
            if b.square[pid] >= 0:
                self.alive[me][b.rank[pid]] += 1
                if not self.public[pid]:
                    self.pool[me][b.rank[pid]] += 1
        self.n_unknown = [sum(self.pool[s]) for s in (0, 1)]
        self.n_movable = [sum(self.pool[s][r] for r in MOVABLE) for s in (0, 1)]
        self.n_moved = [sum(1 for pid in self._alive_unknown(s) if b.moves[pid] > 0) for s in (0, 1)]
        # Flag suspicions and the flag / bomb probabilities of each unknown piece.
        self.suspicion = [0.0] * len(b.rank)
        self.p_flag = [0.0] * len(b.rank)
        self.p_bomb = [0.0] * len(b.rank)
        self.susp_total = [0.0, 0.0]
        for s in (0, 1):
            back_row = 0 if s == 0 else b.height - 1
            unmoved = [pid for pid in self._alive_unknown(s) if b.moves[pid] == 0]
            for pid in unmoved:
                sq = b.square[pid]
                count = 1.0 if b.col_row(sq)[1] == back_row else 0.0
                for step in (b.stride, -b.stride, -1, 1):
                    nb = b.board[sq + step]
                    if nb >= 0 and b.owner[nb] == s and self.public[nb] and b.rank[nb] == BOMB:
                        count += 1.0
                        break
                self.suspicion[pid] = count
            total = sum(self.suspicion[pid] for pid in unmoved)
            self.susp_total[s] = total
            for pid in range(b.first[s], b.end[s]):
                if b.square[pid] >= 0 and self.public[pid]:
                    self.p_flag[pid] = 1.0 if b.rank[pid] == FLAG else 0.0
                    self.p_bomb[pid] = 1.0 if b.rank[pid] == BOMB else 0.0
            unmoved_pool = max(1, self.n_unknown[s] - self.n_moved[s])
            for pid in unmoved:
                if self.pool[s][FLAG] > 0:
                    self.p_flag[pid] = (self.suspicion[pid] / total if total > 0
                                        else self.pool[s][FLAG] / unmoved_pool)
                self.p_bomb[pid] = min(1.0, self.pool[s][BOMB] / unmoved_pool)

    # --- beliefs (issue 22, docs/engine.md "Beliefs in the search") ---------------------------------

    def pool_row(self, side: int, moved: bool) -> list[float]:
        """The pool as one piece's rank distribution: a moved piece is any of the movable pool; an
        unmoved one a movable piece that has not moved yet (the share of case 3) or a bomb or the flag."""
        pool, movable, n_moved = self.pool[side], self.n_movable[side], self.n_moved[side]
        unmoved_all = self.n_unknown[side] - n_moved
        row = [0.0] * 13
        if moved:
            if movable > 0:
                for r in MOVABLE:
                    row[r] = pool[r] / movable
            return row
        if unmoved_all > 0:
            share = max(0.0, (movable - n_moved) / movable) if movable > 0 else 0.0
            for r in range(12):
                row[r] = pool[r] * share / unmoved_all if r in MOVABLE else pool[r] / unmoved_all
        elif self.n_unknown[side] > 0:
            for r in range(12):
                row[r] = pool[r] / self.n_unknown[side]
        return row

    @staticmethod
    def normalised(row: list[float], movable_only: bool) -> list[float] | None:
        kept = [x if (r in MOVABLE or not movable_only) else 0.0 for r, x in enumerate(row[:12])]
        total = 0.0
        for r in range(12):
            if r in MOVABLE or not movable_only:
                total += kept[r]
        if not total > 0.0:
            return None
        return [x / total for x in kept] + [0.0]

    def _beliefs(self, beliefs: ArrayLike | None) -> None:
        """Each unknown piece's distribution as its opponent sees it, from ``beliefs`` (rows by piece
        id) or the pool; ranks the pool has run out of and, for a piece that has moved, bomb and flag
        get nothing; an empty row falls back to the pool's. Then the flag and bomb probabilities from
        the rows, and the flag suspicions shared out by them."""
        b = self.b
        count = len(b.rank)
        rows = None if beliefs is None else np.asarray(beliefs, dtype=np.float64).tolist()
        self.bel_still = [[0.0] * 13 for _ in range(count)]
        self.bel_moved = [[0.0] * 13 for _ in range(count)]
        for pid in range(count):
            if b.square[pid] < 0 or self.public[pid]:
                continue
            s, moved = b.owner[pid], b.moves[pid] > 0
            raw = [0.0] * 13
            if rows is not None:
                raw = [float(rows[pid][r]) if r < 12 and self.pool[s][r] > 0 else 0.0 for r in range(13)]
            still = self.normalised(raw, moved) if rows is not None else None
            if still is None:
                still = self.normalised(self.pool_row(s, moved), moved) or [0.0] * 13
            mv = self.normalised(still, True)
            if mv is None:
                mv = self.normalised(self.pool_row(s, True), True) or [0.0] * 13
            self.bel_still[pid], self.bel_moved[pid] = still, mv
        for s in (0, 1):
            scale = self.susp_total[s] if self.susp_total[s] > 0.0 else 1.0
            for pid in range(b.first[s], b.end[s]):
                if b.square[pid] >= 0 and not self.public[pid]:
                    self.p_flag[pid] = self.bel_still[pid][FLAG]
                    self.p_bomb[pid] = self.bel_still[pid][BOMB]
                    self.suspicion[pid] = self.p_flag[pid] * scale

    def chance(self, row: list[float], attacker: int | None, defender: int | None) -> float:
        """P(success) with one side's rank spread over ``row``: of a known ``attacker`` on the piece,
        or of the piece on a known ``defender``; ties count half."""
        total = 0.0
        for r in range(12):
            if row[r] == 0.0:
                continue
            total += row[r] * (win_weight(attacker, r) if attacker is not None else win_weight(r, defender or 0))
        return total

    def belief_win(self, ak: bool, dk: bool, a: int, d: int) -> float:
        b = self.b
        if dk:
            return self.chance(self.bel_moved[a], None, b.rank[d])
        row = self.bel_moved[d] if b.moves[d] > 0 else self.bel_still[d]
        if ak:
            return self.chance(row, b.rank[a], None)
        total = 0.0
        for r in MOVABLE:
            total += self.bel_moved[a][r] * self.chance(row, r, None)
        return total

    def _v(self, side: int, k: int, side_defends: bool) -> float:
        pool = self.pool[side]
        if side_defends:
            return sum(pool[r] * win_weight(k, r) for r in MOVABLE)
        return sum(pool[r] * win_weight(r, k) for r in MOVABLE)

    def case1(self, side: int, k: int) -> float:
        """Unknown attacker of ``side`` against a known defender of rank k: |V(A,k)| / |O(A,r>1)|."""
        movable = self.n_movable[side]
        return self._v(side, k, False) / movable if movable else 0.0

    def case2(self, side: int, k: int) -> float:
        """Known attacker of rank k against a moved unknown defender of ``side``."""
        movable = self.n_movable[side]
        return self._v(side, k, True) / movable if movable else 0.0

    def case3(self, side: int, k: int) -> float:
        """Known attacker of rank k against an unmoved unknown defender of ``side``."""
        movable, moved, unknown = self.n_movable[side], self.n_moved[side], self.n_unknown[side]
        s = self._v(side, k, True) * max(0.0, (movable - moved) / movable) if movable else 0.0
        stationary = self.pool[side][FLAG] + (self.pool[side][BOMB] if k == MINER else 0)
        if unknown - moved > 0:
            p = (s + stationary) / (unknown - moved)
        elif unknown > 0:
            p = (self._v(side, k, True) + stationary) / unknown
        else:
            p = 0.0
        return min(1.0, p)

    def unmoved_win(self, attacker_known: bool, a: int, d: int) -> float:
        """P(win) of a on the unmoved unknown d (case 3 or 5)."""
        b = self.b
        return self.case3(b.owner[d], b.rank[a]) if attacker_known else self.case5(b.owner[a])

    def case4(self, side: int) -> float:
        movable = self.n_movable[side]
        if not movable:
            return 0.0
        return sum(self.pool[side][r] / movable * self.case2(1 - side, r) for r in MOVABLE if self.pool[side][r])

    def case5(self, side: int) -> float:
        movable = self.n_movable[side]
        if not movable:
            return 0.0
        return sum(self.pool[side][r] / movable * self.case3(1 - side, r) for r in MOVABLE if self.pool[side][r])

    def is_public(self, pid: int) -> bool:
        return bool(self.kpub[pid]) if self.b.owner[pid] == self.me else self.b.rank[pid] != UNKNOWN

    def known_in(self, persp: int, pid: int) -> bool:
        if self.b.owner[pid] == self.me:
            return persp == OWN or bool(self.kpub[pid])
        return self.b.rank[pid] != UNKNOWN

    def has_approached(self, mover: int, target: int) -> bool:
        b = self.b
        if (mover, target) in self.approached:
            return True
        if not self.p.line_approach:
            return False
        tsq = b.square[target]
        for entry in b.history[self.root_ply:]:
            if entry.attacker == mover and entry.defender < 0 and entry.move != NULL:
                frm, to = entry.move & 0xFF, entry.move >> 8
                if b.dist(to, tsq) < b.dist(frm, tsq):
                    return True
        return False

    def top_piece_lottery(self, persp: int, a: int, d: int, dk: bool) -> bool:
        """Issue 45: in our view our piece of ``top_piece_rank`` or higher attacking an unseen piece that has
        not moved and may be a bomb (P(bomb) at the root above 0) loses for certain."""
        b, rank = self.b, self.p.top_piece_rank
        return (persp == OWN and rank > 0 and b.owner[a] == self.me and b.rank[a] >= rank and not dk
                and b.moves[d] == 0 and self.p_bomb[d] > 0.0)

    def outcomes(self, persp: int, a: int, d: int) -> list[float]:
        b = self.b
        ak, dk = self.known_in(persp, a), self.known_in(persp, d)
        out = [0.0, 0.0, 0.0, 0.0]
        if ak and dk:
            result = combat(Rank(b.rank[a]), Rank(b.rank[d]))
            out[{ATTACKER_WINS: WIN, DEFENDER_WINS: LOSE, BOTH_DIE: BOTH}[result]] = 1.0
            return out
        if self.top_piece_lottery(persp, a, d, dk):
            out[LOSE] = 1.0
            return out
        if self.p.beliefs:
            p = self.belief_win(ak, dk, a, d)
        elif dk:
            p = self.case1(b.owner[a], b.rank[d])
        elif b.moves[d] == 0:
            p = self.unmoved_win(ak, a, d)
        elif ak:
            p = self.case2(b.owner[d], b.rank[a])
        else:
            p = self.case4(b.owner[a])
        if self.p.psychology and ak != dk:
            known, unknown = (a, d) if ak else (d, a)
            if self.is_public(known) and self.has_approached(unknown, known):
                own_fear, est_opp_fear, est_own_fear = self.fear
                if b.owner[known] == self.me:
                    psy = own_fear if persp == OWN else est_own_fear
                else:
                    psy = est_opp_fear
                # Py = P - P * psy, P being the known piece's chance.
                p_known = p if known == a else 1.0 - p
                p_known = p_known - p_known * psy
                p = p_known if known == a else 1.0 - p_known
        out[WIN] = p
        if self.p.failed_attack_passive and not ak and self.is_public(d):
            out[PASSIVE] = 1.0 - p
        else:
            out[LOSE] = 1.0 - p
        return out

    # --- values (7.5, Table 4, Table 8) ----------------------------------------------------------

    def _values(self) -> None:
        base, special = self.p.base, self.p.special
        self.piece = [[0.0] * 13, [0.0] * 13]
        self.flag_value = [0.0, 0.0]
        for s in (0, 1):
            o = 1 - s
            for r in range(12):
                value = base[r]
                if r in MOVABLE:
                    gone = sum(1 for q in range(r + 1, MARSHAL + 1)
                               if self.initial[q] > 0 and self.alive[o][q] == 0)
                    value = max(value, base[min(r + gone, MARSHAL)])
                if r == FLAG:
                    total = base[FLAG] + special[FLAG]
                    value = total if total > 0 else self.p.default_flag_value
                    self.flag_value[s] = value
                elif self._special_lives(s, r):
                    value += special[r]
                self.piece[s][r] = value
        # Material and the trade bias of the side ahead (not in the thesis; evaluation.pyx says why).
        self.material = [0.0, 0.0]
        for s in (0, 1):
            for r in range(12):
                if r in MOVABLE:
                    self.material[s] += self.alive[s][r] * base[r]
        total = self.material[0] + self.material[1]
        self.ahead = total > 0.0 and self.material[self.me] - self.material[self.enemy] >= AHEAD_MARGIN * total
        bias = self.p.ahead_trade_bias
        if self.ahead and bias > 0.0:
            for r in range(12):
                if r in MOVABLE:
                    lower = min(self.piece[self.me][r], self.piece[self.enemy][r])
                    self.piece[self.me][r] = lower * (1.0 - bias)
        if self.p.own_flag_value > 0.0:
            self.piece[self.me][FLAG] = self.p.own_flag_value

    def _special_lives(self, s: int, r: int) -> bool:
        o = 1 - s
        if r == MINER:
            return self.alive[o][BOMB] > 0
        if r == MARSHAL:
            return self.alive[o][SPY] > 0
        if r == SPY:
            return self.alive[o][MARSHAL] > 0
        if r == SCOUT:
            return self.n_unknown[o] > 0
        if r == BOMB:
            return sum(self.alive[o][q] for q in MOVABLE if q != MINER) > 0
        return True

    def _mean(self, side: int, ranks: Iterable[int]) -> float | None:
        ranks = [r for r in ranks if self.pool[side][r]]
        count = sum(self.pool[side][r] for r in ranks)
        if not count:
            return None
        return sum(self.pool[side][r] * (0.0 if r == FLAG else self.piece[side][r]) for r in ranks) / count

    def mean_all(self, side: int, moved: bool) -> float:
        return self._mean(side, MOVABLE if moved else range(12)) or 0.0

    def mean_take(self, side: int, moved: bool, captor: int) -> float:
        ranks = [r for r in (MOVABLE if moved else range(12))
                 if combat(Rank(captor), Rank(r)) == ATTACKER_WINS]
        value = self._mean(side, ranks)
        return self.mean_all(side, moved) if value is None else value

    def mean_lose_to(self, side: int, defender: int) -> float:
        ranks = [r for r in MOVABLE if combat(Rank(r), Rank(defender)) == DEFENDER_WINS]
        value = self._mean(side, ranks)
        return self.mean_all(side, True) if value is None else value

    def flag_share(self, pid: int) -> float:
        return self.flag_value[self.b.owner[pid]] * self.p_flag[pid] if not self.public[pid] else 0.0

    def captured(self, persp: int, x: int, y: int, x_attacked: bool) -> float:
        """Table 8: the worth of piece x, taken by piece y, in the perspective."""
        b = self.b
        owner = b.owner[x]
        moved = b.moves[x] > 0
        if owner == self.enemy:
            if b.rank[x] != UNKNOWN:
                return self.piece[owner][b.rank[x]]
            captor_known = bool(self.kpub[y])
        else:
            if persp == OWN or self.kpub[x]:
                return self.piece[owner][b.rank[x]]
            captor_known = b.rank[y] != UNKNOWN
        if captor_known:
            value = (self.mean_lose_to(owner, b.rank[y]) if x_attacked
                     else self.mean_take(owner, moved, b.rank[y]))
        else:
            value = self.mean_all(owner, moved)
        if moved:
            return value
        return value + self.flag_share(x)

    def reveal_value(self, x: int) -> float:
        b = self.b
        if b.rank[x] == BOMB:
            return self.p.reveal_bomb
        if b.rank[x] == UNKNOWN:
            return self.p.reveal_factor * self.mean_all(b.owner[x], True)
        return self.p.reveal_factor * self.piece[b.owner[x]][b.rank[x]]

    def decay(self, ply: int) -> float:
        return self.p.capture_decay ** ((ply - 1) // 2)

    # --- moves ------------------------------------------------------------------------------------

    def _fights(self) -> tuple[set[int], set[int]]:
        """``fight_reach``: the squares between one of our pieces and a known enemy piece, one of which takes
        the other, at most that many steps apart (a detour of one step allowed), and their neighbours."""
        b, reach = self.b, self.p.fight_reach
        fight: set[int] = set()
        near: set[int] = set()
        if reach < 0:
            return fight, near

        def takes(attacker: int, defender: int) -> bool:
            return attacker in MOVABLE and combat(Rank(attacker), Rank(defender)) == ATTACKER_WINS

        squares = range(b.stride * (b.height + 2))
        for theirs in range(b.first[self.enemy], b.end[self.enemy]):
            if b.square[theirs] < 0 or b.rank[theirs] == UNKNOWN:
                continue
            for ours in range(b.first[self.me], b.end[self.me]):
                if b.square[ours] < 0 or not (takes(b.rank[theirs], b.rank[ours]) or
                                              takes(b.rank[ours], b.rank[theirs])):
                    continue
                d = b.dist(b.square[ours], b.square[theirs])
                if d > reach:
                    continue
                for sq in squares:
                    via = b.dist(b.square[ours], sq) + b.dist(sq, b.square[theirs])
                    if via <= d + 2:
                        fight.add(sq)
                    if via <= d + 4:
                        near.add(sq)
        return fight, near

    def set_area(self, move: int) -> None:
        b, r = self.b, self.p.local_radius
        frm, to = move & 0xFF, move >> 8
        squares = range(b.stride * (b.height + 2))
        self.area = {sq for sq in squares if min(b.dist(sq, frm), b.dist(sq, to)) <= r}
        self.near = {sq for sq in squares if min(b.dist(sq, frm), b.dist(sq, to)) <= r + 1}
        flag = self.flag_square()
        if flag is not None:
            # Our flag's surroundings join every area (not in the thesis; see the compiled search).
            self.area |= {sq for sq in squares if b.dist(sq, flag) <= self.p.flag_area}
            self.near |= {sq for sq in squares if b.dist(sq, flag) <= self.p.flag_area + 1}
        self.area |= self.fight
        self.near |= self.fight_near

    def flag_square(self) -> int | None:
        """Our flag's square when the flag area is on (it never moves: the root's answer holds)."""
        if self.p.flag_area < 0:
            return None
        b = self.b
        for pid in range(len(b.owner)):
            if b.owner[pid] == self.me and b.rank[pid] == FLAG and b.square[pid] >= 0:
                return int(b.square[pid])
        return None

    def last_moved(self) -> int:
        b = self.b
        for index in range(b.ply - 2, -1, -2):
            entry = b.history[index]
            if entry.move != NULL:
                return entry.attacker if b.square[entry.attacker] >= 0 else -1
        return -1

    def node_moves(self, ply: int) -> list[int]:
        b, p = self.b, self.p
        side = b.side
        local = p.local_radius >= 0
        every = not p.variable_depth or ply <= p.full_plies
        last = self.last_moved() if not every and ply <= p.last_piece_plies else -1
        attacks: list[int] = []
        quiet: list[int] = []
        # The quiescence leaves out the attacks that lose for certain in the mover's own view.
        lost_cut = p.skip_lost_captures and not every and ply > p.en_prise_plies
        for pid in range(b.first[side], b.end[side]):
            sq = b.square[pid]
            if sq < 0 or b.rank[pid] in (FLAG, BOMB):
                continue
            scout = b.rank[pid] == SCOUT and p.scout_runs
            if local and not scout and sq not in self.near:
                continue
            # The quiescence's flight: past the en-prise ply a threatened piece may step to safety.
            flee = p.flee and not every and ply > p.en_prise_plies and self._threatened(side, pid)
            for step in (b.stride, -b.stride, -1, 1):
                to = sq + step
                while True:
                    occ = b.board[to]
                    if occ == BLOCKED or (occ >= 0 and b.owner[occ] == side):
                        break
                    if occ >= 0 and to != sq + step and not b.range_attacks:
                        break
                    if occ >= 0 and lost_cut and self._loses_for_certain(pid, occ):
                        break
                    if not local or sq in self.area or to in self.area:
                        keep = (every or occ >= 0 or (ply <= p.last_piece_plies and pid == last)
                                or (ply <= p.en_prise_plies and self._into_reach(side, b.rank[pid], to))
                                or (flee and not self._into_reach(side, b.rank[pid], to)))
                        move = sq | (to << 8)
                        if keep and not (p.two_squares > 0 and b.breaks_two_squares(move, p.two_squares)):
                            (attacks if occ >= 0 else quiet).append(move)
                    if occ >= 0 or not scout:
                        break
                    to += step
        # Attacks by the victim's rank, highest first (a stable sort); the passive move before them
        # at the opponent's nodes, after them at ours; the plain moves last.
        attacks.sort(key=lambda m: -victim_key(b.rank[b.board[m >> 8]]))
        passive = [NULL] if local else []
        if side == self.me:
            return attacks + passive + quiet
        return passive + attacks + quiet

    def _loses_for_certain(self, a: int, d: int) -> bool:
        # Both ranks known in the mover's own view, and the defender wins.
        b = self.b
        persp = OWN if b.owner[a] == self.me else OPP
        if not self.known_in(persp, a) or not self.known_in(persp, d):
            return False
        return combat(Rank(b.rank[a]), Rank(b.rank[d])) == DEFENDER_WINS

    def _threatened(self, side: int, pid: int) -> bool:
        # A piece of known rank next to an enemy piece that wins attacking it, known in the mover's own view.
        b = self.b
        rank = b.rank[pid]
        persp = OWN if side == self.me else OPP
        if rank == UNKNOWN:
            return False
        for step in (b.stride, -b.stride, -1, 1):
            nb = b.board[b.square[pid] + step]
            if nb < 0 or b.owner[nb] == side or b.rank[nb] in (BOMB, FLAG, UNKNOWN):
                continue
            if not self.known_in(persp, nb):
                continue
            if combat(Rank(b.rank[nb]), Rank(rank)) == ATTACKER_WINS:
                return True
        return False

    def _into_reach(self, side: int, rank: int, to: int) -> bool:
        # An opponent piece next to ``to`` that may take a piece of ``rank`` there.
        b = self.b
        for step in (b.stride, -b.stride, -1, 1):
            nb = b.board[to + step]
            if nb < 0 or b.owner[nb] == side or b.rank[nb] in (BOMB, FLAG):
                continue
            if UNKNOWN in (b.rank[nb], rank) or combat(Rank(b.rank[nb]), Rank(rank)) != DEFENDER_WINS:
                return True
        return False

    # --- one outcome with its events (9.4) -------------------------------------------------------

    def play(self, ply: int, move: int, outcome: int) -> tuple[float, float]:
        b = self.b
        if outcome == PASSIVE:
            b.make_null()
            return 0.0, 0.0
        frm, to = move & 0xFF, move >> 8
        a, d = b.board[frm], b.board[to]
        sign_a = 1.0 if b.owner[a] == self.me else -1.0
        mine = opp = 0.0
        survivor = -1
        advance = 0.0
        if self.p.advance_bonus and b.rank[a] != SCOUT:
            rows = b.col_row(to)[1] - b.col_row(frm)[1]
            advance = sign_a * self.p.advance_bonus * (rows if b.owner[a] == 0 else -rows)
        if d < 0:
            mine += advance
            opp += advance
            if b.dist(frm, to) > 1 and not self.kpub[a]:
                survivor = a
            result = 0
        else:
            if outcome in (WIN, BOTH):
                x = sign_a
                mine += x * self.captured(OWN, d, a, False)
                opp += x * self.captured(OPP, d, a, False)
            if outcome in (LOSE, BOTH):
                x = sign_a
                mine -= x * self.captured(OWN, a, d, True)
                opp -= x * self.captured(OPP, a, d, True)
            if outcome == WIN:
                survivor = a if not self.kpub[a] else -1
                mine += advance
                opp += advance
                result = ATTACKER_WINS
            elif outcome == LOSE:
                survivor = d if not self.kpub[d] else -1
                result = DEFENDER_WINS
            else:
                result = BOTH_DIE
            self.kpub[a] = self.kpub[d] = True
        if survivor >= 0:
            self.kpub[survivor] = True
            if self.p.reveal_factor or self.p.reveal_bomb:
                loss = (1.0 if b.owner[survivor] == self.me else -1.0) * self.reveal_value(survivor)
                mine -= loss
                opp -= loss
        b.make(move, result)
        w = self.decay(ply)
        return mine * w, opp * w

    def undo(self, outcome: int) -> None:
        if outcome == PASSIVE:
            self.b.unmake_null()
        else:
            self.b.unmake()

    def _leaf(self, ply: int) -> bool:
        return ply > self.depth or any(self.b.flag_lost)

    # --- p-e-minimax ------------------------------------------------------------------------------

    def pemm_node(self, ply: int, acc: tuple[float, float], cut_o: float = math.inf) -> tuple[Pair, bool]:
        """(values, cut): with pruning on, an own node stops once its value in the opponent's view
        exceeds ``cut_o`` (its opponent-node parent no longer counts it) and returns cut=True."""
        if 0 < self.p.pemm_plies < ply:
            # Below p-e-minimax's plies: one value, our own view, alpha-beta within the subtree.
            single = self.mm_node(ply, acc[0], -math.inf, math.inf)
            return (single, acc[1] + (single - acc[0])), False
        self.nodes += 1
        if self._leaf(ply):
            return acc, False
        moves = self.node_moves(ply)
        if not moves:
            return acc, False
        ours = self.b.side == self.me
        passive: Pair | None = None
        best: list[float] = []
        included: list[Pair] = []
        # Attacks whose failure stands for the mover's best other move are valued after the others.
        later = [m for m in moves if self.defers(m)]
        first = [m for m in moves if not self.defers(m)]
        for i, move in enumerate(first + later):
            if i == len(first) and (best or included):
                passive = (best[0], best[1]) if ours else self.chosen(included)
            if ours or not included or not self.prune:
                bound = math.inf
            else:
                bound = min(v[1] for v in included) + self.p.average_margin + TIE_EPSILON
            value, cut = self.pemm_move(ply, move, acc, bound, passive)
            if move == NULL and not cut and i < len(first):
                passive = value
            if ours:
                best = [value[0], value[1]] if not best else [max(best[0], value[0]), max(best[1], value[1])]
                if self.prune and best[1] > cut_o:
                    return (best[0], best[1]), True
            elif not cut:
                included.append(value)
        if ours:
            return (best[0], best[1]), False
        return self.chosen(included), False

    def chosen(self, included: list[Pair]) -> Pair:
        """The opponent's moves within the margin of its best, equally likely (9.4): their mean."""
        low = min(v[1] for v in included)
        chosen = [v for v in included if v[1] <= low + self.p.average_margin + TIE_EPSILON]
        return sum(v[0] for v in chosen) / len(chosen), sum(v[1] for v in chosen) / len(chosen)

    def defers(self, move: int) -> bool:
        """An attack whose failure in a view is not attacking (8.3), with ``failed_alternative``."""
        if not (self.p.failed_attack_passive and self.p.failed_attack_alternative) or move == NULL:
            return False
        a, d = self.b.board[move & 0xFF], self.b.board[move >> 8]
        if d < 0 or not self.is_public(d):
            return False
        return not self.known_in(OWN, a) or not self.known_in(OPP, a)

    def pemm_move(self, ply: int, move: int, acc: Pair, cut_o: float, passive: Pair | None) -> tuple[Pair, bool]:
        b = self.b
        if move == NULL:
            b.make_null()
            value, cut = self.pemm_node(ply + 1, acc, cut_o)
            b.unmake_null()
            return value, cut
        a, d = b.board[move & 0xFF], b.board[move >> 8]
        saved = list(self.kpub)
        if d < 0:
            dm, do = self.play(ply, move, WIN)
            value, cut = self.pemm_node(ply + 1, (acc[0] + dm, acc[1] + do), cut_o)
            b.unmake()
            self.kpub = saved
            return value, cut
        mine_p, opp_p = self.outcomes(OWN, a, d), self.outcomes(OPP, a, d)
        single = [o for o in range(4) if mine_p[o] == 1.0 and opp_p[o] == 1.0]
        if single:
            # A certain outcome in both views: the move is that one child.
            if single[0] == PASSIVE and passive is not None:
                return passive, False
            dm, do = self.play(ply, move, single[0])
            value, cut = self.pemm_node(ply + 1, (acc[0] + dm, acc[1] + do), cut_o)
            self.undo(single[0])
            self.kpub = saved
            return value, cut
        mine = opp = 0.0
        for outcome in range(4):
            # At the root only our own view counts: branches it gives no weight are left out.
            if mine_p[outcome] == 0 and (opp_p[outcome] == 0 or ply == 1):
                continue
            if outcome == PASSIVE and passive is not None:
                child = passive
            else:
                dm, do = self.play(ply, move, outcome)
                child, _ = self.pemm_node(ply + 1, (acc[0] + dm, acc[1] + do))
                self.undo(outcome)
                self.kpub = list(saved)
            mine += mine_p[outcome] * child[0]
            opp += opp_p[outcome] * child[1]
        return (mine, opp), False

    # --- expectiminimax ---------------------------------------------------------------------------

    def em_node(self, ply: int, acc: float) -> float:
        self.nodes += 1
        if self._leaf(ply):
            return acc
        moves = self.node_moves(ply)
        if not moves:
            return acc
        values: list[float] = []
        passive: float | None = None
        for move in moves:
            values.append(self.em_move(ply, move, acc, passive))
            if move == NULL:
                passive = values[-1]
        return max(values) if self.b.side == self.me else min(values)

    def em_move(self, ply: int, move: int, acc: float, passive: float | None = None) -> float:
        b = self.b
        if move == NULL:
            b.make_null()
            value = self.em_node(ply + 1, acc)
            b.unmake_null()
            return value
        a, d = b.board[move & 0xFF], b.board[move >> 8]
        saved = list(self.kpub)
        if d < 0:
            dm, _ = self.play(ply, move, WIN)
            value = self.em_node(ply + 1, acc + dm)
            b.unmake()
            self.kpub = saved
            return value
        total = 0.0
        for outcome, p in enumerate(self.outcomes(OWN, a, d)):
            if p == 0:
                continue
            if outcome == PASSIVE and passive is not None:
                total += p * passive
                continue
            dm, _ = self.play(ply, move, outcome)
            total += p * self.em_node(ply + 1, acc + dm)
            self.undo(outcome)
            self.kpub = list(saved)
        return total

    # --- minimax with alpha-beta ------------------------------------------------------------------

    def mm_node(self, ply: int, acc: float, alpha: float, beta: float) -> float:
        self.nodes += 1
        if self._leaf(ply):
            return acc
        moves = self.node_moves(ply)
        if not moves:
            return acc
        ours = self.b.side == self.me
        best = -math.inf if ours else math.inf
        for move in moves:
            value = self.mm_move(ply, move, acc, alpha, beta)
            if ours:
                best = max(best, value)
                alpha = max(alpha, best)
            else:
                best = min(best, value)
                beta = min(beta, best)
            if alpha >= beta:
                break
        return best

    def mm_move(self, ply: int, move: int, acc: float, alpha: float, beta: float) -> float:
        b = self.b
        if move == NULL:
            b.make_null()
            value = self.mm_node(ply + 1, acc, alpha, beta)
            b.unmake_null()
            return value
        a, d = b.board[move & 0xFF], b.board[move >> 8]
        saved = list(self.kpub)
        if d < 0:
            outcome = WIN
        else:
            p = self.outcomes(OWN, a, d)
            # The more likely outcome (Fig 7-8).
            if p[WIN] > 0.5:
                outcome = WIN
            elif p[BOTH] > 0.5:
                outcome = BOTH
            else:
                outcome = PASSIVE if p[PASSIVE] > p[LOSE] else LOSE
        dm, _ = self.play(ply, move, outcome)
        value = self.mm_node(ply + 1, acc + dm, alpha, beta)
        self.undo(outcome)
        self.kpub = saved
        return value

    # --- the root ---------------------------------------------------------------------------------

    def root_value(self, move: int) -> float:
        if self.p.algorithm == "pemm":
            return self.pemm_move(1, move, (0.0, 0.0), math.inf, None)[0][0]
        if self.p.algorithm == "minimax":
            return self.mm_move(1, move, 0.0, -math.inf, math.inf)
        return self.em_move(1, move, 0.0)

    def search(self, moves: Sequence[int], depth: int) -> list[float]:
        """Each root move's value over the passive move at ``depth`` plies (the comparison search)."""
        self.depth = depth
        out = []
        passive = 0.0
        for i, move in enumerate(moves):
            if self.p.local_radius >= 0:
                self.set_area(move)
            value = self.root_value(move)
            if self.p.local_radius >= 0 or i == 0:
                passive = self.root_value(NULL)
            out.append(value - passive)
        return out


def best_index(values: Sequence[float], extra: Sequence[float] | None = None) -> int:
    """The chosen root move: the highest total, the first one on a tie."""
    totals = [v + (extra[i] if extra else 0.0) for i, v in enumerate(values)]
    return min(range(len(totals)), key=lambda i: (-totals[i], i))
