# cython: language_level=3
# Evaluation of the Perspecto thesis (7.5, 9.4, Tables 4, 5 and 8): piece values with notches and
# lapsing special values, the flag's value spread over suspects, the values of captured pieces as
# each perspective sees them, the capture list's decay, and a seeded random term. Built once a move
# (engine_ext/engine/evaluation.pyx); the inline functions run per search node.

from libc.stdint cimport uint64_t

from engine_ext.rules.core cimport MAX_PIECES, N_RANKS, R_BOMB, R_SCOUT, R_UNKNOWN, Pos
from engine_ext.engine.knowledge cimport OWN, Knowledge

cdef enum:
    MAX_LINE = 64           # deepest ply the decay table covers

ctypedef struct Values:
    double piece[2][N_RANKS]            # a known piece of side s, rank r: notched rank value + live special
    double rank_value[2][N_RANKS]       # the notched rank value alone (for reasons and tests)
    double avg_all[2][2]                # [side][moved]: mean over the side's pool (moved: movable ranks only)
    double avg_take[2][2][N_RANKS]      # ... over pool ranks an attacker of rank k beats
    double avg_lose_to[2][2][N_RANKS]   # ... over movable pool ranks that lose attacking rank k
    double flag_value[2]
    double flag_share[MAX_PIECES]       # flag value * P(flag) for a piece its opponent does not know
    double reveal_factor                # Table 5: a piece that becomes known loses this share of its value
    double reveal_bomb                  # Table 5: ... a bomb loses this much
    double advance_bonus                # Table 5: per row a piece (not a scout) advances
    double decay[MAX_LINE + 1]          # 9.4: weight of an event at ply p, 5 % less every second ply
    double random_amplitude             # 7.5: the random term lies in [-amp, amp]
    uint64_t random_key
    double material[2]                  # the live movable pieces' rank values, by side (theirs: known + pool)
    int ahead                           # ours leads theirs by AHEAD_MARGIN of the two together (not in the thesis)

cdef void build_values(Values* v, Knowledge* kn, Pos* p, const double* base, const double* special,
                       double default_flag_value, double capture_decay, double reveal_factor,
                       double reveal_bomb, double advance_bonus, double random_amplitude,
                       uint64_t random_key, double own_flag_value=*,
                       double ahead_trade_bias=*) noexcept nogil


cdef inline double captured_value(Values* v, Knowledge* kn, Pos* p, const unsigned char* kpub,
                                  int persp, int x, int y, bint x_attacked) noexcept nogil:
    """What piece ``x`` taken by piece ``y`` is worth in the perspective (Table 8): a known piece
    its value; an unknown one the mean of the unknowns the captor can take when the captor is known
    to x's owner, else the mean of all unknowns (movable ones only once x has moved), plus x's share
    of the flag's value while it is a flag suspect."""
    cdef int owner = p.powner[x]
    cdef int mv = 1 if p.pmoves[x] > 0 else 0
    cdef bint captor_known
    cdef double base
    if owner == kn.enemy:
        if p.prank[x] != R_UNKNOWN:
            return v.piece[owner][p.prank[x]]
        captor_known = kpub[y] != 0
    else:
        if persp == OWN or kpub[x]:
            return v.piece[owner][p.prank[x]]
        captor_known = p.prank[y] != R_UNKNOWN
    if captor_known:
        if x_attacked:
            base = v.avg_lose_to[owner][mv][p.prank[y]]
        else:
            base = v.avg_take[owner][mv][p.prank[y]]
    else:
        base = v.avg_all[owner][mv]
    if mv == 0:
        base += v.flag_share[x]
    return base


cdef inline double reveal_value(Values* v, Pos* p, int x) noexcept nogil:
    """Table 5: what a piece is worth less once its opponent knows it."""
    cdef int r = p.prank[x]
    if r == R_BOMB:
        return v.reveal_bomb
    if r == R_UNKNOWN:
        return v.reveal_factor * v.avg_all[p.powner[x]][1]
    return v.reveal_factor * v.piece[p.powner[x]][r]


cdef inline double random_term(Values* v, uint64_t position_hash) noexcept nogil:
    """A value in [-amp, amp] that depends only on the seed, the real move number and the position,
    so a game replays exactly and both perspectives see the same term."""
    cdef uint64_t z
    cdef double u
    if v.random_amplitude == 0.0:
        return 0.0
    z = v.random_key ^ position_hash
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    z = z ^ (z >> 31)
    u = (z >> 11) * (1.0 / 9007199254740992.0)
    return v.random_amplitude * (2.0 * u - 1.0)
