"""The spy guard (not in the thesis, issue 45): our known marshal does not end a move next to a possible spy.

The search's opponent prices its own attacks from our beliefs of its pieces. An unseen piece that has never
moved is the spy with a probability of about 0.02 there, so the search sees the spy's attack on our marshal
as a 98 % loss for the opponent and never plays it; standing next to such a piece looks free. The opponent
knows which piece is its spy, and uses it the move our marshal stands beside it: in the baseline games all 7
spies that took our marshal had never moved, and our move just before had put the marshal next to them
(docs/lab.md, the top pieces' fatal attacks). So, as strong programs do, the rule is not a probability: while
their spy is unseen, a root move after which our marshal, known to the opponent, stands next to an unseen
piece that may be the spy is charged the marshal's value. The marshal still attacks such a piece (the spy
loses when attacked); it only does not stay beside one, and steps away from one that came up to it.

Once a move, in the facade, over the root moves: a few neighbours a move, no search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank

_STEPS = ((0, 1), (0, -1), (-1, 0), (1, 0))


def their_spy_seen(pos: Position, side: int) -> bool:
    """Whether ``side`` has seen the opponent's spy, on the board or captured (a capture shows the rank)."""
    for pid in range(pos.piece_count):
        _sq, owner, rank, _moved = pos.piece(pid)
        if owner != side and rank == Rank.SPY:
            return True
    return False


def our_marshal(pos: Position, side: int) -> int | None:
    """The id of ``side``'s marshal on the board, or None."""
    for pid in range(pos.piece_count):
        sq, owner, rank, _moved = pos.piece(pid)
        if owner == side and rank == Rank.MARSHAL and sq >= 0:
            return pid
    return None


def exposed_moves(pos: Position, side: int, moves: Sequence[int], marshal_known: Callable[[int], bool],
                  may_be_spy: Callable[[int], bool]) -> list[bool]:
    """For each root move (``from | to << 8``): after it, does ``side``'s marshal, known to the opponent,
    stand next to an unseen opponent piece that may be the spy? An attack by the marshal is taken as won
    (it stands on the target's square; the target itself gone), but for one on their known marshal or a known
    bomb, after which it stands nowhere. All False once their spy is seen, when the
    marshal is not on the board or the opponent does not know it."""
    marshal = our_marshal(pos, side)
    if marshal is None or not marshal_known(marshal) or their_spy_seen(pos, side):
        return [False] * len(moves)
    home = pos.piece(marshal)[0]
    suspects: dict[int, int] = {}  # square -> piece id of every unseen opponent piece that may be the spy
    known: dict[int, int] = {}  # square -> rank of every opponent piece we have seen
    for pid in range(pos.piece_count):
        sq, owner, rank, _moved = pos.piece(pid)
        if sq < 0 or owner == side:
            continue
        if rank == Rank.UNKNOWN:
            if may_be_spy(pid):
                suspects[sq] = pid
        else:
            known[sq] = rank
    out = []
    for move in moves:
        frm, to = move & 0xFF, move >> 8
        if frm == home and to in known and known[to] in (Rank.MARSHAL, Rank.BOMB):
            # A trade with their known marshal, or a known bomb: our marshal does not stand anywhere afterwards
            # (an early form charged these too, and our marshal stopped trading with theirs).
            out.append(False)
            continue
        where = to if frm == home else home
        # An attacked suspect is no longer unseen whatever the fight's outcome: the fight shows its rank
        # (and our marshal's own attack on it wins, the spy losing every defence).
        taken = to if to in suspects else -1
        col, row = pos.coords(where)
        exposed = False
        for dc, dr in _STEPS:
            c, r = col + dc, row + dr
            if 0 <= c < pos.width and 0 <= r < pos.height:
                sq = pos.square(c, r)
                if sq != taken and sq in suspects:
                    exposed = True
                    break
        out.append(exposed)
    return out


def spy_guard_charges(pos: Position, side: int, moves: Sequence[int], marshal_known: Callable[[int], bool],
                      may_be_spy: Callable[[int], bool], marshal_value: float) -> list[float]:
    """What each root move is charged: the marshal's value for a move that leaves it exposed, else 0."""
    return [-marshal_value if exposed else 0.0
            for exposed in exposed_moves(pos, side, moves, marshal_known, may_be_spy)]
