"""The UCC 2012 manager protocol: the codec, ``perspecto ucc`` under a scripted referee, and the adapter
that runs a UCC program as an opponent (two ``perspecto ucc`` processes playing a whole game).

The scripted referee here is written independently of protocol/ucc.py (its own letters, rows and move
parsing) and judges with ``engine_ext.rules.game.Game``, so the codec is checked against a second reading of
the spec rather than against itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import random
import re
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any, Protocol

import pytest
import structlog
from hypothesis import assume, given
from hypothesis import strategies as st

from bot.daemon.engine_interface import RandomEngine, SearchBudget
from bot.ucc.opening import first_move_from_rows, hold_first_move, open_game
from bot.ucc.opponent import UccOpponent, UccOpponentError, board_rows_for, move_line
from bot.ucc.player import LOGGED_LINE, OPENING_FALLBACK_REASON, ChosenEngine, UccPlayer, _Line, _read_lines
from engine_ext.engine.timeman import TimeLimits, TimeManager
from engine_ext.rules.game import Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Square
from protocol.ucc import (
    BoardRow,
    ColourLine,
    Direction,
    MoveLine,
    Outcome,
    OutcomeKind,
    QuitLine,
    StartLine,
    Surrender,
    UccMove,
    UccProtocolError,
    format_board_rows,
    format_setup_lines,
    from_square,
    outcome_of,
    parse_answer,
    parse_board_rows,
    parse_referee_line,
    parse_setup_lines,
    to_square,
)
from tests.helpers import BrokenEngine

ROOT = Path(__file__).resolve().parent.parent
UCC_CMD = [sys.executable, "-m", "bot.cli", "ucc", "--profile", "random"]

# --- the spec, read a second time (independent of protocol/ucc.py) -----------------------------------

LETTER = {
    Rank.MARSHAL: "1", Rank.GENERAL: "2", Rank.COLONEL: "3", Rank.MAJOR: "4", Rank.CAPTAIN: "5",
    Rank.LIEUTENANT: "6", Rank.SERGEANT: "7", Rank.MINER: "8", Rank.SCOUT: "9", Rank.SPY: "s",
    Rank.BOMB: "B", Rank.FLAG: "F",
}
RANK = {v: k for k, v in LETTER.items()}
DELTA = {"UP": (0, -1), "DOWN": (0, 1), "LEFT": (-1, 0), "RIGHT": (1, 0)}
ANSWER = re.compile(r"(\d) (\d) (UP|DOWN|LEFT|RIGHT)(?: (\d+))?")

SPEC_RED_SETUP = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]


def spec_setup(lines: list[str], side: Side) -> dict[Square, Rank]:
    """Setup lines go from the top of the board down: RED's back row (y 0) first, BLUE's front row
    (y 6) first; UCC y is our row index."""
    first_y = 0 if side == Side.RED else 6
    return {Square(x, first_y + i): RANK[c] for i, line in enumerate(lines) for x, c in enumerate(line)}


def spec_rows(game: Game, viewer: Side) -> list[str]:
    rows = []
    for y in range(10):
        row = ""
        for x in range(10):
            sq = Square(x, y)
            piece = game.piece_at(sq)
            row += "+" if CLASSIC.is_lake(sq) else "." if piece is None else (
                LETTER[piece[1]] if piece[0] == viewer else "#")
        rows.append(row)
    return rows


def spec_move(answer: str) -> Move:
    m = ANSWER.fullmatch(answer)
    assert m, f"not an answer of the protocol: {answer!r}"
    x, y, n = int(m[1]), int(m[2]), int(m[4] or 1)
    dx, dy = DELTA[m[3]]
    return Move(Square(x, y), Square(x + dx * n, y + dy * n))


def spec_line(result: MoveResult) -> str:
    (x0, y0), (x1, y1) = (result.move.frm.col, result.move.frm.row), (result.move.to.col, result.move.to.row)
    word = "DOWN" if y1 > y0 else "UP" if y1 < y0 else "RIGHT" if x1 > x0 else "LEFT"
    n = result.move.distance
    text = f"{x0} {y0} {word}" + (f" {n}" if n > 1 else "")
    if result.defender is None:
        return f"{text} OK"
    if result.defender == Rank.FLAG:
        return f"{text} VICTORY_FLAG"
    assert result.attacker is not None
    kind = {"x": "KILLS", "o": "DIES", "xo": "BOTHDIE"}[result.outcome or ""]
    return f"{text} {kind} {LETTER[result.attacker]} {LETTER[result.defender]}"


# --- codec --------------------------------------------------------------------------------------------


def test_referee_lines_parse() -> None:
    assert parse_referee_line("RED ../agents/vixen/vixen.py 10 10") == ColourLine(
        Side.RED, "../agents/vixen/vixen.py", 10, 10)
    assert parse_referee_line("BLUE vixen 10 10\n") == ColourLine(Side.BLUE, "vixen")
    assert parse_referee_line("START") == StartLine()
    assert parse_referee_line("QUIT") == QuitLine()
    assert parse_referee_line("QUIT RED wins") == QuitLine("RED wins")
    assert parse_referee_line("0 3 DOWN OK") == MoveLine(UccMove(0, 3, Direction.DOWN), Outcome(OutcomeKind.OK))
    assert parse_referee_line("9 6 UP 3 BOTHDIE 9 9") == MoveLine(
        UccMove(9, 6, Direction.UP, 3), Outcome(OutcomeKind.BOTHDIE, Rank.SCOUT, Rank.SCOUT))
    assert parse_referee_line("4 4 LEFT KILLS s 1").outcome == Outcome(  # type: ignore[union-attr]
        OutcomeKind.KILLS, Rank.SPY, Rank.MARSHAL)
    assert parse_referee_line("4 4 LEFT DIES 7 B").outcome == Outcome(  # type: ignore[union-attr]
        OutcomeKind.DIES, Rank.SERGEANT, Rank.BOMB)
    assert parse_referee_line("4 4 LEFT 1 OK") == parse_referee_line("4 4 LEFT OK")
    flag = parse_referee_line("5 3 DOWN VICTORY_FLAG")
    assert isinstance(flag, MoveLine) and flag.outcome.ends_game and not flag.outcome.is_combat
    other = parse_referee_line("5 3 DOWN VICTORY_ATTRITION")
    assert isinstance(other, MoveLine) and other.outcome.kind is OutcomeKind.OTHER_END
    assert other.format() == "5 3 DOWN VICTORY_ATTRITION"
    assert parse_referee_line("FB8sB479B8") == BoardRow("FB8sB479B8")
    assert parse_referee_line("..++..++..") == BoardRow("..++..++..")
    assert parse_referee_line("##########") == BoardRow("##########")
    assert parse_referee_line("9999999999") == BoardRow("9999999999")


@pytest.mark.parametrize("line", [
    "RED vixen 10 10", "START", "QUIT", "QUIT BLUE", "0 3 DOWN OK", "9 6 UP 3 BOTHDIE 9 9",
    "1 1 RIGHT KILLS 2 F", "7 7 LEFT DIES 8 B", "3 3 UP VICTORY_FLAG", "2 3 UP ILLEGAL", "#..9+F..s.",
])
def test_referee_lines_round_trip(line: str) -> None:
    assert parse_referee_line(line).format() == line


@pytest.mark.parametrize("line", [
    "", "   ", "HELLO", "RED", "RED 10", "RED vixen ten 10", "0 3 SIDEWAYS OK", "0 3 DOWN", "0 3 DOWN KILLS",
    "0 3 DOWN KILLS 1", "0 3 DOWN KILLS 1 2 3", "0 3 DOWN OK 1 2", "0 3 DOWN MAYBE", "a 3 DOWN OK",
    "0 3 DOWN 0 OK", "0 3 DOWN KILLS X 1", "-1 3 DOWN OK", "12345678x9",
])
def test_malformed_referee_lines(line: str) -> None:
    with pytest.raises(UccProtocolError):
        parse_referee_line(line)


def test_answers() -> None:
    assert parse_answer("0 3 DOWN") == UccMove(0, 3, Direction.DOWN)
    assert parse_answer("9 6 UP 3\n") == UccMove(9, 6, Direction.UP, 3)
    assert parse_answer("SURRENDER") == Surrender()
    for bad in ["", "0 3", "0 3 DOWN OK", "0 3 DOWN 3 4", "x 3 UP", "0 3 NORTH"]:
        with pytest.raises(UccProtocolError):
            parse_answer(bad)
    with pytest.raises(UccProtocolError):
        UccMove(0, 0, Direction.UP).to_move()  # off the top of the board


@given(st.integers(0, 9), st.integers(0, 9), st.sampled_from(list(Direction)), st.integers(1, 9))
def test_move_round_trip(x: int, y: int, direction: Direction, steps: int) -> None:
    move = UccMove(x, y, direction, steps)
    assert parse_answer(move.format()) == move
    for outcome in (Outcome(OutcomeKind.OK), Outcome(OutcomeKind.KILLS, Rank.SCOUT, Rank.SPY)):
        assert parse_referee_line(MoveLine(move, outcome).format()) == MoveLine(move, outcome)
    tx, ty = move.target
    if 0 <= tx < 10 and 0 <= ty < 10:
        assert UccMove.from_move(move.to_move()) == move


def test_coordinates_follow_the_spec_example() -> None:
    # RED's lines go back row first: line 1 is y 0, red's back row, our row 1 (index 0).
    red = parse_setup_lines(SPEC_RED_SETUP, Side.RED)
    assert red == spec_setup(SPEC_RED_SETUP, Side.RED)
    assert red[Square.parse("A1")] == Rank.FLAG and red[Square.parse("J4")] == Rank.SCOUT
    assert format_setup_lines(red, Side.RED) == SPEC_RED_SETUP
    # BLUE's lines go front row first: line 1 is y 6, blue's front row, our row 7 (index 6).
    blue = parse_setup_lines(SPEC_RED_SETUP, Side.BLUE)
    assert blue[Square.parse("A10")] == Rank.SCOUT and blue[Square.parse("A7")] == Rank.FLAG
    assert format_setup_lines(blue, Side.BLUE) == SPEC_RED_SETUP
    # "0 3 DOWN": RED's piece on A4 steps towards blue, to A5; "9 6 UP 3": BLUE's scout J7 to J4.
    assert UccMove(0, 3, Direction.DOWN).to_move() == Move.parse("A4-A5")
    assert UccMove(9, 6, Direction.UP, 3).to_move() == Move.parse("J7-J4")
    assert UccMove.from_move(Move.parse("C7-C10")) == UccMove(2, 6, Direction.DOWN, 3)
    assert to_square(2, 4) == Square.parse("C5") and CLASSIC.is_lake(to_square(2, 4))
    assert from_square(Square.parse("H6")) == (7, 5)


@pytest.mark.parametrize("lines, why", [
    (SPEC_RED_SETUP[:3], "3 setup line"),
    ([*SPEC_RED_SETUP[:3], "967B66999"], "9 letters"),
    ([*SPEC_RED_SETUP[:3], "967B66999X"], "not a UCC piece letter"),
    ([*SPEC_RED_SETUP[:3], "967B669991"], "illegal setup"),
    ([*SPEC_RED_SETUP[:3], "967B6699.9"], "illegal setup"),
])
def test_malformed_setups(lines: list[str], why: str) -> None:
    with pytest.raises(UccProtocolError, match=why):
        parse_setup_lines(lines, Side.RED)


def test_board_rows_agree_with_the_spec_reading() -> None:
    rng = random.Random(5)
    game = Game(RulesOptions(), CLASSIC.random_placement(Side.RED, rng), CLASSIC.random_placement(Side.BLUE, rng))
    results: list[MoveResult] = []
    while game.result is None and len(results) < 400:
        results.append(game.play(rng.choice(game.legal_moves())))
        for viewer in Side:
            rows = format_board_rows(game.pieces(), viewer)
            assert rows == spec_rows(game, viewer) == board_rows_for(game, viewer)
            board = parse_board_rows(rows)
            assert board.own == {sq: r for sq, (s, r) in game.pieces().items() if s == viewer}
            assert board.enemy == {sq for sq, (s, _r) in game.pieces().items() if s != viewer}
    assert any(r.outcome for r in results)
    for result in results:
        assert move_line(result) == spec_line(result)
        assert parse_referee_line(spec_line(result)) == MoveLine(UccMove.from_move(result.move), outcome_of(result))
    start = format_board_rows(Game(RulesOptions(), CLASSIC.random_placement(Side.RED, rng),
                                   CLASSIC.random_placement(Side.BLUE, rng)).pieces(), Side.BLUE)
    assert start[:4] == ["#" * 10] * 4 and start[4] == start[5] == "..++..++.."
    assert parse_board_rows([r.replace("#", "*") for r in start]).enemy == parse_board_rows(start).enemy


@pytest.mark.parametrize("change, why", [
    (lambda rows: rows[:9], "9 board rows"),
    (lambda rows: [*rows[:4], "..........", *rows[5:]], "lakes"),
    (lambda rows: [*rows[:9], "#########"], "9 squares"),
    (lambda rows: [*rows[:9], "#########X"], "not a UCC piece letter"),
])
def test_malformed_board_rows(change: Callable[[list[str]], list[str]], why: str) -> None:
    rows = ["#" * 10] * 4 + ["..++..++.."] * 2 + ["9" * 10] * 4
    parse_board_rows(rows)
    with pytest.raises(UccProtocolError, match=why):
        parse_board_rows(change(rows))


def test_move_times_leave_a_margin() -> None:
    from bot.config import get_profile

    soft, hard = TimeManager(TimeLimits.for_ucc(get_profile("random"), 2.0)).spans(0)
    assert 0 < soft <= hard < 2.0


# --- harnesses: ``perspecto ucc`` as a child process, or UccPlayer in a thread ------------------------


class _LineQueue:
    """Lines of a readable text stream, with timeouts (a thread does the blocking reads)."""

    def __init__(self, stream: IO[str]) -> None:
        self._q: queue.Queue[str | None] = queue.Queue()
        self.last_line_at = time.monotonic()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        try:
            for line in stream:
                self.last_line_at = time.monotonic()
                self._q.put(line.rstrip("\n"))
        except (OSError, ValueError):
            pass
        self._q.put(None)

    def get(self, timeout: float) -> str | None:
        try:
            return self._q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line within {timeout} s") from None


class Bot(Protocol):
    def send(self, line: str) -> None: ...
    def recv(self, timeout: float = 10.0) -> str: ...
    def close_input(self) -> None: ...
    def wait(self, timeout: float = 10.0) -> int: ...


# How long the bot's stderr may stay open after the process has exited: its witness writes the last lines then
# (``ucc.quit`` for a QUIT in the opening stage, ``ucc.killed``), the first of them after importing structlog,
# which took over 2 s at load 13. Generous: a witness that does not exit at all fails the test.
STDERR_GRACE = 60.0


class Child:
    """``python -m bot.cli ucc ...`` with pipes (cwd: the repository)."""

    def __init__(self, *args: str, argv: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            argv or [*UCC_CMD, *args], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1,
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._out = _LineQueue(self.proc.stdout)
        self._err: list[str] = []
        self._err_thread = threading.Thread(target=lambda: self._err.extend(self.proc.stderr or []), daemon=True)
        self._err_thread.start()
        self.exited_at: float | None = None  # when ``wait`` saw the process exit

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the bot has exited already; wait() tells how

    def recv(self, timeout: float = 10.0) -> str:
        line = self._out.get(timeout)
        assert line is not None, f"the bot closed stdout; stderr: {self.stderr}"
        return line

    def close_input(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = 10.0) -> int:
        """The exit code, once the process has exited (``exited_at``) and its stderr has closed. Both may take
        long on a loaded machine: the stderr closes only when the witness (bot/ucc/witness.py) has exited too,
        and a QUIT in the opening stage leaves ``ucc.quit`` to it: it imports structlog and writes that line
        after the process has gone (``STDERR_GRACE``)."""
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            self.exited_at = time.monotonic()
        self._err_thread.join(STDERR_GRACE)
        assert not self._err_thread.is_alive(), f"stderr still open {STDERR_GRACE} s after the exit: {self.stderr}"
        return code

    def wait_for_stderr(self, text: str, timeout: float = 60.0) -> None:
        """Until ``text`` is in the bot's stderr (``ucc.game``: its engine has loaded, after the setup)."""
        until = time.monotonic() + timeout
        while text not in self.stderr:
            assert time.monotonic() < until and self.proc.poll() is None, f"no {text!r}; stderr: {self.stderr}"
            time.sleep(0.01)

    def rest_of_stdout(self) -> list[str]:
        lines = []
        while (line := self._out.get(5)) is not None:
            lines.append(line)
        return lines

    @property
    def last_output_at(self) -> float:
        """When the bot last wrote a line (its start if it has written none)."""
        return self._out.last_line_at

    @property
    def stderr(self) -> str:
        return "".join(self._err)


class PipedPlayer:
    """A player on a thread, talking through OS pipes exactly as the process does; ``_play`` plays the game
    on the pipes and gives the exit code."""

    def __init__(self) -> None:
        self._in_r, self._in_w = os.pipe()
        out_r, out_w = os.pipe()
        self._out_file = os.fdopen(out_w, "w")
        self._out = _LineQueue(os.fdopen(out_r))
        self.code: int | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _play(self) -> int:
        raise NotImplementedError

    def _run(self) -> None:
        try:
            self.code = self._play()
        finally:
            self._out_file.close()

    def send(self, line: str) -> None:
        os.write(self._in_w, (line + "\n").encode())

    def recv(self, timeout: float = 10.0) -> str:
        line = self._out.get(timeout)
        assert line is not None, "the player stopped"
        return line

    def close_input(self) -> None:
        if self._in_w >= 0:
            os.close(self._in_w)
            self._in_w = -1

    def wait(self, timeout: float = 10.0) -> int:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the player is still running"
        self.close_input()  # lets the player's reader thread finish
        assert self.code is not None
        return self.code


class InProcess(PipedPlayer):
    """A ``UccPlayer`` on a thread, talking through OS pipes exactly as the process does."""

    def __init__(self, player: UccPlayer) -> None:
        super().__init__()
        self.player = player
        self._thread.start()

    def _play(self) -> int:
        return self.player.run(self._in_r, self._out_file)


class Referee:
    """A scripted UCC referee judging with ``Game``: the bot plays ``colour``, the referee the other side
    (random legal moves unless ``opponent`` says otherwise)."""

    def __init__(self, bot: Bot, colour: Side, *, seed: int = 0, options: RulesOptions | None = None,
                 opponent: Callable[[Game], Move] | None = None) -> None:
        self.bot, self.colour, self.rng = bot, colour, random.Random(seed)
        self.options = options or RulesOptions()
        self.opponent = opponent or (lambda game: self.rng.choice(game.legal_moves()))
        self.game: Game | None = None
        self.prompt: str | None = None  # the opponent's last move, due at the bot's next turn
        self.bot_moves = 0

    def send_colour(self) -> None:
        self.bot.send(f"{self.colour.name} scripted-referee 10 10")

    def read_setup(self, timeout: float = 10.0) -> dict[Square, Rank]:
        lines = [self.bot.recv(timeout) for _ in range(4)]
        placement = spec_setup(lines, self.colour)
        CLASSIC.validate_setup(self.colour, placement)
        assert parse_setup_lines(lines, self.colour) == placement
        other = CLASSIC.random_placement(self.colour.other, self.rng)
        red, blue = (placement, other) if self.colour == Side.RED else (other, placement)
        self.game = Game(self.options, red, blue)
        return placement

    def start(self) -> None:
        self.send_colour()
        self.read_setup()

    def prompt_bot(self, rows: list[str] | None = None) -> None:
        """The line that starts the bot's turn, then the ten rows."""
        assert self.game is not None
        self.bot.send(self.prompt or "START")
        self.prompt = None
        for row in rows if rows is not None else spec_rows(self.game, self.colour):
            self.bot.send(row)

    def answer(self) -> MoveResult:
        """Read the bot's move, judge it by the rules, echo it with its outcome."""
        assert self.game is not None
        move = spec_move(self.bot.recv())
        try:
            self.game.check_move(move)
        except IllegalMove as exc:
            raise AssertionError(f"the bot played an illegal move at ply {self.game.ply}: {exc}") from None
        result = self.game.play(move)
        self.bot.send(spec_line(result))
        self.bot_moves += 1
        return result

    def step(self) -> bool:
        """One ply; False once the game is over."""
        assert self.game is not None
        if self.game.result is not None:
            return False
        if self.game.side_to_move == self.colour:
            self.prompt_bot()
            self.answer()
        else:
            self.prompt = spec_line(self.game.play(self.opponent(self.game)))
        return self.game.result is None


# --- ``perspecto ucc`` under the scripted referee ------------------------------------------------------


@pytest.mark.parametrize("colour", [Side.RED, pytest.param(Side.BLUE, marks=pytest.mark.long)])
def test_whole_game_as_a_child_process(colour: Side) -> None:
    started = time.monotonic()
    bot = Child("--seed", "11", "--move-time", "2")
    referee = Referee(bot, colour, seed=23)
    referee.start()
    bot.wait_for_stderr("ucc.game")  # the engine loads after the setup is out; this test is about the game
    while referee.step():
        pass
    assert referee.game is not None and referee.game.result is not None
    bot.send(f"QUIT {referee.game.result}")
    assert bot.wait(5) == 0
    assert bot.rest_of_stdout() == []  # nothing but protocol lines on stdout, all of them read
    assert referee.bot_moves > 10
    assert "ucc.game" in bot.stderr and "ucc.quit" in bot.stderr
    assert "ucc.killed" not in bot.stderr  # it logged its own end: its witness kept silent
    # The bot tracked the board exactly: no disagreement with the rows, no fallback move.
    assert "ucc.board_mismatch" not in bot.stderr and "ucc.fallback_move" not in bot.stderr, bot.stderr[-2000:]
    assert "board_mismatches=0 fallback_moves=0" in bot.stderr
    assert time.monotonic() - started < 30


def _quit_right_after_colour(ref: Referee) -> None:
    ref.send_colour()


def _quit_after_setup(ref: Referee) -> None:
    ref.start()


def _quit_instead_of_an_echo(ref: Referee) -> None:
    ref.start()
    for _ in range(20):
        ref.step()
    assert ref.game is not None
    while ref.game.side_to_move != ref.colour:
        ref.step()
    ref.prompt_bot()
    ref.bot.recv()  # the bot's answer; the echo never comes


def _quit_instead_of_a_turn(ref: Referee) -> None:
    ref.start()
    for _ in range(15):
        ref.step()


def _quit_in_the_middle_of_the_rows(ref: Referee) -> None:
    ref.start()
    for _ in range(10):
        ref.step()
    assert ref.game is not None
    while ref.game.side_to_move != ref.colour:
        ref.step()
    ref.bot.send(ref.prompt or "START")
    for row in spec_rows(ref.game, ref.colour)[:5]:
        ref.bot.send(row)


QUIT_POINTS = [
    _quit_right_after_colour, _quit_after_setup, _quit_instead_of_an_echo, _quit_instead_of_a_turn,
    _quit_in_the_middle_of_the_rows,
]


QUIT_EXIT_BOUND = 10.0  # seconds from QUIT (or the bot's last output, if later) to the process's exit


def _quit_scenario(colour: Side, script: Callable[[Referee], None]) -> str | None:
    """Run one QUIT scenario; None if the bot exited promptly with 0, else what went wrong."""
    bot = Child("--seed", "3")
    try:
        script(Referee(bot, colour, seed=4))
        bot.send("QUIT")
        sent = time.monotonic()
        code = bot.wait(30)  # generous: five children start side by side on a possibly loaded machine
        # Right after the colour line the bot may still be starting up: it sees QUIT after its setup, and the
        # setup comes first of all (the logs and the player start after it: docs/ucc.md, start-up). Counted to
        # the process's exit, not to the close of its stderr: that waits for the witness too (``Child.wait``).
        assert bot.exited_at is not None
        took = bot.exited_at - max(sent, bot.last_output_at)
    except Exception as exc:
        return f"{exc!r}; stderr: {bot.stderr[-500:]}"
    # The input stays open: an exit at all proves QUIT ended the game, the end of input never comes (nor
    # ``ucc.eof``). The bound is generous, for a loaded machine (the game loop's exit took up to 1.6 s at load
    # 16), and well short of the 30 s the input stays open.
    if code != 0 or took > QUIT_EXIT_BOUND or "ucc.quit" not in bot.stderr or "ucc.eof" in bot.stderr:
        return f"exit {code} {took:.2f} s after QUIT; stderr: {bot.stderr[-500:]}"
    return None


@pytest.mark.parametrize("colour", [Side.RED, pytest.param(Side.BLUE, marks=pytest.mark.long)])
def test_quit_at_any_point(colour: Side) -> None:
    # The scenarios run side by side: each is mostly the child's start-up time.
    with ThreadPoolExecutor(len(QUIT_POINTS)) as pool:
        outcomes = dict(zip(QUIT_POINTS, pool.map(lambda s: _quit_scenario(colour, s), QUIT_POINTS), strict=True))
    failed = {script.__name__: why for script, why in outcomes.items() if why is not None}
    assert not failed


@pytest.mark.parametrize("moves", [0, 12])
def test_end_of_input_exits_cleanly(moves: int) -> None:
    bot = Child()
    ref = Referee(bot, Side.BLUE, seed=9)
    ref.start()
    for _ in range(moves):
        ref.step()
    bot.close_input()
    assert bot.wait(5) == 0
    assert "ucc.eof" in bot.stderr
    assert "Traceback" not in bot.stderr


def test_an_illegal_echo_exits_non_zero() -> None:
    bot = Child()
    ref = Referee(bot, Side.RED, seed=2)
    ref.start()
    ref.prompt_bot()
    bot.send(f"{bot.recv()} ILLEGAL")
    assert bot.wait(5) == 1
    assert "ucc.illegal" in bot.stderr


def test_garbage_from_the_referee_exits_non_zero() -> None:
    bot = Child()
    bot.send("HELLO THERE")
    assert bot.wait(5) == 1
    assert "ucc.bad_line" in bot.stderr


# A child whose engine ignores its stop signal and would think for a minute: QUIT must still end it.
STUBBORN_ENGINE_CHILD = """
import sys, time
from bot.daemon import engine_interface
class Stubborn:
    name = "stubborn"
    def choose_move(self, game, budget):
        time.sleep(60)
        return game.legal_moves()[0]
engine_interface.ENGINES["stubborn"] = lambda params, seed: Stubborn()
from bot.cli import main
sys.exit(main(["ucc", "--profile", "stubborn", "--move-time", "60"]))
"""


def test_quit_while_a_stubborn_engine_thinks_ends_the_process() -> None:
    bot = Child(argv=[sys.executable, "-c", STUBBORN_ENGINE_CHILD])
    ref = Referee(bot, Side.RED)
    ref.start()
    ref.prompt_bot()
    bot.wait_for_stderr("ucc.game")  # the game loop is up (till then the opening stage holds the turn)
    time.sleep(0.3)
    bot.send("QUIT")
    sent = time.monotonic()
    assert bot.wait(5) == 0
    assert time.monotonic() - sent < 2.0
    assert "thinking=True" in bot.stderr


def test_unknown_profile() -> None:
    # The setup goes out before the configuration is read (docs/ucc.md, start-up); then the bad profile
    # ends the game with exit 2, naming it.
    bot = Child("--profile", "no-such-profile")
    bot.send("BLUE scripted-referee 10 10")
    assert bot.wait(30) == 2
    assert len(bot.rest_of_stdout()) == 4
    assert "ucc.bad_profile" in bot.stderr and "no-such-profile" in bot.stderr


# --- the player in-process: thinking, timeouts, a disagreeing referee -----------------------------


class SlowEngine:
    """Thinks until told to stop (or, with ``ignore_stop``, for ``seconds`` regardless)."""

    name = "slow"

    def __init__(self, seconds: float = 30.0, *, ignore_stop: bool = False) -> None:
        self.seconds, self.ignore_stop = seconds, ignore_stop

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        until = time.monotonic() + self.seconds
        while time.monotonic() < until and (self.ignore_stop or not budget.stop.is_set()):
            time.sleep(0.01)
        return game.legal_moves()[0]


class RightmostEngine:
    """Plays with the pieces furthest right, so the left columns stay free for a scripted opponent."""

    name = "rightmost"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        return max(game.legal_moves(), key=lambda m: (m.frm.col, m.to.col, m.frm.row, m.to.row))


def _player(engine: Any, **kwargs: Any) -> InProcess:
    return InProcess(UccPlayer(engine, seed=1, **kwargs))


def _limits(soft: float, hard: float) -> TimeLimits:
    """A referee's per-move limit of ``hard`` seconds, used to the last (no margin), aiming at ``soft``."""
    return TimeLimits(move_time_soft=soft, move_time_max=hard, safety_margin=0.0, move_time_average=None,
                      move_limit=None)


def test_quit_while_the_engine_thinks() -> None:
    bot = _player(SlowEngine(), limits=_limits(20.0, 25.0))
    ref = Referee(bot, Side.RED)
    ref.start()
    ref.prompt_bot()
    time.sleep(0.3)
    bot.send("QUIT")
    sent = time.monotonic()
    assert bot.wait(3) == 0
    assert time.monotonic() - sent < 1.0


def test_a_late_or_broken_engine_gets_a_fallback_move() -> None:
    with structlog.testing.capture_logs() as logs:
        for engine in (SlowEngine(1.0, ignore_stop=True), BrokenEngine()):
            # The same engine after a late answer too, so that every move is late (or broken).
            bot = _player(engine, limits=_limits(0.05, 0.3), renew=lambda engine=engine: engine)
            ref = Referee(bot, Side.RED, seed=7)
            ref.start()
            started = time.monotonic()
            ref.step()  # judged legal by the referee
            assert time.monotonic() - started < 2.0
            ref.step()
            ref.step()
            bot.send("QUIT")
            assert bot.wait(3) == 0
            assert bot.player.stats["fallback_moves"] == 2
    assert [e["log_level"] for e in logs if e["event"] == "ucc.fallback_move"] == ["warning"] * 4


def test_board_rows_win_over_a_wrong_view() -> None:
    with structlog.testing.capture_logs() as logs:
        bot = _player(RandomEngine(3))
        ref = Referee(bot, Side.RED, seed=8)
        ref.start()
        assert ref.game is not None
        rows = spec_rows(ref.game, Side.RED)
        # The referee's rows say our front-row piece on (0, 3) is gone: our view must follow them.
        rows[3] = "." + rows[3][1:]
        ref.prompt_bot(rows)
        answer = bot.recv()
        assert not answer.startswith("0 3 ")
        view = bot.player.game
        assert view is not None and view.piece_at(Square(0, 3)) is None
        bot.send("QUIT")
        assert bot.wait(3) == 0
    mismatches = [e for e in logs if e["event"] == "ucc.board_mismatch"]
    assert len(mismatches) == 1 and mismatches[0]["log_level"] == "warning"
    assert mismatches[0]["referee"] == rows and mismatches[0]["ours"] != rows


def test_the_profile_for_the_opponent_plays_and_a_broken_one_falls_back() -> None:
    def hunter(opponent: str) -> ChosenEngine | None:
        return ChosenEngine(RandomEngine(2), _limits(0.5, 1.0), "hunter") if opponent == "scripted-referee" else None

    def broken(opponent: str) -> ChosenEngine | None:
        raise ValueError("no such engine")

    for engine_for, expected in ((hunter, "hunter"), (broken, "random")):
        with structlog.testing.capture_logs() as logs:
            bot = _player(RandomEngine(1), engine_for=engine_for, profile_name="random")
            ref = Referee(bot, Side.RED, seed=3)
            ref.start()
            for _ in range(4):
                assert ref.step()
            bot.send("QUIT")
            assert bot.wait(3) == 0
        [game] = [e for e in logs if e["event"] == "ucc.game"]
        assert game["profile"] == expected and game["soft"] == (0.5 if expected == "hunter" else 1.0)
        failed = [e for e in logs if e["event"] == "ucc.profile_failed"]
        assert len(failed) == (expected == "random")


# --- start-up: the setup first, the engine loaded afterwards (issue 31) -----------------------------------


def test_a_move_due_while_the_engine_loads_is_a_random_legal_one_and_the_engine_plays_once_loaded() -> None:
    loaded = threading.Event()
    asked: list[str] = []

    def load(opponent: str) -> ChosenEngine:
        asked.append(opponent)
        assert loaded.wait(30)
        return ChosenEngine(RightmostEngine(), _limits(0.2, 0.5), "rightmost")

    with structlog.testing.capture_logs() as logs:
        bot = _player(None, engine_for=load, limits=_limits(0.05, 0.2))
        ref = Referee(bot, Side.RED, seed=5)
        ref.start()  # the setup does not wait for the engine
        ref.step()  # judged legal by the referee: a random move while the engine loads
        assert bot.player.stats["fallback_moves"] == 1 and bot.player.engine is None
        loaded.set()
        for _ in range(6):
            ref.step()
        bot.send("QUIT")
        assert bot.wait(3) == 0
    assert asked == ["scripted-referee"]
    assert bot.player.stats == {**bot.player.stats, "fallback_moves": 1, "moves": 4}
    [fallback] = [e for e in logs if e["event"] == "ucc.fallback_move"]
    assert fallback["reason"] == "the engine is still loading" and fallback["ply"] == 0
    [game] = [e for e in logs if e["event"] == "ucc.game"]
    assert game["profile"] == "rightmost" and game["soft"] == 0.2


def test_an_engine_that_cannot_load_ends_the_game_with_exit_2() -> None:
    def load(opponent: str) -> ChosenEngine:
        raise ValueError("profile 'nope' is not in the configuration")

    with structlog.testing.capture_logs() as logs:
        bot = _player(None, engine_for=load)
        Referee(bot, Side.BLUE).start()
        assert bot.wait(5) == 2  # without another line from the referee
    [bad] = [e for e in logs if e["event"] == "ucc.bad_profile"]
    assert "'nope'" in bad["error"] and bad["log_level"] == "error"


def test_the_colour_line_is_answered_before_the_player_starts() -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"\nBLUE scripted-referee 10 10\n3 6 DOWN OK\n")  # and the opponent's first move
    out_r, out_w = os.pipe()
    with os.fdopen(out_w, "w") as out:
        opening, pending = open_game(read_end, out, random.Random(9))
    with os.fdopen(out_r) as lines:
        setup = lines.read().splitlines()
    assert opening is not None and opening.colour.colour == Side.BLUE and opening.lines == setup
    assert parse_setup_lines(setup, Side.BLUE) == opening.placement
    assert pending == b"3 6 DOWN OK\n"  # the player reads on from here
    # The same seed gives the setup the player would have chosen itself at the colour line.
    player = UccPlayer(RandomEngine(1), seed=9)
    assert player._setup(Side.BLUE, player._rng) == opening.placement
    os.close(write_end)
    os.close(read_end)


@pytest.mark.parametrize(("sent", "pending"), [
    (b"START\n", b"START\n"),  # not a colour line: the player reads it and says what is wrong
    (b"RED opponent 8 8\n", b"RED opponent 8 8\n"),  # a board it does not play
    (b"", b""),  # the end of input
])
def test_no_opening_without_a_colour_line_for_the_classic_board(sent: bytes, pending: bytes) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, sent)
    os.close(write_end)
    out_r, out_w = os.pipe()
    with os.fdopen(out_w, "w") as out:
        assert open_game(read_end, out, random.Random(1)) == (None, pending)
    with os.fdopen(out_r) as lines:
        assert lines.read() == ""
    os.close(read_end)


class HeldOpening(PipedPlayer):
    """``perspecto ucc``'s start as bot/commands/ucc.py ``play`` runs it, on a thread and through OS pipes: the
    setup, then the opening stage while the game loop is held back (its ready pipe stays empty until
    ``release``), then the player with what the stage read and the first move it sent. The stage's clock
    gains a second at every reading, so the first move is due as soon as its rows are in (no real waiting);
    its stamps, ahead of the player's clock, leave the player's own move clocks as they are."""

    def __init__(self, engine: Any, seed: int = 3) -> None:
        super().__init__()
        self._ready_r, self._ready_w = os.pipe()
        self._engine, self._seed = engine, seed
        self._ticks = iter(range(10**9))
        self.player: UccPlayer | None = None
        self.first_move: Move | None = None
        self.quit: str | None = None
        self._thread.start()

    def _play(self) -> int:
        rng = random.Random(self._seed)
        opening, pending = open_game(self._in_r, self._out_file, rng)
        assert opening is not None
        stage = hold_first_move(self._in_r, self._out_file, opening, pending, self._ready_r, move_time=1.0,
                                rng=rng, clock=lambda: time.monotonic() + next(self._ticks))
        self.first_move, self.quit = stage.sent, stage.quit
        if stage.quit is not None:
            return 0
        self.player = UccPlayer(self._engine, rng=rng, opening=opening, pending=stage.pending,
                                first_move=stage.sent, stamps=stage.stamps)
        return self.player.run(self._in_r, self._out_file)

    def release(self) -> None:
        """The game loop has loaded."""
        os.write(self._ready_w, b"!")


@pytest.mark.parametrize("colour", [Side.RED, Side.BLUE])
def test_the_first_move_goes_out_while_the_game_loop_loads_and_the_game_goes_on(colour: Side) -> None:
    with structlog.testing.capture_logs() as logs:
        bot = HeldOpening(RandomEngine(2))
        ref = Referee(bot, colour, seed=11)
        ref.start()
        if colour == Side.BLUE:
            assert ref.step()  # RED's first move, told to BLUE with its turn
        assert ref.game is not None
        ref.prompt_bot()
        before = ref.game.legal_moves()
        first = ref.answer().move  # judged by the rules: an illegal move fails here
        assert first in before and bot.player is None  # sent by the opening stage, the game loop held back
        bot.release()
        for _ in range(12):
            if not ref.step():
                break
        bot.send("QUIT")
        assert bot.wait(5) == 0
    assert bot.first_move == first and bot.player is not None and bot.player.stats["board_mismatches"] == 0
    assert bot.player.stats["fallback_moves"] == 1 and bot.player.stats["moves"] == ref.bot_moves > 1
    [fallback] = [e for e in logs if e["event"] == "ucc.fallback_move"]
    assert fallback["reason"] == OPENING_FALLBACK_REASON and fallback["move"] == str(bot.first_move)
    assert fallback["ply"] == (0 if colour == Side.RED else 1)


def test_the_game_loop_there_in_time_answers_the_first_move_itself() -> None:
    with structlog.testing.capture_logs() as logs:
        bot = HeldOpening(RightmostEngine())
        bot.release()  # loaded before the first move is due: the stage hands everything over
        ref = Referee(bot, Side.RED, seed=4)
        ref.start()
        for _ in range(4):
            ref.step()
        bot.send("QUIT")
        assert bot.wait(5) == 0
    assert bot.first_move is None and bot.player is not None and bot.player.stats["fallback_moves"] == 0
    assert not [e for e in logs if e["event"] == "ucc.fallback_move"]


def test_quit_in_the_opening_stage_ends_it_at_once() -> None:
    bot = HeldOpening(RandomEngine(1))  # never released: the game loop never loads
    ref = Referee(bot, Side.RED)
    ref.start()
    bot.send("QUIT 0 RED")
    assert bot.wait(5) == 0 and bot.quit == "QUIT 0 RED" and bot.player is None


@given(st.integers(0, 2**32 - 1), st.sampled_from([Side.RED, Side.BLUE]))
def test_the_first_move_from_the_rows_is_legal(seed: int, colour: Side) -> None:
    rng = random.Random(seed)
    game = Game(RulesOptions(), CLASSIC.random_placement(Side.RED, rng), CLASSIC.random_placement(Side.BLUE, rng))
    if colour == Side.BLUE:
        game.play(rng.choice(game.legal_moves()))
        assume(game.result is None)  # a scout's first run may take a flag the random setup put in front
    move = first_move_from_rows(spec_rows(game, colour), rng)
    assert move is not None and move in game.legal_moves()


def test_lines_waiting_when_the_reader_starts_are_stamped_with_the_setup_time() -> None:
    # The referee's clock for RED's first move starts when it sends START, which may be while the player is
    # still starting up after its setup: such a line must not count from when the reader got to it.
    now = [100.0]
    read_end, write_end = os.pipe()
    os.write(write_end, b"START\n")
    loop = asyncio.new_event_loop()
    sink: asyncio.Queue[_Line | None] = asyncio.Queue()
    reader = threading.Thread(target=_read_lines, args=(read_end, loop, sink),
                              kwargs={"pending": b"RED x 10 10\n", "since": 40.0, "clock": lambda: now[0]})
    reader.start()
    try:
        first = loop.run_until_complete(asyncio.wait_for(sink.get(), 5))
        second = loop.run_until_complete(asyncio.wait_for(sink.get(), 5))
        now[0] = 130.0
        os.write(write_end, b"0 6 UP OK\n")
        third = loop.run_until_complete(asyncio.wait_for(sink.get(), 5))
    finally:
        os.close(write_end)
        reader.join(5)
        loop.close()
        os.close(read_end)
    assert first == _Line("RED x 10 10", 40.0) and second == _Line("START", 40.0)
    assert third == _Line("0 6 UP OK", 130.0)


def test_lines_the_opening_stage_read_keep_the_times_they_came() -> None:
    read_end, write_end = os.pipe()
    loop = asyncio.new_event_loop()
    sink: asyncio.Queue[_Line | None] = asyncio.Queue()
    read = b"START\nrow\n5 3 DOWN OK\n0 6 UP OK\n"  # two chunks: up to the row, then the rest
    reader = threading.Thread(target=_read_lines, args=(read_end, loop, sink),
                              kwargs={"pending": read, "since": 9.0, "stamps": [(10, 7.0), (len(read), 8.5)],
                                      "clock": lambda: 100.0})
    reader.start()
    try:
        got = [loop.run_until_complete(asyncio.wait_for(sink.get(), 5)) for _ in range(4)]
    finally:
        os.close(write_end)
        reader.join(5)
        loop.close()
        os.close(read_end)
    assert got == [_Line("START", 7.0), _Line("row", 7.0), _Line("5 3 DOWN OK", 8.5), _Line("0 6 UP OK", 8.5)]


def test_the_move_clock_starts_when_the_turn_line_arrived() -> None:
    now = [50.0]
    bot = _player(RandomEngine(1), limits=_limits(0.5, 1.0), clock=lambda: now[0])
    player = bot.player
    player._turn_started = 49.25  # START arrived then; the loop got to it only now
    times = player._start_move(0)
    assert times.started == 49.25 and times.hard_deadline == 50.25
    assert player._start_move(0).started == 50.0  # the stamp is used once
    bot.close_input()
    assert bot.wait(3) == 0


def test_an_oversized_bad_line_is_logged_once_and_clipped() -> None:
    junk = "X" * 70_000
    with structlog.testing.capture_logs() as logs:
        bot = _player(RandomEngine(1))
        bot.send(junk)
        assert bot.wait(5) == 1
    [bad] = [e for e in logs if e["event"] == "ucc.bad_line"]
    logged = json.dumps(bad)
    assert logged.count("X" * LOGGED_LINE) == 1 and len(logged) < 2 * LOGGED_LINE + 200
    assert "70000 characters" in bad["line"] and "no line of the UCC protocol" in bad["error"]


def test_the_search_threads_sleep_while_they_wait() -> None:
    # engine_ext/engine/__init__.py: spinning OpenMP threads cost a busy machine's search its depth.
    probe = "import os, engine_ext.engine.search; print(os.environ.get('OMP_WAIT_POLICY'))"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "PASSIVE", run.stderr
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env={**env, "OMP_WAIT_POLICY": "ACTIVE"},
                         capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "ACTIVE", run.stderr  # the environment's own choice stands


def test_the_opponent_may_break_the_repetition_rules() -> None:
    """The UCC referee enforces neither rule: the bot must accept such moves (and still obey them)."""
    shuttle = [Move.parse("A4-A5"), Move.parse("A5-A4")]

    def back_and_forth(game: Game) -> Move:
        return shuttle[(game.ply // 2) % 2]

    relaxed = RulesOptions(two_squares=None, more_squares=False)
    with structlog.testing.capture_logs() as logs:
        bot = _player(RightmostEngine())
        ref = Referee(bot, Side.BLUE, seed=5, options=relaxed, opponent=back_and_forth)
        ref.start()
        for _ in range(30):
            assert ref.step()
        bot.send("QUIT")
        assert bot.wait(3) == 0
        assert bot.player.stats["board_mismatches"] == 0
    assert any(e["event"] == "ucc.repetition_allowed" for e in logs)


def test_a_victory_ends_the_game_quietly() -> None:
    def first_move(game: Game) -> Move:
        return game.legal_moves()[0]

    bot = _player(RandomEngine(1))
    ref = Referee(bot, Side.BLUE, seed=1, opponent=first_move)
    ref.start()
    ref.step()
    ref.step()
    bot.send("5 3 DOWN VICTORY_FLAG")  # the referee's word; the bot waits for QUIT
    bot.send("QUIT RED")
    assert bot.wait(3) == 0


# --- a UCC program as an opponent: two ``perspecto ucc`` processes through the adapter ---------------


async def _referee_between(red: UccOpponent, blue: UccOpponent, options: RulesOptions) -> Game:
    placements = await asyncio.gather(red.start(Side.RED, blue.name), blue.start(Side.BLUE, red.name))
    game = Game(options, *placements)
    players = {Side.RED: red, Side.BLUE: blue}
    last: MoveResult | None = None
    while game.result is None:
        program = players[game.side_to_move]
        move = await program.get_move_for(game, last)
        last = game.play(move)  # raises IllegalMove: the test fails
        await program.tell_result(last)
    return game


async def test_two_ucc_programs_play_a_whole_game() -> None:
    started = time.monotonic()
    # What is checked is a whole game and a clean exit, not how fast a loaded machine lets a process end: the
    # adapter's 2 s before it kills a program that lingers after QUIT cut a clean exit short at load 10.
    red = UccOpponent([*UCC_CMD, "--seed", "1"], name="perspecto-red", cwd=ROOT, quit_time=15.0)
    blue = UccOpponent([*UCC_CMD, "--seed", "2"], name="perspecto-blue", cwd=ROOT, quit_time=15.0)
    try:
        game = await _referee_between(red, blue, RulesOptions())
    finally:
        codes = [await red.quit("END"), await blue.quit("END")]
    assert game.result is not None and game.ply > 20
    assert codes == [0, 0]
    assert time.monotonic() - started < 30


def _fake_program(script: str) -> list[str]:
    return [sys.executable, "-c", script]


SETUP_ECHO = "; ".join(f"print({line!r})" for line in SPEC_RED_SETUP)


# The setup's time: 0.5 s where the program never sends it (the test waits that long), and time to spare where
# the program ends the setup itself, so that a loaded machine's slow Python start reads as what it is not.
@pytest.mark.parametrize("script, why, setup_time", [
    ("print('hello'); import time; time.sleep(5)", "bad setup line 'hello'", 4.0),
    ("print('FB8sB479B8'); print('BB31555583 X'); import time; time.sleep(5)", "bad setup line", 4.0),
    ("print('FB8sB479B8'); print('BB31555583'); print('6724898974'); print('9999999999')", "illegal setup", 10.0),
    ("import sys; sys.exit(3)", "exited", 10.0),
    ("import time; time.sleep(5)", "its setup did not come within", 0.5),
])
async def test_a_program_with_a_bad_setup(script: str, why: str, setup_time: float) -> None:
    program = UccOpponent(_fake_program("import sys; sys.stdin.readline(); " + script), setup_time=setup_time)
    try:
        with pytest.raises(UccOpponentError, match=why):
            await program.start(Side.RED, "host")
    finally:
        await program.aclose()


@pytest.mark.parametrize("answer, why", [
    ("print('0 3 SIDEWAYS')", "bad move line"),
    ("print('0 0 UP')", "leaves the 10x10 board"),
    ("import time; time.sleep(5)", "a move did not come within"),
])
async def test_a_program_with_a_bad_move(answer: str, why: str) -> None:
    # The program stays alive after its answer: one that exits at once races our write of the board
    # (then the error is, rightly, "cannot write to it").
    script = (f"import sys, time; sys.stdin.readline(); {SETUP_ECHO}; sys.stdout.flush(); {answer}; "
              "sys.stdout.flush(); time.sleep(3)")
    program = UccOpponent(_fake_program(script), move_time=0.3, grace=0.2)
    placement = await program.start(Side.RED, "host")
    assert placement == spec_setup(SPEC_RED_SETUP, Side.RED)
    blue = CLASSIC.random_placement(Side.BLUE, random.Random(1))
    try:
        with pytest.raises(UccOpponentError, match=why):
            await program.get_move_for(Game(RulesOptions(), placement, blue), None)
    finally:
        await program.aclose()


async def test_surrender_and_quit() -> None:
    from bot.ucc.opponent import UccSurrender

    script = f"import sys; sys.stdin.readline(); {SETUP_ECHO}; print('SURRENDER'); sys.stdout.flush(); " \
             "sys.exit(0 if 'QUIT BLUE' in sys.stdin.read() else 5)"
    program = UccOpponent(_fake_program(script))
    placement: Mapping[Square, Rank] = await program.start(Side.RED, "host")
    rows = format_board_rows({sq: (Side.RED, r) for sq, r in placement.items()}, Side.RED)
    with pytest.raises(UccSurrender):
        await program.get_move(rows, None)
    assert await program.quit("BLUE") == 0


# --- the entrant's path: a wrapper for a referee that runs a bare path, the profile, the last log line --

STAND_IN = ROOT / "tests" / "ucc_stand_in_referee.py"


def write_wrapper(path: Path, *options: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", "ucc", "--write-wrapper", str(path), *options],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def under_stand_in(program: Path | str, *options: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """One game under the stand-in referee, run from ``cwd`` without PYTHONPATH (an entrant's shell);
    returns its report and the program's stderr (which the witness may add to after the program died)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PERSPECTO_CONFIG_DIR")}
    run = subprocess.run([sys.executable, str(STAND_IN), str(program), *options], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=60)
    return json.loads(run.stdout), run.stderr


def test_a_written_wrapper_plays_under_a_referee_that_runs_a_bare_path(tmp_path: Path) -> None:
    wrapper = tmp_path / "perspecto-ucc"
    written = write_wrapper(wrapper, "--profile", "random", "--seed", "5")
    assert written.returncode == 0, written.stderr
    assert f"stratego -T 2 {wrapper} OTHER_PROGRAM" in written.stdout
    text = wrapper.read_text()
    assert text.startswith("#!/bin/sh\n") and os.access(wrapper, os.X_OK)
    [exec_line] = [line for line in text.splitlines() if line.startswith("exec ")]
    assert exec_line.split()[1].startswith("/") and f"--config {ROOT / 'config'}" in exec_line

    report, stderr = under_stand_in(wrapper, "--colour", "blue", "--moves", "4", cwd=tmp_path)
    assert report["error"] is None, stderr
    assert report["bot_moves"] == 4 and report["exit"] == 0 and not report["killed"]
    # The wrapper exec'd: the process the referee runs (and would kill) is Perspecto itself, not a shell.
    assert report["cmdline"][2:] == ["ucc", "--config", str(ROOT / "config"), "--profile", "random", "--seed", "5"]
    assert "profile=random" in stderr and "ucc.quit" in stderr and "ucc.killed" not in stderr


def test_ucc_starts_without_importing_the_other_commands() -> None:
    # The referee wants the setup within -T seconds (2 by default) of starting the program; the match
    # command alone (its statistics) costs a second of imports.
    probe = ("import sys; from bot import cli; cli.build_parser(cli.command_module(['ucc', '--seed', '1'])); "
             "print(sorted(m for m in sys.modules if m.startswith('bot.commands.') or m == 'engine_ext.lab.stats'))")
    run = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.stdout.split() == ["['bot.commands.ucc']"], run.stderr


def test_the_old_example_does_not_run_under_a_referee_that_runs_a_bare_path(tmp_path: Path) -> None:
    report, _ = under_stand_in("perspecto ucc --profile random", cwd=tmp_path)
    assert "not an executable file" in report["error"] and report["bot_moves"] == 0


@pytest.mark.long
def test_write_wrapper_rewrites_its_own_file_only(tmp_path: Path) -> None:
    wrapper = tmp_path / "w"
    assert write_wrapper(wrapper, "--profile", "random").returncode == 0
    assert write_wrapper(wrapper, "--profile", "minimax", "--move-time", "5").returncode == 0
    assert "--profile minimax --move-time 5" in wrapper.read_text()
    other = tmp_path / "notes.txt"
    other.write_text("mine\n")
    refused = write_wrapper(other, "--profile", "random")
    assert refused.returncode == 2 and "ucc.wrapper_refused" in refused.stderr and other.read_text() == "mine\n"
    assert write_wrapper(tmp_path / "x", "--profile", "no-such-profile").returncode == 2
    assert not (tmp_path / "x").exists()


def _config(folder: Path, main: str = "", **profiles: str) -> Path:
    (folder / "profiles").mkdir(parents=True)
    (folder / "perspecto.toml").write_text(main)
    for name, body in profiles.items():
        (folder / "profiles" / f"{name}.toml").write_text(body)
    return folder


@pytest.mark.parametrize(("main", "expected"), [
    ('default_profile = "mine"\n', "hunter"),  # chosen by the opponent's name, as perspecto bot chooses
    ('default_profile = "mine"\nprofile = "mine"\n', "mine"),  # the configuration's one profile for all
])
def test_without_profile_ucc_chooses_as_perspecto_bot_does(main: str, expected: str, tmp_path: Path) -> None:
    config = _config(tmp_path / "config", main, mine='engine = "random"\n',
                     hunter='engine = "random"\nmatch = ["scripted-*"]\n')
    bot = Child(argv=[*UCC_CMD[:4], "--config", str(config), "--seed", "2"])
    ref = Referee(bot, Side.RED, seed=2)  # the colour line names the opponent "scripted-referee"
    ref.start()
    for _ in range(4):
        ref.step()
    bot.wait_for_stderr("ucc.game")  # the profile loads after the setup; its engine may not have played yet
    bot.send("QUIT")
    assert bot.wait(10) == 0
    assert f"profile={expected}" in bot.stderr


def test_without_profile_ucc_plays_the_default_profile_of_the_configuration(tmp_path: Path) -> None:
    config = _config(tmp_path / "config", 'default_profile = "mine"\n', mine='engine = "random"\n')
    bot = Child(argv=[*UCC_CMD[:4], "--config", str(config)])
    Referee(bot, Side.BLUE).start()
    bot.wait_for_stderr("ucc.game")  # the profile loads after the setup
    bot.send("QUIT")
    assert bot.wait(10) == 0
    assert "profile=mine" in bot.stderr  # not the built-in perspecto


@pytest.fixture(scope="module")
def random_wrapper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A wrapper written by hand (this checkout's code, whatever perspecto is installed)."""
    wrapper = tmp_path_factory.mktemp("wrapper") / "perspecto-ucc"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} exec {shlex.quote(sys.executable)} -m bot.cli "
                       f"ucc --config {shlex.quote(str(ROOT / 'config'))} --profile random\n")
    wrapper.chmod(0o755)
    return wrapper


@pytest.mark.parametrize(("end", "seed"), [
    ("win", 1), pytest.param("win", 2, marks=pytest.mark.long), pytest.param("win", 3, marks=pytest.mark.long),
    ("lose", 4),
])
def test_the_end_of_the_game_is_logged_though_the_referee_kills_at_once(
    end: str, seed: int, random_wrapper: Path, tmp_path: Path
) -> None:
    # The referee sends QUIT and kills its programs microseconds later (--grace 0); after a win by the
    # program's own move there is no echo first, and a loser is stopped (SIGSTOP) when the QUIT comes.
    wrapper = random_wrapper
    report, stderr = under_stand_in(wrapper, "--moves", "3", "--end", end, "--grace", "0", "--seed", str(seed),
                                    cwd=tmp_path)
    assert report["error"] is None and report["bot_moves"] == 3, stderr
    ends = [line for line in stderr.splitlines() if "ucc.quit" in line or "ucc.killed" in line]
    assert ends, stderr  # the player's own ucc.quit, or its witness's ucc.killed
    if any("ucc.killed" in line for line in ends):
        [killed] = [line for line in ends if "ucc.killed" in line]
        assert "moves=3" in killed and "profile=random" in killed
