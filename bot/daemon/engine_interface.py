"""What the bot asks of an engine, and the registry that lets profiles name engines.

An engine is blocking code: the client calls ``choose_move`` in a worker thread with a copy of its game
view (the opponent's pieces hidden) and a ``SearchBudget``. The engine should answer by the soft deadline,
must stop when ``budget.stop`` is set, and anything it returns after the hard deadline is thrown away: the
client has already sent a fallback move by then.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

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


class RandomEngine:
    """Uniformly random legal moves: the baseline every other engine must beat."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        moves = game.sendable_moves()
        if not moves:
            raise ValueError("no legal move")
        return self._rng.choice(moves)


# An engine factory takes the profile's engine parameters and seed.
EngineFactory = Callable[[Mapping[str, Any], int | None], MoveEngine]


def _random_engine(params: Mapping[str, Any], seed: int | None) -> MoveEngine:
    if params:
        raise EngineConfigError(f"engine 'random' takes no parameters, got: {', '.join(sorted(params))}")
    return RandomEngine(seed)


# The compiled engines of engine_ext, by the built-in engine profile they start from.
SearchEngineName = Literal["minimax", "expectiminimax", "pemm", "perspecto"]
SEARCH_ENGINES: tuple[str, ...] = get_args(SearchEngineName)


def _search_engine(kind: str) -> EngineFactory:
    def make(params: Mapping[str, Any], seed: int | None) -> MoveEngine:
        # Imported here so that tools which never search do not load the compiled search.
        from pydantic import ValidationError

        from engine_ext.engine.facade import engine_factory
        from protocol.validation import validation_text

        try:
            return engine_factory(kind)(params, seed)
        except ValidationError as exc:
            raise EngineConfigError(f"engine {kind!r}: {validation_text(exc)}") from None

    return make


def _ucc_engine(params: Mapping[str, Any], seed: int | None) -> MoveEngine:
    from bot.ucc.engine import make_ucc_engine  # imported here: it imports this module

    return make_ucc_engine(params, seed)


# Engines by the name a profile uses.
ENGINES: dict[str, EngineFactory] = {
    "random": _random_engine,
    **{kind: _search_engine(kind) for kind in SEARCH_ENGINES},
    "ucc": _ucc_engine,
}
# Engines that cannot play without parameters of their own (no built-in profile of the same name).
ENGINES_NEEDING_PARAMS = frozenset({"ucc"})


def create_engine(name: str, params: Mapping[str, Any] | None = None, seed: int | None = None) -> MoveEngine:
    factory = ENGINES.get(name)
    if factory is None:
        raise EngineConfigError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")
    return factory(params or {}, seed)
