"""The shipped profiles hold deployment choices, not copies of the engine's values (issue 21, point 2).

The engine's tuned values live in one place, the built-in profile of each engine. A profile file that
restated them would keep the old numbers whenever the built-in profile improves, so: the shipped
default.toml sets no engine value at all, and an example profile sets only values that differ from the
built-in ones, each under a comment that says it is the profile's own choice.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bot.config import engine_params_model
from bot.daemon.engine_interface import SEARCH_ENGINES
from bot.profiles import load_configuration
from engine_ext.engine.facade import EngineMove
from engine_ext.engine.settings import BUILTIN_ENGINE_SETTINGS

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "config"
PROFILE_FILES = sorted((SHIPPED / "profiles").glob("*.toml"))


def leaves(data: Mapping[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every value of a nested table with its key path."""
    for key, value in data.items():
        if isinstance(value, Mapping):
            yield from leaves(value, (*path, key))
        else:
            yield (*path, key), value


def built_in_value(engine: str, path: tuple[str, ...]) -> Any:
    """What the engine uses for ``path`` when no profile sets it."""
    if engine in SEARCH_ENGINES:
        node: Any = BUILTIN_ENGINE_SETTINGS[engine].model_dump()
    else:
        model = engine_params_model(engine)
        assert model is not None, f"no settings model for engine {engine!r}"
        node = {name: field.default for name, field in model.model_fields.items() if not field.is_required()}
    for part in path:
        if not isinstance(node, Mapping) or part not in node:
            return None  # a required setting (ucc's command): nothing built in to restate
        node = node[part]
    return node


def restated(data: Mapping[str, Any]) -> list[str]:
    """The keys of a profile's engine_params whose value is the built-in one."""
    engine = data.get("engine", "random")
    return [".".join(path) for path, value in leaves(data.get("engine_params", {}))
            if value == built_in_value(engine, path)]


def test_the_shipped_profiles_are_there() -> None:
    assert {p.name for p in PROFILE_FILES} >= {"default.toml", "example-probe.toml", "example-ucc.toml"}


def test_default_toml_sets_no_engine_value() -> None:
    data = tomllib.loads((SHIPPED / "profiles" / "default.toml").read_text(encoding="utf-8"))
    assert data["engine"] == "perspecto"
    assert "engine_params" not in data, "default.toml restates engine values: they belong in the built-in profile"


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.name)
def test_no_shipped_profile_restates_a_built_in_engine_value(path: Path) -> None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert restated(data) == [], f"{path.name} restates built-in values"


@pytest.mark.parametrize("path", PROFILE_FILES, ids=lambda p: p.name)
def test_each_engine_value_a_profile_sets_is_commented_as_its_choice(path: Path) -> None:
    """Every [engine_params...] table that sets something has a comment above it or in it saying the
    values are this profile's choice (so a reader does not take them for the engine's own)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("[engine_params"):
            continue
        # The comment block right above the table header, and the table's own lines up to the next one.
        above = []
        for prior in reversed(lines[:i]):
            if not prior.startswith("#"):
                break
            above.append(prior)
        body = []
        for later in lines[i + 1:]:
            if later.startswith("["):
                break
            body.append(later)
        comments = " ".join(above + [b for b in body if b.startswith("#")]).lower()
        assert "choice" in comments, f"{path.name}: {line} has no comment saying its values are the profile's choice"


def test_the_checker_catches_a_restated_value() -> None:
    """The check above is not vacuous: the old default.toml's values are the built-in ones."""
    old_default = {"engine": "perspecto",
                   "engine_params": {"scale": "thesis", "local_radius": 2, "flag_area": 3,
                                     "fear": {"own_fear_min": 0.2, "est_opp_fear_start": 0.3}}}
    assert restated(old_default) == ["scale", "local_radius", "flag_area", "fear.own_fear_min",
                                     "fear.est_opp_fear_start"]
    assert restated({"engine": "ucc", "engine_params": {"command": "x", "setup_time": 20, "quit_time": 2}}) == [
        "quit_time"]
    assert restated({"engine": "perspecto", "engine_params": {"fear": {"own_fear_min": 0.35}}}) == []


def test_the_default_profile_plays_with_the_built_in_perspecto_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a game sees: default.toml sets no engine value, so the default profile's engine is the built-in
    perspecto profile's, value for value (and follows it when the built-in values change)."""
    for var in [v for v in os.environ if v.upper().startswith("PERSPECTO_")]:
        monkeypatch.delenv(var)
    _settings, profiles = load_configuration(SHIPPED)
    default = profiles.profiles["default"]
    assert default.engine == "perspecto"
    engine = default.create_engine(seed=1)
    assert isinstance(engine, EngineMove)
    settings = engine.engine.settings
    assert settings.model_dump(exclude={"seed"}) == BUILTIN_ENGINE_SETTINGS["perspecto"].model_dump(exclude={"seed"})


# Each trial profile: the built-in perspecto with its issue's settings on (the built-in values, then the trial's).
TRIALS = {
    "issue45-trial": {  # the top pieces, the answer, flag defence by distance, the won endgame
        "top_piece_rank": (0, 9), "spy_guard": (False, True), "answer_force": (0.0, 8.0),
        "flag_defence_force": (0.0, 128.0), "ahead_trade_bias": (0.0, 0.1), "progress_force": (0.0, 8.0)},
    "issue47-trial": {  # depth from the clock
        "max_depth": (9, 24), "flee": (False, True), "skip_lost_captures": (False, True),
        "partial_share": (0.0, 0.25)},
    "issue47-fights": {  # ... and the whole board's fights in every area
        "max_depth": (9, 24), "flee": (False, True), "skip_lost_captures": (False, True),
        "partial_share": (0.0, 0.25), "fight_reach": (-1, 4)},
    "issue47-deep": {  # ... and one value beneath the full plies
        "max_depth": (9, 24), "flee": (False, True), "skip_lost_captures": (False, True),
        "partial_share": (0.0, 0.25), "fight_reach": (-1, 4), "pemm_plies": (0, 4)},
}


@pytest.mark.parametrize("name", sorted(TRIALS))
def test_a_trial_profile_is_the_built_in_perspecto_with_its_issues_settings_on(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An issue's settings on trial are off in the built-in profile and on in the trial profile the lab plays by
    name (``perspecto gauntlet --profile issue45-trial --baseline perspecto``), which no opponent is matched to."""
    for var in [v for v in os.environ if v.upper().startswith("PERSPECTO_")]:
        monkeypatch.delenv(var)
    _settings, profiles = load_configuration(SHIPPED)
    trial = profiles.profiles[name]
    assert trial.match == []
    engine = trial.create_engine(seed=1)
    assert isinstance(engine, EngineMove)
    built_in = BUILTIN_ENGINE_SETTINGS["perspecto"].model_dump(exclude={"seed"})
    assert {key: built_in[key] for key in TRIALS[name]} == {key: off for key, (off, _on) in TRIALS[name].items()}
    on = {key: value for key, (_off, value) in TRIALS[name].items()}
    assert engine.engine.settings.model_dump(exclude={"seed"}) == {**built_in, **on}
