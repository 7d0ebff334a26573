"""``perspecto bot``: run the bot and connect it to a host (a tournament server or ``perspecto host``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from bot import __version__
from bot.config import ProfileError
from bot.daemon.client import BotClient
from bot.daemon.health import health_path
from bot.daemon.journal import GameJournal
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import open_store, store_path
from bot.daemon.runtime import run
from bot.daemon.service import BotDaemon, Connector, DaemonOptions
from bot.logging_setup import configure_logging
from bot.profiles import load_configuration
from bot.settings import ConnectionSettings
from protocol.messages import NAME_MAX, PROTOCOL_VERSION, HelloParams
from protocol.mqtt import MqttChannel, MqttSettings, bot_id_from_name, check_id
from protocol.tcp import connect_with_backoff, parse_address

MQTT_PASSWORD_ENV = "PERSPECTO_MQTT_PASSWORD"
DEFAULT_LINK_TIMEOUT = 60.0


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "bot",
        help="connect the bot to a host and play the games it is given",
        description="Connect to a host speaking the Stratego AI API (docs/protocol.md) over TCP, or over MQTT "
        "(docs/mqtt.md), retrying with jittered backoff until it answers; play every game the host starts; "
        "reconnect if the connection drops and resume the game it was playing; exit when the host says "
        "goodbye. SIGTERM/SIGINT: finish the game (or hand it back after --shutdown-grace) and exit 0; a "
        "second signal exits at once. Writes a heartbeat for `perspecto health` (docs/operating.md).",
    )
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config); "
                   "command-line options win over it")
    p.add_argument("--profile", default=None,
                   help="play this profile against everyone (default: chosen per opponent from the profiles)")
    p.add_argument("--connect", default=None, metavar="HOST:PORT",
                   help="the host (default: connection.host and connection.port of the configuration)")
    add_mqtt_arguments(p, "use MQTT instead of TCP")
    p.add_argument("--bot-id", help="this bot's id in MQTT topics and its journal (default: from the name)")
    p.add_argument("--name", help="name to give the host (default: the profile's)")
    p.add_argument("--token", help="token, if the host asks for one")
    p.add_argument("--seed", type=int, help="seed for setups, engine and fallback moves")
    p.add_argument("--connect-attempts", type=int, default=None, help="attempts before giving up (default 50)")
    p.add_argument("--max-reconnects", type=int, default=None,
                   help="sessions in a row that may fail before hello (default 5)")
    p.add_argument("--idle-timeout", type=float, help="drop the connection after this many seconds of silence")
    p.add_argument("--state-dir", type=Path, help="heartbeat and journal (default $PERSPECTO_STATE_DIR, else "
                   "~/.local/state/perspecto)")
    p.add_argument("--no-journal", action="store_true", help="keep no journal: a restarted bot cannot resume")
    p.add_argument("--shutdown-grace", type=float, default=60.0,
                   help="seconds a signalled bot may take to finish its game (default %(default)s)")
    p.add_argument("--health-interval", type=float, default=5.0, help="seconds between heartbeats")
    p.add_argument("--log-level", default=None, help="debug, info, warning or error (default: the configuration's)")
    p.add_argument("--no-learn", action="store_true", help="keep nothing about opponents across games")
    p.set_defaults(func=main)


def add_mqtt_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """The broker options (``perspecto bot`` and ``perspecto host``)."""
    g = p.add_argument_group("MQTT (docs/mqtt.md)")
    g.add_argument("--mqtt", metavar="URL", help=f"{what}: mqtt[s]://[user[:password]@]broker[:port][/host-id]; "
                   f"the password may come from ${MQTT_PASSWORD_ENV}")
    g.add_argument("--mqtt-ca", type=Path, metavar="FILE", help="CA certificate(s) to verify the broker with")
    g.add_argument("--mqtt-cert", type=Path, metavar="FILE", help="client certificate (with --mqtt-key)")
    g.add_argument("--mqtt-key", type=Path, metavar="FILE", help="the client certificate's private key")
    g.add_argument("--mqtt-insecure", action="store_true", help="do not verify the broker's certificate")
    g.add_argument("--link-timeout", type=float, default=None,
                   help="seconds the other side may be out of reach before its session counts as lost (default: "
                   f"{DEFAULT_LINK_TIMEOUT:g}; for a host resuming games, its --resume-grace)")


def mqtt_settings(args: argparse.Namespace, **extra: Any) -> MqttSettings:
    """The broker settings of ``--mqtt`` and the TLS options (shared with ``perspecto host``); a user in
    the URL without a password takes it from $PERSPECTO_MQTT_PASSWORD (no secret on the command line)."""
    options: dict[str, Any] = {"ca_file": args.mqtt_ca, "cert_file": args.mqtt_cert, "key_file": args.mqtt_key,
                               "tls_insecure": args.mqtt_insecure or None, **extra}
    settings = MqttSettings.from_url(args.mqtt, **options)
    if settings.username and settings.password is None and os.environ.get(MQTT_PASSWORD_ENV):
        settings = MqttSettings.from_url(args.mqtt, password=os.environ[MQTT_PASSWORD_ENV], **options)
    return settings


def mqtt_from_settings(conn: ConnectionSettings, link_timeout: float) -> MqttSettings:
    """The broker settings of perspecto.toml's [connection] (the password from the environment)."""
    options: dict[str, Any] = {"ca_file": conn.tls_ca_file, "cert_file": conn.tls_cert_file,
                               "key_file": conn.tls_key_file, "tls_insecure": conn.tls_insecure or None,
                               "link_timeout": link_timeout}
    if conn.username:
        options["username"] = conn.username
    if conn.password is not None:
        options["password"] = conn.password.get_secret_value()
    return MqttSettings.from_url(conn.mqtt_url, **options)


def main(args: argparse.Namespace) -> int:
    # Every profile, engine parameters included, before connecting: a ConfigError exits 2 (bot/cli.py).
    settings, profiles = load_configuration(args.config)
    configure_logging(args.log_level or settings.logging.level, settings.logging.format)
    conn = settings.connection
    attempts = args.connect_attempts or conn.connect_attempts
    try:
        forced = args.profile or settings.profile
        profile = profiles.get(forced) if forced else profiles.select(None)
        name = args.name or settings.identity.name
        if not 1 <= len(name) <= NAME_MAX:  # the hello would be refused (and the bot would retry forever)
            raise ValueError(f"the bot's name must be 1 to {NAME_MAX} characters, not {len(name)}")
        if args.shutdown_grace < 0:
            raise ValueError(f"--shutdown-grace must be 0 or more, not {args.shutdown_grace:g}")
        bot_id = check_id(args.bot_id, "bot id") if args.bot_id else bot_id_from_name(name)
        connect: Connector
        link_timeout = args.link_timeout or DEFAULT_LINK_TIMEOUT
        if args.mqtt or (args.connect is None and conn.transport == "mqtt"):
            if args.mqtt:
                mqtt = mqtt_settings(args, link_timeout=link_timeout)
            else:
                mqtt = mqtt_from_settings(conn, link_timeout)
            transport = "mqtt"

            def connect() -> Any:
                return MqttChannel.open(mqtt, bot_id, name=name, connect_attempts=attempts)
        else:
            host, port = parse_address(args.connect) if args.connect else (conn.host, conn.port)
            transport = "tcp"

            def connect() -> Any:
                return connect_with_backoff(host, port, attempts=attempts)
    except (ProfileError, ValueError) as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        return 2
    state_dir = args.state_dir or settings.state.dir
    token = args.token or (settings.identity.token.get_secret_value() if settings.identity.token else None)
    # A damaged store is moved aside; one that cannot be opened (a full or read-only folder) is none: the bot
    # plays on without it and says so (bot/daemon/opponent_store.py).
    store, problem = (None, None) if args.no_learn or not settings.state.learn else open_store(store_path(state_dir))
    client = BotClient(profile, select_profile=None if forced else profiles.select, seed=args.seed,
                       memory=OpponentMemory(store, problem=problem))
    args.token = token
    args.max_reconnects = args.max_reconnects if args.max_reconnects is not None else conn.max_reconnects
    args.idle_timeout = args.idle_timeout or conn.idle_timeout
    args.share_thinking = settings.identity.share_thinking
    try:
        return run(_daemon(args, client, name, bot_id, connect, transport, state_dir))
    finally:
        if store is not None:
            store.close()


async def _daemon(
    args: argparse.Namespace, client: BotClient, name: str, bot_id: str, connect: Connector, transport: str,
    state_dir: Path,
) -> int:
    hello = HelloParams(name=name, version=__version__, protocol=PROTOCOL_VERSION, token=args.token)
    journal = None if args.no_journal else GameJournal(state_dir / "journal", bot_id)
    options = DaemonOptions(
        shutdown_grace=args.shutdown_grace, max_reconnects=args.max_reconnects, idle_timeout=args.idle_timeout,
        health_interval=args.health_interval, share_thinking=args.share_thinking,
    )
    daemon = BotDaemon(client, hello, connect, transport=transport, journal=journal,
                       health_path=health_path(state_dir), options=options)
    return await daemon.run()
