"""A lab run's saved progress: the games finished so far, so that ``perspecto match ... --resume`` carries on.

One file a run, next to its records: ``RECORDS/SPAN-sSEED.progress.jsonl`` (``progress_path``). It is JSON
lines: the first line says which run it belongs to (``RunKey``: every match's pairing, profiles and
parameters, seed, limits, rules, setups, SPRT), every further line is one finished game (a
``GameOutcome``), appended and flushed as the game comes back. Appending keeps the cost of a save the
same at game 10 and at game 10 000, and a run that dies mid-write leaves at most its last line torn, which
``load_progress`` skips (that game is simply played again). The same game twice (a worker that finished
it just before it was declared lost) is kept once: games are keyed by their index in the match.

Resuming plays the same games: the setups, seeds and limits of a pair are functions of the match seed and
the pair's index alone (engine_ext/lab/runner.py), so the pairs not yet finished are the same games they
would have been, and the finished ones are read back rather than played again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from engine_ext.lab.runner import GameOutcome, LabError, Match
from engine_ext.rules.pieces import Side
from engine_ext.rules.referee import canonical_reason

FORMAT = "perspecto-lab-progress/1"


def run_key(matches: Sequence[Match]) -> dict[str, Any]:
    """What makes two runs the same run (their games are the same games): everything but the number of
    pairs, so a resumed run may also ask for more games than the first."""
    return {
        "format": FORMAT,
        "matches": [
            {"label": m.label, "seed": m.seed, "a": m.a.profile.name, "b": m.b.profile.name,
             "a_params": m.a.profile.engine_params_set(), "b_params": m.b.profile.engine_params_set(),
             "limits": asdict(m.limits), "rules": asdict(m.rules), "setups": m.source.description,
             "sprt": None if m.sprt is None else asdict(m.sprt)}
            for m in matches
        ],
    }


def progress_path(folder: Path, matches: Sequence[Match]) -> Path:
    """``FOLDER/LABEL-sSEED.progress.jsonl`` (the first pairing's label, ``+N`` for the N more of a gauntlet
    or a round robin)."""
    first = matches[0]
    more = f"+{len(matches) - 1}" if len(matches) > 1 else ""
    return folder / f"{first.label}{more}-s{first.seed}.progress.jsonl"


def outcome_to_json(outcome: GameOutcome) -> dict[str, Any]:
    return {
        "match": outcome.match, "index": outcome.index, "pair": outcome.pair, "a_side": str(outcome.a_side),
        "winner": None if outcome.winner is None else str(outcome.winner), "reason": outcome.reason,
        "plies": outcome.plies, "forfeit": None if outcome.forfeit is None else str(outcome.forfeit),
        "detail": outcome.detail, "seconds": outcome.seconds, "nodes": list(outcome.nodes),
        "record_path": None if outcome.record_path is None else str(outcome.record_path),
    }


def outcome_from_json(data: Mapping[str, Any]) -> GameOutcome:
    """The inverse of ``outcome_to_json``; a ``KeyError``/``ValueError``/``TypeError`` on a bad line."""

    def side(value: Any) -> Side | None:
        return None if value is None else Side.parse(str(value))

    a_side = side(data["a_side"])
    if a_side is None:
        raise ValueError("a_side is missing")
    red_nodes, blue_nodes = (int(n) for n in data["nodes"])
    return GameOutcome(
        match=str(data["match"]), index=int(data["index"]), pair=int(data["pair"]), a_side=a_side,
        winner=side(data["winner"]), reason=canonical_reason(str(data["reason"])), plies=int(data["plies"]),
        forfeit=side(data["forfeit"]), detail=None if data["detail"] is None else str(data["detail"]),
        seconds=float(data["seconds"]), nodes=(red_nodes, blue_nodes),
        record_path=None if data["record_path"] is None else Path(data["record_path"]),
    )


@dataclass(frozen=True)
class SavedProgress:
    key: dict[str, Any]
    outcomes: tuple[GameOutcome, ...]
    torn_lines: int  # lines that were not a game (a run that died mid-write): their games are played again


def load_progress(path: Path) -> SavedProgress:
    """The saved games of ``path``; a ``LabError`` if it cannot be read or is not a progress file."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise LabError(f"cannot read the saved progress {path}: {exc.strerror or exc}") from None
    try:
        key = json.loads(lines[0]) if lines else None
    except json.JSONDecodeError:
        key = None
    if not isinstance(key, dict) or key.get("format") != FORMAT:
        raise LabError(f"{path} is not a lab progress file ({FORMAT})")
    outcomes: dict[tuple[str, int], GameOutcome] = {}
    torn = 0
    for line in lines[1:]:
        try:
            outcome = outcome_from_json(json.loads(line))
        except (json.JSONDecodeError, KeyError, ValueError, TypeError):
            torn += 1
            continue
        outcomes.setdefault((outcome.match, outcome.index), outcome)
    return SavedProgress(key, tuple(outcomes.values()), torn)


def check_same_run(saved: SavedProgress, matches: Sequence[Match], path: Path) -> None:
    """A ``LabError`` naming the first difference if ``matches`` are not the run ``saved`` was made by."""
    key = run_key(matches)
    if saved.key == key:
        return
    old, new = saved.key.get("matches", []), key["matches"]
    if len(old) != len(new):
        raise LabError(f"{path} was saved by a run of {len(old)} pairing(s), not {len(new)}: "
                       "resume with the same command line")
    for before, now in zip(old, new, strict=True):
        for name in now:
            if before.get(name) != now[name]:
                raise LabError(f"{path} was saved by another run: {now['label']}'s {name} was "
                               f"{before.get(name)!r}, now {now[name]!r}; resume with the same command line")
    raise LabError(f"{path} was saved by another run; resume with the same command line")


class ProgressLog:
    """The open progress file of a run: ``start`` writes the run's key (a new file) or checks it (resuming),
    ``save`` appends one finished game."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[str] | None = None

    def start(self, matches: Sequence[Match], *, resume: bool) -> list[GameOutcome]:
        """Open the file; with ``resume`` return the games it already holds (checked to be of this run),
        else start it afresh. Resuming from a file that is not there is a ``LabError``."""
        saved: list[GameOutcome] = []
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if resume:
            if not self.path.exists():
                raise LabError(f"no saved progress to resume at {self.path} (is it the same command line, seed "
                               "and records folder?)")
            progress = load_progress(self.path)
            check_same_run(progress, matches, self.path)
            saved = list(progress.outcomes)
            self._file = self.path.open("a", encoding="utf-8")
            if progress.torn_lines:  # a torn last line: start the next save on a line of its own
                self._file.write("\n")
        else:
            self._file = self.path.open("w", encoding="utf-8")
            self._write(run_key(matches))
        return saved

    def save(self, outcome: GameOutcome) -> None:
        self._write(outcome_to_json(outcome))

    def save_all(self, outcomes: Iterable[GameOutcome]) -> None:
        for outcome in outcomes:
            self.save(outcome)

    def _write(self, data: Mapping[str, Any]) -> None:
        if self._file is None:
            raise RuntimeError("ProgressLog.start first")
        self._file.write(json.dumps(data, separators=(",", ":")) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())  # a scheduler or a machine that goes away loses no finished game

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
