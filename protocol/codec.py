"""A sans-I/O JSON-RPC 2.0 codec for newline-delimited UTF-8 messages.

Bytes go in through ``feed`` and come out as typed events; outgoing messages come back as bytes that the
caller writes to whatever transport it has (TCP now, MQTT later). The codec owns the things every
transport needs the same way: line framing with a bounded length, request ids, matching answers to calls,
validation of params and results against the method tables, and error objects with the documented codes.
It never raises on input: whatever the peer sends becomes an event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from protocol.errors import (
    InvalidParams,
    InvalidRequest,
    LineTooLong,
    MethodNotFound,
    ParseError,
    RpcError,
)
from protocol.limits import DETAIL_MAX, ID_MAX, JSON_BYTES_PER_CHAR, clip
from protocol.messages import BOT_TO_HOST, HOST_TO_BOT, MethodSpec
from protocol.validation import validation_text

RequestId = int | str
DEFAULT_MAX_LINE = 64 * 1024


@dataclass(frozen=True)
class IncomingRequest:
    id: RequestId
    method: str
    params: BaseModel


@dataclass(frozen=True)
class IncomingNotification:
    method: str
    params: BaseModel


@dataclass(frozen=True)
class IncomingResult:
    id: RequestId
    method: str
    result: BaseModel


@dataclass(frozen=True)
class IncomingError:
    """The peer answered with an error object; ``id`` is None for an error about a line it could not read."""

    id: RequestId | None
    method: str | None
    error: RpcError


@dataclass(frozen=True)
class BadResult:
    """The peer answered our call with a result that does not validate."""

    id: RequestId
    method: str
    detail: str


@dataclass(frozen=True)
class LateResponse:
    """An answer to a call we stopped waiting for (``forget``); harmless, worth a log line."""

    id: RequestId
    method: str


@dataclass(frozen=True)
class InvalidMessage:
    """A line we could not accept. ``reply`` is True when the peer is owed an error answer (``error_bytes``
    builds it): a request, or a line too broken to tell (answered with id null)."""

    id: RequestId | None
    error: RpcError
    reply: bool


Event = (
    IncomingRequest | IncomingNotification | IncomingResult | IncomingError | BadResult | LateResponse
    | InvalidMessage
)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _is_id(value: object) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class Codec:
    """One connection's JSON-RPC state: ``incoming`` names the methods the peer may call on us,
    ``outgoing`` the methods we call on the peer."""

    def __init__(
        self,
        incoming: Mapping[str, MethodSpec],
        outgoing: Mapping[str, MethodSpec],
        *,
        max_line: int = DEFAULT_MAX_LINE,
    ) -> None:
        self.incoming = incoming
        self.outgoing = outgoing
        self.max_line = max_line
        self._buffer = bytearray()
        self._discarding = False  # inside an oversized line: drop bytes up to its newline
        self._next_id = 1
        self._pending: dict[RequestId, str] = {}
        self._forgotten: dict[RequestId, str] = {}

    # --- outgoing ------------------------------------------------------------------------------------

    def request(self, method: str, params: BaseModel) -> tuple[RequestId, bytes]:
        spec = self._outgoing_spec(method, params)
        if spec.is_notification:
            raise ValueError(f"{method} is a notification: use notification()")
        request_id = self._next_id
        self._next_id += 1
        self._pending[request_id] = method
        return request_id, self._encode(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": _dump(params)}
        )

    def notification(self, method: str, params: BaseModel) -> bytes:
        spec = self._outgoing_spec(method, params)
        if not spec.is_notification:
            raise ValueError(f"{method} is a request: use request()")
        return self._encode({"jsonrpc": "2.0", "method": method, "params": _dump(params)})

    def result_bytes(self, request_id: RequestId, result: BaseModel) -> bytes:
        return self._encode({"jsonrpc": "2.0", "id": request_id, "result": _dump(result)})

    def error_bytes(self, request_id: RequestId | None, error: RpcError) -> bytes:
        """The error answer; never raises and always fits the line bound (docs/protocol.md: an error never
        closes the connection). The message is clipped, and cut further (its data dropped) if the line
        bound is small; an incoming id is at most ID_MAX characters, so it always fits."""
        obj = error.to_object()
        obj["message"] = clip(error.message, DETAIL_MAX)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "error": obj}
        data = _dumps(message)
        if len(data) <= self.max_line:
            return data
        obj.pop("data", None)
        obj["message"] = ""
        room = (self.max_line - len(_dumps(message))) // JSON_BYTES_PER_CHAR
        obj["message"] = clip(error.message, max(room, 0))
        return _dumps(message)

    def forget(self, request_id: RequestId) -> None:
        """Stop waiting for an answer (the caller timed out); a late answer becomes ``LateResponse``."""
        method = self._pending.pop(request_id, None)
        if method is not None:
            self._forgotten[request_id] = method

    @property
    def pending(self) -> Mapping[RequestId, str]:
        return dict(self._pending)

    def _outgoing_spec(self, method: str, params: BaseModel) -> MethodSpec:
        spec = self.outgoing.get(method)
        if spec is None:
            raise ValueError(f"{method!r} is not a method this side sends")
        if not isinstance(params, spec.params):
            raise TypeError(f"{method} takes {spec.params.__name__}, not {type(params).__name__}")
        return spec

    def _encode(self, message: dict[str, Any]) -> bytes:
        data = _dumps(message)
        if len(data) > self.max_line:
            raise ValueError(f"outgoing message of {len(data)} bytes exceeds the {self.max_line}-byte limit")
        return data

    # --- incoming ------------------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Event]:
        """Take bytes as they arrive; return the events of every complete line."""
        return list(self.events(data))

    def events(self, data: bytes) -> Iterator[Event]:
        """``feed``, one event at a time: a reader that stops early (a peer over its budget) decodes no more
        of the chunk than it used. Once stopped early, the rest of the chunk is lost: only for a connection
        that is being closed."""
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            chunk = data[start:newline]
            start = newline + 1
            if self._discarding:
                self._discarding = False
                continue
            # The newline counts: a line of max_line bytes holds max_line - 1 bytes of message.
            if len(self._buffer) + len(chunk) + 1 > self.max_line:
                self._buffer.clear()
                yield self._too_long()
                continue
            self._buffer += chunk
            line = bytes(self._buffer)
            self._buffer.clear()
            event = self._decode_line(line)
            if event is not None:
                yield event
        rest = data[start:]
        if not self._discarding and rest:
            if len(self._buffer) + len(rest) + 1 > self.max_line:
                # Report now rather than at the newline, so a peer that never sends one still hears why.
                self._buffer.clear()
                self._discarding = True
                yield self._too_long()
            else:
                self._buffer += rest

    def eof(self) -> list[Event]:
        """The stream ended: a last line without its newline still counts."""
        if self._discarding or not self._buffer:
            self._discarding = False
            self._buffer.clear()
            return []
        line = bytes(self._buffer)
        self._buffer.clear()
        event = self._decode_line(line)
        return [event] if event is not None else []

    def _too_long(self) -> InvalidMessage:
        return InvalidMessage(None, LineTooLong(f"line longer than {self.max_line} bytes"), reply=True)

    def _decode_line(self, line: bytes) -> Event | None:
        line = line.strip()
        if not line:
            return None  # blank lines are keep-alives
        try:
            message = json.loads(line.decode("utf-8"), parse_constant=_reject_constant)
        except UnicodeDecodeError:
            return InvalidMessage(None, ParseError("line is not UTF-8"), reply=True)
        except (ValueError, RecursionError) as exc:
            return InvalidMessage(None, ParseError(f"not JSON: {exc}"), reply=True)
        if isinstance(message, list):
            return InvalidMessage(None, InvalidRequest("batches are not supported"), reply=True)
        if not isinstance(message, dict):
            return InvalidMessage(None, InvalidRequest("a message is a JSON object"), reply=True)
        if message.get("jsonrpc") != "2.0":
            msg_id = message.get("id")
            looks_like_response = "method" not in message and ("result" in message or "error" in message)
            short_id = _is_id(msg_id) and not (isinstance(msg_id, str) and len(msg_id) > ID_MAX)
            return InvalidMessage(
                msg_id if short_id else None, InvalidRequest('"jsonrpc" must be "2.0"'),
                reply=not looks_like_response,
            )
        if "method" in message:
            return self._decode_call(message)
        return self._decode_response(message)

    def _decode_call(self, message: dict[str, Any]) -> Event:
        has_id = "id" in message
        msg_id = message.get("id")
        method = message["method"]
        extra = set(message) - {"jsonrpc", "method", "params", "id"}
        if has_id and not _is_id(msg_id):
            return InvalidMessage(None, InvalidRequest("id must be a string or an integer"), reply=True)
        if isinstance(msg_id, str) and len(msg_id) > ID_MAX:  # the answer repeats it: it must be short
            return InvalidMessage(None, InvalidRequest(f"id longer than {ID_MAX} characters"), reply=True)
        reply_id: RequestId | None = msg_id if has_id else None
        if extra:
            return InvalidMessage(
                reply_id, InvalidRequest(clip(f"unexpected member(s): {', '.join(sorted(extra))}")), reply=has_id
            )
        if not isinstance(method, str):
            return InvalidMessage(reply_id, InvalidRequest("method must be a string"), reply=has_id)
        spec = self.incoming.get(method)
        if spec is None:
            return InvalidMessage(reply_id, MethodNotFound(clip(f"unknown method {method!r}")), reply=has_id)
        if has_id == spec.is_notification:
            kind = "a notification (no id)" if spec.is_notification else "a request (with an id)"
            return InvalidMessage(reply_id, InvalidRequest(f"{method} must be sent as {kind}"), reply=has_id)
        params = message.get("params", {})
        if not isinstance(params, dict):
            error = InvalidParams(f"{method}: params must be an object")
            return InvalidMessage(reply_id, error, reply=has_id)
        try:
            model = spec.params.model_validate(params)
        except ValidationError as exc:
            return InvalidMessage(
                reply_id, InvalidParams(clip(f"{method}: {validation_text(exc)}")), reply=has_id
            )
        if reply_id is None:
            return IncomingNotification(method, model)
        return IncomingRequest(reply_id, method, model)

    def _decode_response(self, message: dict[str, Any]) -> Event:
        msg_id = message.get("id")
        extra = set(message) - {"jsonrpc", "id", "result", "error"}
        has_result, has_error = "result" in message, "error" in message
        # Never answer a response: two peers must not trade errors about errors forever.
        bad_id = "id" not in message or (msg_id is not None and not _is_id(msg_id))
        if bad_id or extra or has_result == has_error:
            return InvalidMessage(None, InvalidRequest("malformed response"), reply=False)
        if msg_id is None:
            if not has_error:
                return InvalidMessage(None, InvalidRequest("a result needs an id"), reply=False)
            return IncomingError(None, None, self._error_object(message["error"]))
        method = self._pending.pop(msg_id, None)
        if method is None:
            late = self._forgotten.pop(msg_id, None)
            if late is not None:
                return LateResponse(msg_id, late)
            return InvalidMessage(msg_id, InvalidRequest(clip(f"answer to unknown id {msg_id!r}")), reply=False)
        if has_error:
            return IncomingError(msg_id, method, self._error_object(message["error"]))
        result_model = self.outgoing[method].result
        assert result_model is not None  # only requests are pending
        result = message["result"]
        if not isinstance(result, dict):
            return BadResult(msg_id, method, "result must be an object")
        try:
            return IncomingResult(msg_id, method, result_model.model_validate(result))
        except ValidationError as exc:
            return BadResult(msg_id, method, clip(validation_text(exc)))

    @staticmethod
    def _error_object(obj: object) -> RpcError:
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("code"), int)
            and not isinstance(obj.get("code"), bool)
            and isinstance(obj.get("message"), str)
        ):
            # Its message goes into our logs and forfeit details: clipped, like all text a peer sends.
            return RpcError.from_object(obj["code"], clip(obj["message"]), obj.get("data"))
        return InvalidRequest(f"malformed error object: {str(obj)[:200]}")


def _dumps(message: dict[str, Any]) -> bytes:
    # A peer can put a lone surrogate in a string with a JSON escape (\ud800), and we may repeat it: it goes
    # back out as that escape (six bytes, as JSON_BYTES_PER_CHAR allows), never as bytes UTF-8 has no place for.
    text = json.dumps(message, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def _dump(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def bot_codec(*, max_line: int = DEFAULT_MAX_LINE) -> Codec:
    """The bot's end: it receives the API calls and sends hello."""
    return Codec(HOST_TO_BOT, BOT_TO_HOST, max_line=max_line)


def host_codec(*, max_line: int = DEFAULT_MAX_LINE) -> Codec:
    """The host's end: it receives hello and sends the API calls."""
    return Codec(BOT_TO_HOST, HOST_TO_BOT, max_line=max_line)
