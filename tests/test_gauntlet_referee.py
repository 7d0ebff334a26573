"""Real games against a real sparring program (issue 32, point 4): the UCC 2012 programs built from
the sparring set's ``opponents/ucc2012`` folder named by ``$PERSPECTO_UCC2012_SOURCE`` (test material, never in
the repository; .ci/run sets it to CI's copy), then ``perspecto gauntlet`` plays basic_cpp through the real
referee ``stratego`` (Perspecto as the program its ``perspecto ucc --write-wrapper`` script starts) and through
the lab's own UCC adapter.

Slow: the build takes a minute or so, and each game is a real game at a real clock (with a turn cap). Skipped,
with the reason, where that variable, g++, make or a Python 2.7 (the build needs one) is missing.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.commands.gauntlet_run.records import shown_setup
from bot.daemon.opponent_store import OpponentStore
from bot.ucc.referee import parse_referee_log, parse_result_line
from engine_ext.beliefs.observed import parse_seen
from engine_ext.lab.analysis import analyse_record
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import CLASSIC
from tests.conftest import REAL_HOME

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
SOURCE_ENV = "PERSPECTO_UCC2012_SOURCE"  # the sparring set's opponents/ucc2012 folder, with its build script
BUILD = Path(os.environ.get(SOURCE_ENV) or "/nonexistent") / "build"


def python2() -> str | None:
    """A Python 2.7 for the build script: $PY2, pyenv's 2.7 ($PYENV_ROOT, else the real home's ~/.pyenv: the tests'
    HOME is a temporary folder), python2.7 on PATH. A pyenv shim on PATH is no Python 2 unless it runs as one."""
    roots = [os.environ.get("PYENV_ROOT"), str(REAL_HOME / ".pyenv")]
    found = [os.environ.get("PY2"),
             *(p for root in roots if root for p in sorted(glob.glob(f"{root}/versions/2.7*/bin/python2.7"))),
             shutil.which("python2.7")]
    for candidate in found:
        if candidate and os.access(candidate, os.X_OK) and subprocess.run(
                [candidate, "-c", "import sys; assert sys.version_info[0] == 2"], capture_output=True,
                timeout=60, check=False).returncode == 0:
            return candidate
    return None


@pytest.fixture(scope="module")
def ucc2012(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The build's folder (bin/ with one executable a program, judge/manager/stratego the referee)."""
    missing = [what for what, ok in ((f"${SOURCE_ENV} (the sparring programs' build script)", BUILD.is_file()),
                                     ("g++", shutil.which("g++")), ("make", shutil.which("make")),
                                     ("a Python 2.7", python2())) if not ok]
    if missing:
        pytest.skip(f"cannot build the UCC 2012 programs: no {', no '.join(missing)}")
    out = tmp_path_factory.mktemp("ucc2012")
    done = subprocess.run([str(BUILD), str(out)], capture_output=True, text=True, timeout=900, check=False,
                          env={**os.environ, "PY2": str(python2())})
    assert done.returncode == 0, done.stderr[-2000:]
    assert (out / "bin" / "basic_cpp").is_file() and (out / "judge" / "manager" / "stratego").is_file()
    yield out


def gauntlet(ucc2012: Path, records: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Two games (one a colour) against basic_cpp, 10 turns each. The referee's -T 6: the setup counts from
    the colour line, so Perspecto's start-up has to fit in it on a busy CI machine too."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PERSPECTO_")}
    env["PERSPECTO_UCC2012"] = str(ucc2012 / "bin")
    command = [sys.executable, "-m", "bot.cli", "gauntlet", "ucc-basic_cpp", "--config", str(REPO / "config"),
               "--games", "2", "--concurrency", "1", "--move-time", "6", "--max-turns", "10", "--wall-time", "600",
               "--records", str(records), "--json", str(records / "gauntlet.json"), *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=1200, check=False, env=env, cwd=REPO)


def test_a_game_through_the_real_referee(ucc2012: Path, tmp_path: Path) -> None:
    records = tmp_path / "records"
    run = gauntlet(ucc2012, records)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # The referee's own last line parses, and its log became a record that replays, for both colours.
    outs = sorted((records / "referee").glob("*.out"))
    assert len(outs) == 2
    for out in outs:
        result = parse_result_line(out.read_text().strip().splitlines()[-1])
        assert result.outcome in ("VICTORY", "DRAW_DEFAULT"), out.read_text()[-500:]  # no ILLEGAL, no BAD_SETUP
        record = GameRecord.load(records / out.with_suffix(".json").name)
        assert record.result is not None and record.result["reason"] in ("flag", "no_moves", "move_limit")
        log = parse_referee_log(out.with_suffix(".log").read_text())
        assert len(log.moves) > 0
    games = sorted(records.glob("perspecto-vs-*.json"))
    assert [GameRecord.load(p).red.name for p in games] == ["perspecto", "ucc-basic_cpp"]  # colours alternate
    for path in games:
        analyse_record(GameRecord.load(path))
    summary = json.loads((records / "gauntlet.json").read_text())
    (row,) = summary["opponents"]
    assert row["games"] == 2 and row["forfeits_ours"] == 0, summary
    # Our program learnt in this run's own memory (docs/ucc.md), and nothing it kept disagrees with the records.
    assert "--state-dir" in (records / "referee" / "perspecto-ucc").read_text()
    with OpponentStore(records / "state" / "opponents.sqlite") as store:
        kept = [parse_seen(text, CLASSIC) for name in store.opponents()
                for text, _colour in store.opponent_seen(name, "classic")]
    shown = [parse_seen(seen[0], CLASSIC) for path in games
             if (seen := shown_setup(GameRecord.load(path), "perspecto"))]
    for setup in kept:
        assert any(all(c is None or c == s.cells[i] for i, c in enumerate(setup.cells)) for s in shown)


def test_the_same_games_through_the_lab_and_the_ucc_adapter(ucc2012: Path, tmp_path: Path) -> None:
    records = tmp_path / "records"
    run = gauntlet(ucc2012, records, "--via", "lab", "--seed", "1")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    summary = json.loads((records / "gauntlet.json").read_text())
    (row,) = summary["opponents"]
    assert row["games"] == 2 and row["forfeits_ours"] == 0 and row["forfeits_theirs"] == 0, summary
    for path in sorted(records.glob("perspecto-vs-*.json")):
        record = GameRecord.load(path)
        assert record.options["two_squares"] is None and record.options["move_limit"] == 18  # the referee's rules
        analyse_record(record)
