"""The two-squares chase: can a stronger piece force the capture of a weaker one by the two-squares rule?

``oracle``: the exact answer by retrograde analysis (slow, the reference). ``lookahead`` (compiled):
the seed's fast static look-ahead (``look_ahead``) and the scan of a position for candidate pairs
(``scan``), tested against the oracle. See docs/two-squares.md.
"""

from engine_ext.chase.oracle import (
    FRESH,
    ChaseBoard,
    ChaseInputError,
    ChaseRules,
    ChaseSolution,
    ChaseState,
    PieceHistory,
    Role,
    Verdict,
    decide,
    parse_diagram,
    solve,
)

__all__ = [
    "FRESH", "ChaseBoard", "ChaseInputError", "ChaseRules", "ChaseSolution", "ChaseState",
    "PieceHistory", "Role", "Verdict", "decide", "parse_diagram", "solve",
]
