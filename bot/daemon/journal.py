"""What the bot needs to pick a game up again after a lost connection or a restart (docs/mqtt.md, resume).

``ResumableHandler`` sits between the endpoint and the ``BotClient``: it counts the calls of the current
game and remembers the last answer, so that after a reconnect the bot can tell the host how far it got
(``hello resumeCalls``) and answer a call the host sends again exactly as it answered it before, instead
of playing it a second time.

``GameJournal`` makes that survive the process: every call of the current game is one JSON line in
``<state>/journal/<bot-id>.jsonl`` (its params, its answer, and for ``createAISetup`` the setup drawn),
appended and fsynced *before* the answer goes out, so the host can never have seen an answer the journal
lacks. Its first line keeps the session's resume key, the secret the host gave this bot alone and wants
back with a resume; so the file is readable by its owner only. A new process replays the lines through a
fresh client (``replay``), the setup and the moves restored from the journal rather than drawn or searched
again, and then asks the host to resume, presenting the key. A finished game moves to
``journal/done/<game-id>.jsonl``, which is also the bot's own record of it.

Calls are matched by their place in the game and their content, not by JSON-RPC id: ids start again on
every connection.

The journal never costs a game. A write that fails (a full or read-only state folder) ends the journal of that
game: the file is deleted (a journal with calls missing would resume the game wrongly), the game goes on from
memory (a reconnect within the process still resumes it; a restart cannot), ``problem`` says why for the
heartbeat, and the next game tries again. What ``done/`` keeps is bounded: the last ``keep`` games (50) and at
most ``keep_bytes`` (32 MiB) of them, the oldest deleted first, so finished journals cannot fill a small volume.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import structlog
from pydantic import BaseModel

from bot.daemon.client import BotClient
from engine_ext.rules.game import Move
from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import Square
from protocol import errors
from protocol.messages import HOST_TO_BOT, GameOverParams, GetAIMoveParams, GetAIMoveResult

log = structlog.get_logger()

JOURNAL_FORMAT = "perspecto-journal/1"
DONE_KEPT = 50  # finished games kept in done/
DONE_KEPT_BYTES = 32 * 2**20  # and at most this many bytes of them (the newest game is kept whatever its size)


class JournalError(Exception):
    """A journal that cannot be replayed: the game cannot be resumed from it."""


def _wire(model: BaseModel) -> Any:
    return model.model_dump(mode="json", by_alias=True)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class JournalEntry:
    """One call of the game and the answer the bot gave: ``result`` or ``error`` (code and message)."""

    n: int
    method: str
    params: Any
    result: Any = None
    error: dict[str, Any] | None = None
    setup: dict[str, str] | None = None  # createAISetup: the setup the bot drew

    def to_line(self) -> dict[str, Any]:
        line: dict[str, Any] = {"n": self.n, "method": self.method, "params": self.params}
        if self.error is not None:
            line["error"] = self.error
        else:
            line["result"] = self.result
        if self.setup is not None:
            line["setup"] = self.setup
        return line

    @classmethod
    def from_line(cls, line: dict[str, Any]) -> JournalEntry:
        return cls(n=int(line["n"]), method=str(line["method"]), params=line["params"], result=line.get("result"),
                   error=line.get("error"), setup=line.get("setup"))

    def matches(self, method: str, params: BaseModel) -> bool:
        return method == self.method and _wire(params) == self.params

    def answer(self) -> BaseModel:
        """The answer as it was given: the result model, or the error raised again."""
        if self.error is not None:
            raise errors.RpcError.from_object(int(self.error["code"]), str(self.error["message"]))
        spec = HOST_TO_BOT[self.method]
        assert spec.result is not None
        return spec.result.model_validate(self.result)


class GameJournal:
    """The current game's calls in an append-only JSON-lines file, one per bot id, locked to one process."""

    def __init__(self, directory: Path, bot_id: str, *, fsync: bool = True, keep: int = DONE_KEPT,
                 keep_bytes: int = DONE_KEPT_BYTES) -> None:
        self.directory = directory
        self.bot_id = re.sub(r"[^A-Za-z0-9_.-]", "_", bot_id)[:64] or "bot"
        self.path = directory / f"{self.bot_id}.jsonl"
        self.done_dir = directory / "done"
        self.fsync = fsync
        self.keep = keep  # finished games kept in done/
        self.keep_bytes = keep_bytes  # and the bytes they may take
        self.problem: str | None = None  # why the current game is not journaled (a failed write); None: it is
        self._failed = False  # a write of the current game failed: nothing more is written until the next
        self.entries: list[JournalEntry] = []
        self.open = False  # a game is being journaled
        self.resume_key: str | None = None  # what the host wants back to resume the game (its first line)
        self._file: IO[str] | None = None
        self._lock: IO[str] | None = None

    # --- the process's claim on the journal ---------------------------------------------------------------

    def lock(self) -> bool:
        """Take the bot id's lock; False if another live process holds it (the kernel frees the lock of a
        killed one). Raises OSError when the folder cannot be made or written (no journal at all, then)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = open(self.directory / f"{self.bot_id}.lock", "a+")  # held for the process's life
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle
        return True

    def close(self) -> None:
        self._close_file()
        if self._lock is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    # --- reading --------------------------------------------------------------------------------------------

    @property
    def game_id(self) -> str | None:
        for entry in self.entries:
            if entry.method == "setGameOption" and isinstance(entry.params, dict) \
                    and entry.params.get("option") == "gameId" and entry.error is None:
                return str(entry.params.get("value"))
        return None

    def load(self) -> None:
        """Read a game an earlier process left unfinished (none: nothing open). A last line torn by a crash
        in the middle of writing it is cut off: its answer never went out."""
        self.entries, self.open, self.resume_key = [], False, None
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            os.truncate(self.path, len(complete))  # or the next line appended would join the torn one
        for number, text in enumerate(complete.decode("utf-8", errors="replace").splitlines(), 1):
            try:
                line = json.loads(text)
            except ValueError:
                raise JournalError(f"{self.path}:{number}: not JSON") from None
            if isinstance(line, dict) and "n" in line:
                entry = JournalEntry.from_line(line)
                if entry.n != len(self.entries) + 1:
                    raise JournalError(f"{self.path}:{number}: call {entry.n} after {len(self.entries)}")
                self.entries.append(entry)
            elif isinstance(line, dict) and "journal" in line:
                key = line.get("resumeKey")
                self.resume_key = key if isinstance(key, str) and key else None
        self.open = bool(self.entries)

    # --- writing --------------------------------------------------------------------------------------------

    def begin(self, resume_key: str | None = None) -> None:
        """A new game, in a session whose hello answer gave ``resume_key``: an unfinished one still here is
        archived as abandoned."""
        if self.open or self.path.exists():
            self.finish("abandoned")
        self.entries, self.open, self.resume_key = [], True, resume_key
        self._failed = False  # a new game: try the disk again
        header: dict[str, Any] = {"journal": JOURNAL_FORMAT, "bot": self.bot_id, "pid": os.getpid(), "started": _now()}
        if resume_key is not None:
            header["resumeKey"] = resume_key
        self._append(header)
        if not self._failed:
            self.problem = None

    def reopen(self) -> None:
        """Go on writing a loaded game (after a restart), marking where the new process took over."""
        self._append({"resumed": _now(), "pid": os.getpid(), "calls": len(self.entries)})

    def record(self, method: str, params: BaseModel, *, result: BaseModel | None = None,
               error: errors.RpcError | None = None, setup: dict[Square, Rank] | None = None) -> JournalEntry:
        entry = JournalEntry(
            n=len(self.entries) + 1, method=method, params=_wire(params),
            result=_wire(result) if result is not None else None,
            error={"code": error.code, "message": error.message} if error is not None else None,
            setup={str(sq): rank.label for sq, rank in setup.items()} if setup is not None else None,
        )
        self._append(entry.to_line())
        self.entries.append(entry)
        return entry

    def finish(self, outcome: str, game_over: GameOverParams | None = None) -> Path | None:
        """Close the game: the file moves to done/ (the bot's record of it); None if nothing was there, or it
        could not be kept (a failed write: logged, and ``problem`` says why)."""
        self._close_file()
        self.open = False
        failed, self._failed = self._failed, False
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.game_id or "game")[:100]
        self.entries = []
        if failed or not self.path.exists():
            return None
        target = self._done_path(name)
        try:
            with open(self.path, "a", encoding="utf-8") as out:
                end: dict[str, Any] = {"end": outcome, "time": _now()}
                if game_over is not None:
                    end["gameOver"] = _wire(game_over)
                out.write(json.dumps(end, separators=(",", ":")) + "\n")
            self.done_dir.mkdir(parents=True, exist_ok=True)
            os.replace(self.path, target)
        except OSError as exc:
            self._write_failed(exc)
            self._failed = False
            return None
        self._prune()
        return target

    def _done_path(self, name: str) -> Path:
        """A new name in done/ for a finished game: the same game id can end twice within one clock tick
        (a game replayed, a quick rematch), and a name taken already would replace a kept journal."""
        stem = f"{name}-{self.bot_id}-{time.time_ns() // 1000}"
        taken = [path.stem[len(stem):] for path in self.done_dir.glob(f"{stem}*.jsonl")]
        if not taken:
            return self.done_dir / f"{stem}.jsonl"
        # Past the highest number taken, not into a gap the pruning left: the number orders them (_end_order).
        numbers = [int(rest[1:]) for rest in taken if rest.startswith("-") and rest[1:].isdigit()]
        return self.done_dir / f"{stem}-{max(numbers, default=0) + 1}.jsonl"

    def _append(self, line: dict[str, Any]) -> None:
        if self._failed:
            return  # this game's journal is gone: the game goes on from memory
        try:
            if self._file is None:
                self.directory.mkdir(parents=True, exist_ok=True)
                # Kept open for the game; owner-only, since the first line holds the resume key.
                self._file = open(self.path, "a", encoding="utf-8", opener=_owner_only)
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()
            if self.fsync:
                os.fdatasync(self._file.fileno())
        except OSError as exc:
            self._write_failed(exc)

    def _write_failed(self, exc: OSError) -> None:
        """A write failed: the game's journal is dropped (a journal with calls missing, or a line torn in
        half, would resume the game wrongly), and nothing more of this game is written."""
        self._failed = True
        self.problem = f"{self.path}: {exc.strerror or exc}"
        self._close_file()
        with contextlib.suppress(OSError):  # deleting needs no free space; a read-only folder keeps it
            self.path.unlink()
        log.error("bot.journal_write_failed", path=str(self.path), error=str(exc),
                  detail="the game goes on unjournaled: a restart cannot resume it")

    def _close_file(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):  # a full disk fails the flush of what is buffered
                self._file.close()
            self._file = None

    def _prune(self) -> None:
        """Keep the newest ``keep`` finished games, and of those only as many as fit in ``keep_bytes``."""
        try:
            done = [(path, path.stat()) for path in self.done_dir.glob("*.jsonl")]
        except OSError:
            return
        # Newest first; games finished within the file system's time resolution by their names, which
        # carry the microsecond they ended in (and a counter after it).
        done.sort(key=lambda item: (item[1].st_mtime_ns, _end_order(item[0])), reverse=True)
        kept_bytes = 0
        for number, (path, stat) in enumerate(done):
            kept_bytes += stat.st_size
            if number >= self.keep or (number > 0 and kept_bytes > self.keep_bytes):
                with contextlib.suppress(OSError):
                    path.unlink()


def _end_order(path: Path) -> tuple[int, int]:
    """When a finished game's journal was named (``NAME-BOT-MICROSECONDS[-N].jsonl``): (microseconds, N);
    (0, 0) for a name of another shape."""
    parts = path.stem.rsplit("-", 2)
    numbers = [int(part) for part in parts[1:] if part.isdigit()]
    if len(numbers) == 2 and numbers[1] < numbers[0]:
        return numbers[0], numbers[1]
    return (numbers[-1], 0) if numbers else (0, 0)


def _owner_only(path: str, flags: int) -> int:
    return os.open(path, flags, 0o600)


def read_finished(path: Path) -> tuple[list[JournalEntry], dict[str, Any] | None]:
    """A finished game's calls and its end line (tests, post-mortems)."""
    entries, end = [], None
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        if "n" in line:
            entries.append(JournalEntry.from_line(line))
        elif "end" in line:
            end = line
    return entries, end


async def replay(entries: list[JournalEntry], client: BotClient) -> None:
    """Bring a fresh client to where the calls left the bot's game, checking that it answers each as it did
    then; raises JournalError where it does not. The setup and the moves come from the journal: drawing or
    searching them again would give others."""
    for entry in entries:
        spec = HOST_TO_BOT.get(entry.method)
        if spec is None or spec.is_notification:
            raise JournalError(f"call {entry.n}: {entry.method} is not a call the host makes")
        try:
            params = spec.params.model_validate(entry.params)
            if isinstance(params, GetAIMoveParams) and entry.error is None:
                move = GetAIMoveResult.model_validate(entry.result)
                client.restore_move(params.ply, Move(move.frm, move.to))
                continue
            got: dict[str, Any]
            try:
                got = {"result": _wire(await client.handle_request(entry.method, params))}
            except errors.RpcError as exc:
                got = {"error": exc.code}
            wanted = {"error": entry.error["code"]} if entry.error is not None else {"result": entry.result}
            if got != wanted:
                raise JournalError(f"call {entry.n} ({entry.method}): answered {got} now, {wanted} then")
            if entry.method == "createAISetup" and entry.error is None and entry.setup is not None:
                client.restore_setup({Square.parse(sq): Rank[rank.upper()] for sq, rank in entry.setup.items()})
        except (ValueError, KeyError, errors.RpcError) as exc:
            raise JournalError(f"call {entry.n} ({entry.method}): {exc}") from None


class ResumableHandler:
    """The endpoint's request handler: the client's, counting and remembering the calls of the current
    game (and journaling them, given a journal), so that a resumed session can answer the call the host
    sends again from memory. ``gate`` holds calls back while a session opens (until the hello answer says
    whether the game goes on)."""

    def __init__(self, client: BotClient, journal: GameJournal | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.client = client
        self.journal = journal
        self.on_change = on_change
        self.calls = 0  # calls of the current game handled
        self.last: JournalEntry | None = None
        self.resent_answers = 0  # calls answered again from memory after a resume
        # The host's secret for this bot's session (the hello answer's resumeKey): a resume presents it.
        self.resume_key: str | None = None
        self.game_over = asyncio.Event()  # set by every gameOver
        self.gate = asyncio.Event()
        self.gate.set()
        self._resend: JournalEntry | None = None

    def restored(self, entries: list[JournalEntry]) -> None:
        """The calls a replayed journal holds count as handled, and its resume key is the one to present."""
        self.calls = len(entries)
        self.last = entries[-1] if entries else None
        if self.journal is not None:
            self.resume_key = self.journal.resume_key

    def resume_fields(self, game_id: str | None) -> dict[str, Any] | None:
        """What a hello adds to ask to resume ``game_id`` (None: no game, or no key to present, so nothing
        to resume: the host would refuse a resume without the key)."""
        if game_id is None or self.resume_key is None:
            return None
        return {"resume_game": game_id, "resume_calls": self.calls, "resume_key": self.resume_key}

    def expect_resend(self, host_calls: int) -> None:
        """After ``hello`` resumed: the host saw ``host_calls`` answers; if we handled one more, its answer
        was lost and the host is about to send that call again."""
        self._resend = self.last if self.calls == host_calls + 1 else None

    def drop_game(self, outcome: str) -> None:
        """The game will not go on (the host did not resume it, or the bot handed it back)."""
        self.client.new_session()
        self.calls, self.last, self._resend = 0, None, None
        if self.journal is not None and self.journal.open:
            self.journal.finish(outcome)
        self._changed()

    async def handle_request(self, method: str, params: BaseModel) -> BaseModel:
        await self.gate.wait()
        if self._resend is not None:
            entry, self._resend = self._resend, None
            if entry.matches(method, params):
                self.resent_answers += 1
                log.info("bot.answer_resent", method=method, call=entry.n)
                return entry.answer()
            log.warning("bot.resend_mismatch", expected=entry.method, got=method, call=entry.n)
        if method == "setGameOption" and not self.client.in_game:
            self.calls, self.last = 0, None
            if self.journal is not None:
                self.journal.begin(self.resume_key)
        try:
            answer = await self.client.handle_request(method, params)
        except errors.RpcError as exc:
            self._record(method, params, error=exc)
            raise
        except Exception as exc:  # the endpoint answers this with -32603: remember that answer
            self._record(method, params, error=errors.InternalError(f"{method} failed: {exc!r}"))
            raise
        self._record(method, params, result=answer)
        return answer

    async def handle_notification(self, method: str, params: BaseModel) -> None:
        await self.gate.wait()
        # A repeated gameOver, or one for a game this bot is not playing, must not close the journal, or
        # reset the count, of the game it is playing (the client ignores it and logs it).
        ends_game = isinstance(params, GameOverParams) and self.client.game_over_applies(params.game_id)
        await self.client.handle_notification(method, params)
        if isinstance(params, GameOverParams) and ends_game:
            self.calls, self.last, self._resend = 0, None, None
            if self.journal is not None and self.journal.open:
                self.journal.finish("over", params)
            self.game_over.set()
        self._changed()

    def _record(self, method: str, params: BaseModel, *, result: BaseModel | None = None,
                error: errors.RpcError | None = None) -> None:
        if not self.client.in_game and self.calls == 0 and method != "setGameOption":
            return  # a stray call between games belongs to no game
        self.calls += 1
        setup = self.client.own_setup if method == "createAISetup" and error is None else None
        if self.journal is not None and self.journal.open:
            self.last = self.journal.record(method, params, result=result, error=error, setup=setup)
        else:
            self.last = JournalEntry(n=self.calls, method=method, params=_wire(params),
                                     result=_wire(result) if result is not None else None,
                                     error={"code": error.code, "message": error.message} if error else None)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()
