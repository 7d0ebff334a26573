"""The daemon's configuration: connection, identity, logging and state.

Sources, strongest first: values passed in code, environment variables (``PERSPECTO_`` prefix, ``__``
between nested names: ``PERSPECTO_CONNECTION__PORT=7600``), the file ``perspecto.toml`` in the
configuration directory, the defaults here. The directory is ``--config DIR``, else
``$PERSPECTO_CONFIG_DIR``, else ``./config``; one named by the option or the variable must exist.
Profiles live beside it (bot/profiles.py).

Every ``PERSPECTO_*`` variable must set something: a daemon setting, a profile field
(``PERSPECTO_PROFILES__...``) or one of the few variables read elsewhere (``ENV_NOT_SETTINGS``). A
misspelt one is an error naming the nearest valid name, never silently ignored, and a bad value is
reported as coming from the variable that set it, not from the file.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_core import ErrorDetails
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
)

from bot.daemon.health import STATE_DIR_ENV, default_state_dir
from protocol.validation import error_key, error_message

CONFIG_DIR_ENV = "PERSPECTO_CONFIG_DIR"
MAIN_FILE = "perspecto.toml"
ENV_PREFIX = "PERSPECTO_"
ENV_DELIMITER = "__"
# PERSPECTO_PROFILES__<PROFILE>__<FIELD>...: overrides of profile files, read by bot/profiles.py.
PROFILES_ENV_SECTION = "profiles"

# PERSPECTO_* variables that are not settings but are read elsewhere. Any other PERSPECTO_* variable
# must name a setting: one that names nothing is an error, since a misspelt variable would otherwise
# leave its setting at the file's value without a word.
ENV_NOT_SETTINGS = frozenset({
    CONFIG_DIR_ENV,                # this module: the configuration directory
    STATE_DIR_ENV,                 # bot/daemon/health.py: the state directory (heartbeat, journal, opponent store)
    "PERSPECTO_SETUPS_DIR",        # setups/library.py: directories of user setups
    "PERSPECTO_MQTT_PASSWORD",     # bot/commands/bot.py, bot/host/match.py: the broker password of --mqtt URLs
    "PERSPECTO_LOG_JSON",          # bot/logging_setup.py: JSON logs even on a terminal
    "PERSPECTO_VENV",              # scripts/bootstrap: where the venv goes
    "PERSPECTO_EXTRAS",            # scripts/bootstrap: the optional dependencies to install (dev, browser, plot)
    "PERSPECTO_BUILDAH_ROOT",      # scripts/build-image: buildah's storage root
    "PERSPECTO_GAME_CMD",          # scripts/build-image: the image self-check's game command
    "PERSPECTO_SKIP_IMAGE_BUILD",  # tests/test_dockerfile.py: do not build the image
    "PERSPECTO_UCC2012",           # bot/ucc/engine.py: the bin/ folder of the UCC 2012 programs (ucc-* profiles)
    "PERSPECTO_UCC2012_REFEREE",   # bot/commands/gauntlet_run/referee_route.py: the UCC 2012 referee stratego
    "PERSPECTO_BASELINES",         # bot/commands/gauntlet_run/paired_run.py: where --baseline REV's worktrees go
    "PERSPECTO_UCC2012_SOURCE",    # tests/test_gauntlet_referee.py: the sparring set to build (.ci/run sets it)
    "PERSPECTO_UCC_DIR",           # bot/ucc/engine.py: a lab worker's folder of UCC programs (docs/lab.md)
    "PERSPECTO_LAB_WORKER_IDENTITY",  # engine_ext/lab/cluster.py: a test hook, the identity a worker reports
    "PERSPECTO_WRITE_GOLDEN",      # tests/test_lab_records_golden.py: write the golden records again
})

# A key's path in a file: ("connection", "port"), ("engine_params", "fear", "own_fear_min").
Loc = tuple[str | int, ...]


class ConfigError(ValueError):
    """Configuration that does not validate; one line a problem, naming the file (or the environment
    variable) the value came from, the key and what is wrong with it."""


class ConfigDirMissing(ConfigError):
    """The configuration directory named by ``--config`` or ``$PERSPECTO_CONFIG_DIR`` is not there."""


class ConnectionSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transport: Literal["tcp", "mqtt"] = "tcp"
    host: str = "127.0.0.1"
    port: int = Field(7575, ge=1, le=65535)
    mqtt_url: str = Field("mqtt://127.0.0.1:1883", description="mqtt://[user[:password]@]host[:port] or mqtts://")
    username: str | None = None
    password: SecretStr | None = None
    tls_ca_file: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_insecure: bool = Field(False, description="accept a broker certificate that does not verify")
    connect_attempts: int = Field(50, ge=1)
    max_reconnects: int = Field(5, ge=0)
    idle_timeout: float | None = Field(None, gt=0)

    @field_validator("mqtt_url")
    @classmethod
    def _mqtt_url(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ValueError("must look like mqtt://host:port or mqtts://host:port")
        return value

    @field_validator("tls_ca_file", "tls_cert_file", "tls_key_file")
    @classmethod
    def _file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"no such file: {value}")
        return value


class IdentitySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("Perspecto", min_length=1, max_length=64, description="the name the host sees")
    token: SecretStr | None = Field(None, description="auth token, if the host asks for one")
    share_thinking: bool = Field(True, description="send what the engine thought of each move (depth, value, "
                                 "line, reasons) to a host of protocol 1.1 or later; false keeps it private")


class LoggingSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: Literal["debug", "info", "warning", "error"] = "info"
    format: Literal["auto", "console", "json"] = "auto"


class StateSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dir: Path = Field(default_factory=default_state_dir, description="health file, resume journal, opponent store")
    learn: bool = Field(True, description="keep what is learnt about each opponent and use it next game")


class DaemonSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", case_sensitive=False
    )

    connection: ConnectionSettings = Field(default_factory=ConnectionSettings)
    identity: IdentitySettings = Field(default_factory=IdentitySettings)
    logging: LoggingSettings = Field(default_factory=LoggingSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    profile: str | None = Field(None, description="play this profile against everyone (no per-opponent choice)")
    default_profile: str = Field("default", description="the profile for opponents no profile matches")

    def redacted(self) -> dict[str, Any]:
        """The settings as plain data with secrets masked (``config show``, logs)."""
        data = self.model_dump(mode="json")
        for section, key in (("connection", "password"), ("identity", "token")):
            if data[section][key]:
                data[section][key] = "***"
        return data


@dataclass(frozen=True)
class Problem:
    """One bad setting, said so that it can be found: where its value came from, its key, what is wrong."""

    source: str | None  # the file the key belongs in, or what stands for it ("profile 'x' (built in)")
    key: str  # dotted path in that file; "" for a variable that names no setting
    message: str
    env_var: str | None = None  # the environment variable for this key; None: no variable sets it
    from_env: bool = False  # the bad value came from env_var, not from the file

    def __str__(self) -> str:
        key = f"{self.key}: " if self.key else ""
        if self.from_env:
            over = f", over {self.source}" if self.source else ""
            return f"{self.env_var} (environment{over}): {key}{self.message}"
        hint = f" (set in the file or as {self.env_var})" if self.env_var else ""
        return f"{self.source}: {key}{self.message}{hint}"


def problems_text(problems: Iterable[Problem | str]) -> str:
    return "\n".join(str(p) for p in problems)


def env_name(prefix: str, loc: Loc) -> str | None:
    """The variable that sets ``loc`` under ``prefix`` (PERSPECTO_CONNECTION__PORT for ("connection",
    "port")); list items have none of their own (a variable sets the whole list)."""
    names: list[str] = []
    for part in loc:
        if not isinstance(part, str):
            break
        names.append(part)
    return prefix + ENV_DELIMITER.join(names).upper() if names else None


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``ConnectionSettings``, ``FearSettings | None``), if any."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def field_names_at(model: type[BaseModel] | None, loc: Loc) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (none when it is not a model)."""
    for part in loc:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return []
        model = _model_of(model.model_fields[part].annotation)
    return list(model.model_fields) if model is not None else []


def nearest(word: str, choices: Iterable[str]) -> str | None:
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


def _setter(loc: Loc, env_set: Mapping[Loc, str]) -> str | None:
    """The variable that set ``loc``: one that set it or a table holding it (the longest such path), else
    the only one that set something inside it."""
    for n in range(len(loc), 0, -1):
        if loc[:n] in env_set:
            return env_set[loc[:n]]
    inside = [var for path, var in env_set.items() if loc and path[: len(loc)] == loc]
    return inside[0] if len(inside) == 1 else None


def validation_problems(
    errors: Iterable[ErrorDetails],
    source: str,
    *,
    model: type[BaseModel] | None = None,
    loc_prefix: Loc = (),
    env_prefix: str | None = ENV_PREFIX,
    env_set: Mapping[Loc, str] | None = None,
) -> list[Problem]:
    """One ``Problem`` per pydantic error.

    ``source`` is the file; ``model`` the model validated (for the nearest valid name of a misspelt key);
    ``loc_prefix`` where the validated data sits in the file (``engine_params``); ``env_prefix`` the
    prefix of the variables that set the file's keys (None: none can); ``env_set`` the key paths (with
    ``loc_prefix``) the environment set, each with the variable that set it.
    """
    env_set = env_set or {}
    problems = []
    for err in errors:
        loc: Loc = (*loc_prefix, *err["loc"])
        key = error_key(loc) or "(top level)"
        setter = _setter(loc, env_set)
        msg = error_message(err)
        if err["type"] == "extra_forbidden" and err["loc"]:
            near = nearest(str(err["loc"][-1]), field_names_at(model, err["loc"][:-1]))
            if near is not None and setter is not None and env_prefix is not None:
                near = env_name(env_prefix, (*loc[:-1], near))
            msg = "not a known setting" + (f" (did you mean {near}?)" if near else " (misspelt?)")
        elif setter is None:
            # A check of several keys (move_time_soft > move_time_hard): say which the environment set.
            inside = sorted(var for path, var in env_set.items() if path[: len(loc)] == loc)
            if inside:
                msg += f" (with {', '.join(inside)} from the environment)"
        env_var = setter or (env_name(env_prefix, loc) if env_prefix is not None else None)
        problems.append(Problem(source, key, msg, env_var, from_env=setter is not None))
    return problems


def _settings_env_head(name: str) -> str | None:
    """The nearest valid first part of a variable's name after PERSPECTO_ (lower case)."""
    heads = [*DaemonSettings.model_fields, PROFILES_ENV_SECTION,
             *(n.removeprefix(ENV_PREFIX).lower() for n in ENV_NOT_SETTINGS)]
    return name if name in heads else nearest(name, heads)


def _nearest_env_name(parts: list[str]) -> str | None:
    """The valid variable nearest to PERSPECTO_ + "__".join(parts) (parts in lower case)."""
    head = _settings_env_head(parts[0])
    if head is None:
        return None
    names = [head]
    section = _model_of(DaemonSettings.model_fields[head].annotation) if head in DaemonSettings.model_fields else None
    if len(parts) > 1 and section is not None:
        key = parts[1] if parts[1] in section.model_fields else nearest(parts[1], section.model_fields)
        names += [key] if key else []
    elif len(parts) > 1 and head == PROFILES_ENV_SECTION:
        names += parts[1:]
    return ENV_PREFIX + ENV_DELIMITER.join(names).upper()


def settings_env(environ: Mapping[str, str]) -> tuple[dict[Loc, str], list[Problem]]:
    """The key paths the ``PERSPECTO_*`` variables set, each with its variable, and a ``Problem`` for each
    variable that names nothing (not a setting, not a profile override, not in ``ENV_NOT_SETTINGS``).

    A misspelt key inside a section (``PERSPECTO_CONNECTION__PROT``) is left to the validation, which
    names it as the variable that set an unknown key."""
    ignored = {name.upper() for name in ENV_NOT_SETTINGS}
    env_set: dict[Loc, str] = {}
    problems: list[Problem] = []
    for var in sorted(environ):
        upper = var.upper()
        if not upper.startswith(ENV_PREFIX) or upper in ignored:
            continue
        parts = upper.removeprefix(ENV_PREFIX).lower().split(ENV_DELIMITER)
        if parts[0] == PROFILES_ENV_SECTION and len(parts) > 1:
            continue  # a profile override: bot/profiles.py checks it
        field = DaemonSettings.model_fields.get(parts[0])
        if field is not None and (len(parts) == 1 or _model_of(field.annotation) is not None):
            env_set[tuple(parts)] = var
            continue
        if parts == [PROFILES_ENV_SECTION]:
            why = f"name a profile and a field, like {ENV_PREFIX}PROFILES__DEFAULT__SEED"
        else:
            near = _nearest_env_name(parts)
            why = "not a setting" + (f" (did you mean {near}?)" if near else " (see docs/configuration.md)")
        problems.append(Problem(None, "", why, env_var=var, from_env=True))
    return env_set, problems


def config_dir(explicit: str | Path | None = None) -> Path:
    """``explicit`` (``--config``), else ``$PERSPECTO_CONFIG_DIR``, else ``./config`` (whether it exists or not:
    ``checked_config_dir`` says)."""
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(CONFIG_DIR_ENV) or "config")


def checked_config_dir(explicit: str | Path | None = None) -> Path:
    """``config_dir``, refusing a directory that was named (by ``--config`` or ``$PERSPECTO_CONFIG_DIR``) and
    is not there: a typo there would run the bot on the built-in defaults. ./config may be missing: the
    built-in defaults apply."""
    path = config_dir(explicit)
    if explicit is not None:
        named = f"--config {explicit}"
    elif os.environ.get(CONFIG_DIR_ENV):
        named = f"{CONFIG_DIR_ENV}={os.environ[CONFIG_DIR_ENV]}"
    else:
        return path
    if not path.is_dir():
        raise ConfigDirMissing(f"{named}: {'not a directory' if path.exists() else 'no such directory'}")
    return path


def load_settings(directory: str | Path | None = None, **overrides: Any) -> DaemonSettings:
    """Read ``perspecto.toml`` (if present) under the environment and ``overrides``; every problem, of the
    file or of the ``PERSPECTO_*`` variables, is reported in one ``ConfigError``."""
    path = checked_config_dir(directory) / MAIN_FILE
    env_set, problems = settings_env(os.environ)

    class _WithFile(DaemonSettings):
        @classmethod
        def settings_customise_sources(
            cls,
            settings_cls: type[BaseSettings],
            init_settings: PydanticBaseSettingsSource,
            env_settings: PydanticBaseSettingsSource,
            dotenv_settings: PydanticBaseSettingsSource,
            file_secret_settings: PydanticBaseSettingsSource,
        ) -> tuple[PydanticBaseSettingsSource, ...]:
            return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=path))

    settings = None
    try:
        settings = _WithFile(**overrides)
    except ValidationError as exc:
        problems += validation_problems(exc.errors(include_url=False), str(path), model=DaemonSettings,
                                        env_set=env_set)
    except SettingsError as exc:  # a variable that sets a whole section with text that is not JSON
        setters = sorted(var for loc, var in env_set.items() if len(loc) == 1) or ["PERSPECTO_*"]
        problems.append(Problem(str(path), "", str(exc), env_var=", ".join(setters), from_env=True))
    except ValueError as exc:  # TOML syntax errors
        problems.append(Problem(str(path), "", f"not valid TOML: {exc}"))
    if problems or settings is None:
        raise ConfigError(problems_text(problems))
    return settings
