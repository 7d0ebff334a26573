"""A hostile UCC referee (or opponent's name) against the real ``perspecto ucc`` process (issue 46): escape codes
in the opponent's name reach its stderr log only escaped; a 128 MiB name is read in linear time and cut, and the
setup and the moves still come; 1 MB board rows are neither logged in full nor make the move late; an unknown
``--profile`` is said, and exits non-zero, even when the input ends right after the colour line. What else
``perspecto ucc`` reads is bounded too: the opening stage's lines, the witness's messages, the referee's output
and log (``perspecto gauntlet``'s games under the referee)."""

from __future__ import annotations

import io
import os
import random
import stat
import sys
import threading
from pathlib import Path

import pytest

from bot.commands.ucc import LOGGED_VALUE
from bot.ucc.opening import MAX_LINE_BYTES, Opening, hold_first_move
from bot.ucc.referee import play_referee_game
from engine_ext.rules.pieces import Side
from protocol.ucc import ColourLine
from tests.test_ucc import Child, Referee, spec_rows

HOSTILE_NAME = "\x1b[2J\x1b[31mevil\x1b]0;title\x07"
# A line long enough that reading it in quadratic time takes minutes (10 MB took 0.3 s, 30 MB 5.5 s), while
# read in linear time it is a fraction of a second; the setup and the first move are waited for far longer
# than that (a loaded machine), far shorter than those minutes.
HUGE = 128 * 2**20
SETUP_WAIT = 30.0


def red_player(colour_line: str) -> tuple[Child, Referee]:
    """``perspecto ucc`` as RED with the random profile (no search to wait for), the colour line sent and its
    setup read, its engine loaded (``ucc.game``): the next line may start its first turn."""
    bot = Child("--profile", "random", "--seed", "5", "--no-learn", "--move-time", "2")
    referee = Referee(bot, Side.RED, seed=6)
    bot.send(colour_line)
    referee.read_setup()
    bot.wait_for_stderr("ucc.game")
    return bot, referee


def write_in_background(bot: Child, *parts: bytes | tuple[bytes, int]) -> threading.Thread:
    """The parts (a ``(block, count)``: the block that many times) written to the bot's stdin on a thread: a bot
    that reads slowly holds up the thread, not the test, which waits for the bot's answers with a timeout."""
    stdin = bot.proc.stdin
    assert isinstance(stdin, io.TextIOWrapper)
    raw = stdin.buffer

    def write() -> None:
        try:
            for part in parts:
                block, count = part if isinstance(part, tuple) else (part, 1)
                for _ in range(count):
                    raw.write(block)
            raw.flush()
        except (BrokenPipeError, ValueError):
            pass  # the bot has gone; the test says how

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def first_move(bot: Child, referee: Referee, rows: list[str] | None = None) -> None:
    """START and the rows; the bot's answer, judged and echoed (its coming at all is waited for, 10 s; that it
    came in time, not as a fallback, the log says: ``fallback_moves=0``)."""
    referee.prompt_bot(rows)
    referee.answer()


def quit_game(bot: Child) -> None:
    bot.send("QUIT")
    assert bot.wait(20) == 0


def test_escape_codes_in_the_opponents_name_are_logged_escaped() -> None:
    bot, referee = red_player(f"RED {HOSTILE_NAME} 10 10")
    first_move(bot, referee)
    quit_game(bot)
    assert "\x1b" not in bot.stderr and "\x07" not in bot.stderr, bot.stderr
    assert "opponent=\\x1b[2J\\x1b[31mevil\\x1b]0;title\\x07" in bot.stderr


def test_a_huge_name_is_read_in_linear_time_and_cut_and_the_setup_and_the_moves_still_come() -> None:
    """The colour line was read without a bound, in quadratic time: a 10 MB name made the setup 2-2.6 s late at
    load 9-13 (the referee forfeits a setup after 2 s), 128 MiB would take minutes. Now its first
    MAX_LINE_BYTES are kept, the end with the board's size among them, and the name is cut in its middle."""
    bot = Child("--profile", "random", "--seed", "5", "--no-learn", "--move-time", "2")
    referee = Referee(bot, Side.RED, seed=6)
    writer = write_in_background(bot, b"RED ", (b"x" * 2**20, HUGE // 2**20), b" 10 10\n")
    referee.read_setup(SETUP_WAIT)  # it failed here: no line within 30 s
    writer.join(SETUP_WAIT)
    bot.wait_for_stderr("ucc.game")
    first_move(bot, referee)
    quit_game(bot)
    assert "ucc.fallback_move" not in bot.stderr and "fallback_moves=0" in bot.stderr, bot.stderr[-2000:]
    assert "ucc.line_too_long" in bot.stderr and "line=colour" in bot.stderr
    assert f"dropped={HUGE + 4 + 6 - MAX_LINE_BYTES}" in bot.stderr, bot.stderr[-2000:]
    assert len(bot.stderr) < 20_000  # the name is logged cut
    assert "x" * (LOGGED_VALUE + 1) not in bot.stderr


def test_board_rows_of_a_megabyte_are_neither_logged_in_full_nor_make_the_move_late() -> None:
    bot, referee = red_player("RED hostile 10 10")
    assert referee.game is not None
    rows = [row + "#" * 1_000_000 for row in spec_rows(referee.game, Side.RED)]
    first_move(bot, referee, rows)  # the rows are refused (ucc.bad_board); the view it has plays on
    quit_game(bot)
    assert "ucc.bad_board" in bot.stderr and "ucc.line_too_long" in bot.stderr
    assert "ucc.fallback_move" not in bot.stderr and "fallback_moves=0" in bot.stderr, bot.stderr[-2000:]
    assert len(bot.stderr) < 100_000  # it was the rows, 10 MB, in ucc.bad_board


def test_a_huge_line_in_the_opening_stage_is_cut_as_the_player_cuts_it() -> None:
    """The opening stage (bot/ucc/opening.py ``hold_first_move``) reads the referee until the game loop is there
    and hands every byte on: it kept a line whole, in quadratic time, and past the player's bound."""
    read_end, write_end = os.pipe()
    ready_r, ready_w = os.pipe()  # the game loop never comes: the stage reads on till QUIT

    def write() -> None:
        os.write(write_end, b"QUIT ")
        for _ in range(32):
            os.write(write_end, b"x" * 2**20)
        os.write(write_end, b"\nSTART\n")
        os.close(write_end)

    threading.Thread(target=write, daemon=True).start()
    opening = Opening(ColourLine(Side.RED, "hostile"), {}, [])
    stage = hold_first_move(read_end, io.StringIO(), opening, b"", ready_r, move_time=2.0, rng=random.Random(1))
    assert stage.quit is not None and len(stage.quit) == MAX_LINE_BYTES  # it was 32 MiB
    assert stage.quit.startswith("QUIT xxx") and len(stage.pending) <= MAX_LINE_BYTES + 1 + len(b"START\n")
    assert all(end <= len(stage.pending) for end, _ in stage.stamps)
    for fd in (read_end, ready_r, ready_w):
        os.close(fd)


WITNESS_CHILD = """
import os, sys
from bot.commands.ucc import configure_logging
from bot.ucc.witness import EndWitness
witness = EndWitness.start(lambda: configure_logging("info"))
assert witness is not None
block = b"x" * 2**20
for _ in range(int(sys.argv[1])):
    os.write(witness._fd, block)  # one line, no JSON
os.write(witness._fd, b"\\n" + b"[" * 100000 + b"\\n")  # JSON too deep for the parser's recursion
witness.state({"colour": "RED", "phase": "play", "ply": 7})
"""  # and exits without a word: the witness logs ucc.killed with that state


def test_the_witness_reads_in_linear_time_and_skips_what_is_no_message() -> None:
    """The witness joined and split its whole input at every chunk (quadratic: 128 MiB took minutes) and a line
    of brackets ended it with a RecursionError, so that the end went unlogged."""
    bot = Child(argv=[sys.executable, "-c", WITNESS_CHILD, str(HUGE // 2**20)])
    assert bot.wait(SETUP_WAIT) == 0  # its writes wait for the witness's reads
    assert "ucc.killed" in bot.stderr and "ply=7" in bot.stderr, bot.stderr[-2000:]
    assert "Traceback" not in bot.stderr


# --- the referee's output and log (bot/ucc/referee.py) ------------------------------------------------------

RESULT_LINE = "/path/red RED VICTORY 12 30 29"


@pytest.mark.parametrize(("write", "what"), [
    (f'truncate -s 64M "$6"\necho "{RESULT_LINE}"', "a referee's log"),  # sparse: no disk
    (f'ln -sf /dev/zero "$6"\necho "{RESULT_LINE}"', "a referee's log"),  # without end: 8 GB in 30 s, unbounded
    (f'head -c 40000000 /dev/zero\necho "{RESULT_LINE}"', "the referee's output"),
], ids=["sparse-log", "endless-log", "long-output"])
def test_a_referee_output_or_log_past_the_bound_is_a_clear_error(tmp_path: Path, write: str, what: str) -> None:
    """``play_referee_game`` read the referee's stdout and ``-o`` log whole; more than the longest real game's
    32 MiB is the game's error now, said as such, not a crash or gigabytes read."""
    stand_in = tmp_path / "stratego"
    stand_in.write_text(f"#!/bin/sh\n# -T S -m N -o LOG RED BLUE\n{write}\n", encoding="utf-8")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    program = tmp_path / "program"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    game = play_referee_game(stand_in, program, program, names={Side.RED: "red", Side.BLUE: "blue"},
                             log_path=tmp_path / "game.log", wall_time=30)
    assert game.record is None
    assert game.error is not None and f"larger than 32 MiB, the most {what} may hold" in game.error, game.error


def test_a_failing_setup_library_says_so_on_stderr_never_in_the_protocol_stream(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The setup goes out before logging is set up; structlog's default logger prints to stdout, which is the
    referee's protocol stream: a warning there would stand before our setup lines."""
    import random

    import structlog

    import setups.generator
    from bot.ucc.opening import choose_setup
    from engine_ext.rules.pieces import Side

    def broken(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("no library")

    structlog.reset_defaults()
    monkeypatch.setattr(setups.generator, "generate_setup", broken)
    placement = choose_setup(Side.RED, random.Random(1))
    assert len(placement) == 40
    out, err = capsys.readouterr()
    assert out == ""
    assert "ucc.setup_library_failed" in err and "no library" in err
