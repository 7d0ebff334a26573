# cython: language_level=3
# The compiled rules core: a position as one C struct, and nogil functions on it.
# The search (engine_ext/engine/search) cimports this; Python code uses the Position wrapper.

from libc.stdint cimport uint64_t

cdef enum:
    MAX_W = 12
    MAX_SQ = 196            # (12 + 2) * (12 + 2): a mailbox with a one-square border
    MAX_PIECES = 96         # ids: red 0..n_red-1, blue after; 48 a side at most (12 x 4 rows)
    MAX_MOVES = 1024        # moves of one side in one position, with scouts' range moves
    MAX_PLY = 8192          # history kept for unmake and the two-squares rule

    EMPTY = -1
    BLOCKED = -2            # lake or border

    R_FLAG = 0
    R_SPY = 1
    R_SCOUT = 2
    R_MINER = 3
    R_MARSHAL = 10
    R_BOMB = 11
    R_UNKNOWN = 12
    N_RANKS = 13

    ONGOING = 0             # game_status codes
    RED_TAKES_FLAG = 1
    BLUE_TAKES_FLAG = 2
    DRAW_NO_MOVABLE = 3
    RED_WINS_NO_MOVES = 4   # blue to move and cannot
    BLUE_WINS_NO_MOVES = 5

    NO_COMBAT = 0
    ATTACKER_WINS = 1
    DEFENDER_WINS = 2
    BOTH_DIE = 3

ctypedef struct Undo:
    int move                # from | to << 8
    signed char attacker    # piece id
    signed char defender    # piece id or EMPTY
    signed char result      # NO_COMBAT .. BOTH_DIE

ctypedef struct Pos:
    int width
    int height
    int stride              # width + 2
    int side                # to move: 0 red, 1 blue
    int range_attacks       # scouts may attack at the end of a range move
    int ply                 # moves made since the position was set up
    int first_id[2]         # the side's piece ids are first_id[s] .. end_id[s]-1
    int end_id[2]
    int movable[2]          # live pieces that can move (unknown ranks count as movable)
    int flag_lost[2]
    int dirs[4]             # up, down, left, right in mailbox steps
    uint64_t hash           # Zobrist over (piece id, square): equal iff every piece stands where it stood
    signed char board[MAX_SQ]
    signed char prank[MAX_PIECES]
    signed char powner[MAX_PIECES]
    short psq[MAX_PIECES]   # square, or -1 once captured
    short pmoves[MAX_PIECES]  # how often the piece has moved
    Undo hist[MAX_PLY]

cdef signed char COMBAT[N_RANKS][N_RANKS]
cdef uint64_t ZOBRIST[MAX_PIECES][MAX_SQ]

cdef inline int move_from(int move) noexcept nogil:
    return move & 0xFF

cdef inline int move_to(int move) noexcept nogil:
    return move >> 8

cdef inline int make_move_code(int frm, int to) noexcept nogil:
    return frm | (to << 8)

cdef void init_dirs(Pos* p) noexcept nogil
cdef int gen_moves(Pos* p, int* out, bint unknown_as_scout) noexcept nogil
cdef bint has_moves(Pos* p) noexcept nogil
cdef int combat_result(Pos* p, int move) noexcept nogil
cdef int make_move_result(Pos* p, int move, int result) noexcept nogil
cdef int make_move(Pos* p, int move) noexcept nogil
cdef void unmake_move(Pos* p) noexcept nogil
cdef void set_rank(Pos* p, int pid, int rank) noexcept nogil
cdef bint breaks_two_squares(Pos* p, int move, int limit) noexcept nogil
cdef int game_status(Pos* p) noexcept nogil
cdef unsigned long long perft(Pos* p, int depth) noexcept nogil

cdef class Position:
    cdef Pos p
