"""The shared "answer by the deadline or send a legal fallback" helper (bot/daemon/deadline.py) that the bot client
and the UCC player both ask their engines through."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
import structlog

from bot.daemon.deadline import EngineWorker, answer_by_deadline
from bot.daemon.engine_interface import MoveEngine, ProgramEngine, RandomEngine, SearchBudget
from engine_ext.rules.game import Game, Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square, get_ruleset
from tests.helpers import BrokenEngine, FakeClock, IllegalEngine, PoliteEngine, StuckEngine, random_game


def _game() -> Game:
    return random_game(get_ruleset("classic"), seed=5)


def _budget(clock: FakeClock, soft: float = 0.05, hard: float = 0.3) -> SearchBudget:
    return SearchBudget.starting_now(soft, hard, clock=clock)


class FirstMoveEngine:
    name = "first"

    def choose_move(self, game: Game, budget: SearchBudget) -> Move:
        return game.sendable_moves()[0]


class StuckProgram(StuckEngine):
    """An outside program (a UCC one) that does not answer."""

    def choose_setup(self, colour: Side, opponent: str, ruleset: Ruleset) -> dict[Square, Rank]:
        raise AssertionError("not asked here")

    def finish(self, game: Game | None, result: str | None) -> int | None:
        return None

    def abandon(self, why: str) -> None:
        pass


async def test_the_engines_legal_move_is_sent() -> None:
    clock, game = FakeClock(), _game()
    engine = FirstMoveEngine()
    budget = _budget(clock)
    answer = await answer_by_deadline(EngineWorker(), engine, game, budget, random.Random(1))
    assert answer.move == game.sendable_moves()[0]
    assert (answer.fallback, answer.late, answer.engine) == (None, False, engine)
    assert budget.stop.is_set()  # the move is out: a search still running may stop


async def test_a_late_engine_is_answered_for_and_replaced() -> None:
    clock, game = FakeClock(), _game()
    stuck, fresh = StuckEngine(), FirstMoveEngine()
    worker = EngineWorker()
    budget = _budget(clock)
    try:
        with structlog.testing.capture_logs() as logs:
            answer = await answer_by_deadline(worker, stuck, game, budget, random.Random(1), renew=lambda: fresh)
        assert answer.move in game.sendable_moves() and answer.late
        assert answer.fallback == "no move within 0.30 s"
        assert answer.engine is fresh  # the stuck one still runs on its thread: never asked again
        assert budget.stop.is_set()
        assert [e["event"] for e in logs] == ["bot.engine_replaced", "bot.fallback_move"]
        assert logs[-1]["log_level"] == "warning" and logs[-1]["reason"] == answer.fallback
        # The stuck thread was let go: the next call runs on a new one and answers at once.
        again = await answer_by_deadline(worker, answer.engine, game, _budget(clock, 5.0, 10.0), random.Random(2))
        assert again.fallback is None and again.move == game.sendable_moves()[0]
        assert stuck.calls == 1
    finally:
        stuck.release()


async def test_a_late_outside_program_gives_way_to_random_moves() -> None:
    clock, game = FakeClock(), _game()
    program = StuckProgram()
    assert isinstance(program, ProgramEngine)
    try:
        with structlog.testing.capture_logs() as logs:
            answer = await answer_by_deadline(EngineWorker(), program, game, _budget(clock), random.Random(1),
                                              renew=lambda: pytest.fail("a program is not started again"),
                                              events="ucc")
        assert answer.late and isinstance(answer.engine, RandomEngine)
        assert [e["event"] for e in logs] == ["ucc.program_lost", "ucc.fallback_move"]
    finally:
        program.release()


async def test_an_engine_that_cannot_be_renewed_gives_way_to_random_moves() -> None:
    clock, game = FakeClock(), _game()
    stuck = StuckEngine()

    def renew() -> MoveEngine:
        raise RuntimeError("no engine today")

    try:
        with structlog.testing.capture_logs() as logs:
            answer = await answer_by_deadline(EngineWorker(), stuck, game, _budget(clock), random.Random(1),
                                              renew=renew)
        assert answer.late and isinstance(answer.engine, RandomEngine)
        assert [(e["event"], e["log_level"]) for e in logs] == [
            ("bot.engine_renew_failed", "error"), ("bot.fallback_move", "warning")]
    finally:
        stuck.release()


async def test_without_a_renewal_a_late_engine_gives_way_to_random_moves() -> None:
    clock, game = FakeClock(), _game()
    stuck = StuckEngine()
    try:
        answer = await answer_by_deadline(EngineWorker(), stuck, game, _budget(clock), random.Random(1))
        assert answer.late and isinstance(answer.engine, RandomEngine)
    finally:
        stuck.release()


@pytest.mark.parametrize(
    ("engine", "reason"),
    [(BrokenEngine(), "engine failed: RuntimeError('engine bug')"),
     (IllegalEngine(), "engine chose E5-E6, which is not legal")],
)
async def test_a_failing_or_illegal_engine_is_answered_for_and_kept(engine: MoveEngine, reason: str) -> None:
    clock, game = FakeClock(), _game()
    with structlog.testing.capture_logs() as logs:
        answer = await answer_by_deadline(EngineWorker(), engine, game, _budget(clock), random.Random(1),
                                          events="ucc")
    assert answer.move in game.sendable_moves()
    assert (answer.fallback, answer.late, answer.engine) == (reason, False, engine)  # it answered in time
    assert [e["event"] for e in logs] == ["ucc.fallback_move"]


async def test_the_fallback_is_the_rngs_choice_among_the_sendable_moves() -> None:
    clock, game = FakeClock(), _game()
    answer = await answer_by_deadline(EngineWorker(), BrokenEngine(), game, _budget(clock), random.Random(7))
    assert answer.move == random.Random(7).choice(game.sendable_moves())


async def test_the_engine_thinks_on_the_workers_thread_until_its_soft_deadline() -> None:
    clock, game = FakeClock(), _game()
    engine = PoliteEngine()
    budget = _budget(clock, soft=1.0, hard=30.0)
    thinking = asyncio.create_task(answer_by_deadline(EngineWorker("probe"), engine, game, budget, random.Random(1)))
    assert await asyncio.to_thread(engine.searching.wait, 5)
    assert "probe" in {t.name for t in threading.enumerate()}
    clock.advance(1.0)
    answer = await asyncio.wait_for(thinking, 5)
    assert answer.fallback is None and answer.move == game.sendable_moves()[-1]
    assert engine.stopped_at == clock.now


async def test_a_caller_that_goes_away_stops_the_engine() -> None:
    clock, game = FakeClock(), _game()
    engine = PoliteEngine()
    budget = _budget(clock, soft=20.0, hard=30.0)
    thinking = asyncio.create_task(answer_by_deadline(EngineWorker(), engine, game, budget, random.Random(1)))
    assert await asyncio.to_thread(engine.searching.wait, 5)
    thinking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await thinking
    assert budget.stop.is_set()


async def test_a_position_without_a_legal_move_is_the_callers_business() -> None:
    game = _game()
    while game.result is None:
        game.play(game.legal_moves()[0])
    with pytest.raises(ValueError, match="no legal move"):
        await answer_by_deadline(EngineWorker(), FirstMoveEngine(), game, _budget(FakeClock()), random.Random(1))
