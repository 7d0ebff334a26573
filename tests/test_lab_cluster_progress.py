"""A lab run's saved progress and ``--resume`` (engine_ext/lab/progress.py), and a game that comes back
twice counted once: what the cluster relies on, tested without one (tests/test_lab_cluster.py has the
cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.config import get_profile
from engine_ext.lab.progress import (
    ProgressLog,
    load_progress,
    outcome_from_json,
    outcome_to_json,
    progress_path,
)
from engine_ext.lab.runner import GameOutcome, GeneratedSetups, LabError, Limits, Match, Rules, make_player, run_matches
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import CLASSIC

REPO = Path(__file__).resolve().parents[1]


def random_match(records: Path | None, *, pairs: int = 3, seed: int = 7, move_limit: int = 40) -> Match:
    a = make_player("random-a", get_profile("random"), label="A")
    b = make_player("random-b", get_profile("random"), label="B")
    return Match(a, b, pairs=pairs, source=GeneratedSetups(CLASSIC), seed=seed, limits=Limits(),
                 rules=Rules(move_limit=move_limit), records=records)


def records_of(folder: Path) -> dict[str, dict[str, object]]:
    """Every record of a folder by name, without its wall-clock start (the one field not of the seed)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        data.pop("started")
        out[path.name] = data
    return out


sides = st.sampled_from([Side.RED, Side.BLUE])


@given(index=st.integers(0, 10**6), a_side=sides, winner=st.none() | sides, forfeit=st.none() | sides,
       detail=st.none() | st.text(), plies=st.integers(0, 5000), seconds=st.floats(0, 1e6),
       nodes=st.tuples(st.integers(0, 2**40), st.integers(0, 2**40)), record=st.none() | st.just("r/x.json"))
def test_an_outcome_reads_back_as_it_was_saved(index: int, a_side: Side, winner: Side | None,
                                               forfeit: Side | None, detail: str | None, plies: int,
                                               seconds: float, nodes: tuple[int, int], record: str | None) -> None:
    outcome = GameOutcome(match="a-vs-b", index=index, pair=index // 2, a_side=a_side, winner=winner,
                          reason="flag", plies=plies, forfeit=forfeit, detail=detail, seconds=seconds, nodes=nodes,
                          record_path=None if record is None else Path(record))
    assert outcome_from_json(json.loads(json.dumps(outcome_to_json(outcome)))) == outcome


def test_a_game_that_comes_back_twice_is_counted_once(tmp_path: Path) -> None:
    match = random_match(None, pairs=2)
    seen: list[int] = []
    outcomes = {}

    def collect(m: Match, outcome: GameOutcome) -> None:
        outcomes[outcome.index] = outcome

    run_matches([match], on_game=collect)
    replayed = random_match(None, pairs=2)
    for index in (0, 1, 1, 0, 2, 3, 3):  # a lost worker's game, finished just before, comes back again
        if replayed.add(outcomes[index]):
            seen.append(index)
    assert seen == [0, 1, 2, 3]
    assert replayed.consumed_pairs == 2 and replayed.pair_scores == match.pair_scores


def test_a_resumed_run_plays_only_the_unsaved_games_and_ends_as_a_whole_run(tmp_path: Path) -> None:
    whole = random_match(tmp_path / "whole")
    run_matches([whole])

    first = random_match(tmp_path / "resumed", pairs=3)
    log = ProgressLog(progress_path(tmp_path / "resumed", [first]))
    log.start([first], resume=False)
    played: list[int] = []

    def stop_after_three(match: Match, outcome: GameOutcome) -> None:
        log.save(outcome)
        played.append(outcome.index)
        if len(played) == 3:
            raise KeyboardInterrupt  # as Ctrl-C (or a scheduler gone) would stop it: mid-pair

    with pytest.raises(KeyboardInterrupt):
        run_matches([first], on_game=stop_after_three)
    log.close()

    again = random_match(tmp_path / "resumed", pairs=3)
    log = ProgressLog(log.path)
    saved = log.start([again], resume=True)
    assert sorted(o.index for o in saved) == [0, 1, 2]
    replayed: list[int] = []
    run_matches([again], saved=saved, on_game=lambda m, o: (log.save(o), replayed.append(o.index)))
    log.close()
    assert replayed == [3, 4, 5]
    assert again.pair_scores == whole.pair_scores and again.consumed_pairs == 3
    assert records_of(tmp_path / "resumed") == records_of(tmp_path / "whole")
    assert sorted(o.index for o in load_progress(log.path).outcomes) == list(range(6))


def test_a_torn_last_line_is_skipped_and_its_game_played_again(tmp_path: Path) -> None:
    match = random_match(tmp_path, pairs=1)
    log = ProgressLog(progress_path(tmp_path, [match]))
    log.start([match], resume=False)
    run_matches([match], on_game=lambda m, o: log.save(o))
    log.close()
    text = log.path.read_text()
    log.path.write_text(text[: text.rstrip().rfind("\n") + 20])  # the last game half written
    progress = load_progress(log.path)
    assert [o.index for o in progress.outcomes] == [0] and progress.torn_lines == 1
    again = random_match(tmp_path, pairs=1)
    log = ProgressLog(log.path)
    saved = log.start([again], resume=True)
    run_matches([again], saved=saved, on_game=lambda m, o: log.save(o))
    log.close()
    assert again.consumed_pairs == 1
    assert sorted(o.index for o in load_progress(log.path).outcomes) == [0, 1]


def test_resuming_another_run_or_nothing_is_refused_with_what_differs(tmp_path: Path) -> None:
    match = random_match(tmp_path)
    log = ProgressLog(progress_path(tmp_path, [match]))
    log.start([match], resume=False)
    log.close()
    other = replace(random_match(tmp_path), rules=Rules(move_limit=41))
    with pytest.raises(LabError, match=r"rules was .*move_limit.*40.*now.*41"):
        ProgressLog(progress_path(tmp_path, [other])).start([other], resume=True)
    with pytest.raises(LabError, match="no saved progress to resume"):
        ProgressLog(tmp_path / "elsewhere.progress.jsonl").start([match], resume=True)
    (tmp_path / "bad.progress.jsonl").write_text("{}\n")
    with pytest.raises(LabError, match="not a lab progress file"):
        ProgressLog(tmp_path / "bad.progress.jsonl").start([match], resume=True)


def perspecto(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow  # four runs of the command: a minute and more on a busy machine
def test_match_resume_from_the_cli_carries_on_to_more_games(tmp_path: Path) -> None:
    common = ("match", "random", "random", "--move-limit", "30", "--seed", "4", "--concurrency", "1")
    whole = perspecto(*common, "--games", "6", "--records", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    first = perspecto(*common, "--games", "2", "--records", str(tmp_path / "resumed"))
    assert first.returncode == 0, first.stdout + first.stderr
    more = perspecto(*common, "--games", "6", "--records", str(tmp_path / "resumed"), "--resume")
    assert more.returncode == 0, more.stdout + more.stderr
    assert "resumed with 2 saved games" in more.stdout
    assert records_of(tmp_path / "resumed") == records_of(tmp_path / "whole")
    assert "6 games" in more.stdout
    refused = perspecto(*common[:-2], "--games", "6", "--records", str(tmp_path / "resumed"), "--resume",
                        "--move-time", "1")
    assert refused.returncode == 2 and "was saved by another run" in refused.stdout


def test_resume_needs_the_seed_of_the_run_it_carries_on(tmp_path: Path) -> None:
    run = perspecto("match", "random", "random", "--games", "2", "--records", str(tmp_path), "--resume")
    assert run.returncode == 2 and "--resume carries on the run of one seed: give its --seed" in run.stdout
