"""What one address may cost the host before its connections prove themselves (issue 46, item 7; docs/host.md,
threat model).

A *stranger* is a TCP connection whose hello has not been welcomed (no hello yet, a refused one, junk). Each
address has a token bucket of strangers: a new connection takes a token, and one whose hello is welcomed (an
accepted token, or a resumed seat) gives it back, so bots that prove themselves never spend their address's
allowance, however often they reconnect. A connection that finds its address's bucket empty is closed at once,
before a byte of it is read. What is left to strangers is ``rate`` connections a second per address after a
burst of ``burst``.

The log does not get a line per stranger either: ``StrangerLog`` counts the connections refused and dropped
per address and writes one line a second for each address that had any.

Both are sans-I/O with an injectable clock, so a test can check the policy without waiting.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

import structlog

from protocol.limits import Budget
from protocol.tcp import TcpChannel

log = structlog.get_logger()

Clock = Callable[[], float]


@dataclass
class _Bucket:
    tokens: float
    updated: float


class StrangerLimit:
    """Token buckets of new, unproven connections, one per address."""

    def __init__(self, rate: float, burst: float, *, clock: Clock = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"a stranger limit needs a rate above 0 and a burst of 1 or more, not {rate}, {burst}")
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def _refilled(self, address: str) -> _Bucket:
        now = self.clock()
        bucket = self._buckets.get(address)
        if bucket is None:
            bucket = self._buckets[address] = _Bucket(self.burst, now)
        else:
            bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
            bucket.updated = now
        return bucket

    def admit(self, address: str) -> bool:
        """A new connection from ``address``: True (a token taken) if its address may open one now."""
        bucket = self._refilled(address)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    def proved(self, address: str) -> None:
        """A connection of ``address`` was welcomed: the token it took is given back."""
        bucket = self._refilled(address)
        bucket.tokens = min(self.burst, bucket.tokens + 1)

    def forget_full(self) -> None:
        """Drop the buckets that have refilled (they are the same as none): memory stays with the addresses
        that cost something lately."""
        for address in [a for a in self._buckets if self._refilled(a).tokens >= self.burst]:
            del self._buckets[address]

    @property
    def addresses(self) -> int:
        return len(self._buckets)


class StrangerLog:
    """Per address, the strangers refused (closed at once by the limit) and dropped (admitted, never welcomed:
    no hello in time, a refused hello, junk past the stranger's budget), written as one line a second."""

    def __init__(self) -> None:
        self.refused: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()

    def flush(self, seconds: float = 1.0) -> int:
        """Write one line for each address counted since the last flush; returns the lines written."""
        addresses = sorted(set(self.refused) | set(self.dropped))
        for address in addresses:
            refused, dropped = self.refused[address], self.dropped[address]
            log.warning("host.strangers", peer=address, connections=refused + dropped, refused=refused,
                        dropped=dropped, seconds=seconds,
                        summary=f"{refused + dropped} connections from {address} refused/dropped in the last "
                        f"{seconds:g} s")
        self.refused.clear()
        self.dropped.clear()
        return len(addresses)


class StrangerBudget(Budget):
    """The budget of a connection that has not said hello yet, whose invalid messages are not logged one by one:
    the connection is counted in the host's ``StrangerLog`` instead. Once it is welcomed (``lift``), a bot's
    mistakes are logged as before (the first few, then one line saying the rest go unlogged)."""

    def may_log(self) -> bool:
        if not self.lifted:
            return False  # leaves ``unlogged`` at 0: no "further warnings unlogged" line either
        return super().may_log()


def address_of(peer: str) -> str:
    """The address part of a TCP peer's ``HOST:PORT`` (IPv6 hosts have colons of their own)."""
    host, sep, _port = peer.rpartition(":")
    return host if sep else peer


async def serve_admitted(
    host: str,
    port: int,
    admit: Callable[[str], bool],
    on_channel: Callable[[TcpChannel, str], Awaitable[None]],
    *,
    write_timeout: float = 10.0,
) -> asyncio.Server:
    """Listen like ``protocol.tcp.serve``, asking ``admit(address)`` of each connection as it is accepted: one it
    refuses is reset there and then, before a stream, a task or a byte read is spent on it (a flood of reconnecting
    strangers costs the event loop an accept and a reset each, not a connection's worth). An admitted one gets
    ``on_channel(channel, address)`` and is closed when that returns."""
    loop = asyncio.get_running_loop()

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        channel = TcpChannel(reader, writer, write_timeout=write_timeout)
        try:
            await on_channel(channel, address_of(channel.peer))
        except Exception:
            log.exception("tcp.connection_failed", peer=channel.peer)
        finally:
            await channel.close()

    class Gate(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            peer = transport.get_extra_info("peername")
            if not admit(str(peer[0]) if isinstance(peer, tuple) else str(peer)):
                cast(asyncio.Transport, transport).abort()  # a TCP server's transports are
                return
            # From here on, what asyncio.start_server would have made of it.
            protocol = asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), serve_one, loop=loop)
            transport.set_protocol(protocol)
            protocol.connection_made(transport)

    return await loop.create_server(Gate, host, port)
