# cython: language_level=3
# The seed's static look-ahead of the two-squares chase (engine_ext/chase/lookahead.pyx).

from engine_ext.rules.core cimport MAX_PIECES, MAX_SQ, Pos

cdef enum:
    CELL_OPEN = 0           # a square either chasing piece may step on
    CELL_PIECE = 1          # another piece: an obstacle that may protect the defender or bar it
    CELL_WALL = 2           # off the board or a lake
    MAX_BORDER = 64
    MAX_CANDIDATES = 512

    WHY_SEPARATE = 1        # escape: the attacker cannot reach the defender at all
    WHY_POCKET = 2          # capture: the defender is shut in an acyclic pocket behind the attacker
    WHY_TRAP = 3            # capture: a closed two-line trap area and the sideways count (seed ch. 4-6)
    WHY_REFUGE = 4          # escape: an open border square leads to a refuge in time (seed ch. 5.2)
    WHY_COUNT = 5           # escape: closed trap area, but the sideways count favours the defender (ch. 6)
    WHY_NO_TRAP = 6         # escape: no open line and no two-line trap area holds the defender (ch. 3-4)
    WHY_TAKE = 7            # capture: the attacker, to move, stands next to the defender

# The fixed part of a chase on a mailbox board (the core's layout: stride = width + 2, a wall border).
ctypedef struct ChaseGrid:
    int width
    int height
    int stride
    signed char cell[MAX_SQ]

ctypedef struct LookResult:
    int captured
    int moves               # attacker moves up to and including the capture (the oracle's count)
    int why
    int n_border
    short border[MAX_BORDER]  # squares of other pieces on the border of the trap area or pocket

ctypedef struct Candidate:
    short attacker
    short defender
    signed char attacker_side
    LookResult result

cdef void look_ahead_c(const ChaseGrid* g, int a, int d, bint a_to_move, int a_from, int a_count,
                       int d_from, int d_count, int limit, LookResult* out) noexcept nogil
# ``also`` (may be NULL): [attacker pid * MAX_PIECES + defender pid] pairs taken whatever their distance.
cdef int scan_c(Pos* p, int limit, int max_distance, Candidate* out, int max_out,
                const unsigned char* also=*) noexcept nogil
