"""``perspecto gauntlet --cluster tcp://HOST:8786``: the gauntlet's games on the workers of a Dask cluster
(docs/lab.md, "The gauntlet on a cluster").

The connection and the workers' check are the lab's (engine_ext/lab/cluster.py, ``ClusterWorkers``); what
the gauntlet adds is that a game needs more than the same Perspecto: the referee and the opponent's
program, on the worker's own disk. So each worker is asked, before it gets a game, what it has
(``worker_kit``, a task pinned to it):

- its identity (version and bench signature: as ``perspecto match --cluster``), and each of our sides'
  profiles as its configuration reads it (a digest: a worker whose ``perspecto`` profile says something
  else plays another engine whatever its signature; a paired run's two arms, both profiles);
- through the referee: the referee it finds (its own ``$PERSPECTO_UCC2012_REFEREE``, else the build's
  beside its ``$PERSPECTO_UCC2012``, else the client's ``--referee`` path if that is on it, else
  ``$PERSPECTO_UCC_DIR/stratego``) and our sides, the ``perspecto ucc`` wrapper its own installation writes
  for each (``perspecto ucc --write-wrapper``, in the worker's folder: the program the referee starts is the
  worker's, never a path of the client's);
- every opponent's program as the worker finds it (the profile's command under the worker's
  environment, or ``$PERSPECTO_UCC_DIR``: bot/ucc/engine.py).

A worker that lacks our side, the referee or every program is refused by name; one that lacks some
programs is accepted and named with what it lacks, and gets none of those games (a game is submitted
with ``workers=`` the accepted workers that have its program). An opponent no worker can play stops the
run before any game. Every game checks its worker's identity again before it plays (the second net).

The games are jobs (``GauntletJob``, bot/commands/gauntlet_run/jobs.py) that ``ClusterExecutor`` plays with the
``concurrent.futures.Executor`` interface the gauntlet's run loop uses locally: on the worker the job's
paths (referee, programs, logs) are replaced by the worker's own, the game is played by the gauntlet's
own ``play_gauntlet_job``, and the outcome (the record inside) comes back to the client, which saves it
under ``--records``, with the referee's files of the game (where a local run keeps them: ``referee/``).
A worker killed mid-game loses nothing: Dask plays the game again elsewhere, and its future is resolved
once (a game that comes back twice counts once).

A paired run (``--baseline PROFILE``) is the same games with two of our sides (``Ours``: the candidate's and
the baseline's, each its own wrapper and memory on each worker). What to play stays on the client: the
paired schedule (engine_ext/lab/paired.py) takes the results in whatever order they come back and allocates
and tests by rounds of complete results only, so the slots and the verdict do not depend on which worker was
fast. A baseline from a git revision is a worktree of the client's, which no worker has: refused.

This module does not import the gauntlet's other modules (bot/commands/gauntlet_run/jobs.py and
bot/commands/gauntlet.py import it for ``--cluster``): the gauntlet's own functions a worker needs
(``find_referee``, ``program_path``, ``write_our_wrapper``) are handed over in ``Tools``, module functions
pickled by reference and run by the worker's installation.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import hashlib
import itertools
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, Protocol, TypeVar

from rich.console import Console

from bot.profiles import load_configuration
from bot.settings import config_dir
from bot.ucc.engine import UCC_DIR_ENV, UccEngineParams
from engine_ext.lab.cluster import (
    ClusterError,
    ClusterLost,
    ClusterWorkers,
    Identity,
    WorkerMismatch,
    check_identity,
    worker_identity,
)

P = ParamSpec("P")
T = TypeVar("T")

PLAYS = "gauntlet"  # what the workers play, in the cluster's lines
WORKER_FOLDER = "perspecto-gauntlet"  # under a worker's local directory: a folder a run
WAIT_SLICE = 0.5  # seconds the executor waits on the games at a time (a finished game is taken within it)
REFEREE_FILES = (".log", ".out", ".err")  # what the referee leaves of a game (bot/ucc/referee.py), sent back


class Program(Protocol):
    """An opponent as the gauntlet names it (``opponents.Opponent``)."""

    @property
    def name(self) -> str: ...

    @property
    def params(self) -> UccEngineParams: ...


@dataclass(frozen=True)
class Tools:
    """The gauntlet's own ways of finding its programs (bot/commands/gauntlet_run/referee_route.py), run on the
    worker."""

    find_referee: Callable[[Path | None], Path]  # None: from the environment ($PERSPECTO_UCC2012_REFEREE, ...)
    program_path: Callable[[Any, Path], Path]  # what the referee runs for an opponent, in a folder
    write_wrapper: Callable[[Path, str, float, str | None, Path | None], None]  # perspecto ucc --write-wrapper


@dataclass(frozen=True)
class Ours:
    """One of our sides: its player's name in the records (a game's ``ours``), the profile it plays, the
    folder of its memory of the run's games on each worker (with ``Needs.learn``), and its own seconds an
    answer in a paired run at time odds (None: ``Needs.move_time``)."""

    name: str
    profile: str
    state: str = "state"
    move_time: float | None = None

    @property
    def wrapper(self) -> str:
        """The file name of its ``perspecto ucc`` wrapper in the worker's ``referee/`` folder."""
        return f"{self.name}-ucc"


@dataclass(frozen=True)
class Needs:
    """What a run asks of every worker (picklable: sent with the probe and with every game)."""

    run: str  # the run's name: its folder on each worker
    via: str  # "referee" or "lab"
    ours: tuple[Ours, ...]  # our sides: one, or a paired run's candidate and baseline
    config: str | None  # the client's configuration folder (a worker without it reads its own)
    referee: str | None  # the client's --referee, tried on a worker after the worker's own settings
    opponents: tuple[Program, ...]
    move_time: float
    learn: bool  # our wrapper keeps a memory of the run's games (on each worker: of the games it played)
    tools: Tools

    def side(self, name: str) -> Ours:
        """Our side whose player is ``name`` (a job's ``ours``)."""
        return next(o for o in self.ours if o.name == name)

    @property
    def profiles(self) -> list[str]:
        """Our sides' profiles, each once."""
        return list(dict.fromkeys(o.profile for o in self.ours))


@dataclass(frozen=True)
class Kit:
    """A worker's answer to ``Needs``: what it has for the gauntlet."""

    identity: Identity
    profiles: Mapping[str, str | None]  # our profile -> its digest as the worker reads it (None: unread)
    programs: dict[str, str]  # opponent -> the command the worker runs for it
    missing: dict[str, str]  # opponent -> why the worker cannot run it
    referee: str | None  # the referee it runs (the lab's route: none needed)
    problems: tuple[str, ...]  # what stops it playing any game: no referee, our side does not start, ...


# --- on the worker ----------------------------------------------------------------------------------------


def _folder(run: str) -> Path:
    """The run's folder on this worker: under the worker's local directory (its own disk, one a worker)."""
    try:
        from distributed import get_worker

        base = Path(get_worker().local_directory)
    except (ImportError, ValueError):  # not in a worker's task (a test calling it directly)
        base = Path(tempfile.gettempdir())
    folder = base / WORKER_FOLDER / run
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _config_here(config: str | None) -> str | None:
    """The client's configuration folder if this machine has it at the same path, else this worker's own
    ($PERSPECTO_CONFIG_DIR or ./config), else None (the built-in profiles)."""
    for candidate in (Path(config) if config else None, config_dir(None)):
        if candidate is not None and candidate.is_dir():
            return str(candidate.resolve())
    return None


def profile_digest(ours: str, config: str | None) -> str:
    """Our profile as ``config`` reads it, in 12 hex digits: equal on two machines, the same settings."""
    _settings, profiles = load_configuration(config)
    text = profiles.get(ours).model_dump_json()
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _referee_here(needs: Needs) -> Path:
    """The referee this worker runs (the order in the module's docstring); a ``FileNotFoundError`` saying
    where it looked."""
    try:
        return needs.tools.find_referee(None)
    except Exception as exc:  # the gauntlet's GauntletError: no setting, or the setting names no program
        own = str(exc)
    tried = [own]
    candidates = [Path(needs.referee)] if needs.referee else []
    if os.environ.get(UCC_DIR_ENV):
        candidates.append(Path(os.environ[UCC_DIR_ENV]) / (Path(needs.referee).name if needs.referee
                                                           else "stratego"))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
        tried.append(f"no {path}")
    raise FileNotFoundError("; ".join(tried))


_wrappers: dict[tuple[str, Ours, float, str | None, bool], Path] = {}
_wrappers_lock = threading.Lock()


def _our_program_here(needs: Needs, ours: Ours) -> Path:
    """One of our sides on this worker: the wrapper its own ``perspecto ucc --write-wrapper`` writes, once a
    run (the probe writes it; a game on a worker that never answered the probe writes it then)."""
    key = (needs.run, ours, needs.move_time, needs.config, needs.learn)
    with _wrappers_lock:  # a worker of several threads: one writer
        path = _wrappers.get(key)
        if path is None or not path.is_file():
            folder = _folder(needs.run)
            path = folder / "referee" / ours.wrapper
            path.parent.mkdir(parents=True, exist_ok=True)
            move_time = needs.move_time if ours.move_time is None else ours.move_time
            needs.tools.write_wrapper(path, ours.profile, move_time, _config_here(needs.config),
                                      folder / ours.state if needs.learn else None)
            _wrappers[key] = path
        return path


def worker_kit(needs: Needs) -> Kit:
    """The probe: what this worker has for the run (never raises for what it lacks: it says so)."""
    identity = worker_identity()
    problems: list[str] = []
    profiles: dict[str, str | None] = {}
    for name in needs.profiles:
        try:
            profiles[name] = profile_digest(name, _config_here(needs.config))
        except Exception as exc:  # a configuration that does not load, a profile it lacks
            profiles[name] = None
            problems.append(f"cannot read our profile {name}: {exc}")
    programs: dict[str, str] = {}
    missing: dict[str, str] = {}
    for opponent in needs.opponents:
        try:
            programs[opponent.name] = " ".join(opponent.params.argv())
        except Exception as exc:  # UccCommandError: a variable not set, no program at the path
            missing[opponent.name] = str(exc)
    referee: str | None = None
    if needs.via == "referee":
        try:
            referee = str(_referee_here(needs))
        except FileNotFoundError as exc:
            problems.append(f"no referee ({exc})")
        for ours in needs.ours if not problems else ():
            try:
                _our_program_here(needs, ours)
            except Exception as exc:  # the gauntlet's GauntletError with perspecto ucc's own words
                problems.append(f"cannot write our side {ours.name}: {exc}")
    return Kit(identity, profiles, programs, missing, referee, tuple(problems))


def play_here(play: Callable[[Any], Any], job: Any, needs: Needs, expected: Identity) -> tuple[Any, dict[str, str]]:
    """The task of one game on a worker: check it is still the client's Perspecto, give the job this
    worker's paths (through the referee: its referee, our side and the opponent's program, logs in its
    folder), play it with the gauntlet's ``play``; send back the outcome under the client's job, and the
    referee's files of the game (its log, its output, the programs' stderr: file name -> text), which the
    client keeps where a local run keeps them (a worker's folder goes when the worker stops)."""
    check_identity(expected, PLAYS)
    if needs.via != "referee":
        return dataclasses.replace(play(job), job=job), {}
    folder = _folder(needs.run) / "referee"
    folder.mkdir(parents=True, exist_ok=True)
    opponent = next(o for o in needs.opponents if o.name == job.opponent)
    local = dataclasses.replace(job, referee=_referee_here(needs),
                                our_program=_our_program_here(needs, needs.side(job.ours)),
                                opponent_program=needs.tools.program_path(opponent, folder), work=folder)
    outcome = play(local)
    files = {f"{job.game_id}{suffix}": (folder / f"{job.game_id}{suffix}").read_text(errors="replace")
             for suffix in REFEREE_FILES if (folder / f"{job.game_id}{suffix}").is_file()}
    return dataclasses.replace(outcome, job=job), files


# --- on the client: the workers -------------------------------------------------------------------------


class GauntletWorkers(ClusterWorkers):
    """The cluster's workers checked for the gauntlet: each accepted one with the programs it can run."""

    def __init__(self, address: str, needs: Needs, report: Callable[[str], None] = lambda line: None,
                 **timing: float) -> None:
        self.needs = needs
        self.profiles = {name: profile_digest(name, needs.config) for name in needs.profiles}
        super().__init__(address, report=report, work=PLAYS, **timing)

    def probe(self) -> Callable[[], Any]:
        return functools.partial(worker_kit, self.needs)

    def verdict(self, answer: Any) -> str | None:
        if not isinstance(answer, Kit):
            return f"cannot tell what it has ({answer!r})"
        mismatch = super().verdict(answer.identity)
        if mismatch is not None:
            return mismatch
        if answer.problems:
            return "; ".join(answer.problems)
        for name, digest in self.profiles.items():
            theirs = answer.profiles.get(name)
            if theirs != digest:
                return (f"its profile {name} is not this gauntlet's (digest {theirs}, here {digest}): give it the "
                        "client's configuration")
        if not answer.programs:
            return "none of the programs: " + "; ".join(f"{n}: {why}" for n, why in answer.missing.items())
        return None

    def admitted(self, address: str, answer: Any) -> None:
        if answer.missing:
            self.report(f"worker {address} lacks {', '.join(answer.missing)}: it plays none of those games ("
                        + "; ".join(f"{name}: {why}" for name, why in answer.missing.items()) + ")")

    def able(self, opponent: str) -> list[str]:
        """The accepted workers that can run ``opponent``'s program."""
        return sorted(a for a in self.accepted if opponent in self.answers[a].programs)

    def connect(self) -> None:
        """``ClusterWorkers.connect``, and a ``ClusterError`` for an opponent no accepted worker can play."""
        super().connect()
        unplayable = [o.name for o in self.needs.opponents if not self.able(o.name)]
        if unplayable:
            reasons = {a: kit.missing for a, kit in self.answers.items()}
            self.close()
            raise ClusterError(
                f"no worker of the cluster at {self.address} can play {', '.join(unplayable)}: "
                + "; ".join(f"{a}: " + "; ".join(f"{n}: {why[n]}" for n in unplayable if n in why)
                            for a, why in reasons.items()))


# --- on the client: the games ---------------------------------------------------------------------------


@dataclass(eq=False)
class _Game:
    """A submitted job: its future (the run loop's), the function and job, its place in the submissions."""

    future: Future[Any]
    play: Callable[[Any], Any]
    job: Any
    order: int


class ClusterExecutor(Executor):
    """``submit(play_gauntlet_job, job)`` plays the job on an accepted worker that has its opponent's
    program. A future stays pending until its game is back (so the run loop's ``cancel`` works on a game
    under way: it is dropped on the cluster), then holds the outcome, or a ``ClusterError``
    (``ClusterLost`` for every game not back when the scheduler went away). One thread here waits on
    the games and looks at the workers every ``poll_seconds`` (joined ones are asked, games left waiting
    on workers that left are handed out again). The workers' connection is the caller's to close."""

    def __init__(self, workers: GauntletWorkers) -> None:
        self._workers = workers
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._orders = itertools.count()
        self._waiting: list[_Game] = []  # submitted, no able worker at the moment
        self._running: dict[Any, _Game] = {}  # the Dask future of a game handed out -> the game
        self._placed: dict[str, frozenset[str]] = {}  # a handed-out game's key -> the workers it may run on
        self._closing = False
        self._failure: ClusterError | None = None
        self._thread = threading.Thread(target=self._serve, name="gauntlet-cluster", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        if len(args) != 1 or kwargs:
            raise TypeError("the cluster plays one job a call: submit(play, job)")
        future: Future[T] = Future()
        with self._lock:
            if self._closing:
                raise RuntimeError("cannot submit a game after shutdown")
            if self._failure is not None:
                future.set_exception(self._failure)
                return future
            self._hand_out(_Game(future, fn, args[0], next(self._orders)))
        self._wake.set()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closing = True
            if cancel_futures:
                for game in [*self._waiting, *self._running.values()]:
                    game.future.cancel()
        self._wake.set()
        if wait:
            self._thread.join()

    # --- the thread -----------------------------------------------------------------------------------

    def _hand_out(self, game: _Game) -> None:
        """Give ``game`` to the cluster, restricted to the accepted workers that can play it; none: it
        waits for one (under the lock)."""
        able = self._workers.able(game.job.opponent)
        if not able:
            self._waiting.append(game)
            return
        key = f"{game.job.game_id}-{os.urandom(4).hex()}"
        future = self._workers.client.submit(
            play_here, game.play, game.job, self._workers.needs, self._workers.identity, key=key, workers=able,
            allow_other_workers=False, pure=False,
            retries=1)  # an exception in a game (not a lost worker, which Dask replays by itself): once more
        self._placed[key] = frozenset(able)
        self._running[future] = game

    def _serve(self) -> None:
        next_look = time.monotonic() + self._workers.poll_seconds
        try:
            while True:
                with self._lock:
                    self._drop_cancelled()
                    if self._closing and not self._running and not self._waiting:
                        return
                    running = list(self._running)
                if running:
                    done = self._workers.wait(running, WAIT_SLICE, "FIRST_COMPLETED")
                else:
                    self._wake.wait(WAIT_SLICE)
                    self._wake.clear()
                    done = set()
                if self._workers.lost():
                    raise self._workers.gone()
                with self._lock:
                    for future in sorted(done, key=lambda f: self._running[f].order):
                        self._take(future)
                    if time.monotonic() >= next_look:  # every few seconds, however fast the games finish
                        self._look()
                        next_look = time.monotonic() + self._workers.poll_seconds
        except ClusterError as exc:
            self._fail(exc)
        except Exception as exc:  # a bug here must not leave the run loop waiting for ever
            self._fail(ClusterError(f"the cluster's games stopped: {exc!r}"))

    def _drop_cancelled(self) -> None:
        """Games the run loop cancelled: dropped from the queue and from the cluster."""
        self._waiting = [g for g in self._waiting if not g.future.cancelled()]
        for future, game in list(self._running.items()):
            if game.future.cancelled():
                del self._running[future]
                self._placed.pop(future.key, None)
                future.cancel()

    def _take(self, future: Any) -> None:
        game = self._running.pop(future)
        self._placed.pop(future.key, None)
        if future.status == "cancelled":  # not by us (we drop the games we cancel): the scheduler is gone
            raise self._workers.gone()
        try:
            outcome, files = future.result()
            self._keep(game.job, files)
        except WorkerMismatch as exc:
            self._settle(game, error=ClusterError(f"game {game.job.game_id}: {exc}"))
        except Exception as exc:  # KilledWorker (it killed too many workers) or a bug in a game
            if self._workers.lost():
                raise self._workers.gone() from None
            self._settle(game, error=ClusterError(f"game {game.job.game_id} failed on the cluster: {exc!r}"))
        else:
            self._settle(game, outcome=outcome)
        finally:
            future.release()

    @staticmethod
    def _keep(job: Any, files: dict[str, str]) -> None:
        """The referee's files of a game, where the local run writes them (the job's folder, here)."""
        if files:
            job.work.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (job.work / name).write_text(text, encoding="utf-8")

    @staticmethod
    def _settle(game: _Game, *, outcome: Any = None, error: BaseException | None = None) -> None:
        if not game.future.set_running_or_notify_cancel():
            return  # cancelled by the run loop meanwhile
        if error is not None:
            game.future.set_exception(error)
        else:
            game.future.set_result(outcome)

    def _look(self) -> None:
        """Joined and lost workers (``ClusterWorkers.look``); then games waiting for a worker, and games
        placed only on workers that are gone, handed out to the accepted ones that can play them."""
        self._workers.look()
        stale = [f for f, g in self._running.items()
                 if f.status == "pending" and not self._placed.get(f.key, frozenset()) & set(
                     self._workers.able(g.job.opponent))]
        again = self._waiting
        self._waiting = []
        for future in stale:
            again.append(self._running.pop(future))
            self._placed.pop(future.key, None)
            future.cancel()
        for game in sorted(again, key=lambda g: g.order):
            self._hand_out(game)

    def _fail(self, error: ClusterError) -> None:
        """The run cannot go on here: every game not back gets ``error`` (the run loop stops on it)."""
        with self._lock:
            self._failure = error
            games = [*self._waiting, *self._running.values()]
            self._waiting, self._running = [], {}
        for game in games:
            self._settle(game, error=error)


def connect_workers(address: str, *, records: Path, via: str, ours: Sequence[Ours], config: str | None,
                    referee: Path | None, opponents: Sequence[Program], move_time: float, learn: bool, tools: Tools,
                    report: Callable[[str], None]) -> GauntletWorkers:
    """Connect to the cluster at ``address`` and check its workers for a run writing to ``records``: a
    ``ClusterError`` for no scheduler, no worker that can play, an opponent none can play. The caller
    closes it at the end of the run (``ClusterExecutor`` plays its games)."""
    needs = Needs(run=f"{records.name}-{os.urandom(3).hex()}", via=via, ours=tuple(ours), config=config,
                  referee=str(referee) if referee else None, opponents=tuple(opponents), move_time=move_time,
                  learn=learn, tools=tools)
    workers = GauntletWorkers(address, needs, report=report)
    workers.connect()
    return workers


# --- the command's side (bot/commands/gauntlet.py) -----------------------------------------------------------


def connect_cluster(args: argparse.Namespace, ours: Sequence[Ours], opponents: Sequence[Program], records: Path,
                    console: Console, tools: Tools) -> GauntletWorkers | None:
    """``--cluster``: the workers checked for this run of our sides ``ours``, a line for each one refused or
    lacking a program and one for the cluster; None (the reason printed) when the run cannot start there."""

    def report(line: str) -> None:
        console.print(f"[yellow]{line}[/yellow]", highlight=False, soft_wrap=True)

    try:
        workers = connect_workers(args.cluster, records=records, via=args.via, ours=ours,
                                  config=args.config, referee=args.referee, opponents=opponents,
                                  move_time=args.move_time, learn=not args.no_learn, tools=tools, report=report)
    except ClusterError as exc:
        console.print(f"[red]{exc}[/red]", highlight=False, soft_wrap=True)
        return None
    threads = workers.threads
    console.print(f"{threads} worker thread{'' if threads == 1 else 's'} on the cluster at {args.cluster} "
                  f"({len(workers.accepted)} worker{'' if len(workers.accepted) == 1 else 's'} accepted, "
                  f"{len(workers.refused)} refused)", highlight=False, soft_wrap=True)
    return workers


def cluster_stopped(error: Exception, records: Path, console: Console) -> int:
    """The line of a run the cluster ended (the finished games' records are saved) and its exit code: 1 for
    a scheduler that went away (start it again and carry on), 2 for a game that failed there."""
    console.print(f"[red]{error}: the games finished so far are saved in {records}[/red]", highlight=False,
                  soft_wrap=True)
    return 1 if isinstance(error, ClusterLost) else 2


__all__ = ["ClusterError", "ClusterExecutor", "ClusterLost", "GauntletWorkers", "Kit", "Needs", "Ours", "Tools",
           "cluster_stopped", "connect_cluster", "connect_workers", "play_here", "worker_kit"]
