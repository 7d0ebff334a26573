"""What both ends of an MQTT stream share (``StreamEnd``): the byte channel the endpoint reads and writes
(protocol/endpoint.py's ``Channel``), the reliable stream under it, receipts, resending, and the clock of
outages it reports through the typed link status (protocol/link.py's ``LinkStatus``)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from protocol.mqtt.broker_link import BrokerLink, Outgoing
from protocol.mqtt.settings import MqttSettings
from protocol.mqtt.stream import CTL_ACK, CTL_CLOSE, DownClock, Frame, ReliableStream
from protocol.mqtt.topics import Envelope, publish_properties

ACK_DELAY = 0.1  # seconds before a receipt goes out on its own (usually an answer carries it sooner)
WATCH_INTERVAL = 0.5  # seconds between checks for overdue acknowledgements and long outages


class StreamEnd:
    """What the bot's channel and the host's per-bot channels share: the reliable stream, the inbox the
    endpoint reads, receipts, resending, and the clock of outages. A ``Channel`` (protocol/endpoint.py) and
    a ``LinkStatus`` (protocol/link.py)."""

    def __init__(self, settings: MqttSettings, *, stream: str, out_topic: str) -> None:
        self.settings = settings
        self.stream = stream  # ours
        self.peer_stream: str | None = None
        self.out_topic = out_topic
        self.close_reason: str | None = None
        self.stale = 0  # messages for another stream (an earlier process, an earlier host) dropped
        self.reliable = ReliableStream()
        self.down = DownClock()
        self._inbox: asyncio.Queue[bytes] = asyncio.Queue()
        self._ended = False  # the end of stream is in the inbox
        self._closed = False  # closed on our side
        self._peer_closed = False
        self._ack_timer: asyncio.TimerHandle | None = None
        self._all_acked = asyncio.Event()
        self._all_acked.set()
        # Called with link_up whenever the peer goes out of reach or comes back (the bot's heartbeat).
        self.on_link_change: Callable[[bool], None] | None = None

    # the Channel protocol

    async def receive(self) -> bytes:
        data = await self._inbox.get()
        if not data:
            self._inbox.put_nowait(b"")  # every later receive sees the end too
        return data

    async def send(self, data: bytes) -> None:
        if self._ended or self._closed:
            raise ConnectionResetError(self.close_reason or "channel closed")
        self._publish(self.reliable.send(data.removesuffix(b"\n")))

    # the LinkStatus protocol (protocol/link.py); close_reason and on_link_change are attributes

    def link_down_seconds(self) -> float:
        """Seconds the peer has been out of reach since the channel opened (outages included)."""
        return self.down.total()

    def current_outage(self) -> float:
        """Seconds the outage going on now has lasted (0 while the peer is in reach)."""
        return self.down.current()

    @property
    def link_up(self) -> bool:
        """Whether the peer is in reach: our broker connection is up and the peer's presence is online."""
        return not self.down.down

    def stats(self) -> dict[str, Any]:
        r = self.reliable
        return {"sent": r.sent, "received": r.delivered, "duplicates": r.duplicates,
                "retransmissions": r.retransmissions, "stale": self.stale,
                "down_seconds": round(self.down.total(), 3)}

    # internals

    def _link(self) -> BrokerLink:
        raise NotImplementedError

    def _set_down(self, down: bool) -> None:
        if self.down.set(down) and self.on_link_change is not None:
            self.on_link_change(self.link_up)

    def _publish(self, frame: Frame, *, again: bool = False) -> None:
        if again:
            self.reliable.retransmissions += 1
        frame.sent_at = time.monotonic()
        self._cancel_ack()  # the frame carries the receipt
        self._all_acked.clear()
        props = publish_properties(self.stream, self.peer_stream, frame.seq, self.reliable.received, frame.ctl)
        self._link().publish(Outgoing(self.out_topic, frame.payload, props))

    def _republish_all(self) -> None:
        """Publish every unacknowledged frame again, and our receipt: the other side is back, and may have
        lost what the broker had not delivered yet."""
        for frame in self.reliable.unacked():
            self._publish(frame, again=True)
        self._send_ack()

    def _republish_overdue(self) -> None:
        limit = time.monotonic() - self.settings.retransmit_after
        overdue = [f for f in self.reliable.unacked() if f.sent_at < limit]
        for frame in overdue:
            self._publish(frame, again=True)

    def _schedule_ack(self) -> None:
        if self._ack_timer is None:
            self._ack_timer = asyncio.get_running_loop().call_later(ACK_DELAY, self._send_ack)

    def _cancel_ack(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None

    def _send_ack(self) -> None:
        self._ack_timer = None
        if self.reliable.received == 0:
            return
        props = publish_properties(self.stream, self.peer_stream, None, self.reliable.received, CTL_ACK)
        self._link().publish(Outgoing(self.out_topic, b"", props))

    def _on_envelope(self, envelope: Envelope) -> None:
        self.reliable.acknowledge(envelope.ack)
        if self.reliable.all_acked:
            self._all_acked.set()
        if envelope.seq is None:
            return
        ready = self.reliable.receive(Frame(envelope.seq, envelope.payload, envelope.ctl))
        self._schedule_ack()  # a duplicate too: the sender resends because it missed our receipt
        for frame in ready:
            if self._ended:
                break
            if frame.ctl == CTL_CLOSE:
                self._peer_closed = True
                self._end("the peer closed the stream")
            elif frame.ctl is None:
                self._inbox.put_nowait(frame.payload + b"\n")

    def _end(self, reason: str) -> None:
        if self._ended:
            return
        self._ended = True
        self.close_reason = self.close_reason or reason
        self._inbox.put_nowait(b"")

    async def _send_close(self) -> None:
        """An ordered end of stream, and a short wait for the receipts of everything sent."""
        if self._ended or self._peer_closed or self.peer_stream is None:
            return
        self._publish(self.reliable.send(b"", CTL_CLOSE))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.settings.close_timeout):
                await self._all_acked.wait()
