"""Running the suite: each entry's position rebuilt as our side saw it, the engine asked for its move as in a
game, the move judged by the entry's condition; entries in parallel over worker processes.

As in a game under the UCC referee (bot/ucc/player.py), the engine is the profile's facade (``Engine``), told
of the game at our first turn and of the moves since at each turn after (engine_ext/lab/suite/view.py), and
asked for its move under the time manager's deadlines for the referee's per-move time (``TimeLimits.for_ucc``):
at -T 2 it aims at a second and never passes 1.75 s. ``nodes`` adds a node budget (the default tests' smoke
run: the same move on any machine when the deadlines do not bind).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine_ext.engine.facade import Engine, EngineMove
from engine_ext.engine.timeman import TimeLimits, TimeManager
from engine_ext.lab.runner import LabProfile, start_worker, worker_logging
from engine_ext.lab.suite.entries import CATEGORIES, Entry, load_record
from engine_ext.lab.suite.errors import EngineChoiceError, SuiteError
from engine_ext.lab.suite.knowledge import Knowledge
from engine_ext.lab.suite.view import side_view
from engine_ext.rules.game import Game


@dataclass(frozen=True)
class SuiteSettings:
    """How the engine is asked: the profile (its ``--param``s merged in), the referee's time a move, an
    optional node budget, the engine's seed."""

    profile: LabProfile
    move_time: float
    nodes: int | None = None
    seed: int = 1


@dataclass(frozen=True)
class Verdict:
    """One entry's result: the move the engine chose and whether it kept the condition (``error``: the
    position could not be asked, which counts as failed)."""

    entry: str
    category: str
    passed: bool
    move: str = ""
    seconds: float = 0.0
    depth: int = 0
    error: str = ""


def facade_of(profile: LabProfile, seed: int) -> Engine:
    """The profile's engine as the facade: the suite asks it as the bot does, and reads what it saw."""
    engine = profile.create_engine(seed)
    if isinstance(engine, EngineMove):
        return engine.engine
    raise EngineChoiceError(f"profile {profile.name!r} plays with engine {profile.engine!r}, not the facade's "
                            "search: the suite asks Perspecto's engine")


def primed_view(entry: Entry, record_path: Path, engine: Engine) -> Game:
    """The entry's position as our side saw it, the engine told of the game as it was in play."""
    record = load_record(record_path)
    side = entry.our_side
    started = False

    def turn(view: Game) -> None:
        # As in play: the facade starts the game at its first call (our first turn), then catches up.
        nonlocal started
        if started:
            engine.observe(view)
        else:
            engine.start_game(view, side)
            started = True

    view = side_view(record, entry.ply, side, on_turn=turn)
    turn(view)
    return view


def judge(entry: Entry, record_path: Path, settings: SuiteSettings) -> Verdict:
    """Ask the engine for its move at the entry's position and judge it (a worker's job)."""
    try:
        engine = facade_of(settings.profile, settings.seed)
        view = primed_view(entry, record_path, engine)
        known = Knowledge.from_view(view, entry.our_side)
        timer = TimeManager(TimeLimits.for_ucc(settings.profile, settings.move_time))
        times = timer.start_move(view.ply)
        choice = engine.choose_move(view, times.soft_deadline, times.hard_deadline, nodes=settings.nodes)
        timer.finish_move(times)
    except SuiteError as exc:
        return Verdict(entry.id, entry.category, False, error=str(exc))
    return Verdict(entry.id, entry.category, entry.passes(known, choice.move), str(choice.move),
                   round(choice.elapsed, 3), choice.depth)


@dataclass
class CategoryScore:
    total: int = 0
    passed: int = 0
    failed: list[str] = field(default_factory=list)


def scores(verdicts: Iterable[Verdict]) -> dict[str, CategoryScore]:
    """Per category (in the table's order; only those with entries): totals, passes, the failed ids."""
    out: dict[str, CategoryScore] = {}
    by_category: dict[str, list[Verdict]] = {}
    for verdict in verdicts:
        by_category.setdefault(verdict.category, []).append(verdict)
    for name in [*CATEGORIES, *sorted(set(by_category) - set(CATEGORIES))]:
        group = by_category.get(name)
        if not group:
            continue
        score = out[name] = CategoryScore(total=len(group))
        for verdict in sorted(group, key=lambda v: v.entry):
            if verdict.passed:
                score.passed += 1
            else:
                score.failed.append(verdict.entry)
    return out


def scores_json(verdicts: list[Verdict]) -> dict[str, Any]:
    """``{"categories": {NAME: {"total": N, "passed": P, "failed": [ID, ...]}}}`` and every entry's verdict."""
    return {
        "categories": {name: {"total": s.total, "passed": s.passed, "failed": s.failed}
                       for name, s in scores(verdicts).items()},
        "entries": [{"id": v.entry, "category": v.category, "passed": v.passed, "move": v.move,
                     "seconds": v.seconds, "depth": v.depth, **({"error": v.error} if v.error else {})}
                    for v in sorted(verdicts, key=lambda v: v.entry)],
    }


def run_entries(jobs: list[tuple[Entry, Path]], settings: SuiteSettings, workers: int,
                done: Callable[[Verdict], None] = lambda verdict: None) -> list[Verdict]:
    """Every job's verdict, ``workers`` positions at a time (one: in this process); ``done`` after each."""
    verdicts: list[Verdict] = []
    if workers <= 1:
        for entry, path in jobs:
            verdicts.append(judge(entry, path, settings))
            done(verdicts[-1])
        return verdicts
    # forkserver, as the lab's pool: workers start from a clean interpreter (engine_ext/lab/runner.py).
    context = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                                          else "spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=start_worker,
                             initargs=worker_logging()) as pool:
        pending: set[Future[Verdict]] = {pool.submit(judge, entry, path, settings) for entry, path in jobs}
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    verdicts.append(future.result())
                    done(verdicts[-1])
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
    return verdicts
