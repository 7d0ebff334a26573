"""The colour line answered with the setup before anything heavy is imported (``perspecto ucc``'s start).

The UCC referee starts a program, sends it ``COLOUR OPPONENT WIDTH HEIGHT`` at once and forfeits it unless
its four setup lines arrive within ``-T`` seconds (2 by default). On a machine whose cores are busy (a
tournament starts both programs at the same moment) importing pydantic, structlog, the configuration, the
compiled search and the belief model first took longer than that (issue 31). So ``perspecto ucc`` reads
the colour line and answers it with this module, which imports only the rules, the UCC codec and the setup
generator; the configuration, the profile and the engine load after the setup is out
(bot/commands/ucc.py), while the referee collects the other program's setup.

The seeded generator that chose the setup goes on to the player, so ``--seed`` replays the same game.
Nothing here logs unless the setup library fails (the fallback setup is used then).

The first move is covered here too (``hold_first_move``): while the game loop's modules import on a thread,
this stage reads the referee; should our first move come due before they are there, it sends a legal move
found from the board rows alone, and the player takes the game up knowing it was sent.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TextIO

from bot.daemon.fallback_setup import fallback_setup
from engine_ext.rules.game import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import CLASSIC, Square
from protocol.ucc import (
    BoardRow,
    ColourLine,
    MoveLine,
    QuitLine,
    StartLine,
    UccMove,
    UccProtocolError,
    format_setup_lines,
    parse_board_rows,
    parse_referee_line,
)

DEFAULT_MOVE_TIME = 2.0  # the referee's default -T
RULESET = CLASSIC  # the referee plays the classic 10x10 game with 40 pieces a side

# The most of one referee line ``perspecto ucc`` keeps, here and in the player's reader (bot/ucc/player.py): its
# longest lines are the colour line and QUIT's result, which name a program by its path (4 KiB at most on Linux);
# the rest of a longer line is read and dropped, so a peer's endless line costs no memory (issue 46). A line cut
# so is refused as any bad line is, but for the colour line, whose end this stage keeps (``COLOUR_LINE_END``).
MAX_LINE_BYTES = 256 * 2**10
# Of a colour line longer than ``MAX_LINE_BYTES``, the last bytes kept (of the bound): the board's width and
# height are there, after the opponent's name. The name, cut in its middle, is the only part lost, so the setup
# still goes out (a 10 MB name is a hostile referee's, and the setup our first deadline).
COLOUR_LINE_END = 256

SetupChooser = Callable[[Side, random.Random], Mapping[Square, Rank]]


def choose_setup(side: Side, rng: random.Random) -> dict[Square, Rank]:
    """A setup from the setup library's generator; the fallback setup if the library is missing or fails."""
    try:
        from setups.generator import generate_setup  # optional: the bot must set up without the library

        placement = generate_setup(RULESET, rng).placement(side)
        RULESET.validate_setup(side, placement)
        return placement
    except Exception as exc:  # any failure of the library must not cost the game
        # Logging is set up only after the setup is out, and structlog's default logger prints to stdout: the
        # referee's protocol stream, where the line would stand before our setup. Standard error, as every log.
        print(f"[warning  ] ucc.setup_library_failed error={exc!r}", file=sys.stderr, flush=True)
        return fallback_setup(RULESET, side, rng)


@dataclass(frozen=True)
class Opening:
    """The colour line and the setup sent for it: where the player takes the game up."""

    colour: ColourLine
    placement: dict[Square, Rank]
    lines: list[str]  # the setup lines as sent
    sent: float | None = None  # when they went out (time.monotonic()); the referee's next line comes after
    dropped: int = 0  # bytes of the colour line dropped past MAX_LINE_BYTES (the middle of the name)


def load_generator() -> None:
    """Import the setup generator now, so that answering the colour line is only the work of the setup
    itself (a library that fails to import is left to ``choose_setup``, which falls back)."""
    try:
        import setups.generator  # noqa: F401
    except Exception:
        pass


def input_within(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has something to read within ``seconds`` (the colour line: the referee sends it to RED
    at once; BLUE's comes once RED has set up)."""
    import select

    try:
        return bool(select.select([fd], [], [], seconds)[0])
    except (OSError, ValueError):
        return True  # no telling: treat it as there, and answer it first


class _Line:
    """One line as it is read, kept to ``MAX_LINE_BYTES``: all of it, or, once longer, its first bytes and its
    last ``COLOUR_LINE_END`` (the rest is counted and dropped as it comes). Each byte is looked at once."""

    def __init__(self) -> None:
        self._head = bytearray()  # the first MAX_LINE_BYTES bytes
        self._end = b""  # the last COLOUR_LINE_END bytes
        self.size = 0  # bytes of the line read so far

    def add(self, piece: bytes | memoryview) -> None:
        if len(self._head) < MAX_LINE_BYTES:
            self._head += piece[:MAX_LINE_BYTES - len(self._head)]
        self._end = (self._end + bytes(piece[-COLOUR_LINE_END:]))[-COLOUR_LINE_END:]
        self.size += len(piece)

    @property
    def dropped(self) -> int:
        return max(0, self.size - MAX_LINE_BYTES)

    def kept(self) -> tuple[str, bool]:
        """The line as kept (decoded, its ``\\r`` dropped) and whether a cut one still holds a colour line's
        fields whole: its first word before the cut, and its last two words (with the space before them)
        after it, so that only the name lost its middle."""
        if not self.dropped:
            return self._head.decode("utf-8", "replace").rstrip("\r"), True
        head = bytes(self._head[:MAX_LINE_BYTES - COLOUR_LINE_END])
        whole = len(head.split()) >= 2 and len(self._end.split()) >= 3
        return (head + self._end).decode("utf-8", "replace").rstrip("\r"), whole


@dataclass(frozen=True)
class FirstLine:
    """The first line that is not blank, as kept (``_Line``), and the bytes read after it."""

    text: str
    rest: bytes
    dropped: int = 0  # bytes dropped past MAX_LINE_BYTES
    whole: bool = True  # a cut line still holds a colour line's fields whole (``_Line.kept``)


def read_first_line(fd: int) -> FirstLine | None:
    """The first line that is not blank (None at the end of input without one), kept to ``MAX_LINE_BYTES``
    in time linear in what is read, and the bytes read after it, which the player's reader goes on from. Raw
    reads: no buffered file holds back what follows."""
    line = _Line()
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        if not chunk:
            text, whole = line.kept()
            return FirstLine(text, b"", line.dropped, whole) if text.strip() else None
        view, start = memoryview(chunk), 0
        while (end := chunk.find(b"\n", start)) >= 0:
            line.add(view[start:end])
            start = end + 1
            text, whole = line.kept()
            if text.strip():
                return FirstLine(text, chunk[start:], line.dropped, whole)
            line = _Line()
        line.add(view[start:])


def colour_line(line: str) -> ColourLine | None:
    """The line as a colour line for the board this player plays, else None (the player then reads the
    line itself and says what is wrong with it)."""
    try:
        event = parse_referee_line(line)
    except UccProtocolError:
        return None
    if not isinstance(event, ColourLine) or (event.width, event.height) != (RULESET.width, RULESET.height):
        return None
    return event


def answer_colour(event: ColourLine, rng: random.Random, out: TextIO,
                  setup: SetupChooser = choose_setup) -> Opening:
    """Send the setup for ``event``'s colour on ``out`` (flushed: the referee waits for it)."""
    placement = dict(setup(event.colour, rng))
    RULESET.validate_setup(event.colour, placement)
    lines = format_setup_lines(placement, event.colour)
    out.write("".join(line + "\n" for line in lines))
    out.flush()
    return Opening(event, placement, lines, time.monotonic())


def open_game(fd: int, out: TextIO, rng: random.Random) -> tuple[Opening | None, bytes]:
    """Read the colour line from ``fd`` and answer it on ``out``; the opening (None if the first line is not
    a colour line for a classic board) and the input still to be read by the player (with that first line,
    when it was not answered here)."""
    first = read_first_line(fd)
    if first is None:
        return None, b""
    event = colour_line(first.text) if first.whole else None
    if event is None:  # a line cut past MAX_LINE_BYTES goes on cut: the player refuses it as any bad line
        return None, first.text.encode() + b"\n" + first.rest
    try:
        opening = answer_colour(event, rng, out)
    except BrokenPipeError:  # the referee has gone; the player finds out and exits quietly
        return None, b""
    return replace(opening, dropped=first.dropped), first.rest


# How long, as a share of the referee's -T counted from the last board row of our first turn, the game loop
# may still be loading before this stage sends the first move itself. The game loop, once there, needs a
# little of -T for its own start (its reader, the view, the engine's fallback); a loaded machine may keep a
# process off the CPU for a few hundred milliseconds more. 40 % leaves the move out with 60 % of -T to
# spare, while on an idle machine the loop is loaded long before (about 0.3 s after the setup).
OPENING_MOVE_SHARE = 0.4


@dataclass(frozen=True)
class FirstMoveStage:
    """How the opening stage ended: the input the player reads again from its start, the first move sent
    here (None: the player answers it), or the QUIT line that came (the process exits at once). ``stamps``
    says when the input arrived: (end of a chunk in ``pending``, when it was read), in order, so that the
    player's move clock starts when a turn's line came, not when the player got to it."""

    pending: bytes
    stamps: tuple[tuple[int, float], ...] = ()
    sent: Move | None = None
    quit: str | None = None


def first_move_from_rows(rows: list[str], rng: random.Random) -> Move | None:
    """A legal first move from the referee's board rows alone: a movable piece of ours one square onto an
    empty or enemy square of the board that is not a lake (None: no such move, or rows we cannot read).
    A side's first move cannot break the two-squares rule, so no history is needed."""
    try:
        board = parse_board_rows(rows, RULESET)
    except UccProtocolError:
        return None
    moves = [
        Move(sq, to)
        for sq, rank in sorted(board.own.items())
        if rank.movable
        for to in (Square(sq.col + dx, sq.row + dy) for dx, dy in ((0, -1), (0, 1), (-1, 0), (1, 0)))
        if RULESET.on_board(to) and not RULESET.is_lake(to) and to not in board.own
    ]
    return rng.choice(moves) if moves else None


def hold_first_move(fd: int, out: TextIO, opening: Opening, pending: bytes, ready_fd: int, *, move_time: float,
                    rng: random.Random, clock: Callable[[], float] = time.monotonic) -> FirstMoveStage:
    """Read the referee from ``fd`` (after ``pending``) until ``ready_fd`` turns readable (the game loop has
    loaded), a QUIT line comes, or the input ends. Once our first turn's ten board rows are in (after START
    for RED, after RED's first move for BLUE) and ``OPENING_MOVE_SHARE`` of ``move_time`` has gone by on
    ``clock`` without the loop, the move from ``first_move_from_rows`` goes out on ``out``. Every byte read is
    handed on, the player replays the lines to build its view; but a line is kept to ``MAX_LINE_BYTES``, as
    the player's reader keeps it, the rest dropped as it comes (``ucc.line_too_long`` once the game loop is
    there; the player refuses the cut line)."""
    import select

    read = bytearray(pending)  # grows by its chunks in linear time
    stamps = [(len(pending), opening.sent if opening.sent is not None else clock())]  # came with the colour line
    scanned = 0  # bytes of ``read`` looked at for whole lines
    our_turn = False  # START, or the opponent's first move: the rows that follow are our first turn's
    rows: list[str] = []
    due: float | None = None  # when the first move goes out unless the loop is there first
    sent: Move | None = None
    answered = False  # the first move has been decided on here (sent, or none found: the player's then)
    open_input = True
    cut: list[int] = []  # bytes dropped of each line cut at MAX_LINE_BYTES
    dropping = False  # the rest of a cut line is still coming
    while True:
        while (end := read.find(b"\n", scanned)) >= 0:
            line = read[scanned:end].decode("utf-8", "replace").rstrip("\r")
            scanned = end + 1
            try:
                event = parse_referee_line(line)
            except UccProtocolError:
                continue  # the player reads it again and says what is wrong with it
            if isinstance(event, QuitLine):
                return FirstMoveStage(bytes(read), tuple(stamps), sent, quit=line)
            if answered or due is not None:
                continue
            if isinstance(event, (StartLine, MoveLine)):
                our_turn, rows = True, []
            elif isinstance(event, BoardRow) and our_turn:
                rows.append(event.cells)
                if len(rows) == RULESET.height:
                    due = clock() + OPENING_MOVE_SHARE * move_time
        if len(read) - scanned > MAX_LINE_BYTES:  # no end in sight: keep the bound's worth, drop the rest
            cut.append(len(read) - scanned - MAX_LINE_BYTES)
            del read[scanned + MAX_LINE_BYTES:]
            stamps[-1] = (min(stamps[-1][0], len(read)), stamps[-1][1])  # the earlier ones end before
            dropping = True
        if due is not None and clock() >= due:
            sent = first_move_from_rows(rows, rng)
            due, answered = None, True
            if sent is not None:
                try:
                    out.write(UccMove.from_move(sent).format() + "\n")
                    out.flush()
                except BrokenPipeError:  # the referee has gone: the player finds out and exits quietly
                    pass
        watched = [fd, ready_fd] if open_input else [ready_fd]
        timeout = None if due is None else max(0.0, due - clock())
        try:
            readable = select.select(watched, [], [], timeout)[0]
        except (OSError, ValueError):
            readable = [ready_fd]  # no telling: hand over to the player
        if ready_fd in readable:
            _log_cut(opening.dropped, cut)
            return FirstMoveStage(bytes(read), tuple(stamps), sent)
        if fd in readable:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if chunk and dropping:  # the cut line goes on: dropped up to its end, which follows the kept part
                end = chunk.find(b"\n")
                if end < 0:
                    cut[-1] += len(chunk)
                    continue
                cut[-1] += end
                chunk, dropping = chunk[end:], False
            if chunk:
                read += chunk
                stamps.append((len(read), clock()))
            else:
                open_input = False  # the end of input: the player reads it after these bytes


def _log_cut(colour_line: int, lines: list[int]) -> None:
    """``ucc.line_too_long`` for the colour line and the lines this stage cut (bytes dropped): logged once the
    game loop is there, whose thread has set the logs up (stdout carries the protocol only)."""
    if not colour_line and not lines:
        return
    import structlog

    if not structlog.is_configured():
        return
    log = structlog.get_logger()
    if colour_line:
        log.warning("ucc.line_too_long", line="colour", kept=MAX_LINE_BYTES, dropped=colour_line)
    if lines:
        log.warning("ucc.line_too_long", kept=MAX_LINE_BYTES, dropped=sum(lines), lines=len(lines))
