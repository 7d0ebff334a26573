"""A private mosquitto for the MQTT tests: its own port, configuration, password file and persistence
under the test's tmp_path, started, stopped, killed and restarted on the same port; and a TCP proxy in
front of it whose connections can be cut and restored.

Test modules import the fixtures they use explicitly (``from tests.mqtt_broker import broker``). Without a
mosquitto binary the fixtures fail with a message saying so: CI installs it, and a silent skip would hide
that the MQTT transport went untested.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

MOSQUITTO_CANDIDATES = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto", "/usr/bin/mosquitto")


def mosquitto_binary() -> str:
    found = shutil.which("mosquitto") or next((p for p in MOSQUITTO_CANDIDATES if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail("the MQTT tests need the mosquitto broker (apt-get install mosquitto); it was not found "
                    "on PATH or in /usr/sbin", pytrace=False)
    return found


def mosquitto_passwd_binary() -> str:
    found = shutil.which("mosquitto_passwd") or next(
        (p for p in ("/usr/bin/mosquitto_passwd", "/usr/sbin/mosquitto_passwd") if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail("the credentials test needs mosquitto_passwd (package mosquitto)", pytrace=False)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
        return True
    return False


class Broker:
    """One mosquitto process on 127.0.0.1:``port`` (never the system's 1883), restartable on the same port
    with the same persistence file, so that queued QoS 1 messages and retained presence survive."""

    def __init__(self, directory: Path, *, users: dict[str, str] | None = None, tls: dict[str, Path] | None = None):
        self.directory = directory
        self.port = free_port()
        self.users = users
        self.tls = tls
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path = directory / "mosquitto.log"
        self.starts = 0
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "data").mkdir(exist_ok=True)
        self.config_path = directory / "mosquitto.conf"
        self.config_path.write_text(self._config())

    def _config(self) -> str:
        lines = [
            # Started as root, mosquitto would drop to user "mosquitto", who cannot read tmp_path: stay us.
            f"user {getpass.getuser()}",
            f"listener {self.port} 127.0.0.1",
            "persistence true",
            f"persistence_location {self.directory / 'data'}/",
            "autosave_interval 1",  # a killed broker loses at most a second of queued messages
            f"log_dest file {self.log_path}",
            "log_type error",
            "log_type warning",
            "log_type notice",
            "log_type information",
            "connection_messages true",
            "max_queued_messages 10000",
            "set_tcp_nodelay true",  # one small message at a time: no Nagle delays
        ]
        if self.users is not None:
            password_file = self.directory / "passwords"
            password_file.write_text("")
            for user, password in self.users.items():
                subprocess.run([mosquitto_passwd_binary(), "-b", str(password_file), user, password], check=True,
                               capture_output=True)
            lines += ["allow_anonymous false", f"password_file {password_file}"]
        else:
            lines.append("allow_anonymous true")
        if self.tls is not None:
            lines += [f"cafile {self.tls['ca']}", f"certfile {self.tls['cert']}", f"keyfile {self.tls['key']}"]
        return "\n".join(lines) + "\n"

    @property
    def url(self) -> str:
        return f"{'mqtts' if self.tls else 'mqtt'}://127.0.0.1:{self.port}"

    def start(self, timeout: float = 10.0) -> None:
        assert self.process is None or self.process.poll() is not None, "already running"
        self.process = subprocess.Popen(
            [mosquitto_binary(), "-c", str(self.config_path)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        self.starts += 1
        deadline = time.monotonic() + timeout
        while not port_open(self.port):
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode() if self.process.stderr else ""
                pytest.fail(f"mosquitto exited with {self.process.returncode}: {err}\n{self.log()}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"mosquitto did not listen on {self.port} within {timeout} s\n{self.log()}")
            time.sleep(0.02)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """SIGTERM: mosquitto saves its persistence file and exits; SIGKILL: it just dies."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(sig)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()

    def restart(self, sig: int = signal.SIGTERM, down_for: float = 0.0) -> None:
        self.stop(sig)
        time.sleep(down_for)
        self.start()

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""


class TcpProxy:
    """127.0.0.1:``port`` forwarded to the broker. ``cut`` drops every connection and refuses new ones
    (both ends see the link fail, as on a broken network); ``restore`` listens again on the same port."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.cuts = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port, reuse_address=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}

    async def cut(self) -> None:
        self.cuts += 1
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()  # a reset, not a polite close
        self._writers.clear()

    async def restore(self) -> None:
        await self.start()

    async def close(self) -> None:
        await self.cut()


@contextlib.contextmanager
def running_broker(directory: Path, **options: Any) -> Iterator[Broker]:
    """A started private broker (``Broker``'s options), killed at the end. Test modules wrap it in their
    own fixture (``tests/conftest.py`` is shared; these helpers are imported where they are used)."""
    instance = Broker(directory, **options)
    instance.start()
    try:
        yield instance
    finally:
        instance.stop(signal.SIGKILL)


@contextlib.asynccontextmanager
async def proxy_to(broker: Broker) -> AsyncIterator[TcpProxy]:
    instance = TcpProxy(broker.port)
    await instance.start()
    try:
        yield instance
    finally:
        await instance.close()


def make_test_ca(directory: Path) -> dict[str, Path]:
    """A CA and a server certificate for 127.0.0.1/localhost, made with the openssl command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.fail("the TLS test needs the openssl command to make its certificates", pytrace=False)
    directory.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (directory / n for n in ("ca.key", "ca.pem", "server.key", "server.csr",
                                                          "server.pem"))
    ext = directory / "ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def run(*args: str) -> None:
        subprocess.run([openssl, *args], check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out", str(ca), "-days", "2",
        "-subj", "/CN=perspecto test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(csr), "-subj", "/CN=127.0.0.1")
    run("x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial", "-out",
        str(cert), "-days", "2", "-extfile", str(ext))
    key.chmod(0o644)  # mosquitto may run as another user and must read it
    return {"ca": ca, "cert": cert, "key": key}


# --- bot processes and what they saw ------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


class BotProcesses:
    """``python -m bot.cli bot`` processes started by one test, each with its own state directory and log;
    all stopped at the end."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.processes: list[asyncio.subprocess.Process] = []

    def state_dir(self, token: str) -> Path:
        return self.root / f"state-{token}"

    def log_path(self, token: str) -> Path:
        return self.root / f"bot-{token}.log"

    async def start(self, token: str, *transport: str, seed: int = 1, extra: tuple[str, ...] = ()
                    ) -> asyncio.subprocess.Process:
        """``transport``: ``--mqtt URL`` or ``--connect HOST:PORT``. The bot is named ``bot-<token>``."""
        self.root.mkdir(parents=True, exist_ok=True)
        with open(self.log_path(token), "ab") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bot.cli", "bot", "--profile", "random", *transport, "--token", token,
                "--name", f"bot-{token}", "--seed", str(seed), "--state-dir", str(self.state_dir(token)),
                "--health-interval", "0.5", "--log-level", "info", *extra,
                cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "PERSPECTO_LOG_JSON": "1"},
                stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
            )
        self.processes.append(process)
        return process

    def events(self, token: str, event: str | None = None) -> list[dict[str, object]]:
        """The bot's JSON log lines (``event`` only, if given)."""
        lines = []
        for text in self.log_path(token).read_text().splitlines():
            with contextlib.suppress(ValueError):
                line = json.loads(text)
                if isinstance(line, dict) and (event is None or line.get("event") == event):
                    lines.append(line)
        return lines

    async def finished_journal(self, token: str, game_id: str, timeout: float = 10.0) -> Path:
        """The bot's journal of the game, once gameOver has reached it and the bot archived it."""
        done = self.state_dir(token) / "journal" / "done"
        deadline = time.monotonic() + timeout
        while not (paths := sorted(done.glob(f"{game_id}-*.jsonl"))):
            assert time.monotonic() < deadline, f"bot-{token} has no finished journal of {game_id}"
            await asyncio.sleep(0.05)
        [path] = paths
        return path

    async def stop(self) -> None:
        for process in self.processes:
            if process.returncode is None:
                process.kill()
            await process.wait()


def journal_moves(path: Path) -> list[str]:
    """The moves of a finished game as the bot's journal has them, in order: its own moves' results and
    the opponent's moves ("A4-A5"), each once, as the bot applied them."""
    moves = []
    for text in path.read_text().splitlines():
        line = json.loads(text)
        if line.get("method") in ("submitAIMoveResult", "submitOpponentMove") and "result" in line:
            moves.append(f"{line['params']['from']}-{line['params']['to']}")
    return moves
