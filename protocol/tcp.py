"""The TCP transport: asyncio streams under the codec, with connect timeouts, write timeouts and
reconnection with jittered exponential backoff.

Framing and the line-length bound live in the codec (it reads raw chunks here, so a peer that never sends
a newline costs at most one bounded buffer); read timeouts are the endpoint's ``idle_timeout`` and the
per-call deadlines.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator

import structlog

from protocol.errors import ConnectFailed

log = structlog.get_logger()

READ_CHUNK = 64 * 1024
CLOSE_TIMEOUT = 0.5  # seconds a closing connection may take to flush its last bytes


class TcpChannel:
    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, write_timeout: float = 10.0
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._write_timeout = write_timeout
        peer = writer.get_extra_info("peername")
        self._peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)

    @property
    def peer(self) -> str:
        return self._peer

    @property
    def local_port(self) -> int:
        return int(self._writer.get_extra_info("sockname")[1])

    async def receive(self) -> bytes:
        try:
            return await self._reader.read(READ_CHUNK)
        except (ConnectionError, OSError):
            return b""

    async def send(self, data: bytes) -> None:
        if self._writer.is_closing():
            raise ConnectionResetError("the connection is closed")
        try:
            self._writer.write(data)
        except RuntimeError as exc:  # uvloop: the transport closed under us ("the handler is closed")
            raise ConnectionResetError(f"the connection is closed: {exc}") from exc
        # A peer that stops reading must not stall us forever: its buffers fill and the drain times out.
        async with asyncio.timeout(self._write_timeout):
            await self._writer.drain()

    async def close(self) -> None:
        if self._writer.is_closing():
            return
        self._writer.close()  # sends what is still buffered (a goodbye, say), then closes
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await self._writer.wait_closed()
        except TimeoutError:
            self._writer.transport.abort()  # a peer that does not read: do not wait for it
        except (ConnectionError, OSError):
            pass


async def open_channel(
    host: str, port: int, *, connect_timeout: float = 5.0, write_timeout: float = 10.0
) -> TcpChannel:
    async with asyncio.timeout(connect_timeout):
        reader, writer = await asyncio.open_connection(host, port)
    return TcpChannel(reader, writer, write_timeout=write_timeout)


def backoff_delays(
    *, base: float = 0.1, cap: float = 5.0, rng: random.Random | None = None
) -> Iterator[float]:
    """Exponential backoff with full jitter: the n-th delay is uniform in [0, min(cap, base * 2**n)],
    so many bots restarting together do not knock on the host in step."""
    rng = rng or random.Random()
    attempt = 0
    while True:
        yield rng.uniform(0, min(cap, base * 2**attempt))
        attempt = min(attempt + 1, 30)


async def connect_with_backoff(
    host: str,
    port: int,
    *,
    attempts: int | None = None,
    base_delay: float = 0.1,
    max_delay: float = 5.0,
    connect_timeout: float = 5.0,
    write_timeout: float = 10.0,
    rng: random.Random | None = None,
) -> TcpChannel:
    """Connect, retrying refused or timed-out attempts after jittered delays; ``attempts`` None: forever."""
    delays = backoff_delays(base=base_delay, cap=max_delay, rng=rng)
    attempt = 0
    while True:
        attempt += 1
        try:
            return await open_channel(
                host, port, connect_timeout=connect_timeout, write_timeout=write_timeout
            )
        except (OSError, TimeoutError) as exc:
            if attempts is not None and attempt >= attempts:
                raise ConnectFailed(
                    f"could not connect to {host}:{port} after {attempt} attempts: {exc}"
                ) from exc
            delay = next(delays)
            log.info("tcp.connect_retry", host=host, port=port, attempt=attempt, delay=round(delay, 3),
                     error=str(exc))
            await asyncio.sleep(delay)


async def serve(
    host: str,
    port: int,
    on_channel: Callable[[TcpChannel], Awaitable[None]],
    *,
    write_timeout: float = 10.0,
) -> asyncio.Server:
    """Listen; run ``on_channel`` for each connection and close the connection when it returns."""

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        channel = TcpChannel(reader, writer, write_timeout=write_timeout)
        try:
            await on_channel(channel)
        except Exception:
            log.exception("tcp.connection_failed", peer=channel.peer)
        finally:
            await channel.close()

    return await asyncio.start_server(accept, host, port)


def parse_address(text: str, default_host: str = "127.0.0.1") -> tuple[str, int]:
    """``HOST:PORT`` or ``PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = default_host, text
    try:
        number = int(port)
    except ValueError:
        raise ValueError(f"bad address {text!r} (expected HOST:PORT)") from None
    if not 0 <= number <= 65535:
        raise ValueError(f"bad address {text!r}: port out of range")
    return host.strip("[]") or default_host, number
