"""Time management from the tournament's limits: at most 15 s for one move, 5 s a move on average.

The engine itself only ever sees two deadlines (soft: do not start a search iteration that will not
end by then; hard: abandon the running iteration, answer with the last complete one). This module
turns the per-game limits into those deadlines move by move, banking time a quick move saved.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass(frozen=True)
class TimeLimits:
    max_per_move: float = 15.0
    average_per_move: float = 5.0
    safety: float = 0.5  # kept back from the limit: the answer still has to reach the host

    def __post_init__(self) -> None:
        if not 0 < self.average_per_move <= self.max_per_move:
            raise ValueError("need 0 < average_per_move <= max_per_move")
        if not 0 <= self.safety < self.max_per_move:
            raise ValueError("safety must be below max_per_move")


@dataclass(frozen=True)
class MoveBudget:
    soft_deadline: float  # time.monotonic()
    hard_deadline: float

    @property
    def soft_seconds(self) -> float:
        return self.soft_deadline - time.monotonic()


class TimeManager:
    """Budgets for one game. ``budget()`` before a move, ``record(seconds)`` after it."""

    def __init__(self, limits: TimeLimits | None = None, time_use: float = 1.0) -> None:
        if not 0 < time_use <= 1:
            raise ValueError("time_use must be in (0, 1]")
        self.limits = limits or TimeLimits()
        self.time_use = time_use
        self.moves = 0
        self.used = 0.0

    def start_game(self) -> None:
        self.moves = 0
        self.used = 0.0

    @property
    def bank(self) -> float:
        """Seconds saved against the average so far (negative: spent ahead)."""
        return self.limits.average_per_move * self.moves - self.used

    def soft_seconds(self) -> float:
        lim = self.limits
        # Plan for the average (scaled by time_use) plus a quarter of what earlier moves saved.
        target = lim.average_per_move * self.time_use + self.bank / 4.0
        return min(max(target, 0.05), lim.max_per_move - lim.safety)

    def hard_seconds(self) -> float:
        lim = self.limits
        soft = self.soft_seconds()
        return min(lim.max_per_move - lim.safety, max(3.0 * soft, soft + 1.0))

    def budget(self, now: float | None = None) -> MoveBudget:
        start = time.monotonic() if now is None else now
        return MoveBudget(start + self.soft_seconds(), start + self.hard_seconds())

    def record(self, seconds: float) -> None:
        self.moves += 1
        self.used += max(0.0, seconds)

    @property
    def average_used(self) -> float:
        return self.used / self.moves if self.moves else 0.0
