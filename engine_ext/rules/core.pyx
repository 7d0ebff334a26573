# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled rules core: board, make/unmake, move generation, game-over detection, perft.

Everything that runs per node is a nogil C function on a ``Pos`` struct; ``Position`` is the thin
Python wrapper that the facade (engine_ext/rules/game.py) and the tests use.
"""

from libc.stdint cimport uint64_t
from libc.string cimport memset


# --- tables built once at import -------------------------------------------------------------

cdef void _init_combat() noexcept:
    cdef int a, d, r
    for a in range(N_RANKS):
        for d in range(N_RANKS):
            if d == R_FLAG:
                r = ATTACKER_WINS
            elif d == R_BOMB:
                r = ATTACKER_WINS if a == R_MINER else DEFENDER_WINS
            elif a == R_SPY and d == R_MARSHAL:
                r = ATTACKER_WINS
            elif a == d:
                r = BOTH_DIE
            elif a > d:
                r = ATTACKER_WINS
            else:
                r = DEFENDER_WINS
            COMBAT[a][d] = r


cdef uint64_t _splitmix(uint64_t* state) noexcept nogil:
    state[0] += 0x9E3779B97F4A7C15ULL
    cdef uint64_t z = state[0]
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef void _init_zobrist() noexcept:
    # A fixed seed: hashes are part of the more-squares rule and must agree between processes.
    cdef uint64_t state = 0x5EED5EED1234ULL
    cdef int i, s
    for i in range(MAX_PIECES):
        for s in range(MAX_SQ):
            ZOBRIST[i][s] = _splitmix(&state)


_init_combat()
_init_zobrist()


# --- the nogil core --------------------------------------------------------------------------

cdef void init_dirs(Pos* p) noexcept nogil:
    p.dirs[0] = p.stride
    p.dirs[1] = -p.stride
    p.dirs[2] = -1
    p.dirs[3] = 1


cdef int gen_moves(Pos* p, int* out, bint unknown_as_scout) noexcept nogil:
    """Every move of the side to move, repetition rules not applied. Returns the count."""
    cdef int n = 0
    cdef int s = p.side
    cdef int pid, sq, r, d, step, t, occ
    for pid in range(p.first_id[s], p.end_id[s]):
        sq = p.psq[pid]
        if sq < 0:
            continue
        r = p.prank[pid]
        if r == R_FLAG or r == R_BOMB:
            continue
        if r == R_SCOUT or (r == R_UNKNOWN and unknown_as_scout):
            for d in range(4):
                step = p.dirs[d]
                t = sq + step
                while True:
                    occ = p.board[t]
                    if occ == EMPTY:
                        out[n] = sq | (t << 8)
                        n += 1
                        t += step
                        continue
                    if occ >= 0 and p.powner[occ] != s and (p.range_attacks or t == sq + step):
                        out[n] = sq | (t << 8)
                        n += 1
                    break
        else:
            for d in range(4):
                t = sq + p.dirs[d]
                occ = p.board[t]
                if occ == EMPTY or (occ >= 0 and p.powner[occ] != s):
                    out[n] = sq | (t << 8)
                    n += 1
    return n


cdef bint has_moves(Pos* p) noexcept nogil:
    cdef int s = p.side
    cdef int pid, sq, r, d, occ
    for pid in range(p.first_id[s], p.end_id[s]):
        sq = p.psq[pid]
        if sq < 0:
            continue
        r = p.prank[pid]
        if r == R_FLAG or r == R_BOMB:
            continue
        # Any piece that can move at all can move one step: range moves start with a step.
        for d in range(4):
            occ = p.board[sq + p.dirs[d]]
            if occ == EMPTY or (occ >= 0 and p.powner[occ] != s):
                return True
    return False


cdef int combat_result(Pos* p, int move) noexcept nogil:
    cdef int d = p.board[move >> 8]
    if d < 0:
        return NO_COMBAT
    return COMBAT[p.prank[p.board[move & 0xFF]]][p.prank[d]]


cdef inline void _remove(Pos* p, int pid) noexcept nogil:
    cdef int sq = p.psq[pid]
    cdef int r = p.prank[pid]
    p.board[sq] = EMPTY
    p.psq[pid] = -1
    p.hash ^= ZOBRIST[pid][sq]
    if r == R_FLAG:
        p.flag_lost[p.powner[pid]] = 1
    elif r != R_BOMB:
        p.movable[p.powner[pid]] -= 1


cdef inline void _restore(Pos* p, int pid, int sq) noexcept nogil:
    cdef int r = p.prank[pid]
    p.board[sq] = pid
    p.psq[pid] = sq
    p.hash ^= ZOBRIST[pid][sq]
    if r == R_FLAG:
        p.flag_lost[p.powner[pid]] = 0
    elif r != R_BOMB:
        p.movable[p.powner[pid]] += 1


cdef inline void _relocate(Pos* p, int pid, int frm, int to) noexcept nogil:
    p.board[frm] = EMPTY
    p.board[to] = pid
    p.psq[pid] = to
    p.hash ^= ZOBRIST[pid][frm] ^ ZOBRIST[pid][to]


cdef int make_move_result(Pos* p, int move, int result) noexcept nogil:
    """Play ``move`` with the combat outcome given (the search branches on outcomes of attacks
    on unknown pieces). ``result`` is ignored for a move onto an empty square."""
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int a = p.board[frm]
    cdef int d = p.board[to]
    cdef Undo* u = &p.hist[p.ply]
    u.move = move
    u.attacker = a
    u.defender = d
    p.pmoves[a] += 1
    if d == EMPTY:
        result = NO_COMBAT
        _relocate(p, a, frm, to)
    elif result == ATTACKER_WINS:
        _remove(p, d)
        _relocate(p, a, frm, to)
    elif result == DEFENDER_WINS:
        _remove(p, a)
    else:
        result = BOTH_DIE
        _remove(p, d)
        _remove(p, a)
    u.result = result
    p.side ^= 1
    p.ply += 1
    return result


cdef int make_move(Pos* p, int move) noexcept nogil:
    return make_move_result(p, move, combat_result(p, move))


cdef void unmake_move(Pos* p) noexcept nogil:
    p.ply -= 1
    p.side ^= 1
    cdef Undo* u = &p.hist[p.ply]
    cdef int frm = u.move & 0xFF
    cdef int to = u.move >> 8
    cdef int a = u.attacker
    cdef int d = u.defender
    if u.result == NO_COMBAT:
        _relocate(p, a, to, frm)
    elif u.result == ATTACKER_WINS:
        _relocate(p, a, to, frm)
        _restore(p, d, to)
    elif u.result == DEFENDER_WINS:
        _restore(p, a, frm)
    else:
        _restore(p, a, frm)
        _restore(p, d, to)
    p.pmoves[a] -= 1


cdef void set_rank(Pos* p, int pid, int rank) noexcept nogil:
    """Reveal (or, in a search's hypothesis, assume) a piece's rank, keeping the counts right."""
    cdef int old = p.prank[pid]
    cdef bint alive = p.psq[pid] >= 0
    if alive and old != R_FLAG and old != R_BOMB:
        p.movable[p.powner[pid]] -= 1
    p.prank[pid] = rank
    if alive and rank != R_FLAG and rank != R_BOMB:
        p.movable[p.powner[pid]] += 1


cdef bint breaks_two_squares(Pos* p, int move, int limit) noexcept nogil:
    """The tournament's pseudocode: the side's last ``limit`` moves all went between the same two
    squares as ``move`` (either way round)."""
    cdef int reverse = (move >> 8) | ((move & 0xFF) << 8)
    cdef int count, idx, prev
    if limit <= 0:
        return False
    for count in range(1, limit + 1):
        idx = p.ply - 2 * count
        if idx < 0:
            return False
        prev = p.hist[idx].move
        if prev != move and prev != reverse:
            return False
    return True


cdef int game_status(Pos* p) noexcept nogil:
    if p.flag_lost[1]:
        return RED_TAKES_FLAG
    if p.flag_lost[0]:
        return BLUE_TAKES_FLAG
    if p.movable[0] == 0 and p.movable[1] == 0:
        return DRAW_NO_MOVABLE
    if not has_moves(p):
        return RED_WINS_NO_MOVES if p.side == 1 else BLUE_WINS_NO_MOVES
    return ONGOING


cdef unsigned long long perft(Pos* p, int depth) noexcept nogil:
    cdef int moves[MAX_MOVES]
    cdef int n, i
    cdef unsigned long long total = 0
    if depth == 0:
        return 1  # a leaf counts even when its flag was just taken
    if p.flag_lost[0] or p.flag_lost[1]:
        return 0  # a finished game has no moves
    n = gen_moves(p, moves, False)
    if depth == 1:
        return n
    for i in range(n):
        make_move(p, moves[i])
        total += perft(p, depth - 1)
        unmake_move(p)
    return total


# --- the Python wrapper ----------------------------------------------------------------------

cdef class Position:
    """A position on a mailbox board. Squares are mailbox indices: ``(row + 1) * (width + 2) + col + 1``.

    ``pieces`` is a sequence of ``(col, row, owner, rank)``; ids are given in that order, so red's
    pieces must come first.
    """

    def __init__(self, int width, int height, lakes, pieces, int side=0, bint range_attacks=True):
        cdef int col, row, owner, rank, sq, pid
        if not (2 <= width <= MAX_W and 2 <= height <= MAX_W):
            raise ValueError(f"board {width}x{height} out of range")
        pieces = list(pieces)
        if len(pieces) > MAX_PIECES:
            raise ValueError(f"{len(pieces)} pieces: at most {MAX_PIECES}")
        memset(&self.p, 0, sizeof(Pos))
        self.p.width = width
        self.p.height = height
        self.p.stride = width + 2
        self.p.side = side
        self.p.range_attacks = range_attacks
        init_dirs(&self.p)
        for sq in range(MAX_SQ):
            self.p.board[sq] = BLOCKED
        for row in range(height):
            for col in range(width):
                self.p.board[(row + 1) * self.p.stride + col + 1] = EMPTY
        for col, row in lakes:
            self.p.board[(row + 1) * self.p.stride + col + 1] = BLOCKED
        self.p.first_id[0] = 0
        self.p.end_id[0] = 0
        last_owner = 0
        for pid, (col, row, owner, rank) in enumerate(pieces):
            if owner not in (0, 1) or not (0 <= rank < N_RANKS):
                raise ValueError(f"bad piece {(col, row, owner, rank)}")
            if owner < last_owner:
                raise ValueError("red's pieces must come before blue's")
            last_owner = owner
            if not (0 <= col < width and 0 <= row < height):
                raise ValueError(f"piece off the board at {(col, row)}")
            sq = (row + 1) * self.p.stride + col + 1
            if self.p.board[sq] != EMPTY:
                raise ValueError(f"square {(col, row)} is a lake or taken twice")
            if owner == 0:
                self.p.end_id[0] = pid + 1
            self.p.board[sq] = pid
            self.p.prank[pid] = rank
            self.p.powner[pid] = owner
            self.p.psq[pid] = sq
            self.p.hash ^= ZOBRIST[pid][sq]
            if rank != R_FLAG and rank != R_BOMB:
                self.p.movable[owner] += 1
        self.p.first_id[1] = self.p.end_id[0]
        self.p.end_id[1] = len(pieces)
        # A side shown without a flag (a board code after the capture) has lost it; a hidden
        # piece may still be the flag.
        for owner in range(2):
            self.p.flag_lost[owner] = 1
            for pid in range(self.p.first_id[owner], self.p.end_id[owner]):
                if self.p.prank[pid] == R_FLAG or self.p.prank[pid] == R_UNKNOWN:
                    self.p.flag_lost[owner] = 0

    def __copy__(self):
        cdef Position other = Position.__new__(Position)
        other.p = self.p
        return other

    def copy(self) -> Position:
        return self.__copy__()

    # Square conversion -------------------------------------------------------------------

    def square(self, int col, int row) -> int:
        return (row + 1) * self.p.stride + col + 1

    def coords(self, int sq) -> tuple:
        return (sq % self.p.stride - 1, sq // self.p.stride - 1)

    # State ---------------------------------------------------------------------------------

    @property
    def width(self) -> int:
        return self.p.width

    @property
    def height(self) -> int:
        return self.p.height

    @property
    def side(self) -> int:
        return self.p.side

    @property
    def ply(self) -> int:
        return self.p.ply

    @property
    def hash(self) -> int:
        return self.p.hash

    @property
    def range_attacks(self) -> bool:
        return bool(self.p.range_attacks)

    @property
    def piece_count(self) -> int:
        return self.p.end_id[1]

    def movable_count(self, int side) -> int:
        return self.p.movable[side]

    def piece_id(self, int sq) -> int:
        """The id on ``sq``: -1 empty, -2 lake or off the board."""
        if not 0 <= sq < MAX_SQ:
            return BLOCKED
        return self.p.board[sq]

    def piece(self, int pid) -> tuple:
        """``(square or -1, owner, rank, times moved)`` of a piece id."""
        if not 0 <= pid < self.p.end_id[1]:
            raise IndexError(pid)
        return (self.p.psq[pid], self.p.powner[pid], self.p.prank[pid], self.p.pmoves[pid])

    def set_rank(self, int pid, int rank) -> None:
        if not 0 <= pid < self.p.end_id[1] or not 0 <= rank < N_RANKS:
            raise ValueError((pid, rank))
        set_rank(&self.p, pid, rank)

    def last_move(self) -> int:
        """The last move made, or -1."""
        return self.p.hist[self.p.ply - 1].move if self.p.ply > 0 else -1

    # Moves -----------------------------------------------------------------------------------

    def moves(self, bint unknown_as_scout=True) -> list:
        cdef int buf[MAX_MOVES]
        cdef int n = gen_moves(&self.p, buf, unknown_as_scout)
        return [buf[i] for i in range(n)]

    def count_moves(self, bint unknown_as_scout=True) -> int:
        cdef int buf[MAX_MOVES]
        return gen_moves(&self.p, buf, unknown_as_scout)

    def combat_result(self, int move) -> int:
        return combat_result(&self.p, move)

    def make(self, int move, int result=-1) -> int:
        """Play ``move`` (no legality check here: the facade checks). Returns the combat result."""
        if self.p.ply >= MAX_PLY - 1:
            raise OverflowError("move history full")
        if result < 0:
            return make_move(&self.p, move)
        return make_move_result(&self.p, move, result)

    def unmake(self) -> None:
        if self.p.ply == 0:
            raise IndexError("nothing to unmake")
        unmake_move(&self.p)

    def breaks_two_squares(self, int move, int limit) -> bool:
        return breaks_two_squares(&self.p, move, limit)

    def status(self) -> int:
        return game_status(&self.p)

    def has_moves(self) -> bool:
        return has_moves(&self.p)

    def perft(self, int depth) -> int:
        cdef unsigned long long n
        if depth < 0:
            raise ValueError("depth must be >= 0")
        with nogil:
            n = perft(&self.p, depth)
        return n

    def movegen_rate_sample(self, int repeats) -> int:
        """Generate this position's moves ``repeats`` times without the GIL (for the benchmark)."""
        cdef int buf[MAX_MOVES]
        cdef long long total = 0
        cdef int i
        with nogil:
            for i in range(repeats):
                total += gen_moves(&self.p, buf, False)
        return total

    def snapshot(self) -> tuple:
        """Everything make/unmake must restore (tests compare snapshots)."""
        return (
            self.p.side, self.p.ply, self.p.hash,
            tuple(self.p.board[i] for i in range(MAX_SQ)),
            tuple(self.p.psq[i] for i in range(self.p.end_id[1])),
            tuple(self.p.prank[i] for i in range(self.p.end_id[1])),
            tuple(self.p.pmoves[i] for i in range(self.p.end_id[1])),
            (self.p.movable[0], self.p.movable[1], self.p.flag_lost[0], self.p.flag_lost[1]),
        )
