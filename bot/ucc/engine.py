"""A UCC 2012 program as the bot's engine: profile ``engine = "ucc"`` (docs/ucc.md).

With it a program written for the 2012 UCC referee plays wherever a Perspecto profile does: against
Perspecto's engines on the local host (``perspecto match perspecto my-ucc-profile``), or in a tournament
through ``perspecto bot``. The program chooses its own setup (it answers the colour line), then gets the
opponent's last move and the board as the bot sees it every turn; the outcome of its own move is echoed
once the host has reported it, before the next turn or the final ``QUIT``.

The program runs under its own event loop (``bot.ucc.opponent.UccOpponent`` is async), driven from the
client's engine thread, so a slow program never holds up the bot's connection. A program that fails
(garbage, silence, exit) is stopped and the game goes on with the client's fallback moves, logged; it
cannot be re-synchronised, since a UCC program has no way to join a game under way.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shlex
import sys
from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.ucc.opponent import UccOpponent, UccOpponentError, UccSurrender
from engine_ext.engine.interface import EngineConfigError, SearchBudget
from engine_ext.rules.game import Game, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square
from protocol.validation import validation_text

log = structlog.get_logger()
T = TypeVar("T")

# Where a machine keeps its UCC programs when they are not at the paths the profiles name (a lab worker).
UCC_DIR_ENV = "PERSPECTO_UCC_DIR"
# Kept back from the client's hard deadline for the echo and the thread hand-over.
_DEADLINE_MARGIN = 0.1


class UccEngineParams(BaseModel):
    """``[engine_params]`` of a profile with ``engine = "ucc"``."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(min_length=1, description="the program and its arguments, split like a shell")
    cwd: Path | None = Field(None, description="working directory of the program")
    setup_time: float = Field(10.0, gt=0, le=600, description="seconds the program has for its setup")
    quit_time: float = Field(2.0, gt=0, le=60, description="seconds it has to exit after QUIT")
    answer_time: float | None = Field(None, gt=0, le=600, description="seconds for each answer, as the referee's "
                                      "-T gives them (the gauntlet's lab games set it); default: what is left of the "
                                      "bot's hard deadline")
    opponent_as_path: bool = Field(True, description="name the opponent on the colour line as the referee does, "
                                   "by a path (./NAME): 2012 programs take a file name from it (Ramen crashes on a "
                                   "bare name)")

    def argv(self) -> list[str]:
        """The command split like a shell, ``$NAME`` / ``${NAME}`` replaced by the environment's values;
        ``perspecto`` as the program means this installation's own (so ``perspecto ucc --profile minimax``
        works whether or not the venv is on PATH). A program path that is not on this machine is looked up by
        its file name in ``$PERSPECTO_UCC_DIR`` if set: the setting of a lab cluster's worker whose programs
        live elsewhere than the client's (docs/lab.md). A variable that is not set, or a program given by a
        path that is not an executable file, is a ``UccCommandError`` that says so (the shipped ``ucc-*``
        profiles find the 2012 programs through ``$PERSPECTO_UCC2012``)."""
        missing = [name for name in _VARIABLE.findall(self.command) if not os.environ.get(name.strip("{}"))]
        folder = os.environ.get(UCC_DIR_ENV)
        if missing and not folder:
            names = ", ".join(sorted({"$" + name.strip("{}") for name in missing}))
            hint = UCC2012_HINT if "PERSPECTO_UCC2012" in names else ""
            raise UccCommandError(f"the command {self.command!r} needs {names}, which is not set{hint}")
        argv = shlex.split(os.path.expandvars(self.command))
        if argv and argv[0] == "perspecto":
            return [sys.executable, "-m", "bot.cli", *argv[1:]]
        if argv and folder and os.sep in argv[0] and not Path(argv[0]).exists():
            here = Path(folder) / Path(argv[0]).name
            if here.exists():
                argv[0] = str(here)
        if argv and os.sep in argv[0]:
            program = Path(argv[0]) if self.cwd is None or Path(argv[0]).is_absolute() else self.cwd / argv[0]
            if not (program.is_file() and os.access(program, os.X_OK)):
                hint = UCC2012_HINT if "PERSPECTO_UCC2012" in self.command else ""
                raise UccCommandError(f"the command {self.command!r}: {program} is not an executable file{hint}")
        return argv


class UccEngineError(RuntimeError):
    """The program cannot play (any more) this game; the client falls back to its own moves."""


class UccCommandError(UccEngineError):
    """The profile's command cannot be run here: a variable it names is not set, or its program is missing."""


# $NAME or ${NAME} in a command (os.path.expandvars's forms).
_VARIABLE = re.compile(r"\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")
UCC2012_HINT = (": set PERSPECTO_UCC2012 to the bin/ folder of a build of the UCC 2012 programs "
                "(the sparring set's opponents/ucc2012/build OUT prints it: OUT/bin)")


class UccEngine:
    """One game of one UCC program. Not thread-safe: the client calls it from one thread at a time."""

    name = "ucc"

    def __init__(self, params: UccEngineParams) -> None:
        self.params = params
        self._loop: asyncio.AbstractEventLoop | None = None  # made with the program, on the engine thread
        self._program: UccOpponent | None = None
        self._colour: Side | None = None
        self._pending: Move | None = None  # its last move, whose outcome it has not been told yet
        self._told = 0  # plies of the game's history the program knows about
        self.failure: str | None = None

    # --- life cycle -----------------------------------------------------------------------------------

    def choose_setup(self, colour: Side, opponent: str, ruleset: Ruleset) -> dict[Square, Rank]:
        """Start the program for one game and return its setup (validated against ``ruleset``)."""
        if self._program is not None:
            raise UccEngineError("the program already has a setup for this game (UCC allows one)")
        self._colour = colour
        self._loop = asyncio.new_event_loop()
        self._program = UccOpponent(
            self.params.argv(), setup_time=self.params.setup_time, quit_time=self.params.quit_time,
            cwd=self.params.cwd, ruleset=ruleset,
        )
        name = opponent or "unknown"
        if self.params.opponent_as_path and "/" not in name:
            name = f"./{name}"  # the referee gives the opponent's path, and the programs expect one
        return self._run(self._program.start(colour, name))

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        program = self._playing()
        if self._colour != game.side_to_move:
            raise UccEngineError(f"asked for {game.side_to_move}'s move; the program plays {self._colour}")
        self._catch_up(game)
        last = game.history[-1] if game.history and game.history[-1].side != self._colour else None
        # The program gets what is left of the client's hard deadline (a late answer is of no use), or the
        # referee's fixed time an answer when the profile gives one.
        if self.params.answer_time is not None:
            program.move_time = self.params.answer_time
        else:
            program.move_time = max(0.01, budget.remaining(hard=True) - _DEADLINE_MARGIN)
        program.grace = 0.0
        try:
            move = self._run(program.get_move_for(game, last))
        except UccSurrender:
            self._fail("it surrendered")
            raise
        self._pending = move
        self._told = len(game.history)
        return move

    def finish(self, game: Game | None, result: str | None) -> int | None:
        """The game is over: echo its last move if due, send ``QUIT [result]`` and wait for it to exit."""
        program, loop = self._program, self._loop
        if program is None or loop is None:
            return None
        try:
            if self.failure is None and game is not None:
                with contextlib.suppress(UccEngineError):
                    self._catch_up(game)
            return loop.run_until_complete(program.quit(result))
        finally:
            self._program = None
            loop.close()

    def abandon(self, why: str) -> None:
        """The client replaced what this program would have played (a refused setup, a resumed game):
        it is out of step with the game for good, so stop it."""
        if self._program is not None and self.failure is None:
            self._fail(why)

    # --- internals ------------------------------------------------------------------------------------

    def _playing(self) -> UccOpponent:
        if self.failure is not None:
            raise UccEngineError(f"the program stopped earlier: {self.failure}")
        if self._program is None:
            raise UccEngineError("the program has not been started for this game (no setup came from it)")
        return self._program

    def _catch_up(self, game: Game) -> None:
        """Echo the program's own move with the outcome the host reported."""
        if self._pending is None:
            return
        own = [r for r in game.history[self._told:] if r.side == self._colour]
        if not own:
            return  # its move's result has not been reported yet
        played = own[0]
        if played.move != self._pending:
            # The client sent a fallback in its place (the program was late): it cannot be told.
            self._fail(f"the bot played {played.move}, not the program's {self._pending}")
            raise UccEngineError(self.failure or "")
        self._run(self._playing().tell_result(played))
        self._pending = None

    def _fail(self, why: str) -> None:
        self.failure = why
        log.warning("ucc_engine.stopped", reason=why)
        if self._program is not None and self._loop is not None:
            with contextlib.suppress(Exception):
                # At once: the client's fallback move waits for this.
                self._loop.run_until_complete(self._program.aclose(patience=0.0))

    def _run(self, step: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None, "choose_setup first"
        try:
            return self._loop.run_until_complete(step)
        except UccOpponentError as exc:
            self._fail(str(exc))
            raise UccEngineError(str(exc)) from None


def make_ucc_engine(params: Mapping[str, Any], seed: int | None) -> UccEngine:
    """The engine factory of ``engine = "ucc"`` (the seed is the program's business)."""
    try:
        return UccEngine(UccEngineParams.model_validate(dict(params)))
    except ValidationError as exc:
        raise EngineConfigError(f"engine 'ucc': {validation_text(exc)}") from None
