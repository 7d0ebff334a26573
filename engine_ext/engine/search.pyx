# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The searches of the Perspecto thesis, compiled: minimax with alpha-beta (Fig 7-8), expectiminimax
(Fig 9-10) and p-e-minimax (Fig 12-13) with Perspecto's refinements (9.4).

Values are always from our side (higher is better for us). A p-e-minimax node carries two: ``mine``
on the board as we know it and ``opp`` on the board as we think the opponent knows it. At our nodes
each is maximised on its own; at the opponent's nodes its moves are judged by ``opp`` alone, the
moves within ``average_margin`` of its best averaged. An attack with an unknown piece is a chance
node with one probability per perspective. At the root every move is compared with the passive move
searched over the same local area, and the best difference wins.

``SearchRunner`` is the Python entry: it copies the position, builds knowledge and values, and runs
the iterative deepening without the GIL.
"""

from cython.parallel cimport prange
from libc.limits cimport LLONG_MAX
from libc.math cimport INFINITY
from libc.stdint cimport uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy
from posix.time cimport CLOCK_MONOTONIC, clock_gettime, timespec

from engine_ext.rules.core cimport (
    ATTACKER_WINS, BLOCKED, BOTH_DIE, COMBAT, DEFENDER_WINS, EMPTY, MAX_MOVES, MAX_PIECES, MAX_PLY, MAX_SQ,
    N_RANKS, NO_COMBAT, R_BOMB, R_FLAG, R_MARSHAL, R_SCOUT, R_SPY, R_UNKNOWN, ZOBRIST, Pos, Position, Undo,
    breaks_two_squares, make_move_result, unmake_move,
)
from engine_ext.engine.evaluation cimport MAX_LINE, Values, build_values, captured_value, random_term, reveal_value
from engine_ext.engine.knowledge cimport (
    N_OUTCOMES, OPP, OUT_BOTH, OUT_LOSE, OUT_PASSIVE, OUT_WIN, OWN, Knowledge, attack_outcomes,
    is_public, known_in, manhattan, prepare_root,
)
from engine_ext.engine.strategic cimport StrategicConfig, fill_strategic_config, strategic_scores


cdef extern from *:
    """
    static inline int perspecto_load_flag(int* f) { return __atomic_load_n(f, __ATOMIC_RELAXED); }
    static inline void perspecto_store_flag(int* f, int v) { __atomic_store_n(f, v, __ATOMIC_RELAXED); }
    static inline int perspecto_fetch_add(int* f, int v) { return __atomic_fetch_add(f, v, __ATOMIC_RELAXED); }
    static inline int perspecto_ctz(unsigned long long x) { return __builtin_ctzll(x); }
    """
    int load_flag "perspecto_load_flag"(int* f) noexcept nogil
    void store_flag "perspecto_store_flag"(int* f, int v) noexcept nogil
    int fetch_add "perspecto_fetch_add"(int* f, int v) noexcept nogil
    int ctz "perspecto_ctz"(unsigned long long x) noexcept nogil


ALGORITHMS = {"minimax": ALG_MINIMAX, "expectiminimax": ALG_EXPECTIMINIMAX, "pemm": ALG_PEMM}
cdef double TIE_EPSILON = 1e-9   # floating-point ties: sums in another order differ in the last bits


cdef inline double monotonic() noexcept nogil:
    """The clock of Python's time.monotonic() on Linux."""
    cdef timespec ts
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return ts.tv_sec + ts.tv_nsec * 1e-9


cdef inline bint out_of_time(Search* S) noexcept nogil:
    if S.aborted:
        return True
    if S.nodes >= S.next_check:
        # The node budget rides on the clock's checks: ``next_check`` never passes ``node_limit + 1``,
        # so a search without a budget (LLONG_MAX) does no more work per node than before.
        if S.nodes > S.node_limit:
            S.aborted = ABORT_NODES
            return True
        S.next_check = S.nodes + CHECK_EVERY
        if S.next_check > S.node_limit:
            S.next_check = S.node_limit + 1
        if load_flag(S.stop_flag) or load_flag(S.abort_flag) or monotonic() >= S.abort_deadline:
            S.aborted = ABORT_TIME
            store_flag(S.abort_flag, 1)
    return S.aborted != 0


# --- the passive move and move generation -------------------------------------------------------

cdef void make_null(Pos* p) noexcept nogil:
    """The passive move: the side to move does nothing. It takes a history slot so that the
    two-squares rule still looks at each side's own moves."""
    cdef Undo* u = &p.hist[p.ply]
    u.move = NULL_MOVE
    u.attacker = -1
    u.defender = -1
    u.result = NO_COMBAT
    p.side ^= 1
    p.ply += 1


cdef void unmake_null(Pos* p) noexcept nogil:
    p.ply -= 1
    p.side ^= 1


cdef inline bint takes(int attacker, int defender) noexcept nogil:
    """A piece of rank ``attacker`` that can move wins its attack on ``defender`` (both ranks known)."""
    return attacker != R_BOMB and attacker != R_FLAG and COMBAT[attacker][defender] == ATTACKER_WINS


cdef void mark_fights(Search* S, int me) noexcept nogil:
    """Not in the thesis (``fight_reach``, issue 47): a fight is one of our pieces and an enemy piece whose
    rank we know, one of which takes the other, at most ``fight_reach`` steps apart. The squares on their
    ways to each other (a detour of one step allowed: at most two steps more than the shortest way, lakes
    aside) join every root move's area, so a known raider's walk into our pieces, or our hunter's walk to
    it, is searched whatever the root move and however far from it. ``fight_near`` holds every square one
    step from those (two steps more again), as ``near`` does for the area."""
    cdef Pos* p = &S.pos
    cdef int a, b, sa, sb, ra, rb, d, sq, via
    for sq in range(MAX_SQ):
        S.fight[sq] = 0
        S.fight_near[sq] = 0
    if S.cfg.fight_reach < 0:
        return
    for b in range(p.first_id[1 - me], p.end_id[1 - me]):
        sb = p.psq[b]
        rb = p.prank[b]
        if sb < 0 or rb == R_UNKNOWN:
            continue
        for a in range(p.first_id[me], p.end_id[me]):
            sa = p.psq[a]
            ra = p.prank[a]
            if sa < 0 or not (takes(rb, ra) or takes(ra, rb)):
                continue
            d = manhattan(&S.kn, sa, sb)
            if d > S.cfg.fight_reach:
                continue
            for sq in range(MAX_SQ):
                via = manhattan(&S.kn, sa, sq) + manhattan(&S.kn, sq, sb)
                if via <= d + 2:
                    S.fight[sq] = 1
                if via <= d + 4:
                    S.fight_near[sq] = 1


cdef void set_area(Search* S, int move) noexcept nogil:
    """The local search area (7.4): squares within ``radius`` steps of the first move's squares.
    ``near`` adds one ring: only pieces there (and scouts) can make a move into the area."""
    cdef Pos* p = &S.pos
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int sq, side, pid, rank, d, r = S.cfg.local_radius
    cdef int fr = S.cfg.flag_area
    cdef int flag = S.cfg.flag_sq
    cdef bint runs
    for sq in range(MAX_SQ):
        S.area[sq] = manhattan(&S.kn, sq, frm) <= r or manhattan(&S.kn, sq, to) <= r
        S.near[sq] = manhattan(&S.kn, sq, frm) <= r + 1 or manhattan(&S.kn, sq, to) <= r + 1
        if flag >= 0:
            # Not in the thesis: our flag's surroundings belong to every area, so a raid on the
            # flag is searched whatever the root move (docs/engine.md, "Flag defence").
            d = manhattan(&S.kn, sq, flag)
            if d <= fr:
                S.area[sq] = 1
            if d <= fr + 1:
                S.near[sq] = 1
        if S.fight[sq]:
            S.area[sq] = 1
        if S.fight_near[sq]:
            S.near[sq] = 1
    S.box[0] = S.box[2] = 1 << 20
    S.box[1] = S.box[3] = -1
    for sq in range(MAX_SQ):
        if S.area[sq]:
            S.box[0] = min(S.box[0], S.kn.sq_col[sq])
            S.box[1] = max(S.box[1], S.kn.sq_col[sq])
            S.box[2] = min(S.box[2], S.kn.sq_row[sq])
            S.box[3] = max(S.box[3], S.kn.sq_row[sq])
    for side in range(2):
        S.n_cand[side] = 0
        S.n_scouts[side] = 0
        for pid in range(p.first_id[side], p.end_id[side]):
            sq = p.psq[pid]
            rank = p.prank[pid]
            if sq < 0 or rank == R_FLAG or rank == R_BOMB:
                continue
            runs = rank == R_SCOUT and S.cfg.scout_runs
            if runs or S.near[sq]:
                S.cand[side][S.n_cand[side]] = pid
                S.n_cand[side] += 1
            if runs:
                S.scouts[side][S.n_scouts[side]] = pid
                S.n_scouts[side] += 1


cdef void set_global(Search* S) noexcept nogil:
    """Global search: every piece that can move is a candidate."""
    cdef Pos* p = &S.pos
    cdef int side, pid, rank
    for side in range(2):
        S.n_cand[side] = 0
        S.n_scouts[side] = 0
        for pid in range(p.first_id[side], p.end_id[side]):
            rank = p.prank[pid]
            if p.psq[pid] >= 0 and rank != R_FLAG and rank != R_BOMB:
                S.cand[side][S.n_cand[side]] = pid
                S.n_cand[side] += 1
            if p.psq[pid] >= 0 and rank == R_SCOUT and S.cfg.scout_runs:
                S.scouts[side][S.n_scouts[side]] = pid
                S.n_scouts[side] += 1


cdef inline int last_moved_piece(Pos* p, int root_ply) noexcept nogil:
    """The side to move's most recently moved piece (passive moves skipped), or -1 when it is gone."""
    cdef int i = p.ply - 2
    cdef int a
    while i >= 0:
        if p.hist[i].move != NULL_MOVE:
            a = p.hist[i].attacker
            return a if p.psq[a] >= 0 else -1
        i -= 2
    return -1


cdef inline bint into_reach(Pos* p, int side, int rank, int to) noexcept nogil:
    """After a move to ``to`` an opponent piece stands next to it that may take it (9.4: "flyttar en
    pjäs så att den kan bli slagen"): an unknown one, or a known one that beats or ties this rank."""
    cdef int d, nb, r
    for d in range(4):
        nb = p.board[to + p.dirs[d]]
        if nb >= 0 and p.powner[nb] != side:
            r = p.prank[nb]
            if r == R_BOMB or r == R_FLAG:
                continue
            if r == R_UNKNOWN or rank == R_UNKNOWN or COMBAT[r][rank] != DEFENDER_WINS:
                return True
    return False


# --- occupancy bitboards for the restricted plies --------------------------------------------------

cdef inline void bit_toggle(uint64_t* b, int sq) noexcept nogil:
    b[sq >> 6] ^= (<uint64_t>1) << (sq & 63)


cdef void init_bits(Search* S) noexcept nogil:
    cdef Pos* p = &S.pos
    cdef int side, w, pid, r
    for side in range(2):
        for w in range(4):
            S.occ_all[side][w] = 0
            S.occ_mov[side][w] = 0
    for pid in range(p.end_id[1]):
        if p.psq[pid] < 0:
            continue
        bit_toggle(S.occ_all[p.powner[pid]], p.psq[pid])
        r = p.prank[pid]
        if r != R_FLAG and r != R_BOMB:
            bit_toggle(S.occ_mov[p.powner[pid]], p.psq[pid])


cdef inline void toggle_piece(Search* S, int pid, int sq) noexcept nogil:
    cdef int r = S.pos.prank[pid]
    bit_toggle(S.occ_all[S.pos.powner[pid]], sq)
    if r != R_FLAG and r != R_BOMB:
        bit_toggle(S.occ_mov[S.pos.powner[pid]], sq)


cdef inline void toggle_outcome(Search* S, int move, int outcome) noexcept nogil:
    """The occupancy change of ``move`` with ``outcome``, read from the board before the move (it
    is its own inverse: the same call after the unmake restores the bits)."""
    cdef Pos* p = &S.pos
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int a = p.board[frm]
    cdef int d = p.board[to]
    toggle_piece(S, a, frm)
    if d < 0 or outcome == OUT_WIN:
        toggle_piece(S, a, to)
    if d >= 0 and outcome != OUT_LOSE:
        toggle_piece(S, d, to)


cdef inline void shift_or(const uint64_t* a, int k, uint64_t* out) noexcept nogil:
    """out |= a shifted by k squares (k in -63..63, not 0)."""
    cdef int j
    if k > 0:
        out[3] |= (a[3] << k) | (a[2] >> (64 - k))
        out[2] |= (a[2] << k) | (a[1] >> (64 - k))
        out[1] |= (a[1] << k) | (a[0] >> (64 - k))
        out[0] |= a[0] << k
    else:
        j = -k
        out[0] |= (a[0] >> j) | (a[1] << (64 - j))
        out[1] |= (a[1] >> j) | (a[2] << (64 - j))
        out[2] |= (a[2] >> j) | (a[3] << (64 - j))
        out[3] |= a[3] >> j


cdef enum:
    MAX_QUIET = 64              # plain moves at a restricted ply: the last piece's (a scout's runs on a
                                # 12x12 board: 22) and the flights (at most 3 a threatened piece)


cdef inline bint threatened(Search* S, int side, int pid) noexcept nogil:
    """A piece of known rank stands next to an enemy piece that wins attacking it, its rank known in the
    mover's own view (ours: as we know the board; theirs: as we model their knowledge, so our spy they have
    not seen is no threat to their marshal): the threat a quiescence search lets the piece flee (Schadd and
    Winands 2009)."""
    cdef Pos* p = &S.pos
    cdef int rank = p.prank[pid]
    cdef int sq = p.psq[pid]
    cdef int persp = OWN if side == S.kn.me else OPP
    cdef int d, nb, r
    if rank == R_UNKNOWN:
        return False
    for d in range(4):
        nb = p.board[sq + p.dirs[d]]
        if nb >= 0 and p.powner[nb] != side and known_in(&S.kn, p, S.kpub, persp, nb):
            r = p.prank[nb]
            if r != R_UNKNOWN and r != R_BOMB and r != R_FLAG and COMBAT[r][rank] == ATTACKER_WINS:
                return True
    return False


cdef inline bint loses_for_certain(Search* S, int a, int d) noexcept nogil:
    """In the mover's own view (ours: the board as we know it; theirs: as we model their knowledge) both
    ranks are known and the defender wins: the attack of ``a`` on ``d`` only throws the attacker away."""
    cdef Pos* p = &S.pos
    cdef int persp = OWN if p.powner[a] == S.kn.me else OPP
    if not known_in(&S.kn, p, S.kpub, persp, a) or not known_in(&S.kn, p, S.kpub, persp, d):
        return False
    return COMBAT[p.prank[a]][p.prank[d]] == DEFENDER_WINS


cdef int plain_moves(Search* S, int pid, bint safe_only, int* buf, int quiet) noexcept nogil:
    """Append ``pid``'s plain moves that touch the area (a running scout's every square) to ``buf``
    from ``quiet`` on; ``safe_only``: only to squares where no enemy piece may take it (a flight)."""
    cdef Pos* p = &S.pos
    cdef bint local = S.cfg.local_radius >= 0
    cdef int f = p.psq[pid]
    cdef int d, step, t, move
    for d in range(4):
        step = p.dirs[d]
        t = f + step
        while p.board[t] == EMPTY:
            move = f | (t << 8)
            if (not local or S.area[f] or S.area[t]) and quiet < MAX_QUIET \
                    and not (safe_only and into_reach(p, p.powner[pid], p.prank[pid], t)) \
                    and not repeats(p, move, S.cfg.two_squares):
                buf[quiet] = move
                quiet += 1
            if p.prank[pid] != R_SCOUT or not S.cfg.scout_runs:
                break
            t += step
    return quiet


cdef int gen_restricted(Search* S, int* out, int last) noexcept nogil:
    """The restricted plies (past the en-prise ply) want attacks and the last moved piece's moves
    only: attacks come from the bitboards instead of a look around every piece, in the order
    gen_node_moves gives (victim rank, then piece id, then direction)."""
    cdef Pos* p = &S.pos
    cdef int side = p.side
    cdef int enemy = side ^ 1
    cdef bint local = S.cfg.local_radius >= 0
    cdef uint64_t reach[4]
    cdef uint64_t x
    cdef int caps[MAX_NODE_MOVES]
    cdef int order[MAX_NODE_MOVES]
    cdef int n = 0
    cdef int quiet = 0
    cdef int quiet_buf[MAX_QUIET]
    cdef int w, t, d, f, a, move, key, j, i, r, step, occ, pid
    cdef bint ours = side == S.kn.me
    for w in range(4):
        reach[w] = 0
    shift_or(S.occ_mov[side], 1, reach)
    shift_or(S.occ_mov[side], -1, reach)
    shift_or(S.occ_mov[side], p.stride, reach)
    shift_or(S.occ_mov[side], -p.stride, reach)
    for w in range(4):
        x = reach[w] & S.occ_all[enemy][w]
        while x:
            t = (w << 6) + ctz(x)
            x &= x - 1
            for d in range(4):
                f = t - p.dirs[d]
                a = p.board[f]
                if a < 0 or p.powner[a] != side:
                    continue
                r = p.prank[a]
                if r == R_FLAG or r == R_BOMB or (r == R_SCOUT and S.cfg.scout_runs):
                    continue        # running scouts are done below, with their range attacks
                if local and not S.area[f] and not S.area[t]:
                    continue
                move = f | (t << 8)
                if S.cfg.skip_lost_captures and loses_for_certain(S, a, p.board[t]):
                    continue
                if n < MAX_NODE_MOVES - 10 and not repeats(p, move, S.cfg.two_squares):
                    caps[n] = move
                    # victim rank, then piece id, then direction: the plain generator's order
                    order[n] = (victim_key(p.prank[p.board[t]]) << 16) | ((MAX_PIECES - a) << 4) | (3 - d)
                    n += 1
    # Scouts: every range attack (their runs may start outside the area).
    for i in range(S.n_scouts[side]):
        pid = S.scouts[side][i]
        f = p.psq[pid]
        if f < 0:
            continue
        for d in range(4):
            step = p.dirs[d]
            t = f + step
            while p.board[t] == EMPTY:
                t += step
            occ = p.board[t]
            if occ < 0 or p.powner[occ] == side or (t != f + step and not p.range_attacks):
                continue
            if local and not S.area[f] and not S.area[t]:
                continue
            if S.cfg.skip_lost_captures and loses_for_certain(S, pid, occ):
                continue
            move = f | (t << 8)
            if n < MAX_NODE_MOVES - 10 and not repeats(p, move, S.cfg.two_squares):
                caps[n] = move
                order[n] = (victim_key(p.prank[occ]) << 16) | ((MAX_PIECES - pid) << 4) | (3 - d)
                n += 1
    # Sort by the key, highest first (keys are distinct).
    for i in range(1, n):
        key = order[i]
        move = caps[i]
        j = i
        while j > 0 and order[j - 1] < key:
            order[j] = order[j - 1]
            caps[j] = caps[j - 1]
            j -= 1
        order[j] = key
        caps[j] = move
    # The plain moves: the last moved piece's, and with ``flee`` those of every threatened piece to a
    # square where nothing may take it, by piece id (the reference's order). A piece that is no
    # candidate has no move that touches the area.
    if S.cfg.flee:
        for i in range(S.n_cand[side]):
            pid = S.cand[side][i]
            if p.psq[pid] >= 0 and (pid == last or threatened(S, side, pid)):
                quiet = plain_moves(S, pid, pid != last, quiet_buf, quiet)
    elif last >= 0 and p.psq[last] >= 0:
        quiet = plain_moves(S, last, False, quiet_buf, quiet)
    j = 0
    if local and not ours:
        out[j] = NULL_MOVE
        j += 1
    for i in range(n):
        out[j] = caps[i]
        j += 1
    if local and ours:
        out[j] = NULL_MOVE
        j += 1
    for i in range(quiet):
        out[j] = quiet_buf[i]
        j += 1
    return j


cdef inline bint repeats(Pos* p, int move, int limit) noexcept nogil:
    """The two-squares rule inside the search; the quick test first: the side's previous move
    went between the same two squares."""
    cdef int prev
    if limit <= 0 or p.ply < 2:
        return False
    prev = p.hist[p.ply - 2].move
    if prev != move and prev != ((move >> 8) | ((move & 0xFF) << 8)):
        return False
    return breaks_two_squares(p, move, limit)


cdef inline int victim_key(int rank) noexcept nogil:
    """Move ordering: the flag first, then the higher ranks, unknown pieces in the middle."""
    if rank == R_FLAG:
        return 20
    if rank == R_UNKNOWN:
        return 6
    if rank == R_BOMB:
        return 1
    return rank + 1


cdef int gen_node_moves(Search* S, int ply, int* out) noexcept nogil:
    """The moves searched at ``ply`` (2 and deeper): the local moves (from or to a square of the
    area) filtered by Perspecto's variable depth, the two-squares rule applied, and the passive move
    when the search is local. Unknown pieces move one step (7.2); known scouts run."""
    cdef Pos* p = &S.pos
    cdef int side = p.side
    cdef bint local = S.cfg.local_radius >= 0
    cdef bint every = not S.cfg.variable_depth or ply <= S.cfg.full_plies
    cdef bint reach_ok = ply <= S.cfg.en_prise_plies
    cdef bint last_ok = ply <= S.cfg.last_piece_plies
    cdef int last = -1
    cdef int n = 0
    cdef int quiet = 0
    cdef int quiet_buf[MAX_NODE_MOVES]
    cdef int keys[MAX_NODE_MOVES]
    cdef int limit = MAX_NODE_MOVES - 1
    cdef int i, j, pid, sq, r, d, step, t, occ, move, key
    cdef bint scout, quiet_ok, in_area
    cdef bint ours = side == S.kn.me
    if not every and last_ok:
        last = last_moved_piece(p, S.root_ply)
    if not every and not reach_ok:
        return gen_restricted(S, out, last)
    for i in range(S.n_cand[side]):
        pid = S.cand[side][i]
        sq = p.psq[pid]
        if sq < 0:
            continue
        r = p.prank[pid]
        scout = r == R_SCOUT and S.cfg.scout_runs
        # Plain moves count here only at full plies, for the last moved piece, or (ply 5) when
        # they walk into reach; otherwise only this piece's attacks are wanted.
        quiet_ok = every or pid == last or reach_ok
        in_area = not local or S.area[sq]
        for d in range(4):
            step = p.dirs[d]
            t = sq + step
            while True:
                occ = p.board[t]
                if occ == BLOCKED or (occ >= 0 and p.powner[occ] == side):
                    break
                if occ >= 0:
                    if t != sq + step and not p.range_attacks:
                        break
                    if in_area or S.area[t]:
                        move = sq | (t << 8)
                        if n + quiet < limit and not repeats(p, move, S.cfg.two_squares):
                            # Insertion by the victim's rank, highest first, stable.
                            key = victim_key(p.prank[occ])
                            j = n
                            while j > 0 and keys[j - 1] < key:
                                out[j] = out[j - 1]
                                keys[j] = keys[j - 1]
                                j -= 1
                            out[j] = move
                            keys[j] = key
                            n += 1
                    break
                if quiet_ok and (in_area or S.area[t]):
                    if every or pid == last or into_reach(p, side, r, t):
                        move = sq | (t << 8)
                        if n + quiet < limit and not repeats(p, move, S.cfg.two_squares):
                            quiet_buf[quiet] = move
                            quiet += 1
                if not scout:
                    break
                t += step
    # The order matters for the cut-off in the opponent's view (see pemm_node): at the opponent's
    # nodes the passive move first (its exact value is reused for failed attacks), then attacks,
    # strongest victims first; at ours the attacks come first, then the passive move.
    if local:
        if ours:
            out[n] = NULL_MOVE
        else:
            for j in range(n, 0, -1):
                out[j] = out[j - 1]
            out[0] = NULL_MOVE
        n += 1
    for j in range(quiet):
        out[n + j] = quiet_buf[j]
    return n + quiet


# --- one outcome with its events -----------------------------------------------------------------

cdef inline int forward_rows(Knowledge* kn, int side, int frm, int to) noexcept nogil:
    cdef int dr = kn.sq_row[to] - kn.sq_row[frm]
    return dr if side == 0 else -dr


cdef inline int outcome_events(Search* S, int ply, int move, int outcome, bint both_views,
                               double* dm, double* do_) noexcept nogil:
    """The events ``move`` with ``outcome`` adds to the capture list (9.4): the pieces captured,
    valued per perspective (Table 8), Table 5's reveal and advance, weighted by the ply's decay.
    Returns the piece this shows to its opponent for the first time (-1: none)."""
    cdef Pos* p = &S.pos
    cdef Knowledge* kn = &S.kn
    cdef Values* v = &S.val
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int a = p.board[frm]
    cdef int d = p.board[to]
    cdef int me = kn.me
    cdef double sa = 1.0 if p.powner[a] == me else -1.0
    cdef double m = 0.0
    cdef double o = 0.0
    cdef double w = v.decay[ply]
    cdef double x
    cdef int survivor = -1
    if outcome == OUT_PASSIVE or move == NULL_MOVE:
        dm[0] = 0.0
        do_[0] = 0.0
        return -1
    if d < 0:
        if v.advance_bonus != 0.0 and p.prank[a] != R_SCOUT:
            x = sa * v.advance_bonus * forward_rows(kn, p.powner[a], frm, to)
            m += x
            o += x
        if manhattan(kn, frm, to) > 1 and not S.kpub[a]:
            survivor = a        # a run of two squares or more shows a scout
    else:
        if outcome == OUT_WIN or outcome == OUT_BOTH:
            x = sa
            m += x * captured_value(v, kn, p, S.kpub, OWN, d, a, False)
            if both_views:
                o += x * captured_value(v, kn, p, S.kpub, OPP, d, a, False)
        if outcome == OUT_LOSE or outcome == OUT_BOTH:
            x = sa
            m -= x * captured_value(v, kn, p, S.kpub, OWN, a, d, True)
            if both_views:
                o -= x * captured_value(v, kn, p, S.kpub, OPP, a, d, True)
        if outcome == OUT_WIN:
            if not S.kpub[a]:
                survivor = a
            if v.advance_bonus != 0.0 and p.prank[a] != R_SCOUT:
                x = sa * v.advance_bonus * forward_rows(kn, p.powner[a], frm, to)
                m += x
                o += x
        elif outcome == OUT_LOSE:
            if not S.kpub[d]:
                survivor = d
    if survivor >= 0 and (v.reveal_factor != 0.0 or v.reveal_bomb != 0.0):
        x = (1.0 if p.powner[survivor] == me else -1.0) * reveal_value(v, p, survivor)
        m -= x
        o -= x
    dm[0] = m * w
    do_[0] = o * w
    return survivor


cdef inline void play_outcome(Search* S, int ply, int move, int outcome, bint both_views,
                              double* dm, double* do_) noexcept nogil:
    """Play ``move`` with ``outcome`` (see ``outcome_events``); an attack shows both pieces."""
    cdef Pos* p = &S.pos
    cdef int a, d, result
    cdef int survivor = outcome_events(S, ply, move, outcome, both_views, dm, do_)
    if outcome == OUT_PASSIVE or move == NULL_MOVE:
        make_null(p)
        return
    a = p.board[move & 0xFF]
    d = p.board[move >> 8]
    if d >= 0 and a >= 0:
        S.kpub[a] = 1
        S.kpub[d] = 1
        result = ATTACKER_WINS if outcome == OUT_WIN else DEFENDER_WINS if outcome == OUT_LOSE else BOTH_DIE
    else:
        result = NO_COMBAT
    if survivor >= 0:
        S.kpub[survivor] = 1
    toggle_outcome(S, move, outcome)
    make_move_result(p, move, result)


cdef inline void undo_outcome(Search* S, int move, int outcome, unsigned char ka, unsigned char kd) noexcept nogil:
    cdef Pos* p = &S.pos
    if outcome == OUT_PASSIVE or move == NULL_MOVE:
        unmake_null(p)
        return
    unmake_move(p)
    toggle_outcome(S, move, outcome)
    S.kpub[p.board[move & 0xFF]] = ka
    if kd != 255:
        S.kpub[p.board[move >> 8]] = kd


cdef inline uint64_t hash_after(Pos* p, int move, int outcome) noexcept nogil:
    """The position hash after ``move`` with ``outcome``, without playing it."""
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int a, d
    cdef uint64_t h = p.hash
    if outcome == OUT_PASSIVE or move == NULL_MOVE:
        return h
    a = p.board[frm]
    d = p.board[to]
    if d < 0 or outcome == OUT_WIN:
        h ^= ZOBRIST[a][frm] ^ ZOBRIST[a][to]
        if d >= 0:
            h ^= ZOBRIST[d][to]
    elif outcome == OUT_LOSE:
        h ^= ZOBRIST[a][frm]
    else:
        h ^= ZOBRIST[a][frm] ^ ZOBRIST[d][to]
    return h


cdef inline void leaf_value(Search* S, int ply, int move, int outcome, bint both_views,
                            double acc_m, double acc_o, double* res) noexcept nogil:
    """The leaf reached by ``move`` with ``outcome`` at the last ply, valued without playing it
    (the same numbers as playing it and evaluating: events plus the random term)."""
    cdef double dm, do_, r
    S.nodes += 1
    S.ply_nodes[ply + 1] += 1
    outcome_events(S, ply, move, outcome, both_views, &dm, &do_)
    r = random_term(&S.val, hash_after(&S.pos, move, outcome)) if S.val.random_amplitude != 0.0 else 0.0
    res[0] = acc_m + dm + r
    res[1] = acc_o + do_ + r


cdef inline bint is_leaf(Search* S, int ply) noexcept nogil:
    return ply > S.depth or S.pos.flag_lost[0] or S.pos.flag_lost[1]


cdef inline bint single_outcome(const double* pm, const double* po, int* which) noexcept nogil:
    cdef int o
    for o in range(N_OUTCOMES):
        if pm[o] == 1.0 and po[o] == 1.0:
            which[0] = o
            return True
    return False


# --- p-e-minimax ----------------------------------------------------------------------------------

cdef inline bint defers(Search* S, int move) noexcept nogil:
    """An attack whose failure, in one view or both, is the attacker's not attacking (8.3): with
    ``failed_alternative`` it is valued after the node's other moves, its failure standing for the best
    of them (the mover would have made that move instead), not for the passive move."""
    cdef Pos* p = &S.pos
    cdef int a, d
    if not (S.cfg.failed_attack_passive and S.cfg.failed_attack_alternative) or move == NULL_MOVE:
        return False
    d = p.board[move >> 8]
    if d < 0 or not is_public(&S.kn, p, S.kpub, d):
        return False
    a = p.board[move & 0xFF]
    return not known_in(&S.kn, p, S.kpub, OWN, a) or not known_in(&S.kn, p, S.kpub, OPP, a)


cdef inline void chosen_mean(const double* vm, const double* vo, int count, double best_o, double margin,
                             double* res) noexcept nogil:
    """The opponent's choice: its moves within ``margin`` of its best, taken as equally likely (9.4)."""
    cdef double bound = best_o + margin + TIE_EPSILON, sum_m = 0.0, sum_o = 0.0
    cdef int i, n = 0
    for i in range(count):
        if vo[i] <= bound:
            sum_m += vm[i]
            sum_o += vo[i]
            n += 1
    res[0] = sum_m / n
    res[1] = sum_o / n


cdef bint pemm_node(Search* S, int ply, double acc_m, double acc_o, double cut_o, double* res) noexcept nogil:
    """The two values of the node reached at ``ply``. ``cut_o``: the parent (an opponent node)
    ignores this node once its value in the opponent's view exceeds ``cut_o``: an own node stops
    there and returns True (its values are then meaningless)."""
    cdef int moves[MAX_NODE_MOVES]
    cdef int order[MAX_NODE_MOVES]
    cdef double vm[MAX_NODE_MOVES]
    cdef double vo[MAX_NODE_MOVES]
    cdef double child[2]
    cdef double passive[2]
    cdef double best_m = 0.0, best_o = 0.0, r, bound
    cdef int n, i, move, count = 0, n_first = 0, n_later = 0
    cdef bint ours, cut, have_passive = False, done_any = False
    if S.cfg.pemm_plies > 0 and ply > S.cfg.pemm_plies:
        # Below p-e-minimax's plies (``pemm_plies``): one value, our own view, alpha-beta within the
        # subtree. The opponent's view moves by what our view finds below here.
        r = mm_node(S, ply, acc_m, -INFINITY, INFINITY)
        res[0] = r
        res[1] = acc_o + (r - acc_m)
        return False
    S.nodes += 1
    S.ply_nodes[ply] += 1
    if is_leaf(S, ply):
        r = random_term(&S.val, S.pos.hash)
        res[0] = acc_m + r
        res[1] = acc_o + r
        return False
    res[0] = 0.0
    res[1] = 0.0
    if out_of_time(S):
        return False
    n = gen_node_moves(S, ply, moves)
    if n == 0:
        r = random_term(&S.val, S.pos.hash)
        res[0] = acc_m + r
        res[1] = acc_o + r
        return False
    ours = S.pos.side == S.kn.me
    # The attacks that wait for the node's other moves go last, in their generated order.
    for i in range(n):
        if defers(S, moves[i]):
            order[n - 1 - n_later] = moves[i]
            n_later += 1
        else:
            order[n_first] = moves[i]
            n_first += 1
    for i in range(n_later // 2):
        move = order[n_first + i]
        order[n_first + i] = order[n - 1 - i]
        order[n - 1 - i] = move
    for i in range(n):
        move = order[i]
        if i == n_first and done_any:
            # The failed branch of the waiting attacks: the best of the moves made so far.
            if ours:
                passive[0] = best_m
                passive[1] = best_o
            else:
                chosen_mean(vm, vo, count, best_o, S.cfg.average_margin, passive)
            have_passive = True
        if ours or count == 0:
            bound = INFINITY
        else:
            bound = best_o + S.cfg.average_margin + TIE_EPSILON
        cut = pemm_move(S, ply, move, acc_m, acc_o, bound, passive if have_passive else NULL, child)
        if S.aborted:
            return False
        if move == NULL_MOVE and not cut and i < n_first:
            passive[0] = child[0]
            passive[1] = child[1]
            have_passive = True
        if ours:
            # Our node: each perspective takes its own best move.
            if not done_any or child[0] > best_m:
                best_m = child[0]
            if not done_any or child[1] > best_o:
                best_o = child[1]
            done_any = True
            if best_o > cut_o:
                return True
        elif not cut:
            vm[count] = child[0]
            vo[count] = child[1]
            if count == 0 or child[1] < best_o:
                best_o = child[1]
            count += 1
            done_any = True
    if ours:
        res[0] = best_m
        res[1] = best_o
        return False
    # The opponent's node: its own view decides; moves within the margin of its best are taken as
    # equally likely and their mean goes up (9.4).
    chosen_mean(vm, vo, count, best_o, S.cfg.average_margin, res)
    return False


cdef bint pemm_move(Search* S, int ply, int move, double acc_m, double acc_o, double cut_o,
                    const double* passive, double* res) noexcept nogil:
    """The two values of one move: a chance node when an attack's outcome is uncertain in either
    perspective, each value weighted by its own perspective's probabilities. A failed attack that
    counts as the passive move takes the node's passive move's values (``passive``, when known).
    At the root only our own view's value is used, so branches it gives no weight are skipped."""
    cdef Pos* p = &S.pos
    cdef double pm[N_OUTCOMES]
    cdef double po[N_OUTCOMES]
    cdef double child[2]
    cdef double dm, do_
    cdef int a, d, o, only
    cdef unsigned char ka, kd
    cdef bint cut, last = ply >= S.depth
    if move == NULL_MOVE or p.board[move >> 8] < 0:
        if last:
            leaf_value(S, ply, move, OUT_WIN, True, acc_m, acc_o, res)
            return False
        ka = S.kpub[p.board[move & 0xFF]] if move != NULL_MOVE else 0
        play_outcome(S, ply, move, OUT_WIN, True, &dm, &do_)
        cut = pemm_node(S, ply + 1, acc_m + dm, acc_o + do_, cut_o, res)
        undo_outcome(S, move, OUT_WIN, ka, 255)
        return cut
    a = p.board[move & 0xFF]
    d = p.board[move >> 8]
    ka = S.kpub[a]
    kd = S.kpub[d]
    attack_outcomes(&S.kn, p, S.kpub, OWN, a, d, S.root_ply, S.cfg.failed_attack_passive, pm)
    attack_outcomes(&S.kn, p, S.kpub, OPP, a, d, S.root_ply, S.cfg.failed_attack_passive, po)
    if single_outcome(pm, po, &only):
        if only == OUT_PASSIVE and passive != NULL:
            res[0] = passive[0]
            res[1] = passive[1]
            return False
        if last:
            leaf_value(S, ply, move, only, True, acc_m, acc_o, res)
            return False
        play_outcome(S, ply, move, only, True, &dm, &do_)
        cut = pemm_node(S, ply + 1, acc_m + dm, acc_o + do_, cut_o, res)
        undo_outcome(S, move, only, ka, kd)
        return cut
    res[0] = 0.0
    res[1] = 0.0
    for o in range(N_OUTCOMES):
        if pm[o] == 0.0 and (po[o] == 0.0 or ply == 1):
            continue
        if o == OUT_PASSIVE and passive != NULL:
            child[0] = passive[0]
            child[1] = passive[1]
        elif last:
            leaf_value(S, ply, move, o, True, acc_m, acc_o, child)
        else:
            play_outcome(S, ply, move, o, True, &dm, &do_)
            pemm_node(S, ply + 1, acc_m + dm, acc_o + do_, INFINITY, child)
            undo_outcome(S, move, o, ka, kd)
        res[0] += pm[o] * child[0]
        res[1] += po[o] * child[1]
    return False


# --- expectiminimax -------------------------------------------------------------------------------

cdef double em_node(Search* S, int ply, double acc) noexcept nogil:
    cdef int moves[MAX_NODE_MOVES]
    cdef double best = 0.0, val, passive = 0.0
    cdef int n, i
    cdef bint ours, have_passive = False
    S.nodes += 1
    S.ply_nodes[ply] += 1
    if is_leaf(S, ply):
        return acc + random_term(&S.val, S.pos.hash)
    if out_of_time(S):
        return 0.0
    n = gen_node_moves(S, ply, moves)
    if n == 0:
        return acc + random_term(&S.val, S.pos.hash)
    ours = S.pos.side == S.kn.me
    for i in range(n):
        val = em_move(S, ply, moves[i], acc, have_passive, passive)
        if S.aborted:
            return 0.0
        if moves[i] == NULL_MOVE:
            passive = val
            have_passive = True
        if i == 0 or (ours and val > best) or (not ours and val < best):
            best = val
    return best


cdef double em_move(Search* S, int ply, int move, double acc, bint have_passive, double passive) noexcept nogil:
    cdef Pos* p = &S.pos
    cdef double pm[N_OUTCOMES]
    cdef double child[2]
    cdef double dm, do_, total
    cdef int a, d, o
    cdef unsigned char ka, kd
    cdef bint last = ply >= S.depth
    if move == NULL_MOVE or p.board[move >> 8] < 0:
        if last:
            leaf_value(S, ply, move, OUT_WIN, False, acc, acc, child)
            return child[0]
        ka = S.kpub[p.board[move & 0xFF]] if move != NULL_MOVE else 0
        play_outcome(S, ply, move, OUT_WIN, False, &dm, &do_)
        total = em_node(S, ply + 1, acc + dm)
        undo_outcome(S, move, OUT_WIN, ka, 255)
        return total
    a = p.board[move & 0xFF]
    d = p.board[move >> 8]
    ka = S.kpub[a]
    kd = S.kpub[d]
    attack_outcomes(&S.kn, p, S.kpub, OWN, a, d, S.root_ply, S.cfg.failed_attack_passive, pm)
    total = 0.0
    for o in range(N_OUTCOMES):
        if pm[o] == 0.0:
            continue
        if o == OUT_PASSIVE and have_passive:
            total += pm[o] * passive
        elif last:
            leaf_value(S, ply, move, o, False, acc, acc, child)
            total += pm[o] * child[0]
        else:
            play_outcome(S, ply, move, o, False, &dm, &do_)
            total += pm[o] * em_node(S, ply + 1, acc + dm)
            undo_outcome(S, move, o, ka, kd)
    return total


# --- minimax with alpha-beta ----------------------------------------------------------------------

cdef inline int likely_outcome(const double* pm) noexcept nogil:
    """Fig 7-8: an attack is assumed to end the more likely way (a win needs P > 0.5)."""
    if pm[OUT_WIN] > 0.5:
        return OUT_WIN
    if pm[OUT_BOTH] > 0.5:
        return OUT_BOTH
    if pm[OUT_PASSIVE] > pm[OUT_LOSE]:
        return OUT_PASSIVE
    return OUT_LOSE


cdef double mm_node(Search* S, int ply, double acc, double alpha, double beta) noexcept nogil:
    cdef int moves[MAX_NODE_MOVES]
    cdef double best, val
    cdef int n, i
    cdef bint ours
    S.nodes += 1
    S.ply_nodes[ply] += 1
    if is_leaf(S, ply):
        return acc + random_term(&S.val, S.pos.hash)
    if out_of_time(S):
        return 0.0
    n = gen_node_moves(S, ply, moves)
    if n == 0:
        return acc + random_term(&S.val, S.pos.hash)
    ours = S.pos.side == S.kn.me
    best = -INFINITY if ours else INFINITY
    for i in range(n):
        val = mm_move(S, ply, moves[i], acc, alpha, beta)
        if S.aborted:
            return 0.0
        if ours:
            if val > best:
                best = val
            if best > alpha:
                alpha = best
        else:
            if val < best:
                best = val
            if best < beta:
                beta = best
        if alpha >= beta:
            break
    return best


cdef double mm_move(Search* S, int ply, int move, double acc, double alpha, double beta) noexcept nogil:
    cdef Pos* p = &S.pos
    cdef double pm[N_OUTCOMES]
    cdef double child[2]
    cdef double dm, do_, val
    cdef int a, d, o
    cdef unsigned char ka = 0, kd = 255
    if move == NULL_MOVE:
        o = OUT_PASSIVE
    else:
        a = p.board[move & 0xFF]
        d = p.board[move >> 8]
        ka = S.kpub[a]
        if d < 0:
            o = OUT_WIN
        else:
            kd = S.kpub[d]
            attack_outcomes(&S.kn, p, S.kpub, OWN, a, d, S.root_ply, S.cfg.failed_attack_passive, pm)
            o = likely_outcome(pm)
    if ply >= S.depth:
        leaf_value(S, ply, move, o, False, acc, acc, child)
        return child[0]
    play_outcome(S, ply, move, o, False, &dm, &do_)
    val = mm_node(S, ply + 1, acc + dm, alpha, beta)
    undo_outcome(S, move, o, ka, kd)
    return val


# --- the root and iterative deepening -------------------------------------------------------------

cdef double root_value(Search* S, int move) noexcept nogil:
    """A root move's value in our own view (Fig 7, 9, 12 use the first value)."""
    cdef double res[2]
    if S.cfg.algorithm == ALG_PEMM:
        pemm_move(S, 1, move, 0.0, 0.0, INFINITY, NULL, res)
        return res[0]
    if S.cfg.algorithm == ALG_MINIMAX:
        return mm_move(S, 1, move, 0.0, -INFINITY, INFINITY)
    return em_move(S, 1, move, 0.0, False, 0.0)


ctypedef struct Root:
    # The root moves of one run and the running iteration's results (allocated by SearchRunner).
    const int* moves
    int n
    int* order                  # the search order: the last iteration's best first
    const double* bonus         # added to a move's value for that order (the strategic score); may be NULL
    double* work                # the running iteration's values over the passive move
    unsigned char* done         # ... and which of them are finished


cdef void search_root_moves(Search* S, Root* R, int* next_move, double global_passive) noexcept nogil:
    """One worker's share of an iteration: take the next root move in ``R.order`` until none is left,
    and store value(move) - value(passive move), the passive move searched over the same area (the
    comparison search of 7.4; in a global search the passive move is the same for every move)."""
    cdef int i, k
    cdef double v, passive
    while True:
        k = fetch_add(next_move, 1)
        if k >= R.n or load_flag(S.abort_flag):
            return
        i = R.order[k]
        if S.cfg.local_radius >= 0:
            set_area(S, R.moves[i])
        v = root_value(S, R.moves[i])
        if S.aborted:
            return
        if S.cfg.local_radius >= 0:
            passive = root_value(S, NULL_MOVE)
            if S.aborted:
                return
        else:
            passive = global_passive
        R.work[i] = v - passive
        R.done[i] = 1


cdef bint run_iteration(Search** W, int workers, Root* R) noexcept nogil:
    """One full pass over the root moves at depth ``W[0].depth``, shared among the workers (the
    root moves' values are independent of each other and of their order, so neither the split nor
    the order changes a value or a node count)."""
    cdef int t, i
    cdef int next_move = 0
    cdef double global_passive = 0.0
    store_flag(W[0].abort_flag, 0)
    for i in range(R.n):
        R.done[i] = 0
    for t in range(workers):
        W[t].depth = W[0].depth
        W[t].aborted = 0
    if W[0].cfg.local_radius < 0:
        for t in range(workers):
            set_global(W[t])
        global_passive = root_value(W[0], NULL_MOVE)
        if W[0].aborted:
            return False
    if workers <= 1:
        search_root_moves(W[0], R, &next_move, global_passive)
    else:
        for t in prange(workers, num_threads=workers, schedule="static", chunksize=1):
            search_root_moves(W[t], R, &next_move, global_passive)
    for t in range(workers):
        if W[t].aborted:
            return False
    return next_move >= R.n


cdef inline double root_key(Root* R, const double* diffs, int i) noexcept nogil:
    return diffs[i] + (R.bonus[i] if R.bonus != NULL else 0.0)


cdef void order_root(Root* R, const double* diffs) noexcept nogil:
    """``R.order`` by value plus bonus, the highest first, ties by index (a stable insertion sort): the
    next iteration searches the last one's best first, so a cut iteration has searched the moves that
    matter."""
    cdef int i, j
    cdef double key
    for i in range(R.n):
        key = root_key(R, diffs, i)
        j = i
        while j > 0 and root_key(R, diffs, R.order[j - 1]) < key:
            R.order[j] = R.order[j - 1]
            j -= 1
        R.order[j] = i


cdef long long total_nodes(Search** W, int workers) noexcept nogil:
    cdef long long total = 0
    cdef int t
    for t in range(workers):
        total += W[t].nodes
    return total


cdef enum:
    END_DEPTH = 0               # iterate: the last iteration reached max_depth
    END_TIME = 1                # the soft deadline's forecast, the abort deadline or the stop flag
    END_NODES = 2               # the node budget's forecast, or an iteration that passed the budget


cdef int iterate(Search** W, int workers, Root* R, double soft_deadline, double partial_share,
                 long long node_limit, double* diffs, double* times, long long* nodes, int* ended,
                 int* cut_depth) noexcept nogil:
    """Iterative deepening: depth 1, 2, ... while the next iteration is expected to end by the soft
    deadline and, with a node budget (``node_limit`` < LLONG_MAX, the total node count it must not
    pass), within the budget; an iteration cut off by the abort deadline, the stop flag or the budget
    is thrown away. Both forecasts take the next iteration's cost as the last one's times the growth
    from the one before it (at least 1.5). Returns the depth of the last complete iteration (0: none)
    and sets ``ended`` to what ended the deepening.

    ``partial_share`` > 0: before the soft deadline, an iteration also starts when that share of it is
    forecast to end by the abort deadline, and is then cut halfway between the soft and the abort deadline
    if it has not ended; when the clock or the stop flag cuts an iteration, its
    finished moves stay in ``R.work`` / ``R.done`` and ``cut_depth`` is its depth (else 0). Each
    iteration searches the last one's best moves first (``order_root``), so those are the ones done."""
    cdef int depth, i, t, completed = 0
    cdef double t0, t1, last = 0.0, growth = 8.0, node_growth = 8.0
    cdef long long before, done, last_nodes = 0
    cdef bint fits, partial, cut
    cdef double abort_at = 0.0
    ended[0] = END_DEPTH
    cut_depth[0] = 0
    for i in range(R.n):
        diffs[i] = 0.0
    order_root(R, diffs)
    depth = 0
    while depth < W[0].cfg.max_depth:
        # One ply at a time up to the first restricted ply, then ``depth_step`` plies at a time
        # (the deep iterations cost most; each ends exactly at max_depth).
        if depth <= W[0].cfg.full_plies or W[0].cfg.depth_step <= 1:
            depth += 1
        else:
            depth = min(depth + W[0].cfg.depth_step, W[0].cfg.max_depth)
        t0 = monotonic()
        fits = t0 + last * growth <= soft_deadline
        partial = False
        if not fits and partial_share > 0.0 and node_limit == LLONG_MAX:
            partial = t0 < soft_deadline and t0 + last * growth * partial_share <= W[0].abort_deadline
            fits = partial
        if completed > 0 and not fits:
            ended[0] = END_TIME
            break
        if partial and completed > 0:
            # An iteration the forecast does not see finished is cut halfway between the soft and the abort
            # deadline: cuts are then the rule, and the answer keeps that half of the reserve's room too.
            abort_at = W[0].abort_deadline
            for t in range(workers):
                W[t].abort_deadline = soft_deadline + 0.5 * (abort_at - soft_deadline)
        before = total_nodes(W, workers)
        if completed > 0 and node_limit < LLONG_MAX and before + last_nodes * node_growth > node_limit:
            ended[0] = END_NODES
            break
        W[0].depth = depth
        cut = not run_iteration(W, workers, R)
        if partial and completed > 0:
            for t in range(workers):
                W[t].abort_deadline = abort_at
        if cut:
            ended[0] = END_TIME
            for t in range(workers):
                if W[t].aborted == ABORT_NODES:
                    ended[0] = END_NODES
            if ended[0] == END_TIME and partial_share > 0.0 and completed > 0:
                cut_depth[0] = depth
            break
        done = total_nodes(W, workers)
        if done > node_limit:
            # Finished, but its last leaves (counted between the budget's checks) passed the budget.
            ended[0] = END_NODES
            break
        t1 = monotonic()
        for i in range(R.n):
            diffs[i] = R.work[i]
        order_root(R, diffs)
        completed = depth
        times[depth] = t1 - t0
        nodes[depth] = done
        if last > 1e-4:
            growth = (t1 - t0) / last
            if growth < 1.5:
                growth = 1.5
        last = t1 - t0
        if last_nodes > 0:
            node_growth = <double>(done - before) / last_nodes
            if node_growth < 1.5:
                node_growth = 1.5
        last_nodes = done - before
        if depth >= W[0].cfg.max_depth:
            break
    return completed


cdef int fill_search(Search* S, Position pos, int me, object initial, object params, object public,
                     object approached, object moved, object beliefs) except -1:
    """The one place that fills the compiled structs of a search from an ``engine_ext.engine.settings.SearchParams``:
    the root's knowledge (``prepare_root``), the values (``build_values``) and ``SearchConfig``, whose fields
    carry the settings' names."""
    cdef double base[N_RANKS]
    cdef double special[N_RANKS]
    cdef int r, pid
    cdef uint64_t key = <uint64_t>(int(params.random_key) & 0xFFFFFFFFFFFFFFFF)
    prepare_root(&S.pos, &S.kn, pos, me, initial, public, approached, moved,
                 (params.own_fear, params.est_opp_fear, params.est_own_fear), params.psychology,
                 params.line_approach, params.beliefs, beliefs)
    S.kn.top_piece_rank = params.top_piece_rank
    for r in range(N_RANKS):
        base[r] = params.base[r]
        special[r] = params.special[r]
    build_values(&S.val, &S.kn, &S.pos, base, special, params.default_flag_value, params.capture_decay,
                 params.reveal_factor, params.reveal_bomb, params.advance_bonus, params.random_amplitude, key,
                 params.own_flag_value, params.ahead_trade_bias)
    S.cfg.algorithm = ALGORITHMS[params.algorithm]
    S.cfg.max_depth = params.max_depth
    S.cfg.variable_depth = params.variable_depth
    S.cfg.full_plies = params.full_plies
    S.cfg.en_prise_plies = params.en_prise_plies
    S.cfg.last_piece_plies = params.last_piece_plies
    S.cfg.local_radius = params.local_radius
    S.cfg.flag_area = params.flag_area
    S.cfg.flag_sq = -1
    if params.flag_area >= 0:
        for pid in range(S.pos.first_id[me], S.pos.end_id[me]):
            if S.pos.prank[pid] == R_FLAG and S.pos.psq[pid] >= 0:
                S.cfg.flag_sq = S.pos.psq[pid]
    S.cfg.two_squares = params.two_squares
    S.cfg.failed_attack_passive = params.failed_attack_passive
    S.cfg.failed_attack_alternative = params.failed_attack_alternative
    S.cfg.average_margin = params.average_margin
    S.cfg.pemm_plies = params.pemm_plies
    S.cfg.strategic_weight = params.strategic_weight
    S.cfg.depth_step = params.depth_step
    S.cfg.scout_runs = params.scout_runs
    S.cfg.flee = params.flee
    S.cfg.skip_lost_captures = params.skip_lost_captures
    S.cfg.fight_reach = params.fight_reach
    mark_fights(S, me)
    return 0


cdef class SearchRunner:
    """One search: the position copied, knowledge and values built for it, then ``run``.

    ``params`` is an ``engine_ext.engine.settings.SearchParams``; ``public`` / ``approached`` / ``moved``
    override what the history shows (see ``engine_ext.engine.knowledge.prepare_root``); ``beliefs``: with
    ``params.beliefs``, each piece's rank distribution as its opponent sees it (rows by piece id, see
    ``engine_ext.engine.knowledge.belief_rows``; None: the thesis's pool as beliefs)."""

    cdef Search* S
    cdef Search* W[MAX_THREADS]
    cdef int workers
    cdef int stop                   # set by request_stop from any thread
    cdef int abort                  # set by the worker that runs out of time: the others stop too

    def __cinit__(self):
        cdef int t
        for t in range(MAX_THREADS):
            self.W[t] = NULL
        self.workers = 0
        self.S = <Search*>malloc(sizeof(Search))
        if self.S == NULL:
            raise MemoryError()
        self.W[0] = self.S

    def __dealloc__(self):
        cdef int t
        for t in range(1, MAX_THREADS):
            free(self.W[t])
        free(self.S)

    def __init__(self, Position pos, int me, initial, params, *, public=None, approached=None, moved=(),
                 threads=None, beliefs=None):
        cdef Search* S = self.S
        cdef int r, t
        if params.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown search algorithm {params.algorithm!r} (known: {', '.join(ALGORITHMS)})")
        if not 1 <= params.max_depth <= MAX_DEPTH:
            raise ValueError(f"max_depth must be 1..{MAX_DEPTH}, not {params.max_depth}")
        if pos.p.ply + params.max_depth + 4 >= MAX_PLY:
            raise ValueError("the game's history is too long to search from here")
        threads = params.threads if threads is None else threads
        if not 1 <= threads <= MAX_THREADS:
            raise ValueError(f"threads must be 1..{MAX_THREADS}, not {threads}")
        fill_search(S, pos, me, initial, params, public, approached, moved, beliefs)
        memcpy(S.kpub, S.kn.public_, sizeof(S.kpub))
        init_bits(S)
        S.root_ply = S.pos.ply
        S.nodes = 0
        for r in range(MAX_DEPTH + 2):
            S.ply_nodes[r] = 0
        S.next_check = CHECK_EVERY
        S.node_limit = LLONG_MAX
        S.aborted = 0
        S.depth = 0
        self.stop = 0
        self.abort = 0
        S.stop_flag = &self.stop
        S.abort_flag = &self.abort
        # Every worker searches its own copy of everything.
        self.workers = threads
        for t in range(1, threads):
            if self.W[t] == NULL:
                self.W[t] = <Search*>malloc(sizeof(Search))
                if self.W[t] == NULL:
                    raise MemoryError()
            memcpy(self.W[t], S, sizeof(Search))

    def request_stop(self) -> None:
        """Ask a running search to stop (safe from any thread)."""
        store_flag(&self.stop, 1)

    @property
    def nodes(self) -> int:
        return total_nodes(self.W, self.workers)

    @property
    def threads(self) -> int:
        return self.workers

    def ply_nodes(self) -> list:
        """Nodes visited at each ply so far, over all iterations and workers (index = ply)."""
        cdef int t, d
        out = [0] * (MAX_DEPTH + 2)
        for t in range(self.workers):
            for d in range(MAX_DEPTH + 2):
                out[d] += self.W[t].ply_nodes[d]
        return out

    def root_outcomes(self, int move) -> tuple:
        """(our, their) (win, lose, both, passive) probabilities of a root move; None for a plain move."""
        cdef Pos* p = &self.S.pos
        cdef double pm[N_OUTCOMES]
        cdef double po[N_OUTCOMES]
        cdef int a = p.board[move & 0xFF]
        cdef int d = p.board[move >> 8]
        if a < 0 or d < 0 or p.powner[a] == p.powner[d]:
            return None
        attack_outcomes(&self.S.kn, p, self.S.kpub, OWN, a, d, self.S.root_ply, self.S.cfg.failed_attack_passive, pm)
        attack_outcomes(&self.S.kn, p, self.S.kpub, OPP, a, d, self.S.root_ply, self.S.cfg.failed_attack_passive, po)
        return (tuple(pm[i] for i in range(N_OUTCOMES)), tuple(po[i] for i in range(N_OUTCOMES)))

    def belief(self, int pid) -> list:
        """The rank distribution (codes 0..12) the search gives the piece in the view of its opponent;
        all zero when the piece is known there or the search runs without beliefs."""
        if not 0 <= pid < self.S.pos.end_id[1]:
            raise ValueError(f"no piece id {pid}")
        return [self.S.kn.bel_still[pid][r] for r in range(N_RANKS)]

    def is_public(self, int pid) -> bool:
        """Whether the piece's rank is known to its opponent at the root (ours: shown by a fight or a scout's
        run; theirs: seen by us)."""
        if not 0 <= pid < self.S.pos.end_id[1]:
            raise ValueError(f"no piece id {pid}")
        return is_public(&self.S.kn, &self.S.pos, self.S.kpub, pid)

    def piece_value(self, int side, int rank) -> float:
        """What a known piece of ``side`` and ``rank`` is worth in this search (Table 4, notches, specials)."""
        if not (0 <= side <= 1 and 0 <= rank < N_RANKS):
            raise ValueError(f"no side {side} or rank code {rank}")
        return self.S.val.piece[side][rank]

    def opponent_movers(self) -> int:
        """The opponent's movable pieces still on the board (every capture shows a rank, so the
        count is exact even where the pieces are unknown)."""
        cdef int r, n = 0, opp = self.S.kn.me ^ 1
        for r in range(R_SPY, R_MARSHAL + 1):
            n += self.S.kn.alive[opp][r]
        return n

    def top_mover(self, int side) -> int:
        """The strongest movable rank ``side`` still has on the board (0 when none is left; exact for the
        opponent too: every capture shows a rank)."""
        cdef int r
        if side not in (0, 1):
            raise ValueError(f"side {side}")
        for r in range(R_MARSHAL, R_SPY - 1, -1):
            if self.S.kn.alive[side][r] > 0:
                return r
        return 0

    def alive(self, int side, int rank) -> int:
        """How many pieces of ``rank`` ``side`` has left (for the opponent: the known ones and the pool)."""
        if side not in (0, 1) or not 0 <= rank < N_RANKS:
            raise ValueError(f"side {side}, rank {rank}")
        return self.S.kn.alive[side][rank]

    def outranks(self) -> bool:
        """Whether our strongest mover beats every mover they have left (none of theirs can take it; a
        marshal only while their spy is gone): the endgame is won on the board whatever the material."""
        cdef int me = self.S.kn.me
        cdef int ours = self.top_mover(me)
        cdef int theirs = self.top_mover(me ^ 1)
        return ours > theirs and not (ours == R_MARSHAL and self.S.kn.alive[me ^ 1][R_SPY] > 0)

    def ahead(self) -> bool:
        """Whether we lead in material by the evaluation's margin (``Values.ahead``; docs/engine.md,
        *A won endgame*)."""
        return self.S.val.ahead != 0

    def strategic(self, moves, params=None) -> list:
        """The strategic search's scores (9.2) of our root moves, as the strategic module gives them;
        ``params``: an ``engine_ext.engine.settings.StrategicParams`` (the endgame hunt, the miner pull, the
        guards: none in the thesis); None: the thesis's search."""
        cdef Search* S = self.S
        cdef int n = len(moves)
        cdef int* buf
        cdef double* out
        cdef double pf[MAX_PIECES]
        cdef double pb[MAX_PIECES]
        cdef double susp[MAX_PIECES]
        cdef int i, pid, me = S.kn.me
        cdef StrategicConfig cfg
        fill_strategic_config(&cfg, params)
        if n == 0:
            return []
        if S.pos.side != me:
            raise ValueError("the strategic search scores the moves of the side to move")
        for pid in range(MAX_PIECES):
            pf[pid] = 0.0
            pb[pid] = 0.0
            susp[pid] = 0.0
        for pid in range(S.pos.end_id[1]):
            if S.pos.powner[pid] == me:
                # Our own pieces are known to us.
                pf[pid] = 1.0 if S.pos.prank[pid] == R_FLAG else 0.0
                pb[pid] = 1.0 if S.pos.prank[pid] == R_BOMB else 0.0
            else:
                pf[pid] = S.kn.p_flag[pid]
                pb[pid] = S.kn.p_bomb[pid]
                susp[pid] = S.kn.suspicion[pid]
        buf = <int*>malloc(n * sizeof(int))
        out = <double*>malloc(n * sizeof(double))
        try:
            for i in range(n):
                buf[i] = moves[i]
            with nogil:
                strategic_scores(&S.pos, me, pf, pb, susp, buf, n, out, &cfg, &S.val.piece[0][0], S.cfg.two_squares)
            return [out[i] for i in range(n)]
        finally:
            free(buf)
            free(out)

    cdef int _load(self, object moves, Root* R, double** diffs, object bonus=None) except -1:
        """Fill ``R`` with the root ``moves`` (their order as given; ``bonus``, one number a move, orders
        the iterations after the first) and allocate ``diffs``; ``_free`` releases both."""
        cdef int n = len(moves)
        cdef int i
        cdef double* extra = NULL
        if self.S.pos.side != self.S.kn.me:
            raise ValueError("the search runs for the side to move, which must be ours")
        if n == 0:
            raise ValueError("no moves to search")
        if n > MAX_MOVES:
            raise ValueError(f"{n} root moves: at most {MAX_MOVES}")
        if bonus is not None and len(bonus) != n:
            raise ValueError(f"{len(bonus)} bonuses for {n} root moves")
        R.n = n
        R.moves = <int*>malloc(n * sizeof(int))
        R.order = <int*>malloc(n * sizeof(int))
        R.work = <double*>malloc(n * sizeof(double))
        R.done = <unsigned char*>malloc(n * sizeof(unsigned char))
        if bonus is not None:
            extra = <double*>malloc(n * sizeof(double))
        R.bonus = extra
        diffs[0] = <double*>malloc(n * sizeof(double))
        if R.moves == NULL or R.order == NULL or R.work == NULL or R.done == NULL or diffs[0] == NULL \
                or (bonus is not None and extra == NULL):
            self._free(R, diffs[0])
            raise MemoryError()
        for i in range(n):
            (<int*>R.moves)[i] = moves[i]
            R.order[i] = i
            R.work[i] = 0.0
            R.done[i] = 0
            diffs[0][i] = 0.0
            if extra != NULL:
                extra[i] = bonus[i]
        return n

    cdef void _free(self, Root* R, double* diffs):
        free(<int*>R.moves)
        free(R.order)
        free(<double*>R.bonus)
        free(R.work)
        free(R.done)
        free(diffs)
        R.moves = NULL
        R.order = NULL
        R.bonus = NULL
        R.work = NULL
        R.done = NULL

    cdef void _deadline(self, double abort_deadline, long long node_limit):
        cdef int t
        for t in range(self.workers):
            self.W[t].abort_deadline = abort_deadline
            self.W[t].aborted = 0
            self.W[t].node_limit = node_limit
            if self.W[t].next_check > node_limit:
                self.W[t].next_check = node_limit + 1

    def run(self, moves, double soft_deadline, double abort_deadline, nodes=None, *, bonus=None,
            double partial_share=0.0) -> dict:
        """Iterative deepening over the root ``moves`` (the legal moves of the side to move, which
        must be ours) without the GIL. Returns the depth reached, each move's value over the passive
        move at that depth, the nodes and the time of each iteration, and ``limit``: what ended the
        deepening ("depth": max_depth reached, "nodes", "time" or "stop").

        ``nodes``: a node budget for this run; the answer is then the same on any machine (as long as
        the deadlines, kept as a safety net, do not bind): the last complete iteration whose nodes,
        counted from the start of this run over all its iterations, stay within the budget.

        ``bonus``: a number a move added to its value for the order of the iterations (the strategic
        score: the best move overall is searched first). ``partial_share`` > 0 (never under a node
        budget): an iteration may start when that share of it is forecast to end by the abort deadline,
        and ``partial`` holds what an iteration the clock cut had finished: its depth and, by move, the
        value or None (see ``iterate``)."""
        cdef Root R
        cdef double* diffs = NULL
        cdef double times[MAX_DEPTH + 1]
        cdef long long counts[MAX_DEPTH + 1]
        cdef int i, completed, ended, cut_depth = 0
        cdef int workers = self.workers
        cdef long long limit = LLONG_MAX
        cdef long long start
        cdef int n
        if nodes is not None:
            if nodes < 1:
                raise ValueError(f"the node budget must be at least 1, not {nodes}")
            # One worker under a budget: the node count of each iteration is the same with any number
            # of workers, but with several the budget's cut would land wherever the race between them
            # stands, and so would the iteration it throws away. W[0] is the whole search.
            workers = 1
            start = total_nodes(self.W, self.workers)
            limit = start + nodes if nodes < LLONG_MAX - start else LLONG_MAX - 1
            partial_share = 0.0
        R.moves = NULL
        R.order = NULL
        R.bonus = NULL
        R.work = NULL
        R.done = NULL
        n = self._load(moves, &R, &diffs, bonus)
        try:
            for i in range(MAX_DEPTH + 1):
                times[i] = 0.0
                counts[i] = 0
            self._deadline(abort_deadline, limit)
            with nogil:
                completed = iterate(self.W, workers, &R, soft_deadline, partial_share, limit, diffs, times, counts,
                                    &ended, &cut_depth)
            if ended == END_DEPTH:
                limit_name = "depth"
            elif ended == END_NODES:
                limit_name = "nodes"
            else:
                limit_name = "stop" if load_flag(&self.stop) else "time"
            partial = None
            if cut_depth and any(R.done[i] for i in range(n)):
                partial = {"depth": cut_depth,
                           "values": [R.work[i] if R.done[i] else None for i in range(n)]}
            return {
                "depth": completed,
                "values": [diffs[i] for i in range(n)] if completed else [],
                "nodes": total_nodes(self.W, self.workers),
                "aborted": any(self.W[i].aborted for i in range(self.workers)),
                "iterations": [(d, times[d], counts[d]) for d in range(1, completed + 1)],
                "ply_nodes": self.ply_nodes(),
                "threads": workers,
                "limit": limit_name,
                "partial": partial,
            }
        finally:
            self._free(&R, diffs)

    def search_depth(self, moves, int depth) -> list:
        """One iteration at a fixed depth, no deadline (tests): each move's value over passive."""
        cdef Root R
        cdef double* diffs = NULL
        cdef int i
        cdef bint ok
        cdef int n
        if not 1 <= depth <= self.S.cfg.max_depth:
            raise ValueError(f"depth must be 1..{self.S.cfg.max_depth}")
        R.moves = NULL
        R.order = NULL
        R.bonus = NULL
        R.work = NULL
        R.done = NULL
        n = self._load(moves, &R, &diffs)
        try:
            self._deadline(INFINITY, LLONG_MAX)
            self.W[0].depth = depth
            with nogil:
                ok = run_iteration(self.W, self.workers, &R)
            if not ok:
                raise RuntimeError("search stopped")
            return [R.work[i] for i in range(n)]
        finally:
            self._free(&R, diffs)
