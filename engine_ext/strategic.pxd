# cython: language_level=3
# The strategic search of the Perspecto thesis (section 9.2 and Appendix 1): attraction rules,
# the scouts' long strikes and the two-own-moves lookahead. docs/strategic.md gives the reading of
# every rule; engine_ext/reference_strategic.py is the same thing written plainly.
#
# CALLER, NOTE (differences from the interface first agreed):
#  * One parameter was added, ``flag_suspicion`` after ``p_bomb``: the thesis scores a scout's
#    long strike "one point per flag suspicion" of the piece struck (9.2, counted as in 7.5), a raw
#    count and not a probability. Pass NULL to have it counted here by the thesis's rule
#    (``flag_suspicions`` below: an unknown opponent piece that has never moved gets one suspicion
#    on the opponent's back row and one more when a known bomb stands next to it).
#  * A scout's long strike (a range move of two or more squares that ends on an opponent piece) is
#    NOT left out: the thesis scores it ("spejarnas långa slag"). Every other move onto an opponent
#    piece scores 0 and is left out of the lookahead, as agreed.
#  * ``p`` must be ``side``'s view: opponent pieces ``side`` has not seen have rank R_UNKNOWN
#    (the rules for "unknown" targets look at that); known ranks are used as they stand.
#  * ``p_flag``, ``p_bomb`` and ``flag_suspicion`` are read per piece id and are taken as they are
#    at the root for the whole lookahead (the thesis recomputes such values only after real moves).
#  * ``side`` need not equal ``p.side``; ``p`` is returned exactly as it came (the lookahead makes
#    and unmakes one move per candidate, so one ply of history must be free).

from engine_ext.core cimport Pos

# Score every candidate move ``moves[0..n)`` of ``side``: out[i] = score(move) + the best score of a
# next own move after it (its own score again when no next move is better). ``hunt`` > 0 (not in the
# thesis): every own piece is also pulled with that force towards each known opponent mover it beats.
# ``captures_keep`` (not in the thesis): the captures sorted out score the best of the other moves.
# ``miner_pull`` (not in the thesis): a factor on rules 3 and 5, the miner's pulls towards unknowns.
# ``guard`` (not in the thesis): a pull towards a known opponent miner near our flag.
# ``home`` (not in the thesis): the force that keeps up to two sergeants to majors on stations next
# to the bombs by our flag (the home guards); 0: off.
cdef void strategic_scores(Pos* p, int side, const double* p_flag, const double* p_bomb,
                           const double* flag_suspicion, const int* moves, int n,
                           double* out, double hunt=*, bint captures_keep=*,
                           double miner_pull=*, double guard=*, double home=*) noexcept nogil

# The thesis's flag suspicions (7.5) of ``side``'s opponent pieces as ``side`` sees them, written
# to out[pid] for every piece id (0 for ``side``'s own pieces and for captured ones).
cdef void flag_suspicions(Pos* p, int side, double* out) noexcept nogil
