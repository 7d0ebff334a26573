"""The lab on a real Dask cluster on this machine (engine_ext/lab/cluster.py): a scheduler and worker
processes started here (``dask scheduler`` / ``dask worker``, as a user starts them), the match played by
``perspecto match --cluster`` or by ``run_matches`` with a ``ClusterPool``.

- the same records as the local runner for the same seed, with a worker of another Perspecto refused;
- a worker killed (SIGKILL) mid-match: the match ends whole, no game lost or counted twice;
- the scheduler killed mid-match: the run ends with its finished games saved, ``--resume`` finishes it.

A worker "of another Perspecto" is a worker started with ``PERSPECTO_LAB_WORKER_IDENTITY`` (the test hook
of engine_ext/lab/cluster.py), which makes it report another version and signature.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import distributed
import pytest

from bot.config import get_profile
from engine_ext.lab.cluster import IDENTITY_ENV, ClusterError, ClusterPool
from engine_ext.lab.runner import GameOutcome, GeneratedSetups, Limits, Match, Rules, make_player, run_matches
from engine_ext.rules.rulesets import CLASSIC

REPO = Path(__file__).resolve().parents[1]
DASK = Path(sys.executable).with_name("dask")
START_SECONDS = 90.0  # a scheduler or a worker that is not up by then is a failure (a busy machine is slow)
FOREIGN = "0.0.0-other:1"  # the identity a worker of another Perspecto reports


def environment(**extra: str) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name != IDENTITY_ENV}
    return {**env, "PYTHONPATH": str(REPO), "COLUMNS": "200", **extra}


class Cluster:
    """A scheduler and its workers, each its own process; logs in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.processes: list[subprocess.Popen[bytes]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        file = folder / "scheduler.json"
        self.scheduler = self._start("scheduler", "scheduler", "--host", "127.0.0.1", "--port", "0",
                                     "--no-dashboard", "--scheduler-file", str(file))
        deadline = time.monotonic() + START_SECONDS
        while not file.exists() or not file.read_text().strip():
            if time.monotonic() > deadline or self.scheduler.poll() is not None:
                raise RuntimeError(f"no scheduler: {self.log('scheduler')}")
            time.sleep(0.2)
        time.sleep(0.2)  # the file is written whole by then
        self.address: str = json.loads(file.read_text())["address"]

    def _start(self, name: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (self.folder / f"{name}.log").open("wb")
        process = subprocess.Popen([str(DASK), *args], cwd=self.folder, env=env or environment(), stdout=log,
                                   stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")[-3000:]

    def add_worker(self, name: str, **env: str) -> subprocess.Popen[bytes]:
        """A worker of one thread without a nanny (so SIGKILL ends it, as a machine that goes away)."""
        process = self._start(name, "worker", self.address, "--name", name, "--nthreads", "1", "--no-nanny",
                              "--no-dashboard", "--local-directory", str(self.folder / name),
                              env=environment(**env))
        self.workers[name] = process
        return process

    def wait_for_workers(self, count: int) -> None:
        with distributed.Client(self.address, timeout=START_SECONDS, set_as_default=False) as client:
            try:
                client.wait_for_workers(count, timeout=START_SECONDS)
            except TimeoutError:
                logs = "\n".join(self.log(name) for name in self.workers)
                raise RuntimeError(f"fewer than {count} workers joined:\n{logs}") from None

    def stop(self) -> None:
        # SIGKILL: nothing of a test's cluster is worth a graceful close (which takes its time on a busy machine)
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            process.wait(timeout=20)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    folder = tmp_path / "cluster"
    folder.mkdir()
    running = Cluster(folder)
    try:
        yield running
    finally:
        running.stop()


def search_match(records: Path, *, pairs: int, nodes: int, move_limit: int, seed: int = 5) -> Match:
    limits = Limits(nodes=nodes)
    a = make_player("perspecto", get_profile("perspecto"), label="A")
    b = make_player("pemm", get_profile("pemm"), label="B")
    return Match(a, b, pairs=pairs, source=GeneratedSetups(CLASSIC), seed=seed, limits=limits,
                 rules=Rules(move_limit=move_limit), records=records)


def records_of(folder: Path) -> dict[str, dict[str, object]]:
    """Every record of a folder by name, without its wall-clock start (the one field not of the seed)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        data.pop("started")
        out[path.name] = data
    return out


def perspecto(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, env=environment(),
                          capture_output=True, text=True, timeout=timeout)


MATCH_ARGS = ("match", "perspecto", "pemm", "--nodes", "300", "--move-limit", "30", "--games", "4", "--seed", "5")


@pytest.mark.slow
def test_a_cluster_plays_the_local_runners_records_and_refuses_a_worker_of_another_perspecto(
        cluster: Cluster, tmp_path: Path) -> None:
    cluster.add_worker("one")
    cluster.add_worker("two")
    cluster.add_worker("foreign", **{IDENTITY_ENV: FOREIGN})
    cluster.wait_for_workers(3)
    local = perspecto(*MATCH_ARGS, "--concurrency", "1", "--records", str(tmp_path / "local"))
    assert local.returncode == 0, local.stdout + local.stderr
    remote = perspecto(*MATCH_ARGS, "--cluster", cluster.address, "--records", str(tmp_path / "remote"),
                       "--json", str(tmp_path / "remote.json"))
    assert remote.returncode == 0, remote.stdout + remote.stderr + cluster.log("foreign")
    out = remote.stdout.replace("\n", " ")
    assert "refused: runs perspecto 0.0.0-other, signature 1" in out
    assert f"2 worker threads on the cluster at {cluster.address}" in out
    assert records_of(tmp_path / "remote") == records_of(tmp_path / "local")
    assert len(records_of(tmp_path / "local")) == 4
    table = [line for line in local.stdout.splitlines() if line.startswith("│ perspecto")]
    assert len(table) == 1 and table == [line for line in remote.stdout.splitlines() if line.startswith("│ perspecto")]
    assert json.loads((tmp_path / "remote.json").read_text())["settings"]["cluster"] == cluster.address


@pytest.mark.slow
def test_a_cluster_of_only_foreign_workers_plays_nothing_and_says_why(cluster: Cluster, tmp_path: Path) -> None:
    cluster.add_worker("foreign", **{IDENTITY_ENV: FOREIGN})
    cluster.wait_for_workers(1)
    run = perspecto(*MATCH_ARGS, "--cluster", cluster.address, "--records", str(tmp_path / "records"))
    assert run.returncode == 2
    out = run.stdout.replace("\n", " ")
    assert f"no worker of the cluster at {cluster.address} can play this match" in out
    assert "runs perspecto 0.0.0-other, signature 1" in out
    assert not list((tmp_path / "records").glob("*.json"))


def test_no_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    pool = ClusterPool("tcp://127.0.0.1:1", connect_seconds=2)
    with pytest.raises(ClusterError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:1"):
        pool.connect()


@pytest.mark.slow
def test_a_worker_killed_mid_match_loses_no_game_and_counts_none_twice(cluster: Cluster, tmp_path: Path) -> None:
    cluster.add_worker("one")
    victim = cluster.add_worker("two")
    cluster.wait_for_workers(2)
    match = search_match(tmp_path / "remote", pairs=3, nodes=1500, move_limit=60)
    seen: list[int] = []
    lines: list[str] = []
    observer = distributed.Client(cluster.address, timeout=START_SECONDS, set_as_default=False)
    names = {info["name"]: address for address, info in observer.scheduler_info(n_workers=-1)["workers"].items()}
    playing: list[str] = []

    def on_game(m: Match, outcome: GameOutcome) -> None:
        seen.append(outcome.index)
        if len(seen) == 1:  # a game on each worker under way: the victim dies in the middle of one
            playing.extend(observer.processing(workers=[names["two"]])[names["two"]])
            victim.send_signal(signal.SIGKILL)

    pool = ClusterPool(cluster.address, report=lines.append)
    pool.connect()
    assert pool.threads == 2
    run_matches([match], on_game=on_game, pool=pool)
    observer.close()
    assert victim.wait(timeout=10) == -signal.SIGKILL
    assert any(key.startswith("perspecto-vs-pemm-s5-") for key in playing), playing
    assert sorted(seen) == list(range(6)) and len(seen) == 6
    assert match.consumed_pairs == 3
    run_matches([local := search_match(tmp_path / "local", pairs=3, nodes=1500, move_limit=60)])
    assert records_of(tmp_path / "remote") == records_of(tmp_path / "local")
    assert match.pair_scores == local.pair_scores


@pytest.mark.slow
def test_a_scheduler_that_goes_away_ends_the_run_saved_and_resume_finishes_it(cluster: Cluster,
                                                                              tmp_path: Path) -> None:
    cluster.add_worker("one")
    cluster.wait_for_workers(1)
    args = ("match", "perspecto", "pemm", "--nodes", "1500", "--move-limit", "60", "--games", "8", "--seed", "6")
    records = tmp_path / "records"
    run = subprocess.Popen([sys.executable, "-m", "bot.cli", *args, "--cluster", cluster.address, "--records",
                            str(records)], cwd=REPO, env=environment(), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    progress = records / "perspecto-vs-pemm-s6.progress.jsonl"
    deadline = time.monotonic() + 240
    while not progress.exists() or len(progress.read_text().splitlines()) < 3:  # the run's key and two games
        assert time.monotonic() < deadline and run.poll() is None, "no game finished"
        time.sleep(0.2)
    cluster.scheduler.send_signal(signal.SIGKILL)
    out, _ = run.communicate(timeout=120)
    assert run.returncode == 1, out
    assert f"the Dask scheduler at {cluster.address} went away" in out.replace("\n", " ")
    assert "--seed 6 --resume carries on" in out.replace("\n", " ")
    saved = len(progress.read_text().splitlines()) - 1
    assert 2 <= saved < 8
    resumed = perspecto(*args, "--concurrency", "1", "--records", str(records), "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resumed with {saved} saved games" in resumed.stdout
    whole = perspecto(*args, "--concurrency", "1", "--records", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert records_of(records) == records_of(tmp_path / "whole")


def test_without_dask_installed_the_cluster_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed: importing it fails
    with pytest.raises(ClusterError, match=r"pip install 'perspecto\[cluster\]'"):
        ClusterPool("tcp://127.0.0.1:1").connect()
