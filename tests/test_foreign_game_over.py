"""A ``gameOver`` for a game the bot is not playing changes nothing (issue 31, point 5): the bot used to drop
the game it was playing (and so forfeit it at its next call) and to store a win it never played for. It is
ignored and logged (``bot.game_over_ignored``): in a game, and between games."""

from __future__ import annotations

import asyncio
from pathlib import Path

import structlog

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.daemon.journal import GameJournal
from bot.daemon.learning import OpponentMemory
from bot.daemon.opponent_store import OpponentStore
from bot.daemon.service import BotDaemon
from bot.host.referee import Host, HostSettings
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from protocol.endpoint import Channel
from protocol.messages import PROTOCOL_VERSION, GameOverParams, HelloParams
from tests.helpers import FakeHost, kill_left_over, start_bot_process

REPO = Path(__file__).resolve().parents[1]


def foreign_over(game_id: str, winner: Side) -> GameOverParams:
    return GameOverParams(game_id=game_id, winner=winner, reason="flag", plies=3, red_score=6, blue_score=1,
                          red_setup={}, blue_setup={})


async def no_connection() -> Channel:
    raise AssertionError("the test plays the host itself")


async def test_a_game_over_for_another_game_leaves_the_game_journal_and_store_alone(tmp_path: Path) -> None:
    store = OpponentStore(tmp_path / "opponents.sqlite")
    client = BotClient(get_profile("random"), seed=3, memory=OpponentMemory(store=store))
    journal = GameJournal(tmp_path / "journal", "bot-t", fsync=False)
    daemon = BotDaemon(client, HelloParams(name="bot-t", version="0", protocol=PROTOCOL_VERSION), no_connection,
                       transport="memory", journal=journal)
    host = FakeHost(client, Side.RED, seed=4, game_id="g-1", handler=daemon.handler)
    await host.start()
    for _ in range(6):
        await host.ply()
    calls = daemon.handler.calls
    with structlog.testing.capture_logs() as logs:
        await daemon.handler.handle_notification("gameOver", foreign_over("g-999", Side.RED))
    [ignored] = [e for e in logs if e["event"] == "bot.game_over_ignored"]
    assert ignored["game"] == "g-999" and ignored["playing"] == "g-1" and ignored["log_level"] == "warning"
    assert not [e for e in logs if e["event"] == "bot.game_over"]
    assert client.in_game and client.options.game_id == "g-1" and journal.open
    assert daemon.handler.calls == calls and not daemon.handler.game_over.is_set()
    assert client.results == [] and store.history("tester").results == {}
    for _ in range(4):  # the game goes on
        await host.ply()
    await daemon.handler.handle_notification("gameOver", host.game_over(winner=Side.BLUE, reason="flag"))
    assert store.history("tester").results == {"loss": 1} and not client.in_game
    # Between games, a gameOver for a game never played is not a result either.
    with structlog.testing.capture_logs() as logs:
        await daemon.handler.handle_notification("gameOver", foreign_over("g-1000", Side.RED))
    assert [e["playing"] for e in logs if e["event"] == "bot.game_over_ignored"] == [None]
    assert store.history("tester").results == {"loss": 1} and len(client.results) == 1
    journal.close()
    store.close()


async def test_a_real_bot_plays_on_through_a_game_over_for_another_game(tmp_path: Path) -> None:
    """A real ``perspecto bot`` over TCP; in the middle of its game the host sends it a gameOver that names
    another game and makes it the winner. It plays on (no forfeit) and stores the one game it played."""
    host = Host(HostSettings(move_limit=40, move_time_max=1.0, grace=0.3, call_timeout=5.0))
    await host.start()
    names = ("alpha", "beta")
    bots = [await start_bot_process(host.port, name, seed=seed, state_dir=tmp_path / name)
            for seed, name in enumerate(names, start=1)]
    try:
        alpha, beta = [await host.wait_for_bot(token=name, timeout=30) for name in names]

        async def meddle(game: Game, _played: MoveResult | None) -> None:
            if game.ply == 10:
                await alpha.endpoint.notify("gameOver", foreign_over("not-this-game", Side.RED))

        result = await host.play_game(alpha, beta, on_move=meddle)
        for session in (alpha, beta):
            await session.goodbye("test over")
        stderr = [await asyncio.wait_for(bot.communicate(), 20) for bot in bots]
        assert [bot.returncode for bot in bots] == [0, 0]
    finally:
        await kill_left_over(bots)
        await host.close()
    assert not result.forfeits, result.detail
    assert result.reason in ("flag", "no_moves", "no_movable_pieces", "move_limit")
    assert b"bot.game_over_ignored" in stderr[0][1]
    with OpponentStore(tmp_path / "alpha" / "opponents.sqlite") as store:
        history = store.history("beta")
    assert history.games == 1
    assert history.results == {result.outcome_for(Side.RED): 1}
