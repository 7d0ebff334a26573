"""The bot client: its view of the game follows the referee's, calls out of order are refused without
harm, and a legal move always goes out before the deadline whatever the engine does."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import structlog
from pydantic import BaseModel

from bot.config import (
    BotProfile,
    ProfileError,
    builtin_profiles,
    default_profile_name,
    get_profile,
    make_profile,
    profile_from_mapping,
)
from bot.daemon.client import BotClient, Phase
from bot.daemon.engine_interface import MoveEngine, RandomEngine, SearchBudget, create_engine
from bot.daemon.fallback_setup import fallback_setup
from bot.daemon.health import read_health
from bot.daemon.journal import GameJournal
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import OpponentStore
from bot.daemon.service import BotDaemon, DaemonOptions
from engine_ext.engine.timeman import BANK_HORIZON, TimeManager
from engine_ext.rules.game import Game, Move, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import RULESETS, Square, get_ruleset
from protocol import errors
from protocol.codec import host_codec
from protocol.endpoint import Channel, Endpoint, memory_pipe
from protocol.messages import (
    PROTOCOL_VERSION,
    Ack,
    CreateAISetupParams,
    GameOverParams,
    GetAIMoveParams,
    GetAISetupPieceParams,
    GoodbyeParams,
    HelloParams,
    HelloResult,
    IllegalSetupParams,
    MoveModel,
    MoveReport,
    SetOpponentSetupPieceParams,
    outcome_of,
)
from tests.helpers import (
    BrokenEngine,
    FakeClock,
    FakeHost,
    IllegalEngine,
    PoliteEngine,
    StuckEngine,
    assert_view_matches,
    option,
    register,
    report,
)

sq = Square.parse


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


@pytest.mark.parametrize("make_engine", [StuckEngine, IllegalEngine, BrokenEngine], ids=lambda e: e.name)
async def test_a_legal_move_goes_out_in_time_whatever_the_engine_does(
    monkeypatch: pytest.MonkeyPatch, make_engine: Callable[[], MoveEngine]
) -> None:
    engine = make_engine()
    client = BotClient(register(monkeypatch, engine), seed=9)
    host = FakeHost(client, Side.RED, seed=1)
    referee = await host.start()
    try:
        for _ in range(4):  # two moves each: the second one must not wait for a stuck first one
            started = time.monotonic()
            await host.ply()
            # The real deadline is the point here: the 0.3 s hard limit, not the stuck engine's 30 s
            # (a generous margin for a loaded machine).
            assert time.monotonic() - started < 0.3 + 1.0
            assert_view_matches(client, referee)
    finally:
        if isinstance(engine, StuckEngine):
            engine.release()
    assert client.fallback_moves == 2


async def test_the_engine_gets_its_budget_and_its_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    """The soft deadline comes from the host's moveTimeAverage, the hard one from the profile (tighter than
    the 1 s the average's window allows: engine_ext/engine/timeman.py), both on the client's clock; the engine is
    told to stop once the soft one has passed on that clock, not before."""
    clock = FakeClock()
    engine = PoliteEngine()
    profile = register(monkeypatch, engine).model_copy(update={"move_time_hard": 0.8})
    client = BotClient(profile, seed=2, clock=clock)
    host = FakeHost(client, Side.RED, seed=1, moveTimeAverage=0.05)
    await host.start()
    asked_at = clock.now
    ply = asyncio.create_task(host.ply())
    assert await asyncio.to_thread(engine.searching.wait, 5)
    budget = engine.budget
    assert budget is not None
    assert (budget.soft_deadline, budget.hard_deadline) == (asked_at + 0.05, asked_at + 0.8)
    clock.advance(0.049)
    await asyncio.sleep(0.02)  # the engine polls the clock meanwhile
    assert not ply.done() and not budget.should_stop()
    clock.advance(0.002)
    await asyncio.wait_for(ply, 5)
    assert engine.stopped_at == clock.now  # the first reading past the soft deadline
    assert budget.stop.is_set()  # the client lets the search go once the move is out
    assert client.fallback_moves == 0


async def test_fallback_moves_are_counted_per_game(monkeypatch: pytest.MonkeyPatch) -> None:
    client = BotClient(register(monkeypatch, IllegalEngine()), seed=9)
    logged: list[MutableMapping[str, Any]] = []
    for game_id in ("g-1", "g-2"):
        host = FakeHost(client, Side.RED, seed=1, game_id=game_id)
        await host.start()
        for _ in range(4):
            await host.ply()
        assert client.fallback_moves == 2
        with structlog.testing.capture_logs() as logs:
            await client.handle_notification("gameOver", host.game_over())
        logged += [e for e in logs if e["event"] == "bot.game_over"]
    assert [(e["game"], e["fallback_moves"]) for e in logged] == [("g-1", 2), ("g-2", 2)]
    assert client.fallback_moves == 0 and client.fallback_moves_total == 4


async def test_a_repeated_game_over_is_taken_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same gameOver twice (and once more in the middle of the next game): one log line, one game in
    the heartbeat, one game in the opponent store, one finished journal; the next game goes on."""
    store = OpponentStore(tmp_path / "opponents.sqlite")
    client = BotClient(register(monkeypatch, IllegalEngine()), seed=3, memory=OpponentMemory(store=store))

    async def no_connection() -> Channel:
        raise AssertionError("the test plays the host itself")

    journal = GameJournal(tmp_path / "journal", "bot-t", fsync=False)
    daemon = BotDaemon(client, HelloParams(name="bot-t", version="0", protocol=PROTOCOL_VERSION), no_connection,
                       transport="memory", journal=journal, health_path=tmp_path / "health.json")
    assert daemon.health is not None
    host = FakeHost(client, Side.BLUE, seed=4, game_id="g-1", handler=daemon.handler)
    await host.start()
    for _ in range(6):
        await host.ply()
    over = host.game_over(winner=Side.BLUE, reason="flag")
    with structlog.testing.capture_logs() as logs:
        await daemon.handler.handle_notification("gameOver", over)
        await daemon.handler.handle_notification("gameOver", over)
        daemon.health.refresh(force=True)
        beat = read_health(tmp_path / "health.json")
        next_host = FakeHost(client, Side.RED, seed=5, game_id="g-2", handler=daemon.handler)
        await next_host.start()
        await next_host.ply()
        calls = daemon.handler.calls
        daemon.handler.game_over.clear()  # as a daemon stopping in g-2 does, to wait for g-2's end
        await daemon.handler.handle_notification("gameOver", over)  # late, during g-2
    [logged] = [e for e in logs if e["event"] == "bot.game_over"]
    assert logged["game"] == "g-1" and logged["winner"] == "blue" and logged["won"] is True
    assert logged["fallback_moves"] == 3
    assert [e["game"] for e in logs if e["event"] == "bot.game_over_repeated"] == ["g-1", "g-1"]
    assert beat is not None and beat["games"] == 1 and beat["fallback_moves"] == 3  # the process's, so far
    assert store.history("tester").results == {"win": 1}
    assert len(list((tmp_path / "journal" / "done").glob("g-1-*.jsonl"))) == 1
    assert client.in_game and client.options.game_id == "g-2" and journal.open
    assert daemon.handler.calls == calls > 0 and not daemon.handler.game_over.is_set()
    assert client.results == [over]
    journal.close()
    store.close()


async def test_a_draw_is_logged_without_a_winner() -> None:
    client = BotClient(get_profile("random"), seed=3)
    host = FakeHost(client, Side.RED, seed=2)
    await host.start()
    with structlog.testing.capture_logs() as logs:
        await client.handle_notification("gameOver", host.game_over(winner=None))
    [logged] = [e for e in logs if e["event"] == "bot.game_over"]
    assert logged["winner"] is None and logged["won"] is None


class BudgetRecorder:
    """Answers at once (on a clock that a test moves by hand) and keeps each budget's spans."""

    name = "budget-recorder"

    def __init__(self, clock: FakeClock, thinking: float) -> None:
        self.clock, self.thinking = clock, thinking
        self.spans: list[tuple[float, float]] = []

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        now = budget.clock()
        self.spans.append((budget.soft_deadline - now, budget.hard_deadline - now))
        self.clock.advance(self.thinking)
        return game.sendable_moves()[0]


async def test_quick_moves_bank_time_for_the_next_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's moves are timed by the time manager: each quick one raises the next one's optimum by
    its share of what it saved against the host's average (engine_ext/engine/timeman.py, tests/test_timeman.py)."""
    clock = FakeClock()
    engine = BudgetRecorder(clock, thinking=0.2)
    profile = register(monkeypatch, engine).model_copy(update={"move_time_soft": 5.0, "move_time_hard": 9.0})
    client = BotClient(profile, seed=2, clock=clock)
    host = FakeHost(client, Side.RED, seed=1, moveTimeAverage=1.0, moveTimeMax=10.0)
    await host.start()
    for _ in range(8):
        await host.ply()
    assert client.fallback_moves == 0 and client.timer is not None and client.timer.moves == 4
    assert [soft for soft, _ in engine.spans] == pytest.approx([1.0 + 0.8 * n / BANK_HORIZON for n in range(4)])
    assert all(hard == 9.0 for _, hard in engine.spans)  # the profile's most, below the host's 10 s less margin


def test_move_times_take_the_tighter_limits() -> None:
    """The first move's budget under the host's options and the profile's times (the time manager's
    banking over a game: tests/test_timeman.py)."""
    client = BotClient(make_profile(name="p", move_time_soft=5, move_time_hard=15, safety_margin=0.25))

    def first_move() -> tuple[float, float]:
        return TimeManager(client._time_limits()).spans(0)

    assert first_move() == (5.0, 14.75)
    client.options.move_time_max = 2.0
    client.options.move_time_average = 1.0
    assert first_move() == (1.0, 1.75)
    client.options.move_time_max = 0.2  # the margin would eat it all: keep half of the host's limit
    assert first_move() == (0.1, 0.1)


async def test_the_profile_can_follow_the_opponent() -> None:
    chosen: list[str | None] = []

    def select(opponent: str | None) -> BotProfile:
        chosen.append(opponent)
        return make_profile(name=f"vs-{opponent}", engine="random")

    client = BotClient(get_profile("random"), select_profile=select)
    await FakeHost(client, Side.BLUE).set_up()
    assert chosen == ["tester"] and client.game_profile.name == "vs-tester"


def one_connection_daemon(client: BotClient, channel: Channel) -> BotDaemon:
    """The real daemon (bot/daemon/service.py) on one in-memory connection; connecting a second time fails the test."""
    connections = 0

    async def connect() -> Channel:
        nonlocal connections
        connections += 1
        assert connections == 1, "the daemon connected again"
        return channel

    return BotDaemon(client, HelloParams(name="b", version="0", protocol=PROTOCOL_VERSION), connect, transport="memory",
                     options=DaemonOptions(handle_signals=False))


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
    daemon = one_connection_daemon(client, bot_end)
    with structlog.testing.capture_logs() as logs:
        session = asyncio.create_task(daemon.run())
        await asyncio.sleep(0.05)
        assert await host.call("setGameOption", option("colour", "red"), timeout=1) == Ack()
        await host.notify("goodbye", GoodbyeParams(reason="done"))
        assert await asyncio.wait_for(session, 2) == 0
    [greeted] = [entry for entry in logs if entry["event"] == "bot.session"]
    assert greeted["session"] == "s" and client.goodbye_reason == "done"
    await asyncio.wait_for(host_task, 1)


async def test_a_refusal_is_final() -> None:
    bot_end, host_end = memory_pipe()

    class Refuser:
        async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
            raise errors.UnsupportedVersion("this host speaks 9.0")

        async def handle_notification(self, method: str, params: BaseModel) -> None:
            pass

    host_task = asyncio.create_task(Endpoint(host_end, host_codec(), Refuser()).run())
    with structlog.testing.capture_logs() as logs:
        # exit 2 at once: a second connection would fail the test (one_connection_daemon)
        assert await asyncio.wait_for(one_connection_daemon(BotClient(get_profile("random")), bot_end).run(), 2) == 2
    [refused] = [entry for entry in logs if entry["event"] == "bot.refused"]
    assert "9.0" in refused["error"]
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
    with pytest.raises(ProfileError, match=r"engine_params: engine .random. takes no parameters, got: depth"):
        profile_from_mapping({"name": "r", "engine": "random", "engine_params": {"depth": 3}}, source="r.toml")


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
