"""The bot's end of the Stratego AI API: it follows a game from the host's calls alone and answers them.

``BotClient`` is the request handler of one connection. It keeps the game as the bot sees it: a ``Game``
with its own pieces known and the opponent's as unknown markers that attacks and long moves reveal
(``Game.play_observed``), so the two-squares and more-squares histories, whose turn it is and the ply all
come from the same rules engine the host uses. Every call is checked against the state first; a call out
of order or a report the view cannot accept is answered with an error and changes nothing.

getAIMove runs the engine under the deadlines of the game's time manager (engine_ext/engine/timeman.py: the host's
time options and the profile's, banking what quick moves save); bot/daemon/deadline.py sends a random legal move
before the hard deadline instead if the engine is late, fails or returns an illegal move. To a host of protocol
1.1 or later the answer carries ``info``, what the engine thought of its move (bot/daemon/move_info.py).
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel

from bot.config import BotProfile
from bot.daemon.deadline import Answer, EngineWorker, answer_by_deadline
from bot.daemon.engine_interface import MoveEngine, ProgramEngine, RandomEngine, SearchBudget
from bot.daemon.fallback_setup import fallback_setup
from bot.daemon.learning import OpponentMemory
from bot.daemon.move_info import move_info
from bot.game_options import GameOptions
from engine_ext.engine.timeman import TimeLimits, TimeManager
from engine_ext.rules.game import Game, IllegalMove, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import SetupError, Square, get_ruleset
from protocol import errors
from protocol.messages import (
    Ack,
    ColourOption,
    GameIdOption,
    GameOverParams,
    GetAIMoveParams,
    GetAIMoveResult,
    GetAISetupPieceParams,
    GetAISetupPieceResult,
    GoodbyeParams,
    IllegalSetupParams,
    MoreSquaresOption,
    MoveLimitOption,
    MoveReport,
    MoveTimeAverageOption,
    MoveTimeMaxOption,
    OpponentOption,
    RangeAttacksOption,
    RulesetOption,
    SetGameOptionParams,
    SetOpponentSetupPieceParams,
    TwoSquaresOption,
)
from setups.notation import Setup

log = structlog.get_logger()

T = TypeVar("T")

# Seconds an outside program (engine = "ucc") has for its last echo and QUIT at the end of a game.
_PROGRAM_QUIT_TIME = 5.0
# Game ids whose gameOver was taken, kept to recognise a repeated one (the oldest are forgotten first).
_FINISHED_GAMES_KEPT = 1000


class Phase(enum.Enum):
    IDLE = "idle"  # between games
    CONFIGURING = "configuring"  # options arriving; no setup yet (or the last one was rejected)
    SETUP = "setup"  # our setup exists; the host reads it and marks the opponent's squares
    PLAYING = "playing"


class AnnouncedOptions(GameOptions):
    """What setGameOption has said so far: the game's options (bot/game_options.py, shared with the host;
    unset ones keep the tournament's values), and which game, our colour and the opponent."""

    game_id: str | None = None
    colour: Side | None = None
    opponent: str | None = None


# setGameOption's option models and the AnnouncedOptions field each one sets.
_OPTION_FIELDS: dict[type[BaseModel], str] = {
    GameIdOption: "game_id",
    ColourOption: "colour",
    OpponentOption: "opponent",
    RulesetOption: "ruleset",
    RangeAttacksOption: "range_attacks",
    TwoSquaresOption: "two_squares",
    MoreSquaresOption: "more_squares",
    MoveLimitOption: "move_limit",
    MoveTimeMaxOption: "move_time_max",
    MoveTimeAverageOption: "move_time_average",
}


@dataclass(frozen=True)
class OpponentPiece:
    """An opponent piece as the bot knows it: its rank only once revealed."""

    rank: Rank | None
    moved: bool


class BotClient:
    """The handler of the host's calls for one bot. ``select_profile`` picks the profile for a game from
    the opponent's name (None: always ``profile``)."""

    def __init__(
        self,
        profile: BotProfile,
        *,
        select_profile: Callable[[str | None], BotProfile] | None = None,
        seed: int | None = None,
        memory: OpponentMemory | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.profile = profile
        self.select_profile = select_profile
        self.memory = memory or OpponentMemory()  # setups per profile, what is learnt per opponent
        self._seed = profile.seed if seed is None else seed
        self._rng = random.Random(self._seed)
        self.goodbye: asyncio.Event = asyncio.Event()
        self.goodbye_reason: str | None = None
        self.results: list[GameOverParams] = []  # one per finished game, a repeated gameOver not again
        self.fallback_moves_total = 0  # the process's fallback moves, over all its games
        self._finished_games: dict[str, None] = {}  # game ids, oldest first
        self._clock = clock  # the move deadlines' clock (tests give a fake one)
        self._worker = EngineWorker()  # the engine's thread, started with the first engine call
        self.replaying = False  # set by bot/daemon/journal.py while it replays a game's calls after a restart
        # Whether getAIMove answers carry ``info`` (protocol 1.1): bot/daemon/service.py sets it from the
        # host's hello answer, as only a host of 1.1 or later takes the field.
        self.send_move_info = False
        self._reset_game()

    # --- state ----------------------------------------------------------------------------------------

    def _reset_game(self) -> None:
        self.phase = Phase.IDLE
        self.options = AnnouncedOptions()
        self.game_profile = self.profile
        self.engine: MoveEngine | None = None
        self.own_setup: dict[Square, Rank] = {}
        self.opponent_squares: set[Square] = set()
        self.game: Game | None = None
        self.pending_move: Move | None = None  # sent in answer to getAIMove, result not yet reported
        self.setup_name: str | None = None
        self._rejected_setup: dict[Square, Rank] | None = None  # the setup the host refused, if it did
        self.fallback_moves = 0  # this game's moves the engine did not deliver in time or legally
        self.timer: TimeManager | None = None  # this game's move budgets, from its first move on

    def close(self) -> None:
        """Let the engine thread go (the client is done)."""
        self._worker.abandon()

    def new_session(self) -> None:
        """A new connection: whatever game was open on the old one is gone."""
        self._reset_game()
        self.goodbye = asyncio.Event()
        self.goodbye_reason = None

    @property
    def colour(self) -> Side | None:
        return self.options.colour

    def opponent_pieces(self) -> dict[Square, OpponentPiece]:
        if self.game is None or self.colour is None:
            return {sq: OpponentPiece(None, False) for sq in self.opponent_squares}
        return {
            sq: OpponentPiece(None if rank == Rank.UNKNOWN else rank, self.game.has_moved(sq))
            for sq, (_side, rank) in self.game.pieces(self.colour.other).items()
        }

    # --- dispatch -------------------------------------------------------------------------------------

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        match method, params:
            case "setGameOption", SetGameOptionParams():
                return self._set_game_option(params)
            case "createAISetup", _:
                return await self._create_setup()
            case "getAISetupPiece", GetAISetupPieceParams():
                return self._setup_piece(params.square)
            case "illegalSetup", IllegalSetupParams():
                return self._illegal_setup(params)
            case "setOpponentSetupPiece", SetOpponentSetupPieceParams():
                return self._opponent_setup_piece(params.square)
            case "getAIMove", GetAIMoveParams():
                return await self._get_move(params.ply)
            case "submitAIMoveResult", MoveReport():
                return self._own_move_result(params)
            case "submitOpponentMove", MoveReport():
                return self._opponent_move(params)
        raise errors.MethodNotFound(f"unknown method {method!r}")

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        if isinstance(params, GameOverParams):
            await self._game_over(params)
        elif isinstance(params, GoodbyeParams):
            log.info("bot.goodbye", reason=params.reason)
            self.goodbye_reason = params.reason
            self.goodbye.set()

    # --- setup ----------------------------------------------------------------------------------------

    def _set_game_option(self, params: SetGameOptionParams) -> Ack:
        if self.phase is Phase.IDLE:
            self._reset_game()
            self.phase = Phase.CONFIGURING
        elif self.phase is not Phase.CONFIGURING:
            raise errors.OutOfOrder(f"setGameOption during the {self.phase.value} phase of a game")
        option = params.root
        setattr(self.options, _OPTION_FIELDS[type(option)], option.value)
        return Ack()

    async def _create_setup(self) -> Ack:
        if self.phase is not Phase.CONFIGURING:
            raise errors.OutOfOrder(f"createAISetup in the {self.phase.value} phase (setGameOption first)")
        if self.colour is None:
            raise errors.OutOfOrder("createAISetup before setGameOption colour")
        try:
            self.options.rules()
        except ValueError as exc:
            raise errors.InvalidParams(f"the game's options do not fit together: {exc}") from None
        if self.select_profile is not None:
            self.game_profile = self.select_profile(self.options.opponent)
        previous = self.engine
        self.own_setup, self.setup_name = self._choose_setup(self.colour)
        self.engine = self.game_profile.create_engine(self._rng.randrange(2**32))
        self.memory.prime_engine(self.engine, self.options.opponent, get_ruleset(self.options.ruleset))
        if isinstance(previous, ProgramEngine):  # its setup was refused: a fresh program sets up again
            await self._in_worker(previous.finish, None, None)
        if isinstance(self.engine, ProgramEngine) and not self.replaying:
            await self._program_setup(self.engine, self.colour)
        self.opponent_squares = set()
        self.phase = Phase.SETUP
        log.info("bot.setup", game=self.options.game_id, colour=str(self.colour),
                 opponent=self.options.opponent, profile=self.game_profile.name)
        return Ack()

    def _choose_setup(self, colour: Side) -> tuple[dict[Square, Rank], str | None]:
        """The profile's setup for this opponent, or after a refusal a different one; the fallback
        (legal by construction) when the library fails, so a setup problem never costs the game."""
        ruleset = get_ruleset(self.options.ruleset)
        try:
            chosen = self.memory.choose_setup(
                self.game_profile, self.options.opponent, ruleset, colour, self._rng, rejected=self._rejected_setup
            )
            ruleset.validate_setup(colour, chosen.placement)
            return chosen.placement, chosen.name
        except Exception as exc:  # any library failure: see the docstring
            log.warning("bot.setup_library_failed", error=repr(exc))
            return fallback_setup(ruleset, colour, self._rng), None

    async def _program_setup(self, engine: ProgramEngine, colour: Side) -> None:
        """An outside program chooses its own setup; the library's stays if it fails or repeats a refused one."""
        ruleset = get_ruleset(self.options.ruleset)
        try:
            placement = await self._in_worker(engine.choose_setup, colour, self.options.opponent or "", ruleset)
            ruleset.validate_setup(colour, placement)
        except Exception as exc:
            log.warning("bot.program_setup_failed", error=str(exc), fallback=self.setup_name or "generated")
            await self._in_worker(engine.abandon, f"no usable setup: {exc}")
            return
        if placement == self._rejected_setup:
            log.warning("bot.program_setup_refused_again", fallback=self.setup_name or "generated")
            await self._in_worker(engine.abandon, "it gave the setup the host refused")
            return
        self.own_setup, self.setup_name = placement, None

    async def _in_worker(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking engine code on the engine thread (an outside program's engine is used only there)."""
        return await self._worker.submit(fn, *args)

    def _setup_piece(self, square: Square) -> GetAISetupPieceResult:
        if self.phase is not Phase.SETUP:
            raise errors.OutOfOrder(f"getAISetupPiece in the {self.phase.value} phase (no setup yet)")
        assert self.colour is not None
        ruleset = get_ruleset(self.options.ruleset)
        if not ruleset.in_setup_area(self.colour, square):
            raise errors.InvalidParams(f"{square} is not in {self.colour}'s setup area")
        return GetAISetupPieceResult(rank=self.own_setup.get(square))

    def _illegal_setup(self, params: IllegalSetupParams) -> Ack:
        if self.phase is not Phase.SETUP:
            raise errors.OutOfOrder(f"illegalSetup in the {self.phase.value} phase (no setup to reject)")
        log.warning("bot.setup_rejected", reason=params.reason, attempts_left=params.attempts_left)
        self._rejected_setup = dict(self.own_setup)
        self.own_setup = {}
        self.phase = Phase.CONFIGURING
        return Ack()

    def _opponent_setup_piece(self, square: Square) -> Ack:
        if self.phase is not Phase.SETUP:
            raise errors.OutOfOrder(f"setOpponentSetupPiece in the {self.phase.value} phase")
        assert self.colour is not None
        ruleset = get_ruleset(self.options.ruleset)
        if not ruleset.in_setup_area(self.colour.other, square) or ruleset.is_lake(square):
            raise errors.InvalidParams(f"{square} is not in {self.colour.other}'s setup area")
        if square in self.opponent_squares:
            raise errors.InvalidParams(f"{square} already holds an opponent piece")
        self.opponent_squares.add(square)
        return Ack()

    def _start_game(self) -> Game:
        """The game begins with the first move call: both setups are complete by then."""
        if self.phase is Phase.PLAYING:
            assert self.game is not None
            return self.game
        if self.phase is not Phase.SETUP:
            raise errors.OutOfOrder(f"a move call in the {self.phase.value} phase (no setup yet)")
        assert self.colour is not None
        hidden = dict.fromkeys(self.opponent_squares, Rank.UNKNOWN)
        red, blue = (self.own_setup, hidden) if self.colour == Side.RED else (hidden, self.own_setup)
        try:
            self.game = Game(self.options.rules(), red, blue)
        except SetupError as exc:
            raise errors.OutOfOrder(f"the opponent's setup is not complete: {exc}") from None
        self.phase = Phase.PLAYING
        # The time options are settled by now; a game resumed after a restart starts a fresh bank.
        self.timer = TimeManager(self._time_limits(), clock=self._clock)
        return self.game

    # --- moves ----------------------------------------------------------------------------------------

    async def _get_move(self, ply: int) -> GetAIMoveResult:
        game = self._start_game()
        if self.pending_move is not None:
            raise errors.OutOfOrder(f"getAIMove while the result of {self.pending_move} is still due")
        if game.side_to_move != self.colour:
            raise errors.OutOfOrder(f"getAIMove on {game.side_to_move}'s turn; this bot plays {self.colour}")
        if ply != game.ply:
            raise errors.OutOfOrder(f"getAIMove for ply {ply}, but this bot's game is at ply {game.ply}")
        if not game.sendable_moves():  # legal under both readings of a repeated position
            raise errors.NoLegalMove(f"{self.colour} has no legal move at ply {game.ply}")
        answer = await self._engine_move(game)
        move = answer.move
        self.pending_move = move
        # protocol 1.1: what the engine thought, to a host that takes it (a 1.0 host would refuse the field)
        info = move_info(answer) if self.send_move_info else None
        return GetAIMoveResult.model_validate({"from": move.frm, "to": move.to, "info": info})

    def _time_limits(self) -> TimeLimits:
        """The host's time options and the game profile's times, for the time manager."""
        return TimeLimits.for_host(self.game_profile, move_time_max=self.options.move_time_max,
                                   move_time_average=self.options.move_time_average,
                                   move_limit=self.options.move_limit)

    async def _engine_move(self, game: Game) -> Answer:
        assert self.engine is not None and self.timer is not None
        times = self.timer.start_move(game.ply)
        answer = await answer_by_deadline(
            self._worker, self.engine, game, SearchBudget.for_move(times, clock=self._clock), self._rng,
            renew=lambda: self.game_profile.create_engine(self._rng.randrange(2**32)), events="bot",
        )
        self.timer.finish_move(times)
        self.engine = answer.engine
        if answer.fallback is not None:
            self.fallback_moves += 1
            self.fallback_moves_total += 1
        return answer

    def _own_move_result(self, report: MoveReport) -> Ack:
        if self.phase is not Phase.PLAYING or self.pending_move is None:
            raise errors.OutOfOrder("submitAIMoveResult without a move of this bot waiting for its result")
        move = Move(report.frm, report.to)
        if move != self.pending_move:
            raise errors.IllegalMoveReported(f"result for {move}, but this bot moved {self.pending_move}")
        self._play(move, report)
        self.pending_move = None
        return Ack()

    def _opponent_move(self, report: MoveReport) -> Ack:
        game = self._start_game()
        if self.pending_move is not None:
            raise errors.OutOfOrder(f"submitOpponentMove while the result of {self.pending_move} is due")
        if game.side_to_move == self.colour:
            raise errors.OutOfOrder(f"submitOpponentMove on {self.colour}'s own turn")
        self._play(Move(report.frm, report.to), report)
        return Ack()

    def _play(self, move: Move, report: MoveReport) -> None:
        assert self.game is not None
        try:
            played = self.game.play_observed(move, report.attacker, report.defender)
        except IllegalMove as exc:
            raise errors.IllegalMoveReported(f"{move} is illegal in this bot's view: {exc}") from None
        if played.outcome != report.outcome:  # the view's own pieces disagree with the reported outcome
            log.error("bot.outcome_mismatch", move=str(move), reported=report.outcome,
                      computed=played.outcome)

    def game_finished(self, game_id: str) -> bool:
        """Whether this game's gameOver was taken already (a repeated one changes nothing)."""
        return game_id in self._finished_games

    def game_over_applies(self, game_id: str) -> bool:
        """Whether a gameOver for ``game_id`` ends the game this bot is playing: not one it finished already,
        nor one it is not playing (between games, or another game id than its setGameOption gave; a game
        whose host sent no gameId cannot be told apart and is taken to be it)."""
        if self.game_finished(game_id) or not self.in_game:
            return False
        return self.options.game_id is None or self.options.game_id == game_id

    async def _game_over(self, params: GameOverParams) -> None:
        # At least once delivery (a host that sends it again after a resume, a transport that repeats it)
        # must not count, learn from or log a game twice, nor end the game that follows it.
        if self.game_finished(params.game_id):
            log.info("bot.game_over_repeated", game=params.game_id)
            return
        # Nor may a gameOver for a game this bot is not playing (a confused or hostile host) end the game it
        # is playing, or store a result it never played for.
        if not self.game_over_applies(params.game_id):
            log.warning("bot.game_over_ignored", game=params.game_id, winner=None if params.winner is None
                        else str(params.winner), reason=params.reason,
                        playing=self.options.game_id if self.in_game else None)
            return
        self._finished_games[params.game_id] = None
        if len(self._finished_games) > _FINISHED_GAMES_KEPT:
            del self._finished_games[next(iter(self._finished_games))]
        self.results.append(params)
        won = None if params.winner is None else params.winner == self.colour
        if isinstance(self.engine, ProgramEngine):
            result = "DRAW" if params.winner is None else str(params.winner).upper()
            try:
                await asyncio.wait_for(self._in_worker(self.engine.finish, self.game, result), _PROGRAM_QUIT_TIME)
            except Exception as exc:  # the game is over either way
                log.warning("bot.program_finish_failed", error=repr(exc))
        score = None if self.colour is None else params.red_score if self.colour == Side.RED else params.blue_score
        self.memory.record(self.options.opponent, won=won, reason=params.reason, setup=self.setup_name,
                           plies=params.plies, engine=self.engine, game_id=params.game_id, score=score,
                           opponent_setup=self._revealed_opponent_setup(params))
        log.info("bot.game_over", game=params.game_id, winner=None if params.winner is None else str(params.winner),
                 reason=params.reason, plies=params.plies, won=won, fallback_moves=self.fallback_moves)
        self._reset_game()

    def _revealed_opponent_setup(self, params: GameOverParams) -> Setup | None:
        """The opponent's whole setup from the game's end (the belief model learns its habits), or None
        when it gave none or it is not a legal setup of the game's ruleset."""
        if self.colour is None:
            return None
        placement = params.blue_setup if self.colour == Side.RED else params.red_setup
        if not placement:
            return None
        try:
            return Setup.from_placement(get_ruleset(self.options.ruleset), self.colour.other, placement)
        except ValueError as exc:  # SetupError is a ValueError
            log.warning("bot.opponent_setup_unusable", game=params.game_id, error=str(exc))
            return None

    # --- resume: bot/daemon/journal.py replays a game's calls after a restart -----------------------------------

    @property
    def in_game(self) -> bool:
        return self.phase is not Phase.IDLE

    def restore_setup(self, setup: dict[Square, Rank]) -> None:
        """After a replayed createAISetup: the setup this bot really gave (the replay drew a new one)."""
        if self.phase is not Phase.SETUP:
            raise errors.OutOfOrder(f"a setup to restore in the {self.phase.value} phase")
        self.own_setup = dict(setup)
        if isinstance(self.engine, ProgramEngine):
            log.warning("bot.program_cannot_resume", rest_of_game="random legal moves",
                        why="a UCC program cannot join a game under way")
            self.engine = RandomEngine(self._rng.randrange(2**32))

    def restore_move(self, ply: int, move: Move) -> None:
        """A replayed getAIMove: the move this bot sent then, without asking the engine again."""
        game = self._start_game()
        if self.pending_move is not None or game.side_to_move != self.colour or ply != game.ply:
            raise errors.OutOfOrder(f"a move to restore at ply {ply} that this bot's game does not expect")
        if move not in game.legal_moves():
            raise errors.OutOfOrder(f"the move to restore, {move}, is not legal at ply {ply}")
        self.pending_move = move


class HostRefused(errors.ProtocolError):
    """The host turned the bot away (protocol version, token); retrying would not help (bot/daemon/service.py, which
    runs the sessions, exits 2)."""
