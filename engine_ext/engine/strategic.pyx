# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The strategic search of the Perspecto thesis (9.2, Appendix 1), compiled.

Every movable own piece feels a pull from opponent pieces by the 21 attraction rules; a pull of
force F from a target L steps away counts F / (L * t) (L at least 4, t = opponent pieces left / 10,
at least 1) and is split into x and y parts along the line to the target. A one-square move scores
the piece's summed pull along the move's direction, doubled for some ranks once the piece has
moved. A scout's long strike scores from the piece struck and the distance. Each candidate gets the
best score of a next own move added (its own score when none is better). docs/strategic.md has the
reading of the thesis; engine_ext/engine/reference_strategic.py is the plain version the tests compare.

Not in the thesis, with ``chase_weight`` > 0: the two-squares chase model (engine_ext/chase, issue 24). The
position is scanned for chase pairs; a chase the defender escapes pulls no more (Appendix 1's pull of
the attacker towards that defender is dropped), and every root move gets the change it makes to the
chase balance: the value of each piece the two-squares rule hands to a side, discounted by the attacker
moves it takes, ours counted up, theirs down (docs/two-squares.md, *The engine's use*).

Not in the thesis, with ``answer_force`` > 0: the answer (issue 45, docs/engine.md, *The answer*). Each known
opponent marshal, general, colonel or major in our half gets one responder by path steps; the responder's root
moves are pulled towards it and our pieces it threatens step back towards the responder.

Not in the thesis, with ``flag_defence_force`` > 0: the flag defence by distance (issue 45). Each opponent
piece that may raid our flag races our nearest piece that stops it to the last square of its way; when the
raider would get there no more than one step after our piece, that piece is sent there, and its root moves
score by how they change its way (docs/strategic.md, departure 13).
"""

from libc.math cimport pow, sqrt
from libc.stdlib cimport abs, free, malloc
from libc.string cimport memset

from engine_ext.chase.lookahead cimport (
    MAX_CANDIDATES, WHY_COUNT, WHY_REFUGE, WHY_SEPARATE, Candidate, scan_c,
)
from engine_ext.rules.core cimport (
    ATTACKER_WINS, BLOCKED, COMBAT, EMPTY, MAX_MOVES, MAX_PIECES, MAX_PLY, MAX_SQ, N_RANKS, NO_COMBAT, R_BOMB,
    R_FLAG, R_MARSHAL, R_MINER, R_SCOUT, R_SPY, R_UNKNOWN, Pos, Position, gen_moves, make_move_result, unmake_move,
)

cdef enum:
    R_SERGEANT = 4
    R_LIEUTENANT = 5
    R_CAPTAIN = 6
    R_MAJOR = 7
    R_COLONEL = 8
    R_GENERAL = 9
    MIN_STEPS = 4           # "L ... (lägst 4)"
    GUARD_RADIUS = 5        # the guard: a known miner this many steps from our flag or nearer
    HOME_GUARDS = 2         # the home guards: at most this many stations by our flag's bombs
    CHASE_DISTANCE = 3      # the chase model's pairs: at most this many steps apart (the look-ahead's scan)
    FLIGHT_STEPS = 2        # the answer: our pieces a raider beats this near it step back towards the answer
    AMBUSH_STEPS = 2        # ... and a responder the raider beats when it attacks (the spy) waits this far off
    FLAG_DEFENDERS = 4      # the flag's blockers: at most this many pieces sent at once
    FAR = 30000             # path steps or cost to a square out of reach (no way there)

# The chase model's discount: a capture the two-squares rule enforces in k attacker moves is worth the
# piece's value times this to the power k - 1 (a tenth less for every move the chase takes).
cdef double CHASE_DISCOUNT = 0.9


ctypedef struct Defence:
    # The flag defence by distance (not in the thesis, docs/strategic.md departure 13), worked out once at
    # the root. Rows: every threatening opponent piece, most urgent first.
    int rows
    int attacker[MAX_PIECES]    # its piece id
    int cost[MAX_PIECES]        # its path cost to our flag (a bomb or our piece on the way costs 2)
    int block[MAX_PIECES]       # the blocking square: the last square of its way before our bomb or flag
    int race[MAX_PIECES]        # its path cost to the blocking square
    int nearest[MAX_PIECES]     # our nearest free piece that stops it (-1: none)
    int nearest_steps[MAX_PIECES]   # that piece's steps to the blocking square
    int sent[MAX_PIECES]        # 1: that piece is sent (a blocker)
    # The blockers: piece ids and each one's steps to its blocking square, by square (FAR: no way).
    int n
    int pid[FLAG_DEFENDERS]
    int foe[FLAG_DEFENDERS]     # the threat each is sent against
    short steps[FLAG_DEFENDERS][MAX_SQ]


ctypedef struct State:
    int side
    int opp
    double t                # opponent pieces left / 10, at least 1
    StrategicConfig cfg     # the knobs (strategic.pxd)
    int homes               # how many home guards (each a piece and its station)
    int home_pid[HOME_GUARDS]
    int home_col[HOME_GUARDS]   # the guard's station
    int home_row[HOME_GUARDS]
    int flag_col            # our flag's coordinates (-1: none on the board)
    int flag_row
    int col[MAX_PIECES]     # board coordinates of every live piece
    int row[MAX_PIECES]
    const double* p_flag
    const double* p_bomb
    const double* susp      # flag suspicions
    char open_[MAX_PIECES]  # an unknown opponent piece not walled in by unmoved opponent pieces
    char done[MAX_PIECES]   # fx, fy worked out (lazily: pieces that cannot move never need them)
    double fx[MAX_PIECES]   # summed pull on each own piece, before the moved-piece factor
    double fy[MAX_PIECES]
    const unsigned char* no_pull    # [own pid * MAX_PIECES + target pid]: a chase it escapes; NULL: none
    const Defence* defence  # the flag's blockers, chosen at the root; NULL: none


# --- the rules -----------------------------------------------------------------------------------

cdef inline double _rule_force(int own, int target, double pf, double pb, bint is_open,
                               double hunt, double miner_pull) noexcept nogil:
    """The summed force of the Appendix 1 rules that pull an own piece of rank ``own`` towards one
    opponent piece whose rank, as the viewer knows it, is ``target``. Rule numbers as in the doc;
    ``hunt`` is the endgame hunt's force (not in the thesis, docs/strategic.md), 0 when off;
    ``miner_pull`` scales rules 3 and 5 (1: the thesis)."""
    cdef double f = 0.0
    if target == R_UNKNOWN:
        if own == R_MINER:
            f += 16.0 * pb * miner_pull     # 3: towards likely bombs
            f += -2.0                       # 4: but wary of unknowns in general
            f += 80.0 * pf * miner_pull     # 5: towards likely flags, walled in or not
        elif own == R_SERGEANT or own == R_LIEUTENANT:
            f += 1.0                # 6, 7
        elif own == R_CAPTAIN:
            f += 0.5                # 8
        if own >= R_SERGEANT and own <= R_MARSHAL and is_open:
            f += 80.0 * pf          # 21: every rank above the miner, open targets only
        return f
    # Known targets. "Lower" in the thesis is the European f>4: captain down to spy (1..6 here);
    # bombs and the flag have no rank number and are no one's "lower piece".
    if own == R_SPY:
        if target == R_MARSHAL:
            f += 40.0               # 1
    elif own == R_MINER:
        if target == R_BOMB:
            f += 16.0               # 2
    elif own == R_CAPTAIN:
        if target >= R_MAJOR and target <= R_MARSHAL:
            f += -6.0               # 9
    elif own == R_MAJOR:
        if target >= R_SPY and target <= R_CAPTAIN:
            f += 8.0                # 10
        elif target >= R_COLONEL and target <= R_MARSHAL:
            f += -10.0              # 11
    elif own == R_COLONEL:
        if target >= R_SPY and target <= R_CAPTAIN:
            f += 8.0                # 12
        elif target == R_MAJOR:
            f += 16.0               # 13
        elif target == R_GENERAL or target == R_MARSHAL:
            f += -16.0              # 14
    elif own == R_GENERAL:
        if target >= R_SPY and target <= R_CAPTAIN:
            f += 4.0                # 15
        elif target == R_MAJOR or target == R_COLONEL:
            f += 16.0               # 16
        elif target == R_MARSHAL:
            f += -20.0              # 17
    elif own == R_MARSHAL:
        if target >= R_SPY and target <= R_CAPTAIN:
            f += 4.0                # 18
        elif target == R_MAJOR or target == R_COLONEL:
            f += 16.0               # 19
        elif target == R_GENERAL:
            f += 32.0               # 20
    return f + _hunt(own, target, hunt)


cdef inline double _hunt(int own, int target, double hunt) noexcept nogil:
    """The endgame hunt's pull (0 when off): a known mover this piece beats, few movers being left."""
    if hunt != 0.0 and target >= R_SPY and target <= R_MARSHAL and COMBAT[own][target] == ATTACKER_WINS:
        return hunt
    return 0.0


cdef inline bint _has_rules(int own) noexcept nogil:
    # Scouts have none ("behöver den inga strategiska regler"), nor have bombs, flags, unknowns.
    return own == R_SPY or (own >= R_MINER and own <= R_MARSHAL)


cdef inline double _moved_factor(Pos* p, int pid) noexcept nogil:
    """Appendix 1, last paragraph: x2 for miners and spies, x1 sergeant to major, x2 above major."""
    cdef int r
    if p.pmoves[pid] == 0:
        return 1.0
    r = p.prank[pid]
    if r == R_MINER or r == R_SPY or (r >= R_COLONEL and r <= R_MARSHAL):
        return 2.0
    return 1.0


# --- forces ---------------------------------------------------------------------------------------

cdef inline bint _is_wall(Pos* p, int sq, int opp) noexcept nogil:
    """A side of a target that blocks access: off the board, a lake, or an opponent piece that has
    not moved and might not be movable (unknown, or known bomb or flag)."""
    cdef int occ = p.board[sq]
    cdef int r
    if occ == BLOCKED:
        return True
    if occ < 0 or p.powner[occ] != opp or p.pmoves[occ] != 0:
        return False
    r = p.prank[occ]
    return r == R_UNKNOWN or r == R_BOMB or r == R_FLAG


cdef void _piece_force(Pos* p, State* st, int pid) noexcept nogil:
    """Sum the pulls on own piece ``pid`` from every live opponent piece (in id order, as the
    reference does, so the sums agree to the last bit)."""
    cdef const double* p_flag = st.p_flag
    cdef const double* p_bomb = st.p_bomb
    cdef int own = p.prank[pid]
    cdef double fx = 0.0
    cdef double fy = 0.0
    cdef int k, dx, dy, steps
    cdef double f, c, d
    if _has_rules(own):
        for k in range(p.first_id[st.opp], p.end_id[st.opp]):
            if p.psq[k] < 0:
                continue
            if st.no_pull != NULL and st.no_pull[pid * MAX_PIECES + k]:
                # A pointless chase: the look-ahead says this defender escapes, so Appendix 1 no longer
                # pulls towards it (the hunt, several pieces cornering a last mover, still does).
                f = _hunt(own, p.prank[k], st.cfg.hunt_force)
            else:
                f = _rule_force(own, p.prank[k], p_flag[k], p_bomb[k], st.open_[k], st.cfg.hunt_force,
                                st.cfg.miner_pull)
            if (st.cfg.miner_guard != 0.0 and p.prank[k] == R_MINER and st.flag_col >= 0
                    and COMBAT[own][R_MINER] == ATTACKER_WINS
                    and abs(st.col[k] - st.flag_col) + abs(st.row[k] - st.flag_row) <= GUARD_RADIUS):
                f += st.cfg.miner_guard       # the guard: a known miner near our flag
            if f == 0.0:
                continue
            dx = st.col[k] - st.col[pid]
            dy = st.row[k] - st.row[pid]
            steps = (dx if dx >= 0 else -dx) + (dy if dy >= 0 else -dy)
            if steps < MIN_STEPS:
                steps = MIN_STEPS
            d = sqrt(<double>(dx * dx + dy * dy))
            c = f / (steps * st.t)
            fx += c * dx / d
            fy += c * dy / d
    for k in range(st.homes):
        if pid != st.home_pid[k]:
            continue
        # A home guard away from its station is pulled back to it.
        dx = st.home_col[k] - st.col[pid]
        dy = st.home_row[k] - st.row[pid]
        steps = abs(dx) + abs(dy)
        if steps > 0:
            d = sqrt(<double>(dx * dx + dy * dy))
            c = st.cfg.home_guard / ((steps if steps > MIN_STEPS else MIN_STEPS) * st.t)
            fx += c * dx / d
            fy += c * dy / d
    st.fx[pid] = fx
    st.fy[pid] = fy
    st.done[pid] = 1


cdef void _set_coords(Pos* p, State* st, int pid) noexcept nogil:
    cdef int sq = p.psq[pid]
    st.col[pid] = sq % p.stride - 1
    st.row[pid] = sq // p.stride - 1


cdef inline bint _own_bomb(Pos* p, int sq, int side) noexcept nogil:
    cdef int occ = p.board[sq]
    return occ >= 0 and p.powner[occ] == side and p.prank[occ] == R_BOMB


cdef int _free_guard(Pos* p, State* st, int side, int sq, int* steps_out) noexcept nogil:
    """The piece nearest ``sq`` (the lowest id among equals) not yet a home guard: a sergeant to
    major, or when none is left a colonel to marshal (all beat a miner; the first cost less to lose).
    -1: none."""
    cdef int col = sq % p.stride - 1
    cdef int row = sq // p.stride - 1
    cdef int tier, lo, hi, pid, r, k, steps, nearest, best = -1
    cdef bint taken
    for tier in range(2):
        lo = R_SERGEANT if tier == 0 else R_COLONEL
        hi = R_MAJOR if tier == 0 else R_MARSHAL
        nearest = 1 << 20
        for pid in range(p.first_id[side], p.end_id[side]):
            r = p.prank[pid]
            if p.psq[pid] < 0 or r < lo or r > hi:
                continue
            taken = False
            for k in range(st.homes):
                if st.home_pid[k] == pid:
                    taken = True
            if taken:
                continue
            steps = abs(st.col[pid] - col) + abs(st.row[pid] - row)
            if steps < nearest:
                nearest = steps
                best = pid
        if best >= 0:
            steps_out[0] = nearest
            return best
    return -1


cdef void _choose_home_guards(Pos* p, State* st, int side, int flag_sq) noexcept nogil:
    """The home guards (not in the thesis): the gates are our bombs next to our flag (none: the flag
    itself); a station is a square next to a gate that holds neither our flag nor our bomb. Stations
    are taken greedily: the one next to the most gates not yet covered, among those the one whose
    free guard (``_free_guard``) is nearest, then the lowest square. A guard beats a miner that has
    just taken a gate next to it."""
    cdef int gates[4]
    cdef char covered[4]
    cdef int n_gates = 0
    cdef int d, e, g, k, station, count, steps, pid
    cdef int best_count, best_sq, best_steps, best_pid
    for d in range(4):
        if _own_bomb(p, flag_sq + p.dirs[d], side):
            gates[n_gates] = flag_sq + p.dirs[d]
            n_gates += 1
    if n_gates == 0:
        gates[0] = flag_sq
        n_gates = 1
    for g in range(n_gates):
        covered[g] = 0
    st.homes = 0
    while st.homes < HOME_GUARDS:
        best_count = 0
        best_sq = -1
        best_steps = 0
        best_pid = -1
        for g in range(n_gates):
            for d in range(4):
                station = gates[g] + p.dirs[d]
                if p.board[station] == BLOCKED or station == flag_sq or _own_bomb(p, station, side):
                    continue
                count = 0
                for e in range(n_gates):
                    if not covered[e]:
                        for k in range(4):
                            if gates[e] + p.dirs[k] == station:
                                count += 1
                                break
                if count == 0 or count < best_count:
                    continue
                pid = _free_guard(p, st, side, station, &steps)
                if pid < 0:
                    return      # no piece left to guard with
                if (count > best_count or steps < best_steps
                        or (steps == best_steps and station < best_sq)):
                    best_count = count
                    best_sq = station
                    best_steps = steps
                    best_pid = pid
        if best_pid < 0:
            return
        st.home_pid[st.homes] = best_pid
        st.home_col[st.homes] = best_sq % p.stride - 1
        st.home_row[st.homes] = best_sq // p.stride - 1
        for g in range(n_gates):
            for d in range(4):
                if gates[g] + p.dirs[d] == best_sq:
                    covered[g] = 1
        st.homes += 1


# --- the flag defence by distance (not in the thesis) -------------------------------------------------

cdef inline int _attack_step(Pos* p, int sq, int side) noexcept nogil:
    """What an opponent piece's step onto ``sq`` on its way to ``side``'s flag costs: 1 onto an empty
    square, one of its own side's (they make way) or the flag; 2 onto our bomb (a miner's step and the
    defusing: every threat is counted as a possible miner) or onto our movable piece (the step and the
    fight); FAR onto a lake or off the board."""
    cdef int occ = p.board[sq]
    if occ == BLOCKED:
        return FAR
    if occ < 0 or p.powner[occ] != side or p.prank[occ] == R_FLAG:
        return 1
    return 2


cdef void _attack_costs(Pos* p, int side, int flag_sq, int* cost, int* nxt) noexcept nogil:
    """Every square's path cost to ``side``'s flag for an opponent piece (``_attack_step``), and the next
    square of a cheapest way (-1: none). Dijkstra from the flag backwards; squares are settled by cost, then
    by the lowest square, and a way is only replaced by a cheaper one, so the ways are the reference's."""
    cdef char done[MAX_SQ]
    cdef int squares = p.stride * (p.height + 2)
    cdef int sq, u, v, d, best, c
    for sq in range(squares):
        cost[sq] = FAR
        nxt[sq] = -1
        done[sq] = 0
    cost[flag_sq] = 0
    while True:
        u = -1
        best = FAR
        for sq in range(squares):
            if not done[sq] and cost[sq] < best:
                best = cost[sq]
                u = sq
        if u < 0:
            return
        done[u] = 1
        c = _attack_step(p, u, side)    # a piece next to u steps onto it
        for d in range(4):
            v = u + p.dirs[d]
            if p.board[v] == BLOCKED or done[v]:
                continue
            if best + c < cost[v]:
                cost[v] = best + c
                nxt[v] = u


cdef void _steps_to(Pos* p, int side, int target, short* steps) noexcept nogil:
    """Every square's steps to ``target`` for a piece of ``side``: lakes, our bombs and our flag are in
    the way (they never move); our other pieces make way and the opponent's are taken or leave."""
    cdef int queue[MAX_SQ]
    cdef int squares = p.stride * (p.height + 2)
    cdef int head = 0, tail = 0, sq, u, v, d, occ
    for sq in range(squares):
        steps[sq] = FAR
    steps[target] = 0
    queue[tail] = target
    tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        for d in range(4):
            v = u + p.dirs[d]
            occ = p.board[v]
            if occ == BLOCKED or steps[v] != FAR:
                continue
            if occ >= 0 and p.powner[occ] == side and (p.prank[occ] == R_BOMB or p.prank[occ] == R_FLAG):
                continue
            steps[v] = steps[u] + 1
            queue[tail] = v
            tail += 1


cdef inline bint _stops(int own, int attacker) noexcept nogil:
    """An own piece that can block ``attacker``: one that beats a miner (sergeant and up) against a known
    miner; a captain or higher against an unseen mover, which beats most of what a mover may be (spy,
    scouts, miners, sergeants, lieutenants: 22 of a classic side's 33 movers)."""
    if attacker == R_MINER:
        return own >= R_SPY and own <= R_MARSHAL and COMBAT[own][R_MINER] == ATTACKER_WINS
    return own >= R_CAPTAIN and own <= R_MARSHAL


cdef void _choose_defence(Pos* p, int side, Defence* df) noexcept nogil:
    """The flag's blockers: each opponent piece that threatens our flag (a known miner, or an unseen
    piece that has moved) has a path cost to it (``_attack_costs``) and a blocking square, the last square
    of its cheapest way before our bomb or flag (its own square when it stands there). Most urgent first
    (lowest cost, then lowest id), our nearest piece that stops it and is not sent yet (fewest steps to
    the blocking square, then lowest id) is sent when the threat reaches that square no later than one
    step after it: a race to the square, which is the race to the flag with the rest of the way the same
    for both. At most FLAG_DEFENDERS are sent."""
    cdef int cost[MAX_SQ]
    cdef int nxt[MAX_SQ]
    cdef short steps[MAX_SQ]
    cdef int opp = side ^ 1
    cdef int flag_sq = -1
    cdef int pid, i, j, k, a, sq, v, best, nearest, tmp
    cdef bint taken
    df.rows = 0
    df.n = 0
    for pid in range(p.first_id[side], p.end_id[side]):
        if p.psq[pid] >= 0 and p.prank[pid] == R_FLAG:
            flag_sq = p.psq[pid]
    if flag_sq < 0:
        return
    _attack_costs(p, side, flag_sq, cost, nxt)
    for pid in range(p.first_id[opp], p.end_id[opp]):
        sq = p.psq[pid]
        if sq < 0 or cost[sq] >= FAR:
            continue
        if p.prank[pid] == R_MINER or (p.prank[pid] == R_UNKNOWN and p.pmoves[pid] > 0):
            df.attacker[df.rows] = pid
            df.rows += 1
    # Most urgent first: insertion sort by (cost, id); ids come in ascending order.
    for i in range(1, df.rows):
        tmp = df.attacker[i]
        j = i - 1
        while j >= 0 and cost[p.psq[df.attacker[j]]] > cost[p.psq[tmp]]:
            df.attacker[j + 1] = df.attacker[j]
            j -= 1
        df.attacker[j + 1] = tmp
    for i in range(df.rows):
        a = df.attacker[i]
        sq = p.psq[a]
        v = sq
        while True:
            k = nxt[v]
            if k == flag_sq or _own_bomb(p, k, side):
                break
            v = k
        df.cost[i] = cost[sq]
        df.block[i] = v
        df.race[i] = cost[sq] - cost[v]
        df.sent[i] = 0
        _steps_to(p, side, v, steps)
        best = -1
        nearest = FAR
        for pid in range(p.first_id[side], p.end_id[side]):
            if p.psq[pid] < 0 or not _stops(p.prank[pid], p.prank[a]):
                continue
            taken = False
            for k in range(df.n):
                if df.pid[k] == pid:
                    taken = True
            if not taken and steps[p.psq[pid]] < nearest:
                nearest = steps[p.psq[pid]]
                best = pid
        df.nearest[i] = best
        df.nearest_steps[i] = nearest if best >= 0 else -1
        if best >= 0 and df.n < FLAG_DEFENDERS and df.race[i] <= nearest + 1:
            df.sent[i] = 1
            df.pid[df.n] = best
            df.foe[df.n] = a
            for k in range(p.stride * (p.height + 2)):
                df.steps[df.n][k] = steps[k]
            df.n += 1


cdef void _prepare(Pos* p, State* st, int side) noexcept nogil:
    """What the scores need about one position: t, coordinates, open targets (pulls come later,
    piece by piece, as moves ask for them). The probability pointers must be set."""
    cdef int pid, d, sq, left = 0
    cdef int flag_sq = -1
    cdef bint is_open
    st.side = side
    st.opp = side ^ 1
    st.flag_col = -1
    st.flag_row = -1
    st.homes = 0
    for pid in range(p.end_id[1]):
        st.done[pid] = 0
        if p.psq[pid] >= 0:
            _set_coords(p, st, pid)
            if p.powner[pid] == side and p.prank[pid] == R_FLAG:
                st.flag_col = st.col[pid]
                st.flag_row = st.row[pid]
                flag_sq = p.psq[pid]
    if st.cfg.home_guard != 0.0 and flag_sq >= 0:
        _choose_home_guards(p, st, side, flag_sq)
    for pid in range(p.first_id[st.opp], p.end_id[st.opp]):
        st.open_[pid] = 0
        sq = p.psq[pid]
        if sq < 0:
            continue
        left += 1
        is_open = False
        for d in range(4):
            if not _is_wall(p, sq + p.dirs[d], st.opp):
                is_open = True
                break
        st.open_[pid] = is_open
    st.t = left / 10.0
    if st.t < 1.0:
        st.t = 1.0


# --- moves ----------------------------------------------------------------------------------------

cdef inline int _sign(int x) noexcept nogil:
    return (x > 0) - (x < 0)


cdef inline bint _is_long_strike(Pos* p, int move) noexcept nogil:
    """A scout's range move of two or more squares onto an opponent piece."""
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int dist = to - frm
    if p.board[to] < 0 or p.prank[p.board[frm]] != R_SCOUT:
        return False
    if dist < 0:
        dist = -dist
    return dist >= 2 and (dist < p.stride or dist >= 2 * p.stride)


cdef double _move_score(Pos* p, State* st, int move) noexcept nogil:
    """One move's own score: the pull along its direction, or a long strike's points.
    (Captures other than long strikes never get here.)"""
    cdef int frm = move & 0xFF
    cdef int to = move >> 8
    cdef int a = p.board[frm]
    cdef int target = p.board[to]
    cdef int delta = to - frm
    cdef bint across = -p.stride < delta < p.stride     # along a row: x changes, y does not
    cdef double s
    cdef int k
    if target >= 0:
        # 9.2: one point per flag suspicion of the piece struck, or else 0.1 per step it has
        # taken; and 0.1 per square the scout travels.
        if st.susp[target] > 0.0:
            s = st.susp[target]
        else:
            s = 0.1 * p.pmoves[target]
        return s + 0.1 * (abs(delta) if across else abs(delta) // p.stride)
    if not st.done[a]:
        _piece_force(p, st, a)
    # The component of the pull along the move (the other component is multiplied by 0).
    if across:
        s = (st.fx[a] * _sign(delta)) * _moved_factor(p, a)
    else:
        s = (st.fy[a] * _sign(delta)) * _moved_factor(p, a)
    for k in range(st.homes):
        if (a == st.home_pid[k] and frm % p.stride - 1 == st.home_col[k]
                and frm // p.stride - 1 == st.home_row[k]):
            s -= 2.0 * st.cfg.home_guard / (MIN_STEPS * st.t)    # a home guard leaving its station
    return s


cdef inline double _blocker_strike(State* st, int a, int target) noexcept nogil:
    """A blocker's strike on the threat it is sent against: the block itself, worth the strongest step's
    pull, ``flag_defence_force`` / (4 * t) (every other strike scores 0, as 9.2 has it)."""
    cdef const Defence* df = st.defence
    cdef int k
    for k in range(df.n):
        if df.pid[k] == a and df.foe[k] == target:
            return st.cfg.flag_defence_force / (MIN_STEPS * st.t)
    return 0.0


cdef inline double _blocker_score(State* st, int a, int frm, int to) noexcept nogil:
    """A blocker's step: ``flag_defence_force`` / (L * t) when it shortens its way to the blocking square
    (L its steps there before the move, at least 4), as much below 0 when it lengthens it, 0 sideways.
    Root moves only, after the lookahead: as a next move it would lift every quiet root move by as much,
    and so put them all above the captures (which score 0), the raider's capture among them."""
    cdef const Defence* df = st.defence
    cdef int k, before, after
    cdef double c
    for k in range(df.n):
        if df.pid[k] != a:
            continue
        before = df.steps[k][frm]
        after = df.steps[k][to]
        if before >= FAR or after == before:
            return 0.0
        c = st.cfg.flag_defence_force / ((before if before > MIN_STEPS else MIN_STEPS) * st.t)
        return c if after < before else -c
    return 0.0


cdef double _best_next(Pos* p, State* st, double best) noexcept nogil:
    """The best score of a next own move (captures left out), or ``best`` when none beats it."""
    cdef int buf[MAX_MOVES]
    cdef int m, j, n
    cdef double s
    n = gen_moves(p, buf, False)
    for j in range(n):
        m = buf[j]
        if p.board[m >> 8] >= 0 and not _is_long_strike(p, m):
            continue
        s = _move_score(p, st, m)
        if s > best:
            best = s
    return best


cdef void flag_suspicions(Pos* p, int side, double* out) noexcept nogil:
    cdef int opp = side ^ 1
    cdef int back = 0 if opp == 0 else p.height - 1
    cdef int pid, sq, d, nb
    cdef double s
    for pid in range(p.end_id[1]):
        out[pid] = 0.0
    for pid in range(p.first_id[opp], p.end_id[opp]):
        sq = p.psq[pid]
        if sq < 0 or p.prank[pid] != R_UNKNOWN or p.pmoves[pid] != 0:
            continue
        s = 0.0
        if sq // p.stride - 1 == back:
            s += 1.0
        for d in range(4):
            nb = p.board[sq + p.dirs[d]]
            if nb >= 0 and p.powner[nb] == opp and p.prank[nb] == R_BOMB:
                s += 1.0
                break
        out[pid] = s


cdef int fill_strategic_config(StrategicConfig* cfg, object params) except -1:
    """The one place that fills a ``StrategicConfig``, from an ``engine_ext.engine.settings.StrategicParams``
    (the same field names); None: the thesis's strategic search."""
    if params is None:
        cfg.hunt_force = 0.0
        cfg.miner_pull = 1.0
        cfg.miner_guard = 0.0
        cfg.home_guard = 0.0
        cfg.chase_weight = 0.0
        cfg.answer_force = 0.0
        cfg.flag_defence_force = 0.0
        cfg.progress_force = 0.0
        cfg.progress_top = R_MARSHAL
        return 0
    cfg.hunt_force = params.hunt_force
    cfg.miner_pull = params.miner_pull
    cfg.miner_guard = params.miner_guard
    cfg.home_guard = params.home_guard
    cfg.chase_weight = params.chase_weight
    cfg.answer_force = params.answer_force
    cfg.flag_defence_force = params.flag_defence_force
    cfg.progress_force = params.progress_force
    cfg.progress_top = params.progress_top
    return 0


# --- the progress term (not in the thesis; issue 45) -----------------------------------------------

cdef inline bint _expendable(int r) noexcept nogil:
    # The pieces sent to the unmoved candidates for their flag: cheap, and the miner clears the bombs.
    return r == R_SCOUT or r == R_MINER or r == R_SERGEANT or r == R_LIEUTENANT


cdef inline bint _progress_target(Pos* p, int opp, int own, int k, int top, bint unmoved,
                                   const double* p_flag, double flag_floor) noexcept nogil:
    """Whether opponent piece ``k`` is a target of an own piece of rank ``own``: a known mover it beats, a
    moved unknown one when ``own`` is above every movable rank they have left (``top``), and with
    ``unmoved`` an unknown piece that has never moved whose P(flag) is at least ``flag_floor`` (a likely
    flag candidate)."""
    cdef int r = p.prank[k]
    if p.psq[k] < 0 or p.powner[k] != opp:
        return False
    if r == R_UNKNOWN:
        if p.pmoves[k] == 0:
            return unmoved and p_flag[k] >= flag_floor
        return own > top
    return r >= R_SPY and r <= R_MARSHAL and COMBAT[own][r] == ATTACKER_WINS


cdef bint _progress_map(Pos* p, int side, int own, int top, const double* p_flag, double flag_floor,
                        short* dist) noexcept nogil:
    """Steps to the nearest target of a piece of rank ``own``, for every square (-1: not reached): a
    breadth-first walk from the targets over empty squares; an occupied square gets its steps but is not
    walked through. The targets are the hunt's (``_progress_target``), and the unmoved unknown pieces too
    for an expendable piece or one with nothing else to hunt. False: no target at all."""
    cdef int queue[MAX_SQ]
    cdef int head = 0, tail = 0, opp = side ^ 1
    cdef int k, sq, d, nb
    cdef bint unmoved = _expendable(own)
    cdef int total = p.stride * (p.height + 2)
    for sq in range(total):
        dist[sq] = -1
    if not unmoved:
        unmoved = True
        for k in range(p.first_id[opp], p.end_id[opp]):
            if _progress_target(p, opp, own, k, top, False, p_flag, flag_floor):
                unmoved = False
                break
    for k in range(p.first_id[opp], p.end_id[opp]):
        if _progress_target(p, opp, own, k, top, unmoved, p_flag, flag_floor):
            dist[p.psq[k]] = 0
            queue[tail] = p.psq[k]
            tail += 1
    if tail == 0:
        return False
    while head < tail:
        sq = queue[head]
        head += 1
        if dist[sq] > 0 and p.board[sq] != EMPTY:
            continue    # reached, not walked through
        for d in range(4):
            nb = sq + p.dirs[d]
            if p.board[nb] == BLOCKED or dist[nb] >= 0:
                continue
            dist[nb] = dist[sq] + 1
            queue[tail] = nb
            tail += 1
    return True


cdef void _progress_scores(Pos* p, int side, const int* moves, int n, double* out, double force,
                           int top, const double* p_flag) noexcept nogil:
    """out[i] += ``force`` times the steps ``moves[i]`` takes its piece nearer to its nearest target
    (negative when it steps away; the root position's walk, from the move's first and last square);
    strikes and pieces with no target score nothing here. The unmoved unknown pieces that count are those
    with at least half the highest P(flag) among them (all of them when none has any)."""
    cdef short dist[N_RANKS][MAX_SQ]
    cdef signed char built[N_RANKS]     # 0: not yet, 1: built, -1: no target
    cdef int i, m, frm, to, a, r, d0, d1, k, opp = side ^ 1
    cdef double flag_floor = 0.0
    for k in range(p.first_id[opp], p.end_id[opp]):
        if p.psq[k] >= 0 and p.prank[k] == R_UNKNOWN and p.pmoves[k] == 0 and p_flag[k] > flag_floor:
            flag_floor = p_flag[k]
    flag_floor *= 0.5
    for r in range(N_RANKS):
        built[r] = 0
    for i in range(n):
        m = moves[i]
        frm = m & 0xFF
        to = m >> 8
        if p.board[to] >= 0:
            continue
        a = p.board[frm]
        r = p.prank[a]
        if r < R_SPY or r > R_MARSHAL:
            continue
        if built[r] == 0:
            built[r] = 1 if _progress_map(p, side, r, top, p_flag, flag_floor, dist[r]) else -1
        if built[r] < 0:
            continue
        d0 = dist[r][frm]
        if d0 < 0:
            continue
        d1 = dist[r][to]
        if d1 < 0:
            d1 = d0 + 1
        out[i] += force * (d0 - d1)


# --- the two-squares chase model (not in the thesis) -----------------------------------------------

cdef bint _protected(Pos* p, const Candidate* c) noexcept nogil:
    """Risk management (seed 5.1, 7.3): a piece of the chased side on the trap's border that may
    protect the chased one, its rank unknown to the viewer or one that beats the attacker (the
    look-ahead's ``protectors``). The look-ahead's obstacles stand still; these may not."""
    cdef int j, pid, ra = p.prank[p.board[c.attacker]]
    for j in range(c.result.n_border):
        pid = p.board[c.result.border[j]]
        if p.powner[pid] != c.attacker_side and (p.prank[pid] == R_UNKNOWN
                                                  or COMBAT[p.prank[pid]][ra] == ATTACKER_WINS):
            return True
    return False


cdef double _chase_balance(Pos* p, int side, const double* piece_values, int limit, Candidate* buf,
                           unsigned char* no_pull, unsigned char* track,
                           const unsigned char* tracked) noexcept nogil:
    """The chase balance of ``p`` for ``side``: over every chase pair the look-ahead calls a capture in
    k attacker moves with no protector on the trap's border, the defender's value times
    CHASE_DISCOUNT ** (k - 1), added when ``side`` chases and taken off when ``side``'s piece is chased
    (k = 1, a piece left en prise, counts too: the search sees it as well). ``no_pull`` (may be NULL)
    gets every pair of ``side``'s attacker and a defender the look-ahead sees escape for sure: out of
    reach, to a refuge or by the sideways count of a closed trap (not when it merely found no trap
    area). The pairs are
    those within CHASE_DISTANCE steps and those ``tracked`` marks (may be NULL; [attacker id *
    MAX_PIECES + defender id]); ``track`` (may be NULL) gets every pair taken."""
    cdef int n = scan_c(p, limit, CHASE_DISTANCE, buf, MAX_CANDIDATES, tracked)
    cdef int i, d, why
    cdef double v, balance = 0.0
    for i in range(n):
        if track != NULL:
            track[p.board[buf[i].attacker] * MAX_PIECES + p.board[buf[i].defender]] = 1
        if not buf[i].result.captured:
            why = buf[i].result.why
            if (no_pull != NULL and buf[i].attacker_side == side
                    and (why == WHY_SEPARATE or why == WHY_REFUGE or why == WHY_COUNT)):
                no_pull[p.board[buf[i].attacker] * MAX_PIECES + p.board[buf[i].defender]] = 1
            continue
        if _protected(p, &buf[i]):
            continue
        d = p.board[buf[i].defender]
        v = piece_values[p.powner[d] * N_RANKS + p.prank[d]] * pow(CHASE_DISCOUNT, buf[i].result.moves - 1)
        if buf[i].attacker_side == side:
            balance += v
        else:
            balance -= v
    return balance


cdef void _chase_scores(Pos* p, int side, const double* piece_values, int limit, double weight,
                        const int* moves, int n, double* out, Candidate* buf,
                        const unsigned char* tracked) noexcept nogil:
    """out[i] += ``weight`` times the change ``moves[i]`` makes to ``side``'s chase balance (the
    opponent then to move), over the root's pairs (``tracked``: a defender stepping out of the scan's
    distance has not escaped) and the pairs the move brings within that distance;
    moves that strike score nothing here, as in the rest of the strategic search."""
    cdef double root = _chase_balance(p, side, piece_values, limit, buf, NULL, NULL, tracked)
    cdef int i, m
    for i in range(n):
        m = moves[i]
        if p.board[m >> 8] >= 0:
            continue
        make_move_result(p, m, NO_COMBAT)
        out[i] += weight * (_chase_balance(p, side, piece_values, limit, buf, NULL, NULL, tracked) - root)
        unmake_move(p)


# --- the answer to their known high pieces (not in the thesis; issue 45) --------------------------------

cdef void _path_steps(Pos* p, int side, int start, int* steps, int* queue) noexcept nogil:
    """steps[sq]: path steps from ``start`` (FAR: out of reach). Lakes and the pieces of ``side``'s opponent
    block (the piece on ``start`` excepted); ``side``'s own pieces do not: they can step aside, and the
    raider takes what it beats."""
    cdef int sq, d, nb, occ, head = 0, tail = 0
    cdef int squares = p.stride * (p.height + 2)
    for sq in range(squares):
        steps[sq] = FAR
    steps[start] = 0
    queue[tail] = start
    tail += 1
    while head < tail:
        sq = queue[head]
        head += 1
        for d in range(4):
            nb = sq + p.dirs[d]
            if steps[nb] != FAR:
                continue
            occ = p.board[nb]
            if occ == BLOCKED or (occ >= 0 and p.powner[occ] != side):
                continue
            steps[nb] = steps[sq] + 1
            queue[tail] = nb
            tail += 1


cdef inline bint _in_our_half(Pos* p, int side, int sq) noexcept nogil:
    cdef int row = sq // p.stride - 1
    cdef int half = p.height // 2
    return row < half if side == 0 else row >= p.height - half


cdef void _answer_scores(Pos* p, int side, double force, const int* moves, int n, double* out) noexcept nogil:
    """out[i] += each root move's answer term (docs/engine.md, *The answer*). Their known marshal, general,
    colonel and major in our half, the highest first (the lowest id among equals), each get one responder:
    the own piece not yet one that beats it attacking (the spy their marshal) or, when we are not behind in
    pieces on the board, has its rank (a trade), the nearest by path; among equals a win before a trade,
    then the lowest rank, then the lowest id. The responder's move scores ``force`` when it shortens its path
    to the raider, ``-force`` when it lengthens it (a responder the raider beats when it attacks, the spy,
    aims at AMBUSH_STEPS from it instead); a move of an own piece the raider beats, at most
    FLIGHT_STEPS path steps from it, scores ``force`` when it lengthens its path to the raider and shortens
    its path to the responder. Strikes score nothing, as in the rest of the strategic search."""
    cdef int to_raider[MAX_SQ]
    cdef int to_responder[MAX_SQ]
    cdef int queue[MAX_SQ]
    cdef char taken[MAX_PIECES]
    cdef int opp = side ^ 1
    cdef int ours = 0, theirs = 0
    cdef int pid, rank, raider, rsq, best, best_far, best_trade, far, trade, i, m, frm, to, a, before, after
    cdef bint level
    for pid in range(p.end_id[1]):
        taken[pid] = 0
        if p.psq[pid] >= 0:
            if p.powner[pid] == side:
                ours += 1
            else:
                theirs += 1
    level = ours >= theirs
    for rank in range(R_MARSHAL, R_MAJOR - 1, -1):
        for raider in range(p.first_id[opp], p.end_id[opp]):
            rsq = p.psq[raider]
            if rsq < 0 or p.prank[raider] != rank or not _in_our_half(p, side, rsq):
                continue
            _path_steps(p, side, rsq, to_raider, queue)
            best = -1
            best_far = FAR
            best_trade = 0
            for pid in range(p.first_id[side], p.end_id[side]):
                if p.psq[pid] < 0 or taken[pid] or p.prank[pid] == R_BOMB or p.prank[pid] == R_FLAG:
                    continue
                if COMBAT[p.prank[pid]][rank] == ATTACKER_WINS:
                    trade = 0
                elif p.prank[pid] == rank and level:
                    trade = 1
                else:
                    continue
                far = to_raider[p.psq[pid]]
                if far == FAR:
                    continue
                if (best < 0 or far < best_far or (far == best_far and (
                        trade < best_trade or (trade == best_trade and p.prank[pid] < p.prank[best])))):
                    best = pid
                    best_far = far
                    best_trade = trade
            if best < 0:
                continue
            taken[best] = 1
            _path_steps(p, side, p.psq[best], to_responder, queue)
            for i in range(n):
                m = moves[i]
                frm = m & 0xFF
                to = m >> 8
                a = p.board[frm]
                if p.board[to] >= 0:
                    continue
                before = to_raider[frm]
                after = to_raider[to]
                if a == best:
                    if COMBAT[rank][p.prank[best]] == ATTACKER_WINS:
                        # A responder the raider beats when it attacks (the spy against their marshal) stands
                        # off at AMBUSH_STEPS: next to the raider it would be struck first.
                        before = abs(before - AMBUSH_STEPS) if before < FAR else FAR
                        after = abs(after - AMBUSH_STEPS) if after < FAR else FAR
                    if after < before:
                        out[i] += force
                    elif after > before:
                        out[i] -= force
                elif (COMBAT[rank][p.prank[a]] == ATTACKER_WINS and before <= FLIGHT_STEPS and after > before
                      and to_responder[to] < to_responder[frm]):
                    out[i] += force


cdef void strategic_scores(Pos* p, int side, const double* p_flag, const double* p_bomb,
                           const double* flag_suspicion, const int* moves, int n,
                           double* out, const StrategicConfig* cfg, const double* piece_values,
                           int two_squares) noexcept nogil:
    _scores(p, side, p_flag, p_bomb, flag_suspicion, moves, n, out, True, cfg, piece_values, two_squares)


cdef void _scores(Pos* p, int side, const double* p_flag, const double* p_bomb,
                  const double* flag_suspicion, const int* moves, int n, double* out,
                  bint lookahead, const StrategicConfig* cfg, const double* piece_values,
                  int two_squares) noexcept nogil:
    """``strategic_scores``; without ``lookahead`` each move's own score alone (the thesis's
    "Endast ett drag" variant, 10.3.2; the tests use it to check single rules)."""
    cdef State st
    cdef State st2          # after a long strike the opponent has a piece fewer: start afresh
    cdef double susp_buf[MAX_PIECES]
    cdef const double* susp = flag_suspicion
    cdef int saved_side = p.side
    cdef int i, m, a, target
    cdef double s, best, keep_x, keep_y, blocker
    cdef char keep_done
    cdef bint room = p.ply < MAX_PLY - 1    # with no history left, count the move's score twice
    cdef bint chasing = (cfg.chase_weight > 0.0 and piece_values != NULL and two_squares > 0 and room)
    cdef unsigned char* no_pull = NULL
    cdef unsigned char* tracked = NULL
    cdef Candidate* chases = NULL
    cdef Defence* defence = NULL
    st.no_pull = NULL
    st2.no_pull = NULL
    st.defence = NULL
    st2.defence = NULL
    if cfg.flag_defence_force != 0.0:
        # Chosen once and scored at the root only (``_blocker_score``).
        defence = <Defence*>malloc(sizeof(Defence))
        if defence != NULL:
            _choose_defence(p, side, defence)
            st.defence = defence
    if chasing:
        no_pull = <unsigned char*>malloc(2 * MAX_PIECES * MAX_PIECES)
        chases = <Candidate*>malloc(MAX_CANDIDATES * sizeof(Candidate))
        if no_pull == NULL or chases == NULL:
            free(no_pull)
            free(chases)
            no_pull = NULL
            chases = NULL
            chasing = False
        else:
            memset(no_pull, 0, 2 * MAX_PIECES * MAX_PIECES)
            tracked = no_pull + MAX_PIECES * MAX_PIECES
            p.side = side
            _chase_balance(p, side, piece_values, two_squares, chases, no_pull, tracked, NULL)
            p.side = saved_side
            st.no_pull = no_pull
            st2.no_pull = no_pull
    if susp == NULL:
        flag_suspicions(p, side, susp_buf)
        susp = susp_buf
    st.p_flag = p_flag
    st.p_bomb = p_bomb
    st.susp = susp
    st2.p_flag = p_flag
    st2.p_bomb = p_bomb
    st2.susp = susp
    st.cfg = cfg[0]
    st2.cfg = cfg[0]
    p.side = side
    _prepare(p, &st, side)
    for i in range(n):
        m = moves[i]
        a = p.board[m & 0xFF]
        target = p.board[m >> 8]
        if target >= 0 and not _is_long_strike(p, m):
            out[i] = 0.0    # 9.2: moves that strike are sorted out of the strategic search
            if defence != NULL:
                out[i] = _blocker_strike(&st, a, target)
            continue
        s = _move_score(p, &st, m)
        best = s
        if defence != NULL and target < 0:
            blocker = _blocker_score(&st, a, m & 0xFF, m >> 8)
        else:
            blocker = 0.0
        if not lookahead:
            out[i] = s + blocker
            continue
        if room:
            if target >= 0:
                # Figure 9 plays the move as a win ("move.make(win)").
                make_move_result(p, m, ATTACKER_WINS)
                p.side = side
                _prepare(p, &st2, side)
                best = _best_next(p, &st2, best)
            else:
                make_move_result(p, m, NO_COMBAT)
                p.side = side
                # Only the moved piece's pull changes: walls are opponent pieces, t is unchanged.
                keep_x = st.fx[a]
                keep_y = st.fy[a]
                keep_done = st.done[a]
                _set_coords(p, &st, a)
                st.done[a] = 0
                best = _best_next(p, &st, best)
                st.fx[a] = keep_x
                st.fy[a] = keep_y
                st.done[a] = keep_done
            p.side = side ^ 1   # unmake flips it back to side
            unmake_move(p)
            if target < 0:
                _set_coords(p, &st, a)
        out[i] = s + best + blocker
    if chasing:
        p.side = side
        _chase_scores(p, side, piece_values, two_squares, cfg.chase_weight, moves, n, out, chases, tracked)
        free(no_pull)
        free(chases)
    free(defence)
    if cfg.answer_force != 0.0:
        _answer_scores(p, side, cfg.answer_force, moves, n, out)
    if cfg.progress_force > 0.0 and lookahead:
        _progress_scores(p, side, moves, n, out, cfg.progress_force, cfg.progress_top, p_flag)
    p.side = saved_side


# --- Python access (tests, benchmarks) -------------------------------------------------------------

cdef void _fill(double* dst, object values, int count, str name) except *:
    values = list(values)
    if len(values) < count:
        raise ValueError(f"{name}: {len(values)} values for {count} piece ids")
    cdef int i
    for i in range(count):
        dst[i] = float(values[i])


cdef int _load_moves(Position pos, int side, object moves, int* buf) except -1:
    """Copy ``moves`` into ``buf`` after checking each starts on a piece of ``side`` and ends on an
    empty square or an opponent piece (the C function trusts its caller on that)."""
    cdef int n, i, frm, to, occ
    cdef int squares = pos.p.stride * (pos.p.height + 2)
    if side not in (0, 1):
        raise ValueError(f"side {side}")
    moves = list(moves)
    if len(moves) > MAX_MOVES:
        raise ValueError(f"{len(moves)} moves: at most {MAX_MOVES}")
    n = len(moves)
    for i in range(n):
        buf[i] = moves[i]
        frm = buf[i] & 0xFF
        to = buf[i] >> 8
        if not (0 <= frm < squares and 0 <= to < squares):
            raise ValueError(f"move {buf[i]:#x}: off the board")
        occ = pos.p.board[frm]
        if occ < 0 or pos.p.powner[occ] != side:
            raise ValueError(f"move {buf[i]:#x}: no piece of side {side} to move")
        occ = pos.p.board[to]
        if occ == BLOCKED or (occ >= 0 and pos.p.powner[occ] == side):
            raise ValueError(f"move {buf[i]:#x}: target square not free")
    return n


def strategic_scores_py(Position pos, int side, p_flag, p_bomb, moves, flag_suspicion=None,
                        bint lookahead=True, params=None, piece_values=None, int two_squares=0):
    """``strategic_scores`` on a ``Position``; the probability lists are indexed by piece id.
    ``flag_suspicion`` None: counted by the thesis's rule (``flag_suspicions_py``).
    ``lookahead`` False: each move's own score only. ``params``: an ``engine_ext.engine.settings.StrategicParams``
    (the endgame hunt, the miner pull, the guards; docs/strategic.md);
    None: the thesis's strategic search. ``piece_values`` (two rows of N_RANKS values, a known piece's
    value by side and rank) and ``two_squares`` (the game's limit) feed the chase model
    (``params.chase_weight``)."""
    cdef double pf[MAX_PIECES]
    cdef double values[2 * N_RANKS]
    cdef const double* values_ptr = NULL
    cdef double pb[MAX_PIECES]
    cdef double fs[MAX_PIECES]
    cdef int buf[MAX_MOVES]
    cdef double out[MAX_MOVES]
    cdef StrategicConfig cfg
    cdef int count = pos.p.end_id[1]
    cdef int n = _load_moves(pos, side, moves, buf)
    cdef int i
    cdef const double* fs_ptr = NULL
    fill_strategic_config(&cfg, params)
    _fill(pf, p_flag, count, "p_flag")
    _fill(pb, p_bomb, count, "p_bomb")
    if flag_suspicion is not None:
        _fill(fs, flag_suspicion, count, "flag_suspicion")
        fs_ptr = fs
    if piece_values is not None:
        _fill(values, [v for row in piece_values for v in row], 2 * N_RANKS, "piece_values")
        values_ptr = values
    with nogil:
        _scores(&pos.p, side, pf, pb, fs_ptr, buf, n, out, lookahead, &cfg, values_ptr, two_squares)
    return [out[i] for i in range(n)]


def flag_suspicions_py(Position pos, int side):
    """The thesis's flag suspicions of ``side``'s opponent pieces, by piece id."""
    cdef double out[MAX_PIECES]
    if side not in (0, 1):
        raise ValueError(f"side {side}")
    flag_suspicions(&pos.p, side, out)
    return [out[i] for i in range(pos.p.end_id[1])]


def flag_defence_py(Position pos, int side):
    """The flag defence by distance as the strategic search chooses it at the root (not in the thesis;
    docs/strategic.md, departure 13): one row per opponent piece that threatens ``side``'s flag, most
    urgent first, ``(attacker id, path cost to the flag, blocking square, our nearest free piece that
    stops it or -1, its steps to the blocking square or -1, whether it is sent)``."""
    cdef Defence* df
    cdef int i
    if side not in (0, 1):
        raise ValueError(f"side {side}")
    df = <Defence*>malloc(sizeof(Defence))
    if df == NULL:
        raise MemoryError()
    try:
        _choose_defence(&pos.p, side, df)
        return [(df.attacker[i], df.cost[i], df.block[i], df.nearest[i], df.nearest_steps[i], bool(df.sent[i]))
                for i in range(df.rows)]
    finally:
        free(df)
