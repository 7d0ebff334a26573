"""Proposing suite entries: scan game records for the plies where a category's situation holds for our side.

The extractor only proposes. Each candidate comes with the predicate its category is judged by, the move the
game went on with (and whether that move kept the predicate) and a note that states the situation; a person
looks at every candidate (``perspecto suite show``, ``perspecto replay``) and keeps the ones where the
condition is right. Candidates whose game move broke the predicate come first (the game's own mistakes),
then the others; at most ``per_game`` of a category from one game, at least ``spacing`` plies apart, so one
long shuffle does not fill a category.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from engine_ext.lab.suite.entries import Entry
from engine_ext.lab.suite.knowledge import TOP_RANKS, Knowledge
from engine_ext.lab.suite.predicates import (
    FLAG_REACH,
    PREDICATES,
    answers,
    flag_defenders,
    flag_raiders,
    flag_targets,
    known_raiders,
    likely_bomb,
    loses_for_certain,
    possible_spy,
    winning_endgame,
)
from engine_ext.lab.suite.view import our_turns
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord

REACH = 3  # a defender this many path steps from a flag raider (or fewer) is "in reach"
ANSWER_REACH = 2  # an answer this many path steps from a known raider (or fewer) is "in reach"
ENDGAME_FROM = 200  # plies: a won endgame's candidates come from later in the game
ENDGAME_MOVERS = 8  # and from when they have this many movable pieces left, or fewer: an endgame


def _likely_bomb(known: Knowledge) -> str | None:
    for square, rank in sorted(known.ours.items()):
        if rank in TOP_RANKS:
            for near in known.neighbours(square):
                if likely_bomb(known, near):
                    return (f"our {rank.label} on {square} next to unmoved unseen {near}; "
                            f"{known.unseen(Rank.BOMB)} bombs unseen")
    return None


def _possible_spy(known: Knowledge) -> str | None:
    """Our marshal next to a possible spy, or a step away from standing next to one."""
    marshal = known.square_of(Rank.MARSHAL)
    if marshal is None:
        return None
    for near in known.neighbours(marshal):
        if possible_spy(known, near):
            return f"our marshal on {marshal} next to unseen {near}; their spy unseen"
    for square in sorted(known.theirs):
        if possible_spy(known, square) and known.path_distance(marshal, [square]) == 2:
            return f"our marshal on {marshal} a step from standing next to unseen {square}; their spy unseen"
    return None


def _known_raider(known: Knowledge) -> str | None:
    for square, rank in known_raiders(known):
        ready = [sq for sq in answers(known, rank)
                 if (steps := known.path_distance(sq, [square])) is not None and steps <= ANSWER_REACH]
        threatened = [sq for sq in known.neighbours(square)
                      if sq in known.ours and known.ours[sq].movable and known.ours[sq] < rank]
        if ready:
            return (f"their {rank.label} on {square} in our half; our "
                    + ", ".join(f"{known.ours[sq].label} {sq}" for sq in ready) + " in reach"
                    + (f"; it threatens {', '.join(str(sq) for sq in threatened)}" if threatened else ""))
    return None


def _flag_raider(known: Knowledge) -> str | None:
    defenders = flag_defenders(known)
    for square, steps in flag_raiders(known):
        near = [sq for sq in defenders if (d := known.path_distance(sq, [square])) is not None and d <= REACH]
        if near:
            what = known.theirs[square].rank.label if not known.theirs[square].unseen else "moved unseen piece"
            return (f"their {what} on {square}, {steps} steps from our flag {known.flag()}; our "
                    + ", ".join(f"{known.ours[sq].label} {sq}" for sq in near) + " in reach")
    return None


def _won_endgame(known: Knowledge) -> str | None:
    """Won on the board and nothing of theirs near our flag: the move that matters is one that goes forward."""
    if not winning_endgame(known) or known.their_mover_count() > ENDGAME_MOVERS:
        return None
    targets = flag_targets(known)
    for square, piece in known.theirs.items():
        if piece.moved or (piece.rank.movable and piece.rank != Rank.UNKNOWN):
            steps = known.path_distance(square, targets)
            if steps is not None and steps <= FLAG_REACH + 1:
                return None
    ours, theirs = known.material()
    best = max(known.our_movers().values())
    return f"our {best.label} outranks all they have left ({ours} movers to their {theirs})"


def _certain_loss(known: Knowledge) -> str | None:
    for square, rank in sorted(known.our_movers().items()):
        for near in known.neighbours(square):
            if loses_for_certain(known, rank, near):
                return f"our {rank.label} on {square} next to their shown {known.theirs[near].rank.label} on {near}"
    return None


def _attack_note(known: Knowledge, move: Move) -> str:
    """What the game's own attack was, for a category of the game's mistakes."""
    mover, target = known.ours[move.frm], known.theirs[move.to]
    return f"our {mover.label} on {move.frm} attacked their shown {target.rank.label} on {move.to}"


@dataclass(frozen=True)
class Situation:
    """A category's situation: the predicate its entries are judged by, and the test that says, for what our
    side knew at a turn, whether it holds (a note describing it) or not (None)."""

    category: str
    predicate: str
    holds: Callable[[Knowledge], str | None]
    from_ply: int = 0
    mistakes_only: bool = False  # propose only the plies where the game's move broke the predicate


SITUATIONS: dict[str, Situation] = {s.category: s for s in (
    Situation("likely_bomb", "top_piece_spares_likely_bomb", _likely_bomb),
    Situation("possible_spy", "marshal_shuns_possible_spy", _possible_spy),
    Situation("known_raider", "answers_known_raider", _known_raider),
    Situation("flag_raider", "stops_flag_raider", _flag_raider),
    Situation("won_endgame", "makes_progress", _won_endgame, from_ply=ENDGAME_FROM),
    # Next to a stronger shown piece is common and almost every move keeps the rule: only the game's attacks.
    Situation("certain_loss", "no_certain_loss_attack", _certain_loss, mistakes_only=True),
)}


@dataclass(frozen=True)
class Candidate:
    record: Path
    game_id: str
    ply: int
    side: Side
    category: str
    predicate: str
    played: str
    played_passes: bool
    note: str

    def entry(self, record_name: str, number: int) -> Entry:
        verdict = "kept" if self.played_passes else "broke"
        return Entry(id=f"{self.category}-{number:02d}", category=self.category, record=record_name, ply=self.ply,
                     side=str(self.side), predicate=self.predicate, played=self.played,
                     note=f"{self.game_id} ply {self.ply}: {self.note}; the game played {self.played} ({verdict} it)")


def our_side(record: GameRecord, player: str) -> Side | None:
    """The side whose player's name starts with ``player`` (the gauntlet's and the lab's names for us)."""
    for side, who in ((Side.RED, record.red), (Side.BLUE, record.blue)):
        if who.name.lower().startswith(player.lower()):
            return side
    return None


def lost_or_drawn(record: GameRecord, side: Side) -> bool:
    return record.result is not None and record.result.get("winner") != str(side)


def candidates(path: Path, record: GameRecord, side: Side, categories: Iterable[str],
               per_game: int, spacing: int) -> Iterator[Candidate]:
    """One game's candidates: the plies where a category's situation holds, at most ``per_game`` a category."""
    wanted = [SITUATIONS[name] for name in categories]
    found: dict[str, list[Candidate]] = {s.category: [] for s in wanted}
    for ply, view in our_turns(record, side):
        if not view.sendable_moves():
            continue  # the view had ended the game by its own rules: no position to ask (view.py)
        if len(view.history) != ply:
            continue  # a view rebuilt from the board (view.py): it no longer knows the pieces each side lost
        known = Knowledge.from_view(view, side)
        played = Move.parse(record.moves[ply].move)
        for situation in wanted:
            if ply < situation.from_ply:
                continue
            note = situation.holds(known)
            if note is None:
                continue
            passes = PREDICATES[situation.predicate].check(known, played)
            if situation.mistakes_only:
                if passes:
                    continue
                note = _attack_note(known, played)
            found[situation.category].append(Candidate(path, record.game_id or path.stem, ply, side,
                                                       situation.category, situation.predicate,
                                                       record.moves[ply].move, passes, note))
    for group in found.values():
        yield from _spread(group, per_game, spacing)


def _spread(group: list[Candidate], per_game: int, spacing: int) -> list[Candidate]:
    """At most ``per_game`` of ``group``, ``spacing`` plies apart, the game's mistakes first."""
    chosen: list[Candidate] = []
    for candidate in sorted(group, key=lambda c: (c.played_passes, c.ply)):
        if len(chosen) >= per_game:
            break
        if all(abs(candidate.ply - other.ply) >= spacing for other in chosen):
            chosen.append(candidate)
    return sorted(chosen, key=lambda c: c.ply)
