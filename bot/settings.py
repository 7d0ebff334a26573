"""The daemon's configuration: connection, identity, logging and state.

Sources, strongest first: values passed in code, environment variables (``PERSPECTO_`` prefix, ``__``
between nested names: ``PERSPECTO_CONNECTION__PORT=7600``), the file ``perspecto.toml`` in the
configuration directory, the defaults here. The directory is ``--config DIR``, else
``$PERSPECTO_CONFIG_DIR``, else ``./config``. Profiles live beside it (bot/profiles.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from bot.health import default_state_dir

CONFIG_DIR_ENV = "PERSPECTO_CONFIG_DIR"
MAIN_FILE = "perspecto.toml"
ENV_PREFIX = "PERSPECTO_"


class ConfigError(ValueError):
    """Configuration that does not validate; the message names the file, the key and the problem."""


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


def config_dir(explicit: str | Path | None = None) -> Path:
    if explicit is not None:
        return Path(explicit)
    return Path(os.environ.get(CONFIG_DIR_ENV, "config"))


def format_validation_error(exc: ValidationError, source: str) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        key = ".".join(str(p) for p in err["loc"]) or "(top level)"
        env = ENV_PREFIX + "__".join(str(p) for p in err["loc"]).upper()
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "not a known setting (misspelt?)"
        lines.append(f"{source}: {key}: {msg} (set in the file or as {env})")
    return "\n".join(lines)


def load_settings(directory: str | Path | None = None, **overrides: Any) -> DaemonSettings:
    """Read ``perspecto.toml`` (if present) under the environment and ``overrides``."""
    path = config_dir(directory) / MAIN_FILE

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

    try:
        return _WithFile(**overrides)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc, str(path))) from None
    except ValueError as exc:  # TOML syntax errors
        raise ConfigError(f"{path}: {exc}") from None
