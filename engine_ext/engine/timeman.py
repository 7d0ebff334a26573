"""The time manager: each move's soft (optimum) and hard (maximum) deadline, from the limits and the game so far.

The limits come from three places, and the tighter one always wins:
- the profile: ``move_time_soft`` (the time it aims for a move), ``move_time_hard`` (never more) and
  ``safety_margin`` (kept back from the game's per-move limit: the answer still has to reach the host);
- the game: the host's options ``moveTimeMax`` / ``moveTimeAverage`` and its move limit, or under the UCC
  referee its per-move limit (``-T``) alone: no average, no move limit in sight;
- the tournament's defaults (engine_ext/rules/tournament.py): 15 s a move at most, 5 s on average, 2000 plies.

As Stockfish's time manager gives its search an optimum and a maximum time, this gives each move two
deadlines: the engine aims to answer by the soft one (it starts no iteration it forecasts to end after it)
and never answers after the hard one (bot/daemon/deadline.py sends a legal fallback move by then instead).

With an average to keep, the **bank** is what the moves so far saved against it (average x moves - time
used; negative when they overspent). The next ``BANK_HORIZON`` moves of ours share it, fewer when the move
limit is nearer (the window), so saved time goes where the game is rather than waiting for moves that may
never come, and the last moves before the move limit spend all of it:

    optimum = min(move_time_soft, average) + bank / window
    maximum = bank + average x window   (this move may take what the whole window could, at worst)

Both stay within the **cap**, the per-move limit less the safety margin (which never takes more than half of
that limit) and at most ``move_time_hard``; the optimum never falls below ``MIN_OPTIMUM``. At the start of a
tournament game that is 5 s and 14.75 s. Without an average (the UCC referee) a second saved cannot be
used later: the optimum is half the per-move limit (at most ``move_time_soft``), the maximum the cap.

The manager measures the time of each move itself (``start_move`` ... ``finish_move``) on an injectable
clock, from the moment the bot is asked to the moment it answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from engine_ext.rules.tournament import MOVE_LIMIT, MOVE_TIME_AVERAGE, MOVE_TIME_MAX

SAFETY_MARGIN = 0.25  # seconds a profile keeps back from the game's per-move limit by default
MARGIN_SHARE = 0.5  # the margin never takes more than this share of the per-move limit
BANK_HORIZON = 20  # our moves that share the bank
UNBANKED_SHARE = 0.5  # without an average: the share of the per-move limit to aim for
MIN_OPTIMUM = 0.05  # seconds: an overspent bank still leaves the engine this long (or the cap, if less)


class ProfileTimes(Protocol):
    """A profile's own time settings (bot.config.BotProfile has them)."""

    @property
    def move_time_soft(self) -> float: ...

    @property
    def move_time_hard(self) -> float: ...

    @property
    def safety_margin(self) -> float: ...


@dataclass(frozen=True, kw_only=True)
class TimeLimits:
    """Everything that bounds a move's time, under the profile's and the game options' own names."""

    move_time_soft: float = MOVE_TIME_AVERAGE  # the profile's aim for a move
    move_time_hard: float = MOVE_TIME_MAX  # the profile's most for a move
    safety_margin: float = SAFETY_MARGIN  # the profile's, kept back from move_time_max
    move_time_max: float = MOVE_TIME_MAX  # the game's limit for any one move
    move_time_average: float | None = MOVE_TIME_AVERAGE  # the game's average a move; None: none to keep
    move_limit: int | None = MOVE_LIMIT  # plies until the game ends in a draw; None: none in sight

    def __post_init__(self) -> None:
        for name in ("move_time_soft", "move_time_hard", "move_time_max"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be above 0 s, not {getattr(self, name)}")
        if self.move_time_average is not None and not self.move_time_average > 0:
            raise ValueError(f"move_time_average must be above 0 s, not {self.move_time_average}")
        if not self.safety_margin >= 0:
            raise ValueError(f"safety_margin must be at least 0 s, not {self.safety_margin}")
        if self.move_limit is not None and self.move_limit < 1:
            raise ValueError(f"move_limit must be at least 1 ply, not {self.move_limit}")

    @classmethod
    def for_host(cls, profile: ProfileTimes, *, move_time_max: float, move_time_average: float,
                 move_limit: int) -> TimeLimits:
        """A game on a host (a tournament server, ``perspecto host``): its options and the profile's times."""
        return cls(move_time_soft=profile.move_time_soft, move_time_hard=profile.move_time_hard,
                   safety_margin=profile.safety_margin, move_time_max=move_time_max,
                   move_time_average=move_time_average, move_limit=move_limit)

    @classmethod
    def for_ucc(cls, profile: ProfileTimes, move_time: float) -> TimeLimits:
        """A game under the UCC referee: its per-move limit ``move_time`` (``-T``) alone; its draw comes
        after 5000 turns, too far away to plan for."""
        return cls(move_time_soft=profile.move_time_soft, move_time_hard=profile.move_time_hard,
                   safety_margin=profile.safety_margin, move_time_max=move_time, move_time_average=None,
                   move_limit=None)

    @property
    def cap(self) -> float:
        """The most any move gets: the game's per-move limit less the margin, and the profile's most."""
        margin = min(self.safety_margin, self.move_time_max * MARGIN_SHARE)
        return min(self.move_time_hard, self.move_time_max - margin)


@dataclass(frozen=True)
class MoveTimes:
    """One move's budget: when it started (on the manager's clock) and its two spans in seconds."""

    started: float
    optimum: float  # aim to answer by then: the soft deadline
    maximum: float  # never answer later: the hard deadline

    @property
    def soft_deadline(self) -> float:
        return self.started + self.optimum

    @property
    def hard_deadline(self) -> float:
        return self.started + self.maximum


class TimeManager:
    """The budgets of one side's moves in one game: ``start_move`` when asked, ``finish_move`` once answered."""

    def __init__(self, limits: TimeLimits, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.moves = 0  # our moves timed so far
        self.used = 0.0  # their seconds in all

    @property
    def bank(self) -> float:
        """Seconds the moves so far saved against the average (negative: overspent; 0 without an average)."""
        average = self.limits.move_time_average
        return 0.0 if average is None else average * self.moves - self.used

    @property
    def average_used(self) -> float:
        return self.used / self.moves if self.moves else 0.0

    def window(self, ply: int) -> int:
        """Our moves that share the bank from this one on: ``BANK_HORIZON``, or those left before the
        move limit (this one included) if fewer."""
        if self.limits.move_limit is None:
            return BANK_HORIZON
        ours_left = (self.limits.move_limit - ply + 1) // 2  # our plies ply, ply + 2, ... below the limit
        return max(1, min(BANK_HORIZON, ours_left))

    def spans(self, ply: int) -> tuple[float, float]:
        """The optimum and the maximum seconds for our move at ``ply`` (the game's ply count before it)."""
        lim = self.limits
        cap = lim.cap
        floor = min(MIN_OPTIMUM, cap)
        if lim.move_time_average is None:
            optimum = min(lim.move_time_soft, lim.move_time_max * UNBANKED_SHARE, cap)
            return max(optimum, floor), cap
        window = self.window(ply)
        bank = self.bank
        optimum = min(max(min(lim.move_time_soft, lim.move_time_average) + bank / window, floor), cap)
        maximum = max(optimum, min(cap, bank + lim.move_time_average * window))
        return optimum, maximum

    def start_move(self, ply: int) -> MoveTimes:
        """The budget of our move at ``ply``, starting now."""
        optimum, maximum = self.spans(ply)
        return MoveTimes(self.clock(), optimum, maximum)

    def finish_move(self, move: MoveTimes) -> float:
        """The move is answered: count its time (now less its start) against the average; returns it."""
        seconds = max(0.0, self.clock() - move.started)
        self.record(seconds)
        return seconds

    def record(self, seconds: float) -> None:
        """Count a move of ``seconds`` (measured elsewhere)."""
        self.moves += 1
        self.used += max(0.0, seconds)
