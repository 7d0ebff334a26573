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
chooses its profile; that choice runs on a thread of its own, so that ``perspecto ucc`` can answer the colour
line with its setup first (bot/ucc/opening.py) and load the configuration and the engine afterwards. Until
the engine is there the game goes on: should it still be loading when a move is due, the player waits for it
until the soft deadline, then plays a random legal move. Should the game loop itself still have been
importing when our first move was due, the opening stage sent that move (``first_move``): the player replays
the lines the stage read and waits for that move's echo as after any move it sent. Each move's clock starts
when the line that began our turn arrived (the reader thread stamps every line), not when the game loop got
round to it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import os
import random
import select
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TextIO

import structlog

from bot.daemon.deadline import EngineWorker, answer_by_deadline
from bot.daemon.engine_interface import MoveEngine, SearchBudget
from bot.safe_text import clip as clip_text
from bot.ucc.opening import DEFAULT_MOVE_TIME, MAX_LINE_BYTES, RULESET, Opening, SetupChooser, choose_setup
from bot.ucc.witness import EndWitness
from engine_ext.engine.timeman import MoveTimes, TimeLimits, TimeManager
from engine_ext.rules.game import MAX_MOVE_LIMIT, Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Square
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

if TYPE_CHECKING:
    from bot.daemon.learning import OpponentMemory
    from engine_ext.beliefs.observed import SetupWatch
    from setups.notation import Setup

log = structlog.get_logger()

# The reason given for a first move the opening stage sent (bot/ucc/opening.py ``hold_first_move``).
OPENING_FALLBACK_REASON = "opening fallback: the game loop was still loading"

__all__ = ["DEFAULT_MOVE_TIME", "ChosenEngine", "UccPlayer", "choose_setup", "run_ucc"]

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
    memory: OpponentMemory | None = None  # the opponent store of its configuration (None: no learning)


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


class _Line(NamedTuple):
    """A line from the referee and when it arrived (on the player's clock)."""

    text: str
    arrived: float


# What the reader thread hands the game loop: a line, or None at the end of input.
_Lines = asyncio.Queue[_Line | None]

# MAX_LINE_BYTES (bot/ucc/opening.py, whose opening stage keeps lines to it too): the most of a line the reader keeps.
# The most of the opponent's name (the colour line's) the player keeps, matches profiles with, stores and tells
# its witness: a real one is a program's path. A 10 MB name, told to the witness after every line, made the
# first move late (issue 46).
OPPONENT_NAME_MAX = 1024


def _read_lines(fd: int, loop: asyncio.AbstractEventLoop, sink: _Lines,
                on_quit: Callable[[str], None] | None = None, *, pending: bytes = b"", since: float | None = None,
                stamps: Sequence[tuple[int, float]] = (), clock: Callable[[], float] = time.monotonic) -> None:
    """Reader thread: raw reads on the descriptor (no buffered-file lock a daemon thread could hold at exit),
    after the bytes already read (``pending``). Each line is stamped with ``clock`` when its bytes were read;
    with ``since`` (the setup went out then, before this thread started), the bytes already waiting when it
    starts are stamped ``since``: they may have come any time after it. ``stamps`` (the opening stage's:
    where each chunk of ``pending`` ends, when it was read) stamp the lines of ``pending`` themselves.
    ``on_quit`` hears a QUIT line at once, before the game loop does (the referee kills right after it)."""

    def put(line: _Line | None) -> bool:
        try:
            loop.call_soon_threadsafe(sink.put_nowait, line)
        except RuntimeError:  # the game loop has ended: nobody reads any more
            return False
        return True

    def deliver(raw: bytes, at: float) -> bool:
        line = raw.decode("utf-8", "replace").rstrip("\r")
        if on_quit is not None and line.lstrip().upper().startswith("QUIT"):
            on_quit(line)
        return put(_Line(line, at))

    if stamps:  # lines the opening stage read: each stamped with its chunk's time
        done = 0
        while (end := pending.find(b"\n", done)) >= 0:
            if not deliver(pending[done:end], next((at for upto, at in stamps if upto > end), stamps[-1][1])):
                return
            done = end + 1
        pending = pending[done:]
    arrived = clock() if since is None else since
    if since is not None and not select.select([fd], [], [], 0)[0]:
        since = None  # nothing waiting: what comes next is stamped when it is read
    dropped = 0  # bytes of the line being read dropped past MAX_LINE_BYTES
    while True:
        while b"\n" in pending:
            raw, pending = pending.split(b"\n", 1)
            if dropped:
                log.warning("ucc.line_too_long", kept=len(raw), dropped=dropped)
                dropped = 0
            if not deliver(raw, arrived):
                return
        if len(pending) > MAX_LINE_BYTES:  # no end in sight: keep the bound's worth, drop the rest as it comes
            dropped += len(pending) - MAX_LINE_BYTES
            pending = pending[:MAX_LINE_BYTES]
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            break
        arrived = clock() if since is None else since
        since = None
        if dropped and b"\n" not in chunk:
            dropped += len(chunk)  # still the overlong line
            continue
        if dropped:
            end = chunk.index(b"\n")
            dropped += end
            chunk = chunk[end:]  # the line ends here: its kept part goes out with this newline
        pending += chunk
    if dropped:
        log.warning("ucc.line_too_long", kept=len(pending), dropped=dropped)
    if pending.strip() and not put(_Line(pending.decode("utf-8", "replace").rstrip("\r"), arrived)):
        return
    put(None)


class UccPlayer:
    """One game as a child process of the UCC referee; ``run`` returns the exit code."""

    def __init__(
        self,
        engine: MoveEngine | None,
        *,
        limits: TimeLimits | None = None,
        seed: int | None = None,
        rng: random.Random | None = None,
        setup: SetupChooser = choose_setup,
        profile_name: str = "",
        witness: EndWitness | None = None,
        engine_for: Callable[[str], ChosenEngine | None] | None = None,
        renew: Callable[[], MoveEngine] | None = None,
        opening: Opening | None = None,
        pending: bytes = b"",
        first_move: Move | None = None,
        stamps: Sequence[tuple[int, float]] = (),
        clock: Callable[[], float] = time.monotonic,
        memory: OpponentMemory | None = None,
        profile_check: Callable[[], None] | None = None,
    ) -> None:
        """``engine`` None: ``engine_for`` gives it, loaded on a thread once the colour line names the
        opponent (a failure then ends the game with exit 2). ``opening``: the colour line was answered with
        this setup already (bot/ucc/opening.py), and ``pending`` is the input read after it; ``first_move``:
        our first move was sent already too (``hold_first_move``), so our first turn waits for its echo;
        ``stamps``: when the opening stage read ``pending`` (``FirstMoveStage.stamps``); ``memory``: what earlier
        games showed of this opponent primes the engine, and this game's part is kept at its end (None: nothing
        is carried from game to game); ``profile_check``: waits for the configuration and the profile only (not
        the engine) and raises what is wrong with them, for the end of input."""
        if engine is None and engine_for is None:
            raise ValueError("a player needs an engine, or engine_for to choose one")
        self.engine = engine
        self.witness = witness  # logs the end of the game if the referee kills us before we do
        self._memory = memory
        self._remembered = False  # the game's end is in the memory already
        self._watch: SetupWatch | None = None  # what the game shows of the opponent's setup (made when first asked)
        self._watch_failed = False  # reading it failed once: this game keeps nothing more
        self._kept_shown = 0  # how many of the opponent's pieces the memory holds for this game
        self._game_id = f"ucc-{time.time_ns()}"  # the memory's name for this game
        self._store_lock = threading.Lock()  # the memory is written from the loading thread and the game loop
        self._engine_for = engine_for  # another engine for the opponent the colour line names, or None
        self._renew = renew  # a fresh engine should this one be late (None: random moves)
        self._profile_check = profile_check
        # The referee's per-move limit (its default -T without limits) and the profile's times.
        self.limits = limits or TimeLimits(move_time_max=DEFAULT_MOVE_TIME, move_time_average=None, move_limit=None)
        self._clock = clock
        self.timer = TimeManager(self.limits, clock=clock)
        self._worker = EngineWorker("ucc-engine")  # the name bot/commands/ucc.py looks for at exit
        self._loader = EngineWorker("ucc-load")  # runs engine_for: configuration, profile, engine
        self._loading: asyncio.Future[ChosenEngine | None] | None = None  # engine_for's answer, until taken
        self._rng = rng if rng is not None else random.Random(seed)
        self._setup = setup
        self._opening = opening
        self._input = pending
        self._stamps = tuple(stamps)
        self.profile_name = profile_name or (engine.name if engine is not None else "")
        self.colour: Side | None = None
        self.opponent = ""
        self.game: Game | None = None
        self.phase = _Phase.COLOUR
        self._rows: list[str] = []
        self._setup_lines: list[str] = []
        self._pending: Move | None = None
        self._sent_first = first_move  # sent by the opening stage; taken as our answer at our first turn
        self._lines: _Lines | None = None  # made on the game loop, in run
        self._backlog: deque[_Line] = deque()  # lines that arrived while the engine was thinking
        self._arrived = 0.0  # when the line being handled arrived
        self._turn_started: float | None = None  # when the line that began our turn arrived
        self._out: TextIO | None = None
        self.stats = {"moves": 0, "fallback_moves": 0, "rebuilds": 0, "board_mismatches": 0}

    # --- I/O ----------------------------------------------------------------------------------------

    def run(self, in_fd: int, out: TextIO) -> int:
        """Serve the referee until QUIT (0), end of input (0), a fatal protocol error (1) or an engine that
        could not be loaded (2)."""
        self._out = out
        try:
            code = asyncio.run(self._serve(in_fd))  # an exception leaves the last word to the witness
        finally:
            self._worker.abandon()
            self._loader.abandon()
        if self.witness is not None:
            self.witness.done()  # every way out of _serve has logged the end
        return code

    async def _serve(self, in_fd: int) -> int:
        self._lines = asyncio.Queue()
        on_quit = self.witness.quit if self.witness is not None else None
        # Bytes waiting when the reader starts came after what the opening read: after its last stamp.
        since = self._stamps[-1][1] if self._stamps else self._opening.sent if self._opening is not None else None
        reader = threading.Thread(target=_read_lines, args=(in_fd, asyncio.get_running_loop(), self._lines, on_quit),
                                  kwargs={"pending": self._input, "since": since, "stamps": self._stamps,
                                          "clock": self._clock},
                                  name="ucc-stdin", daemon=True)
        reader.start()
        try:
            if self._opening is not None:
                self._begin(self._opening)
            while True:
                item = await self._next_line()
                if item is None:
                    await self._end_of_input()
                line, self._arrived = item
                if not line.strip():
                    continue
                try:
                    event = parse_referee_line(line)
                except UccProtocolError as exc:
                    log.error("ucc.bad_line", line=clip(line), error=bad_line_error(exc, line), phase=self.phase.value)
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
            "colour": None if self.colour is None else str(self.colour), "opponent": clip(self.opponent),
            "profile": self.profile_name, "phase": self.phase.value,
            "ply": self.game.ply if self.game is not None else 0, **self.stats,
        })

    async def _next_line(self) -> _Line | None:
        """The next line (None: the end of input); meanwhile takes up the engine once it is loaded."""
        if self._backlog:
            return self._backlog.popleft()
        assert self._lines is not None
        if self._loading is None:
            return await self._lines.get()
        reading = asyncio.ensure_future(self._lines.get())
        either: set[asyncio.Future[Any]] = {reading, self._loading}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not reading.done():
            reading.cancel()  # a line not yet read stays in the queue
        if self._loading.done():
            self._take_engine()
        return reading.result() if reading.done() and not reading.cancelled() else await self._next_line()

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
            self._remember(*self._quit_result(event))
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
        placement = dict(self._setup(event.colour, self._rng))
        RULESET.validate_setup(event.colour, placement)
        opening = Opening(event, placement, format_setup_lines(placement, event.colour))
        self._begin(opening)
        return opening.lines

    def _begin(self, opening: Opening) -> None:
        """The game from the colour line and our setup on: the view, and the engine for this opponent."""
        event = opening.colour
        self.colour, self.opponent = event.colour, clip_text(event.opponent, OPPONENT_NAME_MAX)
        # Classic fills all 40 squares of a side's setup rows, so the opponent's pieces stand on exactly
        # those squares; the board rows check this before our first move.
        hidden = dict.fromkeys(RULESET.setup_squares(event.colour.other), Rank.UNKNOWN)
        red, blue = (opening.placement, hidden) if event.colour == Side.RED else (hidden, opening.placement)
        self.game = Game(VIEW_OPTIONS, red, blue)
        self._setup_lines = opening.lines
        self.phase = _Phase.TURN
        if self._engine_for is None:
            self._prime(self.engine)
            self._log_game()
        else:  # on a thread: the configuration and the engine may take seconds to load on a busy machine
            self._loading = self._loader.submit(self._load_engine, self.opponent)

    def _load_engine(self, opponent: str) -> ChosenEngine | None:
        """On the loading thread: the engine for ``opponent``, primed with what earlier games showed of it."""
        assert self._engine_for is not None
        chosen = self._engine_for(opponent)
        if chosen is None:
            return None
        if self._memory is None:
            self._memory = chosen.memory  # read on the game loop only once the engine is taken
        self._prime(chosen.engine)
        renew = chosen.renew
        if renew is not None and self._memory is not None:
            def primed() -> MoveEngine:
                engine = renew()
                self._prime(engine)
                return engine
            chosen = chosen._replace(renew=primed)
        return chosen

    def _prime(self, engine: MoveEngine | None) -> None:
        """The opponent's setups as earlier games showed them, for the engine's beliefs (bot/daemon/learning.py).
        Whatever goes wrong here costs what was learnt, never the game."""
        if self._memory is not None and engine is not None and self.colour is not None:
            try:
                self._memory.prime_engine(engine, self.opponent, RULESET, self.colour.other)
            except Exception as exc:
                log.warning("ucc.memory_failed", step="prime", error=repr(exc))

    def _seen(self) -> Setup | None:
        """What the game has shown of the opponent's setup so far (None also once the view was rebuilt from
        the board rows: it no longer knows where the opponent's pieces started)."""
        assert self.colour is not None
        if self.stats["rebuilds"] > 0 or self._watch_failed:
            return None
        game = self._view()
        try:
            if self._watch is None:
                from engine_ext.beliefs.observed import SetupWatch  # here: the game loop's imports delay our first move

                self._watch = SetupWatch(game, self.colour)
            return self._watch.update(game)
        except Exception as exc:  # what this game shows is lost, never the game
            log.warning("ucc.memory_failed", step="read the game", error=repr(exc))
            self._watch_failed = True
            return None

    def _keep(self, won: bool | None, reason: str, seen: Setup | None, progress: bool = False) -> None:
        assert self._memory is not None and self.colour is not None
        with self._store_lock:
            if progress and self._remembered:
                return  # the end is kept already: a late progress must not undo it
            self._memory.record(self.opponent, won=won, reason=reason, setup=None, plies=self._view().ply,
                                engine=self.engine, game_id=self._game_id, opponent_seen=seen,
                                opponent_side=self.colour.other, replace=True)

    def _keep_progress(self) -> None:
        """While the engine thinks: keep the game as far as it has shown the opponent's setup, on the loading
        thread (the referee kills its programs as soon as a game ends, often before our end is written)."""
        if self._memory is None or self._memory.store is None or self._remembered or self.colour is None:
            return  # no store: the game's end says once that it is not kept
        seen = self._seen()
        if seen is None or len(seen.pieces) == self._kept_shown:
            return
        self._kept_shown = len(seen.pieces)
        self._loader.submit(self._keep, None, "adjourned", seen, True)  # until the end says otherwise

    def _quit_result(self, event: QuitLine) -> tuple[bool | None, str]:
        """Won (None: no winner) and why, as ``QUIT``'s result line says (the referee's last line, ``NAME COLOUR
        OUTCOME TURNS ...``); no readable line: adjourned."""
        from bot.ucc.referee import RefereeLogError, parse_result_line

        try:
            result = parse_result_line(event.result or "")
        except RefereeLogError:
            return None, "adjourned"
        winner = result.winner
        won = None if winner is None else winner == self.colour
        if result.forfeit is not None:
            return won, "forfeit_" + result.outcome.lower()
        return won, result.outcome.lower()

    def _remember(self, won: bool | None, reason: str) -> None:
        """Keep the game's end and what it showed of the opponent's setup (once; a failing store never costs
        the game). Called as soon as the game is known to be over: the referee kills its programs right
        after QUIT."""
        if self._memory is None or self._remembered or self.colour is None or self.game is None:
            return
        self._remembered = True
        self._keep(won, reason, self._seen())

    def _take_engine(self, *, at_end: bool = False) -> None:
        """The engine for this opponent has loaded (or failed to): play with it from now on (``at_end``: the
        game is over, only a failure matters)."""
        loading, self._loading = self._loading, None
        assert loading is not None and loading.done()
        try:
            chosen = loading.result()
        except Exception as exc:
            why = _failure(exc)
            if self.engine is None:  # nothing to play with: a bad configuration or profile
                log.error("ucc.bad_profile", opponent=self.opponent, error=why)
                raise _Stop(2) from None
            # A profile that cannot start must not cost the game: keep the default.
            log.warning("ucc.profile_failed", opponent=self.opponent, error=why, kept=self.profile_name)
        else:
            if chosen is not None:
                self.engine, self.limits, self.profile_name, self._renew = (chosen.engine, chosen.limits, chosen.name,
                                                                           chosen.renew)
                self.timer = TimeManager(self.limits, clock=self._clock)
            elif self.engine is None:
                log.error("ucc.bad_profile", opponent=self.opponent, error="no profile was chosen")
                raise _Stop(2)
        if not at_end:
            self._log_game()

    def _log_game(self) -> None:
        assert self.colour is not None and self.engine is not None
        soft, hard = self.timer.spans(0)
        log.info("ucc.game", colour=str(self.colour), opponent=self.opponent, profile=self.profile_name,
                 engine=self.engine.name, setup=self._setup_lines, soft=soft, hard=hard)

    def _on_start(self, event: StartLine) -> list[str]:
        game = self._view()
        if self.phase is not _Phase.TURN or self.colour != Side.RED or game.ply != 0:
            self._fatal("START is only for RED's first move", event)
        self.phase = _Phase.ROWS
        self._turn_started = self._arrived
        return []

    def _on_move(self, event: MoveLine) -> list[str]:
        assert self.colour is not None
        if self.phase is _Phase.TURN:
            self._apply(event, self.colour.other)
            if self.phase is not _Phase.OVER:
                self.phase = _Phase.ROWS
                self._turn_started = self._arrived
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
        if self._sent_first is not None:
            return self._take_sent_first_move()
        answer = await self._think()
        if isinstance(answer, Surrender):
            self.phase = _Phase.OVER
            log.info("ucc.surrender", ply=self._view().ply)
            self._remember(False, "surrender")
            return [answer.format()]
        self._pending = answer
        self.phase = _Phase.ECHO
        self.stats["moves"] += 1
        return [UccMove.from_move(answer).format()]

    def _take_sent_first_move(self) -> list[str]:
        """Our first turn, answered by the opening stage while the game loop loaded: that move is ours and
        out already; wait for its echo as after any move sent."""
        move, self._sent_first = self._sent_first, None
        assert move is not None
        game = self._view()
        self._turn_started = None
        if move not in game.sendable_moves():  # cannot be: it was found on the same rows; the echo will tell
            log.error("ucc.opening_move_not_legal_here", move=str(move), board=self._render())
        self._pending = move
        self.phase = _Phase.ECHO
        self.stats["moves"] += 1
        self.stats["fallback_moves"] += 1
        log.warning("ucc.fallback_move", reason=OPENING_FALLBACK_REASON, move=str(move), ply=game.ply,
                    sent=UccMove.from_move(move).format())
        return []  # nothing more to send

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
            ours = mover == self.colour
            if outcome.kind is OutcomeKind.ILLEGAL:
                self._remember(not ours, "forfeit_illegal_move")
            elif outcome.kind is OutcomeKind.VICTORY_FLAG:
                self._remember(ours, "flag")
            else:
                self._remember(None, outcome.format().lower())
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
        times = self._start_move(game.ply)
        if self._loading is not None:  # still loading: wait for it until the soft deadline at most (a busy
            # machine may keep this thread from the interpreter for a while: the margin up to the hard one)
            await self._while_reading(self._loading, until=times.soft_deadline)
            if self._loading.done():
                self._take_engine()
        if self.engine is None:
            return self._loading_fallback(game, times)
        budget = SearchBudget.for_move(times, clock=self._clock)
        thinking = asyncio.ensure_future(answer_by_deadline(self._worker, self.engine, game, budget, self._rng,
                                                            renew=self._renew, events="ucc"))
        self._keep_progress()
        try:
            await self._while_reading(thinking)
        finally:
            thinking.cancel()  # a no-op once it is done; else the helper lets the engine go
        answer = thinking.result()
        self.timer.finish_move(times)
        self.engine = answer.engine
        if answer.fallback is not None:
            self.stats["fallback_moves"] += 1
        return answer.move

    def _start_move(self, ply: int) -> MoveTimes:
        """The time manager's budget for this move, counted from when the line that began our turn arrived:
        the referee's clock started then, however long the game loop took to get here (a busy machine)."""
        times = self.timer.start_move(ply)
        started, self._turn_started = self._turn_started, None
        if started is None or started >= times.started:
            return times
        log.debug("ucc.turn", ply=ply, lag=round(times.started - started, 3))
        return dataclasses.replace(times, started=started)

    def _loading_fallback(self, game: Game, times: MoveTimes) -> Move:
        """The engine is still loading as the deadline nears: a random legal move."""
        move = self._rng.choice(game.sendable_moves())
        self.timer.finish_move(times)
        self.stats["fallback_moves"] += 1
        log.warning("ucc.fallback_move", reason="the engine is still loading", move=str(move), ply=game.ply,
                    seconds=round(self._clock() - times.started, 3))
        return move

    async def _while_reading(self, task: Awaitable[Any], until: float | None = None) -> None:
        """Wait until ``task`` is done (or the clock reads ``until``), reading the referee meanwhile."""
        assert self._lines is not None
        waiting = asyncio.ensure_future(task)
        while not waiting.done():
            timeout = None if until is None else until - self._clock()
            if timeout is not None and timeout <= 0:
                return
            reading = asyncio.ensure_future(self._lines.get())
            await asyncio.wait({waiting, reading}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not reading.done():
                reading.cancel()  # a line not yet read stays in the queue
                continue
            item = reading.result()
            if item is None:
                await self._end_of_input(thinking=True)
            self._line_while_thinking(item)

    async def _end_of_input(self, **fields: Any) -> NoReturn:
        """The referee has closed our input: exit 0, unless the profile to play turns out bad. Its loading may
        still be under way (the input may end right after the colour line, or before it): a bad ``--profile``
        is waited for and said (``ucc.bad_profile``, exit 2), not left unsaid by a quiet exit 0 (issue 46)."""
        log.info("ucc.eof", phase=self.phase.value, **fields, **self.stats)
        if self.engine is not None:
            raise _Stop(0)
        if self._loading is not None and (self._loading.done() or self._profile_check is None):
            await asyncio.wait({self._loading})
            self._take_engine(at_end=True)  # exit 2 for a profile that did not load
            raise _Stop(0)
        if self._profile_check is None:
            raise _Stop(0)
        try:  # the configuration alone: the engine's loading is no use any more, and may take seconds
            await asyncio.to_thread(self._profile_check)
        except Exception as exc:
            log.error("ucc.bad_profile", opponent=self.opponent, error=_failure(exc))
            raise _Stop(2) from None
        raise _Stop(0)

    def _line_while_thinking(self, item: _Line) -> None:
        """The referee speaks while we think: QUIT ends the game now, anything else waits its turn."""
        try:
            event = parse_referee_line(item.text)
        except UccProtocolError:
            event = None
        if isinstance(event, QuitLine):
            log.info("ucc.quit", result=event.result, phase=self.phase.value, thinking=True, **self.stats)
            if self.witness is not None:
                self.witness.done()
            self._remember(*self._quit_result(event))
            raise _Stop(0)
        if item.text.strip():
            log.warning("ucc.line_while_thinking", line=clip(item.text))
            self._backlog.append(item)


# A line is logged up to this many characters: the referee's lines are short, and a peer's junk must not
# fill the log (issue 31).
LOGGED_LINE = 200


def clip(text: str, limit: int = LOGGED_LINE) -> str:
    """``text`` for a log: at most ``limit`` characters, saying how long it was when cut."""
    return clip_text(text, limit)


def _failure(exc: BaseException) -> str:
    """Why a profile or its engine did not load: a ValueError's text (a ProfileError says it all), else its repr."""
    return str(exc) if isinstance(exc, ValueError) else repr(exc)


def bad_line_error(error: UccProtocolError, line: str) -> str:
    """The codec's reason for refusing ``line`` without the line it quotes (the log gives it once, clipped)."""
    return clip(str(error).replace(repr(line.strip()), "the line"))


def run_ucc(
    load: Callable[[str], ChosenEngine],
    *,
    move_time: float = DEFAULT_MOVE_TIME,
    rng: random.Random,
    in_fd: int = 0,
    out: TextIO,
    witness: EndWitness | None = None,
    opening: Opening | None = None,
    pending: bytes = b"",
    first_move: Move | None = None,
    stamps: Sequence[tuple[int, float]] = (),
    profile_name: str = "",
    memory: OpponentMemory | None = None,
    profile_check: Callable[[], None] | None = None,
) -> int:
    """Play one UCC game, reading the referee from ``in_fd`` after ``pending``; the exit code. ``load`` gives
    the engine for the opponent the colour line names (on a thread: the configuration, the profile and the
    engine load while the game starts); ``opening``: the colour line was answered already. ``move_time`` is
    the referee's per-move limit (its ``-T``), which bounds the moves made before the profile is loaded;
    ``profile_name`` the profile's name where it is known before (``--profile``), for the witness;
    ``first_move``: the opening stage sent our first move already (its echo is in the input to come);
    ``stamps``: when the opening stage read ``pending``; ``memory``: the opponent store's reader and writer
    (None: the one ``load`` gives with the engine, if any); ``profile_check``: raises what is wrong with the
    configuration or the profile, once they are read (the input may end before the engine is there)."""
    player = UccPlayer(None, limits=TimeLimits(move_time_max=move_time, move_time_average=None, move_limit=None),
                       rng=rng, witness=witness, engine_for=load, opening=opening, pending=pending,
                       first_move=first_move, stamps=stamps, profile_name=profile_name, memory=memory,
                       profile_check=profile_check)
    return player.run(in_fd, out)
