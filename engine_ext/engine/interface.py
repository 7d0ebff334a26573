"""What a game asks of an engine: its move budget (``SearchBudget``), the engine protocols (``MoveEngine``,
``ProgramEngine``) and the error of an engine that cannot be made (``EngineConfigError``).

Below every player of games: the bot's client (bot/daemon), the lab (engine_ext/lab) and the UCC adapter
(bot/ucc) all speak to engines through these, and the bot's registry of engines by name
(bot/daemon/engine_interface.py) builds them. An engine is blocking code: the client calls ``choose_move``
in a worker thread with a copy of its game view (the opponent's pieces hidden) and a ``SearchBudget``.
The engine should answer by the soft deadline, must stop when ``budget.stop`` is set, and anything it
returns after the hard deadline is thrown away: the client has already sent a fallback move by then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from engine_ext.engine.timeman import MoveTimes
from engine_ext.rules.game import Game, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square


@dataclass(frozen=True)
class SearchBudget:
    soft_deadline: float  # on ``clock``: aim to answer by then (the time manager's optimum)
    hard_deadline: float  # on ``clock``: an answer after this is not used (bot/daemon/deadline.py sends a fallback)
    stop: threading.Event = field(default_factory=threading.Event)
    # The deadlines' clock. Compiled engines hand the deadlines to the search as time.monotonic() values,
    # so only tests (with engines of their own) give another one.
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)

    @classmethod
    def starting_now(cls, soft_seconds: float, hard_seconds: float, *,
                     clock: Callable[[], float] = time.monotonic) -> SearchBudget:
        now = clock()
        return cls(now + min(soft_seconds, hard_seconds), now + hard_seconds, clock=clock)

    @classmethod
    def for_move(cls, times: MoveTimes, *, clock: Callable[[], float] = time.monotonic) -> SearchBudget:
        """The deadlines the time manager gave this move (``times`` is on ``clock``)."""
        return cls(times.soft_deadline, times.hard_deadline, clock=clock)

    def remaining(self, *, hard: bool = False) -> float:
        return (self.hard_deadline if hard else self.soft_deadline) - self.clock()

    def should_stop(self) -> bool:
        """For a search loop: stop when told to, or once the soft deadline has passed."""
        return self.stop.is_set() or self.clock() >= self.soft_deadline


class MoveEngine(Protocol):
    name: str

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        """A legal move for ``game.side_to_move``; blocking, called off the event loop."""
        ...


@runtime_checkable
class ProgramEngine(Protocol):
    """An engine that is an outside program with a game of its own (a UCC program): it chooses its own
    setup, is told when the game ends, and cannot follow a game it has not played from the start. All
    three are blocking and are called, like ``choose_move``, on the engine thread."""

    def choose_setup(self, colour: Side, opponent: str, ruleset: Ruleset) -> dict[Square, Rank]: ...

    def finish(self, game: Game | None, result: str | None) -> int | None: ...

    def abandon(self, why: str) -> None: ...


class EngineConfigError(ValueError):
    """An engine name or parameter that does not exist; the message names it."""
