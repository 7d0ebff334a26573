"""Exactly once, in order, over at least once: the sans-I/O core of the MQTT transport.

QoS 1 delivers at least once, and a reconnecting client publishes again what it is not sure of.
``ReliableStream`` numbers each side's frames, drops duplicates, puts overtaken frames back in order and
keeps every frame until the other side acknowledges it; ``DownClock`` adds up how long the other side was
out of reach, so that move clocks can leave outages out. Neither does any I/O (docs/mqtt.md, Streams).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# Control frames of a stream (the ``ctl`` user property); a frame without one carries a JSON-RPC message.
CTL_CLOSE = "close"  # an ordered end of stream
CTL_ACK = "ack"  # a receipt alone, no payload
CTL_RESET = "reset"  # host to bot: that stream is over on the host's side (it ended or never existed)


@dataclass
class Frame:
    seq: int
    payload: bytes = b""
    ctl: str | None = None  # None: a JSON-RPC message; CTL_CLOSE: the end of the stream
    sent_at: float = 0.0


class ReliableStream:
    """One direction pair of a stream, sans-I/O: the sender numbers its frames from 1 and keeps each one
    until the receiver acknowledges it; the receiver acknowledges the highest number up to which it has
    everything, drops frames it already has (QoS 1 and our own resending both duplicate) and holds back
    frames that overtook a missing one."""

    MAX_HELD = 10_000

    def __init__(self) -> None:
        self._next_seq = 1
        self._unacked: dict[int, Frame] = {}  # in sending order
        self._held: dict[int, Frame] = {}
        self.received = 0  # every frame up to this number has been delivered
        self.peer_acked = 0
        self.sent = self.delivered = self.duplicates = self.retransmissions = 0

    def send(self, payload: bytes, ctl: str | None = None) -> Frame:
        frame = Frame(self._next_seq, payload, ctl)
        self._next_seq += 1
        self._unacked[frame.seq] = frame
        self.sent += 1
        return frame

    def acknowledge(self, ack: int) -> None:
        ack = min(ack, self._next_seq - 1)  # a receipt for something never sent is ignored
        if ack <= self.peer_acked:
            return
        self.peer_acked = ack
        for seq in [s for s in self._unacked if s <= ack]:
            del self._unacked[seq]

    def receive(self, frame: Frame) -> list[Frame]:
        """The frames now deliverable, in order (none for a duplicate or an early frame)."""
        if frame.seq <= self.received or frame.seq in self._held:
            self.duplicates += 1
            return []
        if frame.seq != self.received + 1:
            if len(self._held) < self.MAX_HELD:
                self._held[frame.seq] = frame
            return []
        ready = [frame]
        self.received = frame.seq
        while (following := self._held.pop(self.received + 1, None)) is not None:
            ready.append(following)
            self.received += 1
        self.delivered += len(ready)
        return ready

    def unacked(self) -> list[Frame]:
        return list(self._unacked.values())

    @property
    def all_acked(self) -> bool:
        return not self._unacked


class DownClock:
    """Seconds a link has been down, in all, so that move clocks can leave the outages out."""

    def __init__(self, down: bool = False) -> None:
        self._since: float | None = time.monotonic() if down else None
        self._total = 0.0

    @property
    def down(self) -> bool:
        return self._since is not None

    def set(self, down: bool) -> bool:
        """Record the state; True when it changed."""
        if down == self.down:
            return False
        now = time.monotonic()
        if down:
            self._since = now
        else:
            assert self._since is not None
            self._total += now - self._since
            self._since = None
        return True

    def current(self) -> float:
        """Seconds of the outage going on now (0 while up)."""
        return 0.0 if self._since is None else time.monotonic() - self._since

    def total(self) -> float:
        return self._total + self.current()
