"""Profiles from files, chosen per opponent.

Every ``*.toml`` in ``<config dir>/profiles/`` is one profile (its ``name`` defaults to the file's
stem). The built-in profiles (one per engine: ``random``, ``minimax``, ``expectiminimax``, ``pemm``,
``perspecto``) are always there; a file may replace one by using its name.

Choosing a profile for an opponent name, first hit wins:
1. a profile whose ``match`` lists the name exactly (case-insensitive);
2. a profile whose ``match`` has a glob that fits (``Probe*``): highest ``priority``, then the
   longest pattern, then the profile name;
3. the default profile (``default_profile`` in perspecto.toml, normally ``default``);
4. the built-in ``perspecto`` profile (``random`` when no engine is registered beyond it).

Environment variables override fields of a profile file:
``PERSPECTO_PROFILES__<NAME>__<FIELD>[__<SUBFIELD>...]=value``, e.g.
``PERSPECTO_PROFILES__DEFAULT__ENGINE_PARAMS__FEAR__EST_OPP_FEAR_START=0.4``. Values are read as
JSON when they parse as JSON (numbers, true/false, lists), else as text.

``load_configuration`` is what every command that plays calls before it starts: the settings and every
profile, validated as a game start would use them (engine parameters and setup names included), all
problems reported together in one ``ConfigError`` (bot/cli.py exits 2 with it).
"""

from __future__ import annotations

import fnmatch
import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.config import (
    BotProfile,
    ProfileError,
    RegisteredEngineProfile,
    builtin_profiles,
    default_profile_name,
    engine_params_errors,
    engine_params_model,
    profile_from_mapping,
)
from bot.settings import (
    ENV_DELIMITER,
    ENV_PREFIX,
    MAIN_FILE,
    ConfigError,
    DaemonSettings,
    Loc,
    Problem,
    checked_config_dir,
    env_name,
    load_settings,
    nearest,
    problems_text,
    settings_env,
    validation_problems,
)
from engine_ext.engine.settings import deep_merge
from engine_ext.rules.rulesets import get_ruleset
from setups.choice import SetupChooser

PROFILES_DIR = "profiles"
PROFILE_ENV_PREFIX = "PERSPECTO_PROFILES__"


def _env_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@dataclass(frozen=True)
class _Override:
    var: str  # the variable, as it is spelt in the environment
    profile: str  # the profile file's stem, lower case
    path: tuple[str, ...]  # the field's path in the profile, lower case
    value: Any


def _profile_env(environ: Mapping[str, str] | None) -> list[_Override]:
    environ = os.environ if environ is None else environ
    out = []
    for key, value in environ.items():
        if not key.upper().startswith(PROFILE_ENV_PREFIX):
            continue
        path = [p.lower() for p in key[len(PROFILE_ENV_PREFIX):].split(ENV_DELIMITER) if p]
        if len(path) < 2:
            raise ProfileError(f"{key}: name a profile and a field, like {PROFILE_ENV_PREFIX}DEFAULT__SEED")
        out.append(_Override(key, path[0], tuple(path[1:]), _env_value(value)))
    return out


def profile_env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``{profile name: nested field overrides}`` from ``PERSPECTO_PROFILES__...`` variables."""
    out: dict[str, dict[str, Any]] = {}
    for override in _profile_env(environ):
        node = out.setdefault(override.profile, {})
        for part in override.path[:-1]:
            node = node.setdefault(part, {})
        node[override.path[-1]] = override.value
    return out


def profile_env_sources(environ: Mapping[str, str] | None = None) -> dict[str, dict[Loc, str]]:
    """``{profile name: {field path: the variable that set it}}``, to say where a bad value came from."""
    out: dict[str, dict[Loc, str]] = {}
    for override in _profile_env(environ):
        out.setdefault(override.profile, {})[override.path] = override.var
    return out


def profile_env_prefix(stem: str) -> str:
    """The prefix of the variables that override the profile file ``<stem>.toml``."""
    return f"{PROFILE_ENV_PREFIX}{stem.upper()}{ENV_DELIMITER}"


def read_profile_file(
    path: Path, overrides: Mapping[str, Any] | None = None, env_set: Mapping[Loc, str] | None = None
) -> BotProfile:
    """One profile file under its environment ``overrides`` (``env_set``: the variable that set each)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path}: cannot read: {exc}") from None
    data.setdefault("name", path.stem)
    if overrides:
        data = deep_merge(data, overrides)
    return profile_from_mapping(data, source=str(path), env_prefix=profile_env_prefix(path.stem), env_set=env_set)


@dataclass
class ProfileSet:
    profiles: dict[str, BotProfile]
    default: str = "default"
    files: dict[str, Path] = field(default_factory=dict)

    @classmethod
    def load(
        cls, directory: Path, default: str = "default", environ: Mapping[str, str] | None = None
    ) -> ProfileSet:
        """Built-ins, then every profile file; all errors of all files are reported together."""
        overrides = profile_env_overrides(environ)
        sources = profile_env_sources(environ)
        profiles = builtin_profiles()
        files: dict[str, Path] = {}
        problems: list[str] = []
        folder = directory / PROFILES_DIR
        paths = sorted(folder.glob("*.toml")) if folder.is_dir() else []
        for path in paths:
            stem = path.stem.lower()
            try:
                profile = read_profile_file(path, overrides.get(stem), sources.get(stem))
            except ProfileError as exc:
                problems.append(str(exc))
                continue
            if profile.name in files:
                problems.append(f"{path}: profile name {profile.name!r} is also used by {files[profile.name]}")
                continue
            profiles[profile.name] = profile
            files[profile.name] = path
        stems = sorted(p.stem.lower() for p in paths)
        for unknown in sorted(set(overrides) - set(stems)):
            near = nearest(unknown, stems)
            hint = f" (did you mean {profile_env_prefix(near)}...?)" if near else ""
            for var in sorted(sources[unknown].values()):
                problems.append(f"{var} (environment): names no profile file {folder / unknown}.toml{hint}")
        if problems:
            raise ProfileError("\n".join(problems))
        return cls(profiles, default, files)

    def get(self, name: str) -> BotProfile:
        try:
            return self.profiles[name]
        except KeyError:
            raise ProfileError(f"unknown profile {name!r} (known: {', '.join(sorted(self.profiles))})") from None

    def select(self, opponent: str | None) -> BotProfile:
        """The profile for a game against ``opponent`` (see the module docstring for the order)."""
        if opponent:
            lowered = opponent.lower()
            exact = [p for p in self.profiles.values() if any(m.lower() == lowered for m in p.match)]
            if exact:
                return max(exact, key=lambda p: (p.priority, p.name))
            best: tuple[int, int, str] | None = None
            chosen: BotProfile | None = None
            for profile in self.profiles.values():
                for pattern in profile.match:
                    if fnmatch.fnmatchcase(lowered, pattern.lower()):
                        rank = (profile.priority, len(pattern), profile.name)
                        if best is None or rank > best:
                            best, chosen = rank, profile
            if chosen is not None:
                return chosen
        if self.default in self.profiles:
            return self.profiles[self.default]
        return self.profiles[default_profile_name()]

    def use_problems(self, environ: Mapping[str, str] | None = None) -> list[Problem]:
        """What only shows when a profile is used, for every profile: the parameters of an engine registered
        at run time (the others are typed when the file is read) and its setup names."""
        sources = profile_env_sources(environ)
        problems: list[Problem] = []
        for name, profile in sorted(self.profiles.items()):
            path = self.files.get(name)
            source = str(path) if path is not None else f"profile {name!r} (built in)"
            env_prefix = profile_env_prefix(path.stem) if path is not None else None
            env_set = sources.get(path.stem.lower(), {}) if path is not None else {}
            if isinstance(profile, RegisteredEngineProfile):
                # The engines this project knows were typed when the file was read; one registered at run
                # time is checked by its own factory.
                errors = engine_params_errors(profile.engine, profile.engine_params)
                problems += validation_problems(errors, source, model=engine_params_model(profile.engine),
                                                loc_prefix=("engine_params",), env_prefix=env_prefix,
                                                env_set=env_set)
            try:
                SetupChooser(profile.setup, get_ruleset("classic"))
            except Exception as exc:  # any failure to set up is the profile's problem
                problems.append(Problem(source, "setup", str(exc)))
        return problems


def load_configuration(directory: str | Path | None = None) -> tuple[DaemonSettings, ProfileSet]:
    """The settings and every profile, validated as the games will use them, before anything connects:
    unknown ``PERSPECTO_*`` variables, ``perspecto.toml``, every profile file under its environment
    overrides, their engine parameters and setup names, and the profiles the settings name. All problems
    are reported together in one ``ConfigError`` (``ConfigDirMissing`` at once for a directory that was
    named and is not there)."""
    folder = checked_config_dir(directory)
    problems: list[Problem | str] = []
    try:
        settings: DaemonSettings | None = load_settings(directory)
    except ConfigError as exc:
        problems.append(str(exc))
        settings = None
    default = settings.default_profile if settings is not None else "default"
    try:
        profiles: ProfileSet | None = ProfileSet.load(folder, default)
    except ProfileError as exc:
        problems.append(str(exc))
        profiles = None
    if profiles is not None:
        problems += profiles.use_problems()
    if settings is not None and profiles is not None:
        named = {"profile": settings.profile}
        # "default" may be left to the built-in fallback; any other default must exist.
        if settings.default_profile != "default":
            named["default_profile"] = settings.default_profile
        env_set = settings_env(os.environ)[0]
        for key, name in named.items():
            if name and name not in profiles.profiles:
                setter = env_set.get((key,))
                problems.append(Problem(str(folder / MAIN_FILE), key, f"{name!r} is no profile (known: "
                                        f"{', '.join(sorted(profiles.profiles))})", env_var=setter or
                                        env_name(ENV_PREFIX, (key,)), from_env=setter is not None))
    if problems or settings is None or profiles is None:
        raise ConfigError(problems_text(problems))
    return settings, profiles
