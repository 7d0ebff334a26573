"""Answer by the deadline or send a legal fallback: how both front ends (the bot client of the Stratego AI
API, bot/daemon/client.py, and the UCC player, bot/ucc/player.py) ask their engine for a move.

The engine is blocking code. It runs on an ``EngineWorker`` thread under a ``SearchBudget`` whose deadlines
the time manager gave (engine_ext/engine/timeman.py); ``answer_by_deadline`` waits on the event loop until the hard
deadline at most. An engine that is late, raises, or returns a move that is not legal (``sendable_moves``:
legal under both readings of a repeated position) is answered for with a random legal move, and the
``Answer`` says why. A late engine is still running on its thread, so it is never asked again: the thread
is left to finish on its own and the engine is replaced (by a fresh one of the same profile; an outside UCC
program, which cannot join a game under way, by random moves for the rest of the game).
"""

from __future__ import annotations

import asyncio
import queue
import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog

from bot.daemon.engine_interface import MoveEngine, ProgramEngine, RandomEngine, SearchBudget
from engine_ext.rules.game import Game, Move

log = structlog.get_logger()

T = TypeVar("T")

_Job = tuple[Callable[..., Any], tuple[Any, ...], "asyncio.Future[Any]"]


class EngineWorker:
    """A daemon thread that runs engine calls one after another.

    A persistent thread answers in microseconds where starting one per move costs about a millisecond.
    When a call overruns, ``abandon`` leaves that thread to finish on its own (its result is dropped) and
    the next call starts a fresh thread, so an engine that ignores its stop event cannot delay later moves.
    Daemon threads also never keep the process alive at exit.
    """

    def __init__(self, name: str = "engine") -> None:
        self.name = name  # the threads' (bot/commands/ucc.py looks for a UCC player's still thinking at exit)
        self._jobs: queue.SimpleQueue[_Job | None] | None = None  # the current thread's; None: none yet

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run ``fn(*args)`` on the thread; the future settles on the calling event loop."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            threading.Thread(target=_work, args=(self._jobs,), name=self.name, daemon=True).start()
        self._jobs.put((fn, args, future))
        return future

    def abandon(self) -> None:
        """Let the current thread go once its current call returns; the next call gets a new one."""
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None


def _work(jobs: queue.SimpleQueue[_Job | None]) -> None:
    while (job := jobs.get()) is not None:
        fn, args, future = job
        value: Any = None
        error: BaseException | None = None
        try:
            value = fn(*args)
        except BaseException as exc:
            error = exc
        try:
            future.get_loop().call_soon_threadsafe(_settle, future, value, error)
        except RuntimeError:  # the loop has closed: nobody waits any more
            pass


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # cancelled: the caller stopped waiting
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)


@dataclass(frozen=True)
class Answer:
    """The move to send, and the engine to ask next time (``engine`` is a replacement after a late one)."""

    move: Move
    engine: MoveEngine
    fallback: str | None = None  # why the engine's own move was not sent; None: it was
    late: bool = False  # the engine missed the hard deadline (and was replaced)
    seconds: float = 0.0  # from the call to the answer, on the budget's clock


async def answer_by_deadline(
    worker: EngineWorker,
    engine: MoveEngine,
    game: Game,
    budget: SearchBudget,
    rng: random.Random,
    *,
    renew: Callable[[], MoveEngine] | None = None,
    events: str = "bot",
) -> Answer:
    """The engine's move for ``game`` if it is legal and comes by ``budget``'s hard deadline, else a random
    legal move; either way by the hard deadline. ``renew`` makes the engine that replaces a late one (None:
    random moves); ``events`` prefixes the log events (``bot.fallback_move``, ``ucc.fallback_move``...).
    The game must have a legal move (the callers answer a position without one in their own ways)."""
    legal = game.sendable_moves()  # legal under both readings of a repeated position
    if not legal:
        raise ValueError(f"no legal move at ply {game.ply}: nothing to answer")
    started = budget.clock()
    thinking = worker.submit(engine.choose_move, game.copy(), budget)
    late = False
    try:
        move = await asyncio.wait_for(thinking, timeout=max(0.0, budget.remaining(hard=True)))
    except TimeoutError:
        reason = f"no move within {budget.hard_deadline - started:.2f} s"
        late = True
        # The late call still runs on its thread: the next call gets a fresh thread and a fresh engine, so
        # no engine object is ever used by two threads at once.
        worker.abandon()
        engine = _successor(engine, renew, rng, reason, events)
    except asyncio.CancelledError:
        budget.stop.set()  # the caller went away (a closed connection, QUIT): let the engine go too
        raise
    except Exception as exc:
        reason = f"engine failed: {exc!r}"
    else:
        if move in legal:
            seconds = budget.clock() - started
            log.debug(f"{events}.think", move=str(move), seconds=round(seconds, 3))
            return Answer(move, engine, seconds=seconds)
        reason = f"engine chose {move}, which is not legal"
    finally:
        budget.stop.set()  # the move is decided: a search still running may stop
    fallback = rng.choice(legal)
    seconds = budget.clock() - started
    log.warning(f"{events}.fallback_move", reason=reason, move=str(fallback), ply=game.ply, seconds=round(seconds, 3))
    return Answer(fallback, engine, fallback=reason, late=late, seconds=seconds)


def _successor(engine: MoveEngine, renew: Callable[[], MoveEngine] | None, rng: random.Random, reason: str,
               events: str) -> MoveEngine:
    """The engine for the rest of the game after ``engine`` was late."""
    if isinstance(engine, ProgramEngine):
        # An outside program cannot be started again mid-game (it stops itself once late).
        log.warning(f"{events}.program_lost", reason=reason, rest_of_game="random legal moves")
        return RandomEngine(rng.randrange(2**32))
    if renew is not None:
        try:
            fresh = renew()
        except Exception as exc:  # it started for this game once; should it fail now, the game still goes on
            log.error(f"{events}.engine_renew_failed", error=repr(exc), rest_of_game="random legal moves")
        else:
            log.info(f"{events}.engine_replaced", reason=reason, rest_of_game="a fresh engine")
            return fresh
    else:
        log.warning(f"{events}.engine_replaced", reason=reason, rest_of_game="random legal moves")
    return RandomEngine(rng.randrange(2**32))
