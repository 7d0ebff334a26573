"""The match runner and the commands around it, run as a user would: ``python -m bot.cli ...``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bot.host.match import Contestant, MatchResult, contestants, result_summary, result_table
from bot.host.referee import GameResult, standings
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import ReplayError, replay_positions

REPO = Path(__file__).resolve().parents[1]


def perspecto(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_match_plays_alternating_colours_and_saves_replayable_records(tmp_path: Path) -> None:
    run = perspecto("match", "random", "random", "--via-host", "--games", "3", "--move-limit", "120", "--seed", "5",
                    "--records", str(tmp_path))
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "random-a vs random-b: 3 games" in out
    assert "plies a game: mean" in out and "ends:" in out
    rows = [line for line in out.splitlines() if line.startswith("│ random-")]
    assert len(rows) == 2
    scores = [int(row.split("│")[7]) for row in rows]
    wdl = [[int(row.split("│")[i]) for i in (3, 4, 5, 6)] for row in rows]
    assert all(sum(counts) == 3 for counts in wdl)
    assert sum(scores) in range(3 * 2, 3 * 7 + 1)  # each game gives 6+1 or 3+3 (or 6+0 for a forfeit)
    records = sorted(tmp_path.glob("*.json"))
    assert len(records) == 3
    reds = [GameRecord.load(p).red.name for p in records]
    assert reds == ["random-a", "random-b", "random-a"]
    for path in records:
        record = GameRecord.load(path)
        assert len(list(replay_positions(record))) == len(record.moves) + 1
        assert record.result is not None and record.result["plies"] == len(record.moves) <= 120
    # each bot process logged to its own file
    assert len(list((tmp_path / "logs").glob("*.log"))) == 2


@pytest.mark.long
def test_the_same_seed_plays_the_same_game(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    folders = [tmp_path / "one", tmp_path / "two"]
    runs = [  # side by side: the two matches share nothing but the seed
        subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "match", "random", "random", "--via-host", "--games", "1",
             "--move-limit", "80", "--seed", "11", "--records", str(folder), "--board-every", "1000"],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        for folder in folders
    ]
    games = []
    for folder, run in zip(folders, runs, strict=True):
        _out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        [path] = folder.glob("*.json")
        record = GameRecord.load(path)
        games.append((record.red.setup, record.blue.setup, [m.move for m in record.moves]))
    assert games[0] == games[1] and len(games[0][2]) == 80


Played = tuple[subprocess.CompletedProcess[str], Path]


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """One ``perspecto play`` game of 30 plies, shared by the tests that read its output and its record."""
    folder = tmp_path_factory.mktemp("play")
    run = perspecto("play", "--move-limit", "30", "--seed", "2", "--records", str(folder), "--board-every", "10")
    assert run.returncode == 0, run.stderr
    [path] = folder.glob("*.json")
    return run, path


def test_play_shows_the_board_and_replay_shows_the_moves(played: Played) -> None:
    run, path = played
    # the board after the setups, every 10 plies and at the end: 30 plies -> 4 boards
    assert run.stdout.count("  A   B   C   D   E   F   G   H   I   J") == 4
    assert "draw (move limit)" in run.stdout
    assert f"perspecto replay {path}" in run.stdout.replace("\n", "")

    replay = perspecto("replay", str(path), "--every", "15")
    assert replay.returncode == 0, replay.stderr
    lines = replay.stdout.splitlines()
    # one line a move ("  12. blue A7-A6"), each followed by what its engine thought (protocol 1.1 info)
    assert sum(1 for line in lines if re.match(r"\s*\d+\. (red|blue) ", line)) == 30
    assert "ply 30" in replay.stdout and "draw by move_limit after 30 plies" in replay.stdout

    at = perspecto("replay", str(path), "--ply", "7")
    assert at.returncode == 0 and "ply 7" in at.stdout


def test_replay_refuses_a_record_that_breaks_the_rules(played: Played, tmp_path: Path) -> None:
    data = json.loads(played[1].read_text())
    data["moves"][4]["move"] = "A1-A2"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ReplayError, match="ply 5"):
        list(replay_positions(GameRecord.load(path)))
    replay = perspecto("replay", str(path))
    assert replay.returncode == 1 and "ply 5" in replay.stdout
    assert perspecto("replay", str(tmp_path / "missing.json")).returncode == 2


@pytest.mark.long
def test_no_command_plays_one_game(tmp_path: Path) -> None:
    run = perspecto(cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "1 game" in run.stdout and "score" in run.stdout
    assert len(list((tmp_path / "records").glob("*.json"))) == 1


@pytest.mark.parametrize("path", [(), ("--via-host",)], ids=["lab", "via-host"])
def test_bad_profiles_are_reported_before_anything_starts(path: tuple[str, ...]) -> None:
    run = perspecto("match", "random", "nonesuch", "--games", "1", *path)
    assert run.returncode == 2 and "unknown profile 'nonesuch'" in run.stdout
    # the error lists the configured profiles: the built-ins and the files of ./config/profiles
    assert "known: " in run.stdout and "example-probe" in run.stdout and "perspecto" in run.stdout


def test_match_help_lists_the_configured_profiles() -> None:
    run = perspecto("match", "--help")
    assert run.returncode == 0
    listed = " ".join(run.stdout.split()).split("Configured profiles: ")[1].split(" positional")[0]
    assert {"default", "example-probe", "example-ucc", "pemm", "perspecto", "random"} <= set(listed.split(", "))


def test_result_table_and_standings_count_the_tournament_way() -> None:
    a, b = contestants("random", "random", seed=1)
    assert a.name != b.name and a.token != b.token

    def game(winner: Side | None, reason: str, forfeits: frozenset[Side] = frozenset()) -> GameResult:
        return GameResult(game_id="g", names={Side.RED: "x", Side.BLUE: "y"}, winner=winner, reason=reason,
                          plies=10, forfeits=forfeits, seconds=1.0)

    result = MatchResult(a, b, seconds=4.0)
    result.games += [
        (game(Side.RED, "flag"), Side.RED),  # A wins
        (game(None, "move_limit"), Side.BLUE),  # draw
        (game(Side.RED, "forfeit_timeout", frozenset({Side.BLUE})), Side.BLUE),  # A forfeits
        (game(Side.BLUE, "no_moves"), Side.RED),  # A loses
    ]
    ta, tb = result.tally(a), result.tally(b)
    assert (ta.wins, ta.draws, ta.losses, ta.forfeits, ta.score) == (1, 1, 1, 1, 6 + 3 + 0 + 1)
    assert (tb.wins, tb.draws, tb.losses, tb.forfeits, tb.score) == (2, 1, 1, 0, 1 + 3 + 6 + 6)
    assert result.reasons["flag"] == 1 and "1.00 games/s" in result_summary(result)
    assert result_table(result).row_count == 2
    table = standings([g for g, _ in result.games])
    assert list(table) == ["x", "y"] and table["x"].games == 4
    assert isinstance(a, Contestant)


# --- the lab's runner, the default of ``perspecto match`` ------------------------------------------------


@pytest.mark.long
def test_lab_match_prints_elo_and_the_sprt_and_writes_json_and_records(tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    run = perspecto("match", "random", "random", "--max-games", "240", "--sprt", "elo0=0 elo1=10", "--move-limit", "30",
                    "--seed", "3", "--concurrency", "1", "--records", str(tmp_path / "records"), "--json", str(summary))
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "seed 3 (--seed 3 plays the same games), 1 worker" in out
    # 30 plies of random moves end nothing: every game a draw, every pair alike, H0 accepted after 102
    # pairs, when a change worth 10 Elo would have left that many pairs alike 5 % of the time
    # (engine_ext/lab/sprt.py), before the cap
    assert "SPRT elo0=0 elo1=10 alpha=0.05 beta=0.05: LLR -" in out and "H0 accepted" in out
    row = next(line for line in out.splitlines() if line.startswith("│ random-a"))
    cells = [c.strip() for c in row.split("│")[1:-1]]
    games = int(cells[2])
    assert cells[:2] == ["random-a", "random-b"] and cells[3:6] == ["0", str(games), "0"] and games == 204
    assert cells[6] == "50.0 %" and cells[10] == f"0/0/{games // 2}/0/0"
    data = json.loads(summary.read_text())
    [match] = data["matches"]
    assert match["draws"] == games and match["pentanomial"] == [0, 0, games // 2, 0, 0]
    assert match["sprt"]["verdict"] == "H0" and match["elo"]["low"] is None  # unbounded: null, not text
    assert match["draw_ratio"] == 1.0 and match["elo"]["even_pair_ratio"] == 1.0
    assert data["settings"]["seed"] == 3 and data["games_per_minute"] > 0
    assert len(list((tmp_path / "records").glob("*.json"))) == games


def test_lab_gauntlet_plays_each_opponent_and_shows_one_table(tmp_path: Path) -> None:
    summary = tmp_path / "gauntlet.json"
    run = perspecto("match", "random", "--gauntlet", "minimax", "pemm", "--depth", "1", "--games", "2",
                    "--move-limit", "20", "--seed", "1", "--no-records", "--json", str(summary),
                    "--param", "pemm.average_margin=1.0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "2 pairings, 4 games" in run.stdout
    data = json.loads(summary.read_text())
    assert [(m["a"], m["b"]) for m in data["matches"]] == [("random", "minimax"), ("random", "pemm")]
    # b_params: what differs from the built-in profile (pemm searches on one thread already)
    assert data["matches"][1]["b_params"] == {"max_depth": 1, "average_margin": 1.0}
    assert all(m["games"] == 2 for m in data["matches"])


@pytest.mark.parametrize(("args", "message"), [
    (("random", "random", "--via-host", "--nodes", "100"), "--nodes: options of the lab, not of --via-host"),
    (("random", "random", "--sprt", "elo0=5 elo1=0"), "elo0 < elo1"),
    (("random", "random", "--param", "home_guard=1"), "expected SIDE.KEY=VALUE"),
    (("random", "random", "--max-games", "10"), "--max-games caps an SPRT"),
    (("random",), "name two profiles"),
    (("random", "random", "--setups", "/nonexistent/setups.txt"), "cannot read the setup file"),
])
def test_lab_refuses_bad_options_with_a_clear_message(args: tuple[str, ...], message: str) -> None:
    run = perspecto("match", *args)
    assert run.returncode == 2 and message in " ".join(run.stdout.split()), run.stdout
