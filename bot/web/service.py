"""The web view for the commands (their ``--web``, bot/web/options.py): serving until a signal, and the lab's page.

``perspecto host``, ``play`` and ``match --via-host`` run the page on the host's own event loop (their feed
observes the host); ``perspecto replay FILE|FOLDER --web`` serves records; the lab (``perspecto match``
without --via-host) plays in worker processes with no host, so its page runs in a thread of its own and
shows each game once its record appears in the records folder.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console

from bot.daemon.runtime import run
from bot.safe_text import terminal_safe
from bot.web.feed import GameFeed, RecordsFolder
from bot.web.server import WebServer
from engine_ext.rules.record import GameRecord


class StopSignals:
    """SIGTERM and SIGINT on the event loop: the first sets ``requested`` (the host winds down), the
    second quits the process at once with 128 + the signal, as ``perspecto bot`` does."""

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __init__(self, console: Console) -> None:
        self.console = console
        self.requested = asyncio.Event()
        self.signal: int | None = None
        self._installed: list[int] = []

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in self.SIGNALS:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
                loop.add_signal_handler(signum, self._on_signal, signum)
                self._installed.append(signum)

    def remove(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in self._installed:
            loop.remove_signal_handler(signum)
        self._installed.clear()

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if self.signal is None:
            self.signal = signum
            self.requested.set()
            return
        self.console.print(f"[red]{name} again: quitting now[/red]", highlight=False)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(128 + signum)


def announce(console: Console, url: str) -> None:
    console.print(f"web view: {url}", highlight=False, soft_wrap=True)


@contextlib.contextmanager
def stop_signals(console: Console) -> Iterator[StopSignals]:
    """SIGINT and SIGTERM set ``requested`` (a second one quits at once), from now until the block ends."""
    signals = StopSignals(console)
    signals.install()
    try:
        yield signals
    finally:
        signals.remove()


async def stay_up(console: Console, url: str, signals: StopSignals) -> None:
    """Keep serving (the games stay on the page) until a signal."""
    console.print(f"the web view stays up at {url}: Ctrl-C to quit", highlight=False, soft_wrap=True)
    await signals.requested.wait()


async def serve_records(path: Path, address: str, console: Console) -> int:
    """``perspecto replay FILE --web``: one record, or every record of a folder (new ones as they come)."""
    with stop_signals(console) as signals:
        return await _serve_records(path, address, console, signals)


async def _serve_records(path: Path, address: str, console: Console, signals: StopSignals) -> int:
    feed = GameFeed()
    watcher: asyncio.Task[None] | None = None
    if path.is_dir():
        folder = RecordsFolder(feed, path)
        await folder.poll()
        watcher = asyncio.create_task(folder.run())
    else:
        try:
            record = GameRecord.load(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            console.print(f"[red]cannot read {terminal_safe(str(path))}: {terminal_safe(str(exc))}[/red]",
                          highlight=False, soft_wrap=True)
            return 2
        feed.add_record(path, record)
    server = WebServer(feed, address)
    try:
        url = await server.start()
    except OSError as exc:
        console.print(f"[red]cannot serve the web view on {address}: {exc}[/red]", highlight=False)
        return 1
    announce(console, url)
    try:
        await stay_up(console, url, signals)
    finally:
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await server.close()
    return 0


class LabWeb:
    """The lab's page, in a thread with its own event loop: the games whose records appear in ``folder``
    from now on."""

    def __init__(self, address: str, folder: Path) -> None:
        self.address = address
        self.folder = folder
        self.url: str | None = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="perspecto-web", daemon=True)
        self._since = time.time() - 1.0  # a file system's times may lag a little

    def start(self) -> str:
        """Serve; returns the URL or raises what stopped the server from starting (OSError)."""
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        assert self.url is not None
        return self.url

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has already stopped
                self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=5.0)

    def _main(self) -> None:
        run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        feed = GameFeed()
        folder = RecordsFolder(feed, self.folder, since=self._since)
        server = WebServer(feed, self.address)
        try:
            self.url = await server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        watcher = asyncio.create_task(folder.run())
        try:
            await self._stop.wait()
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
            await server.close()

    def wait_for_stop(self, console: Console) -> None:
        """After the lab's games: keep the page up until Ctrl-C (or SIGTERM)."""
        done = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: done.set())
        console.print(f"the web view stays up at {self.url}: Ctrl-C to quit", highlight=False, soft_wrap=True)
        try:
            while not done.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
