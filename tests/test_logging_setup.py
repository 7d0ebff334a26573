"""Log output: JSON off a terminal, game context on every line, secrets never shown."""

from __future__ import annotations

import io
import json

import pytest
import structlog

from bot.logging_setup import bind_game, bind_move, clear_game, configure_logging


@pytest.fixture
def json_log() -> io.StringIO:
    stream = io.StringIO()
    configure_logging("debug", "json", stream)
    yield stream
    clear_game()
    structlog.reset_defaults()


def lines(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_game_context_is_on_every_line(json_log: io.StringIO) -> None:
    bind_game("g-17", "probe")
    bind_move(12)
    structlog.get_logger().info("move_sent", move="A4-A5")
    structlog.get_logger("elsewhere").warning("slow_engine", seconds=4.2)
    clear_game()
    structlog.get_logger().info("idle")
    first, second, third = lines(json_log)
    assert first["game_id"] == second["game_id"] == "g-17"
    assert first["opponent"] == "probe" and first["move_no"] == 12
    assert first["move"] == "A4-A5" and first["level"] == "info"
    assert "game_id" not in third


def test_secrets_are_redacted(json_log: io.StringIO) -> None:
    structlog.get_logger().info(
        "connecting", password="hunter2", auth_token="abc", broker="mqtts://bot:hunter2@broker:8883", user="bot"
    )
    (line,) = lines(json_log)
    text = json.dumps(line)
    assert "hunter2" not in text and "abc" not in text
    assert line["user"] == "bot" and line["broker"] == "mqtts://bot:***@broker:8883"


def test_level_filters(json_log: io.StringIO) -> None:
    configure_logging("warning", "json", json_log)
    structlog.get_logger().info("quiet")
    structlog.get_logger().error("loud")
    assert [line["event"] for line in lines(json_log)] == ["loud"]


def test_bad_settings_are_named() -> None:
    with pytest.raises(ValueError, match="format"):
        configure_logging("info", "xml")
    with pytest.raises(ValueError, match="level"):
        configure_logging("chatty", "json")


def test_a_console_log_shows_a_peers_control_characters_as_escapes() -> None:
    """A bot named with terminal escape codes cannot retitle or clear the host's terminal through its log."""
    out = io.StringIO()
    configure_logging("info", "console", stream=out)
    structlog.get_logger().warning("host.hello", bot="\x1b]0;owned\x07\x1b[2Jevil")
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    assert "bot=\\x1b]0;owned\\x07\\x1b[2Jevil" in out.getvalue()
