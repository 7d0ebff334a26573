"""Evidence for the belief model, as declarative likelihood tables with their sources.

Hard evidence (exact; no table):
- a piece that has moved is neither a bomb nor the flag (``MOVED_MASK``);
- a piece revealed by a fight or by a scout's long move is its rank (a one-hot row);
- ranks captured so far leave the pool (the column targets of the fitting in model.py).

Soft evidence (the tables in ``data/likelihoods.json``, written by ``perspecto beliefs fit RECORDS``
from lab game records, where both setups and so every true rank are known):
- ``unmoved``: P(a hidden piece has not moved yet | its rank, the game's ply bucket ``PLY_EDGES``);
  an unmoved piece is weighed by it, a moved one by 1 - it (whose zero for bombs and the flag is the
  hard evidence above). It is a state, recomputed at every update, never multiplied up over moves.
- ``near`` and ``threat`` (engine_ext/beliefs/events.py says what they are): P(outcome | relation),
  where the relation is how a fight between the hidden piece and the known piece it reacted to would
  end for the hidden piece: ``wins``, ``ties`` or ``loses`` (near: the hidden piece attacking;
  threat: the known piece attacking it). Conditioning on the relation, not the rank, lets a few
  hundred games fill the table. Each behaviour multiplies the piece's row by one vector over ranks.

The bluff floor: a behaviour's likelihood ratio between relations is never below ``floor`` (of the
largest), so one bold move is never proof: a piece that approached our known marshal keeps at least
``floor`` times the weight of a real threat for every rank it would lose with.

Repeats: the same behaviour of the same piece towards the same known rank (a piece that steps towards
our marshal on five moves in a row) is not five independent proofs. The first time it weighs fully,
every repeat with the exponent ``repeats`` (0: counted once, 1: every time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS, Rank, combat

FloatArray = npt.NDArray[np.float64]
N_RANKS = 13
LIKELIHOODS_FORMAT = "perspecto-beliefs-likelihoods/1"
RELATIONS = ("wins", "ties", "loses")
OUTCOMES: dict[str, tuple[str, ...]] = {
    "near": ("approach", "flee"),  # a one-square move always changes a Manhattan distance by one
    "threat": ("stay", "move"),
}
# Ply buckets of the unmoved table: bucket b holds plies PLY_EDGES[b] .. PLY_EDGES[b + 1] - 1.
PLY_EDGES = (0, 10, 25, 50, 100, 200, 400, 800)
DEFAULT_FLOOR = 0.25
DEFAULT_REPEATS = 0.0
REAL_RANKS = [int(r) for r in Rank if r != Rank.UNKNOWN]

# A moved piece: every rank but bomb and flag.
MOVED_MASK = np.ones(N_RANKS)
MOVED_MASK[[int(Rank.FLAG), int(Rank.BOMB), int(Rank.UNKNOWN)]] = 0.0
MOVED_MASK.setflags(write=False)


def _relation_tables() -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """ATTACKING[r, k]: relation of a hidden r attacking a known k; DEFENDING[r, k]: of a hidden r
    attacked by a known k (index into RELATIONS)."""
    attacking = np.zeros((N_RANKS, N_RANKS), dtype=np.int64)
    defending = np.zeros((N_RANKS, N_RANKS), dtype=np.int64)
    as_attacker = {ATTACKER_WINS: 0, BOTH_DIE: 1, DEFENDER_WINS: 2}
    as_defender = {DEFENDER_WINS: 0, BOTH_DIE: 1, ATTACKER_WINS: 2}
    for r in REAL_RANKS:
        for k in REAL_RANKS:
            if k not in (int(Rank.FLAG), int(Rank.BOMB)):
                defending[r, k] = as_defender[combat(Rank(k), Rank(r))]
            if r not in (int(Rank.FLAG), int(Rank.BOMB)):
                attacking[r, k] = as_attacker[combat(Rank(r), Rank(k))]
    return attacking, defending


ATTACKING, DEFENDING = _relation_tables()


def relation(situation: str, rank: int, known_rank: int) -> int:
    """Index into RELATIONS of a hidden ``rank`` towards a known ``known_rank``."""
    table = ATTACKING if situation == "near" else DEFENDING
    return int(table[rank, known_rank])


def ply_bucket(ply: int) -> int:
    bucket = 0
    for b, edge in enumerate(PLY_EDGES):
        if ply >= edge:
            bucket = b
    return bucket


@dataclass(frozen=True)
class Likelihoods:
    """The soft-evidence tables (see the module docstring) and where they come from."""

    unmoved: FloatArray  # (len(PLY_EDGES), N_RANKS): P(unmoved | rank, ply bucket)
    behaviour: Mapping[str, FloatArray]  # situation -> (outcomes, RELATIONS): P(outcome | relation)
    floor: float = DEFAULT_FLOOR
    source: Mapping[str, Any] = field(default_factory=dict)
    repeats: float = DEFAULT_REPEATS
    # situation -> (outcomes, N_RANKS known rank, N_RANKS hidden rank): the vector each behaviour multiplies in
    _vectors: dict[str, FloatArray] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 0.0 < self.floor <= 1.0:
            raise ValueError(f"the bluff floor must be in (0, 1], not {self.floor}")
        if not 0.0 <= self.repeats <= 1.0:
            raise ValueError(f"the weight of repeated behaviours must be in [0, 1], not {self.repeats}")
        for situation, outcomes in OUTCOMES.items():
            table = np.asarray(self.behaviour[situation], dtype=np.float64)
            if table.shape != (len(outcomes), len(RELATIONS)):
                raise ValueError(f"{situation} table has shape {table.shape}, wants {(len(outcomes), len(RELATIONS))}")
            floored = np.maximum(table, self.floor * table.max(axis=1, keepdims=True))
            ratios = floored / floored.max(axis=1, keepdims=True)
            relations = ATTACKING if situation == "near" else DEFENDING
            # vectors[o, k, r] = ratios[o, relation(r, k)]
            self._vectors[situation] = np.ascontiguousarray(ratios[:, relations.T])

    def vector(self, situation: str, outcome: str, known_rank: int) -> FloatArray:
        """The likelihood ratio over the hidden piece's ranks for one behaviour (max 1, min floor)."""
        o = OUTCOMES[situation].index(outcome)
        return self._vectors[situation][o, known_rank]

    def unmoved_row(self, ply: int) -> FloatArray:
        return self.unmoved[ply_bucket(ply)]

    # Files ---------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": LIKELIHOODS_FORMAT,
            "source": dict(self.source),
            "floor": self.floor,
            "repeats": self.repeats,
            "ply_edges": list(PLY_EDGES),
            "ranks": [Rank(r).label for r in REAL_RANKS],
            "unmoved": [[round(float(self.unmoved[b, r]), 6) for r in REAL_RANKS] for b in range(len(PLY_EDGES))],
            "relations": list(RELATIONS),
            "behaviour": {
                situation: {outcome: [round(float(v), 6) for v in self.behaviour[situation][o]]
                            for o, outcome in enumerate(outcomes)}
                for situation, outcomes in OUTCOMES.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Likelihoods:
        if data.get("format") != LIKELIHOODS_FORMAT:
            raise ValueError(f"not a {LIKELIHOODS_FORMAT} file (format is {data.get('format')!r})")
        if list(data["ply_edges"]) != list(PLY_EDGES):
            raise ValueError(f"ply buckets {data['ply_edges']} differ from the model's {list(PLY_EDGES)}")
        unmoved = np.zeros((len(PLY_EDGES), N_RANKS))
        for r_index, label in enumerate(data["ranks"]):
            rank = int(Rank[label.upper()])
            unmoved[:, rank] = [row[r_index] for row in data["unmoved"]]
        behaviour = {
            situation: np.array([data["behaviour"][situation][o] for o in outcomes], dtype=np.float64)
            for situation, outcomes in OUTCOMES.items()
        }
        return cls(unmoved, behaviour, float(data["floor"]), dict(data.get("source", {})),
                   float(data.get("repeats", DEFAULT_REPEATS)))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Likelihoods:
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

    def with_floor(self, floor: float) -> Likelihoods:
        return Likelihoods(self.unmoved, self.behaviour, floor, self.source, self.repeats)

    def with_repeats(self, repeats: float) -> Likelihoods:
        return Likelihoods(self.unmoved, self.behaviour, self.floor, self.source, repeats)


def neutral_likelihoods() -> Likelihoods:
    """No soft evidence at all: every behaviour and the unmoved state weigh every rank alike (the
    moved-piece mask and reveals still apply). The baseline the fitted tables are measured against."""
    unmoved = np.full((len(PLY_EDGES), N_RANKS), 0.5)
    behaviour = {s: np.full((len(o), len(RELATIONS)), 1.0 / len(o)) for s, o in OUTCOMES.items()}
    return Likelihoods(unmoved, behaviour, 1.0, {"fitted": False})


def likelihoods_path() -> Path:
    return Path(str(resources.files("engine_ext.beliefs") / "data" / "likelihoods.json"))


@lru_cache(maxsize=1)
def shipped_likelihoods() -> Likelihoods:
    """The fitted tables shipped with the package (``neutral_likelihoods`` if none were fitted)."""
    path = likelihoods_path()
    if not path.is_file():
        return neutral_likelihoods()
    return Likelihoods.load(path)
