"""The suite's named predicates: each says, from what our side knew at the ply (``Knowledge``) and the move
chosen, whether the move passes. A suite entry names one; ``PREDICATES`` is the table, one row a rule.

Every predicate judges the move alone, by what was known when it was chosen (never by the hidden truth):
an attack's outcome against an unseen piece is unknown, so a rule that needs the position after the move
reads it only for a plain move, or from what the attack itself does (it takes the square on, or it does not).
Each situation the rules are about (a likely bomb, a possible spy, a known raider, a miner at the flag, a won
endgame) is spelt out once below, for the predicates and for the extractor's situations
(engine_ext/lab/suite/extract.py) alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from engine_ext.lab.suite.knowledge import TOP_RANKS, Knowledge, beats
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import Square

# A raider this close to our flag (or to a bomb next to it), in path steps, is walking to it.
FLAG_REACH = 3
# Known enemy pieces this strong count as raiders in our half (issue 32: "typically marshal/general").
RAIDER_RANKS = (Rank.MARSHAL, Rank.GENERAL, Rank.COLONEL)


# --- the situations -------------------------------------------------------------------------------------


def likely_bomb(known: Knowledge, square: Square) -> bool:
    """An unmoved unseen enemy piece while they still have unseen bombs: it may be one."""
    piece = known.theirs.get(square)
    return piece is not None and piece.unseen and not piece.moved and known.unseen(Rank.BOMB) > 0


def possible_spy(known: Knowledge, square: Square) -> bool:
    """An unseen enemy piece, moved or unmoved, while their spy is unseen: it could be the spy (a moved piece is
    never a bomb; an unmoved one may be the spy too: every spy that took our marshal in the no-learn baseline
    had never moved before, issue 45)."""
    piece = known.theirs.get(square)
    return piece is not None and piece.unseen and known.unseen(Rank.SPY) > 0


def known_raiders(known: Knowledge) -> Iterator[tuple[Square, Rank]]:
    """Their shown marshal, general or colonel standing in our half."""
    for square, piece in sorted(known.theirs.items()):
        if piece.rank in RAIDER_RANKS and known.in_our_half(square):
            yield square, piece.rank


def answers(known: Knowledge, raider: Rank) -> list[Square]:
    """Our pieces that take ``raider`` attacking it (the spy for their marshal), and, when we are not behind
    in movable pieces, those of its own rank (a trade)."""
    ours, theirs = known.material()
    return [sq for sq, rank in known.our_movers().items()
            if beats(rank, raider) or (rank == raider and ours >= theirs)]


def flag_targets(known: Knowledge) -> list[Square]:
    """Our flag and the bombs next to it: what a raider walks to."""
    flag = known.flag()
    if flag is None:
        return []
    return [flag, *(sq for sq in known.neighbours(flag) if known.ours.get(sq) == Rank.BOMB)]


def flag_raiders(known: Knowledge) -> Iterator[tuple[Square, int]]:
    """Their shown miner or moved unseen piece that has just stepped nearer to our flag or its bombs and
    stands within FLAG_REACH steps of them (their last move: it is walking to the flag)."""
    last = known.their_last_move
    piece = known.theirs.get(last.to) if last is not None else None
    if last is None or piece is None or not (piece.rank == Rank.MINER or piece.unseen):
        return
    targets = flag_targets(known)
    steps = known.path_distance(last.to, targets)
    before = known.path_distance(last.frm, targets, through=last.to)
    if steps is not None and steps <= FLAG_REACH and (before is None or steps < before):
        yield last.to, steps


def flag_defenders(known: Knowledge) -> list[Square]:
    """Our pieces that take a miner or a scout: sergeants and up."""
    return [sq for sq, rank in known.our_movers().items() if rank > Rank.MINER]


def winning_endgame(known: Knowledge) -> bool:
    """Our strongest piece outranks every movable piece they have left: none of theirs can take it (their spy
    only takes a marshal), so it can take their movers one by one, and a game that does not is shuffling."""
    our_best = max(known.our_movers().values(), default=None)
    their_best = known.their_strongest_mover()
    if our_best is None or (their_best is not None and our_best <= their_best):
        return False
    return not (our_best == Rank.MARSHAL and known.their_remaining(Rank.SPY) > 0)


def progress_targets(known: Knowledge, rank: Rank) -> list[Square]:
    """What a piece of ``rank`` makes progress toward: their pieces it takes for certain (a shown one it beats;
    a moved unseen one when it beats every movable rank they may still hide) and every unmoved unseen piece (a
    candidate for their flag)."""
    hidden_movers = [r for r in Rank if r.movable and r != Rank.UNKNOWN and known.unseen(r) > 0]
    beats_any_unseen_mover = all(beats(rank, r) for r in hidden_movers)
    targets = []
    for square, piece in known.theirs.items():
        if not piece.unseen:
            if beats(rank, piece.rank):
                targets.append(square)
        elif not piece.moved or beats_any_unseen_mover:
            targets.append(square)
    return targets


# --- the position after a plain move ----------------------------------------------------------------------


def after_plain_move(known: Knowledge, move: Move) -> Knowledge:
    """``known`` with our piece moved (``move`` onto an empty square)."""
    ours = dict(known.ours)
    ours[move.to] = ours.pop(move.frm)
    return replace(known, ours=ours)


def _closer(known: Knowledge, move: Move, targets: list[Square]) -> bool:
    before = known.path_distance(move.frm, targets)
    after = known.distance_after(move, targets)
    return after is not None and (before is None or after < before)


# --- the predicates ------------------------------------------------------------------------------------


def top_piece_spares_likely_bomb(known: Knowledge, move: Move) -> bool:
    return not (known.ours.get(move.frm) in TOP_RANKS and likely_bomb(known, move.to))


def marshal_shuns_possible_spy(known: Knowledge, move: Move) -> bool:
    marshal = known.square_of(Rank.MARSHAL)
    if marshal is None:
        return True
    if move.frm == marshal:
        if possible_spy(known, move.to):
            return True  # it attacks the suspect: a spy defending loses to it
        where = move.to
    else:
        where = marshal
    return not any(possible_spy(known, near) for near in known.neighbours(where) if near != move.to)


def answers_known_raider(known: Knowledge, move: Move) -> bool:
    mover = known.ours.get(move.frm)
    if mover is None:
        return False
    for square, rank in known_raiders(known):
        ready = answers(known, rank)
        if move.to == square:
            if move.frm in ready:
                return True
            continue
        if move.to in known.theirs:
            continue  # another attack: it neither brings an answer nor steps away
        if move.frm in ready and _closer(known, move, [square]):
            return True
        threatened = move.frm.adjacent(square) and beats(rank, mover)
        if threatened and not move.to.adjacent(square):
            return True
    return False


def stops_flag_raider(known: Knowledge, move: Move) -> bool:
    defenders = flag_defenders(known)
    for square, steps in flag_raiders(known):
        if move.to == square:
            return True
        if move.to in known.theirs:
            continue
        if move.frm in defenders and _closer(known, move, [square]):
            return True
        after = after_plain_move(known, move)
        blocked = after.path_distance(square, flag_targets(after))
        if blocked is None or blocked > steps:
            return True
    return False


def loses_for_certain(known: Knowledge, attacker: Rank, square: Square) -> bool:
    """An attack on their shown piece on ``square`` that the attacker cannot win or trade."""
    piece = known.theirs.get(square)
    return piece is not None and not piece.unseen and attacker != piece.rank and not beats(attacker, piece.rank)


def no_certain_loss_attack(known: Knowledge, move: Move) -> bool:
    mover = known.ours.get(move.frm)
    return mover is None or not loses_for_certain(known, mover, move.to)


def makes_progress(known: Knowledge, move: Move) -> bool:
    rank = known.ours.get(move.frm)
    if rank is None:
        return False
    targets = progress_targets(known, rank)
    if move.to in known.theirs:
        return move.to in targets
    return _closer(known, move, targets)


@dataclass(frozen=True)
class Predicate:
    """A rule a move must keep: its name (what a suite entry names), what it says, and the check."""

    name: str
    says: str
    check: Callable[[Knowledge, Move], bool]


PREDICATES: dict[str, Predicate] = {p.name: p for p in (
    Predicate("top_piece_spares_likely_bomb",
              "our marshal or general does not attack an unmoved unseen piece while they have unseen bombs",
              top_piece_spares_likely_bomb),
    Predicate("marshal_shuns_possible_spy",
              "our marshal does not stay or step next to an unseen piece (moved or not) while their spy is unseen "
              "(attacking that piece is allowed)",
              marshal_shuns_possible_spy),
    Predicate("answers_known_raider",
              "against their shown marshal, general or colonel in our half: take it with a piece that beats it "
              "(a trade when not behind), bring such a piece nearer, or step a threatened piece out of its reach",
              answers_known_raider),
    Predicate("stops_flag_raider",
              f"against a miner or unseen piece that just stepped to within {FLAG_REACH} steps of our flag or its "
              "bombs: "
              "attack it, bring a sergeant or higher nearer to it, or lengthen its path to the flag",
              stops_flag_raider),
    Predicate("no_certain_loss_attack",
              "no attack on a shown piece that beats the attacker (it loses the piece and shows its rank for nothing)",
              no_certain_loss_attack),
    Predicate("makes_progress",
              "in a won endgame: take a piece, or bring the moved piece nearer to a piece it takes for certain "
              "or to an unmoved unseen piece (a flag candidate); a shuffle passes none of these",
              makes_progress),
)}
