"""``perspecto gauntlet --cluster`` (bot/commands/gauntlet_run/cluster.py): the gauntlet's games on Dask workers,
each with its own referee, programs and ``perspecto ucc`` wrapper.

Fast: what a worker reports it has (``worker_kit``) and how the client reads it (``GauntletWorkers.verdict``),
with fake programs and the identity test hook. Slow: a real scheduler and workers on this machine
(tests/test_lab_cluster.py's ``Cluster``) playing real games against the UCC 2012 programs through the real
referee: a worker killed mid-game (the game is still played, once), a worker that lacks a program (it gets
none of its games; a cluster where no worker has it stops before any game).

The programs: ``$PERSPECTO_UCC2012`` when it holds a build (bin/ beside judge/manager/stratego), else the
build tests/test_gauntlet_referee.py makes (skipped, with the reason, where it cannot).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import distributed
import pytest

from bot.commands.gauntlet_run.cluster import GauntletWorkers, Kit, Needs, Ours, Tools, worker_kit
from bot.commands.gauntlet_run.opponents import Opponent, resolve_opponents
from bot.commands.gauntlet_run.referee_route import find_referee, program_path
from bot.profiles import load_configuration
from bot.ucc.engine import UCC_DIR_ENV
from engine_ext.lab.cluster import IDENTITY_ENV, Identity
from tests.test_gauntlet_referee import ucc2012  # noqa: F401  (the build, when $PERSPECTO_UCC2012 has none)
from tests.test_lab_cluster import START_SECONDS, Cluster, environment

REPO = Path(__file__).resolve().parents[1]
OURS = Identity("9.9.9-test", 42)  # the identity every process of the fast tests reports (the test hook)
REFEREE_ENV = "PERSPECTO_UCC2012_REFEREE"


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def fake_wrapper(path: Path, profile: str, move_time: float, config: str | None, state: Path | None) -> None:
    """``write_our_wrapper`` without starting an engine: the fast tests check where it is written, not what."""
    executable(path)


def opponents(*names: str) -> list[Opponent]:
    _settings, profiles = load_configuration(str(REPO / "config"))
    return resolve_opponents(names, profiles, here=False)


SINGLE = (Ours("perspecto", "perspecto"),)
PAIRED = (Ours("perspecto", "perspecto", "state-candidate"), Ours("random", "random", "state-baseline"))


def needs(via: str, *names: str, referee: str | None = None, ours: tuple[Ours, ...] = SINGLE,
          config: Path = REPO / "config") -> Needs:
    return Needs(run="run-1", via=via, ours=ours, config=str(config), referee=referee,
                 opponents=tuple(opponents(*names)), move_time=0.5, learn=False,
                 tools=Tools(find_referee, program_path, fake_wrapper))


def programs_on_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A worker's programs folder (a referee and basic_cpp, named by $UCC_DIR_ENV: the client's paths are not on
    it), no referee setting of its own, and its temporary folder in ``tmp_path/worker`` (not in a worker)."""
    for name in ("PERSPECTO_UCC2012", REFEREE_ENV):
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "programs"
    executable(folder / "stratego")
    executable(folder / "basic_cpp")
    monkeypatch.setenv(UCC_DIR_ENV, str(folder))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "worker"))
    return folder


@pytest.fixture
def identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(IDENTITY_ENV, f"{OURS.version}:{OURS.signature}")


@pytest.mark.usefixtures("identity")
def test_a_worker_reports_the_programs_it_runs_and_why_it_cannot_run_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    programs = tmp_path / "bin"
    executable(programs / "basic_cpp")
    monkeypatch.setenv("PERSPECTO_UCC2012", str(programs))
    monkeypatch.delenv(REFEREE_ENV, raising=False)
    monkeypatch.delenv(UCC_DIR_ENV, raising=False)
    kit = worker_kit(needs("lab", "ucc-basic_cpp", "ucc-basic_python"))
    assert kit.identity == OURS and kit.referee is None and kit.problems == ()
    assert kit.programs == {"ucc-basic_cpp": str(programs / "basic_cpp")}
    assert f"{programs / 'basic_python'} is not an executable file" in kit.missing["ucc-basic_python"]
    assert list(kit.profiles) == ["perspecto"] and len(kit.profiles["perspecto"] or "") == 12
    # Through the referee: none where the build would put it, none at the client's path either.
    kit = worker_kit(needs("referee", "ucc-basic_cpp", referee="/opt/client/stratego"))
    (problem,) = kit.problems
    assert problem.startswith("no referee (") and "no /opt/client/stratego" in problem


@pytest.mark.usefixtures("identity")
def test_a_worker_finds_its_own_referee_and_writes_our_side_in_its_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = programs_on_worker(tmp_path, monkeypatch)
    kit = worker_kit(needs("referee", "ucc-basic_cpp", referee="/opt/client/judge/stratego"))
    assert kit.problems == () and kit.referee == str(folder / "stratego")
    assert kit.programs == {"ucc-basic_cpp": str(folder / "basic_cpp")}
    assert (tmp_path / "worker" / "perspecto-gauntlet" / "run-1" / "referee" / "perspecto-ucc").is_file()
    # Its own setting comes first.
    referee = executable(tmp_path / "own" / "stratego")
    monkeypatch.setenv(REFEREE_ENV, str(referee))
    assert worker_kit(needs("referee", "ucc-basic_cpp")).referee == str(referee)


@pytest.mark.usefixtures("identity")
def test_the_client_refuses_a_worker_by_what_it_lacks_and_names_what_an_accepted_one_lacks() -> None:
    lines: list[str] = []
    workers = GauntletWorkers("tcp://127.0.0.1:1", needs("referee", "ucc-basic_cpp", "ucc-basic_python"),
                              report=lines.append)

    base = Kit(identity=OURS, profiles=workers.profiles, programs={"ucc-basic_cpp": "x"},
               missing={"ucc-basic_python": "no /w/basic_python"}, referee="/w/stratego", problems=())

    def kit(**changes: Any) -> Kit:
        return dataclasses.replace(base, **changes)

    assert workers.verdict(kit()) is None
    assert workers.verdict(kit(identity=Identity("0.0.0-other", 1))) == (
        "runs perspecto 0.0.0-other, signature 1 (bench depth 5), this gauntlet perspecto 9.9.9-test, signature 42 "
        "(bench depth 5)")
    assert workers.verdict(kit(problems=("no referee (x)", "y"))) == "no referee (x); y"
    assert "its profile perspecto is not this gauntlet's (digest 000000000000" in str(
        workers.verdict(kit(profiles={"perspecto": "000000000000"})))
    assert workers.verdict(kit(programs={})) == "none of the programs: ucc-basic_python: no /w/basic_python"
    assert "cannot tell what it has" in str(workers.verdict(OURS))
    workers.accepted = {"tcp://a:1": 1, "tcp://b:1": 2}
    workers.answers = {"tcp://a:1": kit(), "tcp://b:1": kit(programs={"ucc-basic_cpp": "x", "ucc-basic_python": "y"},
                                                            missing={})}
    assert workers.able("ucc-basic_cpp") == ["tcp://a:1", "tcp://b:1"]
    assert workers.able("ucc-basic_python") == ["tcp://b:1"]
    workers.admitted("tcp://a:1", workers.answers["tcp://a:1"])
    workers.admitted("tcp://b:1", workers.answers["tcp://b:1"])
    assert lines == ["worker tcp://a:1 lacks ucc-basic_python: it plays none of those games (ucc-basic_python: "
                     "no /w/basic_python)"]


@pytest.mark.usefixtures("identity")
def test_a_paired_runs_worker_writes_both_arms_wrappers_and_is_refused_where_either_profile_differs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    programs_on_worker(tmp_path, monkeypatch)
    kit = worker_kit(needs("referee", "ucc-basic_cpp", ours=PAIRED))
    assert kit.problems == () and sorted(kit.profiles) == ["perspecto", "random"]
    referee = tmp_path / "worker" / "perspecto-gauntlet" / "run-1" / "referee"
    assert sorted(p.name for p in referee.glob("*-ucc")) == ["perspecto-ucc", "random-ucc"]
    # The client's configuration; a worker whose own says something else of the baseline's profile.
    workers = GauntletWorkers("tcp://127.0.0.1:1", needs("referee", "ucc-basic_cpp", ours=PAIRED))
    assert workers.verdict(kit) is None
    other = tmp_path / "config"
    shutil.copytree(REPO / "config", other)
    (other / "profiles" / "random.toml").write_text('engine = "random"\nseed = 7\n')  # the built-in's, seeded
    theirs = worker_kit(needs("referee", "ucc-basic_cpp", ours=PAIRED, config=other))
    assert theirs.profiles["perspecto"] == kit.profiles["perspecto"]
    assert theirs.profiles["random"] != kit.profiles["random"]
    assert workers.verdict(theirs) == (f"its profile random is not this gauntlet's (digest "
                                       f"{theirs.profiles['random']}, here {kit.profiles['random']}): give it the "
                                       "client's configuration")


@pytest.mark.usefixtures("identity")
def test_a_worker_writes_each_arms_wrapper_with_its_own_clock_at_time_odds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    programs_on_worker(tmp_path, monkeypatch)
    clocks: dict[str, float] = {}

    def recording_wrapper(path: Path, profile: str, move_time: float, config: str | None, state: Path | None) -> None:
        clocks[path.name] = move_time
        executable(path)

    odds = (Ours("perspecto", "perspecto", "state-candidate"), Ours("perspecto@T1", "perspecto", "state-baseline", 1.0))
    plain = needs("referee", "ucc-basic_cpp", ours=odds)
    kit = worker_kit(dataclasses.replace(plain, run="odds", tools=Tools(find_referee, program_path, recording_wrapper)))
    assert kit.problems == () and list(kit.profiles) == ["perspecto"]
    assert clocks == {"perspecto-ucc": 0.5, "perspecto@T1-ucc": 1.0}  # the run's -T, and the baseline's own


def test_a_revisions_baseline_is_refused_on_a_cluster_before_any_worktree(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bot.cli", "gauntlet", "ucc-basic_cpp", "--cluster", "tcp://127.0.0.1:1",
                          "--baseline", "HEAD", "--baseline-dir", str(tmp_path / "baselines"), "--records",
                          str(tmp_path / "r"), "--config", str(REPO / "config")],
                         cwd=REPO, env=environment(), capture_output=True, text=True, timeout=120)
    out = run.stdout.replace("\n", " ")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--cluster plays a baseline that is a profile: a git revision's baseline is a worktree" in out
    assert "Play it here (without --cluster)" in out and "Traceback" not in run.stdout + run.stderr
    assert not (tmp_path / "baselines").exists()


def test_concurrency_is_refused_with_a_cluster(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "bot.cli", "gauntlet", "ucc-basic_cpp", "--cluster", "tcp://127.0.0.1:1",
                          "--concurrency", "2", "--records", str(tmp_path / "r"), "--config", str(REPO / "config")],
                         cwd=REPO, env=environment(), capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "--concurrency is this machine's" in run.stdout.replace("\n", " ")


# --- on a real cluster --------------------------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """A scheduler here (its workers added by the test), killed at the end."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    running = Cluster(folder)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def programs(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A build's bin/ folder: $PERSPECTO_UCC2012's, else the one tests/test_gauntlet_referee.py builds. The
    UCC settings are then taken out of this process's environment: each test gives every process its own."""
    given = os.environ.get("PERSPECTO_UCC2012")
    if given and (Path(given) / "basic_cpp").is_file() and referee_of(Path(given)).is_file():
        found = Path(given)
    else:
        found = Path(request.getfixturevalue("ucc2012")) / "bin"
    for name in ("PERSPECTO_UCC2012", REFEREE_ENV, UCC_DIR_ENV):
        monkeypatch.delenv(name, raising=False)
    return found


def referee_of(programs: Path) -> Path:
    return programs.parent / "judge" / "manager" / "stratego"


def gauntlet(address: str, records: Path, *names: str, games: int = 2) -> subprocess.Popen[str]:
    """The client, started without any of the programs or a referee of its own: the workers have them."""
    env = environment()  # the ``programs`` fixture took the UCC settings out
    command = [sys.executable, "-m", "bot.cli", "gauntlet", *names, "--games", str(games), "--move-time", "0.5",
               "--max-turns", "200", "--cluster", address, "--records", str(records), "--config", str(REPO / "config"),
               "--json", str(records.parent / f"{records.name}.json")]
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(run: subprocess.Popen[str], timeout: float = 900) -> str:
    out, _ = run.communicate(timeout=timeout)
    return out


def referee_logs(cluster: Cluster, worker: str) -> list[str]:
    """The games a worker played: the referee's logs in its folder (Dask's local directory under the one given)."""
    return sorted(p.stem for p in (cluster.folder / worker).glob("**/perspecto-gauntlet/*/referee/*.log"))


def played(records: Path) -> list[str]:
    return sorted(p.stem for p in records.glob("perspecto-vs-*.json"))


@pytest.mark.slow
def test_a_worker_killed_mid_game_loses_no_game_and_plays_none_twice(cluster: Cluster, programs: Path,
                                                                    tmp_path: Path) -> None:
    cluster.add_worker("one", PERSPECTO_UCC2012=str(programs))
    victim = cluster.add_worker("two", PERSPECTO_UCC2012=str(programs))
    cluster.wait_for_workers(2)
    records = tmp_path / "records"
    run = gauntlet(cluster.address, records, "ucc-basic_python", games=4)
    observer = distributed.Client(cluster.address, timeout=START_SECONDS, set_as_default=False)
    try:
        names = {info["name"]: a for a, info in observer.scheduler_info(n_workers=-1)["workers"].items()}
        deadline = time.monotonic() + 600
        killed: list[str] = []
        while not killed:  # a game on the victim, its referee under way (its log written to): kill the worker
            assert time.monotonic() < deadline and run.poll() is None, "no game on the victim"
            keys = [str(k) for k in observer.processing(workers=[names["two"]])[names["two"]]]
            games = [k.rsplit("-", 1)[0] for k in keys if k.startswith("perspecto-vs-")]
            # At once: at -T 0.5 on a loaded machine a game can end within a second (a setup too late), and a game
            # that ended on the victim is not played again (the first run of this test after the split lost so).
            if games and games[0] in referee_logs(cluster, "two"):
                victim.send_signal(signal.SIGKILL)
                killed.append(games[0])
            time.sleep(0.2)
    finally:
        observer.close()
    out = finish(run)
    assert run.returncode == 0, out
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert f"worker {names['two']} left the cluster; its games are played again elsewhere" in out.replace("\n", " ")
    games = [f"perspecto-vs-ucc-basic_python-{slot:05d}" for slot in range(4)]
    assert played(records) == games
    assert killed[0] in games and killed[0] in referee_logs(cluster, "one")  # played again, on the other worker
    assert sum(line.startswith(f"{killed[0]}: ") for line in out.splitlines()) == 1  # and counted once
    summary = json.loads((tmp_path / "records.json").read_text())
    assert summary["all"]["games"] == 4 and summary["settings"]["cluster"] == cluster.address


@pytest.mark.slow
def test_a_worker_without_a_program_plays_none_of_its_games_and_without_any_such_worker_the_run_stops(
        cluster: Cluster, programs: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial-bin"  # basic_cpp only
    partial.mkdir()
    (partial / "basic_cpp").symlink_to(programs / "basic_cpp")
    cluster.add_worker("partial", PERSPECTO_UCC2012=str(partial), PERSPECTO_UCC2012_REFEREE=str(referee_of(programs)))
    cluster.wait_for_workers(1)
    stopped = gauntlet(cluster.address, tmp_path / "stopped", "ucc-basic_cpp", "ucc-basic_python")
    out = finish(stopped).replace("\n", " ")
    assert stopped.returncode == 2, out
    assert f"no worker of the cluster at {cluster.address} can play ucc-basic_python: " in out
    assert f"{partial / 'basic_python'} is not an executable file" in out
    assert played(tmp_path / "stopped") == []
    cluster.add_worker("full", PERSPECTO_UCC2012=str(programs))
    cluster.wait_for_workers(2)
    records = tmp_path / "records"
    run = gauntlet(cluster.address, records, "ucc-basic_cpp", "ucc-basic_python")
    out = finish(run)
    assert run.returncode == 0, out + cluster.log("partial") + cluster.log("full")
    assert "lacks ucc-basic_python: it plays none of those games" in out.replace("\n", " ")
    assert "2 worker threads on the cluster" in out.replace("\n", " ")
    assert played(records) == [f"perspecto-vs-{o}-{s:05d}" for o in ("ucc-basic_cpp", "ucc-basic_python")
                               for s in range(2)]
    assert sorted(referee_logs(cluster, "partial") + referee_logs(cluster, "full")) == played(records)
    assert sorted(p.stem for p in (records / "referee").glob("*.log")) == played(records)  # sent back
    assert sorted(p.stem for p in (records / "referee").glob("*.out")) == played(records)
    assert not [g for g in referee_logs(cluster, "partial") if "basic_python" in g]
    assert [g for g in referee_logs(cluster, "full") if "basic_python" in g] == [
        "perspecto-vs-ucc-basic_python-00000", "perspecto-vs-ucc-basic_python-00001"]


@pytest.mark.slow
def test_a_scheduler_that_goes_away_ends_the_run_saved_and_resume_on_a_new_cluster_finishes_it(
        cluster: Cluster, programs: Path, tmp_path: Path) -> None:
    cluster.add_worker("one", PERSPECTO_UCC2012=str(programs))
    cluster.wait_for_workers(1)
    records = tmp_path / "records"
    run = gauntlet(cluster.address, records, "ucc-basic_cpp", games=4)
    deadline = time.monotonic() + 600
    while not played(records):
        assert time.monotonic() < deadline and run.poll() is None, "no game finished"
        time.sleep(0.2)
    cluster.scheduler.send_signal(signal.SIGKILL)
    out = finish(run)
    assert run.returncode == 1, out
    assert (f"the Dask scheduler at {cluster.address} went away: the games finished so far are saved in {records}"
            in out.replace("\n", " "))
    assert "Traceback" not in out
    saved = {name: (records / f"{name}.json").read_text() for name in played(records)}
    assert 1 <= len(saved) < 4, out
    (tmp_path / "again").mkdir()
    again = Cluster(tmp_path / "again")  # a scheduler started anew, its worker another
    try:
        again.add_worker("two", PERSPECTO_UCC2012=str(programs))
        again.wait_for_workers(1)
        resumed = gauntlet(again.address, records, "ucc-basic_cpp", "--resume", str(records), games=4)
        out = finish(resumed)
    finally:
        again.stop()
    assert resumed.returncode == 0, out
    assert played(records) == [f"perspecto-vs-ucc-basic_cpp-{slot:05d}" for slot in range(4)]
    assert {name: (records / f"{name}.json").read_text() for name in saved} == saved  # not played again
    assert sum(line.startswith("perspecto-vs-ucc-basic_cpp-") for line in out.splitlines()) == 4 - len(saved)


def paired_run(address: str, records: Path, *extra: str) -> subprocess.Popen[str]:
    """A paired run on the cluster, profile against profile: tiny (one opponent, short games, four slots)."""
    command = [sys.executable, "-m", "bot.cli", "gauntlet", "ucc-basic_cpp", "--profile", "perspecto", "--baseline",
               "random", "--move-time", "1", "--max-turns", "60", "--max-slots", "4", "--seed", "11", "--no-learn",
               "--cluster", address, "--records", str(records), "--config", str(REPO / "config"),
               "--json", str(records.parent / f"{records.name}.json"), *extra]
    return subprocess.Popen(command, cwd=REPO, env=environment(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


VERDICT = ("opponents", "stratified", "pooled", "pairs", "sprt", "failures_per_100")


@pytest.mark.slow
def test_a_paired_run_on_two_workers_plays_a_local_runs_slots_and_its_report_gives_its_verdict(
        cluster: Cluster, programs: Path, tmp_path: Path) -> None:
    from concurrent.futures import Executor, Future

    from rich.console import Console

    from bot.commands.gauntlet_run.jobs import Clock, GauntletJob, GauntletOutcome, game_id, run_jobs, slot_side
    from bot.commands.gauntlet_run.lab_route import slot_seed
    from bot.commands.gauntlet_run.paired_run import ArmSpec, PairedFeed, PairedPlan, opponent_labels, replay_schedule
    from engine_ext.lab.paired import Slot
    from engine_ext.rules.record import GameRecord

    cluster.add_worker("one", PERSPECTO_UCC2012=str(programs))
    cluster.add_worker("two", PERSPECTO_UCC2012=str(programs))
    cluster.wait_for_workers(2)
    records = tmp_path / "records"
    run = paired_run(cluster.address, records)
    out = finish(run)
    assert run.returncode == 0, out + cluster.log("one") + cluster.log("two")
    assert "2 worker threads on the cluster" in out.replace("\n", " ")
    games = sorted(p.stem for p in records.glob("*-vs-ucc-basic_cpp-*.json"))
    assert len(games) == 8, out
    # Both workers played, each with both arms' wrappers written by its own installation.
    logs = {w: referee_logs(cluster, w) for w in ("one", "two")}
    assert logs["one"] and logs["two"] and sorted(logs["one"] + logs["two"]) == games
    for worker in ("one", "two"):
        assert {p.name for p in (cluster.folder / worker).glob("**/perspecto-gauntlet/*/referee/*-ucc")} == {
            "perspecto-ucc", "random-ucc"}
    # The verdict the run printed is the one --report reads from the records.
    verdict = json.loads((tmp_path / "records.json").read_text())
    report = subprocess.run([sys.executable, "-m", "bot.cli", "gauntlet", "--report", str(records), "--json",
                             str(tmp_path / "report.json")], cwd=REPO, env=environment(), capture_output=True,
                            text=True, timeout=300)
    assert report.returncode == 0, report.stdout + report.stderr
    again = json.loads((tmp_path / "report.json").read_text())
    assert {k: again[k] for k in VERDICT} == {k: verdict[k] for k in VERDICT} and verdict["pairs"] == 4
    # A local run of the same plan (same seed), its games answered with the cluster's records: the same slots,
    # the same seeds (the workers' wrappers of each game passed them on).
    plan = PairedPlan.load(records)
    played: list[GauntletJob] = []

    def make_job(arm: ArmSpec, slot: Slot, _seen: Any) -> GauntletJob:
        return GauntletJob(game_id=game_id(arm.name, slot.opponent, slot.number), ours=arm.name,
                           opponent=slot.opponent, slot=slot.number, our_side=slot_side(slot.number),
                           clock=Clock(plan.move_time, plan.max_turns, plan.wall_time), via="referee",
                           work=tmp_path, arm=arm.arm,
                           setup_seed=slot_seed(plan.seed, slot.opponent, slot.number))

    class Here(Executor):  # the local executor's interface, the games answered at once
        def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
            (job,) = args
            played.append(job)
            future: Future[GauntletOutcome] = Future()
            future.set_result(GauntletOutcome(job, GameRecord.load(records / f"{job.game_id}.json"), 0.0))
            return future

    local = plan.schedule(opponent_labels(plan))
    (tmp_path / "local").mkdir()
    quiet = Console(file=open(os.devnull, "w"))
    run_jobs(PairedFeed(plan, local, make_job, tmp_path / "local", quiet, learn=False), Here(), 2)
    assert sorted(j.game_id for j in played) == games
    assert local.rounds == replay_schedule(plan, opponent_labels(plan), records).rounds
    scripts = {p.stem: p.read_text() for p in cluster.folder.glob("*/**/perspecto-gauntlet/*/referee/*.sh")
               if "-vs-" in p.stem}
    assert sorted(scripts) == games
    for job in played:
        assert f"--seed {job.setup_seed} " in scripts[job.game_id]
    # --resume on the cluster plays the games without a record, and only those.
    gone = games[2:4]
    for name in gone:
        (records / f"{name}.json").unlink()
    resumed = paired_run(cluster.address, records, "--resume", str(records))
    out = finish(resumed)
    assert resumed.returncode == 0, out
    assert "6 games taken from the records already there" in out
    assert sorted(p.stem for p in records.glob("*-vs-ucc-basic_cpp-*.json")) == games
    assert sum(line.startswith(tuple(f"{g}: " for g in games)) for line in out.splitlines()) == 2
