"""``perspecto results`` on stores filled by real games: two ``perspecto bot`` processes play a few quick games
on the host over TCP, then the command reads each bot's store and must agree with the host's results."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from bot.host.referee import Host, HostSettings
from engine_ext.rules.pieces import Side
from tests.helpers import kill_left_over, start_bot_process

REPO = Path(__file__).resolve().parents[1]


async def perspecto(*args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *args, cwd=REPO, env=dict(os.environ),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.long
async def test_results_agree_with_the_games_the_host_played(tmp_path: Path) -> None:
    host = Host(HostSettings(move_limit=40, move_time_max=1.0, grace=0.3, call_timeout=5.0))
    await host.start()
    names = ("alpha", "beta")
    bots = [await start_bot_process(host.port, name, seed=seed, state_dir=tmp_path / name)
            for seed, name in enumerate(names, start=1)]
    try:
        alpha, beta = [await host.wait_for_bot(token=name, timeout=30) for name in names]
        results = [await host.play_game(alpha, beta), await host.play_game(beta, alpha),
                   await host.play_game(alpha, beta)]
        for session in (alpha, beta):
            await session.goodbye("test over")
        for bot in bots:  # a bot writes its store when it hears gameOver: wait until it has gone
            assert await asyncio.wait_for(bot.wait(), 20) == 0
    finally:
        await kill_left_over(bots)
        await host.close()

    for name, opponent in (("alpha", "beta"), ("beta", "alpha")):
        code, out, err = await perspecto("results", "--state-dir", str(tmp_path / name), "--json")
        assert code == 0, err
        report = json.loads(out)
        assert report["store"] == str(tmp_path / name / "opponents.sqlite")
        [row] = report["opponents"]
        sides = [Side.RED if r.names[Side.RED] == name else Side.BLUE for r in results]
        outcomes = [r.outcome_for(side) for r, side in zip(results, sides, strict=True)]
        assert row["name"] == opponent and row["games"] == 3
        assert (row["wins"], row["draws"], row["losses"]) == (
            outcomes.count("win"), outcomes.count("draw"), outcomes.count("loss") + outcomes.count("forfeit"))
        assert row["score"] == sum(r.score(side) for r, side in zip(results, sides, strict=True))
        assert sum(use["games"] for use in row["setups"]) == 3
        assert all(isinstance(use["name"], str) and use["name"] for use in row["setups"])  # from the library
        assert row["est_opp_fear"] is None  # the random mover learns no fear

        code, table, err = await perspecto("results", "--state-dir", str(tmp_path / name))
        assert code == 0, err
        assert opponent in table and "score" in table and row["setups"][0]["name"] in table
