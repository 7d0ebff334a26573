"""What finished games say about each player: causes of loss (``causes``), chases (``chases``) and, when
asked, the high pieces' risky attacks against the beliefs (``risks``), summed per profile or per colour.
``perspecto analyse`` prints it; ``summaries_json`` is its ``--json``.

A record replays once (``game_events.walk``) with its observers. Groups: by profile, a game counts for
each of its two players under the name the record gives it (the lab names players after their profiles,
``perspecto``, ``pemm``, with ``-a`` / ``-b`` when one profile plays both sides: docs/lab.md); by side,
under ``red`` and ``blue``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from engine_ext.lab.causes import (
    BACK_ROWS,
    TRACKED_RANKS,
    Cause,
    FlagFall,
    HopelessAttack,
    LossObserver,
    PieceFate,
    TakenInHalf,
)
from engine_ext.lab.chases import Chase, ChaseEnd, ChaseObserver
from engine_ext.lab.game_events import Observer, walk
from engine_ext.lab.risks import RiskObserver, RiskSummary, RiskyAttack
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord


class GroupBy(StrEnum):
    PROFILE = "profile"
    SIDE = "side"


@dataclass(frozen=True)
class GameAnalysis:
    """One replayed record: its players and everything the observers found."""

    game_id: str
    players: dict[Side, str]
    result: dict[str, Any] | None
    plies: int
    fates: list[PieceFate]
    flags: list[FlagFall]
    chases: list[Chase]
    risks: list[RiskyAttack] | None = None  # with ``beliefs``: the marshals' and generals' risky attacks
    taken_in_half: list[TakenInHalf] = field(default_factory=list)  # pieces lost to known raiders at home
    hopeless: list[HopelessAttack] = field(default_factory=list)  # attacks on a shown piece that beat the attacker

    def group(self, side: Side, by: GroupBy) -> str:
        return self.players[side] if by is GroupBy.PROFILE else str(side)


def analyse_record(record: GameRecord, *, beliefs: bool = False) -> GameAnalysis:
    """Replay one record; raises ``ReplayError`` for a record the rules refuse. ``beliefs``: also replay
    both sides' belief models and record the risky attacks of marshals and generals (``risks``)."""
    losses, chases = LossObserver(), ChaseObserver()
    risks = RiskObserver() if beliefs else None
    observers: list[Observer] = [losses, chases] if risks is None else [losses, chases, risks]
    walk(record, observers)
    return GameAnalysis(
        game_id=record.game_id, players={Side.RED: record.red.name, Side.BLUE: record.blue.name},
        result=record.result, plies=len(record.moves), fates=losses.fates, flags=losses.flags,
        chases=chases.chases, risks=risks.attacks if risks is not None else None,
        taken_in_half=losses.taken_in_half, hopeless=losses.hopeless,
    )


def record_paths(paths: Iterable[Path]) -> list[Path]:
    """The record files named, a folder standing for its ``*.json`` files (not its sub-folders), in order."""
    out: list[Path] = []
    for path in paths:
        out.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    return out


@dataclass
class RankSummary:
    """How one rank's pieces (the marshals, or the generals) of a group ended its games."""

    pieces: int = 0
    causes: Counter[Cause] = field(default_factory=Counter)
    unknown: Counter[Cause] = field(default_factory=Counter)  # the piece it met was not known to the owner
    attacked: Counter[Cause] = field(default_factory=Counter)  # the lost piece was the attacker
    bomb_rows: Counter[int] = field(default_factory=Counter)  # the bomb's row from its owner's back row

    def add(self, fate: PieceFate) -> None:
        self.pieces += 1
        self.causes[fate.cause] += 1
        if fate.lost:
            if not fate.opponent_known:
                self.unknown[fate.cause] += 1
            if fate.attacked:
                self.attacked[fate.cause] += 1
            if fate.cause is Cause.BOMB and fate.opponent_row is not None:
                self.bomb_rows[fate.opponent_row] += 1

    @property
    def bomb_back_rows(self) -> int:
        return sum(n for row, n in self.bomb_rows.items() if row <= BACK_ROWS)

    def to_json(self) -> dict[str, Any]:
        return {
            "pieces": self.pieces, "causes": {c.value: self.causes[c] for c in Cause},
            "unknown": {c.value: self.unknown[c] for c in Cause if c is not Cause.SURVIVED},
            "attacked": {c.value: self.attacked[c] for c in Cause if c is not Cause.SURVIVED},
            "bomb_rows": {str(row): n for row, n in sorted(self.bomb_rows.items())},
            "bomb_back_rows": self.bomb_back_rows,
        }


@dataclass
class FlagSummary:
    """How a group's flags fell."""

    falls: int = 0
    raiders: Counter[Rank] = field(default_factory=Counter)
    raider_unknown: int = 0
    guards: Counter[int] = field(default_factory=Counter)  # guards within distance 2 -> falls
    nearest_guard: Counter[int | None] = field(default_factory=Counter)
    bombs: Counter[str] = field(default_factory=Counter)

    def add(self, fall: FlagFall) -> None:
        self.falls += 1
        self.raiders[fall.raider_rank] += 1
        self.raider_unknown += not fall.raider_known
        self.guards[fall.guards] += 1
        self.nearest_guard[fall.nearest_guard] += 1
        self.bombs[fall.bomb_state.value] += 1

    def to_json(self) -> dict[str, Any]:
        return {
            "falls": self.falls, "raiders": {r.label: n for r, n in sorted(self.raiders.items())},
            "raider_unknown": self.raider_unknown,
            "guards": {str(k): n for k, n in sorted(self.guards.items())},
            "nearest_guard": {("none" if k is None else str(k)): n
                              for k, n in sorted(self.nearest_guard.items(), key=lambda i: (i[0] is None, i[0] or 0))},
            "bombs": dict(sorted(self.bombs.items())),
        }


@dataclass
class ChaseSummary:
    """A group's chases (as the chaser): counts by end, and the lengths."""

    ends: Counter[ChaseEnd] = field(default_factory=Counter)
    lengths: dict[ChaseEnd, list[int]] = field(default_factory=dict)

    def add(self, chase: Chase) -> None:
        self.ends[chase.end] += 1
        self.lengths.setdefault(chase.end, []).append(chase.length)

    @property
    def total(self) -> int:
        return sum(self.ends.values())

    @property
    def captures(self) -> int:
        return self.ends[ChaseEnd.CAPTURE]

    @property
    def pointless(self) -> int:
        return sum(n for end, n in self.ends.items() if end.pointless)

    def mean_length(self, *, pointless: bool) -> float | None:
        lengths = [n for end, ns in self.lengths.items() if (end.pointless if pointless else end is ChaseEnd.CAPTURE)
                   for n in ns]
        return sum(lengths) / len(lengths) if lengths else None

    def to_json(self) -> dict[str, Any]:
        return {
            "chases": self.total, "captures": self.captures, "pointless": self.pointless,
            "ends": {e.value: self.ends[e] for e in ChaseEnd},
            "mean_length_capture": self.mean_length(pointless=False),
            "mean_length_pointless": self.mean_length(pointless=True),
        }


@dataclass
class GroupSummary:
    """Everything counted for one profile (or one colour) over the games analysed."""

    name: str
    games: int = 0
    ranks: dict[Rank, RankSummary] = field(default_factory=lambda: {r: RankSummary() for r in TRACKED_RANKS})
    flags: FlagSummary = field(default_factory=FlagSummary)
    chases: ChaseSummary = field(default_factory=ChaseSummary)
    risks: RiskSummary | None = None  # only when the games were analysed with their beliefs
    taken_in_half: int = 0  # pieces lost in its own half to enemy pieces it had been shown
    longest_raid: int = 0  # the most such takes by one raider in a row, over the games
    hopeless: Counter[Rank] = field(default_factory=Counter)  # attacks that lost for certain, by the attacker's rank

    @property
    def lost_to_bomb_or_spy(self) -> int:
        """Issue 22's headline: marshals and generals lost to a bomb or to the spy."""
        return sum(s.causes[Cause.BOMB] + s.causes[Cause.SPY] for s in self.ranks.values())

    @property
    def tracked_pieces(self) -> int:
        return sum(s.pieces for s in self.ranks.values())

    def to_json(self) -> dict[str, Any]:
        return {
            "games": self.games, "lost_to_bomb_or_spy": self.lost_to_bomb_or_spy,
            "ranks": {rank.label: s.to_json() for rank, s in self.ranks.items()},
            "flags": self.flags.to_json(), "chases": self.chases.to_json(),
            "taken_in_half": self.taken_in_half, "longest_raid": self.longest_raid,
            "hopeless_attacks": {rank.label: n for rank, n in sorted(self.hopeless.items(), key=lambda kv: -kv[0])},
            **({"risks": self.risks.to_json()} if self.risks is not None else {}),
        }


def summarise(games: Iterable[GameAnalysis], by: GroupBy = GroupBy.PROFILE) -> dict[str, GroupSummary]:
    """The games' counts per group, groups in order of first appearance."""
    groups: dict[str, GroupSummary] = {}
    for game in games:
        for side in (Side.RED, Side.BLUE):
            name = game.group(side, by)
            group = groups.setdefault(name, GroupSummary(name))
            group.games += 1
            for fate in game.fates:
                if fate.side == side:
                    group.ranks[fate.rank].add(fate)
            for fall in game.flags:
                if fall.side == side:
                    group.flags.add(fall)
            for chase in game.chases:
                if chase.side == side:
                    group.chases.add(chase)
            for taken in game.taken_in_half:
                if taken.side == side:
                    group.taken_in_half += 1
                    group.longest_raid = max(group.longest_raid, taken.run)
            for hopeless in game.hopeless:
                if hopeless.side == side:
                    group.hopeless[hopeless.attacker] += 1
            if game.risks is not None:
                if group.risks is None:
                    group.risks = RiskSummary()
                for attack in game.risks:
                    if attack.side == side:
                        group.risks.add(attack)
    return groups


def game_json(game: GameAnalysis) -> dict[str, Any]:
    """One game's findings, for ``--json``."""
    return {
        "game_id": game.game_id, "red": game.players[Side.RED], "blue": game.players[Side.BLUE],
        "result": game.result, "plies": game.plies,
        "fates": [{"side": str(f.side), "rank": f.rank.label, "cause": f.cause.value, "ply": f.ply,
                   "attacked": f.attacked, "opponent_rank": f.opponent_rank.label if f.opponent_rank else None,
                   "opponent_known": f.opponent_known, "known_to_opponent": f.known_to_opponent,
                   "opponent_moved": f.opponent_moved, "opponent_row": f.opponent_row} for f in game.fates],
        "flags": [{"side": str(f.side), "ply": f.ply, "square": str(f.square), "raider": f.raider_rank.label,
                   "raider_known": f.raider_known, "guards": f.guards, "nearest_guard": f.nearest_guard,
                   "bombs_at_start": f.bombs_at_start, "bombs_left": f.bombs_left, "bombs": f.bomb_state.value}
                  for f in game.flags],
        "taken_in_half": [{"side": str(t.side), "ply": t.ply, "square": str(t.square), "taken": t.taken.label,
                           "raider": t.raider_rank.label, "run": t.run} for t in game.taken_in_half],
        "hopeless_attacks": [{"side": str(h.side), "ply": h.ply, "square": str(h.square),
                              "attacker": h.attacker.label, "defender": h.defender.label} for h in game.hopeless],
        "chases": [{"side": str(c.side), "chaser": c.chaser_rank.label, "chased": c.chased_rank.label,
                    "start_ply": c.start_ply, "end_ply": c.end_ply, "length": c.length, "end": c.end.value}
                   for c in game.chases],
        **({"risks": [{"side": str(r.side), "rank": r.rank.label, "ply": r.ply, "p_bomb": round(r.p_bomb, 4),
                       "p_flag": round(r.p_flag, 4), "found": r.found.label} for r in game.risks]}
           if game.risks is not None else {}),
    }


def summaries_json(games: list[GameAnalysis], by: GroupBy, failures: dict[str, str]) -> dict[str, Any]:
    """The whole analysis for scripts: the groups' counts, every game's findings, the records refused."""
    return {
        "by": by.value, "records": len(games) + len(failures),
        "groups": {name: group.to_json() for name, group in summarise(games, by).items()},
        "games": [game_json(game) for game in games],
        "failures": failures,
    }
