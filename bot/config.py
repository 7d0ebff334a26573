"""Bot profiles: which engine plays, with which parameters, seed and move times.

A profile is a validated model, one of the members of ``BotProfile`` chosen by its ``engine`` (a
discriminated union), so that an engine's parameters are typed by that engine's model from the moment a
file is read: ``EngineSettings`` laid over the built-in settings of the same name for the compiled
searches, ``UccEngineParams`` for a UCC program, none for the random mover. Built-in profiles exist for
every registered engine, under the engine's name.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails

from bot.daemon.engine_interface import (
    ENGINES,
    ENGINES_NEEDING_PARAMS,
    SEARCH_ENGINES,
    EngineConfigError,
    MoveEngine,
    SearchEngineName,
    create_engine,
)
from bot.settings import Loc, problems_text, validation_problems
from bot.ucc.engine import UccEngineParams
from engine_ext.engine.settings import EngineSettings, builtin_settings, deep_merge
from engine_ext.engine.timeman import SAFETY_MARGIN
from engine_ext.rules.tournament import MOVE_TIME_AVERAGE, MOVE_TIME_MAX
from setups.choice import SetupChoice


class ProfileError(ValueError):
    """A profile that does not validate; the message names the bad key."""


class ProfileBase(BaseModel):
    """What every profile has, whatever its engine. A profile is one of the engine-specific models of
    ``BotProfile`` below, chosen by its ``engine``: its ``engine_params`` are typed from the file on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=64)
    description: str = ""
    # Opponent names this profile is for: exact names or shell-style globs ("Probe*"), case-insensitive.
    match: list[str] = Field(default_factory=list)
    priority: int = Field(0, description="among several matching globs the highest priority wins")
    engine: str = "random"
    seed: int | None = None
    move_time_soft: float = Field(default=MOVE_TIME_AVERAGE, gt=0, le=3600)
    move_time_hard: float = Field(default=MOVE_TIME_MAX, gt=0, le=3600)
    # Kept back from the host's deadline so the answer crosses the network in time.
    safety_margin: float = Field(default=SAFETY_MARGIN, ge=0, le=10)
    setup: SetupChoice = Field(default_factory=SetupChoice)

    @model_validator(mode="after")
    def _times_agree(self) -> Self:
        if self.move_time_soft > self.move_time_hard:
            raise ValueError(
                f"move_time_soft ({self.move_time_soft:g} s) exceeds "
                f"move_time_hard ({self.move_time_hard:g} s)"
            )
        return self

    @abstractmethod
    def engine_param_values(self) -> dict[str, Any]:
        """The parameters handed to the engine's factory (bot.daemon.engine_interface.ENGINES)."""

    def engine_params_set(self) -> dict[str, Any]:
        """The parameters this profile sets (for reports: the lab's JSON, ``config show``)."""
        return self.engine_param_values()

    def create_engine(self, seed: int | None = None) -> MoveEngine:
        """A fresh engine for one game; ``seed`` overrides the profile's."""
        try:
            return create_engine(self.engine, self.engine_param_values(), self.seed if seed is None else seed)
        except EngineConfigError as exc:
            raise ProfileError(f"profile {self.name!r}: engine_params: {exc}") from None

    def with_engine_params(self, engine_params: Mapping[str, Any]) -> BotProfile:
        """This profile with ``engine_params`` in place of its own, validated as a profile file's and by
        the engine itself (a misspelt parameter is a ``ProfileError`` naming it). The lab lays its
        ``--param``s over a profile with it (engine_ext/lab/runner.py ``LabProfile``)."""
        merged = profile_from_mapping({**self.model_dump(), "engine_params": dict(engine_params)},
                                      source=f"profile {self.name!r}")
        merged.create_engine(0)
        return merged


class SearchEngineProfile(ProfileBase):
    """A compiled search engine. ``engine_params`` are the engine's settings: the built-in profile of the
    engine's name (engine_ext/engine/settings.py) with what the file sets laid over it, key by key, so a
    file that sets nothing keeps up with the built-in values as they improve."""

    engine: SearchEngineName
    engine_params: EngineSettings

    @model_validator(mode="before")
    @classmethod
    def _over_the_built_in(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("engine") in SEARCH_ENGINES:
            params = data.get("engine_params", {})
            if isinstance(params, EngineSettings):
                params = params.model_dump()
            if isinstance(params, Mapping):
                base = builtin_settings(str(data["engine"])).model_dump()
                data = {**data, "engine_params": deep_merge(base, params)}
        return data

    def engine_param_values(self) -> dict[str, Any]:
        return self.engine_params.model_dump()

    def engine_params_set(self) -> dict[str, Any]:
        """The settings that differ from the engine's built-in profile."""
        return _changed(builtin_settings(self.engine).model_dump(), self.engine_params.model_dump())


class UccProfile(ProfileBase):
    """A UCC 2012 program (docs/ucc.md) run as an engine."""

    engine: Literal["ucc"]
    engine_params: UccEngineParams

    @model_validator(mode="before")
    @classmethod
    def _params_table(cls, data: Any) -> Any:
        # A missing [engine_params] table is reported as the key it lacks (engine_params.command).
        if isinstance(data, Mapping) and "engine_params" not in data:
            data = {**data, "engine_params": {}}
        return data

    def engine_param_values(self) -> dict[str, Any]:
        return self.engine_params.model_dump(exclude_unset=True, mode="json")


class NoEngineParams(BaseModel):
    """An engine without parameters: any key is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RandomProfile(ProfileBase):
    """The random mover, the baseline: it takes no parameters."""

    engine: Literal["random"] = "random"
    engine_params: NoEngineParams = Field(default_factory=NoEngineParams)

    @field_validator("engine_params", mode="before")
    @classmethod
    def _none(cls, params: Any) -> Any:
        if isinstance(params, Mapping) and params:
            raise ValueError(f"engine 'random' takes no parameters, got: {', '.join(sorted(map(str, params)))}")
        return params

    def engine_param_values(self) -> dict[str, Any]:
        return {}


class RegisteredEngineProfile(ProfileBase):
    """An engine registered at run time (bot.daemon.engine_interface.ENGINES, e.g. by a test or a plug-in):
    its factory is the only judge of its parameters, asked when the configuration is loaded."""

    engine_params: dict[str, Any] = Field(default_factory=dict)

    def engine_param_values(self) -> dict[str, Any]:
        return dict(self.engine_params)


class UnknownEngineProfile(ProfileBase):
    """Never valid: it makes an unknown ``engine`` an error on the ``engine`` key, naming the known ones."""

    engine_params: Any = None

    def engine_param_values(self) -> dict[str, Any]:
        return {}

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, name: str) -> str:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(sorted(ENGINES))})")


def _engine_kind(data: Any) -> str:
    """Which member of ``BotProfile`` a profile is, from its ``engine``."""
    engine = data.get("engine", "random") if isinstance(data, Mapping) else getattr(data, "engine", None)
    if engine in SEARCH_ENGINES:
        return "search"
    if engine in ("ucc", "random"):
        return str(engine)
    return "registered" if engine in ENGINES else "unknown"


# A profile: a discriminated union on ``engine``, so that a file's engine_params are checked against the
# model of its engine when the configuration is loaded, not when the first game starts.
BotProfile = Annotated[
    Annotated[SearchEngineProfile, Tag("search")]
    | Annotated[UccProfile, Tag("ucc")]
    | Annotated[RandomProfile, Tag("random")]
    | Annotated[RegisteredEngineProfile, Tag("registered")]
    | Annotated[UnknownEngineProfile, Tag("unknown")],
    Discriminator(_engine_kind),
]
_PROFILE: TypeAdapter[BotProfile] = TypeAdapter(BotProfile)
_PROFILE_MODELS: dict[str, type[ProfileBase]] = {
    "search": SearchEngineProfile, "ucc": UccProfile, "random": RandomProfile,
    "registered": RegisteredEngineProfile, "unknown": UnknownEngineProfile,
}


def _changed(base: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` that differ from ``base``, nested tables key by key."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            inner = _changed(base[key], value)
            if inner:
                out[key] = inner
        elif key not in base or base[key] != value:
            out[key] = value
    return out


def make_profile(**fields: Any) -> BotProfile:
    """A profile from keyword fields (raises pydantic's ValidationError; files go through
    ``profile_from_mapping``, which names the file and the key)."""
    return _PROFILE.validate_python(fields)


def engine_params_model(engine: str) -> type[BaseModel] | None:
    """The model an engine's ``engine_params`` must fit (None: an engine registered at run time, whose
    factory checks them)."""
    model = _PROFILE_MODELS[_engine_kind({"engine": engine})]
    annotation = model.model_fields["engine_params"].annotation
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def engine_params_errors(engine: str, params: Mapping[str, Any]) -> list[ErrorDetails]:
    """What the factory of an engine registered at run time says of ``params``, as pydantic errors with
    the key path inside ``engine_params`` where it gives one (the engines this module knows are typed
    by ``BotProfile`` and need no such check)."""
    try:
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
        return _PROFILE.validate_python(dict(data))
    except ValidationError as exc:
        # The union puts the member's tag first in every error's location: the file has no such key.
        tag = _engine_kind(data)
        errors = [{**err, "loc": err["loc"][1:] if err["loc"][:1] == (tag,) else err["loc"]}
                  for err in exc.errors(include_url=False)]
        problems = validation_problems(errors, source, model=_PROFILE_MODELS[tag],  # type: ignore[arg-type]
                                       env_prefix=env_prefix, env_set=env_set)
        raise ProfileError(problems_text(problems)) from None


def builtin_profiles() -> dict[str, BotProfile]:
    """One profile per registered engine (so engines registered later get theirs), under the engine's name."""
    return {name: make_profile(name=name, engine=name) for name in sorted(ENGINES)
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
