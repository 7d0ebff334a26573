"""Type stub of the compiled strategic search (engine_ext/strategic.pyx)."""

from collections.abc import Sequence

from engine_ext.core import Position

def strategic_scores_py(
    pos: Position,
    side: int,
    p_flag: Sequence[float],
    p_bomb: Sequence[float],
    moves: Sequence[int],
    flag_suspicion: Sequence[float] | None = None,
    lookahead: bool = True,
    hunt: float = 0.0,
    captures_keep: bool = False,
    miner_pull: float = 1.0,
    guard: float = 0.0,
    home: float = 0.0,
) -> list[float]: ...
def flag_suspicions_py(pos: Position, side: int) -> list[float]: ...
def strategic_bench(
    pos: Position, side: int, p_flag: Sequence[float], p_bomb: Sequence[float], moves: Sequence[int], repeats: int
) -> list[float]: ...
