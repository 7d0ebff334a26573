# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Knowledge of the Perspecto thesis: pools, moved / unmoved, the five attack cases (7.3), flag and
bomb probabilities, and the psychological model's per-pair facts (9.3).

Built once a move from the bot's view of the game (the opponent's unrevealed pieces have rank
R_UNKNOWN) plus what the opponent knows of ours (replayed from the move history). ``KnowledgeView``
exposes everything to Python for the tests and the facade's reasons.
"""

import numpy as np

from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from engine_ext.rules.core cimport (
    EMPTY, MAX_PIECES, MAX_SQ, N_RANKS, R_BOMB, R_FLAG, R_MINER, R_UNKNOWN, Pos, Position,
    make_move_result, unmake_move,
)


cdef inline bint _movable_rank(int r) noexcept nogil:
    return r != R_FLAG and r != R_BOMB and r != R_UNKNOWN


cdef void build_knowledge(Knowledge* kn, Pos* p, int me, const int* initial,
                          const unsigned char* public_, const uint64_t* approached) noexcept nogil:
    cdef int s, r, pid, sq, k, d, nb, back, unmoved, flags_left, unmoved_pool
    cdef int known_count[N_RANKS]
    cdef double v, total, share
    kn.me = me
    kn.enemy = me ^ 1
    kn.top_piece_rank = 0       # off unless the search's settings turn it on (fill_search)
    for sq in range(MAX_SQ):
        kn.sq_col[sq] = sq % p.stride
        kn.sq_row[sq] = sq // p.stride
    for r in range(N_RANKS):
        kn.initial[r] = initial[r]
    for pid in range(MAX_PIECES):
        kn.public_[pid] = 0
        kn.approached[pid] = 0
        kn.suspicion[pid] = 0.0
        kn.p_flag[pid] = 0.0
        kn.p_bomb[pid] = 0.0
    for pid in range(p.end_id[1]):
        kn.public_[pid] = public_[pid] if p.powner[pid] == me else (p.prank[pid] != R_UNKNOWN)
        kn.approached[pid] = approached[pid]
    # Pools. Theirs: what the rules give them less every rank we have seen (captured pieces are
    # always seen). Ours as they see it: exactly our live pieces they have not seen.
    for s in range(2):
        for r in range(N_RANKS):
            kn.pool[s][r] = 0
            kn.alive[s][r] = 0
        kn.n_moved[s] = 0
    for r in range(N_RANKS):
        known_count[r] = 0
    for pid in range(p.first_id[kn.enemy], p.end_id[kn.enemy]):
        r = p.prank[pid]
        if r != R_UNKNOWN:
            known_count[r] += 1
            if p.psq[pid] >= 0:
                kn.alive[kn.enemy][r] += 1
        elif p.psq[pid] >= 0 and p.pmoves[pid] > 0:
            kn.n_moved[kn.enemy] += 1
    for r in range(N_RANKS):
        if r != R_UNKNOWN and initial[r] > known_count[r]:
            kn.pool[kn.enemy][r] = initial[r] - known_count[r]
            kn.alive[kn.enemy][r] += kn.pool[kn.enemy][r]
    for pid in range(p.first_id[me], p.end_id[me]):
        if p.psq[pid] < 0:
            continue
        r = p.prank[pid]
        kn.alive[me][r] += 1
        if not kn.public_[pid]:
            kn.pool[me][r] += 1
            if p.pmoves[pid] > 0:
                kn.n_moved[me] += 1
    for s in range(2):
        kn.n_unknown[s] = 0
        kn.n_movable[s] = 0
        for r in range(N_RANKS):
            kn.n_unknown[s] += kn.pool[s][r]
            if _movable_rank(r):
                kn.n_movable[s] += kn.pool[s][r]
    _cases(kn)
    # Flag suspicions (7.5): an unknown piece that has never moved gets one on its owner's back row
    # and one more next to one of its owner's known bombs.
    for s in range(2):
        back = 0 if s == 0 else p.height - 1
        total = 0.0
        unmoved = 0
        for pid in range(p.first_id[s], p.end_id[s]):
            sq = p.psq[pid]
            if sq < 0 or kn.public_[pid] or p.pmoves[pid] > 0:
                continue
            unmoved += 1
            v = 0.0
            if kn.sq_row[sq] - 1 == back:
                v += 1.0
            for d in range(4):
                nb = p.board[sq + p.dirs[d]]
                if nb >= 0 and p.powner[nb] == s and kn.public_[nb] and p.prank[nb] == R_BOMB:
                    v += 1.0
                    break
            kn.suspicion[pid] = v
            total += v
        kn.susp_total[s] = total
        flags_left = kn.pool[s][R_FLAG]
        unmoved_pool = kn.n_unknown[s] - kn.n_moved[s]
        if unmoved_pool < 1:
            unmoved_pool = 1
        for pid in range(p.first_id[s], p.end_id[s]):
            sq = p.psq[pid]
            if sq < 0:
                continue
            if kn.public_[pid]:
                kn.p_flag[pid] = 1.0 if p.prank[pid] == R_FLAG else 0.0
                kn.p_bomb[pid] = 1.0 if p.prank[pid] == R_BOMB else 0.0
                continue
            if p.pmoves[pid] > 0:
                continue        # a piece that moved is neither flag nor bomb
            # Without suspects the flag is any unmoved unknown piece; a bomb is as likely as in
            # case 3 of 7.3: the pool's bombs over its unmoved pieces.
            if flags_left > 0:
                if total > 0.0:
                    kn.p_flag[pid] = kn.suspicion[pid] / total
                else:
                    kn.p_flag[pid] = <double>flags_left / unmoved_pool
            share = <double>kn.pool[s][R_BOMB] / unmoved_pool
            kn.p_bomb[pid] = share if share < 1.0 else 1.0


cdef void _pool_row(Knowledge* kn, int s, bint moved, double* row) noexcept nogil:
    """The thesis's pool as one piece's rank distribution (7.3): a moved piece is any of the movable
    pool; an unmoved one is one of the movable pieces that have not moved yet or a bomb or the flag,
    so cases 1-5 come out of the beliefs exactly as from the pools."""
    cdef int r
    cdef int movable = kn.n_movable[s]
    cdef int unmoved_all = kn.n_unknown[s] - kn.n_moved[s]
    cdef double share
    for r in range(N_RANKS):
        row[r] = 0.0
    if moved:
        if movable > 0:
            for r in range(N_RANKS):
                if _movable_rank(r):
                    row[r] = kn.pool[s][r] / <double>movable
        return
    if unmoved_all > 0:
        share = (movable - kn.n_moved[s]) / <double>movable if movable > 0 else 0.0
        if share < 0.0:
            share = 0.0
        for r in range(N_RANKS):
            if _movable_rank(r):
                row[r] = kn.pool[s][r] * share / unmoved_all
            elif r != R_UNKNOWN:
                row[r] = kn.pool[s][r] / <double>unmoved_all
    elif kn.n_unknown[s] > 0:
        for r in range(N_RANKS):
            if r != R_UNKNOWN:
                row[r] = kn.pool[s][r] / <double>kn.n_unknown[s]


cdef bint _normalise(double* row, bint movable_only) noexcept nogil:
    """Scale ``row`` (ranks 0..11) to sum to one, keeping only the movable ranks if asked; False and
    untouched when nothing is left."""
    cdef double total = 0.0
    cdef int r
    for r in range(R_UNKNOWN):
        if movable_only and not _movable_rank(r):
            continue
        total += row[r]
    if not total > 0.0:
        return False
    for r in range(R_UNKNOWN):
        if movable_only and not _movable_rank(r):
            row[r] = 0.0
        else:
            row[r] = row[r] / total
    row[R_UNKNOWN] = 0.0
    return True


cdef void build_beliefs(Knowledge* kn, Pos* p, const double* rows, int row_stride) noexcept nogil:
    """Fill the beliefs of every piece unknown to its opponent at the root from ``rows`` (row ``pid``
    at ``rows + pid * row_stride``, ranks 0..11; NULL: the thesis's pool, ``_pool_row``). A rank the
    pool has run out of gets nothing, a piece that has moved is no bomb or flag; a row left empty falls
    back to the pool's. Then each piece's chances against every known rank, and the flag and bomb
    probabilities (7.5) from its row. The flag suspicions of the strategic search's scout strikes (9.2)
    keep their total but are shared out by the flag probability."""
    cdef int s, pid, r, k
    cdef bint moved
    cdef double still[N_RANKS]
    cdef double mv[N_RANKS]
    cdef double lose_s, lose_m, beat, susp_scale
    kn.beliefs = 1
    for pid in range(MAX_PIECES):
        for r in range(N_RANKS):
            kn.bel_still[pid][r] = 0.0
            kn.bel_moved[pid][r] = 0.0
            kn.lose_still[pid][r] = 0.0
            kn.lose_moved[pid][r] = 0.0
            kn.beat_known[pid][r] = 0.0
    for pid in range(p.end_id[1]):
        if p.psq[pid] < 0 or kn.public_[pid]:
            continue
        s = p.powner[pid]
        moved = p.pmoves[pid] > 0
        for r in range(N_RANKS):
            still[r] = 0.0
            if rows != NULL and r != R_UNKNOWN and kn.pool[s][r] > 0:
                still[r] = rows[pid * row_stride + r]
        if rows == NULL or not _normalise(still, moved):
            _pool_row(kn, s, moved, still)
            _normalise(still, moved)
        for r in range(N_RANKS):
            mv[r] = still[r]
        if not _normalise(mv, True):
            _pool_row(kn, s, True, mv)
            _normalise(mv, True)
        for r in range(N_RANKS):
            kn.bel_still[pid][r] = still[r]
            kn.bel_moved[pid][r] = mv[r]
        for k in range(N_RANKS):
            lose_s = 0.0
            lose_m = 0.0
            beat = 0.0
            for r in range(R_UNKNOWN):
                lose_s += still[r] * win_weight(k, r)
                lose_m += mv[r] * win_weight(k, r)
                beat += mv[r] * win_weight(r, k)
            kn.lose_still[pid][k] = lose_s
            kn.lose_moved[pid][k] = lose_m
            kn.beat_known[pid][k] = beat
    for s in range(2):
        susp_scale = kn.susp_total[s] if kn.susp_total[s] > 0.0 else 1.0
        kn.susp_total[s] = 0.0
        for pid in range(p.first_id[s], p.end_id[s]):
            if p.psq[pid] < 0 or kn.public_[pid]:
                continue
            kn.p_flag[pid] = kn.bel_still[pid][R_FLAG]
            kn.p_bomb[pid] = kn.bel_still[pid][R_BOMB]
            kn.suspicion[pid] = kn.p_flag[pid] * susp_scale
            kn.susp_total[s] += kn.suspicion[pid]


cdef double _v(Knowledge* kn, int s, int k, bint defender_unknown) noexcept nogil:
    """|V(s, k)|: pieces in side s's movable pool that make the attack succeed against rank k, half of
    the ties included. ``defender_unknown``: s defends against an attacker of rank k; otherwise s's
    unknown piece attacks a known rank k."""
    cdef double total = 0.0
    cdef int r
    for r in range(N_RANKS):
        if not _movable_rank(r) or kn.pool[s][r] == 0:
            continue
        if defender_unknown:
            total += kn.pool[s][r] * win_weight(k, r)
        else:
            total += kn.pool[s][r] * win_weight(r, k)
    return total


cdef void _cases(Knowledge* kn) noexcept nogil:
    cdef int s, k, r, movable, unmoved_all
    cdef double v, moved_share, stationary, total
    for s in range(2):
        movable = kn.n_movable[s]
        unmoved_all = kn.n_unknown[s] - kn.n_moved[s]
        for k in range(N_RANKS):
            # Case 1: an unknown attacker of side s against a known defender of rank k.
            kn.p_case1[s][k] = _v(kn, s, k, False) / movable if movable > 0 else 0.0
            # Case 2: a known attacker of rank k against a moved unknown defender of side s.
            v = _v(kn, s, k, True)
            kn.p_case2[s][k] = v / movable if movable > 0 else 0.0
            # Case 3: against an unmoved unknown defender: the movable pieces that have not moved
            # yet, s = V * (|O(D,r>1)| - m) / |O(D,r>1)|, plus the flag (and the bombs for a miner),
            # over all unmoved unknown pieces.
            moved_share = (movable - kn.n_moved[s]) / <double>movable if movable > 0 else 0.0
            if moved_share < 0.0:
                moved_share = 0.0
            stationary = kn.pool[s][R_FLAG]
            if k == R_MINER:
                stationary += kn.pool[s][R_BOMB]
            if unmoved_all > 0:
                kn.p_case3[s][k] = (v * moved_share + stationary) / unmoved_all
            elif kn.n_unknown[s] > 0:
                kn.p_case3[s][k] = (v + stationary) / kn.n_unknown[s]
            else:
                kn.p_case3[s][k] = 0.0
            if kn.p_case3[s][k] > 1.0:
                kn.p_case3[s][k] = 1.0
    # Cases 4 and 5: both unknown, summed over the attacker's movable pool.
    for s in range(2):
        kn.p_case4[s] = 0.0
        kn.p_case5[s] = 0.0
        movable = kn.n_movable[s]
        if movable == 0:
            continue
        for r in range(N_RANKS):
            if not _movable_rank(r) or kn.pool[s][r] == 0:
                continue
            kn.p_case4[s] += kn.pool[s][r] / <double>movable * kn.p_case2[s ^ 1][r]
            kn.p_case5[s] += kn.pool[s][r] / <double>movable * kn.p_case3[s ^ 1][r]


cdef void replay_history(Pos* p, unsigned char* public_out, uint64_t* approached_out) noexcept nogil:
    """Replay the game from its first move: which pieces each side has shown (an attack shows both
    pieces, a range move of two squares or more shows a scout), and which pieces moved towards an
    opponent piece after that piece was shown (the psychological model's condition, 9.3)."""
    cdef Pos* q = <Pos*>malloc(sizeof(Pos))
    cdef int n, i, mv, a, d, frm, to, k, ksq, other
    if q == NULL:
        return
    memcpy(q, p, sizeof(Pos))
    memset(public_out, 0, MAX_PIECES * sizeof(unsigned char))
    memset(approached_out, 0, MAX_PIECES * sizeof(uint64_t))
    n = q.ply
    while q.ply > 0:
        unmake_move(q)
    for i in range(n):
        mv = q.hist[i].move
        a = q.hist[i].attacker
        d = q.hist[i].defender
        frm = mv & 0xFF
        to = mv >> 8
        if d == EMPTY:
            other = q.powner[a] ^ 1
            for k in range(q.first_id[other], q.end_id[other]):
                ksq = q.psq[k]
                if ksq >= 0 and public_out[k] and _dist(q, to, ksq) < _dist(q, frm, ksq):
                    approached_out[a] |= (<uint64_t>1) << (k - q.first_id[other])
            if _dist(q, frm, to) > 1:
                public_out[a] = 1
        else:
            public_out[a] = 1
            public_out[d] = 1
        make_move_result(q, mv, q.hist[i].result)
    free(q)


cdef inline int _dist(Pos* p, int a, int b) noexcept nogil:
    cdef int dc = a % p.stride - b % p.stride
    cdef int dr = a // p.stride - b // p.stride
    return (dc if dc >= 0 else -dc) + (dr if dr >= 0 else -dr)


# --- Python side --------------------------------------------------------------------------------

cdef int prepare_root(Pos* work, Knowledge* kn, Position pos, int me, object initial, object public,
                      object approached, object moved, object fears, bint psychology,
                      bint line_approach=True, bint use_beliefs=False, object beliefs=None) except -1:
    """Copy ``pos`` into ``work`` and build ``kn`` from it. ``public`` (our piece ids the opponent
    has seen) and ``approached`` ((mover, target) pairs) default to what the history shows;
    ``moved`` lists extra piece ids to treat as having moved (constructed test positions);
    ``fears`` is (own_fear, est_opp_fear, est_own_fear). ``use_beliefs``: attacks are priced from the
    beliefs, ``beliefs`` (see ``belief_rows``; None: the thesis's pool as beliefs)."""
    cdef int init[N_RANKS]
    cdef unsigned char pub[MAX_PIECES]
    cdef uint64_t appr[MAX_PIECES]
    cdef int r, pid, mover, target, count
    cdef const double[:, ::1] rows
    if me not in (0, 1):
        raise ValueError(f"side {me}")
    initial = list(initial)
    if len(initial) != N_RANKS:
        raise ValueError(f"initial counts: {len(initial)} values, one a rank code (0..12) expected")
    for r in range(N_RANKS):
        init[r] = int(initial[r])
    memcpy(work, &pos.p, sizeof(Pos))
    count = work.end_id[1]
    for pid in moved:
        if not 0 <= pid < count:
            raise ValueError(f"moved: no piece id {pid}")
        if work.pmoves[pid] == 0:
            work.pmoves[pid] = 1
    replay_history(&pos.p, pub, appr)
    if public is not None:
        memset(pub, 0, sizeof(pub))
        for pid in public:
            if not 0 <= pid < count:
                raise ValueError(f"public: no piece id {pid}")
            pub[pid] = 1
    if approached is not None:
        memset(appr, 0, sizeof(appr))
        for mover, target in approached:
            if not (0 <= mover < count and 0 <= target < count) or work.powner[mover] == work.powner[target]:
                raise ValueError(f"approached: ({mover}, {target}) is not a pair of opposing pieces")
            appr[mover] |= (<uint64_t>1) << (target - work.first_id[work.powner[target]])
    build_knowledge(kn, work, me, init, pub, appr)
    kn.beliefs = 0
    memset(kn.bel_still, 0, sizeof(kn.bel_still))
    if use_beliefs:
        if beliefs is None:
            build_beliefs(kn, work, NULL, 0)
        else:
            rows = belief_rows(beliefs, count)
            build_beliefs(kn, work, &rows[0, 0], rows.shape[1])
    own_fear, est_opp_fear, est_own_fear = fears
    kn.psychology = psychology
    kn.line_approach = line_approach
    kn.own_fear = float(own_fear)
    kn.est_opp_fear = float(est_opp_fear)
    kn.est_own_fear = float(est_own_fear)
    return 0


def belief_rows(beliefs, int count):
    """``beliefs`` as the compiled knowledge reads it: a float64 array of shape (n, 13) with n at least
    ``count`` (the position's pieces), row ``pid`` the distribution over rank codes 0..12 of piece
    ``pid`` as its opponent believes it (ours: as we model the opponent believing it); only the rows of
    pieces unknown to their opponent are read, and column 12 (unknown) is ignored. Rows need not sum to
    one. Anything else is a ValueError that says what is wrong."""
    array = np.ascontiguousarray(beliefs, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != N_RANKS or array.shape[0] < count:
        raise ValueError(f"beliefs: an array of shape (at least {count}, {N_RANKS}) expected, not {array.shape}")
    head = array[:count]
    if not np.all(np.isfinite(head)) or np.any(head < 0.0):
        raise ValueError("beliefs: every probability must be finite and not negative")
    return array


def history_facts(Position pos):
    """What the history shows: (ids of pieces whose rank the other side has seen, set of
    (mover, target) pairs where mover moved towards target after target was seen)."""
    cdef unsigned char pub[MAX_PIECES]
    cdef uint64_t appr[MAX_PIECES]
    cdef int pid, k, other
    replay_history(&pos.p, pub, appr)
    shown = {pid for pid in range(pos.p.end_id[1]) if pub[pid]}
    pairs = set()
    for pid in range(pos.p.end_id[1]):
        if appr[pid]:
            other = pos.p.powner[pid] ^ 1
            for k in range(pos.p.first_id[other], pos.p.end_id[other]):
                if (appr[pid] >> (k - pos.p.first_id[other])) & 1:
                    pairs.add((pid, k))
    return shown, pairs


cdef class KnowledgeView:
    """The knowledge of one position for Python (tests, reasons): pools, the five cases, attack
    outcomes in either perspective, flag and bomb probabilities."""

    cdef Pos* work
    cdef Knowledge kn
    cdef unsigned char kpub[MAX_PIECES]

    def __cinit__(self):
        self.work = <Pos*>malloc(sizeof(Pos))
        if self.work == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.work)

    def __init__(self, Position pos, int me, initial, *, public=None, approached=None, moved=(),
                 fears=(0.0, 0.0, 0.0), bint psychology=False, bint line_approach=True, bint beliefs=False,
                 belief_matrix=None):
        prepare_root(self.work, &self.kn, pos, me, initial, public, approached, moved, fears, psychology,
                     line_approach, beliefs, belief_matrix)
        memcpy(self.kpub, self.kn.public_, sizeof(self.kpub))

    @property
    def me(self) -> int:
        return self.kn.me

    def pool(self, int side) -> list:
        return [self.kn.pool[side][r] for r in range(N_RANKS)]

    def n_unknown(self, int side) -> int:
        return self.kn.n_unknown[side]

    def n_movable(self, int side) -> int:
        return self.kn.n_movable[side]

    def n_moved(self, int side) -> int:
        return self.kn.n_moved[side]

    def alive(self, int side) -> list:
        return [self.kn.alive[side][r] for r in range(N_RANKS)]

    def is_public(self, int pid) -> bool:
        return bool(self.kn.public_[pid])

    def case1(self, int side, int k) -> float:
        return self.kn.p_case1[side][k]

    def case2(self, int side, int k) -> float:
        return self.kn.p_case2[side][k]

    def case3(self, int side, int k) -> float:
        return self.kn.p_case3[side][k]

    def case4(self, int side) -> float:
        return self.kn.p_case4[side]

    def case5(self, int side) -> float:
        return self.kn.p_case5[side]

    def attack_outcomes(self, int persp, int attacker, int defender,
                        bint failed_attack_passive=True) -> tuple:
        """(win, lose, both, passive) of ``attacker`` attacking ``defender`` in the perspective
        (0 ours, 1 the opponent's) as the search would see it at the root."""
        cdef double out[N_OUTCOMES]
        cdef int count = self.work.end_id[1]
        if not (0 <= attacker < count and 0 <= defender < count):
            raise ValueError("no such piece id")
        if self.work.powner[attacker] == self.work.powner[defender]:
            raise ValueError("the pieces are on the same side")
        attack_outcomes(&self.kn, self.work, self.kpub, persp, attacker, defender, self.work.ply,
                        failed_attack_passive, out)
        return (out[0], out[1], out[2], out[3])

    def has_approached(self, int mover, int target) -> bool:
        return has_approached(&self.kn, self.work, mover, target, self.work.ply)

    def suspicion(self) -> list:
        return [self.kn.suspicion[pid] for pid in range(self.work.end_id[1])]

    def p_flag(self) -> list:
        return [self.kn.p_flag[pid] for pid in range(self.work.end_id[1])]

    def p_bomb(self) -> list:
        return [self.kn.p_bomb[pid] for pid in range(self.work.end_id[1])]

    def belief(self, int pid) -> list:
        """The piece's rank distribution (rank codes 0..12) as its opponent sees it at the root; all
        zero for a piece known to its opponent, a captured one, or without beliefs."""
        if not 0 <= pid < self.work.end_id[1]:
            raise ValueError(f"no piece id {pid}")
        return [self.kn.bel_still[pid][r] for r in range(N_RANKS)]
