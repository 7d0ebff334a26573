"""The referee's route: the referee ``stratego``, the programs it runs (the opponents', our ``perspecto ucc``
wrapper) and a single-arm run's jobs through it."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from bot.commands.gauntlet_run.jobs import Clock, GauntletJob, game_id, interleaved, slot_side
from bot.commands.gauntlet_run.opponents import GauntletError, Opponent

REFEREE_ENV = "PERSPECTO_UCC2012_REFEREE"
PROGRAMS_ENV = "PERSPECTO_UCC2012"


def find_referee(given: Path | None) -> Path:
    """``--referee``, else $PERSPECTO_UCC2012_REFEREE, else the build's referee beside $PERSPECTO_UCC2012."""
    if given is not None:
        candidates = [given]
    elif os.environ.get(REFEREE_ENV):
        candidates = [Path(os.environ[REFEREE_ENV])]
    elif os.environ.get(PROGRAMS_ENV):
        candidates = [Path(os.environ[PROGRAMS_ENV]).parent / "judge" / "manager" / "stratego"]
    else:
        raise GauntletError(f"no referee: give --referee PATH, or set {REFEREE_ENV} (or {PROGRAMS_ENV}, the build's "
                            "bin/ folder: the sparring set's opponents/ucc2012/build OUT prints both)")
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path.resolve()
    raise GauntletError(f"the referee {candidates[0]} is not an executable file")


def program_path(opponent: Opponent, folder: Path) -> Path:
    """What the referee runs for the opponent: the program itself when its command is one executable with no
    working directory of its own, else a small sh wrapper in ``folder`` (the referee passes no arguments)."""
    params = opponent.params
    argv = params.argv()
    if len(argv) == 1 and params.cwd is None:
        found = shutil.which(argv[0]) if os.sep not in argv[0] else argv[0]
        if found:
            return Path(found).resolve()
    wrapper = folder / f"{opponent.name}.sh"
    cd = f"cd {shlex.quote(str(params.cwd.resolve()))}\n" if params.cwd is not None else ""
    wrapper.write_text(f"#!/bin/sh\n{cd}exec {shlex.join(argv)}\n", encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def write_our_wrapper(path: Path, profile: str, move_time: float, config: str | None,
                      state_dir: Path | None = None, command: Sequence[str] | None = None) -> None:
    """``perspecto ucc --write-wrapper``, run as a user would: the wrapper is exactly the documented one; it
    learns in ``state_dir`` (None: learns nothing). ``command``: another Perspecto (a baseline's worktree)."""
    from bot.commands.ucc import perspecto_command

    argv = [*(command or perspecto_command()), "ucc", "--write-wrapper", str(path), "--profile", profile,
            "--move-time", f"{move_time:g}"]
    if config is not None:
        argv += ["--config", config]
    argv += ["--no-learn"] if state_dir is None else ["--state-dir", str(state_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise GauntletError(f"perspecto ucc --write-wrapper failed ({done.returncode}): "
                            f"{(done.stderr or done.stdout).strip()[-500:]}")


def referee_jobs(args: argparse.Namespace, opponents: list[Opponent], counts: dict[str, int], ours: str,
                 records: Path) -> list[GauntletJob]:
    work = records / "referee"
    work.mkdir(parents=True, exist_ok=True)
    referee: Path | None = None
    our_program: Path | None = None
    programs: dict[str, Path] = {}
    if args.cluster is None:  # on a cluster each worker puts its own (bot/commands/gauntlet_run/cluster.py)
        referee = find_referee(args.referee)
        our_program = work / f"{ours}-ucc"
        # This run's own memory, as a tournament's would start: never the user's state folder.
        write_our_wrapper(our_program, ours, args.move_time, args.config,
                          None if args.no_learn else records / "state")
        programs = {o.name: program_path(o, work) for o in opponents}
    clock = Clock(args.move_time, args.max_turns, args.wall_time)
    return [GauntletJob(game_id=game_id(ours, o.name, index), ours=ours, opponent=o.name, slot=index,
                        our_side=slot_side(index), clock=clock, via="referee", work=work, referee=referee,
                        our_program=our_program, opponent_program=programs.get(o.name))
            for o, index in interleaved(opponents, counts)]
