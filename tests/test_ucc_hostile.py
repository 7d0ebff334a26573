"""A hostile UCC referee (or opponent's name) against the real ``perspecto ucc`` process (issue 46): escape codes
in the opponent's name reach its stderr log only escaped; a 10 MB name and 1 MB board rows are neither logged
in full nor make the move late; an unknown ``--profile`` is said, and exits non-zero, even when the input ends
right after the colour line."""

from __future__ import annotations

import time

from bot.commands.ucc import LOGGED_VALUE
from engine_ext.rules.pieces import Side
from tests.test_ucc import Child, Referee, spec_rows

HOSTILE_NAME = "\x1b[2J\x1b[31mevil\x1b]0;title\x07"


def red_player(colour_line: str) -> tuple[Child, Referee]:
    """``perspecto ucc`` as RED with the random profile (no search to wait for), the colour line sent and its
    setup read, its engine loaded (``ucc.game``): the next line may start its first turn."""
    bot = Child("--profile", "random", "--seed", "5", "--no-learn", "--move-time", "2")
    referee = Referee(bot, Side.RED, seed=6)
    bot.send(colour_line)
    referee.read_setup()
    bot.wait_for_stderr("ucc.game")
    return bot, referee


def first_move(bot: Child, referee: Referee, rows: list[str] | None = None) -> float:
    """START and the rows; the bot's answer, judged and echoed; the seconds it took."""
    referee.prompt_bot(rows)
    started = time.monotonic()
    referee.answer()
    return time.monotonic() - started


def quit_game(bot: Child) -> None:
    bot.send("QUIT")
    assert bot.wait(20) == 0


def test_escape_codes_in_the_opponents_name_are_logged_escaped() -> None:
    bot, referee = red_player(f"RED {HOSTILE_NAME} 10 10")
    first_move(bot, referee)
    quit_game(bot)
    assert "\x1b" not in bot.stderr and "\x07" not in bot.stderr, bot.stderr
    assert "opponent=\\x1b[2J\\x1b[31mevil\\x1b]0;title\\x07" in bot.stderr


def test_a_10_mb_name_is_not_logged_in_full_and_the_move_comes_in_time() -> None:
    bot, referee = red_player("RED " + "x" * 10_000_000 + " 10 10")
    took = first_move(bot, referee)
    quit_game(bot)
    assert "ucc.fallback_move" not in bot.stderr and "fallback_moves=0" in bot.stderr, bot.stderr[-2000:]
    assert took < 2.0
    assert len(bot.stderr) < 20_000  # it was the name, 10 MB, in ucc.game
    assert "x" * (LOGGED_VALUE + 1) not in bot.stderr


def test_board_rows_of_a_megabyte_are_neither_logged_in_full_nor_make_the_move_late() -> None:
    bot, referee = red_player("RED hostile 10 10")
    assert referee.game is not None
    rows = [row + "#" * 1_000_000 for row in spec_rows(referee.game, Side.RED)]
    took = first_move(bot, referee, rows)  # the rows are refused (ucc.bad_board); the view it has plays on
    quit_game(bot)
    assert "ucc.bad_board" in bot.stderr and "ucc.line_too_long" in bot.stderr
    assert "ucc.fallback_move" not in bot.stderr and took < 2.0, bot.stderr[-2000:]
    assert len(bot.stderr) < 100_000  # it was the rows, 10 MB, in ucc.bad_board


def test_an_unknown_profile_is_said_when_the_input_ends_after_the_colour_line() -> None:
    bot = Child("--profile", "nope")
    bot.send("BLUE scripted-referee 10 10")
    bot.close_input()
    assert bot.wait(30) == 2  # it was 0, without a word
    assert len(bot.rest_of_stdout()) == 4  # the setup went out first, as the protocol wants it in time
    assert "ucc.bad_profile" in bot.stderr and "unknown profile 'nope'" in bot.stderr


def test_an_unknown_profile_is_said_when_the_input_ends_at_once() -> None:
    bot = Child("--profile", "nope")
    bot.close_input()
    assert bot.wait(30) == 2
    assert "unknown profile 'nope'" in bot.stderr
