"""The bot as a long-running daemon (``perspecto bot``): sessions with a host over TCP or MQTT, resuming a
game after a lost connection or a restart, clean shutdown on signals, and a heartbeat file.

- **Sessions.** Connect (the transport retries with jittered backoff), say hello, serve the host's calls
  until the connection ends, pause (jittered) and start again; ``max_reconnects`` sessions in a row that
  fail before hello make the daemon give up (exit 1). A host that refuses the bot (version, token,
  credentials) ends it at once (exit 2): retrying would not help.
- **Resuming** (docs/mqtt.md). The hello says ``features: ["resume"]`` and its answer gives the session's
  secret ``resumeKey``; a bot that comes back in the middle of a game names it (``resumeGame``), says how
  many of its calls it handled (``resumeCalls``) and presents the key. At start the journal of a game an
  earlier process left unfinished (with its key) is replayed first (bot/daemon/journal.py).
- **Signals.** The first SIGTERM or SIGINT stops taking games: idle, the bot says goodbye and exits 0; in a
  game, it plays on for up to ``shutdown_grace`` seconds, then says goodbye after ``gameOver`` (exit 0), or
  at the end of the grace hands the game back with a goodbye (the host scores the forfeit, as the protocol
  says for a bot that leaves) and exits 0. A second signal quits at once: exit 128 + the signal (130 for
  SIGINT, 143 for SIGTERM), the journal left for a restart to resume.
- **Health.** bot/daemon/health.py's heartbeat, from the session's state, and ``not_saved``: what the bot
  could not write (a full or read-only state folder: the journal, the opponent store). The bot plays on
  without them; a state folder it cannot use at all is logged and shown, never a reason to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog

from bot.daemon.client import BotClient, HostRefused
from bot.daemon.health import HealthReporter
from bot.daemon.journal import GameJournal, JournalError, ResumableHandler, replay
from protocol import errors
from protocol.codec import bot_codec
from protocol.endpoint import Channel, Endpoint
from protocol.link import call_pausing_outages, link_status, link_up
from protocol.messages import RESUME_FEATURE, GoodbyeParams, HelloParams, HelloResult, takes_move_info
from protocol.mqtt import MqttRefused
from protocol.tcp import backoff_delays

log = structlog.get_logger()

T = TypeVar("T")
Connector = Callable[[], Awaitable[Channel]]


@dataclass(frozen=True)
class DaemonOptions:
    shutdown_grace: float = 60.0  # seconds a signalled bot may take to finish its game
    max_reconnects: int = 5  # sessions in a row that may fail before hello
    hello_timeout: float = 10.0
    idle_timeout: float | None = None
    health_interval: float = 5.0
    handle_signals: bool = True
    share_thinking: bool = True  # the getAIMove answers carry ``info`` for a host that takes it


class BotDaemon:
    def __init__(
        self,
        client: BotClient,
        hello: HelloParams,
        connect: Connector,
        *,
        transport: str,
        journal: GameJournal | None = None,
        health_path: Path | None = None,
        options: DaemonOptions | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self._sleep = sleep  # times the shutdown grace (tests give one that ends when they say)
        self.hello = hello.model_copy(update={"features": [RESUME_FEATURE]})
        self.connect = connect
        self.transport = transport
        self.journal = journal
        self.options = options or DaemonOptions()
        self.handler = ResumableHandler(client, journal, on_change=self._changed)
        self.health = HealthReporter(health_path, self._status, interval=self.options.health_interval) \
            if health_path is not None else None
        self.resumes = 0
        self._stop = asyncio.Event()
        self._signal: int | None = None
        self._endpoint: Endpoint | None = None
        self._channel: Channel | None = None
        self._session_open = False
        self._journal_problem: str | None = None  # why there is no journal at all (set at start)

    # --- the process --------------------------------------------------------------------------------------

    async def run(self) -> int:
        """Play until the host says goodbye, a signal, or giving up; returns the exit code."""
        signals = self._install_signals() if self.options.handle_signals else []
        if self.health is not None:
            self.health.start()
        try:
            await self._restore()
            return await self._sessions()
        finally:
            loop = asyncio.get_running_loop()
            for signum in signals:
                loop.remove_signal_handler(signum)
            self._endpoint = None
            if self.health is not None:
                await self.health.stop({"state": "disconnected", "stopped": True})
            if self.journal is not None:
                self.journal.close()
            self.client.close()

    def request_stop(self, signum: int = signal.SIGTERM) -> None:
        """What the first signal does (tests call it directly)."""
        if self._signal is not None:
            return
        self._signal = signum
        log.info("bot.stop_requested", signal=signal.Signals(signum).name, in_game=self.client.in_game,
                 grace=self.options.shutdown_grace)
        self._stop.set()
        self._changed()

    def _install_signals(self) -> list[int]:
        loop = asyncio.get_running_loop()
        installed: list[int] = []
        for signum in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(signum, self._on_signal, signum)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or no signals here
                continue
            installed.append(signum)
        return installed

    def _on_signal(self, signum: int) -> None:
        if self._signal is None:
            self.request_stop(signum)
            return
        # The second signal: no more waiting. The journal stays, so a restart can still resume the game.
        log.warning("bot.quit_now", signal=signal.Signals(signum).name)
        if self.health is not None:
            with contextlib.suppress(Exception):
                self.health.status = lambda: {"state": "disconnected", "stopped": True}
                self.health.refresh(force=True)
        sys.stderr.flush()
        os._exit(128 + signum)

    async def _restore(self) -> None:
        """Take the journal, and replay a game an earlier process left unfinished."""
        journal = self.journal
        if journal is None:
            return
        try:
            locked = journal.lock()
        except OSError as exc:  # a read-only or full state folder: the bot plays on, without resuming games
            self._journal_problem = f"{journal.directory}: {exc.strerror or exc}"
            log.error("bot.journal_unavailable", path=str(journal.directory), error=str(exc),
                      detail="no journal for this process: a restart cannot resume a game")
            self.journal = self.handler.journal = None
            return
        if not locked:
            log.warning("bot.journal_busy", path=str(journal.path),
                        detail="another process of this bot id holds it: this one cannot resume games")
            self.journal = self.handler.journal = None
            return
        try:
            journal.load()
            if not journal.open:
                return
            if journal.game_id is None:
                raise JournalError("no gameId among its calls")
            await replay(journal.entries, self.client)
        except Exception as exc:  # JournalError, or a client that fails on it: either way, start afresh
            log.warning("bot.journal_unusable", path=str(journal.path), error=str(exc))
            self.handler.drop_game("unreadable")
            return
        journal.reopen()
        self.handler.restored(journal.entries)
        log.info("bot.journal_replayed", game=journal.game_id, calls=len(journal.entries))

    # --- sessions -----------------------------------------------------------------------------------------

    async def _sessions(self) -> int:
        pauses = backoff_delays(base=0.2, cap=5.0)
        failures = 0
        while not self._stop.is_set():
            try:
                channel = await self._unless_stopped(self.connect())
            except MqttRefused as exc:
                log.error("bot.refused", error=str(exc))
                return 2
            except errors.ConnectFailed as exc:
                log.error("bot.connect_failed", error=str(exc))
                return 1
            if channel is None:
                break
            outcome = await self._session(channel)
            if outcome == "goodbye":
                return 0
            if outcome == "refused":
                return 2
            if self._stop.is_set():
                break
            failures = 0 if outcome == "lost" else failures + 1
            if failures > self.options.max_reconnects:
                log.error("bot.gave_up", reconnects=self.options.max_reconnects)
                return 1
            log.warning("bot.connection_lost", in_game=self.client.in_game, failures=failures)
            await self._unless_stopped(asyncio.sleep(next(pauses)))
        return 0

    async def _unless_stopped(self, work: Awaitable[T]) -> T | None:
        """``work``'s result, or None if a stop is requested first (then the work is cancelled)."""
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        stop: asyncio.Future[Any] = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            result = await task
            close = getattr(result, "close", None)
            if close is not None:  # it connected just as we stopped
                await close()
        return None

    async def _session(self, channel: Channel) -> str:
        """One connection: ``goodbye`` (the host ended it), ``refused``, ``stopped`` (a signal), ``lost``
        (after hello) or ``failed`` (before)."""
        client, handler = self.client, self.handler
        resume = handler.resume_fields(client.options.game_id if client.in_game else None)
        resume_game = resume["resume_game"] if resume is not None else None
        hello = self.hello
        if resume is not None:
            hello = hello.model_copy(update=resume)
        else:
            handler.drop_game("abandoned")
        # No call until the hello answer is read: whether the game goes on, and the resume key its journal keeps.
        handler.gate.clear()
        client.goodbye, client.goodbye_reason = asyncio.Event(), None
        endpoint = Endpoint(channel, bot_codec(), handler, idle_timeout=self.options.idle_timeout)
        self._endpoint, self._channel = endpoint, channel
        if (status := link_status(channel)) is not None:  # MQTT: a broker outage shows in the heartbeat
            status.on_link_change = lambda _up: self._changed()
        self._changed()
        serving = asyncio.create_task(endpoint.run())
        try:
            try:
                answer = await self._say_hello(endpoint, hello)
            except HostRefused as exc:
                log.error("bot.refused", error=str(exc))
                return "refused"
            except errors.ResumeRefused as exc:
                # Not the key of the seat (a journal from another session): the game is lost to this bot,
                # not the bot to the host; the next session starts afresh.
                log.warning("bot.resume_refused", game=resume_game, error=exc.message)
                handler.drop_game("resume refused")
                return "failed"
            except errors.ProtocolError as exc:
                log.warning("bot.hello_failed", error=str(exc))
                return "failed"
            handler.resume_key = answer.resume_key  # the same when resumed; a new session's otherwise
            client.send_move_info = self.options.share_thinking and takes_move_info(answer.protocol)
            if resume_game is not None:
                if answer.resumed:
                    self.resumes += 1
                    handler.expect_resend(answer.resume_calls or 0)
                    log.info("bot.resumed", game=resume_game, calls=handler.calls, host_calls=answer.resume_calls)
                else:
                    log.warning("bot.resume_declined", game=resume_game)
                    handler.drop_game("not resumed")
            handler.gate.set()
            self._session_open = True
            self._changed()
            return await self._serve(endpoint, serving)
        finally:
            handler.gate.set()
            self._session_open = False
            await endpoint.close("session over")
            with contextlib.suppress(Exception):
                await serving
            self._endpoint = self._channel = None
            self._changed()

    async def _say_hello(self, endpoint: Endpoint, hello: HelloParams) -> HelloResult:
        try:
            try:
                answer = await call_pausing_outages(endpoint, "hello", hello, self.options.hello_timeout)
            except errors.InvalidParams:
                # A host without the resume extension refuses the fields it does not know: a plain hello.
                plain = hello.model_copy(update={"features": None, "resume_game": None, "resume_calls": None,
                                                 "resume_key": None})
                if plain == hello:
                    raise
                answer = await call_pausing_outages(endpoint, "hello", plain, self.options.hello_timeout)
        except (errors.UnsupportedVersion, errors.AuthFailed, errors.OutOfOrder) as exc:
            raise HostRefused(exc.message) from None
        assert isinstance(answer, HelloResult)
        log.info("bot.session", host=answer.host, session=answer.session, protocol=answer.protocol,
                 transport=self.transport)
        return answer

    async def _serve(self, endpoint: Endpoint, serving: asyncio.Task[None]) -> str:
        goodbye = asyncio.create_task(self.client.goodbye.wait())
        stop = asyncio.create_task(self._stop.wait())
        try:
            await asyncio.wait({serving, goodbye, stop}, return_when=asyncio.FIRST_COMPLETED)
            if self.client.goodbye.is_set():
                return "goodbye"
            if serving.done():
                return "lost"
            return await self._leave(endpoint, serving)
        finally:
            goodbye.cancel()
            stop.cancel()

    async def _leave(self, endpoint: Endpoint, serving: asyncio.Task[None]) -> str:
        """Stopping: finish the game within the grace, or hand it back; then goodbye."""
        reason = "shutting down"
        if self.client.in_game:
            self.handler.game_over.clear()
            over = asyncio.create_task(self.handler.game_over.wait())
            goodbye = asyncio.create_task(self.client.goodbye.wait())
            grace = asyncio.ensure_future(self._sleep(self.options.shutdown_grace))
            try:
                await asyncio.wait({over, goodbye, serving, grace}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                over.cancel()
                goodbye.cancel()
                grace.cancel()
            if self.client.goodbye.is_set():
                return "goodbye"
            if serving.done():
                return "stopped"  # the connection went too; the journal lets a restart resume the game
            if self.client.in_game:
                reason = "shutting down: the game is handed back"
                log.warning("bot.game_handed_back", game=self.client.options.game_id,
                            grace=self.options.shutdown_grace)
                self.handler.drop_game("handed back")
        with contextlib.suppress(errors.ProtocolError):
            await endpoint.notify("goodbye", GoodbyeParams(reason=reason))
        log.info("bot.goodbye_sent", reason=reason)
        return "stopped"

    # --- health -------------------------------------------------------------------------------------------

    def _status(self) -> dict[str, Any]:
        endpoint, channel = self._endpoint, self._channel
        if endpoint is None or endpoint.closed or not link_up(channel):
            state = "disconnected"
        elif not self._session_open:
            state = "connected"
        else:
            state = "in_game" if self.client.in_game else "idle"
        return {
            "state": state,
            "game_id": self.client.options.game_id if self.client.in_game else None,
            "bot": self.hello.name,
            "transport": self.transport,
            "peer": channel.peer if channel is not None else None,
            "games": len(self.client.results),
            "fallback_moves": self.client.fallback_moves_total,
            "resumes": self.resumes,
            "stopping": self._signal is not None,
            "not_saved": self._not_saved(),
        }

    def _not_saved(self) -> dict[str, Any]:
        """What the bot cannot write now, and why (empty: everything is written)."""
        problems: dict[str, Any] = {}
        journal = self._journal_problem or (self.journal.problem if self.journal is not None else None)
        if journal is not None:
            problems["journal"] = journal
        memory = self.client.memory
        if memory.problem is not None:
            problems["opponent_store"] = memory.problem
        if memory.unsaved_games:
            problems["games_not_stored"] = memory.unsaved_games
        return problems

    def _changed(self) -> None:
        if self.health is not None:
            self.health.refresh()

