"""``perspecto bot``: run the bot and connect it to a host (a tournament server or ``perspecto host``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rich.console import Console

from bot import __version__
from bot.client import BotClient
from bot.config import BotProfile, ProfileError, default_profile_name, get_profile
from bot.daemon import BotDaemon, Connector, DaemonOptions
from bot.health import default_state_dir, health_path
from bot.journal import GameJournal
from bot.logging_setup import configure_logging
from bot.runtime import run
from protocol.messages import PROTOCOL_VERSION, HelloParams
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
    p.add_argument("--profile", default=None, help="bot profile (default: perspecto if available, else random)")
    p.add_argument("--connect", default="127.0.0.1:7575", metavar="HOST:PORT", help="default %(default)s")
    add_mqtt_arguments(p, "use MQTT instead of TCP")
    p.add_argument("--bot-id", help="this bot's id in MQTT topics and its journal (default: from the name)")
    p.add_argument("--name", help="name to give the host (default: the profile's)")
    p.add_argument("--token", help="token, if the host asks for one")
    p.add_argument("--seed", type=int, help="seed for setups, engine and fallback moves")
    p.add_argument("--connect-attempts", type=int, default=50, help="attempts before giving up (default %(default)s)")
    p.add_argument("--max-reconnects", type=int, default=5,
                   help="sessions in a row that may fail before hello (default %(default)s)")
    p.add_argument("--idle-timeout", type=float, help="drop the connection after this many seconds of silence")
    p.add_argument("--state-dir", type=Path, help="heartbeat and journal (default $PERSPECTO_STATE_DIR, else "
                   "~/.local/state/perspecto)")
    p.add_argument("--no-journal", action="store_true", help="keep no journal: a restarted bot cannot resume")
    p.add_argument("--shutdown-grace", type=float, default=60.0,
                   help="seconds a signalled bot may take to finish its game (default %(default)s)")
    p.add_argument("--health-interval", type=float, default=5.0, help="seconds between heartbeats")
    p.add_argument("--log-level", default="info", help="debug, info, warning or error (default %(default)s)")
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


def main(args: argparse.Namespace) -> int:
    configure_logging(args.log_level)
    try:
        profile = get_profile(args.profile or default_profile_name())
        name = args.name or profile.name
        bot_id = check_id(args.bot_id, "bot id") if args.bot_id else bot_id_from_name(name)
        connect: Connector
        if args.mqtt:
            settings = mqtt_settings(args, link_timeout=args.link_timeout or DEFAULT_LINK_TIMEOUT)
            transport = "mqtt"

            def connect() -> Any:
                return MqttChannel.open(settings, bot_id, name=name, connect_attempts=args.connect_attempts)
        else:
            host, port = parse_address(args.connect)
            transport = "tcp"

            def connect() -> Any:
                return connect_with_backoff(host, port, attempts=args.connect_attempts)
    except (ProfileError, ValueError) as exc:
        Console(stderr=True).print(f"[red]{exc}[/red]")
        return 2
    state_dir = args.state_dir or default_state_dir()
    return run(_daemon(args, profile, name, bot_id, connect, transport, state_dir))


async def _daemon(
    args: argparse.Namespace, profile: BotProfile, name: str, bot_id: str, connect: Connector, transport: str,
    state_dir: Path,
) -> int:
    client = BotClient(profile, seed=args.seed)
    hello = HelloParams(name=name, version=__version__, protocol=PROTOCOL_VERSION, token=args.token)
    journal = None if args.no_journal else GameJournal(state_dir / "journal", bot_id)
    options = DaemonOptions(
        shutdown_grace=args.shutdown_grace, max_reconnects=args.max_reconnects, idle_timeout=args.idle_timeout,
        health_interval=args.health_interval,
    )
    daemon = BotDaemon(client, hello, connect, transport=transport, journal=journal,
                       health_path=health_path(state_dir), options=options)
    return await daemon.run()
