"""Run a program that speaks the UCC 2012 manager protocol as a player (docs/ucc.md).

The other direction of bot/ucc/player.py: here Perspecto's host is the referee and the UCC program
(a 2012 competition entrant, or ``perspecto ucc`` itself) is its child process. The host keeps the
full-information ``Game``; this adapter only speaks the wire protocol:

    program = UccOpponent("perspecto ucc --profile random", name="perspecto-ucc")
    placement = await program.start(Side.RED, "perspecto")
    ... each of its turns:
    move = await program.get_move_for(game, last_result)  # or get_move(rows, last_move_line)
    result = game.play(move)                               # the host judges legality
    await program.tell_result(result)
    ... at the end:
    await program.quit("RED")

Whatever the program does wrong (garbage, silence, exiting) surfaces as ``UccOpponentError`` with its
last stderr lines; ``SURRENDER`` is ``UccSurrender``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from collections import deque
from collections.abc import Mapping, Sequence
from types import TracebackType

import structlog

from engine_ext.rules.game import Game, Move, MoveResult
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Ruleset, Square
from protocol.ucc import (
    Outcome,
    OutcomeKind,
    Surrender,
    UccMove,
    UccProtocolError,
    format_board_rows,
    format_colour_line,
    format_move_line,
    format_quit,
    outcome_of,
    parse_answer,
    parse_setup_lines,
)

log = structlog.get_logger()

STDERR_TAIL = 20  # stderr lines kept for error messages
_SETUP_LETTERS = frozenset("123456789sBF.")


class UccOpponentError(RuntimeError):
    """The UCC program failed: bad setup or move line, no answer in time, or it exited."""


class UccSurrender(Exception):
    """The program answered SURRENDER."""


def board_rows_for(game: Game, viewer: Side) -> list[str]:
    """The rows the referee shows ``viewer`` for a full-information game."""
    return format_board_rows(game.pieces(), viewer, game.options.ruleset)


def move_line(result: MoveResult) -> str:
    """A played move with its outcome, as the referee reports it."""
    return format_move_line(UccMove.from_move(result.move), outcome_of(result))


class UccOpponent:
    """One game with one UCC program as a child process."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        name: str | None = None,
        move_time: float = 2.0,
        setup_time: float = 10.0,
        grace: float = 1.0,
        quit_time: float = 2.0,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        ruleset: Ruleset = CLASSIC,
    ) -> None:
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError("an empty command")
        self.name = name or os.path.basename(self.argv[0])
        self.move_time, self.setup_time, self.grace, self.quit_time = move_time, setup_time, grace, quit_time
        self.cwd, self.env, self.ruleset = cwd, dict(env) if env is not None else None, ruleset
        self.colour: Side | None = None
        self.returncode: int | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self._stderr_task: asyncio.Task[None] | None = None
        self._turns = 0

    # --- life cycle -----------------------------------------------------------------------------------

    async def start(self, colour: Side, opponent_name: str) -> dict[Square, Rank]:
        """Start the program, tell it its colour and read its setup (validated against the ruleset)."""
        if self._proc is not None:
            raise UccOpponentError(f"{self.name}: already started")
        self.colour = colour
        try:
            self._proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.cwd, env=self.env,
            )
        except OSError as exc:
            raise UccOpponentError(f"{self.name}: cannot start {self.argv[0]!r}: {exc}") from None
        self._stderr_task = asyncio.create_task(self._drain_stderr())
        log.info("ucc_opponent.started", program=self.name, pid=self._proc.pid, colour=str(colour))
        await self._send(format_colour_line(colour, opponent_name, self.ruleset.width, self.ruleset.height))
        deadline = asyncio.get_running_loop().time() + self.setup_time
        lines: list[str] = []
        for _ in range(self.ruleset.setup_rows):
            line = await self._read("its setup", max(0.0, deadline - asyncio.get_running_loop().time()))
            lines.append(line)
            if len(line) != self.ruleset.width or not set(line) <= _SETUP_LETTERS:
                raise self._error(f"bad setup line {line!r}: expected {self.ruleset.width} piece letters")
        try:
            placement = parse_setup_lines(lines, colour, self.ruleset)
        except UccProtocolError as exc:
            raise self._error(f"bad setup {lines!r}: {exc}") from None
        log.info("ucc_opponent.setup", program=self.name, setup=lines)
        return placement

    async def quit(self, result: str | None = None) -> int | None:
        """Send ``QUIT [RESULT]`` and wait for the program to exit (killing it if it lingers)."""
        proc = self._proc
        if proc is None:
            return None
        if proc.returncode is None:
            with contextlib.suppress(UccOpponentError):
                await self._send(format_quit(result))
        await self._close(proc, self.quit_time)
        return self.returncode

    async def aclose(self, patience: float = 0.2) -> None:
        """Stop the program without a word (after an error): ``patience`` seconds to exit on its own, then
        kill."""
        if self._proc is not None:
            await self._close(self._proc, patience)

    async def __aenter__(self) -> UccOpponent:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def _close(self, proc: asyncio.subprocess.Process, patience: float) -> None:
        if proc.stdin is not None and not proc.stdin.is_closing():
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), patience)
        except TimeoutError:
            log.warning("ucc_opponent.kill", program=self.name, pid=proc.pid)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
        if self._stderr_task is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError):
                await asyncio.wait_for(self._stderr_task, 1.0)
        self.returncode = proc.returncode
        log.info("ucc_opponent.exited", program=self.name, code=proc.returncode)

    # --- turns ----------------------------------------------------------------------------------------

    async def get_move(self, board_rows: Sequence[str], last_move: str | None) -> Move:
        """Its next move: ``last_move`` is the opponent's move with its outcome (None: ``START``, RED's
        first turn), then the board rows from its side. Raises ``UccSurrender`` on ``SURRENDER``."""
        if last_move is None and not (self._turns == 0 and self.colour == Side.RED):
            raise UccOpponentError(f"{self.name}: START is only for RED's first turn")
        self._turns += 1
        await self._send(last_move if last_move is not None else "START")
        for row in board_rows:
            await self._send(row)
        line = await self._read("a move", self.move_time + self.grace)
        try:
            answer = parse_answer(line)
            if isinstance(answer, Surrender):
                raise UccSurrender(f"{self.name} surrendered")
            return answer.to_move(self.ruleset)
        except UccProtocolError as exc:
            raise self._error(f"bad move line {line!r}: {exc}") from None

    async def get_move_for(self, game: Game, last: MoveResult | None) -> Move:
        """``get_move`` from the host's full-information game and the opponent's last move."""
        assert self.colour is not None, "start() first"
        return await self.get_move(board_rows_for(game, self.colour), None if last is None else move_line(last))

    async def tell_result(self, result: MoveResult) -> None:
        """Echo its own move with the outcome the host computed."""
        await self._send(move_line(result))

    async def tell_illegal(self, move: Move) -> None:
        """Echo its move as ILLEGAL (the host then ends the game)."""
        await self._send(format_move_line(UccMove.from_move(move), Outcome(OutcomeKind.ILLEGAL)))

    # --- I/O ------------------------------------------------------------------------------------------

    def _error(self, what: str) -> UccOpponentError:
        tail = " | ".join(self._stderr_tail)
        return UccOpponentError(f"{self.name}: {what}" + (f" (stderr: {tail})" if tail else ""))

    async def _send(self, line: str) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise UccOpponentError(f"{self.name}: not started")
        try:
            proc.stdin.write(line.encode() + b"\n")
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise self._error(f"cannot write to it ({exc!r}); exit code {proc.returncode}") from None

    async def _read(self, what: str, timeout: float) -> str:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            try:
                raw = await asyncio.wait_for(proc.stdout.readline(), max(0.0, remaining))
            except TimeoutError:
                raise self._error(f"{what} did not come within {timeout:.3g} s") from None
            except ValueError:  # longer than the stream's line limit
                raise self._error(f"an endless line instead of {what}") from None
            if not raw:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 1.0)
                raise self._error(f"exited (code {proc.returncode}) instead of sending {what}")
            line = raw.decode("utf-8", "replace").strip()
            if line:  # blank lines carry nothing; the next line is the answer
                log.debug("ucc_opponent.line", program=self.name, line=line)
                return line

    async def _drain_stderr(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        while raw := await proc.stderr.readline():
            text = raw.decode("utf-8", "replace").rstrip()
            self._stderr_tail.append(text)
            log.debug("ucc_opponent.stderr", program=self.name, line=text)
