"""Bot profiles: which engine plays, with which parameters, seed and move times.

A profile is a plain validated model so that profile files, per-opponent selection and environment
overrides can be added on top of it without changing it. Built-in profiles exist for every registered
engine, under the engine's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from bot.daemon.engine_interface import (
    ENGINES,
    ENGINES_NEEDING_PARAMS,
    SEARCH_ENGINES,
    EngineConfigError,
    MoveEngine,
    create_engine,
)
from bot.settings import Loc, problems_text, validation_problems
from engine_ext.engine.timeman import SAFETY_MARGIN
from engine_ext.rules.tournament import MOVE_TIME_AVERAGE, MOVE_TIME_MAX
from setups.choice import SetupChoice


class ProfileError(ValueError):
    """A profile that does not validate; the message names the bad key."""


class BotProfile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    # Opponent names this profile is for: exact names or shell-style globs ("Probe*"), case-insensitive.
    match: list[str] = Field(default_factory=list)
    priority: int = Field(0, description="among several matching globs the highest priority wins")
    engine: str = "random"
    engine_params: dict[str, Any] = Field(default_factory=dict)
    seed: int | None = None
    move_time_soft: float = Field(default=MOVE_TIME_AVERAGE, gt=0, le=3600)
    move_time_hard: float = Field(default=MOVE_TIME_MAX, gt=0, le=3600)
    # Kept back from the host's deadline so the answer crosses the network in time.
    safety_margin: float = Field(default=SAFETY_MARGIN, ge=0, le=10)
    setup: SetupChoice = Field(default_factory=SetupChoice)

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, name: str) -> str:
        if name not in ENGINES:
            raise ValueError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")
        return name

    @model_validator(mode="after")
    def _times_agree(self) -> BotProfile:
        if self.move_time_soft > self.move_time_hard:
            raise ValueError(
                f"move_time_soft ({self.move_time_soft:g} s) exceeds "
                f"move_time_hard ({self.move_time_hard:g} s)"
            )
        return self

    def create_engine(self, seed: int | None = None) -> MoveEngine:
        """A fresh engine for one game; ``seed`` overrides the profile's."""
        try:
            return create_engine(self.engine, self.engine_params, self.seed if seed is None else seed)
        except EngineConfigError as exc:
            raise ProfileError(f"profile {self.name!r}: engine_params: {exc}") from None


def engine_params_model(engine: str) -> type[BaseModel] | None:
    """The model an engine's ``engine_params`` must fit (None: the engine takes no parameters, or is
    one registered later without a model the configuration knows)."""
    if engine in SEARCH_ENGINES:
        from engine_ext.engine.settings import EngineSettings

        return EngineSettings
    if engine == "ucc":
        from bot.ucc.engine import UccEngineParams  # imported here: it imports bot.daemon.engine_interface

        return UccEngineParams
    return None


def engine_params_errors(engine: str, params: Mapping[str, Any]) -> list[ErrorDetails]:
    """What is wrong with ``params`` for ``engine``, each error with its key path inside ``engine_params``:
    the validation a game start makes, so that a profile that would fail there fails at load time instead
    (the compiled engines lay the parameters over their built-in profile, engine_ext.engine.facade.engine_factory)."""
    try:
        if engine in SEARCH_ENGINES:
            from engine_ext.engine.facade import engine_factory  # the compiled search: only for these engines

            engine_factory(engine)(params, 0)
        elif engine == "ucc":
            from bot.ucc.engine import UccEngineParams

            UccEngineParams.model_validate(dict(params))
        else:
            create_engine(engine, params, 0)
    except ValidationError as exc:
        return exc.errors(include_url=False)
    except Exception as exc:  # EngineConfigError, a factory's own checks: no key path, but still the profile's
        return [ErrorDetails(type="value_error", loc=(), msg=str(exc), input=dict(params))]
    return []


def profile_from_mapping(
    data: Mapping[str, Any],
    source: str = "profile",
    *,
    env_prefix: str | None = None,
    env_set: Mapping[Loc, str] | None = None,
) -> BotProfile:
    """Validate a profile from plain data; errors list each bad key with what is wrong with it, and with
    the environment variable that set it or could set it (``env_prefix``, ``env_set``: see
    bot.settings.validation_problems)."""
    try:
        return BotProfile.model_validate(dict(data))
    except ValidationError as exc:
        problems = validation_problems(exc.errors(include_url=False), source, model=BotProfile,
                                       env_prefix=env_prefix, env_set=env_set)
        raise ProfileError(problems_text(problems)) from None


def builtin_profiles() -> dict[str, BotProfile]:
    """One profile per registered engine (so engines registered later get theirs), under the engine's name."""
    return {name: BotProfile(name=name, engine=name) for name in sorted(ENGINES)
            if name not in ENGINES_NEEDING_PARAMS}


def get_profile(name: str) -> BotProfile:
    profiles = builtin_profiles()
    try:
        return profiles[name]
    except KeyError:
        raise ProfileError(f"unknown profile {name!r} (known: {', '.join(profiles)})") from None


def default_profile_name() -> str:
    """Our own bot: the Perspecto engine when it is registered, the random baseline until then."""
    return "perspecto" if "perspecto" in builtin_profiles() else "random"
