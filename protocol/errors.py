"""The protocol's error tree and the JSON-RPC error codes it documents (docs/protocol.md).

Every error object on the wire is an ``RpcError``: a handler raises one to answer a request with it, and
``Endpoint.call`` raises one (of the subclass matching the code) when the peer answered with it. The other
branches say why a call produced no usable answer at all: the connection closed, the deadline passed, or
the peer's result did not validate.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar


class ErrorCode(IntEnum):
    # JSON-RPC 2.0's own codes.
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    # The Stratego AI API's codes (the implementation-defined range -32000..-32099).
    LINE_TOO_LONG = -32001
    OUT_OF_ORDER = -32002
    ILLEGAL_MOVE = -32003
    NO_LEGAL_MOVE = -32004
    UNSUPPORTED_VERSION = -32010
    AUTH_FAILED = -32011
    RESUME_REFUSED = -32012


class ProtocolError(Exception):
    """Base of every error the protocol package raises."""


class RpcError(ProtocolError):
    """A JSON-RPC error object: ``code``, ``message`` and optional ``data``."""

    default_code: ClassVar[int] = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, *, code: int | None = None, data: Any = None) -> None:
        super().__init__(message)
        self.code = int(code if code is not None else self.default_code)
        self.message = message
        self.data = data

    def to_object(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            obj["data"] = self.data
        return obj

    @classmethod
    def from_object(cls, code: int, message: str, data: Any = None) -> RpcError:
        """The subclass that matches ``code`` (plain ``RpcError`` for codes this version does not know)."""
        return _BY_CODE.get(code, RpcError)(message, code=code, data=data)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code}, {self.message!r})"


class ParseError(RpcError):
    default_code = ErrorCode.PARSE_ERROR


class InvalidRequest(RpcError):
    default_code = ErrorCode.INVALID_REQUEST


class MethodNotFound(RpcError):
    default_code = ErrorCode.METHOD_NOT_FOUND


class InvalidParams(RpcError):
    default_code = ErrorCode.INVALID_PARAMS


class InternalError(RpcError):
    default_code = ErrorCode.INTERNAL_ERROR


class LineTooLong(RpcError):
    default_code = ErrorCode.LINE_TOO_LONG


class OutOfOrder(RpcError):
    """A call the receiver's state does not allow now (getAIMove before a setup, a second hello...)."""

    default_code = ErrorCode.OUT_OF_ORDER


class IllegalMoveReported(RpcError):
    """A move report the receiver's view of the game cannot accept; its state is left unchanged."""

    default_code = ErrorCode.ILLEGAL_MOVE


class NoLegalMove(RpcError):
    default_code = ErrorCode.NO_LEGAL_MOVE


class UnsupportedVersion(RpcError):
    default_code = ErrorCode.UNSUPPORTED_VERSION


class AuthFailed(RpcError):
    default_code = ErrorCode.AUTH_FAILED


class ResumeRefused(RpcError):
    """A hello that asks to resume a game in progress without the resume key of a seat in it. Only that
    connection hears of it: the game and the seat's own connection go on untouched."""

    default_code = ErrorCode.RESUME_REFUSED


_BY_CODE: dict[int, type[RpcError]] = {
    sub.default_code: sub
    for sub in (
        ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError, LineTooLong,
        OutOfOrder, IllegalMoveReported, NoLegalMove, UnsupportedVersion, AuthFailed, ResumeRefused,
    )
}


class BadResult(ProtocolError):
    """The peer answered a call with a result that does not validate against the method's result model."""

    def __init__(self, method: str, detail: str) -> None:
        super().__init__(f"bad result for {method}: {detail}")
        self.method = method
        self.detail = detail


class ConnectionClosed(ProtocolError):
    """The connection ended (peer closed, reset, or idle timeout) before the answer came."""


class ConnectFailed(ProtocolError):
    """Every connection attempt failed."""


class CallTimeout(ProtocolError, TimeoutError):
    """No answer to a call before its deadline."""

    def __init__(self, method: str, timeout: float) -> None:
        super().__init__(f"no answer to {method} within {timeout:g} s")
        self.method = method
        self.timeout = timeout
