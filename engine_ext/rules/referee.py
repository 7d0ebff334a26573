"""The referee's core: one game's setups, moves, forfeits, end and record, without any I/O.

Both referees drive it: the host's (bot/host/referee.py, bots over sockets) and the lab's
(engine_ext/lab/runner.py with engine_ext/research/selfplay.py, engines in process, also on the cluster's
workers). The driver does the talking and the timing; it reports what happened as events (``submit``) and
gets back what the rules make of it:

- a setup is accepted, or rejected with the reason and the attempts left (the host gives one second
  chance, the lab none), or, at the last attempt, forfeits;
- a move of the side to move is played, or forfeits the game when the rules forbid it;
- a time that ran out, a player that went away or answered with an error: that side forfeits (the driver
  found it; the core never reads a clock);
- an event that does not fit the game as it stands (a move out of turn, a setup twice, anything after
  the record was made) is rejected and changes nothing.

Nothing a player sends makes it raise: junk is a rejection or a forfeit. ``RefereeError`` is for the
driver's own mistakes (an unknown event, a record asked for before the end).

The end of a game, in order of precedence: ``adjourned`` (the driver stopped it), ``void`` (it never
started: every side that forfeited before the setups were shown had said goodbye), a forfeit (both sides
can forfeit in one step: no winner, the reason is red's), and the rules' own endings (``flag``,
``no_moves``, ``no_movable_pieces``, ``move_limit``). Failures found while the players are being told of
the game's end still count until the record is made (the host tells both sides of every move, the last
one too, and a side that cannot take it forfeits).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from engine_ext.rules.game import Game, IllegalMove, MoveResult, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.rulesets import MAX_HEIGHT, MAX_WIDTH, SetupError, Square

# --- the reasons a game ends, as records and the protocol's gameOver spell them ----------------------------

FLAG = "flag"
NO_MOVES = "no_moves"
NO_MOVABLE_PIECES = "no_movable_pieces"
MOVE_LIMIT = "move_limit"
FORFEIT_CRASH = "forfeit_crash"
FORFEIT_TIMEOUT = "forfeit_timeout"
FORFEIT_ILLEGAL_MOVE = "forfeit_illegal_move"
FORFEIT_ILLEGAL_SETUP = "forfeit_illegal_setup"
FORFEIT_ERROR = "forfeit_error"
ADJOURNED = "adjourned"
VOID = "void"


class DecidedBy(Enum):
    RULES = "rules"  # the position on the board
    FORFEIT = "forfeit"  # a side failed: the other wins
    DRIVER = "driver"  # the game was stopped or never began: no winner, no points


@dataclass(frozen=True)
class EndReason:
    name: str
    decided_by: DecidedBy
    meaning: str


def _reasons(*reasons: EndReason) -> Mapping[str, EndReason]:
    return {reason.name: reason for reason in reasons}


END_REASONS: Mapping[str, EndReason] = _reasons(
    EndReason(FLAG, DecidedBy.RULES, "the flag was captured"),
    EndReason(NO_MOVES, DecidedBy.RULES, "the side to move had no legal move"),
    EndReason(NO_MOVABLE_PIECES, DecidedBy.RULES, "neither side can move: a draw"),
    EndReason(MOVE_LIMIT, DecidedBy.RULES, "the move limit was reached: a draw"),
    EndReason(FORFEIT_CRASH, DecidedBy.FORFEIT, "the player went away (disconnected, left, broke the protocol)"),
    EndReason(FORFEIT_TIMEOUT, DecidedBy.FORFEIT, "no answer within the deadline"),
    EndReason(FORFEIT_ILLEGAL_MOVE, DecidedBy.FORFEIT, "a move the rules forbid, or no move at all"),
    EndReason(FORFEIT_ILLEGAL_SETUP, DecidedBy.FORFEIT, "no legal setup within the attempts allowed"),
    EndReason(FORFEIT_ERROR, DecidedBy.FORFEIT, "a call the game needs was answered with an error"),
    EndReason(ADJOURNED, DecidedBy.DRIVER, "stopped unfinished (the host shut down or failed): no points"),
    EndReason(VOID, DecidedBy.DRIVER, "never started (a player said goodbye before the setups were shown)"),
)

# Reasons older records spell differently: the lab and the UCC log reader wrote ``forfeit_setup`` for what
# the host (and the protocol) call ``forfeit_illegal_setup``.
LEGACY_REASONS: Mapping[str, str] = {"forfeit_setup": FORFEIT_ILLEGAL_SETUP}


def canonical_reason(reason: str) -> str:
    """The reason as records write it now (an old record's ``forfeit_setup`` is ``forfeit_illegal_setup``)."""
    return LEGACY_REASONS.get(reason, reason)


# The tournament's table: a win 6, a draw 3, a loss 1, a forfeit 0 (and nothing for a game not played out).
SCORE_WIN, SCORE_DRAW, SCORE_LOSS, SCORE_FORFEIT = 6, 3, 1, 0


# --- what the driver reports ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SetupSubmitted:
    side: Side
    placement: Mapping[Square, Rank]


@dataclass(frozen=True)
class SetupUnreadable:
    """The player gave no setup to check (an error answer, an unreadable rank, a program that failed):
    an illegal attempt like any other."""

    side: Side
    problem: str


@dataclass(frozen=True)
class SetupsShown:
    """The driver has told each side where the other's pieces stand: the first move may be asked for."""


@dataclass(frozen=True)
class MoveSubmitted:
    side: Side
    move: Move
    info: Mapping[str, Any] | None = None  # what the mover's engine said about it, kept in the record


@dataclass(frozen=True)
class MoveUnreadable:
    """The player's answer was not a move at all."""

    side: Side
    problem: str


@dataclass(frozen=True)
class TimeExpired:
    side: Side
    detail: str


@dataclass(frozen=True)
class PlayerGone:
    """The player went away: its connection closed, or it gave up the game."""

    side: Side
    detail: str


@dataclass(frozen=True)
class PlayerFailed:
    """The player answered a call the game needs with an error (a bot), or raised (an engine)."""

    side: Side
    detail: str


@dataclass(frozen=True)
class PlayerLeft:
    """The player said goodbye to the driver and will not come back: a forfeit of its before the setups were
    shown makes the game void. Not a forfeit by itself (its lost connection is one)."""

    side: Side


@dataclass(frozen=True)
class Adjourned:
    """The driver stopped the game unfinished (shutting down, or its own failure)."""

    detail: str


Failure = MoveUnreadable | TimeExpired | PlayerGone | PlayerFailed
Event = SetupSubmitted | SetupUnreadable | SetupsShown | MoveSubmitted | Failure | PlayerLeft | Adjourned

# What each failure the driver reports costs.
FORFEIT_FOR: Mapping[type, str] = {
    MoveUnreadable: FORFEIT_ILLEGAL_MOVE,
    TimeExpired: FORFEIT_TIMEOUT,
    PlayerGone: FORFEIT_CRASH,
    PlayerFailed: FORFEIT_ERROR,
}


# --- what the core answers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """How a game ended."""

    winner: Side | None
    reason: str
    plies: int
    forfeits: frozenset[Side] = frozenset()
    detail: str | None = None

    @property
    def adjourned(self) -> bool:
        return self.reason == ADJOURNED

    @property
    def void(self) -> bool:
        return self.reason == VOID

    def score(self, side: Side) -> int:
        if self.adjourned or self.void:
            return 0  # not played out: no points for either side
        if side in self.forfeits:
            return SCORE_FORFEIT
        if self.winner is None:
            return SCORE_DRAW
        return SCORE_WIN if self.winner == side else SCORE_LOSS

    def outcome_for(self, side: Side) -> str:
        """``win``, ``draw``, ``loss``, ``forfeit``, ``adjourned`` or ``void``."""
        if self.adjourned or self.void:
            return self.reason
        if side in self.forfeits:
            return "forfeit"
        if self.winner is None:
            return "draw"
        return "win" if self.winner == side else "loss"


@dataclass(frozen=True)
class SetupAccepted:
    side: Side


@dataclass(frozen=True)
class SetupRejected:
    """An illegal setup with attempts left: the player may try again."""

    side: Side
    reason: str
    attempts_left: int


@dataclass(frozen=True)
class PlayStarted:
    """Answers ``SetupsShown``: moves are taken from now on."""


@dataclass(frozen=True)
class MoveAccepted:
    played: MoveResult
    recorded: RecordedMove  # as the record keeps it
    ended: Verdict | None  # the rules ended the game with this move


@dataclass(frozen=True)
class Forfeited:
    """A side forfeited during the setups; the game ends once the other side's setup is settled too."""

    side: Side
    reason: str
    detail: str


@dataclass(frozen=True)
class Noted:
    """Taken note of, nothing decided (a player that left, a failure while the game ends)."""


@dataclass(frozen=True)
class Ended:
    verdict: Verdict


@dataclass(frozen=True)
class Rejected:
    """The event does not fit the game as it stands; nothing changed."""

    reason: str


Outcome = SetupAccepted | SetupRejected | PlayStarted | MoveAccepted | Forfeited | Noted | Ended | Rejected


# --- the driver's own mistakes -------------------------------------------------------------------------------


class RefereeError(Exception):
    """The driver used the core wrongly (never a player's doing)."""


class UnknownEvent(RefereeError):
    """``submit`` got something that is not one of the events."""


class NotOver(RefereeError):
    """The record was asked for before the game was over."""


# --- the state machine ---------------------------------------------------------------------------------------


class Phase(Enum):
    SETUP = "setup"  # taking the setups
    SHOWING = "showing"  # both setups in; the driver tells each side the other's squares
    PLAYING = "playing"
    RECORDED = "recorded"  # the record is made: nothing more is taken


def setup_labels(placement: Mapping[Square, Rank]) -> dict[str, str]:
    """A setup as a record keeps it: square -> rank label, row by row from A1."""
    return {str(sq): rank.label for sq, rank in sorted(placement.items(), key=lambda i: (i[0].row, i[0].col))}


def _is_square(value: object) -> bool:
    """A square that can be named (A1..L12): one off this board is the rules' to judge, one beyond any board
    is no square at all."""
    return (isinstance(value, Square) and type(value.col) is int and type(value.row) is int
            and 0 <= value.col < MAX_WIDTH and 0 <= value.row < MAX_HEIGHT)


def _is_side(value: object) -> bool:
    return isinstance(value, Side)


class Referee:
    """One game. ``names`` and the rest are what its record says besides the moves; ``started`` is the
    driver's time stamp (the core reads no clock); ``setup_attempts`` is how many setups a side may give
    before an illegal one forfeits."""

    def __init__(
        self,
        options: RulesOptions,
        *,
        names: Mapping[Side, str] | None = None,
        game_id: str = "",
        started: str = "",
        record_options: Mapping[str, Any] | None = None,
        setup_attempts: int = 2,
    ) -> None:
        if setup_attempts < 1:
            raise RefereeError(f"a side needs at least one setup attempt, not {setup_attempts}")
        self.options = options
        self.names: dict[Side, str] = dict(names) if names is not None else {s: str(s) for s in Side}
        self.game_id = game_id
        self.started = started
        self.record_options: dict[str, Any] = dict(record_options) if record_options is not None else {
            "range_attacks": options.range_attacks, "two_squares": options.two_squares,
            "more_squares": options.more_squares, "move_limit": options.move_limit,
        }
        self.attempts_left = {side: setup_attempts for side in Side}
        self.setups: dict[Side, dict[Square, Rank]] = {Side.RED: {}, Side.BLUE: {}}
        self.moves: list[RecordedMove] = []
        self.game: Game | None = None
        self.phase = Phase.SETUP
        self._forfeits: dict[Side, tuple[str, str]] = {}
        self._left: set[Side] = set()
        self._adjourned: str | None = None
        self._shown = False  # the setups were shown: the game has started

    @classmethod
    def from_position(
        cls, options: RulesOptions, red: Mapping[Square, Rank], blue: Mapping[Square, Rank], *,
        validate_setups: bool = True, names: Mapping[Side, str] | None = None,
    ) -> Referee:
        """A game from a set position, its moves to be played (tests, analyses, the bench's frozen games):
        the setups are the caller's, not a player's, so a bad one raises ``SetupError`` here."""
        referee = cls(options, names=names)
        referee.game = Game(options, red, blue, validate_setups=validate_setups)
        referee.setups = {Side.RED: dict(red), Side.BLUE: dict(blue)}
        referee.phase, referee._shown = Phase.PLAYING, True
        return referee

    # --- reading the game --------------------------------------------------------------------------------

    @property
    def plies(self) -> int:
        return self.game.ply if self.game is not None else 0

    @property
    def side_to_move(self) -> Side | None:
        if self.phase != Phase.PLAYING or self.over or self.game is None:
            return None
        return self.game.side_to_move

    @property
    def forfeits(self) -> frozenset[Side]:
        return frozenset(self._forfeits)

    def forfeit_of(self, side: Side) -> tuple[str, str] | None:
        """The reason and detail of ``side``'s forfeit, if it forfeited."""
        return self._forfeits.get(side)

    @property
    def over(self) -> bool:
        return self.verdict is not None

    @property
    def verdict(self) -> Verdict | None:
        """How the game ended, as it stands; None while it goes on."""
        if self._adjourned is not None:
            return Verdict(None, ADJOURNED, self.plies, detail=self._adjourned)
        if self._forfeits and self._setups_settled():
            if not self._shown and set(self._forfeits) <= self._left:
                gone = " and ".join(f"{self.names[side]} ({side})" for side in Side if side in self._forfeits)
                return Verdict(None, VOID, self.plies, detail=f"the game never started: {gone} said goodbye")
            ordered = [side for side in Side if side in self._forfeits]
            if len(ordered) == 2:
                detail = "; ".join(f"{side}: {self._forfeits[side][1]}" for side in ordered)
                return Verdict(None, self._forfeits[Side.RED][0], self.plies, frozenset(ordered), detail)
            side = ordered[0]
            reason, detail = self._forfeits[side]
            return Verdict(side.other, reason, self.plies, frozenset(ordered), detail)
        if self.game is not None and self.game.result is not None and self._shown:
            return Verdict(self.game.result.winner, self.game.result.reason, self.plies)
        return None

    def _setups_settled(self) -> bool:
        """Every side's setup is in or forfeited (a forfeit in the setups waits for the other side's)."""
        return self.phase != Phase.SETUP or all(self.setups[s] or s in self._forfeits for s in Side)

    # --- events --------------------------------------------------------------------------------------------

    def submit(self, event: Event) -> Outcome:
        """Take one event; never raises for what a player did (``UnknownEvent`` for a driver's mistake)."""
        if self.phase == Phase.RECORDED:
            return Rejected("the game is over and recorded")
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise UnknownEvent(f"not a referee event: {event!r}")
        if isinstance(event, SetupsShown | Adjourned):
            return handler(self, event)
        side = getattr(event, "side", None)
        if not _is_side(side):
            raise RefereeError(f"{type(event).__name__} needs a Side, not {side!r}")
        return handler(self, event)

    def _setup(self, event: SetupSubmitted | SetupUnreadable) -> Outcome:
        side = event.side
        if self.phase != Phase.SETUP or self.over:
            return Rejected(f"{side}'s setup comes too late: the setups are over")
        if self.setups[side]:
            return Rejected(f"{side}'s setup is in already")
        if side in self._forfeits:
            return Rejected(f"{side} has forfeited")
        problem = event.problem if isinstance(event, SetupUnreadable) else self._setup_problem(side, event.placement)
        if problem is None:
            assert isinstance(event, SetupSubmitted)
            self.setups[side] = dict(event.placement)
            if all(self.setups[s] for s in Side):
                self.game = Game(self.options, self.setups[Side.RED], self.setups[Side.BLUE], validate_setups=False)
                self.phase = Phase.SHOWING
            over = self.verdict
            return Ended(over) if over is not None else SetupAccepted(side)
        self.attempts_left[side] -= 1
        if self.attempts_left[side] > 0:
            return SetupRejected(side, problem, self.attempts_left[side])
        return self._forfeit(side, FORFEIT_ILLEGAL_SETUP, problem)

    def _setup_problem(self, side: Side, placement: object) -> str | None:
        """What makes ``placement`` no legal setup for ``side``; None when it is one."""
        if not isinstance(placement, Mapping):
            return f"{side}'s setup is not squares with ranks: {type(placement).__name__}"
        ruleset = self.options.ruleset
        for square, rank in placement.items():
            if not _is_square(square) or not isinstance(rank, Rank):
                return f"{side}'s setup holds {square!r}: {rank!r}, not a square with a rank"
            if ruleset.on_board(square) and ruleset.is_lake(square):
                return f"{side} piece on {square}: a lake"
        try:
            ruleset.validate_setup(side, placement)
        except SetupError as exc:
            return str(exc)
        return None

    def _show(self, event: SetupsShown) -> Outcome:
        if self.phase != Phase.SHOWING or self.over:
            return Rejected("the setups are not both in" if self.phase == Phase.SETUP else "play has begun already")
        self.phase, self._shown = Phase.PLAYING, True
        over = self.verdict  # a game whose setups leave no move ends before its first
        return Ended(over) if over is not None else PlayStarted()

    def _move(self, event: MoveSubmitted) -> Outcome:
        side, move = event.side, event.move
        if self.phase != Phase.PLAYING or self.game is None:
            return Rejected(f"{side} moved before play began")
        if self.over:
            return Rejected(f"{side} moved after the end of the game")
        if side != self.game.side_to_move:
            return Rejected(f"{side} moved out of turn: {self.game.side_to_move} is to move")
        if not isinstance(move, Move) or not (_is_square(move.frm) and _is_square(move.to)):
            return self._forfeit(side, FORFEIT_ILLEGAL_MOVE, f"not a move: {move!r}")
        try:
            played = self.game.play(move)
        except IllegalMove as exc:
            return self._forfeit(side, FORFEIT_ILLEGAL_MOVE, str(exc))
        recorded = RecordedMove(
            side=str(side), move=str(move), outcome=played.outcome,
            attacker=played.attacker.label if played.attacker is not None else None,
            defender=played.defender.label if played.defender is not None else None,
            info=dict(event.info) if event.info is not None else None,
        )
        self.moves.append(recorded)
        return MoveAccepted(played, recorded, self.verdict)

    def _failure(self, event: Failure) -> Outcome:
        side = event.side
        detail = event.problem if isinstance(event, MoveUnreadable) else event.detail
        if side in self._forfeits:
            return Noted()  # one forfeit a side: its first failure is the one that counts
        return self._forfeit(side, FORFEIT_FOR[type(event)], detail)

    def _forfeit(self, side: Side, reason: str, detail: str) -> Outcome:
        if self._adjourned is not None:
            return Noted()
        self._forfeits[side] = (reason, detail)
        over = self.verdict
        return Ended(over) if over is not None else Forfeited(side, reason, detail)

    def _leave(self, event: PlayerLeft) -> Outcome:
        self._left.add(event.side)
        return Noted()

    def _adjourn(self, event: Adjourned) -> Outcome:
        if self._adjourned is None:
            self._adjourned = event.detail
        over = self.verdict
        assert over is not None
        return Ended(over)

    # --- the record ----------------------------------------------------------------------------------------

    def record(self, extra_result: Mapping[str, Any] | None = None) -> GameRecord:
        """The finished game's record (the end of the game: nothing more is taken after it). ``extra_result``:
        what the driver adds to the result beside the verdict (the lab's pair and nodes), before ``detail``."""
        verdict = self.verdict
        if verdict is None:
            raise NotOver("the game is not over: no record yet")
        self.phase = Phase.RECORDED
        return GameRecord(
            ruleset=self.options.ruleset.name,
            options=dict(self.record_options),
            red=RecordedPlayer(self.names[Side.RED], setup_labels(self.setups[Side.RED])),
            blue=RecordedPlayer(self.names[Side.BLUE], setup_labels(self.setups[Side.BLUE])),
            moves=list(self.moves),
            result=result_fields(verdict, extra_result),
            game_id=self.game_id,
            started=self.started,
        )


def result_fields(verdict: Verdict, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A record's ``result``: the verdict, the scores, then the driver's extra fields, then the detail."""
    return {
        "winner": str(verdict.winner) if verdict.winner is not None else None,
        "reason": verdict.reason, "plies": verdict.plies,
        "forfeits": sorted(str(s) for s in verdict.forfeits),
        "scores": {"red": verdict.score(Side.RED), "blue": verdict.score(Side.BLUE)},
        **(extra or {}),
        **({"detail": verdict.detail} if verdict.detail else {}),
    }


_HANDLERS: Mapping[type, Callable[[Referee, Any], Outcome]] = {
    SetupSubmitted: Referee._setup,
    SetupUnreadable: Referee._setup,
    SetupsShown: Referee._show,
    MoveSubmitted: Referee._move,
    MoveUnreadable: Referee._failure,
    TimeExpired: Referee._failure,
    PlayerGone: Referee._failure,
    PlayerFailed: Referee._failure,
    PlayerLeft: Referee._leave,
    Adjourned: Referee._adjourn,
}
