"""What a channel may tell about the reach of its peer, for code that works over any transport.

A TCP connection is there or it is gone. A channel through a broker (protocol/mqtt/) outlives outages: the
peer can be out of reach for a while and come back, and the stream can end for a reason of its own. Such a
channel implements ``LinkStatus``; generic code (the bot's daemon, the host) asks for it with
``link_status(channel)`` and gets ``None`` for channels that cannot tell, without importing any transport.

``call_pausing_outages`` is the call whose deadline stands still while the peer is out of reach: a broker
outage is nobody's move time.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from protocol import errors
from protocol.endpoint import Endpoint


@runtime_checkable
class LinkStatus(Protocol):
    """A channel whose peer can be out of reach for a while and come back (docs/mqtt.md, Outages)."""

    # Why the stream ended, in the transport's words (None while it has not); more than the endpoint knows.
    close_reason: str | None
    # Called with ``link_up`` whenever the peer goes out of reach or comes back; whoever owns the channel
    # sets it.
    on_link_change: Callable[[bool], None] | None

    @property
    def link_up(self) -> bool:
        """Whether the peer is in reach now."""
        ...

    def link_down_seconds(self) -> float:
        """Seconds the peer has been out of reach since the channel opened, all outages together."""
        ...

    def current_outage(self) -> float:
        """Seconds the outage going on now has lasted (0 while the peer is in reach)."""
        ...


def link_status(channel: object) -> LinkStatus | None:
    """The channel's link status, or None for a channel that cannot tell (TCP, in-memory pipes)."""
    return channel if isinstance(channel, LinkStatus) else None


def link_up(channel: object) -> bool:
    """Whether the channel's peer is in reach (True for channels that cannot tell: they are up while open)."""
    status = link_status(channel)
    return status is None or status.link_up


def outage_seconds(channel: object) -> float:
    """Seconds the channel's peer has been out of reach so far (0 for channels that cannot tell)."""
    status = link_status(channel)
    return status.link_down_seconds() if status is not None else 0.0


def current_outage(channel: object) -> float:
    """Seconds the channel's peer has been out of reach without a break until now (0 if it cannot tell)."""
    status = link_status(channel)
    return status.current_outage() if status is not None else 0.0


def close_reason(channel: object) -> str | None:
    """What ended the channel's stream, when its transport says (None otherwise)."""
    status = link_status(channel)
    return status.close_reason if status is not None else None


async def call_pausing_outages(
    endpoint: Endpoint, method: str, params: BaseModel, timeout: float
) -> BaseModel:
    """``endpoint.call`` with a deadline that stands still while the channel reports its peer out of reach
    (a ``LinkStatus``, the MQTT channels): a broker outage is nobody's move time. Channels without a link
    status (TCP) get the plain call."""
    status = link_status(endpoint.channel)
    if status is None:
        return await endpoint.call(method, params, timeout=timeout)
    down = status.link_down_seconds
    call = asyncio.ensure_future(endpoint.call(method, params, timeout=None))
    started, paused_before = time.monotonic(), down()
    try:
        while True:
            remaining = timeout - (time.monotonic() - started - (down() - paused_before))
            if remaining <= 0:
                raise errors.CallTimeout(method, timeout)
            # Wake up at least every second: an outage that began meanwhile moves the deadline.
            done, _ = await asyncio.wait({call}, timeout=min(remaining, 1.0))
            if done:
                return call.result()
    finally:
        if not call.done():
            call.cancel()
            with contextlib.suppress(asyncio.CancelledError, errors.ProtocolError):
                await call
