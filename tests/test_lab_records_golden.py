"""The lab's records for a seed do not change when the referee's code does: a small seeded match (random
against minimax at depth 1, classic and barrage, paired games with the colours swapped) is played through
the runner and every record, but for its wall-clock start time, must equal the one written when the
referee core (engine_ext/rules/referee.py) replaced the lab's own game loop. A change that moves a byte of
a record (a move, a reason, a field's order) fails here; a deliberate one rewrites the files with
``PERSPECTO_WRITE_GOLDEN=1`` and says why in its commit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.config import get_profile
from engine_ext.lab.runner import GeneratedSetups, Limits, Match, Rules, make_player, run_matches
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, Ruleset

GOLDEN = Path(__file__).parent / "data" / "lab_records"
_STARTED = '"started":"'


def _match(ruleset: Ruleset, records: Path) -> Match:
    limits = Limits(depth=1)
    a = make_player("random", get_profile("random"), label="A")
    b = make_player("minimax", get_profile("minimax"), label="B", depth=limits.depth)
    return Match(a, b, pairs=2, source=GeneratedSetups(ruleset), seed=11, limits=limits,
                 rules=Rules(ruleset=ruleset.name, move_limit=300), records=records)


def _without_start_time(text: str) -> str:
    head, sep, tail = text.partition(_STARTED)
    assert sep, "a record without its start time"
    return head + _STARTED + tail.partition('"')[2]


def play_golden_match(folder: Path) -> dict[str, str]:
    """Every record of the match by file name, its start time blanked."""
    for ruleset in (CLASSIC, BARRAGE):
        run_matches([_match(ruleset, folder / ruleset.name)])
    return {f"{path.parent.name}-{path.name}": _without_start_time(path.read_text(encoding="utf-8"))
            for path in sorted(folder.glob("*/*.json"))}


@pytest.mark.slow
def test_the_lab_writes_the_same_records_for_a_seed(tmp_path: Path) -> None:
    played = play_golden_match(tmp_path)
    if os.environ.get("PERSPECTO_WRITE_GOLDEN") == "1":
        for name, text in played.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    expected = {path.name: path.read_text(encoding="utf-8") for path in sorted(GOLDEN.glob("*.json"))}
    assert len(expected) == 8
    assert sorted(played) == sorted(expected)
    for name, text in played.items():
        assert text == expected[name], f"{name} differs from its golden record"
