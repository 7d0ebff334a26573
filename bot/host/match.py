"""A match between two bot profiles on a local host.

The host runs in this process on a free 127.0.0.1 port; each bot is its own process
(``python -m bot.cli bot --profile X --connect 127.0.0.1:PORT``) that connects over TCP like any
tournament client would. Colours alternate game by game. One game gets a live board; several get a
progress bar; either way the result is a table in the tournament's scoring.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import secrets
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from rich.console import Console
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from bot.config import get_profile
from bot.host.board_view import board_panel
from bot.host.referee import BotSession, GameResult, Host, HostSettings, Tally
from bot.profiles import ProfileSet
from bot.safe_text import terminal_safe
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from protocol.mqtt import MqttSettings

log = structlog.get_logger()

REPO_ROOT = Path(__file__).resolve().parents[1]


class MatchError(RuntimeError):
    """The match could not go on (a bot process that never connects, even after a restart)."""


@dataclass(frozen=True)
class Contestant:
    label: str  # "A" or "B"
    profile: str
    name: str  # unique within the match, so random vs random stays readable
    token: str  # how the host tells the two processes apart
    seed: int | None


@dataclass
class MatchResult:
    a: Contestant
    b: Contestant
    games: list[tuple[GameResult, Side]] = field(default_factory=list)  # each game and A's colour
    seconds: float = 0.0

    def tally(self, who: Contestant) -> Tally:
        tally = Tally()
        for result, a_side in self.games:
            tally.add(result, a_side if who is self.a else a_side.other)
        return tally

    @property
    def reasons(self) -> Counter[str]:
        return Counter(result.reason for result, _ in self.games)


class BotProcess:
    """One bot as a child process; its output goes to a log file. Over MQTT (``mqtt``: the broker's URL
    and host id, its password apart) it reaches the host through the broker instead of TCP."""

    def __init__(
        self, contestant: Contestant, port: int, log_path: Path, *, mqtt: MqttSettings | None = None,
        state_dir: Path | None = None,
        config: Path | None = None,
    ) -> None:
        self.contestant = contestant
        self.config = config
        self.port = port
        self.log_path = log_path
        self.mqtt = mqtt
        self.state_dir = state_dir  # its own: two matches side by side may have bots of the same name
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0

    def command(self) -> list[str]:
        c = self.contestant
        cmd = [sys.executable, "-m", "bot.cli", "bot", "--profile", c.profile]
        if self.config is not None:
            cmd += ["--config", str(self.config)]
        if self.mqtt is not None:
            cmd += ["--mqtt", self.mqtt.url, "--bot-id", f"{c.name}-{c.token[:6]}"]
            if self.mqtt.ca_file is not None:
                cmd += ["--mqtt-ca", str(self.mqtt.ca_file)]
            if self.mqtt.cert_file is not None and self.mqtt.key_file is not None:
                cmd += ["--mqtt-cert", str(self.mqtt.cert_file), "--mqtt-key", str(self.mqtt.key_file)]
            if self.mqtt.tls_insecure:
                cmd.append("--mqtt-insecure")
        else:
            cmd += ["--connect", f"127.0.0.1:{self.port}"]
        cmd += ["--token", c.token, "--name", c.name]
        if self.state_dir is not None:
            cmd += ["--state-dir", str(self.state_dir)]
        if c.seed is not None:
            cmd += ["--seed", str(c.seed + self.starts)]
        return cmd

    async def start(self) -> None:
        env = dict(os.environ)
        if self.mqtt is not None and self.mqtt.password is not None:
            env["PERSPECTO_MQTT_PASSWORD"] = self.mqtt.password.get_secret_value()  # not on the command line
        # The child imports this source tree whether or not the package is installed.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
        with contextlib.ExitStack() as files:
            out: Any = asyncio.subprocess.DEVNULL
            try:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                out = files.enter_context(open(self.log_path, "ab"))
            except OSError as exc:  # a full or read-only records folder costs the bot's log, not the match
                log.error("match.bot_log_not_saved", path=str(self.log_path), error=str(exc))
            self.process = await asyncio.create_subprocess_exec(
                *self.command(), stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, env=env
            )
        self.starts += 1

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def stop(self, timeout: float = 5.0) -> int | None:
        if self.process is None:
            return None
        try:
            async with asyncio.timeout(timeout):
                return await self.process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            return await self.process.wait()


class GameWatcher:
    """Shows one game as it goes: a live board in a terminal, a printed board every ``every`` plies
    otherwise. ``delay`` paces the game for watching (it is not counted against the bots)."""

    def __init__(
        self, console: Console, names: dict[Side, str], *, style: str = "american", delay: float = 0.0,
        every: int = 20,
    ) -> None:
        self.console = console
        self.names = names
        self.style = style
        self.delay = delay
        self.every = max(1, every)
        self.live: Live | None = None

    def __enter__(self) -> GameWatcher:
        if self.console.is_terminal:
            self.live = Live(console=self.console, refresh_per_second=20, transient=False)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    async def __call__(self, game: Game, played: MoveResult | None) -> None:
        panel = board_panel(game, self.names, style=self.style, last=played)
        if self.live is not None:
            self.live.update(panel)
        elif played is None or game.result is not None or game.ply % self.every == 0:
            self.console.print(panel)
        if self.delay > 0:
            await asyncio.sleep(self.delay)


def contestants(
    profile_a: str, profile_b: str, seed: int | None, config: Path | None = None
) -> tuple[Contestant, Contestant]:
    profiles = ProfileSet.load(config) if config is not None else None
    for name in (profile_a, profile_b):
        # fail before any process starts
        profiles.get(name) if profiles is not None else get_profile(name)
    seeds = random.Random(seed) if seed is not None else None
    same = profile_a == profile_b

    def make(label: str, profile: str) -> Contestant:
        return Contestant(
            label=label, profile=profile, name=f"{profile}-{label.lower()}" if same else profile,
            token=secrets.token_hex(8), seed=seeds.randrange(2**31) if seeds else None,
        )

    return make("A", profile_a), make("B", profile_b)


class MatchRunner:
    def __init__(
        self,
        profile_a: str,
        profile_b: str,
        *,
        settings: HostSettings | None = None,
        seed: int | None = None,
        console: Console | None = None,
        style: str = "american",
        delay: float = 0.0,
        board_every: int = 20,
        connect_timeout: float = 30.0,
        log_dir: Path | None = None,
        mqtt: MqttSettings | None = None,
        config: Path | None = None,
    ) -> None:
        self.a, self.b = contestants(profile_a, profile_b, seed, config)
        # The bots read their profiles from here; a missing folder (no ./config: the built-ins) is not
        # passed on, since a bot refuses a --config that names no folder.
        self.config = config if config is not None and config.is_dir() else None
        base = settings or HostSettings()
        if mqtt is not None:  # a host id of its own on the broker: matches may share one
            mqtt = mqtt.model_copy(update={"host_id": f"match-{secrets.token_hex(4)}"})
        self.mqtt = mqtt
        self.host = Host(base.model_copy(
            update={"host": "127.0.0.1", "port": 0, "tokens": frozenset({self.a.token, self.b.token}), "mqtt": mqtt}
        ))
        self.console = console or Console()
        self.style = style
        self.delay = delay
        self.board_every = board_every
        self.connect_timeout = connect_timeout
        self.log_dir = log_dir or (base.records_dir or Path("records")) / "logs"
        self.processes: dict[str, BotProcess] = {}
        self.sessions: dict[str, BotSession] = {}
        self.result = MatchResult(self.a, self.b)

    async def run(self, games: int) -> MatchResult:
        started = time.monotonic()
        port = await self.host.start()
        self.processes = {
            c.label: BotProcess(c, port, self.log_dir / f"{c.name}-{c.token[:6]}.log", mqtt=self.mqtt,
                                state_dir=self.log_dir / "state" / f"{c.name}-{c.token[:6]}", config=self.config)
            for c in (self.a, self.b)
        }
        try:
            await asyncio.gather(*(p.start() for p in self.processes.values()))
            if games == 1:
                await self._play_one()
            else:
                await self._play_many(games)
        finally:
            self.result.seconds = time.monotonic() - started
            for session in self.sessions.values():
                if session.alive:
                    await session.goodbye("match over")
            await asyncio.gather(*(p.stop() for p in self.processes.values()))
            await self.host.close("match over")
        return self.result

    async def _session(self, who: Contestant) -> BotSession:
        """The contestant's connected bot; a process that crashed is started again (once a game)."""
        session = self.sessions.get(who.label)
        if session is not None and session.alive:
            return session
        process = self.processes[who.label]
        for _attempt in range(2):
            if not process.running:
                await process.start()
            try:
                session = await self.host.wait_for_bot(token=who.token, timeout=self.connect_timeout)
            except TimeoutError:
                await process.stop(timeout=0.5)
                continue
            self.sessions[who.label] = session
            return session
        raise MatchError(f"bot {who.name} ({who.profile}) did not connect; see {process.log_path}")

    async def _play(self, a_side: Side, watcher: GameWatcher | None = None) -> GameResult:
        first, second = (self.a, self.b) if a_side == Side.RED else (self.b, self.a)
        red, blue = await self._session(first), await self._session(second)
        game = await self.host.play_game(red, blue, on_move=watcher)
        self.result.games.append((game, a_side))
        return game

    async def _play_one(self) -> None:
        names = {Side.RED: self.a.name, Side.BLUE: self.b.name}
        with GameWatcher(self.console, names, style=self.style, delay=self.delay, every=self.board_every) as w:
            await self._play(Side.RED, w)

    async def _play_many(self, games: int) -> None:
        a, b = self.a, self.b
        columns = (
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[score]}"), TimeElapsedColumn(),
        )
        with Progress(*columns, console=self.console, transient=False) as progress:
            task = progress.add_task(f"{a.name} vs {b.name}", total=games, score="")
            for i in range(games):
                game = await self._play(Side.RED if i % 2 == 0 else Side.BLUE)
                score = f"{a.name} {self.result.tally(a).score} : {self.result.tally(b).score} {b.name}"
                progress.update(task, advance=1, score=score)
                if game.forfeits:
                    progress.console.print(f"[yellow]{terminal_safe(game.summary())}[/yellow]")


async def run_match(profile_a: str, profile_b: str, *, games: int, **options: Any) -> MatchResult:
    """Play ``games`` games between two profiles; ``options`` are MatchRunner's."""
    return await MatchRunner(profile_a, profile_b, **options).run(games)


def result_table(result: MatchResult) -> Table:
    count = len(result.games)
    table = Table(title=f"{result.a.name} vs {result.b.name}: {count} game{'' if count == 1 else 's'}")
    for column in ("bot", "profile", "W", "D", "L", "F", "score", "ms/move"):
        table.add_column(column, justify="left" if column in ("bot", "profile") else "right")
    for who in (result.a, result.b):
        t = result.tally(who)
        per_move = f"{1000 * t.think_seconds / t.moves:.1f}" if t.moves else "-"
        table.add_row(who.name, who.profile, str(t.wins), str(t.draws), str(t.losses), str(t.forfeits),
                      str(t.score), per_move)
    return table


def result_summary(result: MatchResult) -> str:
    """Game lengths, time and how the games ended, under the table."""
    if not result.games:
        return "no games played"
    plies = [g.plies for g, _ in result.games]
    seconds = [g.seconds for g, _ in result.games]
    reasons = ", ".join(f"{reason} {n}" for reason, n in result.reasons.most_common())
    rate = len(result.games) / result.seconds if result.seconds > 0 else 0.0
    return (
        f"plies a game: mean {statistics.fmean(plies):.0f}, min {min(plies)}, max {max(plies)}\n"
        f"seconds a game: mean {statistics.fmean(seconds):.2f} ({rate:.2f} games/s over the match)\n"
        f"ends: {reasons}"
    )
