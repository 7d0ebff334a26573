"""The registry that lets profiles name engines, and the random mover.

What the bot asks of an engine (``SearchBudget``, ``MoveEngine``, ``ProgramEngine``, ``EngineConfigError``)
is defined below the bot, in engine_ext/engine/interface.py, so that the lab and the UCC adapter use it
without reaching up into the daemon; it is re-exported here for the daemon's modules.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

from engine_ext.engine.interface import EngineConfigError as EngineConfigError
from engine_ext.engine.interface import MoveEngine as MoveEngine
from engine_ext.engine.interface import ProgramEngine as ProgramEngine
from engine_ext.engine.interface import SearchBudget as SearchBudget
from engine_ext.rules.game import Game, Move


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
    """A UCC program as the engine; imported when a profile asks for one, because the module brings pydantic
    and `perspecto ucc` reaches this module between its setup and its first move (each import there costs
    the first move's time, issue 32's -T 1 forfeits)."""
    from bot.ucc.engine import make_ucc_engine

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
