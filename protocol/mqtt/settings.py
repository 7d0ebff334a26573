"""Where the broker is and how to talk to it: ``MqttSettings`` and its URL form, and the ids that name hosts
and bots in topics and client ids (docs/mqtt.md, Broker URL and settings)."""

from __future__ import annotations

import re
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

ID_PATTERN = r"^[A-Za-z0-9_.-]{1,64}$"
_ID = re.compile(ID_PATTERN)
DEFAULT_PORT, DEFAULT_TLS_PORT = 1883, 8883


class MqttSettings(BaseModel):
    """Where the broker is and how to talk to it; ``from_url`` reads the usual URL form."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=1, le=65535)
    host_id: str = Field(default="local", pattern=ID_PATTERN, description="the host's topic namespace")
    username: str | None = None
    password: SecretStr | None = None
    tls: bool = False
    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    tls_insecure: bool = Field(default=False, description="do not verify the broker's certificate (tests only)")
    keepalive: int = Field(default=10, ge=1, le=65535, description="seconds; a dead link shows in 1.5 times this")
    session_expiry: int = Field(default=3600, ge=0, description="seconds the broker keeps a session for us")
    link_timeout: float = Field(default=60.0, gt=0, description="seconds the peer may be unreachable")
    connect_timeout: float = Field(default=10.0, gt=0)
    retry_base: float = Field(default=0.1, gt=0)
    retry_cap: float = Field(default=5.0, gt=0)
    retransmit_after: float = Field(default=5.0, gt=0, description="resend what is unacknowledged this long")
    close_timeout: float = Field(default=2.0, ge=0, description="seconds a closing channel waits for receipts")
    slow_round_trip: float = Field(default=0.02, ge=0, description="seconds; a bot warns when the round trip "
                                   "through the broker, measured at connect, is longer (0: no warning)")

    @model_validator(mode="after")
    def _tls_files(self) -> MqttSettings:
        if (self.cert_file is None) != (self.key_file is None):
            raise ValueError("a client certificate needs both cert_file and key_file")
        return self

    @classmethod
    def from_url(cls, url: str, **overrides: Any) -> MqttSettings:
        """``mqtt://[user[:password]@]host[:port][/host-id][?ca=F&cert=F&key=F&insecure=1]``, or
        ``mqtts://`` for TLS (default port 8883). ``overrides`` win over the URL."""
        parts = urlsplit(url)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            raise ValueError(f"bad MQTT URL {redact_url(url)!r} (expected mqtt://host:port or mqtts://host:port)")
        try:
            port = parts.port
        except ValueError:
            raise ValueError(f"bad MQTT URL {redact_url(url)!r}: bad port") from None
        tls = parts.scheme == "mqtts"
        values: dict[str, Any] = {"host": parts.hostname, "tls": tls,
                                  "port": port or (DEFAULT_TLS_PORT if tls else DEFAULT_PORT)}
        if parts.username:
            values["username"] = unquote(parts.username)
        if parts.password is not None:
            values["password"] = unquote(parts.password)
        path = parts.path.strip("/")
        if path:
            values["host_id"] = path
        query = {key: items[-1] for key, items in parse_qs(parts.query).items()}
        for key, field in (("ca", "ca_file"), ("cert", "cert_file"), ("key", "key_file")):
            if key in query:
                values[field] = Path(query.pop(key))
                values["tls"] = True
        if "insecure" in query:
            values["tls_insecure"] = query.pop("insecure").lower() in ("1", "true", "yes")
        for key in ("keepalive", "session_expiry", "link_timeout", "slow_round_trip"):
            if key in query:
                values[key] = query.pop(key)
        if query:
            raise ValueError(f"unknown MQTT URL parameter(s): {', '.join(sorted(query))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls.model_validate(values)

    @property
    def url(self) -> str:
        """The broker's URL without the password, for banners and logs."""
        user = f"{self.username}@" if self.username else ""
        return f"{'mqtts' if self.tls else 'mqtt'}://{user}{self.host}:{self.port}/{self.host_id}"

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.tls:
            return None
        context = ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)
        if self.cert_file is not None and self.key_file is not None:
            context.load_cert_chain(str(self.cert_file), str(self.key_file))
        if self.tls_insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context


def redact_url(url: str) -> str:
    return re.sub(r"(://[^:/@\s]+):[^@\s]*@", r"\1:***@", url)


def check_id(value: str, what: str = "id") -> str:
    if not _ID.match(value):
        raise ValueError(f"bad {what} {value!r}: 1-64 characters of A-Z a-z 0-9 _ . -")
    return value


def bot_id_from_name(name: str) -> str:
    """A topic-safe bot id from a hello name."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)[:64] or "bot"
