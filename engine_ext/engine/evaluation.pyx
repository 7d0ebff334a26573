# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Evaluation of the Perspecto thesis, built once a move (values never change during a search, 7.5).

Piece value = rank value + special value (Table 4 or a scale from configuration). The rank value
rises one notch for every more valuable opponent rank that has vanished; a special value lapses with
the ability it pays for; the flag's value is spread over the pieces suspected of being the flag.
``ValuesView`` exposes the numbers and Table 8's captured values to Python.
"""

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc

from engine_ext.rules.core cimport (
    ATTACKER_WINS, DEFENDER_WINS, COMBAT, MAX_PIECES, N_RANKS, R_BOMB, R_FLAG, R_MARSHAL, R_MINER,
    R_SCOUT, R_SPY, R_UNKNOWN, Pos, Position,
)
from engine_ext.engine.knowledge cimport Knowledge, prepare_root


# Not in the thesis (issue 45): we count as ahead when (ours - theirs) / (ours + theirs) over the live movable
# pieces' rank values is at least this (docs/engine.md, *A won endgame*; the reference search has the same).
cdef double _AHEAD_MARGIN = 0.2
AHEAD_MARGIN = _AHEAD_MARGIN


cdef inline bint _movable(int r) noexcept nogil:
    return r != R_FLAG and r != R_BOMB and r != R_UNKNOWN


cdef inline bint _vanished(Knowledge* kn, int side, int r) noexcept nogil:
    return kn.initial[r] > 0 and kn.alive[side][r] == 0


cdef bint _special_lives(Knowledge* kn, int side, int r) noexcept nogil:
    """Whether the special value of ``side``'s rank ``r`` still pays (7.5 and docs/engine.md)."""
    cdef int o = side ^ 1
    cdef int q, attackers
    if r == R_MINER:
        return kn.alive[o][R_BOMB] > 0          # no bombs left to clear
    if r == R_MARSHAL:
        return kn.alive[o][R_SPY] > 0           # the -30 is the spy's threat
    if r == R_SPY:
        return kn.alive[o][R_MARSHAL] > 0       # nothing left to assassinate
    if r == R_SCOUT:
        return kn.n_unknown[o] > 0              # nothing left to discover
    if r == R_BOMB:
        attackers = 0
        for q in range(N_RANKS):
            if _movable(q) and q != R_MINER:
                attackers += kn.alive[o][q]
        return attackers > 0                    # no piece left that a bomb can kill
    return True


cdef void build_values(Values* v, Knowledge* kn, Pos* p, const double* base, const double* special,
                       double default_flag_value, double capture_decay, double reveal_factor,
                       double reveal_bomb, double advance_bonus, double random_amplitude,
                       uint64_t random_key, double own_flag_value=0.0,
                       double ahead_trade_bias=0.0) noexcept nogil:
    cdef int s, o, r, q, k, mv, notches, target, pid, n
    cdef double val, total, w, lower
    for s in range(2):
        o = s ^ 1
        for r in range(N_RANKS):
            val = base[r]
            if _movable(r):
                # One notch for every more valuable opponent rank that has vanished entirely.
                notches = 0
                for q in range(r + 1, R_MARSHAL + 1):
                    if _vanished(kn, o, q):
                        notches += 1
                target = r + notches
                if target > R_MARSHAL:
                    target = R_MARSHAL
                if base[target] > val:
                    val = base[target]
            v.rank_value[s][r] = val
            if r == R_FLAG:
                val = base[R_FLAG] + special[R_FLAG]
                if val <= 0.0:
                    val = default_flag_value
                v.flag_value[s] = val
            elif _special_lives(kn, s, r):
                val += special[r]
            v.piece[s][r] = val
        v.piece[s][R_UNKNOWN] = 0.0
    # Material: the live movable pieces at their plain rank values (no notches: they would count the
    # side ahead's pieces up for the very losses that put it ahead); theirs known + the pool, which
    # alive[] already holds.
    for s in range(2):
        v.material[s] = 0.0
        for r in range(N_RANKS):
            if _movable(r):
                v.material[s] += kn.alive[s][r] * base[r]
    total = v.material[0] + v.material[1]
    v.ahead = total > 0.0 and v.material[kn.me] - v.material[kn.enemy] >= _AHEAD_MARGIN * total
    if v.ahead and ahead_trade_bias > 0.0:
        # Trades favour the side ahead (not in the thesis): each of our movable ranks is worth a little
        # less than theirs of the same rank, so an even trade scores positive for us. The notches run the
        # other way (the side ahead has had more of the other side's top ranks vanish, so its pieces are
        # notched higher), hence the lower of the two before the bias.
        for r in range(N_RANKS):
            if _movable(r):
                lower = v.piece[kn.me][r]
                if v.piece[kn.enemy][r] < lower:
                    lower = v.piece[kn.enemy][r]
                v.piece[kn.me][r] = lower * (1.0 - ahead_trade_bias)
    if own_flag_value > 0.0:
        # Losing our flag loses the game: in our own view it may weigh more than the scale's flag,
        # which still prices the opponent's flag and what the opponent hopes to find among ours.
        v.piece[kn.me][R_FLAG] = own_flag_value
    # Means over the pools (the flag counts 0 here: its value is spread by suspicion instead).
    for s in range(2):
        for mv in range(2):
            total = 0.0
            n = 0
            for r in range(N_RANKS):
                if kn.pool[s][r] == 0 or (mv and not _movable(r)):
                    continue
                total += kn.pool[s][r] * (0.0 if r == R_FLAG else v.piece[s][r])
                n += kn.pool[s][r]
            v.avg_all[s][mv] = total / n if n > 0 else 0.0
    for s in range(2):
        for mv in range(2):
            for k in range(N_RANKS):
                total = 0.0
                n = 0
                for r in range(N_RANKS):
                    if kn.pool[s][r] == 0 or (mv and not _movable(r)) or COMBAT[k][r] != ATTACKER_WINS:
                        continue
                    total += kn.pool[s][r] * (0.0 if r == R_FLAG else v.piece[s][r])
                    n += kn.pool[s][r]
                v.avg_take[s][mv][k] = total / n if n > 0 else v.avg_all[s][mv]
                total = 0.0
                n = 0
                for r in range(N_RANKS):
                    if kn.pool[s][r] == 0 or not _movable(r) or COMBAT[r][k] != DEFENDER_WINS:
                        continue
                    total += kn.pool[s][r] * v.piece[s][r]
                    n += kn.pool[s][r]
                v.avg_lose_to[s][mv][k] = total / n if n > 0 else v.avg_all[s][1]
    for pid in range(MAX_PIECES):
        v.flag_share[pid] = 0.0
    for pid in range(p.end_id[1]):
        if p.psq[pid] >= 0 and not kn.public_[pid]:
            v.flag_share[pid] = v.flag_value[p.powner[pid]] * kn.p_flag[pid]
    v.reveal_factor = reveal_factor
    v.reveal_bomb = reveal_bomb
    v.advance_bonus = advance_bonus
    w = 1.0
    v.decay[0] = 1.0
    for k in range(1, MAX_LINE + 1):
        # Plies 1-2 count in full, 3-4 at 95 %, ...: "vartannat halvdrag minskar värdena med 5%".
        v.decay[k] = w
        if k % 2 == 0:
            w *= capture_decay
    v.random_amplitude = random_amplitude
    v.random_key = random_key


def random_key(seed: int, ply: int) -> int:
    """The random term's key for one real move: a mix of the seed and the game's ply."""
    cdef uint64_t z = (<uint64_t>(seed & 0xFFFFFFFFFFFFFFFF)) * 0x9E3779B97F4A7C15ULL + <uint64_t>ply
    z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDULL
    z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ULL
    return z ^ (z >> 33)


def random_term_of(double amplitude, uint64_t key, uint64_t position_hash) -> float:
    cdef Values v
    v.random_amplitude = amplitude
    v.random_key = key
    return random_term(&v, position_hash)


cdef class ValuesView:
    """The evaluation of one position for Python: piece values, means, Table 8's captured values."""

    cdef Pos* work
    cdef Knowledge kn
    cdef Values v

    def __cinit__(self):
        self.work = <Pos*>malloc(sizeof(Pos))
        if self.work == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.work)

    def __init__(self, Position pos, int me, initial, base, special, *, public=None, approached=None,
                 moved=(), double default_flag_value=300.0, double capture_decay=0.95,
                 double reveal_factor=0.0, double reveal_bomb=0.0, double advance_bonus=0.0,
                 double own_flag_value=0.0, double ahead_trade_bias=0.0):
        cdef double b[N_RANKS]
        cdef double sp[N_RANKS]
        cdef int r
        base = list(base)
        special = list(special)
        if len(base) != N_RANKS or len(special) != N_RANKS:
            raise ValueError("base and special need one value a rank code (0..12)")
        for r in range(N_RANKS):
            b[r] = base[r]
            sp[r] = special[r]
        prepare_root(self.work, &self.kn, pos, me, initial, public, approached, moved, (0.0, 0.0, 0.0), False,
                     True)
        build_values(&self.v, &self.kn, self.work, b, sp, default_flag_value, capture_decay, reveal_factor,
                     reveal_bomb, advance_bonus, 0.0, 0, own_flag_value, ahead_trade_bias)

    def piece(self, int side, int rank) -> float:
        return self.v.piece[side][rank]

    def rank_value(self, int side, int rank) -> float:
        return self.v.rank_value[side][rank]

    def material(self, int side) -> float:
        return self.v.material[side]

    def ahead(self) -> bool:
        return self.v.ahead != 0

    def flag_value(self, int side) -> float:
        return self.v.flag_value[side]

    def avg_all(self, int side, bint moved) -> float:
        return self.v.avg_all[side][moved]

    def avg_take(self, int side, bint moved, int captor_rank) -> float:
        return self.v.avg_take[side][moved][captor_rank]


    def flag_share(self, int pid) -> float:
        return self.v.flag_share[pid]

    def decay(self, int ply) -> float:
        return self.v.decay[ply]

    def captured_value(self, int persp, int captured, int captor, bint captured_attacked=False) -> float:
        """Table 8: what ``captured`` taken by ``captor`` is worth in the perspective (0 ours, 1 theirs)."""
        cdef int count = self.work.end_id[1]
        if not (0 <= captured < count and 0 <= captor < count):
            raise ValueError("no such piece id")
        return captured_value(&self.v, &self.kn, self.work, self.kn.public_, persp, captured, captor,
                              captured_attacked)
