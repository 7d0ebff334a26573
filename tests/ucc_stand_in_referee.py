"""A stand-in for the UCC 2012 referee ``stratego``, run by tests as a separate program.

It starts PROGRAM the way the referee does (manager/program.cpp of ucc/progcomp2012): the path must be an
executable file, and it is run bare, with no arguments (``execl(path, path, NULL)``), its stdin and stdout
on pipes and its stderr inherited. It then plays one game against it in the line protocol of
docs/ucc.md, with random legal moves for its own side and no repetition rule (the referee has none), and
ends it as the referee does:

- ``--end draw``: after the program's ``--moves``-th move and its echo, ``QUIT`` with a draw result;
- ``--end win``: that last move is taken as a win by the program's own move: like the referee, which
  leaves its game loop before echoing a winning move, it sends no echo, only ``QUIT NAME COLOUR VICTORY
  ...`` (the same when a move really takes a flag);
- ``--end lose``: after that last move's echo its own side "takes the flag": the program, paused for
  the other side's turn, gets only the ``QUIT`` and is never resumed;
- like the referee, it pauses the program (SIGSTOP) while its own side moves and resumes it (SIGCONT)
  for the program's turn; after ``QUIT`` it waits ``--grace`` seconds for the program to exit before
  killing it (SIGKILL). The referee means 2 seconds, but its timer counts microseconds: ``--grace 0`` is
  the real thing.

It prints one JSON object on stdout: ``exit`` (the program's exit status, negative for a signal),
``killed`` (it had to be killed), ``bot_moves``, ``quit`` (the line sent), ``cmdline`` (the running
program's command line, read after its setup: a wrapper that execs shows the command it became) and
``error`` (what went wrong, or null). Exit status 0 when the game ran as planned, 1 otherwise.

    python tests/ucc_stand_in_referee.py PROGRAM [--colour red|blue] [--moves N] [--end draw|win|lose]
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from any directory

from engine_ext.rules.game import MAX_MOVE_LIMIT, Game, IllegalMove, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import CLASSIC
from protocol.ucc import (
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

REFEREE_RULES = RulesOptions(two_squares=None, more_squares=False, move_limit=MAX_MOVE_LIMIT)
NAME = "stand-in"


class Stop(Exception):
    """The game cannot go on; the message says why."""


class Program:
    """The program as the referee runs it: a bare path, lines in and out, paused between its turns."""

    def __init__(self, path: str, answer_time: float) -> None:
        if not os.access(path, os.X_OK) or not os.path.isfile(path):
            raise Stop(f"{path!r} is not an executable file (the referee runs a bare path, with no arguments)")
        self.answer_time = answer_time
        self.proc = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._pump, args=(self.proc.stdout,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line.rstrip("\n"))
        self._lines.put(None)

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            raise Stop(f"the program closed its input before {line!r}") from None

    def recv(self, timeout: float | None = None) -> str:
        try:
            line = self._lines.get(timeout=timeout or self.answer_time)
        except queue.Empty:
            raise Stop(f"no answer within {timeout or self.answer_time:g} s") from None
        if line is None:
            raise Stop(f"the program closed its output (exit {self.proc.poll()})")
        return line

    def pause(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)

    def cmdline(self) -> list[str]:
        try:
            raw = Path(f"/proc/{self.proc.pid}/cmdline").read_bytes()
        except OSError:
            return []
        return [part.decode(errors="replace") for part in raw.split(b"\0") if part]

    def finish(self, grace: float) -> tuple[int | None, bool]:
        """Wait ``grace`` seconds for the program to exit, then kill it: (exit status, killed). A paused
        program stays paused, as under the referee."""
        deadline = time.monotonic() + grace
        while self.proc.poll() is None and time.monotonic() < deadline:
            time.sleep(min(0.01, grace))
        if self.proc.poll() is not None:
            return self.proc.returncode, False
        self.proc.kill()
        return self.proc.wait(5), True


def play(program: Program, colour: Side, moves: int, end: str, rng: random.Random) -> tuple[int, str]:
    """The game, up to the QUIT line; returns (the program's moves, the QUIT line sent)."""
    program.send(format_colour_line(colour, NAME))
    placement = parse_setup_lines([program.recv(10.0) for _ in range(CLASSIC.setup_rows)], colour)
    own = CLASSIC.random_placement(colour.other, rng)
    red, blue = (placement, own) if colour == Side.RED else (own, placement)
    game = Game(REFEREE_RULES, red, blue)
    prompt = "START"
    bot_moves = 0
    while True:
        if game.side_to_move == colour:
            program.resume()
            program.send(prompt)
            for row in format_board_rows(game.pieces(), colour):
                program.send(row)
            answer = parse_answer(program.recv())
            if isinstance(answer, Surrender):
                return bot_moves, format_quit(f"{NAME} {colour.name} SURRENDER {game.ply}")
            move = answer.to_move()
            try:
                result = game.play(move)
            except IllegalMove as exc:
                raise Stop(f"the program played an illegal move: {exc}") from None
            bot_moves += 1
            if game.result is not None or (end == "win" and bot_moves == moves):
                # A winning move is not echoed: the referee leaves its game loop first.
                return bot_moves, format_quit(f"{NAME} {colour.name} VICTORY {game.ply} 0 0")
            program.send(format_move_line(UccMove.from_move(move), outcome_of(result)))
            if bot_moves == moves and end == "draw":
                return bot_moves, format_quit(f"{NAME} NONE DRAW_DEFAULT {game.ply} 0 0")
            program.pause()  # the referee stops the program while the other side moves
            if bot_moves == moves:  # "lose": the other side's move wins; it is not sent, only QUIT
                return bot_moves, format_quit(f"{NAME} {colour.other.name} VICTORY {game.ply + 1} 0 0")
        else:
            result = game.play(rng.choice(game.legal_moves()))
            prompt = format_move_line(UccMove.from_move(result.move), outcome_of(result))
            if game.result is not None:
                return bot_moves, format_quit(f"{NAME} {colour.other.name} VICTORY {game.ply} 0 0")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("program", help="an executable file, run with no arguments")
    parser.add_argument("--colour", choices=("red", "blue"), default="red")
    parser.add_argument("--moves", type=int, default=6, help="the program's moves before QUIT")
    parser.add_argument("--end", choices=("draw", "win", "lose"), default="draw",
                        help="how the game ends after the program's last move (default draw)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--answer-time", type=float, default=5.0, help="seconds for each move (the referee's -T)")
    parser.add_argument("--grace", type=float, default=2.0,
                        help="seconds to exit after QUIT before SIGKILL (the referee's: 0)")
    args = parser.parse_args(argv)
    report: dict[str, object] = {"exit": None, "killed": False, "bot_moves": 0, "quit": None, "cmdline": [],
                                 "error": None}
    program: Program | None = None
    try:
        program = Program(args.program, args.answer_time)
        colour = Side.parse(args.colour)
        bot_moves, quit_line = play(program, colour, args.moves, args.end, random.Random(args.seed))
        report["cmdline"] = program.cmdline()
        report.update(bot_moves=bot_moves, quit=quit_line)
        program.send(quit_line)
    except (Stop, UccProtocolError) as exc:
        report["error"] = str(exc)
    if program is not None:
        if not report["cmdline"]:
            report["cmdline"] = program.cmdline()
        report["exit"], report["killed"] = program.finish(args.grace)
    print(json.dumps(report))
    return 0 if report["error"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
