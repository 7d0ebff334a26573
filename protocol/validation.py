"""How a pydantic validation error is said, in one place: the wire's InvalidParams and bad results
(protocol/codec.py), engine settings (bot/daemon/engine_interface.py, bot/ucc/engine.py) and the configuration's
problems (bot/settings.py, which adds where each value came from).

One line an error, ``key.path: message``: pydantic's own message, without its documentation URL and
without the ``Value error, `` that it puts before the text of a validator's ValueError. Nothing here
raises on any error pydantic makes (the sans-I/O codec relies on that).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import ValidationError
from pydantic_core import ErrorDetails

# What pydantic puts before the message of a ValueError raised by a validator.
_VALUE_ERROR_PREFIX = "Value error, "


def error_key(loc: Sequence[str | int]) -> str:
    """The dotted path of a key (``engine_params.fear.own_fear_min``, ``pool.2``); "" for the whole value."""
    return ".".join(str(part) for part in loc)


def error_message(error: ErrorDetails) -> str:
    """What is wrong, in pydantic's words."""
    return error["msg"].removeprefix(_VALUE_ERROR_PREFIX)


def error_line(error: ErrorDetails) -> str:
    """``key.path: message``, or the message alone when the error is about the whole value."""
    key = error_key(error["loc"])
    return f"{key}: {error_message(error)}" if key else error_message(error)


def validation_text(errors: ValidationError | Iterable[ErrorDetails], separator: str = "; ") -> str:
    """Every error of a validation, one ``error_line`` each, joined by ``separator``."""
    if isinstance(errors, ValidationError):
        errors = errors.errors(include_url=False)
    return separator.join(error_line(error) for error in errors)
