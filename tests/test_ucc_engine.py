"""A UCC 2012 program as a bot's engine (profile ``engine = "ucc"``): setups, moves, echoes, QUIT, failures,
and a whole match on the local host against one of Perspecto's own engines."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

from bot.config import ProfileError, builtin_profiles, profile_from_mapping
from bot.daemon.client import BotClient
from bot.daemon.engine_interface import ProgramEngine, SearchBudget
from bot.ucc.engine import UccEngine, UccEngineError, UccEngineParams
from bot.ucc.opponent import move_line
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import CLASSIC
from protocol.messages import GameOverParams
from protocol.ucc import parse_answer
from tests.helpers import FakeHost, assert_view_matches, register
from tests.test_match_cli import perspecto
from tests.test_ucc import SPEC_RED_SETUP, UCC_CMD, spec_setup

# A scripted UCC program: answers the colour line with the spec's setup, then logs every line it reads to
# the file in argv[1] and plays the moves of argv[2:] in turn ("-" for garbage).
SCRIPT = """
import sys
log = open(sys.argv[1], "w", buffering=1)
def read():
    line = sys.stdin.readline()
    log.write(line)
    return line.strip()
read()
print("\\n".join(SETUP)); sys.stdout.flush()
for answer in sys.argv[2:]:
    first = read()
    if first.startswith("QUIT"):
        sys.exit(0)
    for _ in range(10):
        read()
    print("garbage" if answer == "-" else answer.replace("_", " ")); sys.stdout.flush()
    read()  # the echo of its move
while not read().startswith("QUIT"):
    pass
""".replace("SETUP", repr(SPEC_RED_SETUP))


def scripted(tmp_path: Path, *moves: str, setup_time: float = 10.0) -> tuple[UccEngine, Path]:
    log = tmp_path / "program.log"
    program = tmp_path / "program.py"
    program.write_text(SCRIPT, encoding="utf-8")
    command = " ".join([sys.executable, str(program), str(log), *moves])
    return UccEngine(UccEngineParams(command=command, setup_time=setup_time)), log


def budget(seconds: float = 2.0) -> SearchBudget:
    return SearchBudget.starting_now(seconds, seconds)


def test_the_program_sets_up_moves_hears_the_outcomes_and_quits(tmp_path: Path) -> None:
    engine, log = scripted(tmp_path, "0_3_DOWN", "1_3_DOWN")
    assert isinstance(engine, ProgramEngine)
    red = engine.choose_setup(Side.RED, "tester", CLASSIC)
    assert red == spec_setup(SPEC_RED_SETUP, Side.RED)
    blue = CLASSIC.random_placement(Side.BLUE, random.Random(2))
    game = Game(RulesOptions(), red, blue)
    first = engine.choose_move(game, budget())
    game.play(first)
    opponent = random.Random(1).choice(game.legal_moves())
    game.play(opponent)
    game.play(engine.choose_move(game, budget()))
    assert engine.finish(game, "BLUE") == 0
    lines = log.read_text().splitlines()
    assert lines[0] == "RED ./tester 10 10"  # a path, as the referee gives it
    assert lines[1] == "START" and len(lines[2:12]) == 10 and lines[2].startswith("FB8sB479B8")
    assert lines[12] == "0 3 DOWN OK"  # its own move echoed, once the host has reported it
    assert lines[13] == move_line(game.history[1])  # the opponent's move, then the board again
    assert lines[-2] == "1 3 DOWN OK" and lines[-1] == "QUIT BLUE"


def test_a_program_that_sends_garbage_is_stopped_and_says_so(tmp_path: Path) -> None:
    engine, _ = scripted(tmp_path, "-")
    red = engine.choose_setup(Side.RED, "tester", CLASSIC)
    game = Game(RulesOptions(), red, CLASSIC.random_placement(Side.BLUE, random.Random(2)))
    with pytest.raises(UccEngineError, match="bad move line 'garbage'"):
        engine.choose_move(game, budget())
    with pytest.raises(UccEngineError, match=r"stopped earlier: .*garbage"):
        engine.choose_move(game, budget())
    assert engine.finish(game, "BLUE") is not None  # already gone: no QUIT to wait for


def test_a_silent_program_is_stopped_before_the_hard_deadline(tmp_path: Path) -> None:
    engine, _ = scripted(tmp_path)  # no moves: it waits for QUIT
    red = engine.choose_setup(Side.RED, "tester", CLASSIC)
    game = Game(RulesOptions(), red, CLASSIC.random_placement(Side.BLUE, random.Random(2)))
    allowed = budget(0.5)
    with pytest.raises(UccEngineError, match="a move did not come within"):
        engine.choose_move(game, allowed)
    assert allowed.remaining(hard=True) > 0  # it gave up in time for the client's fallback


def test_a_move_the_bot_replaced_stops_the_program(tmp_path: Path) -> None:
    engine, _ = scripted(tmp_path, "0_3_DOWN", "1_3_DOWN")
    red = engine.choose_setup(Side.RED, "tester", CLASSIC)
    game = Game(RulesOptions(), red, CLASSIC.random_placement(Side.BLUE, random.Random(2)))
    proposed = engine.choose_move(game, budget())
    other = next(m for m in game.legal_moves() if m != proposed)
    game.play(other)  # what the client sent instead (a fallback)
    game.play(game.legal_moves()[0])
    with pytest.raises(UccEngineError, match="not the program's"):
        engine.choose_move(game, budget())


def test_profiles_name_the_program_and_its_bad_keys() -> None:
    assert "ucc" not in builtin_profiles()  # it cannot play without a command
    # Typed when read (a discriminated union on engine): no engine is created to find these.
    with pytest.raises(ProfileError, match=r"engine_params\.command: Field required"):
        profile_from_mapping({"name": "p", "engine": "ucc"})
    with pytest.raises(ProfileError, match=r"engine_params\.colour: not a known setting"):
        profile_from_mapping({"name": "p", "engine": "ucc", "engine_params": {"command": "x", "colour": 1}})


async def test_the_bot_plays_the_programs_setup_and_moves_and_falls_back_when_it_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    engine, log = scripted(tmp_path, "0_3_DOWN", "-")
    profile = register(monkeypatch, engine)
    client = BotClient(profile.model_copy(update={"move_time_soft": 2.0, "move_time_hard": 3.0}), seed=4)
    host = FakeHost(client, Side.RED, seed=5)
    referee = await host.start()
    assert referee.pieces(Side.RED) == {sq: (Side.RED, r) for sq, r in spec_setup(SPEC_RED_SETUP, Side.RED).items()}
    for _ in range(6):
        await host.ply()
        assert_view_matches(client, referee)
    assert referee.history[0].move == parse_answer("0 3 DOWN").to_move(CLASSIC)  # type: ignore[union-attr]
    assert client.fallback_moves == 2  # the garbage, then the program is gone
    await client.handle_notification("gameOver", GameOverParams.model_validate({
        "game_id": "t-1", "winner": None, "reason": "move_limit", "plies": referee.ply, "red_score": 3,
        "blue_score": 3, "red_setup": {}, "blue_setup": {}}))
    client.close()
    assert "QUIT" not in log.read_text()  # it was stopped, not asked to quit


@pytest.mark.long
def test_a_ucc_program_plays_a_match_on_the_local_host(tmp_path: Path) -> None:
    config = tmp_path / "config"
    (config / "profiles").mkdir(parents=True)
    command = " ".join([*UCC_CMD[:-1], "minimax"])
    (config / "profiles" / "ucc-minimax.toml").write_text(
        f'engine = "ucc"\n[engine_params]\ncommand = {json.dumps(command)}\nsetup_time = 30\n', encoding="utf-8")
    records = tmp_path / "records"
    run = perspecto("match", "random", "ucc-minimax", "--via-host", "--games", "2", "--config", str(config),
                    "--records", str(records), "--move-time-average", "0.3", "--move-time-max", "3",
                    "--log-level", "info", timeout=240)
    assert run.returncode == 0, run.stderr[-3000:]
    results = [json.loads(p.read_text())["result"] for p in sorted(records.glob("*.json"))]
    assert len(results) == 2 and all(not r["forfeits"] for r in results)
    program_log = next((records / "logs").glob("ucc-minimax-*.log")).read_text()
    events = [json.loads(line) for line in program_log.splitlines() if line.startswith("{")]
    assert [e["code"] for e in events if e["event"] == "ucc_opponent.exited"] == [0, 0]  # QUIT, then exit 0
    assert sum(1 for e in events if e["event"] == "ucc_opponent.setup") == 2
    overs = [e for e in events if e["event"] == "bot.game_over"]
    assert len(overs) == 2 and all(e["fallback_moves"] == 0 for e in overs)
