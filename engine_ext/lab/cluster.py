"""The lab on a Dask distributed cluster: ``perspecto match ... --cluster tcp://HOST:8786``.

A scheduler (``dask scheduler``) and workers on any machines that reach it (``dask worker
tcp://HOST:8786 --nworkers N --nthreads 1``) play the match's games; this process, the client, keeps the
match: it hands out the games a few ahead of the workers (``Client.submit``), takes them back as they
finish (``distributed.wait``) and gives them to the same ``finished`` callback as the local process pool,
so everything ``runner.run_matches`` guarantees holds here too (games consumed pair by pair in order of
index, the SPRT read in schedule order, records the same for the same seed whatever the workers).

What Dask does for us and what we add:

- A worker that dies mid-game: the scheduler plays its games again on another worker (up to
  ``distributed.scheduler.allowed-failures`` times, then the game fails with ``KilledWorker`` and the run
  stops, saved). A game that comes back twice is counted once: ``Match.add`` keys games by their index.
- The records are written here, not on a worker's disk: a worker sends the record back with the result
  (``runner.play_game_with_record``).
- A worker must run the same Perspecto: each one is asked for its version and bench signature
  (a ``worker_identity`` task pinned to it) before it gets a game, and one that differs is left out by name
  (games are submitted with ``workers=`` the accepted ones); a worker that joins later is asked when it
  appears. As a second net, every game checks its worker's identity before it plays. The connection and
  this check are ``ClusterWorkers``, shared with ``perspecto gauntlet --cluster`` (which asks its workers
  more: bot/commands/gauntlet_run/cluster.py); ``ClusterPool`` plays the lab's games on them.
- A scheduler that goes away: the games finished so far are already saved (the caller's progress log,
  engine_ext/lab/progress.py), the run ends with ``ClusterLost`` and ``--resume`` carries on.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import structlog

from engine_ext.lab.runner import GameJob, GameOutcome, LabError, play_game_with_record
from engine_ext.rules.record import GameRecord

log = structlog.get_logger()

# Test hook (tests/test_lab_cluster.py): a worker started with PERSPECTO_LAB_WORKER_IDENTITY="VERSION:SIGNATURE"
# reports that identity instead of its own, as a worker of another Perspecto would.
IDENTITY_ENV = "PERSPECTO_LAB_WORKER_IDENTITY"
# The depth of the identity's bench signature: the bench positions (engine_ext/lab/signature.py) at a
# depth that takes a second or two, not the full bench's; a change to the search moves it as surely.
IDENTITY_DEPTH = 5
# How often the client looks for workers that joined (and games that finished) while it waits.
POLL_SECONDS = 2.0
# Seconds the workers have to tell their identity at the start (a bench search on a busy machine).
IDENTITY_SECONDS = 120.0
# Seconds to reach the scheduler at the start.
CONNECT_SECONDS = 20.0
INSTALL_HINT = "pip install 'perspecto[cluster]' (Dask distributed)"


class ClusterError(LabError):
    """The cluster cannot play the match (no scheduler, no usable worker, a game that failed on it)."""


class ClusterLost(ClusterError):
    """The scheduler went away during the run; the games finished before are saved."""


@dataclass(frozen=True)
class Identity:
    """What a worker must share with the client: the Perspecto version and the bench signature."""

    version: str
    signature: int

    def describe(self) -> str:
        return f"perspecto {self.version}, signature {self.signature} (bench depth {IDENTITY_DEPTH})"


def _perspecto_version() -> str:
    try:
        return version("perspecto")
    except PackageNotFoundError:
        return "0.0.0+source"


@functools.cache
def _own_identity() -> Identity:
    from engine_ext.lab.signature import bench_signature  # the compiled search: loaded only when asked

    return Identity(_perspecto_version(), bench_signature(IDENTITY_DEPTH).nodes)


def worker_identity() -> Identity:
    """This process's identity (once a process: the signature is a search), or the faked one of the test
    hook ``PERSPECTO_LAB_WORKER_IDENTITY``."""
    fake = os.environ.get(IDENTITY_ENV)
    if fake:
        fake_version, _, signature = fake.rpartition(":")
        return Identity(fake_version, int(signature))
    return _own_identity()


class WorkerMismatch(RuntimeError):
    """Raised by a game on a worker whose identity is not the client's (the second net)."""


def check_identity(expected: Identity, work: str = "match") -> None:
    """The second net, run by every game on its worker before it plays: a ``WorkerMismatch`` if this worker
    is not the client's Perspecto (``work`` names what the client plays: "match", "gauntlet")."""
    own = worker_identity()
    if own != expected:
        raise WorkerMismatch(f"this worker runs {own.describe()}; the {work} needs {expected.describe()}")


def play_on_worker(job: GameJob, expected: Identity) -> tuple[GameOutcome, str]:
    """The task a worker runs: check the worker is the client's Perspecto, play the game, send back the
    outcome and the record as JSON text."""
    check_identity(expected)
    outcome, record = play_game_with_record(job)
    return outcome, record.to_json()


def _distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ClusterError(f"--cluster needs Dask distributed, which is not installed: {INSTALL_HINT}") from None
    return distributed


@dataclass
class ClusterWorkers:
    """A client of the scheduler at ``address`` and the workers it has checked: each worker is asked a
    ``probe`` (a task pinned to it) before it gets anything, and ``verdict`` reads the answer (None: accepted;
    else why not). The lab's check is the identity (``ClusterPool``); the gauntlet asks for more (the UCC
    programs a worker has: bot/commands/gauntlet_run/cluster.py). ``report`` gets the lines a user should see (a
    worker refused, a worker lost); ``work`` names what the workers play in those lines ("match")."""

    address: str
    report: Callable[[str], None] = lambda line: None
    connect_seconds: float = CONNECT_SECONDS
    poll_seconds: float = POLL_SECONDS
    identity_seconds: float = IDENTITY_SECONDS
    work: str = "match"

    def __post_init__(self) -> None:
        self.identity = worker_identity()
        self.accepted: dict[str, int] = {}  # worker address -> its threads
        self.answers: dict[str, Any] = {}  # accepted worker address -> its answer to the probe
        self.refused: dict[str, str] = {}  # worker address -> why
        self._client: Any = None
        self._scheduler_lost = False
        self._asking: dict[str, Any] = {}  # worker address -> the future of its answer

    def probe(self) -> Callable[[], Any]:
        """The task each worker runs once, before it gets anything (picklable: a module's function or a
        ``functools.partial`` of one)."""
        return worker_identity

    def verdict(self, answer: Any) -> str | None:
        """Why a worker that answered ``answer`` to the probe may not play (None: it may)."""
        if not isinstance(answer, Identity):
            return f"cannot tell its Perspecto ({answer!r})"
        if answer != self.identity:
            return f"runs {answer.describe()}, this {self.work} {self.identity.describe()}"
        return None

    def admitted(self, address: str, answer: Any) -> None:
        """Called for a worker accepted with ``answer``: nothing more to say here (the gauntlet names what an
        accepted worker still lacks)."""

    # --- the connection and the workers ---------------------------------------------------------------

    def connect(self) -> None:
        """Reach the scheduler and check its workers; a ``ClusterError`` if none can play."""
        distributed = _distributed()
        try:
            self._client = distributed.Client(self.address, timeout=self.connect_seconds, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {self.address}: {exc}") from None
        self.check_workers(wait=self.identity_seconds)
        if not self.accepted:
            self.close()
            raise ClusterError(f"no worker of the cluster at {self.address} can play this {self.work}"
                               + (": " + "; ".join(f"{a}: {why}" for a, why in self.refused.items())
                                  if self.refused else " (none has joined it, or none answered in time)"))

    @property
    def threads(self) -> int:
        """Games the accepted workers play at a time."""
        return sum(self.accepted.values())

    @property
    def client(self) -> Any:
        """The Dask client (after ``connect``)."""
        if self._client is None:
            raise self.gone() if self._scheduler_lost else ClusterError("not connected to the cluster")
        return self._client

    def check_workers(self, wait: float = 0.0) -> None:
        """Note the workers that left; ask the ones not seen before the probe (a small task on each, in its
        own thread: the worker's event loop stays free); take the answers that are in, waiting up to
        ``wait`` seconds for them."""
        info = self._client.scheduler_info(n_workers=-1)["workers"]
        for gone in [a for a in self.accepted if a not in info]:
            del self.accepted[gone]
            self.answers.pop(gone, None)
            self.report(f"worker {gone} left the cluster; its games are played again elsewhere")
        probe = self.probe()
        for address in info:
            if address not in self.accepted and address not in self.refused and address not in self._asking:
                self._asking[address] = self._client.submit(
                    probe, key=f"perspecto-identity-{os.urandom(4).hex()}", workers=[address],
                    allow_other_workers=False, pure=False)
        if wait > 0 and self._asking:
            self.wait(list(self._asking.values()), wait, "ALL_COMPLETED")
        for address, future in list(self._asking.items()):
            if address not in info:
                del self._asking[address]
                future.release()
                continue
            if not future.done():
                continue
            del self._asking[address]
            answer = future.result() if future.status == "finished" else future.exception()
            future.release()
            why = self.verdict(answer)
            if why is None:
                self.accepted[address] = int(info[address].get("nthreads", 1))
                self.answers[address] = answer
                self.admitted(address, answer)
                continue
            self.refused[address] = why
            self.report(f"worker {address} refused: {why}")

    def close(self) -> None:
        if self._client is None:
            return
        quiet = logging.getLogger("distributed.client")
        level = quiet.level
        if self._scheduler_lost:  # its attempts to reconnect, cut short here, would log a traceback
            quiet.setLevel(logging.CRITICAL)
        try:
            self._client.close(timeout=5)
        except Exception as exc:  # closing a client whose scheduler is gone: nothing left to tidy
            log.debug("lab.cluster_close_failed", error=repr(exc))
        finally:
            quiet.setLevel(level)
        self._client = None

    def wait(self, futures: list[Any], seconds: float, return_when: str) -> set[Any]:
        """The futures done within ``seconds`` (``distributed.wait`` with this client)."""
        distributed = _distributed()
        try:
            with self._client.as_current():
                done, _ = distributed.wait(futures, timeout=seconds, return_when=return_when)
        except TimeoutError:
            return {f for f in futures if f.done()}
        except CancelledError:  # Dask cancels every future of a client that lost its scheduler
            raise self.gone() from None
        return set(done)

    def gone(self) -> ClusterLost:
        self._scheduler_lost = True
        return ClusterLost(f"the Dask scheduler at {self.address} went away")

    def lost(self) -> bool:
        """The client has lost its scheduler (it may be trying to reach it again, but every game it had
        under way is cancelled by then)."""
        return self._client is None or self._client.status != "running"

    def look(self) -> None:
        """``check_workers`` during a run: a scheduler that cannot be asked is gone."""
        try:
            self.check_workers()
        except (OSError, TimeoutError, CancelledError):
            raise self.gone() from None


@dataclass
class ClusterPool(ClusterWorkers):
    """Plays ``GameJob``s on the cluster's workers of the client's identity."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._placed: dict[str, frozenset[str]] = {}  # a submitted game's key -> the workers it may run on

    # --- the games ------------------------------------------------------------------------------------

    def _submit(self, job: GameJob) -> Any:
        key = f"{job.record_name}-{os.urandom(4).hex()}"
        self._placed[key] = frozenset(self.accepted)
        return self._client.submit(
            play_on_worker, job, self.identity, key=key, workers=sorted(self.accepted),
            allow_other_workers=False, pure=False,
            retries=1,  # an exception in a game (not a lost worker, which Dask replays by itself): once more
        )

    def run(self, jobs: Iterator[GameJob], finished: Callable[[GameOutcome], None],
            is_done: Callable[[str], bool]) -> None:
        """Play ``jobs`` (in order, ``2 * threads`` ahead of the workers), hand each outcome to ``finished``
        (its record saved first) and cancel queued games of a match that has decided."""
        if self._client is None:
            self.connect()
        pending: dict[Any, GameJob] = {}
        exhausted = False
        next_look = time.monotonic() + self.poll_seconds
        try:
            while True:
                while not exhausted and len(pending) < max(2, 2 * self.threads):
                    job = next(jobs, None)
                    if job is None:
                        exhausted = True
                    else:
                        pending[self._submit(job)] = job
                if not pending:
                    return
                done = self.wait(list(pending), self.poll_seconds, "FIRST_COMPLETED")
                if self.lost():
                    raise self.gone()
                for future in sorted(done, key=lambda f: pending[f].index):
                    job = pending.pop(future)
                    self._placed.pop(future.key, None)
                    self._take(future, job, finished)
                for future, job in list(pending.items()):
                    if is_done(job.match):
                        future.cancel()
                        del pending[future]
                        self._placed.pop(future.key, None)
                if time.monotonic() >= next_look:  # every few seconds, however fast the games finish
                    self._watch_workers(pending)
                    next_look = time.monotonic() + self.poll_seconds
        finally:
            for future in pending:
                future.release()
            self.close()

    def _take(self, future: Any, job: GameJob, finished: Callable[[GameOutcome], None]) -> None:
        if future.status == "cancelled":  # not by us (we drop the games we cancel): the scheduler is gone
            raise self.gone()
        try:
            outcome, record_json = future.result()
        except WorkerMismatch as exc:
            raise ClusterError(f"game {job.record_name}: {exc}") from None
        except Exception as exc:  # KilledWorker (it killed too many workers) or a bug in a game
            if self.lost():
                raise self.gone() from None
            raise ClusterError(f"game {job.record_name} failed on the cluster: {exc!r}") from None
        if job.records is not None:
            job.records.mkdir(parents=True, exist_ok=True)
            path = job.records / f"{job.record_name}.json"
            GameRecord.from_json(record_json).save(path)
            outcome = replace(outcome, record_path=path)
        finished(outcome)

    def _watch_workers(self, pending: dict[Any, GameJob]) -> None:
        """Look for joined and lost workers; games waiting only for workers that
        are gone are handed out again to the accepted ones."""
        self.look()
        if not self.accepted:
            return  # nobody to give them to yet; a worker that joins is asked on the next look
        stale = [f for f, _ in pending.items() if f.status == "pending" and not self._placeable(f)]
        for future in stale:
            job = pending.pop(future)
            self._placed.pop(future.key, None)
            future.cancel()
            pending[self._submit(job)] = job

    def _placeable(self, future: Any) -> bool:
        """The game may run on a worker still accepted (its restriction names one)."""
        return bool(self._placed.get(future.key, frozenset()) & set(self.accepted))
