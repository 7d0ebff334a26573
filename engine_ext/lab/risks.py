"""Risks taken with high pieces in a finished game, and what the beliefs said of them (issue 22).

``perspecto analyse`` counts how marshals and generals were lost (``causes``); this says *why* one
attacked a bomb: did the belief model (engine_ext/beliefs) think the piece was probably no bomb, or
did the engine take a risk it knew? ``RiskObserver`` replays both sides' belief models beside the game
(each as its side would have built it, from the record's moves) and, for every attack of a marshal or a
general (``TRACKED_RANKS``) on a piece its side had not been shown and that had never moved, records the
piece's P(bomb) and P(flag) in the attacker's beliefs just before the attack, and what the piece was.

Summed over many attacks (``RiskSummary``) this is a calibration check on exactly the pieces the engine
chose to hit: when the bombs found are about the sum of the believed P(bomb), the losses are risks taken
knowingly (the evaluation's business); when many more are found, the beliefs under-rate bombs where it
matters (the model's business). The models are brought up to date every ply but build a matrix only for
an attack (some 25 us a ply in all); the command still runs this only when asked (``--beliefs``), since
it answers a question about the beliefs, not about the game.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

from engine_ext.beliefs import BeliefModel
from engine_ext.lab.causes import TRACKED_RANKS
from engine_ext.lab.game_events import PlyEvent, ReplayView
from engine_ext.rules.pieces import Rank, Side

BINS = (0.1, 0.2, 0.3, 0.4, 0.5, 1.0)  # upper edges of the believed-P(bomb) bins the summary shows


@dataclass(frozen=True)
class RiskyAttack:
    """One attack of a marshal or general on an unshown piece that had never moved."""

    side: Side  # the attacker's
    rank: Rank  # the attacker's (marshal or general)
    ply: int
    p_bomb: float  # in the attacker's side's beliefs just before the attack
    p_flag: float
    found: Rank  # what the attacked piece was

    @property
    def was_bomb(self) -> bool:
        return self.found == Rank.BOMB


class RiskObserver:
    """Fed by ``game_events.walk``: keeps one belief model a side one ply behind the replay, so what it
    reads for an attack is what that side believed when it chose the move."""

    def __init__(self) -> None:
        self.attacks: list[RiskyAttack] = []
        self._models: dict[Side, BeliefModel] = {}

    def start(self, view: ReplayView) -> None:
        self._models = {side: BeliefModel(view.game, side) for side in (Side.RED, Side.BLUE)}

    def observe(self, event: PlyEvent, view: ReplayView) -> None:
        if (event.target is not None and event.mover_rank in TRACKED_RANKS and not event.target_known
                and not event.target_moved and event.target_rank is not None):
            # The models have seen the plies before this one only: their matrices are the beliefs the
            # attacker's side held when it chose this attack.
            row = self._models[event.side].enemy_matrix()[event.target]
            self.attacks.append(RiskyAttack(event.side, event.mover_rank, event.ply, float(row[Rank.BOMB]),
                                            float(row[Rank.FLAG]), event.target_rank))
        for model in self._models.values():
            model.update(view.game)

    def finish(self, view: ReplayView) -> None:
        pass


@dataclass
class RiskSummary:
    """A group's risky attacks; the counts, what the beliefs expected and the bins are read off them."""

    attacks: list[RiskyAttack] = field(default_factory=list)

    def add(self, attack: RiskyAttack) -> None:
        self.attacks.append(attack)

    @property
    def count(self) -> int:
        return len(self.attacks)

    @property
    def expected_bombs(self) -> float:
        """The sum of the believed P(bomb)."""
        return sum(a.p_bomb for a in self.attacks)

    @property
    def bombs(self) -> int:
        return sum(a.was_bomb for a in self.attacks)

    @property
    def expected_flags(self) -> float:
        return sum(a.p_flag for a in self.attacks)

    @property
    def flags(self) -> int:
        return sum(a.found == Rank.FLAG for a in self.attacks)

    def bin_rows(self) -> list[tuple[str, int, float, float]]:
        """(range, attacks, mean believed P(bomb), share found bombs) for each non-empty bin of ``BINS``."""
        cells: list[list[RiskyAttack]] = [[] for _ in BINS]
        for attack in self.attacks:
            cells[bisect_right(BINS[:-1], attack.p_bomb)].append(attack)
        rows = []
        for low, edge, cell in zip((0.0, *BINS[:-1]), BINS, cells, strict=True):
            if cell:
                rows.append((f"{low:.1f}-{edge:.1f}", len(cell), sum(a.p_bomb for a in cell) / len(cell),
                             sum(a.was_bomb for a in cell) / len(cell)))
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "attacks": self.count, "expected_bombs": round(self.expected_bombs, 3), "bombs": self.bombs,
            "expected_flags": round(self.expected_flags, 3), "flags": self.flags,
            "bins": [{"p_bomb": r, "attacks": n, "believed": round(p, 4), "found": round(f, 4)}
                     for r, n, p, f in self.bin_rows()],
        }
