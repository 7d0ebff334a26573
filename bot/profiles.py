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

from bot.config import BotProfile, ProfileError, builtin_profiles, default_profile_name, profile_from_mapping
from engine_ext.settings import deep_merge

PROFILES_DIR = "profiles"
PROFILE_ENV_PREFIX = "PERSPECTO_PROFILES__"


def _env_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def profile_env_overrides(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """``{profile name: nested field overrides}`` from ``PERSPECTO_PROFILES__...`` variables."""
    environ = os.environ if environ is None else environ
    out: dict[str, dict[str, Any]] = {}
    for key, value in environ.items():
        if not key.upper().startswith(PROFILE_ENV_PREFIX):
            continue
        path = [p.lower() for p in key[len(PROFILE_ENV_PREFIX):].split("__") if p]
        if len(path) < 2:
            raise ProfileError(f"{key}: name a profile and a field, like {PROFILE_ENV_PREFIX}DEFAULT__SEED")
        node = out.setdefault(path[0], {})
        for part in path[1:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _env_value(value)
    return out


def read_profile_file(path: Path, overrides: Mapping[str, Any] | None = None) -> BotProfile:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path}: not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    if overrides:
        data = deep_merge(data, overrides)
    return profile_from_mapping(data, source=str(path))


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
        profiles = builtin_profiles()
        files: dict[str, Path] = {}
        problems: list[str] = []
        folder = directory / PROFILES_DIR
        for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
            try:
                profile = read_profile_file(path, overrides.get(path.stem.lower()))
            except ProfileError as exc:
                problems.append(str(exc))
                continue
            if profile.name in files:
                problems.append(f"{path}: profile name {profile.name!r} is also used by {files[profile.name]}")
                continue
            profiles[profile.name] = profile
            files[profile.name] = path
        unknown = sorted(set(overrides) - {n.lower() for n in files})
        if unknown:
            problems.append(f"environment overrides name no profile file: {', '.join(unknown)}")
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
