"""The strength lab: engine-against-engine matches with sound statistics.

``stats`` turns game results into an Elo estimate with its interval (trinomial W/D/L over games,
pentanomial over colour-swapped game pairs); ``sprt`` decides a sequential probability ratio test on
the same results; ``signature`` is the bench node count; ``runner`` plays the games. The statistics
modules are pure: no I/O, no clocks, no global state.
"""
