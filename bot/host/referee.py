"""The host: the referee that bots connect to. It plays games between them with the rules engine.

Per game the host sets the options on both bots, reads both setups square by square (an illegal setup
gets ``illegalSetup`` and one second chance, then the game is forfeited), tells each bot where the other's
pieces stand, and then asks for moves in turn: every move is checked by the rules engine, must arrive
within ``moveTimeMax`` (plus a small network grace), and is reported back to both bots with the ranks an
attack reveals. It ends with ``gameOver`` to both, a score from the tournament table and a game record.
What each answer means for the game (a setup accepted, a move played, a forfeit, the end, the record) is the
referee core's (engine_ext/rules/referee.py, which the lab's runner drives too): this module does the talking
and the timing, and reports every answer and every failure to it.

Whatever a bot does (errors, garbage, silence, disconnecting) ends at worst in that bot's forfeit of that
game: the host and its other games carry on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
import secrets
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import structlog
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot import __version__
from bot.game_options import GameOptions
from bot.host.strangers import Clock, StrangerBudget, StrangerLimit, StrangerLog, serve_admitted
from engine_ext.rules.game import Game, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove
from engine_ext.rules.referee import (
    ADJOURNED,
    Adjourned,
    Event,
    Failure,
    MoveAccepted,
    MoveSubmitted,
    MoveUnreadable,
    PlayerFailed,
    PlayerGone,
    PlayerLeft,
    Referee,
    Rejected,
    SetupRejected,
    SetupsShown,
    SetupSubmitted,
    SetupUnreadable,
    TimeExpired,
    Verdict,
)
from engine_ext.rules.rulesets import RULESETS, Square
from protocol import errors
from protocol.codec import DEFAULT_MAX_LINE, host_codec
from protocol.endpoint import Channel, Endpoint
from protocol.limits import MIN_MAX_LINE, Allowance
from protocol.link import call_pausing_outages, close_reason, current_outage, outage_seconds
from protocol.messages import (
    MOVE_TIME_OPTION_MAX,
    PROTOCOL_VERSION,
    RESUME_FEATURE,
    CreateAISetupParams,
    GameOverParams,
    GetAIMoveParams,
    GetAIMoveResult,
    GetAISetupPieceParams,
    GetAISetupPieceResult,
    GoodbyeParams,
    HelloParams,
    HelloResult,
    IllegalSetupParams,
    MoveReport,
    SetGameOptionParams,
    SetOpponentSetupPieceParams,
    protocol_compatible,
)
from protocol.mqtt import MqttHostListener, MqttSettings

log = structlog.get_logger()

# The rules of a game (setups, moves, forfeits, its end, its record) are the referee core's
# (engine_ext/rules/referee.py), which the lab's runner drives too; the host talks to the bots and reports to it.
# Two of its ends are no result: ``adjourned`` (stopped unfinished: recorded, scored for nobody) and ``void``
# (never started: neither scored nor recorded).


class HostSettings(GameOptions):
    """The options of the games this host referees (bot/game_options.py: the rules and time limits it sends
    with setGameOption), and how it serves them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)  # 0: any free port
    grace: float = Field(default=0.5, ge=0)  # network allowance on top of move_time_max
    call_timeout: float = Field(default=10.0, gt=0)  # every call but getAIMove
    hello_timeout: float = Field(default=10.0, gt=0)
    tokens: frozenset[str] | None = None  # accepted hello tokens; None: any bot may play
    records_dir: Path | None = None
    max_line: int = Field(default=DEFAULT_MAX_LINE, ge=MIN_MAX_LINE)  # every message the host makes fits
    # Seconds in all, per bot and game, that a game waits for a bot whose connection failed to come back
    # with ``hello resumeGame`` (docs/mqtt.md); 0: no waiting, the bot forfeits at once.
    resume_grace: float = Field(default=0.0, ge=0)
    mqtt: MqttSettings | None = None  # also serve bots through this broker
    # New TCP connections a second, per address, that have not proved themselves (no welcomed hello yet), after
    # a burst of ``stranger_burst``: one over it is closed at once, unread (bot/host/strangers.py, docs/host.md).
    # A welcomed hello gives its connection's share back, so bots never spend their address's allowance.
    stranger_rate: float = Field(default=2.0, gt=0)
    stranger_burst: float = Field(default=10.0, ge=1)

    @model_validator(mode="after")
    def _times_fit(self) -> HostSettings:
        # The bots are told these with setGameOption, whose values stop at an hour (protocol/messages.py): a
        # longer one could not be sent, and every game would fail at its first call.
        for name in ("move_time_max", "move_time_average"):
            if getattr(self, name) > MOVE_TIME_OPTION_MAX:
                raise ValueError(f"{name} must be at most {MOVE_TIME_OPTION_MAX:g} s, not {getattr(self, name):g}")
        return self


@dataclass(eq=False)
class BotSession:
    """A connected bot that said hello."""

    id: str
    name: str
    version: str
    token: str | None
    endpoint: Endpoint
    arrived: float = field(default_factory=time.monotonic)
    busy: bool = False  # playing (or reserved for) a game
    features: frozenset[str] = frozenset()  # what the bot's hello said it can do
    left: bool = False  # the bot said goodbye: it will not come back
    # The secret a resume of this session's games must present (docs/mqtt.md, resume): sent in the hello
    # answer to this connection alone, and only to a bot that can resume; None: its games cannot be resumed.
    resume_key: str | None = None
    # Notified when a resumed connection replaces ``endpoint`` (the game waiting for it goes on).
    reattached: asyncio.Condition = field(default_factory=asyncio.Condition)

    @property
    def alive(self) -> bool:
        return not self.endpoint.closed

    @property
    def resumable(self) -> bool:
        return RESUME_FEATURE in self.features and not self.left

    async def goodbye(self, reason: str) -> None:
        with contextlib.suppress(errors.ProtocolError):
            await self.endpoint.notify("goodbye", GoodbyeParams(reason=reason))


@dataclass
class GameResult:
    game_id: str
    names: dict[Side, str]
    winner: Side | None
    reason: str
    plies: int
    forfeits: frozenset[Side] = frozenset()
    detail: str | None = None
    seconds: float = 0.0
    think_seconds: dict[Side, float] = field(default_factory=dict)  # total time each side took to move
    record: GameRecord | None = None
    record_path: Path | None = None
    record_error: str | None = None  # why the record could not be saved (a full disk): the result stands

    @property
    def verdict(self) -> Verdict:
        return Verdict(self.winner, self.reason, self.plies, self.forfeits, self.detail)

    @property
    def adjourned(self) -> bool:
        return self.verdict.adjourned

    @property
    def void(self) -> bool:
        return self.verdict.void

    def score(self, side: Side) -> int:
        return self.verdict.score(side)

    def outcome_for(self, side: Side) -> str:
        """``win``, ``draw``, ``loss``, ``forfeit``, ``adjourned`` or ``void``."""
        return self.verdict.outcome_for(side)

    def summary(self) -> str:
        more = f": {self.detail}" if self.detail else ""
        if self.adjourned or self.void:
            return f"{self.game_id}: {self.reason} after {self.plies} plies{more}"
        who = "draw" if self.winner is None else f"{self.names[self.winner]} ({self.winner}) wins"
        return f"{self.game_id}: {who} by {self.reason} after {self.plies} plies{more}"


@dataclass
class Tally:
    """One bot's games in the tournament's scoring."""

    wins: int = 0
    draws: int = 0
    losses: int = 0
    forfeits: int = 0
    adjourned: int = 0  # stopped unfinished by the host: counted, not scored
    score: int = 0
    think_seconds: float = 0.0
    moves: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses + self.forfeits + self.adjourned

    def add(self, result: GameResult, side: Side) -> None:
        outcome = result.outcome_for(side)
        self.wins += outcome == "win"
        self.draws += outcome == "draw"
        self.losses += outcome == "loss"
        self.forfeits += outcome == "forfeit"
        self.adjourned += outcome == ADJOURNED
        self.score += result.score(side)
        self.think_seconds += result.think_seconds.get(side, 0.0)
        # Red moves first: it has made the odd ply when the count is odd.
        self.moves += (result.plies + (side == Side.RED)) // 2


def standings(results: Iterable[GameResult]) -> dict[str, Tally]:
    """Tallies by bot name, best score first (void games, which never started, are not in them)."""
    tallies: dict[str, Tally] = {}
    for result in results:
        if result.void:
            continue
        for side, name in result.names.items():
            tallies.setdefault(name, Tally()).add(result, side)
    return dict(sorted(tallies.items(), key=lambda item: -item[1].score))


class _Forfeit(Exception):
    """A side is out of the game: the referee core has its forfeit; this only stops the calls."""

    def __init__(self, side: Side) -> None:
        super().__init__(f"{side} forfeits")
        self.side = side


class _BadSetupAnswer(Exception):
    """A getAISetupPiece answer that makes the setup illegal (an error or an unreadable rank)."""


MoveObserver = Callable[[Game, MoveResult | None], Awaitable[None]]


# --- what the host tells its observers (the web view, bot/web/): started, a move, over -------------------------


@dataclass(frozen=True)
class GameStarted:
    """Both setups are in and the first move is about to be asked for."""

    game_id: str
    names: Mapping[Side, str]
    options: RulesOptions
    setups: Mapping[Side, Mapping[Square, Rank]]
    started: str  # the record's start time (UTC, ISO 8601)
    move_time_max: float  # seconds a move may take (the clock a viewer sees)


@dataclass(frozen=True)
class MovePlayed:
    game_id: str
    ply: int  # this move's ply number, 1 for the first move
    played: MoveResult
    recorded: RecordedMove  # as it stands in the game's record
    seconds: float  # the mover's thinking time for it, as the host measured it (outages excluded)


@dataclass(frozen=True)
class GameEnded:
    """A game is over (finished, forfeited or adjourned); void games, which never started, are not told."""

    result: GameResult


class GameObserver(Protocol):
    """Watches the host's games. The calls are plain functions on the host's event loop, made while a game
    waits: an observer must only take note (queue, copy) and never block; what it raises is logged and
    ignored, since watching a game must never change it."""

    def game_started(self, event: GameStarted) -> None: ...

    def move_played(self, event: MovePlayed) -> None: ...

    def game_over(self, event: GameEnded) -> None: ...


async def _all_or_forfeits(*steps: Awaitable[None]) -> None:
    """Await the steps together (both bots can fail at once: the core takes every forfeit); if any side
    forfeited, raise a ``_Forfeit`` once all are done."""
    outcomes = await asyncio.gather(*steps, return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, _Forfeit):
            raise outcome
    failures = [o for o in outcomes if isinstance(o, _Forfeit)]
    if failures:
        raise failures[0]


def _error_detail(method: str, exc: errors.RpcError) -> str:
    return f"{method} answered error {exc.code}: {exc.message}"


def _safe_file_name(game_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", game_id)[:100] or "game"


class _Greeter:
    """The host's request handler for one connection: the only thing a bot may call is hello."""

    def __init__(self, host: Host, peer: str, address: str | None = None) -> None:
        self.host = host
        self.peer = peer
        self.address = address  # a TCP connection's address: its stranger's share is given back once welcomed
        self.endpoint: Endpoint | None = None
        self.session: BotSession | None = None
        self.answered = asyncio.Event()  # hello got an answer, welcome or refusal

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        assert isinstance(params, HelloParams) and self.endpoint is not None
        if self.session is not None:
            raise errors.OutOfOrder("hello was already said on this connection")
        try:
            if not protocol_compatible(params.protocol):
                raise errors.UnsupportedVersion(
                    f"protocol {params.protocol} is not supported; this host speaks {PROTOCOL_VERSION}"
                )
            tokens = self.host.settings.tokens
            if tokens is not None and params.token not in tokens:
                raise errors.AuthFailed("unknown token" if params.token else "this host needs a token")
        except errors.RpcError:
            self.answered.set()
            raise
        if params.resume_game is not None:
            try:
                resumed = await self.host._resume(params, self.endpoint)
            except errors.ResumeRefused:
                self.answered.set()
                raise
            if resumed is not None:
                self.session, calls = resumed
                self._trust()
                log.info("host.resumed", peer=self.peer, bot=params.name, game=params.resume_game,
                         session=self.session.id, calls=calls)
                self.answered.set()
                return HelloResult(host="perspecto-host", version=__version__, protocol=PROTOCOL_VERSION,
                                   session=self.session.id, resumed=True, resume_calls=calls,
                                   resume_key=self.session.resume_key)
        features = frozenset(params.features or ())
        self.session = BotSession(
            id=uuid.uuid4().hex[:12], name=params.name, version=params.version, token=params.token,
            endpoint=self.endpoint, features=features,
            resume_key=secrets.token_urlsafe(32) if RESUME_FEATURE in features else None,
        )
        self.host._register(self.session)
        self._trust()
        log.info("host.hello", peer=self.peer, bot=params.name, version=params.version,
                 session=self.session.id)
        self.answered.set()
        return HelloResult(host="perspecto-host", version=__version__, protocol=PROTOCOL_VERSION,
                           session=self.session.id, resumed=False if params.resume_game is not None else None,
                           resume_key=self.session.resume_key)

    def _trust(self) -> None:
        """The hello was welcomed: the connection is a bot's now, no longer held to a stranger's budget, and it
        costs its address nothing of the strangers' allowance."""
        if self.endpoint is not None and self.endpoint.budget is not None:
            self.endpoint.budget.lift()
        if self.address is not None:
            self.host._strangers.proved(self.address)

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        if isinstance(params, GoodbyeParams) and self.endpoint is not None:
            log.info("host.bot_goodbye", peer=self.peer, reason=params.reason)
            if self.session is not None:
                self.session.left = True  # a bot leaving in a game forfeits it: nobody waits for it
                async with self.session.reattached:
                    self.session.reattached.notify_all()  # a game waiting for it to resume stops waiting
            await self.endpoint.close("the bot said goodbye")


class Host:
    def __init__(self, settings: HostSettings | None = None, *, clock: Clock = time.monotonic) -> None:
        """``clock``: the strangers' limit's (a test's fake clock decides when the buckets refill)."""
        self.settings = settings or HostSettings()
        self._strangers = StrangerLimit(self.settings.stranger_rate, self.settings.stranger_burst, clock=clock)
        self._stranger_log = StrangerLog()
        self.sessions: dict[str, BotSession] = {}
        self.results: list[GameResult] = []
        self._server: asyncio.Server | None = None
        self._changed = asyncio.Condition()  # a bot arrived, left or became free
        self._game_numbers = itertools.count(1)
        self._run_id = uuid.uuid4().hex[:6]
        self._tasks: set[asyncio.Task[Any]] = set()
        self._mqtt: MqttHostListener | None = None
        self._live: dict[str, _Referee] = {}  # games in progress, by game id (for resuming bots)
        self._stopping = False  # stop_pairing was called: no new games
        self._observers: list[GameObserver] = []  # told of every game's start, moves and end (bot/web/)
        self._failed_observers: set[int] = set()  # ids of the observers that raised
        if self.settings.ruleset not in RULESETS:
            raise ValueError(f"unknown ruleset {self.settings.ruleset!r} (known: {', '.join(RULESETS)})")

    # --- connections ----------------------------------------------------------------------------------

    async def start(self) -> int:
        """Listen (on TCP, and on MQTT when configured); returns the TCP port (useful with port 0)."""
        self._server = await serve_admitted(self.settings.host, self.settings.port, self._admit, self._serve_connection)
        log.info("host.listening", host=self.settings.host, port=self.port)
        self._spawn(self._summarise_strangers())
        if self.settings.mqtt is not None:
            self._mqtt = MqttHostListener(self.settings.mqtt, self._serve_connection)
            try:
                await self._mqtt.start()
            except BaseException:
                self._server.close()
                raise
        return self.port

    @property
    def mqtt_address(self) -> str | None:
        """The broker URL and host id bots reach this host at (no password), if it serves MQTT."""
        return self._mqtt.address if self._mqtt is not None else None

    @property
    def port(self) -> int:
        assert self._server is not None, "the host is not started"
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def run_id(self) -> str:
        """This host's run: the first part of its game ids."""
        return self._run_id

    async def close(self, reason: str = "the host is shutting down", *, linger: float = 0.0) -> None:
        """Say goodbye to every bot and stop serving. ``linger``: seconds to let the bots hang up first, so
        that a bot still busy with a call reads the goodbye instead of finding its connection gone (and
        retrying a host that has left)."""
        if self._server is not None:
            self._server.close()
        sessions = list(self.sessions.values())
        for session in sessions:
            await session.goodbye(reason)
        if linger > 0 and sessions:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(linger):
                    await asyncio.gather(*(s.endpoint.wait_closed() for s in sessions))
        for session in sessions:
            await session.endpoint.close(reason)
        for task in list(self._tasks):
            task.cancel()
        if self._mqtt is not None:
            await self._mqtt.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(2.0):
                    await self._server.wait_closed()

    def _admit(self, address: str) -> bool:
        """A TCP connection from ``address``, as it is accepted: over its address's allowance of strangers it is
        reset at once, unread, and counted in the next summary line."""
        if self._strangers.admit(address):
            return True
        self._stranger_log.refused[address] += 1
        return False

    async def _summarise_strangers(self) -> None:
        """Once a second: a line per address whose strangers were refused or dropped, not one per connection."""
        while True:
            await asyncio.sleep(1.0)
            self._stranger_log.flush()
            self._strangers.forget_full()

    async def _serve_connection(self, channel: Channel, address: str | None = None) -> None:
        """One connection; ``address``: a TCP connection's, admitted by the strangers' limit."""
        greeter = _Greeter(self, channel.peer, address)
        # A stranger until its hello is welcomed: bounded in what it may send and make us log (its invalid
        # messages are not logged one by one: the connection is counted in the strangers' summary line).
        budget = StrangerBudget(Allowance(bytes=2 * self.settings.max_line))  # room for a mistake and its hello
        endpoint = Endpoint(channel, host_codec(max_line=self.settings.max_line), greeter, budget=budget)
        greeter.endpoint = endpoint
        serving = asyncio.create_task(endpoint.run())
        try:
            # Wait for hello, but not for a peer that has already gone.
            answered = asyncio.create_task(greeter.answered.wait())
            gone = asyncio.create_task(endpoint.wait_closed())
            await asyncio.wait({answered, gone}, timeout=self.settings.hello_timeout,
                               return_when=asyncio.FIRST_COMPLETED)
            answered.cancel()
            gone.cancel()
            if not greeter.answered.is_set() and not endpoint.closed:
                log.debug("host.no_hello", peer=channel.peer)  # counted in the strangers' summary
                await endpoint.close("no hello in time")
            if greeter.session is None and not endpoint.closed:
                # Refused: let the error reach the bot, then hang up.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(1.0):
                        await endpoint.wait_closed()
                await endpoint.close("hello refused")
            await serving
        finally:
            if greeter.session is None:  # never welcomed: a stranger, dropped or refused
                self._stranger_log.dropped[address or channel.peer] += 1
            # A session that a resumed connection took over lives on without this one.
            elif greeter.session.endpoint is endpoint:
                await self._unregister(greeter.session)

    async def _resume(self, params: HelloParams, endpoint: Endpoint) -> tuple[BotSession, int] | None:
        """Attach a resuming bot's new connection to its game, if that game is still waiting for it."""
        assert params.resume_game is not None
        referee = self._live.get(params.resume_game)
        if referee is None:
            log.info("host.resume_unknown_game", bot=params.name, game=params.resume_game)
            return None
        resumed = await referee.reattach(params, endpoint)
        if resumed is not None:
            self.sessions[resumed[0].id] = resumed[0]
            self._spawn(self._notify_change())
        return resumed

    def _register(self, session: BotSession) -> None:
        self.sessions[session.id] = session
        self._spawn(self._notify_change())

    async def _unregister(self, session: BotSession) -> None:
        self.sessions.pop(session.id, None)
        log.info("host.bot_left", bot=session.name, session=session.id, reason=session.endpoint.close_reason)
        await self._notify_change()

    async def _notify_change(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def wait_for_bot(self, *, token: str | None = None, timeout: float | None = None) -> BotSession:
        """Claim a free bot (the one with ``token``, if given), waiting for it to connect."""

        def pick() -> BotSession | None:
            for session in sorted(self.sessions.values(), key=lambda s: s.arrived):
                if session.alive and not session.busy and (token is None or session.token == token):
                    return session
            return None

        async with asyncio.timeout(timeout), self._changed:
            session = await self._changed.wait_for(pick)
            assert session is not None  # wait_for returns once pick() finds one
            session.busy = True
            return session

    def release(self, session: BotSession) -> None:
        session.busy = False
        self._spawn(self._notify_change())

    # --- observers -----------------------------------------------------------------------------------------

    def observe(self, observer: GameObserver) -> None:
        """Tell ``observer`` of every game from now on: its start, each move and its end."""
        self._observers.append(observer)

    def _publish(self, tell: Callable[[GameObserver], None]) -> None:
        for observer in list(self._observers):
            try:
                tell(observer)
            except Exception as exc:  # a watcher's bug must not cost a game
                if id(observer) in self._failed_observers:  # its traceback is in the log once; that is enough
                    log.debug("host.observer_failed_again", observer=type(observer).__name__, error=repr(exc))
                else:
                    self._failed_observers.add(id(observer))
                    log.exception("host.observer_failed", observer=type(observer).__name__)

    # --- stopping ------------------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        return self._stopping

    def stop_pairing(self) -> None:
        """Start no new game: ``serve_lobby`` returns once the games it is playing are over."""
        self._stopping = True
        log.info("host.stop_pairing", games_in_progress=len(self._live))
        self._spawn(self._notify_change())

    async def adjourn_games(self, detail: str) -> None:
        """Stop every game in progress where it stands: each ends as ``adjourned`` (recorded with its moves
        so far, scored for nobody) and its ``play_game`` returns."""
        referees = list(self._live.values())
        for referee in referees:
            referee.adjourn(detail)
        await asyncio.gather(*(referee.wait_over() for referee in referees))

    # --- the lobby: pairs whatever bots connect ----------------------------------------------------------

    async def serve_lobby(
        self,
        *,
        games_per_pairing: int = 2,
        max_games: int | None = None,
        on_result: Callable[[GameResult], None] | None = None,
    ) -> list[GameResult]:
        """Pair free bots (those that met least often first), play ``games_per_pairing`` games with
        colours alternating, then free them again; stop after ``max_games`` games, or once ``stop_pairing``
        is called and the games under way are over. A void game (a bot said goodbye before it started) is
        not a result: ``on_result`` does not see it."""
        met: Counter[frozenset[str]] = Counter()
        # ``max_games`` counts games played, not games planned: a pairing holds the games it means to play
        # (``reserved``) and hands back those it did not play (a bot crashed or left, a void game), so that
        # another pairing plays them. Counting a pairing's games as played when it began ended a run short.
        reserved = 0  # the games played plus those the pairings under way still mean to play
        played = 0  # games with a result (void games are none)
        pairings: set[asyncio.Task[None]] = set()

        def playing(session: BotSession) -> bool:
            return session.alive and not session.left

        def all_played() -> bool:
            return max_games is not None and played >= max_games

        async def pairing(a: BotSession, b: BotSession, games: int) -> None:
            nonlocal reserved, played
            done = 0
            try:
                for i in range(games):
                    if self._stopping or not (playing(a) and playing(b)):
                        break
                    red, blue = (a, b) if i % 2 == 0 else (b, a)
                    result = await self.play_game(red, blue)
                    if result.void:
                        continue
                    done += 1
                    played += 1
                    if on_result is not None:
                        try:
                            on_result(result)
                        except Exception:  # the caller's bug (printing, saving) must not stop the lobby
                            log.exception("host.on_result_failed", game=result.game_id)
            finally:
                reserved -= games - done  # the games not played are free for the next pairing
                self.release(a)  # wakes the lobby: a pair to make, games to hand out, or the end
                self.release(b)

        def next_step() -> tuple[BotSession, BotSession] | bool:
            if self._stopping or all_played():
                return True
            if max_games is not None and reserved >= max_games:
                return False  # every game is held by a pairing under way: wait for one to play or hand back
            return self._pick_pair(met) or False

        try:
            while True:
                async with self._changed:
                    step = await self._changed.wait_for(next_step)
                    if not isinstance(step, tuple):
                        break  # stopping, or every game played
                    a, b = step
                    a.busy = b.busy = True
                games = games_per_pairing
                if max_games is not None:
                    games = min(games, max_games - reserved)
                reserved += games
                met[frozenset((a.name + a.id, b.name + b.id))] += 1
                task = asyncio.create_task(pairing(a, b, games))
                pairings.add(task)
                task.add_done_callback(pairings.discard)
            if pairings:
                await asyncio.gather(*pairings)
        finally:
            for task in pairings:
                task.cancel()
        return self.results

    def _pick_pair(self, met: Counter[frozenset[str]]) -> tuple[BotSession, BotSession] | None:
        free = sorted((s for s in self.sessions.values() if s.alive and not s.busy and not s.left),
                      key=lambda s: s.arrived)
        if len(free) < 2:
            return None
        return min(
            itertools.combinations(free, 2),
            key=lambda pair: met[frozenset((pair[0].name + pair[0].id, pair[1].name + pair[1].id))],
        )

    # --- one game ----------------------------------------------------------------------------------------

    def next_game_id(self) -> str:
        return f"{self._run_id}-{next(self._game_numbers):04d}"

    async def play_game(
        self,
        red: BotSession,
        blue: BotSession,
        *,
        game_id: str | None = None,
        on_move: MoveObserver | None = None,
    ) -> GameResult:
        game_id = game_id or self.next_game_id()
        referee = _Referee(self, game_id, {Side.RED: red, Side.BLUE: blue}, on_move)
        result = await referee.run()
        if result.void:
            log.info("host.game_void", game=game_id, red=red.name, blue=blue.name, detail=result.detail)
            return result
        self.results.append(result)
        self._publish(lambda observer: observer.game_over(GameEnded(result)))
        log.info("host.game_over", game=game_id, red=red.name, blue=blue.name, winner=str(result.winner),
                 reason=result.reason, plies=result.plies, detail=result.detail)
        return result


class _Referee:
    """One game between two sessions: the talking and the timing. What the bots' answers mean for the game
    (a setup accepted or not, a move played or forfeited, how the game ended, its record) is the referee
    core's (engine_ext/rules/referee.py, ``self.core``), to which every answer and every failure is reported."""

    def __init__(
        self, host: Host, game_id: str, players: dict[Side, BotSession], on_move: MoveObserver | None
    ) -> None:
        self.host = host
        self.settings = host.settings
        self.rules = host.settings.rules()
        self.game_id = game_id
        self.players = players
        self.on_move = on_move
        self.think = {Side.RED: 0.0, Side.BLUE: 0.0}
        # For resuming bots: the calls of this game each bot has answered, the call on its way to it, what
        # is left of its allowance for coming back, and the seconds spent waiting for it (outages, resumes),
        # which are nobody's thinking time.
        self.answered = {Side.RED: 0, Side.BLUE: 0}
        self.in_flight: dict[Side, str | None] = {Side.RED: None, Side.BLUE: None}
        self.resume_left = {side: self.settings.resume_grace for side in (Side.RED, Side.BLUE)}
        self.resume_refused: dict[Side, str] = {}
        self.waited = {Side.RED: 0.0, Side.BLUE: 0.0}
        self.decided = False  # the game is over: a bot coming back to it is told it is not resumed
        self._playing: asyncio.Task[None] | None = None  # the game's calls, cancelled to adjourn it
        self._adjourned: str | None = None  # why the host adjourned the game, once it has
        self._over = asyncio.Event()  # run() has returned
        self._told = 0  # the plies told to the host's observers
        # An illegal setup gets ``illegalSetup`` and one second chance (docs/protocol.md).
        self.core = Referee(
            self.rules, names={side: session.name for side, session in players.items()}, game_id=game_id,
            started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            record_options=self.settings.record_options(), setup_attempts=2,
        )

    @property
    def setups(self) -> dict[Side, dict[Square, Rank]]:
        """The setups the core accepted (empty for a side that gave no legal one)."""
        return self.core.setups

    def _report(self, failure: Failure) -> _Forfeit:
        """Tell the core what a bot did wrong; the ``_Forfeit`` to raise to stop that side's calls."""
        self.core.submit(failure)
        return _Forfeit(failure.side)

    async def run(self) -> GameResult:
        self.host._live[self.game_id] = self
        try:
            return await self._run()
        finally:
            self.host._live.pop(self.game_id, None)
            self._over.set()

    def adjourn(self, detail: str) -> None:
        """Stop the game where it stands (the host is shutting down): it ends as ``adjourned``."""
        if self._adjourned is None and not self.decided:
            self._adjourned = detail
            if self._playing is not None:
                self._playing.cancel()

    async def wait_over(self) -> None:
        await self._over.wait()

    async def _play(self) -> None:
        await self._both(self._set_up)
        await self._both(self._announce_opponent_setup)
        self.core.submit(SetupsShown())
        game = self.core.game
        assert game is not None  # both setups are in
        started = GameStarted(
            game_id=self.game_id, names={side: p.name for side, p in self.players.items()}, options=self.rules,
            setups={side: dict(placement) for side, placement in self.setups.items()}, started=self.core.started,
            move_time_max=self.settings.move_time_max,
        )
        self.host._publish(lambda observer: observer.game_started(started))
        if self.on_move is not None:
            await self.on_move(game, None)
        while not self.core.over:
            side, thought = game.side_to_move, self.think[game.side_to_move]
            try:
                await self._turn(game)
            finally:  # a move on the board is told even when telling the bots about it failed
                if len(self.core.moves) == len(game.history) == game.ply > self._told:
                    self._publish_move(game, side, self.think[side] - thought)

    def _publish_move(self, game: Game, side: Side, seconds: float) -> None:
        event = MovePlayed(game_id=self.game_id, ply=game.ply, played=game.history[-1],
                           recorded=self.core.moves[-1], seconds=seconds)
        self._told = event.ply
        self.host._publish(lambda observer: observer.move_played(event))

    async def _run(self) -> GameResult:
        started = time.monotonic()
        failure: str | None = None  # the host's own bug in this game, if one stopped it
        self._playing = asyncio.ensure_future(self._play())
        if self._adjourned is not None:  # adjourned before it began
            self._playing.cancel()
        try:
            await self._playing
        except _Forfeit:
            pass  # the core has the forfeits
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self._adjourned is None or (current is not None and current.cancelling()):
                raise  # not adjourn(): this task itself is being cancelled
        except Exception as exc:
            # Nothing a bot does gets here (it ends in a forfeit); a bug of the host's does, and it must not
            # take the game's result with it: the game ends adjourned (nobody's fault, no points), recorded,
            # told to both bots and to the standings, and the host goes on.
            log.exception("host.game_failed", game=self.game_id)
            failure = f"the host failed: {exc!r}"
        self.decided = True
        for side, session in self.players.items():
            if session.left:  # said goodbye to the host: gone before the setups were shown, the game is void
                self.core.submit(PlayerLeft(side))
        if failure is not None:
            self.core.submit(Adjourned(failure))
        elif self._playing.cancelled():
            assert self._adjourned is not None  # a cancel that was not adjourn() was raised above
            self.core.submit(Adjourned(self._adjourned))
        verdict = self.core.verdict
        if verdict is None:  # the host's bug: its calls stopped before the game was decided
            log.error("host.game_undecided", game=self.game_id)
            self.core.submit(Adjourned("the host failed: the game stopped undecided"))
            verdict = self.core.verdict
            assert verdict is not None  # adjourned
        result = GameResult(
            game_id=self.game_id, names={s: p.name for s, p in self.players.items()}, winner=verdict.winner,
            reason=verdict.reason, plies=verdict.plies, forfeits=verdict.forfeits, detail=verdict.detail,
            seconds=time.monotonic() - started, think_seconds=dict(self.think),
        )
        try:
            await self._announce_end(result)  # the bot still here must hear of a void game too: it was set up
        except Exception:
            log.exception("host.game_over_not_sent", game=self.game_id)
        if not result.void:
            try:
                self._finish_record(result)
            except Exception:  # the result stands without its record file
                log.exception("host.record_failed", game=self.game_id)
        return result

    async def _both(self, step: Callable[[Side], Awaitable[None]]) -> None:
        """Run a step for both sides at once."""
        await _all_or_forfeits(step(Side.RED), step(Side.BLUE))

    # --- calls, with every failure turned into the right forfeit ------------------------------------------

    async def _request(
        self, side: Side, method: str, params: BaseModel, timeout: float | None = None
    ) -> BaseModel:
        """Raises the protocol's errors as they are; the callers decide what each costs. The clock stops
        while the bot is out of reach through no fault of its own (a broker outage); a bot that can resume
        gets the same call again on its new connection."""
        timeout = timeout or self.settings.call_timeout
        self.in_flight[side] = method
        try:
            while True:
                endpoint = self.players[side].endpoint
                outage_before = outage_seconds(endpoint.channel)
                try:
                    answer = await call_pausing_outages(endpoint, method, params, timeout)
                except errors.CallTimeout:
                    raise self._report(TimeExpired(side, f"no answer to {method} within {timeout:g} s")) from None
                except errors.ConnectionClosed as exc:
                    if await self._resumed(side, endpoint):
                        continue
                    detail = f"connection lost during {method}: {exc}"
                    why = close_reason(endpoint.channel)  # MQTT: what ended the stream
                    if why:
                        detail += f" ({why})"
                    if side in self.resume_refused:
                        detail += f"; resume refused: {self.resume_refused[side]}"
                    elif self.settings.resume_grace > 0 and self.players[side].resumable:
                        # _resumed waited for it in vain
                        detail += f"; it did not come back within the resume grace of {self.settings.resume_grace:g} s"
                    raise self._report(PlayerGone(side, detail)) from None
                except (errors.RpcError, errors.BadResult):
                    self.answered[side] += 1  # an answer all the same: the bot handled the call
                    raise
                finally:
                    self.waited[side] += outage_seconds(endpoint.channel) - outage_before
                self.answered[side] += 1
                return answer
        finally:
            self.in_flight[side] = None

    async def _resumed(self, side: Side, failed: Endpoint) -> bool:
        """The bot's connection failed: wait (up to what is left of its allowance) for it to come back with
        ``hello resumeGame``; True once its new connection is attached."""
        session = self.players[side]
        if self.settings.resume_grace <= 0 or not session.resumable:
            return False

        def back() -> bool:
            return (session.endpoint is not failed and session.alive) or side in self.resume_refused \
                or session.left

        # Over MQTT the bot may have been out of reach for a while before its stream ended: that counts.
        already = current_outage(failed.channel)
        self.resume_left[side] -= already
        started = time.monotonic()
        log.info("host.waiting_for_resume", game=self.game_id, bot=session.name, side=str(side),
                 seconds_left=round(self.resume_left[side], 3), out_of_reach=round(already, 3))
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(self.resume_left[side], 0.0)), session.reattached:
                await session.reattached.wait_for(back)
        waited = time.monotonic() - started
        self.resume_left[side] -= waited
        self.waited[side] += waited
        resumed = session.endpoint is not failed and session.alive and side not in self.resume_refused
        log.info("host.resume_wait_over", game=self.game_id, bot=session.name, resumed=resumed,
                 waited=round(waited, 3))
        return resumed

    def _seat_of(self, params: HelloParams) -> Side | None:
        """The side whose session this hello may take over: the same name and token, and its resume key.
        The key tells apart even a bot playing itself; every seat is compared, in constant time."""
        presented = (params.resume_key or "").encode()
        found = None
        for side, session in self.players.items():
            key = (session.resume_key or "").encode()
            fits = secrets.compare_digest(key, presented)
            if fits and session.resume_key is not None and session.name == params.name \
                    and session.token == params.token:
                found = side
        return found

    async def reattach(self, params: HelloParams, endpoint: Endpoint) -> tuple[BotSession, int] | None:
        """A bot of this game says hello again with ``resumeGame``: give its side the new connection, if it
        presents that side's resume key and its count of handled calls fits ours (the same, or one more when
        a call was on its way). Without the key it is not that bot: ResumeRefused to that connection alone,
        and nothing here changes."""
        side = self._seat_of(params)
        if side is None:
            log.warning("host.resume_key_refused", game=self.game_id, bot=params.name,
                        peer=endpoint.channel.peer)
            raise errors.ResumeRefused(f"resume refused: no seat in game {self.game_id} has this name and "
                                       "resume key")
        session = self.players[side]
        if not session.resumable or self.decided:
            return None
        answered, calls = self.answered[side], params.resume_calls
        if not (calls == answered or (calls == answered + 1 and self.in_flight[side] is not None)):
            self.resume_refused[side] = f"the bot handled {calls} calls of the game, the host saw {answered} answered"
            log.warning("host.resume_refused", game=self.game_id, bot=session.name,
                        detail=self.resume_refused[side])
            async with session.reattached:
                session.reattached.notify_all()
            await session.endpoint.close("resume refused")
            return None
        old, session.endpoint = session.endpoint, endpoint
        if not old.closed:
            # The bot is back before we noticed it had gone (a half-open TCP connection, say).
            self.host._spawn(old.close("replaced by the bot's resumed connection"))
        async with session.reattached:
            session.reattached.notify_all()
        return session, answered

    async def _call(self, side: Side, method: str, params: BaseModel) -> BaseModel:
        """A call the game cannot go on without: any failure forfeits ``side``."""
        try:
            return await self._request(side, method, params)
        except errors.BadResult as exc:
            raise self._report(PlayerGone(side, str(exc))) from None
        except errors.RpcError as exc:
            raise self._report(PlayerFailed(side, _error_detail(method, exc))) from None

    async def _inform(self, side: Side, method: str, params: BaseModel) -> None:
        """A call that only informs the bot: an error answer is logged (the host is the authority on the
        game), but silence or a lost connection still forfeits."""
        try:
            await self._request(side, method, params)
        except (errors.RpcError, errors.BadResult) as exc:
            log.warning("host.bot_disputes", game=self.game_id, bot=self.players[side].name, side=str(side),
                        method=method, detail=str(exc))

    # --- setup ---------------------------------------------------------------------------------------------

    def _option_params(self, side: Side) -> list[SetGameOptionParams]:
        values: list[tuple[str, Any]] = [
            ("gameId", self.game_id), ("colour", str(side)), ("opponent", self.players[side.other].name),
            *self.settings.wire_options(),
        ]
        return [SetGameOptionParams.model_validate({"option": o, "value": v}) for o, v in values]

    async def _set_up(self, side: Side) -> None:
        for params in self._option_params(side):
            await self._inform(side, "setGameOption", params)
        for attempt in itertools.count(1):
            await self._call(side, "createAISetup", CreateAISetupParams())
            event: Event
            try:
                event = SetupSubmitted(side, await self._read_setup(side))
            except _BadSetupAnswer as exc:
                event = SetupUnreadable(side, str(exc))
            outcome = self.core.submit(event)
            if self.setups[side]:
                return  # accepted (the game may be over all the same: the other side forfeited)
            forfeit = self.core.forfeit_of(side)
            problem = outcome.reason if isinstance(outcome, SetupRejected) else forfeit[1] if forfeit else ""
            log.warning("host.illegal_setup", game=self.game_id, bot=self.players[side].name,
                        attempt=attempt, problem=problem)
            if not isinstance(outcome, SetupRejected):  # that was the last attempt: the core has the forfeit
                raise _Forfeit(side)
            rejection = IllegalSetupParams(reason=outcome.reason, attempts_left=outcome.attempts_left)
            await self._call(side, "illegalSetup", rejection)

    async def _read_setup(self, side: Side) -> dict[Square, Rank]:
        ruleset = self.rules.ruleset
        placement: dict[Square, Rank] = {}
        for square in ruleset.setup_squares(side):
            if ruleset.is_lake(square):
                continue
            try:
                answer = await self._request(side, "getAISetupPiece", GetAISetupPieceParams(square=square))
            except (errors.RpcError, errors.BadResult) as exc:
                raise _BadSetupAnswer(f"{square}: {exc}") from None
            assert isinstance(answer, GetAISetupPieceResult)
            if answer.rank is not None:
                placement[square] = answer.rank
        return placement

    async def _announce_opponent_setup(self, side: Side) -> None:
        for square in sorted(self.setups[side.other], key=lambda sq: (sq.row, sq.col)):
            await self._inform(side, "setOpponentSetupPiece", SetOpponentSetupPieceParams(square=square))

    # --- moves ---------------------------------------------------------------------------------------------

    async def _turn(self, game: Game) -> None:
        side = game.side_to_move
        limit = self.settings.move_time_max + self.settings.grace
        asked, waited = time.monotonic(), self.waited[side]
        try:
            answer = await self._request(side, "getAIMove", GetAIMoveParams(ply=game.ply), timeout=limit)
        except errors.BadResult as exc:  # not even a move on the board
            raise self._report(MoveUnreadable(side, str(exc))) from None
        except errors.RpcError as exc:
            raise self._report(PlayerFailed(side, _error_detail("getAIMove", exc))) from None
        finally:
            self.think[side] += time.monotonic() - asked - (self.waited[side] - waited)
        assert isinstance(answer, GetAIMoveResult)
        move = Move(answer.frm, answer.to)
        if answer.info_problem is not None:  # the move stands on its own: a bad info is dropped, never forfeited
            log.warning("host.move_info_dropped", game=self.game_id, bot=self.players[side].name, side=str(side),
                        ply=game.ply, problem=answer.info_problem)
        info = answer.info.to_wire() if answer.info is not None else None
        outcome = self.core.submit(MoveSubmitted(side, move, info))
        if isinstance(outcome, Rejected):  # the host asked the side to move: a bug of its own
            raise RuntimeError(f"the referee core refused the host's move report: {outcome.reason}")
        if not isinstance(outcome, MoveAccepted):
            raise _Forfeit(side)  # an illegal move
        played = outcome.played
        report = MoveReport.of(move.frm, move.to, played.attacker, played.defender, played.outcome)
        await _all_or_forfeits(
            self._inform(side, "submitAIMoveResult", report),
            self._inform(side.other, "submitOpponentMove", report),
        )
        if self.on_move is not None:
            await self.on_move(game, played)

    # --- the end -------------------------------------------------------------------------------------------

    async def _announce_end(self, result: GameResult) -> None:
        params = GameOverParams(
            game_id=self.game_id, winner=result.winner, reason=result.reason, plies=result.plies,
            red_score=result.score(Side.RED), blue_score=result.score(Side.BLUE),
            red_setup=self.setups[Side.RED], blue_setup=self.setups[Side.BLUE], detail=result.detail,
        )
        for session in self.players.values():
            try:
                await session.endpoint.notify("gameOver", params)
            except errors.ProtocolError:
                pass  # a bot gone already: its result stands all the same
            except Exception:  # a bug in telling it must not cost the result
                log.exception("host.game_over_not_sent", game=self.game_id, bot=session.name)

    def _finish_record(self, result: GameResult) -> None:
        record = result.record = self.core.record()
        records_dir = self.settings.records_dir
        if records_dir is not None:
            path = records_dir / f"{_safe_file_name(self.game_id)}.json"
            try:
                records_dir.mkdir(parents=True, exist_ok=True)
                record.save(path)
            except OSError as exc:  # a full or read-only disk costs the file, never the game's result
                result.record_error = f"{path}: {exc.strerror or exc}"
                log.error("host.record_not_saved", game=self.game_id, path=str(path), error=str(exc))
            else:
                result.record_path = path
