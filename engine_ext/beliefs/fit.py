"""Fitting the soft-evidence tables from game records (``perspecto beliefs fit RECORDS...``).

A lab record (engine_ext/rules/record.py) holds both setups, so every piece's true rank is known. Each
game is replayed with full information; the same ``GameTracker`` the model uses reports what a hidden
piece did, and the fit counts it by the true relation between the piece and the known piece it reacted
to (evidence.py), and, every ``UNMOVED_EVERY`` plies, which hidden live pieces have not moved yet, by
true rank and ply bucket. Probabilities are Laplace-smoothed counts (add one per outcome; the unmoved
share adds a half of each); bombs and the flag never move, so their unmoved probability is exactly 1.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine_ext.beliefs.events import GameTracker
from engine_ext.beliefs.evidence import (
    DEFAULT_FLOOR,
    DEFAULT_REPEATS,
    N_RANKS,
    OUTCOMES,
    PLY_EDGES,
    RELATIONS,
    FloatArray,
    Likelihoods,
    ply_bucket,
    relation,
)
from engine_ext.rules.game import Game, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import Square, get_ruleset

UNMOVED_EVERY = 2  # plies between two samples of the unmoved state
_RULE_KEYS = ("range_attacks", "two_squares", "more_squares", "move_limit")


class RecordError(ValueError):
    """A record that cannot be replayed; the message names the file and the ply."""


def record_files(paths: Iterable[Path]) -> list[Path]:
    """The ``*.json`` records under the given files and directories, sorted."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(path.rglob("*.json")))
        elif path.is_file():
            out.append(path)
        else:
            raise FileNotFoundError(f"no record file or directory {path}")
    return out


def start_game(record: GameRecord) -> Game:
    """The record's game before its first move, with both setups known."""
    rules = {k: v for k, v in record.options.items() if k in _RULE_KEYS}
    options = RulesOptions(ruleset=get_ruleset(record.ruleset), **rules)

    def placement(setup: dict[str, str]) -> dict[Square, Rank]:
        return {Square.parse(sq): Rank.parse(rank) for sq, rank in setup.items()}

    return Game(options, placement(record.red.setup), placement(record.blue.setup))


def replay(record: GameRecord, game: Game) -> Iterator[MoveResult]:
    """Play the record's moves on ``game`` (from ``start_game``), yielding each history entry."""
    for ply, recorded in enumerate(record.moves, start=1):
        try:
            played = game.play(Move.parse(recorded.move))
        except ValueError as exc:  # IllegalMove is a ValueError
            raise RecordError(f"ply {ply}: {recorded.move}: {exc}") from None
        yield played


@dataclass
class FitCounts:
    """The raw counts behind the tables."""

    behaviour: dict[str, FloatArray] = field(
        default_factory=lambda: {s: np.zeros((len(o), len(RELATIONS))) for s, o in OUTCOMES.items()})
    unmoved: FloatArray = field(default_factory=lambda: np.zeros((len(PLY_EDGES), N_RANKS)))
    samples: FloatArray = field(default_factory=lambda: np.zeros((len(PLY_EDGES), N_RANKS)))
    games: int = 0
    plies: int = 0
    skipped: list[str] = field(default_factory=list)

    def add_game(self, record: GameRecord) -> None:
        game = start_game(record)
        tracker = GameTracker(game)
        true_rank = [tracker.rank(pid) for pid in range(tracker.piece_count)]
        self._sample_unmoved(tracker, true_rank)
        for entry in replay(record, game):
            for b in tracker.step(entry):
                o = OUTCOMES[b.situation].index(b.outcome)
                self.behaviour[b.situation][o, relation(b.situation, true_rank[b.pid], b.known_rank)] += 1
            if tracker.ply % UNMOVED_EVERY == 0:
                self._sample_unmoved(tracker, true_rank)
        self.games += 1
        self.plies += tracker.ply

    def merge(self, other: FitCounts) -> None:
        for situation, table in other.behaviour.items():
            self.behaviour[situation] += table
        self.unmoved += other.unmoved
        self.samples += other.samples
        self.games += other.games
        self.plies += other.plies

    def _sample_unmoved(self, tracker: GameTracker, true_rank: Sequence[int]) -> None:
        bucket = ply_bucket(tracker.ply)
        for pid in range(tracker.piece_count):
            if tracker.shown[pid]:
                continue
            sq, _owner, _rank, moves = tracker.pos.piece(pid)
            if sq < 0:
                continue
            self.samples[bucket, true_rank[pid]] += 1
            if moves == 0:
                self.unmoved[bucket, true_rank[pid]] += 1

    def likelihoods(self, floor: float = DEFAULT_FLOOR, source: str = "",
                    repeats: float = DEFAULT_REPEATS) -> Likelihoods:
        unmoved = (self.unmoved + 0.5) / (self.samples + 1.0)
        unmoved[:, [int(Rank.FLAG), int(Rank.BOMB)]] = 1.0
        behaviour = {}
        for situation, table in self.behaviour.items():
            behaviour[situation] = (table + 1.0) / (table.sum(axis=0, keepdims=True) + table.shape[0])
        info = {
            "fitted": True,
            "records": source,
            "games": self.games,
            "plies": self.plies,
            "behaviour_counts": {s: {o: [int(v) for v in t[i]] for i, o in enumerate(OUTCOMES[s])}
                                 for s, t in self.behaviour.items()},
            "unmoved_samples": [int(v) for v in self.samples.sum(axis=1)],
            "fitted_on": datetime.date.today().isoformat(),
        }
        return Likelihoods(unmoved, behaviour, floor, info, repeats)


def fit_records(paths: Sequence[Path], floor: float = DEFAULT_FLOOR, note: str = "",
                repeats: float = DEFAULT_REPEATS) -> tuple[Likelihoods, FitCounts]:
    """Fit the tables on every record under ``paths``; ``note`` (how the records were made) is kept in
    the tables' source. Records that cannot be replayed are listed in ``FitCounts.skipped``."""
    counts = FitCounts()
    for path in record_files(paths):
        try:
            one = FitCounts()  # a record that fails half way leaves no counts behind
            one.add_game(GameRecord.load(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            counts.skipped.append(f"{path}: {exc}")
            continue
        counts.merge(one)
    if counts.games == 0:
        raise ValueError(f"no game record could be replayed under {', '.join(map(str, paths))}")
    source = note or ", ".join(str(p) for p in paths)
    return counts.likelihoods(floor, source, repeats), counts
