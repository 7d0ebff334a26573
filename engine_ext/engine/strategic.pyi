"""Type stub of the compiled strategic search (engine_ext/engine/strategic.pyx)."""

from collections.abc import Sequence

from engine_ext.engine.settings import StrategicParams
from engine_ext.rules.core import Position

def strategic_scores_py(
    pos: Position,
    side: int,
    p_flag: Sequence[float],
    p_bomb: Sequence[float],
    moves: Sequence[int],
    flag_suspicion: Sequence[float] | None = None,
    lookahead: bool = True,
    params: StrategicParams | None = None,
    piece_values: Sequence[Sequence[float]] | None = None,
    two_squares: int = 0,
) -> list[float]: ...
def flag_suspicions_py(pos: Position, side: int) -> list[float]: ...
def flag_defence_py(pos: Position, side: int) -> list[tuple[int, int, int, int, int, bool]]: ...
