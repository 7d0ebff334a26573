"""Type stubs for the compiled evaluation unit (engine_ext/evaluation.pyx)."""

from collections.abc import Iterable, Sequence

from engine_ext.core import Position

def random_key(seed: int, ply: int) -> int: ...
def random_term_of(amplitude: float, key: int, position_hash: int) -> float: ...

class ValuesView:
    def __init__(
        self,
        pos: Position,
        me: int,
        initial: Sequence[int],
        base: Sequence[float],
        special: Sequence[float],
        *,
        public: Iterable[int] | None = None,
        approached: Iterable[tuple[int, int]] | None = None,
        moved: Iterable[int] = (),
        default_flag_value: float = 300.0,
        decay: float = 0.95,
        reveal_factor: float = 0.0,
        reveal_bomb: float = 0.0,
        advance: float = 0.0,
        own_flag_value: float = 0.0,
        miner_bonus: float = 0.0,
        suspect_odds: bool = False,
        trade_down: float = 0.0,
    ) -> None: ...
    def piece(self, side: int, rank: int) -> float: ...
    def rank_value(self, side: int, rank: int) -> float: ...
    def flag_value(self, side: int) -> float: ...
    def avg_all(self, side: int, moved: bool) -> float: ...
    def avg_take(self, side: int, moved: bool, captor_rank: int) -> float: ...
    def capture_weight(self, side: int) -> float: ...
    def flag_share(self, pid: int) -> float: ...
    def decay(self, ply: int) -> float: ...
    def captured_value(self, persp: int, captured: int, captor: int, captured_attacked: bool = False) -> float: ...
