"""Games under the real UCC 2012 referee ``stratego``: run it, read its result line and its ``-o`` log, and
turn the log into a Perspecto game record (docs/ucc.md, "Games under the referee"; docs/lab.md, "The gauntlet").

The referee plays one game between two programs it starts itself (bare paths, no arguments), gives each
answer ``-T`` seconds, and prints as its last line ``NAME COLOUR OUTCOME TURNS RED_VALUE BLUE_VALUE``: the
player whose turn it was when the game ended and what ended it (``VICTORY``: that player won; ``ILLEGAL``:
it moved illegally or gave no answer in time; ``SURRENDER``, ``BAD_SETUP``, ``DRAW``, ``DRAW_DEFAULT`` the
turn cap). With ``-o FILE`` it logs each program's name and setup lines, then every move as
``N RED: X Y DIR [STEPS] OUTCOME [RANKS]`` (``BLU`` for blue), the line that says why the game ended, and
the result line again.

Parsing is sans-I/O (``parse_result_line``, ``parse_referee_log``, ``log_to_record``: text in, values out;
bad text is a ``RefereeLogError``); ``play_referee_game`` is the only part that runs anything. The log is
replayed through our own rules with the referee's conventions (no two-squares or more-squares rule, the draw
after its turn cap), and every attack's outcome is checked against what the referee reported, so a record
that comes out of here is one ``perspecto replay`` and ``perspecto analyse`` read like any other.

Known behaviour of the referee handled here: it enforces no repetition rule, so a game may never end (the
wall-time bound ``wall_time`` stops it: the record ends ``adjourned``); it leaves the program that did not
move last stopped (SIGSTOP) when it exits, so every process of the game is killed by its process group,
which this module created for it and which holds nothing else.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from engine_ext.bounded_read import FileTooLarge, read_bounded
from engine_ext.rules.game import MAX_MOVE_LIMIT, Game, IllegalMove, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.referee import FORFEIT_ILLEGAL_SETUP
from engine_ext.rules.replay import ATTRITION
from engine_ext.rules.rulesets import CLASSIC, Ruleset, Square
from protocol.ucc import Outcome, OutcomeKind, UccMove, UccProtocolError, parse_referee_line, parse_setup_lines

# The referee's own defaults: 2 s an answer (-T), a draw after 5000 turns (-m; a turn is a move of each).
DEFAULT_MOVE_TIME = 2.0
DEFAULT_MAX_TURNS = 5000

# The most the referee's stdout or its ``-o`` log may hold; more is a ``RefereeLogError`` (a referee, or what
# stands in its place, may write without end: issue 46). Sized for the longest real game, ``DEFAULT_MAX_TURNS``
# turns of moves plus board dumps: a move line takes about 21 bytes in real logs (records/base-nolearn/referee:
# 42.5 KB for 1000 turns, 2 lines a turn), at most about 35; with ``-p`` the referee prints the board after every
# move, 100 squares of up to 20 bytes each with its colour escapes (Board::PrintPretty), about 2 KB. 5000 turns
# of 2 moves and 2 boards: about 21 MB, all of it in one file if the log goes to stdout.
MAX_REFEREE_OUTPUT_BYTES = 32 * 2**20
# The end of the referee's stderr read for the error of a game with no result line (the programs' logs go there
# too, as much as they write).
REFEREE_ERR_TAIL_BYTES = 64 * 2**10

# The log's reason when a player had no mobile piece left at the start of its opponent's turn (game.cpp).
ATTRITION_END = "Destroyed all mobile enemy pieces"
# The result line's outcome words.
OUTCOMES = frozenset({"VICTORY", "ILLEGAL", "SURRENDER", "DRAW", "DRAW_DEFAULT", "BAD_SETUP", "INTERNAL_ERROR"})

_MOVE = re.compile(r"^(\d+) (RED|BLU): ?(.*)$")
_SETUP_HEAD = re.compile(r"^(\S+) (RED|BLUE) SETUP$")
_ENDS = re.compile(r"^Game ends (?:in the SETUP phase|on (?:RED|BLUE|ERROR)'s turn) - REASON: (.*)$")


class RefereeLogError(ValueError):
    """A result line or a log that does not read as the referee writes them (the message says where)."""


class RefereeError(RuntimeError):
    """The referee could not be run, or ended without a result line."""


@dataclass(frozen=True)
class RefereeResult:
    """The referee's last line: ``NAME COLOUR OUTCOME TURNS RED_VALUE BLUE_VALUE``."""

    name: str  # the program whose turn it was at the end (its path as given to the referee)
    colour: Side | None  # None: "neither BOTH/NONE"
    outcome: str
    turns: int
    red_value: int  # the referee's piece values left on each side
    blue_value: int

    @property
    def winner(self) -> Side | None:
        """The side that won by the referee's account; None for a draw or no decision."""
        if self.colour is None:
            return None
        if self.outcome == "VICTORY":
            return self.colour
        if self.outcome in ("ILLEGAL", "SURRENDER", "BAD_SETUP"):
            return self.colour.other
        return None

    @property
    def forfeit(self) -> Side | None:
        """The side that lost by a fault of its own (an illegal or late answer, a surrender, a bad setup)."""
        if self.colour is not None and self.outcome in ("ILLEGAL", "SURRENDER", "BAD_SETUP"):
            return self.colour
        return None


def parse_result_line(line: str) -> RefereeResult:
    """The referee's result line; a ``RefereeLogError`` says what does not fit."""
    tokens = line.split()
    if len(tokens) < 6:
        raise RefereeLogError(f"{line.strip()!r}: expected NAME COLOUR OUTCOME TURNS RED_PIECES BLUE_PIECES")
    *name_parts, colour, outcome, turns, red, blue = tokens
    if colour not in ("RED", "BLUE", "BOTH", "NONE"):
        raise RefereeLogError(f"{line.strip()!r}: colour {colour!r} is not RED, BLUE, BOTH or NONE")
    if outcome not in OUTCOMES:
        raise RefereeLogError(f"{line.strip()!r}: unknown outcome {outcome!r}")
    for what, token in (("turns", turns), ("red pieces", red), ("blue pieces", blue)):
        if not token.lstrip("-").isdigit():
            raise RefereeLogError(f"{line.strip()!r}: {what} {token!r} is not a number")
    return RefereeResult(" ".join(name_parts), Side.parse(colour) if colour in ("RED", "BLUE") else None,
                         outcome, int(turns), int(red), int(blue))


def last_result_line(text: str) -> RefereeResult | None:
    """The last line of the text that reads as a result line (the referee's stdout may hold board dumps)."""
    for line in reversed(text.splitlines()):
        if line.strip():
            with contextlib.suppress(RefereeLogError):
                return parse_result_line(line)
    return None


@dataclass(frozen=True)
class LoggedMove:
    turn: int
    side: Side
    text: str  # the move as logged, e.g. "4 3 DOWN 2 KILLS 9 6"; empty when the program gave no answer


@dataclass
class RefereeLog:
    """What ``stratego -o FILE`` wrote about one game."""

    names: dict[Side, str] = field(default_factory=dict)
    setups: dict[Side, list[str]] = field(default_factory=dict)  # the setup lines as sent
    moves: list[LoggedMove] = field(default_factory=list)
    end_reason: str | None = None  # "Captured the flag", "Response timeout after 2.000000 seconds." ...
    result: RefereeResult | None = None


def parse_referee_log(text: str) -> RefereeLog:
    """Read a referee log; an unfinished one (the game was stopped) reads as far as it goes."""
    log = RefereeLog()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        head = _SETUP_HEAD.match(line)
        if head is not None:
            side = Side.parse(head.group(2))
            log.names[side] = head.group(1)
            setup = []
            for j in range(1, 5):
                if i + j < len(lines) and re.fullmatch(r"[0-9sBF.]{10}", lines[i + j].strip()):
                    setup.append(lines[i + j].strip())
                else:
                    break
            log.setups[side] = setup
            i += 1 + len(setup)
            continue
        move = _MOVE.match(line)
        if move is not None:
            side = Side.RED if move.group(2) == "RED" else Side.BLUE
            log.moves.append(LoggedMove(int(move.group(1)), side, move.group(3).strip()))
        elif (ends := _ENDS.match(line)) is not None:
            log.end_reason = ends.group(1).strip()
        elif line.strip():
            with contextlib.suppress(RefereeLogError):
                log.result = parse_result_line(line)
        i += 1
    return log


# What the referee calls a fight's result, in the record's notation.
_RECORD_OUTCOME = {OutcomeKind.OK: None, OutcomeKind.KILLS: "x", OutcomeKind.DIES: "o", OutcomeKind.BOTHDIE: "xo",
                   OutcomeKind.VICTORY_FLAG: "x"}


def referee_move_limit(max_turns: int) -> int:
    """The referee's turn cap in plies, within our rules' longest game (``MAX_MOVE_LIMIT``, 8000 plies). The
    referee counts turns from 1 and plays while the count is below ``-m``: ``max_turns - 1`` turns of two
    plies (its default 5000 turns are 9998 plies). A game that goes on past 8000 is recorded up to there, a
    draw."""
    if max_turns < 2:
        raise ValueError(f"the referee's turn cap must be at least 2 (one turn is played), not {max_turns}")
    return min(2 * (max_turns - 1), MAX_MOVE_LIMIT)


def referee_rules(max_turns: int = DEFAULT_MAX_TURNS, ruleset: Ruleset = CLASSIC) -> RulesOptions:
    """Our rules as the referee plays them: no repetition rule, a draw after ``max_turns`` turns."""
    return RulesOptions(ruleset=ruleset, two_squares=None, more_squares=False, move_limit=referee_move_limit(max_turns))


def log_to_record(log: RefereeLog, *, names: dict[Side, str], game_id: str = "", started: str = "",
                  max_turns: int = DEFAULT_MAX_TURNS, move_time: float = DEFAULT_MOVE_TIME,
                  stopped: bool = False) -> GameRecord:
    """The game as a Perspecto record, replayed through our rules; ``names`` are the players' names for the
    record (the log has their paths). ``stopped``: the game was cut off (its wall time), not ended by the
    referee. A move our rules refuse, or an outcome other than the one the referee reported, is a
    ``RefereeLogError``: the record would not replay."""
    options = referee_rules(max_turns)
    ruleset = options.ruleset
    placements: dict[Side, dict[Square, Rank]] = {}
    for side in (Side.RED, Side.BLUE):
        try:
            placements[side] = parse_setup_lines(log.setups.get(side, []), side, ruleset)
        except UccProtocolError as exc:
            placements[side] = {}
            setup_error = f"{side}: {exc}"
            break
    else:
        setup_error = None
    record = GameRecord(
        ruleset=ruleset.name,
        options={"range_attacks": True, "two_squares": None, "more_squares": False, "move_limit": options.move_limit,
                 "nodes": None, "depth": None, "move_time": move_time, "referee": "ucc2012"},
        red=RecordedPlayer(names[Side.RED], _labels(placements.get(Side.RED, {}))),
        blue=RecordedPlayer(names[Side.BLUE], _labels(placements.get(Side.BLUE, {}))),
        game_id=game_id, started=started,
    )
    referee = log.result
    referee_json: dict[str, Any] | None = None
    if referee is not None:
        colour = "neither" if referee.colour is None else str(referee.colour)  # Side.RED is 0: no `or`
        referee_json = {"line": f"{colour} {referee.outcome} {referee.turns} "
                                f"{referee.red_value} {referee.blue_value}",
                        "outcome": referee.outcome, "turns": referee.turns, "reason": log.end_reason}
    if setup_error is not None:
        bad = referee.colour if referee is not None and referee.outcome == "BAD_SETUP" else None
        forfeits = [str(bad)] if bad is not None else [str(Side.RED), str(Side.BLUE)]
        record.result = {"winner": str(bad.other) if bad is not None else None, "reason": FORFEIT_ILLEGAL_SETUP,
                         "plies": 0, "forfeits": forfeits, "detail": setup_error,
                         **({"referee": referee_json} if referee_json else {})}
        return record
    game = Game(options, placements[Side.RED], placements[Side.BLUE])
    last_failed: LoggedMove | None = None
    for number, logged in enumerate(log.moves, start=1):
        if game.result is not None and game.result.reason == "move_limit" and options.move_limit < 2 * (max_turns - 1):
            break  # past our rules' longest game: recorded as far as it goes, a draw
        if game.result is not None and game.result.reason == "no_moves" and logged.side == game.side_to_move:
            # The referee counts mobile pieces, not moves: a side left with no move still gets its turn and
            # loses it (a surrender or an illegal move), which our rules gave as no_moves already.
            break
        if game.result is not None:
            raise RefereeLogError(f"move {number} ({logged.side} turn {logged.turn}): the game was over: {game.result}")
        if logged.side != game.side_to_move:
            raise RefereeLogError(f"move {number}: {logged.side} moved on {game.side_to_move}'s turn")
        try:
            event = parse_referee_line(logged.text) if logged.text else None
        except UccProtocolError:
            event = None
        move_line = getattr(event, "move", None)
        outcome: Outcome | None = getattr(event, "outcome", None)
        if move_line is None or outcome is None or outcome.kind is OutcomeKind.ILLEGAL:
            last_failed = logged  # no answer, garbage or an illegal move: the game ends here
            break
        if outcome.kind is OutcomeKind.OTHER_END and outcome.keyword != "VICTORY_ATTRITION":
            last_failed = logged
            break
        move = _move(move_line, ruleset, number)
        try:
            played = game.play(move)
        except IllegalMove as exc:
            raise RefereeLogError(f"move {number} ({logged.text}): our rules refuse it: {exc}") from None
        expected = _RECORD_OUTCOME.get(outcome.kind, played.outcome)
        if played.outcome != expected or (outcome.attacker is not None and (
                played.attacker != outcome.attacker or played.defender != outcome.defender)):
            raise RefereeLogError(f"move {number} ({logged.text}): the referee says {outcome.format()}, our rules "
                                  f"give {played.outcome} {played.attacker} {played.defender}")
        record.moves.append(RecordedMove(
            side=str(logged.side), move=str(move), outcome=played.outcome,
            attacker=played.attacker.label if played.attacker is not None else None,
            defender=played.defender.label if played.defender is not None else None,
        ))
    record.result = _result(game, referee, log.end_reason, last_failed, stopped)
    if referee_json:
        record.result["referee"] = referee_json
    return record


def _move(move: UccMove, ruleset: Ruleset, number: int) -> Any:
    try:
        return move.to_move(ruleset)
    except UccProtocolError as exc:
        raise RefereeLogError(f"move {number}: {exc}") from None


def _labels(placement: dict[Square, Rank]) -> dict[str, str]:
    return {str(sq): rank.label for sq, rank in sorted(placement.items(), key=lambda i: (i[0].row, i[0].col))}


def _result(game: Game, referee: RefereeResult | None, end_reason: str | None, failed: LoggedMove | None,
            stopped: bool) -> dict[str, Any]:
    """The record's result: the rules' own ending when the moves reach one; else the referee's ending as
    a forfeit (a late, illegal or missing answer, a surrender), its turn cap, or the wall time's stop."""
    plies = len(game.history)
    if game.result is not None:
        winner = game.result.winner
        return {"winner": None if winner is None else str(winner), "reason": game.result.reason, "plies": plies}
    if referee is not None and end_reason == ATTRITION_END:
        # The referee looks for mobile pieces at the start of a turn, ours at the side to move only: a player
        # whose move lost its own last mobile piece (a both-die attack) has lost by the referee's account
        # while our rules would let its opponent move on (engine_ext/rules/replay.py checks it).
        return {"winner": None if referee.winner is None else str(referee.winner), "reason": ATTRITION,
                "plies": plies}
    loser: Side | None = None
    reason = "adjourned"
    detail = None
    if referee is not None and referee.forfeit is not None:
        loser = referee.forfeit
        if referee.outcome == "SURRENDER":
            reason = "forfeit_surrender"
        elif end_reason and end_reason.startswith("Response timeout"):
            reason = "forfeit_timeout"
        else:
            reason = "forfeit_illegal_move"
        detail = end_reason
    elif failed is not None and not stopped:
        loser, reason, detail = failed.side, "forfeit_illegal_move", end_reason or f"no usable answer: {failed.text!r}"
    elif stopped:
        detail = "stopped at the game's wall-time bound"
    elif referee is None:
        detail = "the referee wrote no result"
    if loser is not None:
        return {"winner": str(loser.other), "reason": reason, "plies": plies, "forfeits": [str(loser)],
                **({"detail": detail} if detail else {})}
    return {"winner": None, "reason": reason, "plies": plies, **({"detail": detail} if detail else {})}


# --- running the referee ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RefereeGame:
    """One game the referee played: its result line (None: none came), its record, how long it took."""

    result: RefereeResult | None
    record: GameRecord | None
    seconds: float
    stopped: bool  # cut off at the wall-time bound
    error: str | None = None  # why no record could be made
    log_path: Path | None = None


# The process groups of the games being played here. Each game runs in a session of its own (so that the end of
# a game kills all it started), which also means that no signal to the run reaches it: a run that is stopped
# kills them itself (``stop_live_games``), or they would play on without it.
_live_groups: set[int] = set()
_live_lock = threading.Lock()


def stop_live_games() -> int:
    """Kill the process group of every game being played in this process (a run stopped halfway: those games
    have no result, and nobody waits for them any more); how many there were."""
    with _live_lock:
        groups = sorted(_live_groups)
    for pgid in groups:
        _kill_group(pgid)
    return len(groups)


def play_referee_game(referee: Path, red: Path, blue: Path, *, names: dict[Side, str], log_path: Path,
                      move_time: float = DEFAULT_MOVE_TIME, max_turns: int = DEFAULT_MAX_TURNS,
                      wall_time: float = 3600.0, game_id: str = "", env: dict[str, str] | None = None) -> RefereeGame:
    """Run ``stratego -T move_time -m max_turns -o log_path red blue`` and read the game back. ``red`` and
    ``blue`` are executables the referee runs with no arguments. The referee and both programs run in a
    process group of their own, killed when the game ends or after ``wall_time`` seconds."""
    started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = time.monotonic()
    # The referee runs in the log's folder: a relative path given here would name another file there (the
    # referee dies of a log it cannot open, signal 11, with no word of why).
    referee, red, blue, log_path = (path.absolute() for path in (referee, red, blue, log_path))
    command = [str(referee), "-T", f"{move_time:g}", "-m", str(max_turns), "-o", str(log_path), str(red), str(blue)]
    stopped = False
    out_path, err_path = log_path.with_suffix(".out"), log_path.with_suffix(".err")
    # Files, not pipes: the programs inherit the referee's stderr, and one it left stopped would hold a pipe open.
    with out_path.open("wb") as out, err_path.open("wb") as err:
        try:
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                    start_new_session=True, env=env, cwd=log_path.parent)
        except OSError as exc:
            raise RefereeError(f"cannot run the referee {referee}: {exc.strerror or exc}") from None
        with _live_lock:
            _live_groups.add(proc.pid)
        try:
            proc.wait(timeout=wall_time)
        except subprocess.TimeoutExpired:
            stopped = True
        finally:
            _kill_group(proc.pid)  # the player the referee left stopped, and anything either program started
            proc.wait()
            with _live_lock:
                _live_groups.discard(proc.pid)
    seconds = time.monotonic() - started
    try:
        result = last_result_line(read_referee_file(out_path, "the referee's output"))
    except (OSError, RefereeLogError) as exc:
        return RefereeGame(None, None, seconds, stopped, f"{out_path}: {exc}", log_path)
    if result is None and not stopped:
        tail = _read_end(err_path, REFEREE_ERR_TAIL_BYTES).strip().splitlines()[-3:]
        return RefereeGame(None, None, seconds, stopped,
                           f"the referee exited {proc.returncode} with no result line: {' | '.join(tail)}", log_path)
    try:
        text = read_referee_file(log_path, "a referee's log")
        log = parse_referee_log(text)
        if result is not None:
            log.result = result
        record = log_to_record(log, names=names, game_id=game_id, started=started_at, max_turns=max_turns,
                               move_time=move_time, stopped=stopped)
    except (OSError, RefereeLogError) as exc:
        return RefereeGame(result, None, seconds, stopped, f"{log_path}: {exc}", log_path)
    return RefereeGame(result, record, seconds, stopped, None, log_path)


def read_referee_file(path: Path, what: str) -> str:
    """The referee's stdout or log, read to ``MAX_REFEREE_OUTPUT_BYTES``: a ``RefereeLogError`` when it holds more
    (``OSError`` when it cannot be read)."""
    try:
        return read_bounded(path, MAX_REFEREE_OUTPUT_BYTES, what).decode("utf-8", "replace")
    except FileTooLarge as exc:
        raise RefereeLogError(str(exc)) from None


def _read_end(path: Path, size: int) -> str:
    """The last ``size`` bytes of ``path`` at most (nothing if it cannot be read)."""
    try:
        with path.open("rb") as file:
            file.seek(max(0, file.seek(0, os.SEEK_END) - size))
            return file.read(size).decode("utf-8", "replace")
    except OSError:
        return ""


def _kill_group(pgid: int) -> None:
    """SIGKILL the game's process group (a stopped process dies of it too); gone already is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
