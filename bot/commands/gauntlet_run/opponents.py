"""What a gauntlet plays: its opponents (UCC programs by profile or path) and the games against each."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.config import BotProfile, ProfileError, profile_from_mapping
from bot.profiles import ProfileSet
from bot.ucc.engine import UccCommandError, UccEngineParams

UCC_PREFIX = "ucc-"  # the shipped sparring profiles: ucc-peternlewis, ucc-celsius, ...


class GauntletError(ValueError):
    """A gauntlet that cannot start: an unknown opponent, no referee, a bad option; the message says why."""


@dataclass(frozen=True)
class Opponent:
    """A program to play: its name in the records and tables, its profile (``engine = "ucc"``)."""

    name: str
    profile: BotProfile

    @property
    def params(self) -> UccEngineParams:
        return UccEngineParams.model_validate(self.profile.engine_param_values())


def resolve_opponents(names: Sequence[str], profiles: ProfileSet, *, here: bool = True) -> list[Opponent]:
    """Profiles by name (each must be ``engine = "ucc"``), or programs by path; none: every ucc-* profile.
    ``here``: the programs must run on this machine (not with --cluster: each worker says what it runs)."""
    if not names:
        names = sorted(n for n in profiles.profiles if n.startswith(UCC_PREFIX))
        if not names:
            raise GauntletError(f"no opponents given and the configuration has no {UCC_PREFIX}* profiles")
    out: list[Opponent] = []
    for name in dict.fromkeys(names):
        if name in profiles.profiles:
            profile = profiles.profiles[name]
            if profile.engine != "ucc":
                raise GauntletError(f"{name!r} is a {profile.engine} profile: the gauntlet plays UCC programs "
                                    '(a profile with engine = "ucc", or a program\'s path)')
            out.append(Opponent(name, profile))
            continue
        path = Path(name)
        if os.sep in name or path.is_file():
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise GauntletError(f"{name}: not an executable file")
            label = path.name.removesuffix(".py")
            try:
                profile = profile_from_mapping({"name": label, "engine": "ucc",
                                                "engine_params": {"command": shlex.quote(str(path.resolve()))}},
                                               source=f"program {name}")
            except ProfileError as exc:
                raise GauntletError(str(exc)) from None
            out.append(Opponent(label, profile))
            continue
        known = ", ".join(sorted(n for n, p in profiles.profiles.items() if p.engine == "ucc"))
        raise GauntletError(f"{name!r} is neither a profile nor a program's path (ucc profiles: {known})")
    for opponent in out if here else ():
        try:
            opponent.params.argv()  # $PERSPECTO_UCC2012 set, the program there: say so now, not in every game
        except UccCommandError as exc:
            raise GauntletError(f"{opponent.name}: {exc}") from None
    labels = [o.name for o in out]
    if len(set(labels)) != len(labels):
        raise GauntletError(f"two opponents with the same name: {', '.join(labels)}")
    return out


def games_per_opponent(opponents: Sequence[Opponent], games: int, overrides: Sequence[str]) -> dict[str, int]:
    counts = {o.name: games for o in opponents}
    for item in overrides:
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise GauntletError(f"--games-against {item!r}: expected OPPONENT=N")
        name = name.strip()
        match = [o.name for o in opponents if name in (o.name, o.name.removeprefix(UCC_PREFIX))]
        if not match:
            raise GauntletError(f"--games-against {item!r}: {name!r} is not an opponent of this gauntlet")
        counts[match[0]] = int(value)
    for name, n in counts.items():
        if n < 1:
            raise GauntletError(f"{name}: at least one game, not {n}")
    return counts
