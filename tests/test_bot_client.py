"""The bot client: its view of the game follows the referee's, calls out of order are refused without
harm, and a legal move always goes out before the deadline whatever the engine does."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from bot.client import BotClient, HostRefused, Phase, run_session
from bot.config import (
    BotProfile,
    ProfileError,
    builtin_profiles,
    default_profile_name,
    get_profile,
    profile_from_mapping,
)
from bot.engine_interface import ENGINES, MoveEngine, RandomEngine, SearchBudget, create_engine
from bot.fallback_setup import fallback_setup
from engine_ext.game import Game, Move, RulesOptions
from engine_ext.pieces import Rank, Side
from engine_ext.rulesets import RULESETS, Square, get_ruleset
from protocol import errors
from protocol.codec import host_codec
from protocol.endpoint import Endpoint, memory_pipe
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    CreateAISetupParams,
    GameOverParams,
    GetAIMoveParams,
    GetAISetupPieceParams,
    GetAISetupPieceResult,
    GoodbyeParams,
    HelloParams,
    HelloResult,
    IllegalSetupParams,
    MoveModel,
    MoveReport,
    SetGameOptionParams,
    SetOpponentSetupPieceParams,
    outcome_of,
)

sq = Square.parse


def option(name: str, value: Any) -> SetGameOptionParams:
    return SetGameOptionParams.model_validate({"option": name, "value": value})


class FakeHost:
    """Drives one BotClient through a game the way a host would, with a full-information referee."""

    def __init__(self, client: BotClient, colour: Side, *, ruleset: str = "classic", seed: int = 0, **options: Any):
        self.client = client
        self.colour = colour
        self.rng = random.Random(seed)
        self.ruleset = get_ruleset(ruleset)
        self.options = {"ruleset": ruleset, **options}
        self.referee: Game | None = None

    async def call(self, method: str, params: BaseModel | None = None) -> BaseModel:
        return await self.client.handle_request(method, params if params is not None else CreateAISetupParams())

    async def set_up(self) -> dict[Square, Rank]:
        await self.call("setGameOption", option("gameId", "t-1"))
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


def report(played: Any) -> MoveReport:
    return MoveReport.of(played.move.frm, played.move.to, played.attacker, played.defender, played.outcome)


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


@pytest.mark.parametrize("colour", [Side.RED, Side.BLUE])
async def test_the_bots_view_follows_the_referee(colour: Side) -> None:
    client = BotClient(get_profile("random"), seed=3)
    host = FakeHost(client, colour, seed=11)
    referee = await host.start()
    assert client.phase is Phase.SETUP
    revealed = 0
    for _ in range(400):
        if referee.result is not None:
            break
        await host.ply()
        assert_view_matches(client, referee)
        revealed = sum(p.rank is not None for p in client.opponent_pieces().values())
    assert referee.ply > 20 and revealed > 0  # attacks revealed some opponent ranks
    assert client.fallback_moves == 0
    over = GameOverParams(game_id="t-1", winner=None, reason="move_limit", plies=referee.ply, red_score=3,
                          blue_score=3, red_setup={}, blue_setup={})
    await client.handle_notification("gameOver", over)
    assert client.phase is Phase.IDLE and client.game is None and client.results == [over]


@pytest.mark.parametrize("ruleset", sorted(RULESETS))
async def test_setups_are_legal_for_every_ruleset(ruleset: str) -> None:
    for colour in Side:
        client = BotClient(get_profile("random"), seed=5)
        host = FakeHost(client, colour, ruleset=ruleset)
        placement = await host.set_up()
        get_ruleset(ruleset).validate_setup(colour, placement)
        outside = sq("E5") if ruleset != "mini" else sq("A3")
        with pytest.raises(errors.InvalidParams, match="setup area"):
            await host.call("getAISetupPiece", GetAISetupPieceParams(square=outside))


def test_fallback_setup_is_legal_with_the_flag_on_the_back_row() -> None:
    for ruleset in RULESETS.values():
        for side in Side:
            for seed in range(20):
                placement = fallback_setup(ruleset, side, random.Random(seed))
                ruleset.validate_setup(side, placement)
                [flag] = [s for s, r in placement.items() if r == Rank.FLAG]
                assert flag.row == (0 if side == Side.RED else ruleset.height - 1)


async def test_calls_out_of_order_are_refused_and_change_nothing() -> None:
    client = BotClient(get_profile("random"), seed=1)
    call = client.handle_request
    with pytest.raises(errors.OutOfOrder, match="no setup"):
        await call("getAIMove", GetAIMoveParams(ply=0))
    with pytest.raises(errors.OutOfOrder):
        await call("getAISetupPiece", GetAISetupPieceParams(square=sq("A1")))
    with pytest.raises(errors.OutOfOrder):
        await call("createAISetup", CreateAISetupParams())  # no options yet
    with pytest.raises(errors.OutOfOrder):
        await call("submitAIMoveResult", MoveReport.of(sq("A4"), sq("A5")))
    with pytest.raises(errors.OutOfOrder):
        await call("illegalSetup", IllegalSetupParams(reason="x", attempts_left=1))
    assert client.phase is Phase.IDLE
    await call("setGameOption", option("ruleset", "classic"))
    with pytest.raises(errors.OutOfOrder, match="colour"):
        await call("createAISetup", CreateAISetupParams())

    host = FakeHost(client, Side.RED, seed=2)
    referee = await host.start()
    with pytest.raises(errors.OutOfOrder, match="setGameOption"):
        await call("setGameOption", option("colour", "blue"))
    with pytest.raises(errors.InvalidParams, match="already"):
        await call("setOpponentSetupPiece", SetOpponentSetupPieceParams(square=sq("A7")))
    with pytest.raises(errors.OutOfOrder, match="own turn"):
        await call("submitOpponentMove", MoveReport.of(sq("A7"), sq("A6")))
    with pytest.raises(errors.OutOfOrder, match="ply 5"):
        await call("getAIMove", GetAIMoveParams(ply=5))
    answer = await call("getAIMove", GetAIMoveParams(ply=0))
    assert isinstance(answer, MoveModel)
    with pytest.raises(errors.OutOfOrder, match="still due"):
        await call("getAIMove", GetAIMoveParams(ply=0))
    with pytest.raises(errors.IllegalMoveReported, match="this bot moved"):
        await call("submitAIMoveResult", MoveReport.of(answer.to, answer.frm))
    played = referee.play(Move(answer.frm, answer.to))
    await call("submitAIMoveResult", report(played))
    with pytest.raises(errors.OutOfOrder, match="blue's turn"):
        await call("getAIMove", GetAIMoveParams(ply=1))
    assert client.game is not None and client.game.ply == 1


def _lie_about(referee: Game, move: Move) -> MoveReport | None:
    """A report of red's attack ``move`` that gives the blue defender the wrong rank, if it is one."""
    target = referee.piece_at(move.to)
    attacker = referee.piece_at(move.frm)
    if target is None or target[0] != Side.BLUE or attacker is None or move.distance != 1:
        return None
    wrong = Rank.SCOUT if target[1] != Rank.SCOUT else Rank.SERGEANT
    return MoveReport.of(move.frm, move.to, attacker[1], wrong, outcome_of(attacker[1], wrong))


async def test_an_illegal_opponent_move_is_refused_and_the_view_is_kept() -> None:
    client = BotClient(get_profile("random"), seed=4)
    host = FakeHost(client, Side.BLUE, seed=6)
    referee = await host.start()
    bad_reports = [
        MoveReport.of(sq("A7"), sq("A6")),  # the bot's own piece
        MoveReport.of(sq("C4"), sq("C5")),  # into a lake
        MoveReport.of(sq("A4"), sq("B5")),  # diagonal
        MoveReport.of(sq("E5"), sq("E6")),  # no piece there
        MoveReport.of(sq("A4"), sq("A5"), Rank.MINER, Rank.SCOUT, "x"),  # an attack on an empty square
    ]
    views = set()
    for bad in bad_reports:
        with pytest.raises(errors.IllegalMoveReported):
            await client.handle_request("submitOpponentMove", bad)
        assert client.game is not None and client.game.ply == 0
        views.add(client.game.render())
    assert len(views) == 1
    # the right report is still taken afterwards
    await host.ply()
    assert_view_matches(client, referee)
    # a reported rank that contradicts what the bot already knows of its own piece: play on until the
    # opponent (red) has an attack on one of the bot's pieces to lie about
    lie = None
    for _ in range(300):
        assert referee.result is None, "the game ended before red had an attack to lie about"
        if referee.side_to_move == Side.RED:
            lie = next(filter(None, (_lie_about(referee, m) for m in referee.legal_moves())), None)
            if lie is not None:
                break
        await host.ply()
    assert lie is not None, "no attack on a blue piece to lie about"
    with pytest.raises(errors.IllegalMoveReported, match="reported as"):
        await client.handle_request("submitOpponentMove", lie)
    assert_view_matches(client, referee)


async def test_illegal_setup_gets_a_different_legal_setup() -> None:
    client = BotClient(get_profile("random"), seed=8)
    host = FakeHost(client, Side.RED, ruleset="barrage")
    first = await host.set_up()
    await client.handle_request("illegalSetup", IllegalSetupParams(reason="the host says no", attempts_left=1))
    assert client.phase is Phase.CONFIGURING and not client.own_setup
    with pytest.raises(errors.OutOfOrder):
        await client.handle_request("getAISetupPiece", GetAISetupPieceParams(square=sq("A1")))
    await client.handle_request("createAISetup", CreateAISetupParams())
    second = await host.read_setup()
    get_ruleset("barrage").validate_setup(Side.RED, second)
    assert second != first


class SleepyEngine:
    """Ignores its budget entirely (the worst case): answers after ``seconds``."""

    name = "sleepy"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        self.calls += 1
        time.sleep(self.seconds)
        return game.legal_moves()[0]


class IllegalEngine:
    name = "illegal"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        return Move(sq("E5"), sq("E6"))  # nothing stands there


class BrokenEngine:
    name = "broken"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        raise RuntimeError("engine bug")


class PoliteEngine:
    """Searches until told to stop; records whether the stop came and when."""

    name = "polite"

    def __init__(self) -> None:
        self.stopped_at: float | None = None

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        while not budget.should_stop():
            time.sleep(0.005)
        self.stopped_at = time.monotonic()
        return game.legal_moves()[-1]


def register(monkeypatch: pytest.MonkeyPatch, engine: MoveEngine) -> BotProfile:
    def factory(params: Mapping[str, Any], seed: int | None) -> MoveEngine:
        return engine

    monkeypatch.setitem(ENGINES, engine.name, factory)
    return BotProfile(name=engine.name, engine=engine.name, move_time_soft=0.1, move_time_hard=0.3,
                      safety_margin=0.05)


@pytest.mark.parametrize("engine", [SleepyEngine(2.0), IllegalEngine(), BrokenEngine()], ids=lambda e: e.name)
async def test_a_legal_move_goes_out_in_time_whatever_the_engine_does(
    monkeypatch: pytest.MonkeyPatch, engine: MoveEngine
) -> None:
    client = BotClient(register(monkeypatch, engine), seed=9)
    host = FakeHost(client, Side.RED, seed=1)
    referee = await host.start()
    for _ in range(4):  # two moves each: the second one must not wait for a stuck first one
        started = time.monotonic()
        await host.ply()
        assert time.monotonic() - started < 0.3 + 0.15
        assert_view_matches(client, referee)
    assert client.fallback_moves == 2


async def test_the_engine_gets_its_budget_and_its_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = PoliteEngine()
    profile = register(monkeypatch, engine)
    client = BotClient(profile, seed=2)
    host = FakeHost(client, Side.RED, seed=1, moveTimeAverage=0.05)
    await host.start()
    started = time.monotonic()
    await host.ply()
    assert engine.stopped_at is not None and 0.04 <= engine.stopped_at - started < 0.25  # the soft deadline
    assert client.fallback_moves == 0


def test_move_times_take_the_tighter_limits() -> None:
    client = BotClient(BotProfile(name="p", move_time_soft=5, move_time_hard=15, safety_margin=0.25))
    assert client._move_times() == (5.0, 14.75)
    client.options.move_time_max = 2.0
    client.options.move_time_average = 1.0
    assert client._move_times() == (1.0, 1.75)
    client.options.move_time_max = 0.2  # the margin would eat it all: keep half of the host's limit
    assert client._move_times() == (0.1, 0.1)


async def test_the_profile_can_follow_the_opponent() -> None:
    chosen: list[str | None] = []

    def select(opponent: str | None) -> BotProfile:
        chosen.append(opponent)
        return BotProfile(name=f"vs-{opponent}", engine="random")

    client = BotClient(get_profile("random"), select_profile=select)
    await FakeHost(client, Side.BLUE).set_up()
    assert chosen == ["tester"] and client.game_profile.name == "vs-tester"


async def test_a_session_says_hello_and_ends_with_goodbye() -> None:
    bot_end, host_end = memory_pipe()

    class Greeter:
        async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
            assert isinstance(params, HelloParams) and params.protocol == PROTOCOL_VERSION
            return HelloResult(host="fake", version="0", protocol=PROTOCOL_VERSION, session="s")

        async def handle_notification(self, method: str, params: BaseModel) -> None:
            pass

    host = Endpoint(host_end, host_codec(), Greeter())
    host_task = asyncio.create_task(host.run())
    client = BotClient(get_profile("random"))
    session = asyncio.create_task(run_session(bot_end, client, HelloParams(name="b", version="0", protocol="1.0")))
    await asyncio.sleep(0.05)
    assert await host.call("setGameOption", option("colour", "red"), timeout=1) == Ack()
    await host.notify("goodbye", GoodbyeParams(reason="done"))
    answer = await asyncio.wait_for(session, 2)
    assert answer.session == "s" and client.goodbye_reason == "done"
    await asyncio.wait_for(host_task, 1)


async def test_a_refusal_is_final() -> None:
    bot_end, host_end = memory_pipe()

    class Refuser:
        async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
            raise errors.UnsupportedVersion("this host speaks 9.0")

        async def handle_notification(self, method: str, params: BaseModel) -> None:
            pass

    host_task = asyncio.create_task(Endpoint(host_end, host_codec(), Refuser()).run())
    hello = HelloParams(name="b", version="0", protocol="1.0")
    with pytest.raises(HostRefused, match=r"9\.0"):
        await run_session(bot_end, BotClient(get_profile("random")), hello)
    await asyncio.wait_for(host_task, 1)


# --- profiles and engines ------------------------------------------------------------------------------------


def test_profiles_validate_and_name_the_bad_key() -> None:
    assert "random" in builtin_profiles() and default_profile_name() in builtin_profiles()
    profile = profile_from_mapping({"name": "p", "engine": "random", "seed": 4, "move_time_soft": 1})
    assert profile.move_time_hard == 15.0
    cases: dict[str, dict[str, Any]] = {
        "engine_parms": {"name": "p", "engine_parms": {}},
        "unknown engine 'deep-blue'": {"name": "p", "engine": "deep-blue"},
        "move_time_soft": {"name": "p", "move_time_soft": 20},
        "move_time_hard": {"name": "p", "move_time_hard": -1},
        "name": {"engine": "random"},
    }
    for named, data in cases.items():
        with pytest.raises(ProfileError, match=named):
            profile_from_mapping(data, source="test.toml")
    with pytest.raises(ProfileError, match="unknown profile 'nope'"):
        get_profile("nope")
    with pytest.raises(ProfileError, match="depth"):
        BotProfile(name="r", engine="random", engine_params={"depth": 3}).create_engine()


def test_random_engine_is_seeded_and_legal() -> None:
    rng = random.Random(1)
    ruleset = get_ruleset("classic")
    game = Game(RulesOptions(), ruleset.random_placement(Side.RED, rng), ruleset.random_placement(Side.BLUE, rng))
    budget = SearchBudget.starting_now(1, 2)
    first = [create_engine("random", seed=7).choose_move(game, budget) for _ in range(3)]
    assert len(set(first)) == 1 and first[0] in game.legal_moves()
    assert isinstance(create_engine("random"), RandomEngine)
    assert budget.remaining() > 0 and budget.remaining(hard=True) > budget.remaining()
    assert not budget.should_stop()
    budget.stop.set()
    assert budget.should_stop()
    assert isinstance(budget.stop, threading.Event)
