# cython: language_level=3
# Knowledge of the Perspecto thesis (7.3, 9.3): the pools of unknown pieces, moved / unmoved, the
# probabilities of the five attack cases for both perspectives (or, with beliefs, from each unknown
# piece's rank distribution), and the psychological rule Py = P - P * psy. Built once a move
# (engine_ext/engine/knowledge.pyx); the inline functions below run per search node and are compiled
# into every module that cimports them.

from libc.stdint cimport uint64_t

from engine_ext.rules.core cimport (
    ATTACKER_WINS, BOTH_DIE, COMBAT, EMPTY, MAX_PIECES, MAX_SQ, N_RANKS, R_BOMB, R_FLAG, R_MARSHAL, R_SPY,
    R_UNKNOWN, Pos,
)

cdef enum:
    OWN = 0                 # perspective: the board as we know it
    OPP = 1                 # perspective: the board as we think the opponent knows it
    OUT_WIN = 0             # outcomes of an attack in the search
    OUT_LOSE = 1
    OUT_BOTH = 2
    OUT_PASSIVE = 3         # a failed attack that would not have been made (8.3)
    N_OUTCOMES = 4
    R_LIEUTENANT = 5

ctypedef struct Knowledge:
    int me                          # our side
    int enemy
    int initial[N_RANKS]            # pieces of each rank a side starts with
    # The pools (7.3): pool[s][r] = pieces of side s, rank r, that s's opponent does not know.
    # pool[enemy]: the opponent's pieces unknown to us; pool[me]: ours as the opponent sees them.
    int pool[2][N_RANKS]
    int n_unknown[2]                # |O(s, r >= 0)|
    int n_movable[2]                # |O(s, r > 1)|
    int n_moved[2]                  # m: unknown pieces of s that have moved
    int alive[2][N_RANKS]           # live pieces of each rank (for the enemy: known + pool)
    unsigned char public_[MAX_PIECES]   # the piece's rank is known to its opponent (at the root)
    uint64_t approached[MAX_PIECES]     # bit j: the piece moved towards opponent piece first_id + j
                                        # after that piece became known (real history, 9.3)
    # Success probabilities of an attack, half of the ties counted as success (7.3).
    double p_case1[2][N_RANKS]      # unknown attacker of side s vs known defender of rank k
    double p_case2[2][N_RANKS]      # known attacker of rank k vs moved unknown defender of side s
    double p_case3[2][N_RANKS]      # known attacker of rank k vs unmoved unknown defender of side s
    double p_case4[2]               # unknown attacker of side s vs moved unknown defender
    double p_case5[2]               # unknown attacker of side s vs unmoved unknown defender
    double suspicion[MAX_PIECES]    # flag suspicions of a piece as its opponent sees it (7.5)
    double susp_total[2]
    double p_flag[MAX_PIECES]       # probability that the piece is its side's flag, as its opponent sees it
    double p_bomb[MAX_PIECES]
    # The psychological model (9.3).
    int psychology
    int line_approach               # a plain move earlier in the search line counts as an approach
    double own_fear                 # our known piece vs their approaching unknown, our view
    double est_opp_fear             # their known piece vs our approaching unknown, their view
    double est_own_fear             # our known piece vs their approaching unknown, their view
    int sq_col[MAX_SQ]
    int sq_row[MAX_SQ]
    # Beliefs (issue 22): with ``beliefs`` set, P comes from what each unknown piece probably is, as its
    # opponent sees it (ours: as we model the opponent seeing them), instead of the pools' five cases.
    # Rows are filled at the root (prepare_root) for the pieces unknown there, by piece id.
    int beliefs
    double bel_still[MAX_PIECES][N_RANKS]   # the piece's rank distribution (no bomb or flag once moved)
    double bel_moved[MAX_PIECES][N_RANKS]   # ... given that it moves (moved in the search line): no bomb or flag
    double lose_still[MAX_PIECES][N_RANKS]  # [k]: P(a known attacker of rank k beats the unmoved piece), ties half
    double lose_moved[MAX_PIECES][N_RANKS]  # ... the piece has moved (at the root or in the search line)
    double beat_known[MAX_PIECES][N_RANKS]  # [k]: P(the piece, attacking, beats a known defender of rank k)
    # Not in the thesis (issue 45): our pieces of this rank and above (the top pieces) do not attack an
    # unmoved unseen piece that may be a bomb; 0: they do. Set by the search's fill, after prepare_root.
    int top_piece_rank

cdef void build_knowledge(Knowledge* kn, Pos* p, int me, const int* initial,
                          const unsigned char* public_, const uint64_t* approached) noexcept nogil
cdef void build_beliefs(Knowledge* kn, Pos* p, const double* rows, int row_stride) noexcept nogil
cdef void replay_history(Pos* p, unsigned char* public_out, uint64_t* approached_out) noexcept nogil


cdef inline bint is_public(Knowledge* kn, Pos* p, const unsigned char* kpub, int pid) noexcept nogil:
    """The piece's rank is known to its opponent: ours when revealed, theirs when we know it."""
    if p.powner[pid] == kn.me:
        return kpub[pid] != 0
    return p.prank[pid] != R_UNKNOWN


cdef inline bint known_in(Knowledge* kn, Pos* p, const unsigned char* kpub, int persp, int pid) noexcept nogil:
    """The piece's rank is known in the perspective: we know all ours; the opponent (as we model it)
    knows ours once revealed; their pieces are known in both views only once we have seen them."""
    if p.powner[pid] == kn.me:
        return persp == OWN or kpub[pid] != 0
    return p.prank[pid] != R_UNKNOWN


cdef inline int manhattan(Knowledge* kn, int a, int b) noexcept nogil:
    cdef int dc = kn.sq_col[a] - kn.sq_col[b]
    cdef int dr = kn.sq_row[a] - kn.sq_row[b]
    return (dc if dc >= 0 else -dc) + (dr if dr >= 0 else -dr)


cdef inline bint has_approached(Knowledge* kn, Pos* p, int mover, int target, int line_start) noexcept nogil:
    """``mover`` has moved towards ``target`` after the target became known (9.3): in the real game
    (precomputed), or by a plain move in the search line since ``line_start``."""
    cdef int owner_t = p.powner[target]
    cdef int bit = target - p.first_id[owner_t]
    cdef int i, frm, to, tsq
    if (kn.approached[mover] >> bit) & 1:
        return True
    if not kn.line_approach:
        return False
    tsq = p.psq[target]
    for i in range(line_start, p.ply):
        if p.hist[i].attacker == mover and p.hist[i].defender == EMPTY and p.hist[i].move != 0:
            frm = p.hist[i].move & 0xFF
            to = p.hist[i].move >> 8
            if manhattan(kn, to, tsq) < manhattan(kn, frm, tsq):
                return True
    return False


cdef inline double win_weight(int a, int d) noexcept nogil:
    """Success of rank a attacking rank d: 1, a tie half (7.3: V counts half of the double kills)."""
    cdef int c = COMBAT[a][d]
    if c == ATTACKER_WINS:
        return 1.0
    if c == BOTH_DIE:
        return 0.5
    return 0.0


cdef inline double unmoved_win(Knowledge* kn, Pos* p, bint attacker_known, int a, int d) noexcept nogil:
    """P(win) of ``a`` on the unmoved unknown ``d``: case 3 (``a`` known) or 5."""
    if attacker_known:
        return kn.p_case3[p.powner[d]][p.prank[a]]
    return kn.p_case5[p.powner[a]]


cdef inline double belief_win(Knowledge* kn, Pos* p, bint attacker_known, bint defender_known,
                              int a, int d) noexcept nogil:
    """P(win) of ``a`` on ``d`` from the beliefs (one of them unknown in the perspective): an attacker
    has moved, so it is neither bomb nor flag; the defender is taken as it stands in the search line
    (moved or not). Unknown against unknown sums over the attacker's ranks (ten products)."""
    cdef const double* lose
    cdef double total = 0.0
    cdef int r
    if defender_known:
        return kn.beat_known[a][p.prank[d]]
    if p.pmoves[d] > 0:
        lose = &kn.lose_moved[d][0]
    else:
        lose = &kn.lose_still[d][0]
    if attacker_known:
        return lose[p.prank[a]]
    for r in range(R_SPY, R_MARSHAL + 1):
        total += kn.bel_moved[a][r] * lose[r]
    return total


cdef inline bint top_piece_lottery(Knowledge* kn, Pos* p, int persp, int a, int d, bint defender_known) noexcept nogil:
    """Our top piece (``top_piece_rank`` and above) on an unseen piece that has not moved, in the line or
    before, while it may be a bomb (P(bomb) at the root above 0): in our view the attack costs the whole
    attacker. Not in the thesis (issue 45): the scale prices the marshal at 95 and the general at 85, so
    P(bomb) x value against the pool's mean gain made each step into the opponent's back rows a paying
    lottery, and the walk ended on a bomb (docs/lab.md, the top pieces' fatal attacks); with them gone,
    the opponent's own top pieces rule the board, which no scale value prices. They take a piece that has
    moved, or one whose rank they know; miners and lower pieces test the unmoved ones."""
    return (persp == OWN and kn.top_piece_rank > 0 and p.powner[a] == kn.me and p.prank[a] >= kn.top_piece_rank
            and not defender_known and p.pmoves[d] == 0 and kn.p_bomb[d] > 0.0)


cdef inline void attack_outcomes(Knowledge* kn, Pos* p, const unsigned char* kpub, int persp,
                                 int a, int d, int line_start, bint failed_attack_passive,
                                 double* out) noexcept nogil:
    """Probabilities of win / lose / both / passive of the attack of piece ``a`` on piece ``d`` in
    the perspective. Known against known is certain (a tie kills both); with an unknown piece the
    five cases of 7.3 give P, a double kill gets probability 0, the psychological model (9.3) lowers
    the known piece's chance, and an unknown attacker's failure on a piece its owner knows becomes
    the passive move (8.3), because it would not have attacked."""
    cdef bint ak = known_in(kn, p, kpub, persp, a)
    cdef bint dk = known_in(kn, p, kpub, persp, d)
    cdef int ra = p.prank[a]
    cdef int rd = p.prank[d]
    cdef int c, known_pid, unknown_pid
    cdef double P, psy
    out[0] = 0.0
    out[1] = 0.0
    out[2] = 0.0
    out[3] = 0.0
    if ak and dk:
        c = COMBAT[ra][rd]
        if c == ATTACKER_WINS:
            out[OUT_WIN] = 1.0
        elif c == BOTH_DIE:
            out[OUT_BOTH] = 1.0
        else:
            out[OUT_LOSE] = 1.0
        return
    if top_piece_lottery(kn, p, persp, a, d, dk):
        out[OUT_LOSE] = 1.0
        return
    if kn.beliefs:
        P = belief_win(kn, p, ak, dk, a, d)
    elif dk:
        P = kn.p_case1[p.powner[a]][rd]
    elif p.pmoves[d] == 0:
        P = unmoved_win(kn, p, ak, a, d)
    elif ak:
        P = kn.p_case2[p.powner[d]][ra]
    else:
        P = kn.p_case4[p.powner[a]]
    if kn.psychology and ak != dk:
        known_pid = a if ak else d
        unknown_pid = d if ak else a
        if is_public(kn, p, kpub, known_pid) and has_approached(kn, p, unknown_pid, known_pid, line_start):
            if p.powner[known_pid] == kn.me:
                psy = kn.own_fear if persp == OWN else kn.est_own_fear
            else:
                psy = kn.est_opp_fear
            # Py = P - P * psy on the known piece's chance of winning.
            if known_pid == a:
                P = P - P * psy
            else:
                P = 1.0 - ((1.0 - P) - (1.0 - P) * psy)
    out[OUT_WIN] = P
    if failed_attack_passive and not ak and is_public(kn, p, kpub, d):
        out[OUT_PASSIVE] = 1.0 - P
    else:
        out[OUT_LOSE] = 1.0 - P


from engine_ext.rules.core cimport Position

cdef int prepare_root(Pos* work, Knowledge* kn, Position pos, int me, object initial, object public,
                      object approached, object moved, object fears, bint psychology,
                      bint line_approach=*, bint use_beliefs=*, object beliefs=*) except -1
