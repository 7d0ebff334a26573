"""Play one game under the UCC 2012 manager (``perspecto ucc``): referee lines on stdin, answers on stdout.

The bot keeps a ``Game`` view: its own pieces known, the opponent's hidden until fights reveal them. The
opponent's moves and our own echoed moves are applied with the ranks the referee reports; the ten board
rows sent before each of our moves are compared with that view, and a disagreement rebuilds the view from
the rows (see docs/ucc.md). Only protocol lines go to stdout; logs go to stderr through structlog.

The game loop runs on an event loop. A reader thread feeds stdin lines into its queue, so a ``QUIT`` that
arrives while the engine is thinking still ends the process at once. The engine is asked as the bot client
asks it (bot/daemon/deadline.py: on its own thread, a legal fallback move by the hard deadline), under the time
manager's deadlines for the referee's per-move limit (engine_ext/engine/timeman.py). The referee kills its
programs right after ``QUIT``, so the player keeps a witness process (bot/ucc/witness.py) told of the
game's state and of the ``QUIT`` line, which logs the end should the player be killed before it does. The
engine may be chosen by the opponent's name on the colour line (``engine_for``), as ``perspecto bot``
chooses its profile.
"""

from __future__ import annotations

import asyncio
import enum
import os
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import NamedTuple, NoReturn, TextIO

import structlog

from bot.config import BotProfile
from bot.daemon.deadline import EngineWorker, answer_by_deadline
from bot.daemon.engine_interface import MoveEngine, SearchBudget
from bot.daemon.fallback_setup import fallback_setup
from bot.ucc.witness import EndWitness
from engine_ext.engine.timeman import TimeLimits, TimeManager
from engine_ext.rules.game import MAX_MOVE_LIMIT, Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Square
from protocol.ucc import (
    BoardRow,
    ColourLine,
    MoveLine,
    Outcome,
    OutcomeKind,
    QuitLine,
    RefereeEvent,
    StartLine,
    Surrender,
    UccMove,
    UccProtocolError,
    format_board_rows,
    format_setup_lines,
    parse_board_rows,
    parse_referee_line,
)

log = structlog.get_logger()

DEFAULT_MOVE_TIME = 2.0  # the referee's default -T
RULESET = CLASSIC  # the referee plays the classic 10x10 game with 40 pieces a side

# The referee enforces no repetition rule, but our own moves obey them (the engine sees these options).
# Its draw comes after 5000 turns, so keep our view's own move limit out of the way.
VIEW_OPTIONS = RulesOptions(ruleset=RULESET, move_limit=MAX_MOVE_LIMIT)
_RELAXED_OPTIONS = RulesOptions(ruleset=RULESET, two_squares=None, more_squares=False, move_limit=MAX_MOVE_LIMIT)


class ChosenEngine(NamedTuple):
    """An engine chosen for the opponent, with its profile's time limits and name."""

    engine: MoveEngine
    limits: TimeLimits
    name: str
    renew: Callable[[], MoveEngine] | None = None  # a fresh one, should this one be late (None: random moves)


_EXPECTED_OUTCOME = {None: OutcomeKind.OK, "x": OutcomeKind.KILLS, "o": OutcomeKind.DIES, "xo": OutcomeKind.BOTHDIE}


class _Stop(Exception):
    """Ends the game loop with an exit code (QUIT, end of input, a fatal protocol error)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Phase(enum.Enum):
    COLOUR = "colour"  # waiting for COLOUR OPPONENT WIDTH HEIGHT
    TURN = "turn"  # waiting for START or the opponent's move
    ROWS = "rows"  # our turn: waiting for the board rows before answering
    ECHO = "echo"  # waiting for the echo of our move with its outcome
    OVER = "over"  # the game has ended; waiting for QUIT


def choose_setup(side: Side, rng: random.Random) -> dict[Square, Rank]:
    """A setup from the setup library's generator; the fallback setup if the library is missing or fails."""
    try:
        from setups.generator import generate_setup  # optional: the bot must set up without the library

        placement = generate_setup(RULESET, rng).placement(side)
        RULESET.validate_setup(side, placement)
        return placement
    except Exception as exc:  # any failure of the library must not cost the game
        log.warning("ucc.setup_library_failed", error=repr(exc))
        return fallback_setup(RULESET, side, rng)


# What the reader thread hands the game loop: a line, or None at the end of input.
_Lines = asyncio.Queue[str | None]


def _read_lines(fd: int, loop: asyncio.AbstractEventLoop, sink: _Lines,
                on_quit: Callable[[str], None] | None = None) -> None:
    """Reader thread: raw reads on the descriptor (no buffered-file lock a daemon thread could hold at exit).
    ``on_quit`` hears a QUIT line at once, before the game loop does (the referee kills right after it)."""

    def put(line: str | None) -> bool:
        try:
            loop.call_soon_threadsafe(sink.put_nowait, line)
        except RuntimeError:  # the game loop has ended: nobody reads any more
            return False
        return True

    pending = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        while b"\n" in pending:
            raw, pending = pending.split(b"\n", 1)
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if on_quit is not None and line.lstrip().upper().startswith("QUIT"):
                on_quit(line)
            if not put(line):
                return
    if pending.strip() and not put(pending.decode("utf-8", "replace").rstrip("\r")):
        return
    put(None)


class UccPlayer:
    """One game as a child process of the UCC referee; ``run`` returns the exit code."""

    def __init__(
        self,
        engine: MoveEngine,
        *,
        limits: TimeLimits | None = None,
        seed: int | None = None,
        setup: Callable[[Side, random.Random], Mapping[Square, Rank]] = choose_setup,
        profile_name: str = "",
        witness: EndWitness | None = None,
        engine_for: Callable[[str], ChosenEngine | None] | None = None,
        renew: Callable[[], MoveEngine] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.engine = engine
        self.witness = witness  # logs the end of the game if the referee kills us before we do
        self._engine_for = engine_for  # another engine for the opponent the colour line names, or None
        self._renew = renew  # a fresh engine should this one be late (None: random moves)
        # The referee's per-move limit (its default -T without limits) and the profile's times.
        self.limits = limits or TimeLimits(move_time_max=DEFAULT_MOVE_TIME, move_time_average=None, move_limit=None)
        self._clock = clock
        self.timer = TimeManager(self.limits, clock=clock)
        self._worker = EngineWorker("ucc-engine")  # the name bot/commands/ucc.py looks for at exit
        self._rng = random.Random(seed)
        self._setup = setup
        self.profile_name = profile_name or engine.name
        self.colour: Side | None = None
        self.opponent = ""
        self.game: Game | None = None
        self.phase = _Phase.COLOUR
        self._rows: list[str] = []
        self._pending: Move | None = None
        self._lines: _Lines | None = None  # made on the game loop, in run
        self._backlog: deque[str] = deque()  # lines that arrived while the engine was thinking
        self._out: TextIO | None = None
        self.stats = {"moves": 0, "fallback_moves": 0, "rebuilds": 0, "board_mismatches": 0}

    # --- I/O ----------------------------------------------------------------------------------------

    def run(self, in_fd: int, out: TextIO) -> int:
        """Serve the referee until QUIT (0), end of input (0) or a fatal protocol error (1)."""
        self._out = out
        try:
            code = asyncio.run(self._serve(in_fd))  # an exception leaves the last word to the witness
        finally:
            self._worker.abandon()
        if self.witness is not None:
            self.witness.done()  # every way out of _serve has logged the end
        return code

    async def _serve(self, in_fd: int) -> int:
        self._lines = asyncio.Queue()
        on_quit = self.witness.quit if self.witness is not None else None
        reader = threading.Thread(target=_read_lines, args=(in_fd, asyncio.get_running_loop(), self._lines, on_quit),
                                  name="ucc-stdin", daemon=True)
        reader.start()
        try:
            while True:
                line = await self._next_line()
                if line is None:
                    log.info("ucc.eof", phase=self.phase.value, **self.stats)
                    return 0
                if not line.strip():
                    continue
                try:
                    event = parse_referee_line(line)
                except UccProtocolError as exc:
                    log.error("ucc.bad_line", line=line, error=str(exc), phase=self.phase.value)
                    return 1
                answers = await self._handle(event)
                self._tell_witness()  # before the answers: the referee may act on them and kill us at once
                for answer in answers:
                    self._send(answer)
        except _Stop as stop:
            return stop.code

    def _tell_witness(self) -> None:
        if self.witness is None:
            return
        self.witness.state({
            "colour": None if self.colour is None else str(self.colour), "opponent": self.opponent,
            "profile": self.profile_name, "phase": self.phase.value,
            "ply": self.game.ply if self.game is not None else 0, **self.stats,
        })

    async def _next_line(self) -> str | None:
        if self._backlog:
            return self._backlog.popleft()
        assert self._lines is not None
        return await self._lines.get()

    def _send(self, line: str) -> None:
        assert self._out is not None
        try:
            self._out.write(line + "\n")
            self._out.flush()  # the referee waits for each line
        except (BrokenPipeError, ValueError):  # the referee has gone; nobody reads any more
            log.info("ucc.output_closed", phase=self.phase.value)
            raise _Stop(0) from None

    # --- events -------------------------------------------------------------------------------------

    async def _handle(self, event: RefereeEvent) -> list[str]:
        if isinstance(event, QuitLine):
            log.info("ucc.quit", result=event.result, phase=self.phase.value, **self.stats)
            if self.witness is not None:
                self.witness.done()  # at once: the referee's SIGKILL follows its QUIT closely
            raise _Stop(0)
        if isinstance(event, ColourLine):
            return self._on_colour(event)
        if self.phase is _Phase.COLOUR:
            self._fatal("expected the colour line first", event)
        if isinstance(event, StartLine):
            return self._on_start(event)
        if isinstance(event, MoveLine):
            return self._on_move(event)
        return await self._on_row(event)

    def _fatal(self, why: str, event: RefereeEvent | None = None) -> NoReturn:
        log.error("ucc.protocol_error", error=why, line=event.format() if event else None, phase=self.phase.value)
        raise _Stop(1)

    def _on_colour(self, event: ColourLine) -> list[str]:
        if self.phase is not _Phase.COLOUR:
            self._fatal("a second colour line", event)
        if (event.width, event.height) != (RULESET.width, RULESET.height):
            self._fatal(f"a {event.width}x{event.height} board; only {RULESET.width}x{RULESET.height} is supported")
        self.colour, self.opponent = event.colour, event.opponent
        self._choose_engine(event.opponent)
        placement = dict(self._setup(event.colour, self._rng))
        RULESET.validate_setup(event.colour, placement)
        # Classic fills all 40 squares of a side's setup rows, so the opponent's pieces stand on exactly
        # those squares; the board rows check this before our first move.
        hidden = dict.fromkeys(RULESET.setup_squares(event.colour.other), Rank.UNKNOWN)
        red, blue = (placement, hidden) if event.colour == Side.RED else (hidden, placement)
        self.game = Game(VIEW_OPTIONS, red, blue)
        lines = format_setup_lines(placement, event.colour)
        soft, hard = self.timer.spans(0)
        log.info("ucc.game", colour=str(event.colour), opponent=event.opponent, profile=self.profile_name,
                 engine=self.engine.name, setup=lines, soft=soft, hard=hard)
        self.phase = _Phase.TURN
        return lines

    def _choose_engine(self, opponent: str) -> None:
        if self._engine_for is None:
            return
        try:
            chosen = self._engine_for(opponent)
        except Exception as exc:  # a profile that cannot start must not cost the game: keep the default
            log.warning("ucc.profile_failed", opponent=opponent, error=repr(exc), kept=self.profile_name)
            return
        if chosen is not None:
            self.engine, self.limits, self.profile_name, self._renew = chosen
            self.timer = TimeManager(self.limits, clock=self._clock)

    def _on_start(self, event: StartLine) -> list[str]:
        game = self._view()
        if self.phase is not _Phase.TURN or self.colour != Side.RED or game.ply != 0:
            self._fatal("START is only for RED's first move", event)
        self.phase = _Phase.ROWS
        return []

    def _on_move(self, event: MoveLine) -> list[str]:
        assert self.colour is not None
        if self.phase is _Phase.TURN:
            self._apply(event, self.colour.other)
            if self.phase is not _Phase.OVER:
                self.phase = _Phase.ROWS
        elif self.phase is _Phase.ECHO:
            assert self._pending is not None
            try:
                echoed = event.move.to_move(RULESET)
            except UccProtocolError as exc:
                self._fatal(str(exc), event)
            if echoed != self._pending:
                self._fatal(f"the echo is not our move {UccMove.from_move(self._pending)}", event)
            if event.outcome.kind is OutcomeKind.ILLEGAL:
                log.error("ucc.illegal", move=event.move.format(), ours=str(self._pending), board=self._render())
                raise _Stop(1)
            self._pending = None
            self.phase = _Phase.TURN
            self._apply(event, self.colour)
        elif self.phase is _Phase.OVER:
            log.info("ucc.after_end", line=event.format())
        else:
            self._fatal("a move line now", event)
        return []

    async def _on_row(self, event: BoardRow) -> list[str]:
        self._rows.append(event.cells)
        if len(self._rows) < RULESET.height:
            return []
        rows, self._rows = self._rows, []
        if self.phase is _Phase.OVER:
            return []
        self._check_board(rows)
        if self.phase is not _Phase.ROWS:
            return []
        answer = await self._think()
        if isinstance(answer, Surrender):
            self.phase = _Phase.OVER
            log.info("ucc.surrender", ply=self._view().ply)
            return [answer.format()]
        self._pending = answer
        self.phase = _Phase.ECHO
        self.stats["moves"] += 1
        return [UccMove.from_move(answer).format()]

    # --- the view -----------------------------------------------------------------------------------

    def _view(self) -> Game:
        assert self.game is not None
        return self.game

    def _render(self) -> str:
        return self._view().render("american", viewer=self.colour)

    def _apply(self, event: MoveLine, mover: Side) -> None:
        """Apply a reported move with its outcome; the view's own rules yield to the referee's word."""
        game = self._view()
        outcome = event.outcome
        who = "own" if mover == self.colour else "opponent"
        if outcome.kind is OutcomeKind.ILLEGAL or outcome.ends_game:
            log.info("ucc.game_end", move=event.move.format(), outcome=outcome.format(), mover=who)
            self.phase = _Phase.OVER
            return
        try:
            move = event.move.to_move(RULESET)
        except UccProtocolError as exc:
            self._fatal(str(exc), event)
        attacker, defender = outcome.attacker, outcome.defender
        try:
            result: MoveResult | None = game.play_observed(move, attacker, defender)
        except IllegalMove as exc:
            result = self._apply_relaxed(move, outcome, mover, exc)
        if result is not None and _EXPECTED_OUTCOME.get(result.outcome) is not outcome.kind:
            log.warning("ucc.outcome_mismatch", move=str(move), reported=outcome.format(), computed=result.outcome)
        log.debug("ucc.moved", mover=who, move=event.move.format(), ours=str(move), outcome=outcome.format())

    def _apply_relaxed(self, move: Move, outcome: Outcome, mover: Side, error: IllegalMove) -> MoveResult | None:
        """The referee allows what the repetition rules forbid; failing that, the view must be wrong."""
        game = self._view()
        game.options = _RELAXED_OPTIONS
        try:
            result = game.play_observed(move, outcome.attacker, outcome.defender)
        except IllegalMove:
            result = None
        finally:
            game.options = VIEW_OPTIONS
        if result is not None:
            log.info("ucc.repetition_allowed", move=str(move), mover=str(mover), rule=str(error))
            return result
        log.warning("ucc.view_disagrees", move=str(move), outcome=outcome.format(), error=str(error),
                    board=self._render())
        self._apply_by_hand(move, outcome, mover)
        return None

    def _apply_by_hand(self, move: Move, outcome: Outcome, mover: Side) -> None:
        """Put the reported result on the board ourselves and start a fresh view from it."""
        pieces = self._view().pieces()
        piece = pieces.pop(move.frm, None)
        target = pieces.pop(move.to, None)
        if piece is None:
            piece = (mover, Rank.UNKNOWN)  # our view lost this piece; the board rows will tell
        if outcome.kind is OutcomeKind.OK:
            if piece[1] == Rank.UNKNOWN and move.distance > 1:
                piece = (piece[0], Rank.SCOUT)
            pieces[move.to] = piece
        elif outcome.kind is OutcomeKind.KILLS and outcome.attacker is not None:
            pieces[move.to] = (piece[0], outcome.attacker)
        elif outcome.kind is OutcomeKind.DIES and outcome.defender is not None:
            pieces[move.to] = (target[0] if target else piece[0].other, outcome.defender)
        self._rebuild(pieces, mover.other)

    def _rebuild(self, pieces: Mapping[Square, tuple[Side, Rank]], side_to_move: Side) -> None:
        """A fresh view of these pieces (the repetition histories start again)."""
        red = {sq: rank for sq, (side, rank) in pieces.items() if side == Side.RED}
        blue = {sq: rank for sq, (side, rank) in pieces.items() if side == Side.BLUE}
        self.game = Game(VIEW_OPTIONS, red, blue, side_to_move=side_to_move, validate_setups=False)
        self.stats["rebuilds"] += 1

    def _check_board(self, rows: list[str]) -> None:
        """Compare the referee's rows with our view; on a mismatch the rows win (own pieces exactly, enemy
        squares as shown, keeping the ranks we know of enemy pieces still on their squares)."""
        assert self.colour is not None
        game = self._view()
        try:
            board = parse_board_rows(rows, RULESET)
        except UccProtocolError as exc:
            log.warning("ucc.bad_board", error=str(exc), rows=rows)
            return
        ours = format_board_rows(game.pieces(), self.colour, RULESET)
        theirs = [row.replace("*", "#") for row in rows]
        if ours == theirs:
            return
        self.stats["board_mismatches"] += 1
        log.warning("ucc.board_mismatch", ply=game.ply, ours=ours, referee=theirs)
        enemy = self.colour.other
        pieces: dict[Square, tuple[Side, Rank]] = {sq: (self.colour, rank) for sq, rank in board.own.items()}
        for sq in board.enemy:
            known = game.piece_at(sq)
            pieces[sq] = (enemy, known[1]) if known is not None and known[0] == enemy else (enemy, Rank.UNKNOWN)
        to_move = self.colour if self.phase is _Phase.ROWS else enemy
        self._rebuild(pieces, to_move)

    # --- thinking -----------------------------------------------------------------------------------

    async def _think(self) -> Move | Surrender:
        game = self._view()
        if not game.sendable_moves():  # legal under both readings of a repeated position
            # Only repetition (or our view's own end of game) forbids every move; the referee does not.
            loose = [game.move_of(code) for code in game.position.moves(True)]
            if not loose:
                return Surrender()
            self.stats["fallback_moves"] += 1
            move = self._rng.choice(loose)
            log.warning("ucc.no_rule_abiding_move", move=str(move), ply=game.ply, result=str(game.result))
            return move
        times = self.timer.start_move(game.ply)
        budget = SearchBudget.for_move(times, clock=self._clock)
        thinking = asyncio.ensure_future(answer_by_deadline(self._worker, self.engine, game, budget, self._rng,
                                                            renew=self._renew, events="ucc"))
        assert self._lines is not None
        try:
            while not thinking.done():
                reading = asyncio.ensure_future(self._lines.get())
                await asyncio.wait({thinking, reading}, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()  # a line not yet read stays in the queue
                    continue
                line = reading.result()
                if line is None:
                    log.info("ucc.eof", phase=self.phase.value, thinking=True, **self.stats)
                    raise _Stop(0)
                self._line_while_thinking(line)
        finally:
            thinking.cancel()  # a no-op once it is done; else the helper lets the engine go
        answer = thinking.result()
        self.timer.finish_move(times)
        self.engine = answer.engine
        if answer.fallback is not None:
            self.stats["fallback_moves"] += 1
        return answer.move

    def _line_while_thinking(self, line: str) -> None:
        """The referee speaks while we think: QUIT ends the game now, anything else waits its turn."""
        try:
            event = parse_referee_line(line)
        except UccProtocolError:
            event = None
        if isinstance(event, QuitLine):
            log.info("ucc.quit", result=event.result, phase=self.phase.value, thinking=True, **self.stats)
            if self.witness is not None:
                self.witness.done()
            raise _Stop(0)
        if line.strip():
            log.warning("ucc.line_while_thinking", line=line)
            self._backlog.append(line)


def run_ucc(
    profile: BotProfile,
    *,
    move_time: float = DEFAULT_MOVE_TIME,
    seed: int | None = None,
    in_fd: int = 0,
    out: TextIO,
    witness: EndWitness | None = None,
    select_profile: Callable[[str], BotProfile] | None = None,
) -> int:
    """Play one UCC game with ``profile``'s engine, reading the referee from ``in_fd``; the exit code.
    ``move_time`` is the referee's per-move limit (its ``-T``). ``select_profile`` chooses by the opponent's
    name from the colour line, as ``perspecto bot`` does."""
    engine = profile.create_engine(seed)

    def engine_for(opponent: str) -> ChosenEngine | None:
        assert select_profile is not None
        chosen = select_profile(opponent)
        if chosen.name == profile.name:
            return None
        return ChosenEngine(chosen.create_engine(seed), TimeLimits.for_ucc(chosen, move_time), chosen.name,
                            renew=lambda: chosen.create_engine(seed))

    player = UccPlayer(engine, limits=TimeLimits.for_ucc(profile, move_time), seed=seed, profile_name=profile.name,
                       witness=witness, engine_for=engine_for if select_profile is not None else None,
                       renew=lambda: profile.create_engine(seed))
    return player.run(in_fd, out)
