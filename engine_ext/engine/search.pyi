"""Type stubs for the compiled search (engine_ext/engine/search.pyx)."""

from collections.abc import Iterable, Sequence
from typing import Any

from numpy.typing import ArrayLike

from engine_ext.engine.settings import SearchParams, StrategicParams
from engine_ext.rules.core import Position

ALGORITHMS: dict[str, int]

class SearchRunner:
    def __init__(
        self,
        pos: Position,
        me: int,
        initial: Sequence[int],
        params: SearchParams,
        *,
        public: Iterable[int] | None = None,
        approached: Iterable[tuple[int, int]] | None = None,
        moved: Iterable[int] = (),
        threads: int | None = None,
        beliefs: ArrayLike | None = None,
    ) -> None: ...
    def request_stop(self) -> None: ...
    @property
    def nodes(self) -> int: ...
    @property
    def threads(self) -> int: ...
    def ply_nodes(self) -> list[int]: ...
    def root_outcomes(
        self, move: int
    ) -> tuple[tuple[float, float, float, float], tuple[float, float, float, float]] | None: ...
    def belief(self, pid: int) -> list[float]: ...
    def is_public(self, pid: int) -> bool: ...
    def piece_value(self, side: int, rank: int) -> float: ...
    def opponent_movers(self) -> int: ...
    def strategic(self, moves: Sequence[int], params: StrategicParams | None = None) -> list[float]: ...
    def run(
        self, moves: Sequence[int], soft_deadline: float, abort_deadline: float, nodes: int | None = None
    ) -> dict[str, Any]: ...
    def search_depth(self, moves: Sequence[int], depth: int) -> list[float]: ...
