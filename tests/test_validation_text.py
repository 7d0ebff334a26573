"""One way of saying a pydantic validation error (protocol/validation.py), used by the wire, the engines'
settings and the configuration alike."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field, ValidationError, model_validator

from bot.config import ProfileError, profile_from_mapping
from bot.daemon.engine_interface import EngineConfigError, create_engine
from protocol.codec import InvalidMessage, bot_codec
from protocol.validation import error_line, validation_text


class Inner(BaseModel):
    low: float = Field(0.0, ge=0)
    high: float = 1.0

    @model_validator(mode="after")
    def _ordered(self) -> Inner:
        if self.low > self.high:
            raise ValueError(f"low {self.low} is above high {self.high}")
        return self


class Outer(BaseModel):
    inner: Inner = Field(default_factory=Inner)
    items: list[int] = Field(default_factory=list)


def errors_of(data: Any) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Outer.model_validate(data)
    return caught.value


def test_a_line_names_the_key_path_and_drops_pydantics_prefix_and_url() -> None:
    assert validation_text(errors_of({"inner": {"low": 2, "high": 1}})) == "inner: low 2.0 is above high 1.0"
    assert validation_text(errors_of({"items": [1, "x"]})) == (
        "items.1: Input should be a valid integer, unable to parse string as an integer")
    # an error about the whole value: the message alone
    assert validation_text(errors_of([1])) == "Input should be a valid dictionary or instance of Outer"
    # several errors: one line each, joined
    both = errors_of({"inner": {"low": -1}, "items": ["x"]})
    assert validation_text(both, "\n").splitlines() == [error_line(e) for e in both.errors(include_url=False)]
    assert "https://" not in validation_text(both)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=8))
def test_any_error_pydantic_makes_is_said_without_raising(data: Any) -> None:
    try:
        Outer.model_validate(data)
    except ValidationError as exc:
        assert validation_text(exc)


# --- every user of it says the same line ------------------------------------------------------------------------


FEAR_REVERSED = {"fear": {"own_fear_min": 0.6, "own_fear_max": 0.5}}
FEAR_LINE = "fear: own_fear_min 0.6 is above own_fear_max 0.5"


def test_the_search_engines_settings() -> None:
    with pytest.raises(EngineConfigError) as caught:
        create_engine("pemm", FEAR_REVERSED, 0)
    assert str(caught.value) == f"engine 'pemm': {FEAR_LINE}"


def test_a_ucc_programs_settings() -> None:
    with pytest.raises(EngineConfigError) as caught:
        create_engine("ucc", {"command": "x", "setup_time": 0}, 0)
    assert str(caught.value) == "engine 'ucc': setup_time: Input should be greater than 0"


def test_the_wire() -> None:
    [event] = bot_codec().feed(b'{"jsonrpc":"2.0","id":3,"method":"getAISetupPiece","params":{"square":"Z1"}}\n')
    assert isinstance(event, InvalidMessage)
    message = event.error.message
    assert message.startswith("getAISetupPiece: square: ") and "Value error" not in message


def test_the_configuration() -> None:
    with pytest.raises(ProfileError) as caught:
        profile_from_mapping({"name": "p", "move_time_soft": 20}, source="p.toml", env_prefix=None)
    assert str(caught.value) == "p.toml: (top level): move_time_soft (20 s) exceeds move_time_hard (15 s)"
