"""One side of a JSON-RPC connection over any byte channel: calls with deadlines, ordered request handling.

The transport is a ``Channel`` (receive/send/close of raw bytes): TCP streams in protocol/tcp.py, an
in-memory pipe here for tests, an MQTT topic pair later. Requests from the peer are handled one at a time
in arrival order, because every API call changes the receiver's game state; answers to our own calls are
matched while a request is being handled, so neither side can deadlock the other.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

import structlog
from pydantic import BaseModel

from protocol import errors
from protocol.codec import (
    BadResult,
    Codec,
    IncomingError,
    IncomingNotification,
    IncomingRequest,
    IncomingResult,
    InvalidMessage,
    LateResponse,
    RequestId,
)
from protocol.limits import Budget

log = structlog.get_logger()

# Seconds the notifications read before a connection's end may take to be handled after it.
_DRAIN_SECONDS = 5.0
# Events decoded from one received chunk between two yields to the event loop: a chunk of a thousand short
# lines must not hold every other connection up while it is read.
_EVENTS_BETWEEN_YIELDS = 32


class Channel(Protocol):
    """A bidirectional byte stream."""

    @property
    def peer(self) -> str: ...

    async def receive(self) -> bytes:
        """The next bytes that arrived; ``b""`` once the stream has ended."""
        ...

    async def send(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class RequestHandler(Protocol):
    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        """Answer a call; raise ``RpcError`` to answer with that error."""
        ...

    async def handle_notification(self, method: str, params: BaseModel) -> None: ...


class Endpoint:
    def __init__(
        self,
        channel: Channel,
        codec: Codec,
        handler: RequestHandler | None = None,
        *,
        idle_timeout: float | None = None,
        budget: Budget | None = None,
    ) -> None:
        self.channel = channel
        self.codec = codec
        self.handler = handler
        self.idle_timeout = idle_timeout  # close when the peer sends nothing for this long
        # What the peer may cost before it is trusted (protocol/limits.py); past it the connection is
        # dropped. None: no bound (our own peer: the bot's host, the tests' pipes).
        self.budget = budget
        self.close_reason: str | None = None
        self._calls: dict[RequestId, asyncio.Future[BaseModel]] = {}
        self._inbox: asyncio.Queue[IncomingRequest | IncomingNotification | None] = asyncio.Queue()
        self._send_lock = asyncio.Lock()
        self._closed = asyncio.Event()
        self._handling_request = False

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def run(self) -> None:
        """Serve the connection until it ends; never raises for anything the peer does."""
        worker = asyncio.create_task(self._handle_inbox())
        try:
            await self._read_loop()
        except Exception as exc:
            # Our bug, not the peer's doing (that is an event): the connection ends, and the log says why
            # rather than leaving a hang-up without a word.
            log.exception("rpc.connection_failed", peer=self.channel.peer)
            self.close_reason = self.close_reason or f"failed: {exc!r}"
        finally:
            self._inbox.put_nowait(None)
            await self._shut(self.close_reason or "connection closed")
            # A request being handled when the connection drops cannot be answered any more: it is
            # cancelled, and queued ones are dropped. Notifications read before the end (a goodbye, a
            # gameOver) need no answer and still say what the peer meant: the worker handles them,
            # within a bound so a stuck handler cannot hold the connection's end up.
            task = asyncio.current_task()
            if self._handling_request or (task is not None and task.cancelling()):
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker
                if task is None or not task.cancelling():  # being cancelled ourselves: drop the rest
                    worker = asyncio.create_task(self._handle_inbox())  # the notifications still queued
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(_DRAIN_SECONDS):
                    await asyncio.shield(worker)
            worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await worker

    async def call(self, method: str, params: BaseModel, *, timeout: float | None = None) -> BaseModel:
        """Send a request and wait for its result; raises RpcError (the peer's error), errors.BadResult,
        CallTimeout or ConnectionClosed."""
        if self.closed:
            raise errors.ConnectionClosed(self.close_reason or "connection closed")
        request_id, data = self.codec.request(method, params)
        future: asyncio.Future[BaseModel] = asyncio.get_running_loop().create_future()
        self._calls[request_id] = future
        try:
            await self._send(data)
            try:
                async with asyncio.timeout(timeout):
                    return await future
            except TimeoutError:
                self.codec.forget(request_id)
                raise errors.CallTimeout(method, timeout or 0.0) from None
        finally:
            self._calls.pop(request_id, None)

    async def notify(self, method: str, params: BaseModel) -> None:
        await self._send(self.codec.notification(method, params))

    async def close(self, reason: str = "closed locally") -> None:
        if self.close_reason is None:
            self.close_reason = reason
        await self._shut(reason)

    # --- internals -----------------------------------------------------------------------------------

    async def _send(self, data: bytes) -> None:
        if self.closed:
            raise errors.ConnectionClosed(self.close_reason or "connection closed")
        try:
            async with self._send_lock:
                await self.channel.send(data)
        except (OSError, TimeoutError) as exc:
            await self.close(f"send failed: {exc!r}")
            raise errors.ConnectionClosed(f"send failed: {exc!r}") from exc

    async def _shut(self, reason: str) -> None:
        if self._closed.is_set():
            return
        self._closed.set()
        for future in self._calls.values():
            if not future.done():
                future.set_exception(errors.ConnectionClosed(reason))
        with contextlib.suppress(Exception):
            await self.channel.close()

    async def _read_loop(self) -> None:
        while not self.closed:
            try:
                async with asyncio.timeout(self.idle_timeout):
                    data = await self.channel.receive()
            except TimeoutError:
                self.close_reason = self.close_reason or f"nothing received for {self.idle_timeout:g} s"
                return
            except OSError as exc:
                self.close_reason = self.close_reason or f"receive failed: {exc!r}"
                return
            if self._over_budget(bytes=len(data)):
                return
            events = self.codec.events(data) if data else iter(self.codec.eof())
            for count, event in enumerate(events, 1):
                if self._over_budget(messages=1, errors=isinstance(event, InvalidMessage)):
                    return
                await self._dispatch(event)
                if count % _EVENTS_BETWEEN_YIELDS == 0:
                    await asyncio.sleep(0)
            if not data:
                self.close_reason = self.close_reason or "peer closed the connection"
                return

    def _over_budget(self, *, bytes: int = 0, messages: int = 0, errors: int = 0) -> bool:
        """Spend the peer's budget; past it, say why (once) and end the read loop."""
        if self.budget is None:
            return False
        over = self.budget.spend(bytes=bytes, messages=messages, errors=errors)
        if over is None:
            return False
        self.close_reason = self.close_reason or f"dropped: {over}"
        log.warning("rpc.dropped", peer=self.channel.peer, reason=over)
        return True

    def _may_log(self) -> bool:
        """Whether one more warning about what the peer sent may go to the log: a peer's mistakes cost our
        log a bounded number of lines, then one line saying that the rest go unlogged."""
        if self.budget is None or self.budget.may_log():
            return True
        if self.budget.unlogged == 1:
            log.warning("rpc.further_warnings_unlogged", peer=self.channel.peer)
        return False

    async def _dispatch(self, event: object) -> None:
        match event:
            case IncomingRequest() | IncomingNotification():
                self._inbox.put_nowait(event)
            case IncomingResult(id=request_id, result=result):
                self._settle(request_id, result=result)
            case IncomingError(id=request_id, error=error):
                if request_id is None:  # the peer could not read one of our lines
                    if self._may_log():
                        log.warning(
                            "rpc.peer_error", peer=self.channel.peer, code=error.code, message=error.message
                        )
                else:
                    self._settle(request_id, error=error)
            case BadResult(id=request_id, method=method, detail=detail):
                self._settle(request_id, error=errors.BadResult(method, detail))
            case LateResponse(id=request_id, method=method):
                log.info("rpc.late_answer", peer=self.channel.peer, id=request_id, method=method)
            case InvalidMessage(id=request_id, error=error, reply=reply):
                if self._may_log():
                    log.warning(
                        "rpc.invalid_message", peer=self.channel.peer, code=error.code, message=error.message
                    )
                if reply:
                    with contextlib.suppress(errors.ConnectionClosed):
                        await self._send(self.codec.error_bytes(request_id, error))

    def _settle(
        self, request_id: RequestId, *, result: BaseModel | None = None, error: Exception | None = None
    ) -> None:
        future = self._calls.get(request_id)
        if future is None or future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    async def _handle_inbox(self) -> None:
        while (item := await self._inbox.get()) is not None:
            if isinstance(item, IncomingNotification):
                await self._notification(item)
            elif not self.closed:  # a request queued when the connection ended cannot be answered
                self._handling_request = True
                try:
                    await self._request(item)
                finally:
                    self._handling_request = False

    async def _notification(self, item: IncomingNotification) -> None:
        if self.handler is None:
            return
        try:
            await self.handler.handle_notification(item.method, item.params)
        except Exception:
            log.exception("rpc.notification_failed", method=item.method)

    async def _request(self, item: IncomingRequest) -> None:
        try:
            if self.handler is None:
                raise errors.MethodNotFound(f"{item.method} is not served here")
            result = await self.handler.handle_request(item.method, item.params)
            try:
                reply = self.codec.result_bytes(item.id, result)
            except ValueError as exc:  # over the line bound: the peer still gets an answer, and we say why
                log.error("rpc.result_too_long", method=item.method, error=str(exc))
                raise errors.InternalError(f"{item.method}: the answer would exceed the line bound") from None
        except errors.RpcError as exc:
            reply = self.codec.error_bytes(item.id, exc)
        except Exception as exc:
            # A bug in a handler answers this one call with an error; the connection and its state live on.
            log.exception("rpc.handler_failed", method=item.method)
            reply = self.codec.error_bytes(item.id, errors.InternalError(f"{item.method} failed: {exc!r}"))
        with contextlib.suppress(errors.ConnectionClosed):
            await self._send(reply)


class MemoryChannel:
    """One end of an in-process byte pipe: the transport of the unit tests."""

    def __init__(self, inbox: asyncio.Queue[bytes], outbox: asyncio.Queue[bytes], peer: str) -> None:
        self._inbox = inbox
        self._outbox = outbox
        self._peer = peer
        self._closed = False

    @property
    def peer(self) -> str:
        return self._peer

    async def receive(self) -> bytes:
        if self._closed:
            return b""
        data = await self._inbox.get()
        if not data:
            self._closed = True
        return data

    async def send(self, data: bytes) -> None:
        if self._closed:
            raise ConnectionResetError("memory channel closed")
        if data:
            self._outbox.put_nowait(data)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._outbox.put_nowait(b"")  # the peer reads end of stream
            self._inbox.put_nowait(b"")  # and so does our own pending receive


def memory_pipe() -> tuple[MemoryChannel, MemoryChannel]:
    a_to_b: asyncio.Queue[bytes] = asyncio.Queue()
    b_to_a: asyncio.Queue[bytes] = asyncio.Queue()
    return MemoryChannel(b_to_a, a_to_b, "memory:b"), MemoryChannel(a_to_b, b_to_a, "memory:a")
