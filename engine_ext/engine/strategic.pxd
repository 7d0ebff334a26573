# cython: language_level=3
# The strategic search of the Perspecto thesis (section 9.2 and Appendix 1): attraction rules,
# the scouts' long strikes and the two-own-moves lookahead. docs/strategic.md gives the reading of
# every rule; engine_ext/engine/reference_strategic.py is the same thing written plainly.
#
# The interface: ``p`` must be ``side``'s view (opponent pieces ``side`` has not seen have rank
# R_UNKNOWN); ``p_flag``, ``p_bomb`` and ``flag_suspicion`` are read per piece id as they are at the
# root, for the whole lookahead; ``flag_suspicion`` NULL: counted here by the thesis's rule (7.5). A
# scout's long strike is scored (9.2); every other move onto an opponent piece scores 0 and is left
# out of the lookahead. ``p`` is returned exactly as it came (one ply of history must be free).

from engine_ext.rules.core cimport Pos

# The knobs, each named as the EngineSettings field it comes from (engine_ext/engine/settings.py,
# StrategicParams; none is in the thesis): the endgame hunt's force (0: not hunting), the factor on
# rules 3 and 5 (the miner's pulls towards unknowns), the pull towards a known opponent miner near our
# flag, the force that keeps up to two sergeants to majors on stations next to our flag's bombs, and
# the weight of the two-squares chase model (engine_ext/chase, docs/two-squares.md; 0: off), the force
# of the answer to their known high pieces in our half (docs/engine.md, *The answer*; 0: off), and the
# pull of the flag's blockers, our pieces sent to the way of an opponent piece that races ours to our
# flag (docs/strategic.md, departure 13; 0: off).
ctypedef struct StrategicConfig:
    double hunt_force
    double miner_pull
    double miner_guard
    double home_guard
    double chase_weight
    double answer_force     # the answer to their known high pieces in our half (issue 45; 0: off)
    double flag_defence_force
    double progress_force   # the progress term (issue 45): per step nearer a target; 0: off
    int progress_top        # their strongest movable rank left: pieces above it hunt their moved unknowns

# Fill ``cfg`` from a StrategicParams (None: the thesis's values).
cdef int fill_strategic_config(StrategicConfig* cfg, object params) except -1

# Score every candidate move ``moves[0..n)`` of ``side``: out[i] = score(move) + the best score of a
# next own move after it (its own score again when no next move is better). With ``cfg.chase_weight`` > 0,
# ``piece_values`` (a known piece's value by [side][rank], N_RANKS a side; the search's ``Values.piece``)
# and the game's two-squares limit ``two_squares`` (0: no rule, no chase model), each move also gets the
# change it makes to the chase balance, and pulls towards pieces that escape a chase are dropped.
cdef void strategic_scores(Pos* p, int side, const double* p_flag, const double* p_bomb,
                           const double* flag_suspicion, const int* moves, int n,
                           double* out, const StrategicConfig* cfg, const double* piece_values,
                           int two_squares) noexcept nogil

# The thesis's flag suspicions (7.5) of ``side``'s opponent pieces as ``side`` sees them, written
# to out[pid] for every piece id (0 for ``side``'s own pieces and for captured ones).
cdef void flag_suspicions(Pos* p, int side, double* out) noexcept nogil
