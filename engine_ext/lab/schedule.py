"""Which pairings a lab run plays: one match, a gauntlet (one engine against a list) or a round robin.

Pure: names in, pairings out; ``build_matches`` turns them into ``runner.Match`` objects that share one
seed, so every pairing of a run plays the same setups with the same engine seeds.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from engine_ext.lab.runner import (
    LabError,
    LabProfile,
    Limits,
    Match,
    Rules,
    SetupSource,
    make_player,
    parse_param,
    player_names,
)
from engine_ext.lab.sprt import SprtSpec


def pairings(a: str | None = None, b: str | None = None, *, gauntlet: Sequence[str] | None = None,
             round_robin: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """``A B``: one pairing; ``A --gauntlet B C``: A against each; ``--round-robin A B C``: everyone
    against everyone (A-B, A-C, B-C). Exactly one of the three; a ``LabError`` says what is wrong."""
    if round_robin is not None:
        if a is not None or b is not None or gauntlet is not None:
            raise LabError("--round-robin takes the profiles itself: give no A, B or --gauntlet with it")
        names = list(dict.fromkeys(round_robin))
        if len(names) < 2:
            raise LabError("--round-robin needs at least two different profiles")
        return list(itertools.combinations(names, 2))
    if gauntlet is not None:
        if a is None or b is not None:
            raise LabError("--gauntlet: give the one engine as A and its opponents after --gauntlet")
        if not gauntlet:
            raise LabError("--gauntlet needs at least one opponent")
        return [(a, opponent) for opponent in dict.fromkeys(gauntlet)]
    if a is None or b is None:
        raise LabError("name two profiles (A B), or use --gauntlet or --round-robin")
    return [(a, b)]


def build_matches(
    plan: Iterable[tuple[str, str]],
    profile: Callable[[str], LabProfile],
    *,
    pairs: int,
    source: SetupSource,
    seed: int,
    limits: Limits,
    rules: Rules,
    params: Sequence[str] = (),
    records: Path | None = None,
    sprt: SprtSpec | None = None,
) -> list[Match]:
    """One ``Match`` a pairing; ``profile`` looks a name up (and raises on an unknown one). Every player is
    built (and its parameters validated) before any game starts."""
    plan = list(plan)
    named = {name for pairing in plan for name in pairing}
    for item in params:
        side = parse_param(item)[0]
        if side.upper() not in ("A", "B") and side not in named:
            raise LabError(f"--param {item!r}: {side!r} is neither A, B nor a profile of this run "
                           f"({', '.join(sorted(named))})")
    matches = []
    for a_name, b_name in plan:
        names = player_names([a_name, b_name])
        a = make_player(names[0], profile(a_name), label="A", params=params, depth=limits.depth)
        b = make_player(names[1], profile(b_name), label="B", params=params, depth=limits.depth)
        matches.append(Match(a, b, pairs=pairs, source=source, seed=seed, limits=limits, rules=rules,
                             records=records, sprt=sprt))
    return matches
