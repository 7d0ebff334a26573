"""``perspecto ucc``: play one game as a child process of the UCC 2012 referee (docs/ucc.md).

The referee forfeits a program whose setup is not out within its -T seconds of starting it, so a game starts
in this order: only the rules, the UCC codec and the setup generator are imported (bot/ucc/opening.py); the
witness is forked (before any thread); the configuration and the engine start loading on a thread of their
own (``Preload``) at once if the colour line is not there within 50 ms (BLUE waits while RED sets up: time
to load in); the colour line is answered with the setup; the logs and the game loop's modules are imported on
a thread (``GameLoopImport``), then the loading starts if it has not, while the opening stage reads the
referee and sends our first move itself should it come due before they are there (``hold_first_move``); the
player plays random legal moves should a move be due before the engine is there. This module imports nothing
heavy at the top: bot/cli.py imports it before the setup.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import stat
import sys
import threading
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.ucc.opening import DEFAULT_MOVE_TIME

if TYPE_CHECKING:
    from bot.config import BotProfile
    from bot.daemon.learning import OpponentMemory
    from bot.profiles import ProfileSet
    from bot.settings import DaemonSettings
    from bot.ucc.player import ChosenEngine

LOG_LEVELS = ("debug", "info", "warning", "error")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ucc",
        help="play one game under the UCC 2012 Stratego manager (stdin/stdout)",
        description="Play one game as a child process of the UCC 2012 referee `stratego`: referee lines "
        "on stdin, answers on stdout, logs on stderr. The referee runs a bare path with no arguments, so "
        "first write a wrapper with these options: perspecto ucc --write-wrapper ./perspecto-ucc --profile "
        "random; then: stratego -T 2 ./perspecto-ucc other_bot (docs/ucc.md).",
    )
    p.add_argument("--profile", default=None, help="play this profile against everyone (default, as for "
                   "perspecto bot: the configuration's profile setting, else chosen per opponent by the name the "
                   "referee gives, else the default profile)")
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--move-time", type=float, default=DEFAULT_MOVE_TIME, metavar="S",
                   help=f"the referee's time for a move, its -T (default {DEFAULT_MOVE_TIME:g} s)")
    p.add_argument("--seed", type=int, default=None, help="seed for the setup, the engine and fallback moves")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="stderr log level (default info)")
    p.add_argument("--no-learn", action="store_true",
                   help="carry nothing from game to game: without it, what each game showed of the opponent's "
                   "setup and its fear are kept in the opponent store of the state folder ([state] in the "
                   "configuration) and prime the next game against the same name (docs/ucc.md)")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="the state folder whose opponent store it learns in (default: [state] dir of the "
                   "configuration, else $PERSPECTO_STATE_DIR, else $XDG_STATE_HOME/perspecto)")
    p.add_argument("--write-wrapper", type=Path, metavar="PATH",
                   help="play no game: write an executable sh script at PATH that runs this perspecto ucc with "
                   "the other options given (and the configuration directory, made absolute), for the referee")
    p.set_defaults(func=run)


# The most of one logged value written: our own longest (a board we drew, about 400 characters) fits whole; a
# peer's words (the opponent's name, a referee line, its board rows) are cut there, not logged in full (issue 46).
LOGGED_VALUE = 1000


def printable(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Every value as the log may write it: cut to ``LOGGED_VALUE`` characters, its control characters as
    escapes (a name with ESC[2J cleared the terminal the log was read on), newlines kept for the boards we draw
    (a peer's text has none: the reader splits lines on them). The renderer shows a list by its repr, which
    escapes its strings itself; only their length is bounded here."""
    from bot.safe_text import clip, visible

    for key, value in event.items():
        if isinstance(value, str):
            event[key] = visible(clip(value, LOGGED_VALUE), keep="\n")
        elif isinstance(value, list | tuple):
            event[key] = [clip(item, LOGGED_VALUE) if isinstance(item, str) else item for item in value]
    return event


def configure_logging(level: str) -> None:
    """structlog to stderr only: stdout carries the protocol and nothing else."""
    import logging

    import structlog

    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="%H:%M:%S.%f"),
            printable,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def _error(event: str, **fields: Any) -> None:
    import structlog

    structlog.get_logger().error(event, **fields)


def run(args: argparse.Namespace) -> int:
    if not args.move_time > 0:
        configure_logging(args.log_level)
        _error("ucc.bad_option", option="--move-time", value=args.move_time)
        return 2
    if args.write_wrapper is not None:
        return check_and_write_wrapper(args)
    return play(args)


def play(args: argparse.Namespace) -> int:
    """One game: the setup first, the engine loading meanwhile (the module's docstring)."""
    from bot.safe_text import clip
    from bot.ucc.opening import hold_first_move, input_within, load_generator, open_game
    from bot.ucc.witness import EndWitness

    rng = random.Random(args.seed)  # the setup's, then the player's: --seed replays the game
    load_generator()
    witness = EndWitness.start(lambda: configure_logging(args.log_level))  # before any thread starts: it forks
    # The colour line not there at once: the referee is busy with the other program's setup; load meanwhile.
    preload = None if input_within(0, 0.05) else Preload(args)
    opening, pending = open_game(0, sys.stdout, rng)
    # The game loop's own imports first, the engine's loading after them when not started before (RED's
    # first move is due within -T of START, which follows the setups at once); meanwhile this thread reads
    # the referee and covers the first move should it come due before the game loop is there.
    loop_import = GameLoopImport(args, start_preload=preload is None)
    first_move = None
    stamps: tuple[tuple[int, float], ...] = ()  # when the opening stage read the input it hands on
    if opening is not None:
        stage = hold_first_move(0, sys.stdout, opening, pending, loop_import.ready_fd, move_time=args.move_time,
                                rng=rng)
        if stage.quit is not None:  # the referee kills right after QUIT: go now, the witness logs it
            if witness is not None:
                witness.state({"colour": str(opening.colour.colour),
                               "opponent": clip(opening.colour.opponent, LOGGED_VALUE),
                               "profile": args.profile or "", "phase": "opening",
                               "first_move": None if stage.sent is None else str(stage.sent)})
                witness.log_quit(stage.quit)
            os._exit(0)
        pending, first_move, stamps = stage.pending, stage.sent, stage.stamps
    preload = loop_import.wait() or preload
    assert preload is not None
    from bot.ucc.player import run_ucc

    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # a stray print anywhere must not corrupt the protocol
    try:
        code = run_ucc(preload.engine_for, move_time=args.move_time, rng=rng, in_fd=0, out=protocol_out,
                       witness=witness, opening=opening, pending=pending, first_move=first_move,
                       stamps=stamps, profile_name=args.profile or "", profile_check=preload.check_profile)
    finally:
        sys.stdout = protocol_out
    try:
        protocol_out.flush()
    except (BrokenPipeError, ValueError):  # the referee closed our stdout: keep exit quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    if any(t.name in ("ucc-engine", "ucc-load") and t.is_alive() for t in threading.enumerate()):
        # QUIT came while the engine was thinking or loading; the referee wants us gone at once.
        sys.stderr.flush()
        os._exit(code)
    return code


class GameLoopImport:
    """The logs configured and the game loop's modules imported on a thread of its own, then the engine's
    loading started (``start_preload``); ``ready_fd`` turns readable when that is done, for the opening
    stage's ``select`` (bot/ucc/opening.py ``hold_first_move``)."""

    def __init__(self, args: argparse.Namespace, *, start_preload: bool) -> None:
        self._args = args
        self._start_preload = start_preload
        self.ready_fd, self._ready_w = os.pipe()
        self._preload: Preload | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="ucc-import", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            configure_logging(self._args.log_level)
            import bot.ucc.player  # noqa: F401

            if self._start_preload:
                self._preload = Preload(self._args)
        except BaseException as exc:  # raised again on the main thread by ``wait``
            self._error = exc
        finally:
            os.write(self._ready_w, b"!")

    def wait(self) -> Preload | None:
        """Until done: the loading it started (None if not asked to); an import's failure raises here."""
        self._thread.join()
        os.close(self.ready_fd)
        os.close(self._ready_w)
        if self._error is not None:
            raise self._error
        return self._preload


class Preload:
    """The configuration and the engine of the profile to play (the forced one, else the default one: the
    profile chosen by the opponent's name usually is the default, and its modules are the same), loaded on a
    thread of its own; ``engine_for`` waits for it and picks the profile for the opponent."""

    def __init__(self, args: argparse.Namespace) -> None:
        self._args = args
        self._done = threading.Event()
        self._configured = threading.Event()  # the configuration and the profile are read (or failed)
        self._loaded: tuple[BotProfile, ProfileSet | None, Any] | None = None
        self._memory: OpponentMemory | None = None
        self._error: BaseException | None = None
        # Named as the player's loader: bot/commands/ucc.py exits at once should QUIT come while it runs.
        threading.Thread(target=self._load, name="ucc-load", daemon=True).start()

    def _load(self) -> None:
        try:
            settings, profile, profiles = _configuration(self._args.config, self._args.profile)
            self._configured.set()
            self._loaded = (profile, profiles, profile.create_engine(self._args.seed))
            if settings.state.learn and not getattr(self._args, "no_learn", False):
                self._memory = open_memory(getattr(self._args, "state_dir", None) or settings.state.dir)
        except BaseException as exc:  # told to the player when it asks (exit 2)
            self._error = exc
        finally:
            self._configured.set()
            self._done.set()

    def check_profile(self) -> None:
        """Once the configuration and the profile are read (not the engine: it may take seconds more), raise
        what went wrong with them, if anything: for the player at the end of input (an unknown ``--profile``
        says so and exits 2 even when the input ends right after the colour line)."""
        self._configured.wait()
        if self._error is not None:
            raise self._error

    def engine_for(self, opponent: str) -> ChosenEngine:
        """The engine for ``opponent`` (the colour line's name), as ``perspecto bot`` chooses its profile;
        called on the player's loading thread. A bad configuration or profile raises (exit 2)."""
        from bot.ucc.player import ChosenEngine
        from engine_ext.engine.timeman import TimeLimits

        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._loaded is not None
        profile, profiles, engine = self._loaded
        seed = self._args.seed
        chosen = profiles.select(opponent) if profiles is not None else profile
        if chosen.name != profile.name:
            engine = chosen.create_engine(seed)
        return ChosenEngine(engine, TimeLimits.for_ucc(chosen, self._args.move_time), chosen.name,
                            renew=lambda: chosen.create_engine(seed), memory=self._memory)


def choose_profile(config: str | None, forced: str | None) -> tuple[BotProfile, ProfileSet | None]:
    """The profile to play as ``perspecto bot`` chooses it: ``--profile``, else the configuration's
    ``profile``; otherwise the default profile now and the ProfileSet to choose by the opponent's name
    (the referee's colour line gives it). A bad configuration raises ConfigError (bot/cli.py: exit 2)."""
    _settings, profile, profiles = _configuration(config, forced)
    return profile, profiles


def _configuration(config: str | None, forced: str | None) -> tuple[DaemonSettings, BotProfile, ProfileSet | None]:
    """``choose_profile``'s answer with the settings it read."""
    from bot.profiles import load_configuration

    settings, profiles = load_configuration(config)
    forced = forced or settings.profile
    if forced:
        return settings, profiles.get(forced), None
    return settings, profiles.select(None), profiles


def open_memory(state_dir: Path) -> OpponentMemory:
    """The opponent store in ``state_dir`` (bot/daemon/opponent_store.py) as ``perspecto bot`` keeps it; one that
    cannot be opened leaves a memory that learns nothing and says why in the log, never a lost game."""
    from bot.daemon.learning import OpponentMemory
    from bot.daemon.opponent_store import open_store, store_path

    store, problem = open_store(store_path(state_dir))
    if problem is not None:
        import structlog

        structlog.get_logger().warning("ucc.no_opponent_store", problem=problem)
    return OpponentMemory(store, problem=problem)


def check_and_write_wrapper(args: argparse.Namespace) -> int:
    """``--write-wrapper``: the profile is checked (and its engine started once) before the file is written."""
    from bot.config import ProfileError

    configure_logging(args.log_level)
    try:
        profile, profiles = choose_profile(args.config, args.profile)
        profile.create_engine(args.seed)  # a bad engine configuration fails here, not under the referee
    except ProfileError as exc:
        _error("ucc.bad_profile", error=str(exc))
        return 2
    return write_wrapper(args, profile, profiles)


def perspecto_command() -> list[str]:
    """This very Perspecto by absolute path: the console script that runs, else the one beside this
    interpreter (a venv's bin/), else this interpreter with ``-m bot.cli``."""
    running = Path(sys.argv[0])
    if running.name == "perspecto" and running.is_file():
        return [os.path.abspath(running)]
    beside = Path(sys.executable).parent / "perspecto"  # not resolved: a venv's python is a symlink
    if beside.is_file() and os.access(beside, os.X_OK):
        return [os.path.abspath(beside)]
    return [os.path.abspath(sys.executable), "-m", "bot.cli"]


WRAPPER_MARK = "# perspecto ucc wrapper"


def wrapper_text(args: argparse.Namespace) -> str:
    """The sh script: exec Perspecto's UCC player with the options given (the referee passes none)."""
    from bot import __version__
    from bot.settings import config_dir

    command = [*perspecto_command(), "ucc"]
    folder = config_dir(args.config)
    if folder.is_dir():
        command += ["--config", str(folder.resolve())]  # the referee's working directory is not ours
    if args.profile:
        command += ["--profile", args.profile]
    if args.move_time != DEFAULT_MOVE_TIME:
        command += ["--move-time", f"{args.move_time:g}"]
    if args.seed is not None:
        command += ["--seed", str(args.seed)]
    if args.log_level != "info":
        command += ["--log-level", args.log_level]
    if args.no_learn:
        command += ["--no-learn"]
    elif args.state_dir is not None:
        command += ["--state-dir", str(args.state_dir.resolve())]
    return (
        "#!/bin/sh\n"
        f"{WRAPPER_MARK}, written by perspecto {__version__} (perspecto ucc --write-wrapper).\n"
        "# The UCC 2012 referee runs a bare path with no arguments; this gives Perspecto its own.\n"
        f'exec {shlex.join(command)} "$@"\n'
    )


def write_wrapper(args: argparse.Namespace, profile: BotProfile, profiles: ProfileSet | None) -> int:
    from bot.settings import config_dir

    path: Path = args.write_wrapper
    if path.exists() and (not path.is_file() or WRAPPER_MARK not in path.read_text(errors="replace")[:200]):
        _error("ucc.wrapper_refused", path=str(path), why="there is a file of something else there")
        return 2
    try:
        path.write_text(wrapper_text(args), encoding="utf-8")
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    except OSError as exc:
        _error("ucc.wrapper_failed", path=str(path), error=exc.strerror or str(exc))
        return 2
    folder = config_dir(args.config)
    plays = (f"profile {profile.name!r}" if profiles is None else
             f"the profile chosen by the opponent's name, else {profile.name!r}")
    where = f"configuration {folder.resolve()}" if folder.is_dir() else "no configuration: the built-in profiles"
    print(f"wrote {path}: it plays {plays} ({where}).\n"
          f"Under the referee: stratego -T {args.move_time:g} {shlex.quote(str(path))} OTHER_PROGRAM")
    return 0
