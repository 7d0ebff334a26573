"""Test helpers: random games on any ruleset, and the test doubles several test modules use (a fake clock,
engines that misbehave, a host that drives a bot client call by call, a channel wrapper)."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest
from pydantic import BaseModel

from bot.config import BotProfile, make_profile
from bot.daemon.client import BotClient
from bot.daemon.engine_interface import ENGINES, MoveEngine, SearchBudget
from engine_ext.rules.game import Game, Move, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square, get_ruleset
from protocol.endpoint import Channel
from protocol.messages import (
    CreateAISetupParams,
    GameOverParams,
    GetAIMoveParams,
    GetAISetupPieceParams,
    GetAISetupPieceResult,
    MoveModel,
    MoveReport,
    SetGameOptionParams,
    SetOpponentSetupPieceParams,
)


def random_game(ruleset: Ruleset, seed: int, **options: object) -> Game:
    rng = random.Random(seed)
    opts = RulesOptions(ruleset=ruleset, **options)  # type: ignore[arg-type]
    return Game(opts, ruleset.random_placement(Side.RED, rng), ruleset.random_placement(Side.BLUE, rng))


def play_random(game: Game, plies: int, seed: int) -> Game:
    rng = random.Random(seed)
    for _ in range(plies):
        if game.result is not None:
            break
        game.play(rng.choice(game.legal_moves()))
    return game


def board_code(pieces: dict[str, str], ruleset: Ruleset | None = None) -> str:
    """A board code with the given Gravon letters on the named squares, e.g. {"A1": "M", "A10": "Y"}."""
    from engine_ext.rules.rulesets import CLASSIC

    ruleset = ruleset or CLASSIC
    letters = []
    for row in range(ruleset.height):
        for col in range(ruleset.width):
            sq = Square(col, row)
            letters.append("_" if ruleset.is_lake(sq) else pieces.get(str(sq), "A"))
    return "".join(letters)


# --- a clock for deadline policies ------------------------------------------------------------------------


class FakeClock:
    """A monotonic clock that stands still until the test moves it: ``BotClient(clock=...)`` and
    ``SearchBudget`` read their deadlines from it, so a test decides exactly when one has passed."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


# --- engines that misbehave (blocking code, run on the bot's engine thread) ---------------------------------


class StuckEngine:
    """Ignores its budget entirely (the worst case): answers only once ``release``d, or after ``seconds``."""

    name = "stuck"

    def __init__(self, seconds: float = 30.0) -> None:
        self.seconds = seconds
        self.calls = 0
        self._released = threading.Event()

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        self.calls += 1
        self._released.wait(self.seconds)
        return game.legal_moves()[0]

    def release(self) -> None:
        self._released.set()


class IllegalEngine:
    name = "illegal"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        return Move(Square.parse("E5"), Square.parse("E6"))  # nothing stands there


class BrokenEngine:
    name = "broken"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        raise RuntimeError("engine bug")


class PoliteEngine:
    """Searches until its budget says stop; keeps the budget and the budget's clock when it stopped."""

    name = "polite"

    def __init__(self) -> None:
        self.budget: SearchBudget | None = None
        self.stopped_at: float | None = None
        self.searching = threading.Event()

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        self.budget = budget
        self.searching.set()
        while not budget.should_stop():
            time.sleep(0.001)
        self.stopped_at = budget.clock()
        return game.legal_moves()[-1]


def register(monkeypatch: pytest.MonkeyPatch, engine: MoveEngine) -> BotProfile:
    """A profile that plays ``engine`` (this very object), on a quick clock: 0.1 s soft, 0.3 s hard."""

    def factory(params: Mapping[str, Any], seed: int | None) -> MoveEngine:
        return engine

    # Registered under a name of its own: an engine named like a known one ("ucc") would be typed as that one.
    registered = f"{engine.name}-under-test"
    monkeypatch.setitem(ENGINES, registered, factory)
    return make_profile(name=engine.name, engine=registered, move_time_soft=0.1, move_time_hard=0.3,
                        safety_margin=0.05)


# --- a host in the test: the calls of a game, straight to a bot's handler ------------------------------------


class Handler(Protocol):
    async def handle_request(self, method: str, params: BaseModel) -> BaseModel: ...


def option(name: str, value: Any) -> SetGameOptionParams:
    return SetGameOptionParams.model_validate({"option": name, "value": value})


def report(played: Any) -> MoveReport:
    return MoveReport.of(played.move.frm, played.move.to, played.attacker, played.defender, played.outcome)


class FakeHost:
    """Drives one BotClient through a game the way a host would, with a full-information referee.
    ``handler``: what takes the calls (default the client; a daemon's ``ResumableHandler`` journals them)."""

    def __init__(self, client: BotClient, colour: Side, *, ruleset: str = "classic", seed: int = 0,
                 game_id: str = "t-1", handler: Handler | None = None, **options: Any):
        self.client = client
        self.handler: Handler = handler if handler is not None else client
        self.colour = colour
        self.game_id = game_id
        self.rng = random.Random(seed)
        self.ruleset = get_ruleset(ruleset)
        self.options = {"ruleset": ruleset, **options}
        self.referee: Game | None = None

    async def call(self, method: str, params: BaseModel | None = None) -> BaseModel:
        return await self.handler.handle_request(method, params if params is not None else CreateAISetupParams())

    async def set_up(self) -> dict[Square, Rank]:
        await self.call("setGameOption", option("gameId", self.game_id))
        await self.call("setGameOption", option("colour", str(self.colour)))
        await self.call("setGameOption", option("opponent", "tester"))
        for name, value in self.options.items():
            await self.call("setGameOption", option(name, value))
        await self.call("createAISetup")
        return await self.read_setup()

    async def read_setup(self) -> dict[Square, Rank]:
        placement = {}
        for square in self.ruleset.setup_squares(self.colour):
            answer = await self.call("getAISetupPiece", GetAISetupPieceParams(square=square))
            assert isinstance(answer, GetAISetupPieceResult)
            if answer.rank is not None:
                placement[square] = answer.rank
        return placement

    async def start(self) -> Game:
        own = await self.set_up()
        self.ruleset.validate_setup(self.colour, own)
        other = self.ruleset.random_placement(self.colour.other, self.rng)
        for square in other:
            await self.call("setOpponentSetupPiece", SetOpponentSetupPieceParams(square=square))
        red, blue = (own, other) if self.colour == Side.RED else (other, own)
        rules = {k: v for k, v in self.options.items() if k in ("two_squares", "more_squares")}
        self.referee = Game(RulesOptions(ruleset=self.ruleset, **rules), red, blue)
        return self.referee

    async def ply(self) -> None:
        """One ply: the bot's move asked for and reported, or a random opponent move reported."""
        game = self.referee
        assert game is not None and game.result is None
        if game.side_to_move == self.colour:
            answer = await self.call("getAIMove", GetAIMoveParams(ply=game.ply))
            assert isinstance(answer, MoveModel)
            played = game.play(Move(answer.frm, answer.to))
            await self.call("submitAIMoveResult", report(played))
        else:
            played = game.play(self.rng.choice(game.legal_moves()))
            await self.call("submitOpponentMove", report(played))

    def game_over(self, winner: Side | None = None, reason: str = "move_limit") -> GameOverParams:
        """The gameOver of this game as the host would send it."""
        plies = self.referee.ply if self.referee is not None else 0
        return GameOverParams(game_id=self.game_id, winner=winner, reason=reason, plies=plies, red_score=3,
                              blue_score=3, red_setup={}, blue_setup={})


def assert_view_matches(client: BotClient, referee: Game) -> None:
    view = client.game
    assert view is not None and client.colour is not None
    assert view.ply == referee.ply and view.side_to_move == referee.side_to_move
    own = client.colour
    assert view.pieces(own) == referee.pieces(own)
    truth = referee.pieces(own.other)
    known = client.opponent_pieces()
    assert set(known) == set(truth)
    for square, piece in known.items():
        assert piece.moved == referee.has_moved(square)
        assert piece.rank is None or piece.rank == truth[square][1]
    if view.side_to_move == own and view.result is None:
        # the repetition histories agree too: the bot may play exactly what the referee allows
        assert set(view.legal_moves()) == set(referee.legal_moves())


# --- channels ------------------------------------------------------------------------------------------------


class ChannelWrapper:
    """A channel that passes everything to ``inner``: subclasses override what they spoil."""

    def __init__(self, inner: Channel) -> None:
        self.inner = inner

    @property
    def peer(self) -> str:
        return self.inner.peer

    async def receive(self) -> bytes:
        return await self.inner.receive()

    async def send(self, data: bytes) -> None:
        await self.inner.send(data)

    async def close(self) -> None:
        await self.inner.close()


REPO = Path(__file__).resolve().parents[1]


async def start_bot_process(port: int, token: str, *, seed: int, state_dir: Path, log_level: str = "warning",
                            env: Mapping[str, str] | None = None) -> asyncio.subprocess.Process:
    """A real ``perspecto bot`` (the random profile) connecting to a host on this machine's ``port``, named and
    identified by ``token``, its heartbeat, journal and opponent store in ``state_dir``; stderr piped."""
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "bot", "--profile", "random", "--connect", f"127.0.0.1:{port}",
        "--token", token, "--name", token, "--seed", str(seed), "--state-dir", str(state_dir),
        "--log-level", log_level, cwd=REPO, env=dict(os.environ if env is None else env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )


async def kill_left_over(processes: Iterable[asyncio.subprocess.Process]) -> None:
    """Kill and reap the processes that have not exited (a test's ``finally``)."""
    for process in processes:
        if process.returncode is None:
            process.kill()
            await process.wait()
