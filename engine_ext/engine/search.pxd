# cython: language_level=3
# The searches of the Perspecto thesis: plain minimax with alpha-beta (8.1), expectiminimax (8.2) and
# p-e-minimax (8.3) with Perspecto's refinements (9.4): local search with a radius (7.4), the
# comparison against the passive move at the root, opponent moves within a margin averaged,
# variable depth, a capture list with decay. All per-node work is nogil C on the structs below.

from libc.stdint cimport uint64_t

from engine_ext.rules.core cimport MAX_MOVES, MAX_PIECES, MAX_SQ, Pos
from engine_ext.engine.evaluation cimport Values
from engine_ext.engine.knowledge cimport Knowledge

cdef enum:
    ALG_MINIMAX = 1
    ALG_EXPECTIMINIMAX = 2
    ALG_PEMM = 3
    MAX_DEPTH = 24              # deepest iteration
    MAX_NODE_MOVES = 320        # moves at one node below the root (a local area holds far fewer)
    NULL_MOVE = 0               # the passive move: "inte göra något alls"
    CHECK_EVERY = 2048          # nodes between looks at the clock and the stop flag
    MAX_THREADS = 8             # workers sharing the root moves
    ABORT_TIME = 1              # Search.aborted: the abort deadline, the stop flag or another worker
    ABORT_NODES = 2             # ... the node budget

# Each field is named as the EngineSettings field (engine_ext/engine/settings.py) it comes from; ``fill_config``
# in search.pyx is the one place that fills it.
ctypedef struct SearchConfig:
    int algorithm
    int max_depth               # plies, the root move being ply 1
    int variable_depth          # Perspecto's rules (9.4) below; else every ply is full
    int full_plies              # plies 1..full_plies: every local move
    int en_prise_plies          # up to here also: captures, moves into reach of an opponent piece,
    int last_piece_plies        # up to here: captures and the side's last moved piece; beyond: captures
    int local_radius            # local search radius (7.4); < 0: global search, no passive move
    int flag_area               # squares this close to our flag join every local area; < 0: none
    int flag_sq                 # our flag's square at the root; < 0: none (or no flag area)
    int two_squares             # the two-squares limit applied inside the search; 0: not applied
    int failed_attack_passive   # an unknown attacker's failure on a known piece is the passive move
    int failed_attack_alternative  # ... and stands for the mover's best other move, not for doing nothing
    double average_margin       # opponent moves within this of its best are averaged (9.4); < 0: off
    int pemm_plies              # plies past this: one value, our view, alpha-beta (minimax's); 0: none
    double strategic_weight
    int depth_step              # iterative deepening's step beyond the full plies
    int scout_runs              # known scouts make range moves below the root (else one step)
    int flee                    # restricted plies: a threatened piece may step to a safe square
    int skip_lost_captures      # restricted plies: no attack that loses for certain in the mover's view
    int fight_reach             # a fight this many steps apart joins every local area; < 0: none

ctypedef struct Search:
    Pos pos
    Knowledge kn
    Values val
    SearchConfig cfg
    unsigned char kpub[MAX_PIECES]  # which pieces the opponent knows, along the current line
    unsigned char area[MAX_SQ]      # the local search area of the current root move
    unsigned char near[MAX_SQ]      # the area and its neighbours: pieces that can touch the area
    unsigned char fight[MAX_SQ]     # the squares the root's fights add to every area (``fight_reach``)
    unsigned char fight_near[MAX_SQ]  # ... and to ``near`` (squares one step from those or closer)
    uint64_t occ_all[2][4]          # squares (bits 0..255) holding a piece of each side
    uint64_t occ_mov[2][4]          # ... a piece that may move (unknown ones included)
    int cand[2][MAX_PIECES]         # pieces that may make a local move: those in ``near`` and the
    int n_cand[2]                   # scouts (no other piece gets into ``near`` by a local move)
    int scouts[2][MAX_PIECES]       # the scouts among them
    int n_scouts[2]
    int box[4]                      # the area's bounding box: first and last column, first and last row
    int root_ply
    int depth                       # the current iteration's last ply
    long long nodes
    long long ply_nodes[MAX_DEPTH + 2]  # nodes by ply (the tree's shape, for the benchmark)
    long long next_check
    long long node_limit            # nodes past this abort the iteration (the node budget); else LLONG_MAX
    double abort_deadline           # time.monotonic() seconds
    int* stop_flag                  # set from another thread (atomic access)
    int* abort_flag                 # set by a worker out of time, shared by all workers
    int aborted                     # 0, or why this worker stopped: ABORT_TIME or ABORT_NODES

cdef void make_null(Pos* p) noexcept nogil
cdef void unmake_null(Pos* p) noexcept nogil
cdef int gen_node_moves(Search* S, int ply, int* out) noexcept nogil
cdef void set_area(Search* S, int move) noexcept nogil
