# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The seed's static look-ahead of the two-squares chase, compiled.

Given the squares of an attacker and a weaker defender, the other pieces as obstacles, each chasing
piece's two-squares history and N, it answers capture or escape, the number of attacker moves to
the capture as the oracle (``engine_ext.chase.oracle``) counts them, and the obstacles on the border
of the trap area (risk management's two lists: the defender's side's pieces that might protect it,
the attacker's side's pieces that form the barrier). It follows the seed
(issue 24's two-squares rule capture model, chapter 7's scheme) with no search:

0. The attacker cannot reach the defender: escape. The attacker is next to it and to move: capture.
   The defender stands in an acyclic pocket (a dead end, a branching corridor: what peeling dead
   ends off the squares removes) whose root the attacker reaches no later than the defender:
   capture, exactly, the defender holding out on the farthest square it reaches first (not in the
   seed; cheap and exact, so the fast function takes it).
1. A line (seed ch. 3): the attacker on the defender's line or the neighbouring one, the defender
   ahead of it. (The seed's threats, 3.2, an attacker that must first reach such a line, are left out:
   the seed itself calls the complex ones omissible.)
2. A trap area (ch. 4): the two lines from the attacker's row to the defender's, all open (on one
   line, the other may be shut beside the attacker: it comes down a corridor), extended behind the
   defender with open squares (3.4).
3. Borders (ch. 5): every square next to the area beyond the attacker's row is a wall, a piece, or
   an open square; from an open one a flood fill decides whether it leads to a refuge (a loop back
   into the area: two neighbouring or separate border squares joined, 5.2.3 and 5.2.6; a 3 x 2 area or
   a circuit, 5.2.5, 5.2.6; a 2 x 2 area, 5.2.4, which needs one tempo more) or to a dead end (5.2.1,
   5.2.2), and a race of distances whether the defender gets there before the attacker cuts it off.
4. The count (ch. 6): on one line the defender is lost (6.1 when the two stand next to each other);
   on neighbouring lines it escapes unless, diagonal with the attacker to move, its sideways series
   is longer than the attacker's (6.2).

Where this and the oracle disagree is listed in docs/two-squares.md.
"""

from libc.string cimport memset

from engine_ext.rules.core cimport (
    ATTACKER_WINS, BLOCKED, COMBAT, DEFENDER_WINS, EMPTY, MAX_SQ, R_BOMB, R_FLAG, R_SCOUT, R_UNKNOWN, Pos,
    Position, move_from, move_to,
)

cdef enum:
    PAD = 32

WHY_NAMES = {
    WHY_SEPARATE: "separate", WHY_POCKET: "pocket", WHY_TRAP: "trap", WHY_REFUGE: "refuge",
    WHY_COUNT: "count", WHY_NO_TRAP: "no trap", WHY_TAKE: "take",
}


# Grid helpers -------------------------------------------------------------------------------------

cdef inline int _at(const ChaseGrid* g, int orient, int u, int t) noexcept nogil:
    """The mailbox square of line ``u``, position ``t`` along it (orient 0: lines are columns), or -1."""
    cdef int col = u if orient == 0 else t
    cdef int row = t if orient == 0 else u
    if col < 0 or row < 0 or col >= g.width or row >= g.height:
        return -1
    return (row + 1) * g.stride + col + 1


cdef inline int _u(const ChaseGrid* g, int orient, int sq) noexcept nogil:
    return (sq % g.stride - 1) if orient == 0 else (sq // g.stride - 1)


cdef inline int _t(const ChaseGrid* g, int orient, int sq) noexcept nogil:
    return (sq // g.stride - 1) if orient == 0 else (sq % g.stride - 1)


cdef inline int _abs(int x) noexcept nogil:
    return -x if x < 0 else x


cdef int _flood(const ChaseGrid* g, int start, const unsigned char* skip, short* dist, short* order) noexcept nogil:
    """Breadth-first distances from ``start`` over open squares not marked in ``skip``; ``dist`` must
    hold -1 everywhere. Returns how many squares were reached, listed in ``order``."""
    cdef int head = 0, tail = 1, sq, nb, k
    cdef int steps[4]
    steps[0] = g.stride
    steps[1] = 1
    steps[2] = -g.stride
    steps[3] = -1
    order[0] = <short>start
    dist[start] = 0
    while head < tail:
        sq = order[head]
        head += 1
        for k in range(4):
            nb = sq + steps[k]
            if g.cell[nb] == CELL_OPEN and dist[nb] < 0 and not skip[nb]:
                dist[nb] = dist[sq] + 1
                order[tail] = <short>nb
                tail += 1
    return tail


cdef inline void _add_border(LookResult* out, unsigned char* seen, int sq) noexcept nogil:
    if not seen[sq] and out.n_border < MAX_BORDER:
        seen[sq] = 1
        out.border[out.n_border] = <short>sq
        out.n_border += 1


# Step 0: the acyclic pocket ---------------------------------------------------------------------

cdef bint _pocket(const ChaseGrid* g, int a, int d, bint a_to_move, const short* dist_a,
                  LookResult* out) noexcept nogil:
    """The defender's side of the attacker's square (the squares it reaches without passing the
    attacker) is a tree joined to the attacker by one edge: the attacker walks in and the defender,
    unable to pass or circle, is taken on the farthest square it reaches before the attacker."""
    cdef short dist_d[MAX_SQ]
    cdef short order[MAX_SQ]
    cdef unsigned char skip[MAX_SQ]
    cdef unsigned char seen[MAX_SQ]
    cdef int n, i, k, sq, nb, edges = 0, links = 0, best
    cdef int steps[4]
    steps[0] = g.stride
    steps[1] = 1
    steps[2] = -g.stride
    steps[3] = -1
    for i in range(MAX_SQ):
        dist_d[i] = -1
    memset(skip, 0, MAX_SQ)
    skip[a] = 1
    n = _flood(g, d, skip, dist_d, order)
    for k in range(4):
        if dist_d[a + steps[k]] >= 0:
            links += 1
    if links != 1:
        return False
    for i in range(n):
        sq = order[i]
        if dist_d[sq + 1] >= 0:
            edges += 1
        if dist_d[sq + g.stride] >= 0:
            edges += 1
    if edges != n - 1:
        return False
    best = dist_a[d]
    memset(seen, 0, MAX_SQ)
    out.n_border = 0
    for i in range(n):
        sq = order[i]
        # The defender gets to sq first (in a tree its way there leaves the attacker's path at the
        # same square as the attacker's would, so comparing the whole distances is enough).
        if dist_d[sq] + a_to_move < dist_a[sq] and dist_a[sq] > best:
            best = dist_a[sq]
        for k in range(4):
            nb = sq + steps[k]
            if g.cell[nb] == CELL_PIECE:
                _add_border(out, seen, nb)
    out.captured = 1
    out.moves = best
    out.why = WHY_POCKET
    return True


cdef bint _appendage(const ChaseGrid* g, int a, int d, bint a_to_move, const short* dist_a,
                     LookResult* out) noexcept nogil:
    """The defender stands in a tree hanging off the rest of the squares (what pruning dead ends
    leaves out) and the attacker reaches the tree's root no later than the defender: the attacker
    shuts it in and walks in after it, as in ``_pocket``."""
    cdef short deg[MAX_SQ]
    cdef short order[MAX_SQ]
    cdef short dist_d[MAX_SQ]
    cdef short tree[MAX_SQ]
    cdef unsigned char pruned[MAX_SQ]
    cdef unsigned char skip[MAX_SQ]
    cdef unsigned char seen[MAX_SQ]
    cdef int i, k, sq, nb, head = 0, tail = 0, n_tree, root = -1, best
    cdef int steps[4]
    steps[0] = g.stride
    steps[1] = 1
    steps[2] = -g.stride
    steps[3] = -1
    memset(pruned, 0, MAX_SQ)
    for sq in range(MAX_SQ):
        deg[sq] = 0
        dist_d[sq] = -1
        if dist_a[sq] < 0:
            continue
        for k in range(4):
            if dist_a[sq + steps[k]] >= 0:
                deg[sq] += 1
        if deg[sq] <= 1:
            pruned[sq] = 1
            order[tail] = <short>sq
            tail += 1
    while head < tail:  # peel dead ends until only squares on cycles (and what joins them) remain
        sq = order[head]
        head += 1
        for k in range(4):
            nb = sq + steps[k]
            if dist_a[nb] >= 0 and not pruned[nb]:
                deg[nb] -= 1
                if deg[nb] <= 1:
                    pruned[nb] = 1
                    order[tail] = <short>nb
                    tail += 1
    if not pruned[d]:
        return False
    # The defender's tree and its root (the one unpruned square it hangs from).
    tree[0] = <short>d
    n_tree = 1
    memset(seen, 0, MAX_SQ)
    seen[d] = 1
    head = 0
    while head < n_tree:
        sq = tree[head]
        head += 1
        for k in range(4):
            nb = sq + steps[k]
            if dist_a[nb] < 0 or seen[nb]:
                continue
            if pruned[nb]:
                seen[nb] = 1
                tree[n_tree] = <short>nb
                n_tree += 1
            else:
                root = nb
    if root < 0:
        return False  # no cycle anywhere: ``_pocket`` has decided it
    memset(skip, 0, MAX_SQ)
    skip[a] = 1
    _flood(g, d, skip, dist_d, order)
    if dist_d[root] >= 0 and dist_d[root] + a_to_move < dist_a[root]:
        return False  # the defender gets out first; what it meets there is the trap area's question
    best = dist_a[d]
    memset(seen, 0, MAX_SQ)
    out.n_border = 0
    for i in range(n_tree):
        sq = tree[i]
        if dist_d[sq] >= 0 and dist_d[sq] + a_to_move < dist_a[sq] and dist_a[sq] > best:
            best = dist_a[sq]
        for k in range(4):
            nb = sq + steps[k]
            if g.cell[nb] == CELL_PIECE:
                _add_border(out, seen, nb)
    out.captured = 1
    out.moves = best
    out.why = WHY_POCKET
    return True


# Steps 1 to 4: the two-line trap area -----------------------------------------------------------

cdef int _refuge_need(const ChaseGrid* g, int start, const unsigned char* area, int a) noexcept nogil:
    """What an open border square leads to: -1 a dead end (no refuge), otherwise the tempo the
    defender needs in hand to use it: 0 for a loop back into the area (seed 5.2.3, 5.2.6), a 3 x 2
    area (5.2.5) or a circuit; 1 for a 2 x 2 area (5.2.4: no refuge when the attacker is next to it)."""
    cdef short dist[MAX_SQ + PAD]  # padded: the block tests look two rows past the last square
    cdef short order[MAX_SQ]
    cdef unsigned char skip[MAX_SQ]
    cdef int n, i, k, sq, nb, edges = 0, gates = 0
    cdef bint square2 = False, block3 = False
    cdef int s = g.stride
    cdef int steps[4]
    steps[0] = s
    steps[1] = 1
    steps[2] = -s
    steps[3] = -1
    for i in range(MAX_SQ + PAD):
        dist[i] = -1
    for i in range(MAX_SQ):
        skip[i] = area[i]
    skip[a] = 1
    n = _flood(g, start, skip, dist, order)
    for i in range(n):
        sq = order[i]
        if dist[sq + 1] >= 0:
            edges += 1
        if dist[sq + s] >= 0:
            edges += 1
        for k in range(4):
            nb = sq + steps[k]
            if area[nb]:  # beside the attacker's row too: the defender may go round to them
                gates += 1
        if dist[sq + 1] >= 0 and dist[sq + s] >= 0 and dist[sq + s + 1] >= 0:
            square2 = True
            if (dist[sq + 2] >= 0 and dist[sq + s + 2] >= 0) or (dist[sq + 2 * s] >= 0 and dist[sq + 2 * s + 1] >= 0):
                block3 = True
    if gates >= 2 or block3:
        return 0
    if edges >= n:  # a cycle
        return 1 if square2 else 0
    return -1


cdef void _strip(const ChaseGrid* g, int orient, int u1, int a, int d, bint a_to_move, int a_from,
                 int a_count, int d_from, int d_count, int limit, LookResult* out) noexcept nogil:
    """One candidate trap area: the defender's line and line ``u1`` from the attacker's row on."""
    cdef unsigned char area[MAX_SQ]
    cdef unsigned char seen[MAX_SQ]
    cdef int ua = _u(g, orient, a), ta = _t(g, orient, a)
    cdef int ud = _u(g, orient, d), td = _t(g, orient, d)
    cdef int sgn = 1 if td > ta else -1
    cdef int t, t_end, t_wide, k, j, sq, nb, prev, added, need, da, dd, a_side, d_side, dist, narrow = 0
    cdef bint late_refuge = False
    cdef int lines[2]
    cdef int steps[4]
    cdef bint wide = True
    steps[0] = g.stride
    steps[1] = 1
    steps[2] = -g.stride
    steps[3] = -1
    lines[0] = ud
    lines[1] = u1
    memset(area, 0, MAX_SQ)
    memset(seen, 0, MAX_SQ)
    out.captured = 0
    out.moves = 0
    out.n_border = 0
    out.why = WHY_NO_TRAP
    # Step 1 and 2: both lines open from the attacker's row to the defender's (A.3, A.4). On one
    # line, the other line may be shut for the first rows (``narrow`` of them, the attacker's row
    # first): the attacker comes down a corridor, where the defender cannot slip past it.
    t = ta
    while True:
        for k in range(2):
            sq = _at(g, orient, lines[k], t)
            if sq < 0 or g.cell[sq] != CELL_OPEN:
                if k == 1 and ua == ud and narrow == _abs(t - ta) and t != td:
                    narrow += 1
                    continue
                return
            area[sq] = 1
        if t == td:
            break
        t += sgn
    # Open squares behind the defender lengthen the area (3.4), as long as they join it.
    t_wide = td
    t_end = td
    t = td + sgn
    while True:
        added = 0
        for k in range(2):
            sq = _at(g, orient, lines[k], t)
            prev = _at(g, orient, lines[k], t - sgn)
            if sq >= 0 and g.cell[sq] == CELL_OPEN and area[prev]:
                area[sq] = 1
                added += 1
        for k in range(2):
            sq = _at(g, orient, lines[k], t)
            nb = _at(g, orient, lines[1 - k], t)
            if sq >= 0 and g.cell[sq] == CELL_OPEN and not area[sq] and area[nb]:
                area[sq] = 1
                added += 1
        if added == 0:
            break
        t_end = t
        if wide and added == 2:
            t_wide = t
        else:
            wide = False
        t += sgn
    # Step 3: the border beyond the attacker's row (squares beside the attacker's row are covered).
    t = ta + sgn
    while True:
        for k in range(2):
            sq = _at(g, orient, lines[k], t)
            if sq < 0 or not area[sq]:
                continue
            for j in range(4):
                nb = sq + steps[j]
                if area[nb] or g.cell[nb] == CELL_WALL or nb == a:
                    continue
                if g.cell[nb] == CELL_PIECE:
                    _add_border(out, seen, nb)
                    continue
                if seen[nb]:
                    continue
                seen[nb] = 1
                need = _refuge_need(g, nb, area, a)
                if need < 0:
                    continue  # a dead end (5.2.1, 5.2.2): no refuge
                # The race (5.2.3, 5.2.4): the defender must stand on the border square before the
                # attacker stands next to the area square it leaves from.
                da = _abs(ua - lines[k]) + _abs(ta - t)
                dd = _abs(ud - lines[k]) + _abs(td - t)
                if da - dd - 1 - a_to_move >= need:
                    out.why = WHY_REFUGE
                    return
                if need == 1 and da - dd - 1 - a_to_move == 0:
                    late_refuge = True  # a 2 x 2 area reached a tempo late (5.2.4): a longer chase
        if t == t_end:
            break
        t += sgn
    # Step 4: the count of sideways moves (ch. 6).
    dist = _abs(td - ta) - 1 + _abs(t_wide - td)
    if ua == ud:
        if narrow > 0:
            # From a corridor the attacker enters the area on the defender's line and cannot mirror
            # a sideways step before that: the defender steps to the other line and escapes (4.1.2)
            # unless the attacker's very next move brings it into the area.
            if narrow == 1 and a_to_move:
                out.captured = 1
                out.moves = 1 + dist * (limit + 1)
        elif dist > 0:
            out.captured = 1
            out.moves = (dist + 1) * (limit + 1) if not a_to_move else dist * (limit + 1) + 1
        elif a_to_move:
            out.captured = 1
            out.moves = 1
        else:
            a_side = a_count if a_from == _at(g, orient, u1, ta) else 0
            d_side = d_count if d_from == _at(g, orient, u1, td) else 0
            if a_side <= d_side:
                out.captured = 1
                out.moves = limit - d_side + 1
    elif dist == 0 and a_to_move:
        a_side = a_count if a_from == _at(g, orient, ud, ta) else 0
        d_side = d_count if d_from == _at(g, orient, ua, td) else 0
        if a_side < d_side:
            out.captured = 1
            out.moves = limit - d_side + 2
    if out.captured and out.moves > 1:
        # A delay the seed does not count, taken from the oracle on its 5.2.4 example: the defender
        # runs into a 2 x 2 area it reached a tempo too late, and that costs one more round of N + 1.
        if late_refuge:
            out.moves += limit + 1
    out.why = WHY_TRAP if out.captured else WHY_COUNT


cdef void look_ahead_c(const ChaseGrid* g, int a, int d, bint a_to_move, int a_from, int a_count,
                       int d_from, int d_count, int limit, LookResult* out) noexcept nogil:
    """The verdict on one chase. ``a_from``/``d_from`` are the squares the pieces' last moves came
    from (-1: none) with ``a_count``/``d_count`` the side's moves non-stop between the two squares."""
    cdef short dist_a[MAX_SQ]
    cdef short order[MAX_SQ]
    cdef unsigned char skip[MAX_SQ]
    cdef LookResult cand
    cdef int i, orient, side, u1, ua, ud, ta, td
    cdef bint found = False, tried = False
    out.captured = 0
    out.moves = 0
    out.n_border = 0
    for i in range(MAX_SQ):
        dist_a[i] = -1
    memset(skip, 0, MAX_SQ)
    _flood(g, a, skip, dist_a, order)
    if dist_a[d] < 0:
        out.why = WHY_SEPARATE
        return
    if a_to_move and dist_a[d] == 1 and not (a_from == d and a_count >= limit):
        out.captured = 1  # the attacker stands next to the defender and takes it
        out.moves = 1
        out.why = WHY_TAKE
        return
    if _pocket(g, a, d, a_to_move, dist_a, out):
        return
    if _appendage(g, a, d, a_to_move, dist_a, out):
        return
    out.why = WHY_NO_TRAP
    for orient in range(2):
        ua = _u(g, orient, a)
        ud = _u(g, orient, d)
        ta = _t(g, orient, a)
        td = _t(g, orient, d)
        if ta == td or _abs(ua - ud) > 1:
            continue
        for side in range(2):
            if ua != ud:
                if side == 1:
                    continue
                u1 = ua
            else:
                u1 = ud - 1 if side == 0 else ud + 1
            _strip(g, orient, u1, a, d, a_to_move, a_from, a_count, d_from, d_count, limit, &cand)
            if cand.captured:
                if not found or cand.moves < out.moves:
                    out[0] = cand
                found = True
            elif not found and cand.why != WHY_NO_TRAP and (not tried or cand.why == WHY_REFUGE):
                out[0] = cand
                tried = True


# The scan of a position -------------------------------------------------------------------------

cdef inline bint _chaser(int rank) noexcept nogil:
    """A piece that steps (no scouts: their long moves are outside the model) and whose rank is known."""
    return rank != R_UNKNOWN and rank != R_FLAG and rank != R_BOMB and rank != R_SCOUT


cdef void _history(Pos* p, int side, int sq, int* came_from, int* count) noexcept nogil:
    """The piece on ``sq``'s two-squares history: the side's last move, when it brought that piece
    to ``sq``, and how many of the side's moves in a row went between the same two squares."""
    cdef int idx = p.ply - 1 if p.side != side else p.ply - 2
    cdef int move, reverse, n = 0
    came_from[0] = -1
    count[0] = 0
    if idx < 0:
        return
    move = p.hist[idx].move
    if move_to(move) != sq:
        return
    reverse = move_to(move) | (move_from(move) << 8)
    while idx >= 0 and (p.hist[idx].move == move or p.hist[idx].move == reverse):
        n += 1
        idx -= 2
    came_from[0] = move_from(move)
    count[0] = n


cdef int scan_c(Pos* p, int limit, int max_distance, Candidate* out, int max_out,
                const unsigned char* also=NULL) noexcept nogil:
    """Every candidate pair of the position, both sides: a piece of known rank that beats an enemy
    piece of known rank within ``max_distance`` steps (Manhattan), or at any distance when ``also``
    (may be NULL) marks the pair (attacker id * MAX_PIECES + defender id), the enemy piece losing an
    attack on it; each with the look-ahead's verdict, every other piece an obstacle."""
    cdef ChaseGrid g
    cdef int n = 0, aid, did, a, d, ra, rd, s, a_from, a_count, d_from, d_count, dcol, drow
    g.width = p.width
    g.height = p.height
    g.stride = p.stride
    for s in range(MAX_SQ):
        g.cell[s] = CELL_WALL if p.board[s] == BLOCKED else (CELL_OPEN if p.board[s] == EMPTY else CELL_PIECE)
    for aid in range(p.end_id[1]):
        a = p.psq[aid]
        ra = p.prank[aid]
        if a < 0 or not _chaser(ra):
            continue
        s = p.powner[aid]
        for did in range(p.first_id[1 - s], p.end_id[1 - s]):
            d = p.psq[did]
            rd = p.prank[did]
            if d < 0 or not _chaser(rd):
                continue
            dcol = _abs(a % p.stride - d % p.stride)
            drow = _abs(a // p.stride - d // p.stride)
            if dcol + drow > max_distance and (also == NULL or not also[aid * MAX_PIECES + did]):
                continue
            if COMBAT[ra][rd] != ATTACKER_WINS or COMBAT[rd][ra] != DEFENDER_WINS:
                continue
            if n >= max_out:
                return n
            g.cell[a] = CELL_OPEN
            g.cell[d] = CELL_OPEN
            _history(p, s, a, &a_from, &a_count)
            _history(p, 1 - s, d, &d_from, &d_count)
            out[n].attacker = <short>a
            out[n].defender = <short>d
            out[n].attacker_side = <signed char>s
            look_ahead_c(&g, a, d, p.side == s, a_from, a_count, d_from, d_count, limit, &out[n].result)
            g.cell[a] = CELL_PIECE
            g.cell[d] = CELL_PIECE
            n += 1
    return n


# Python interface -------------------------------------------------------------------------------

from engine_ext.chase.oracle import ChaseBoard, ChaseRules, ChaseState, Role, _check  # noqa: E402
from engine_ext.rules.rulesets import Square  # noqa: E402


cdef class LookAhead:
    """The look-ahead's answer on one chase. ``border``: squares of other pieces on the border of
    the trap area (or of the pocket), the raw material of risk management's two lists."""

    cdef readonly bint captured
    cdef readonly object attacker_moves
    cdef readonly str reason
    cdef readonly tuple border

    def __repr__(self) -> str:
        moves = f" in {self.attacker_moves}" if self.captured else ""
        return f"LookAhead({'capture' if self.captured else 'escape'}{moves}, {self.reason})"


cdef class ChaseCandidate:
    """One candidate pair of a scanned position with its verdict: ``protectors`` are the defender's
    side's pieces on the border whose rank is unknown or beats the attacker (they may protect the
    defender, seed 5.1), ``barrier`` the attacker's side's pieces on the border."""

    cdef readonly object attacker
    cdef readonly object defender
    cdef readonly int attacker_side
    cdef readonly LookAhead verdict
    cdef readonly tuple protectors
    cdef readonly tuple barrier

    def __repr__(self) -> str:
        return f"ChaseCandidate({self.attacker}->{self.defender}, {self.verdict!r})"


cdef LookAhead _answer(const LookResult* r, int stride):
    cdef LookAhead out = LookAhead.__new__(LookAhead)
    cdef int i
    out.captured = r.captured != 0
    out.attacker_moves = r.moves if r.captured else None
    out.reason = WHY_NAMES.get(r.why, "?")
    out.border = tuple(Square(r.border[i] % stride - 1, r.border[i] // stride - 1) for i in range(r.n_border))
    return out


cdef int _sq(object square, int stride):
    return (square.row + 1) * stride + square.col + 1


def look_ahead(board: ChaseBoard, state: ChaseState, rules: ChaseRules | None = None) -> LookAhead:
    """The seed's verdict on the chase the oracle's ``decide`` takes (same input, same checks)."""
    cdef ChaseGrid g
    cdef LookResult r
    cdef int col, row, sq, a, d, af, ac, df, dc, limit
    cdef bint a_to_move
    rules = rules or ChaseRules()
    _check(board, state, rules)
    ruleset = board.ruleset
    g.width = ruleset.width
    g.height = ruleset.height
    g.stride = ruleset.width + 2
    for sq in range(MAX_SQ):
        g.cell[sq] = CELL_WALL
    for row in range(ruleset.height):
        for col in range(ruleset.width):
            square = Square(col, row)
            g.cell[(row + 1) * g.stride + col + 1] = (
                CELL_WALL if ruleset.is_lake(square) else CELL_PIECE if square in board.obstacles else CELL_OPEN)
    a = _sq(state.attacker, g.stride)
    d = _sq(state.defender, g.stride)
    ah, dh = state.attacker_history, state.defender_history
    af = _sq(ah.came_from, g.stride) if ah.came_from is not None else -1
    df = _sq(dh.came_from, g.stride) if dh.came_from is not None else -1
    ac, dc, limit = ah.count, dh.count, rules.limit
    a_to_move = state.to_move is Role.ATTACKER
    with nogil:
        look_ahead_c(&g, a, d, a_to_move, af, ac, df, dc, limit, &r)
    return _answer(&r, g.stride)


def scan(Position position, int limit=5, int max_distance=3, also=()) -> list:
    """Every candidate pair of ``position`` for both sides with its verdict (see ``scan_c``);
    ``also``: (attacker id, defender id) pairs taken whatever their distance."""
    cdef Candidate buf[MAX_CANDIDATES]
    cdef unsigned char marks[MAX_PIECES * MAX_PIECES]
    cdef const unsigned char* also_ptr = NULL
    cdef int n, i, j, pid, owner, rank, stride = position.p.stride, ra
    cdef ChaseCandidate c
    if also:
        memset(marks, 0, MAX_PIECES * MAX_PIECES)
        for pair in also:
            aid, did = pair
            if not (0 <= aid < MAX_PIECES and 0 <= did < MAX_PIECES):
                raise ValueError(f"piece ids {pair!r}: each must be 0..{MAX_PIECES - 1}")
            marks[aid * MAX_PIECES + did] = 1
        also_ptr = marks
    with nogil:
        n = scan_c(&position.p, limit, max_distance, buf, MAX_CANDIDATES, also_ptr)
    out = []
    for i in range(n):
        c = ChaseCandidate.__new__(ChaseCandidate)
        c.attacker = Square(buf[i].attacker % stride - 1, buf[i].attacker // stride - 1)
        c.defender = Square(buf[i].defender % stride - 1, buf[i].defender // stride - 1)
        c.attacker_side = buf[i].attacker_side
        c.verdict = _answer(&buf[i].result, stride)
        ra = position.p.prank[position.p.board[buf[i].attacker]]
        protectors, barrier = [], []
        for j in range(buf[i].result.n_border):
            pid = position.p.board[buf[i].result.border[j]]
            owner = position.p.powner[pid]
            rank = position.p.prank[pid]
            if owner == c.attacker_side:
                barrier.append(c.verdict.border[j])
            elif rank == R_UNKNOWN or COMBAT[rank][ra] == ATTACKER_WINS:
                protectors.append(c.verdict.border[j])
        c.protectors = tuple(protectors)
        c.barrier = tuple(barrier)
        out.append(c)
    return out


def scan_repeated(Position position, int limit, int max_distance, int repeats) -> int:
    """The scan ``repeats`` times in C, for the benchmark; returns the number of candidates."""
    cdef Candidate buf[MAX_CANDIDATES]
    cdef int n = 0, k
    with nogil:
        for k in range(repeats):
            n = scan_c(&position.p, limit, max_distance, buf, MAX_CANDIDATES)
    return n
