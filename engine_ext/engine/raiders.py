"""Suspected raiders (not in the thesis): unseen opponent pieces at our flag's door, searched as miners.

p-e-minimax models the opponent's unseen piece as the average of its pool, in our view and in the
opponent's view alike. A piece that has walked up to the bombs beside our flag is no average piece:
the opponent knows it is a miner and is about to take a bomb and then the flag. Averaged, the piece is
most likely no miner, the bomb most likely kills it, and so the opponent's view never plays the raid
and our search never answers it (docs/engine.md, *Raids*). Searched as a miner, the raid is in
both views, and the search takes the raider or covers the bomb while a defender is near.

Once a move, in the facade: the position handed to the search gets the suspects' ranks set, as if
they were known, so the compiled and the reference search see the same position.
"""

from __future__ import annotations

from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank

_STEPS = ((0, 1), (0, -1), (-1, 0), (1, 0))


def flag_gates(pos: Position, side: int) -> list[tuple[int, int]]:
    """The doors to ``side``'s flag: its own bombs beside the flag, or the flag itself when no bomb
    stands beside it; empty when the flag is not on the board."""
    flag = None
    bombs: set[tuple[int, int]] = set()
    for pid in range(pos.piece_count):
        sq, owner, rank, _moved = pos.piece(pid)
        if sq < 0 or owner != side:
            continue
        if rank == Rank.FLAG:
            flag = pos.coords(sq)
        elif rank == Rank.BOMB:
            bombs.add(pos.coords(sq))
    if flag is None:
        return []
    gates = [(flag[0] + dc, flag[1] + dr) for dc, dr in _STEPS if (flag[0] + dc, flag[1] + dr) in bombs]
    return gates or [flag]


def raid_suspects(pos: Position, side: int, radius: int, miners_at_start: int) -> list[int]:
    """Ids of the opponent pieces to search as miners: pieces of the opponent's that ``side`` has not
    seen, that have moved and stand within ``radius`` steps of a gate to ``side``'s flag; the nearest
    first (the lowest id among equals), no more than the opponent's miners not yet seen. A negative
    radius: none."""
    if radius < 0:
        return []
    gates = flag_gates(pos, side)
    if not gates:
        return []
    seen_miners = 0
    near: list[tuple[int, int]] = []
    for pid in range(pos.piece_count):
        sq, owner, rank, moved = pos.piece(pid)
        if owner == side:
            continue
        if rank == Rank.MINER:
            seen_miners += 1  # live or captured: a captured piece is always seen
        if sq < 0 or rank != Rank.UNKNOWN or not moved:
            continue
        col, row = pos.coords(sq)
        steps = min(abs(col - gc) + abs(row - gr) for gc, gr in gates)
        if steps <= radius:
            near.append((steps, pid))
    room = max(0, miners_at_start - seen_miners)
    return [pid for _steps, pid in sorted(near)[:room]]


def searched_position(pos: Position, side: int, radius: int, miners_at_start: int) -> tuple[Position, list[int]]:
    """``pos`` as the search should see it: a copy with the suspects' ranks set to miner (``pos``
    itself when there are none), and the suspects' ids."""
    suspects = raid_suspects(pos, side, radius, miners_at_start)
    if not suspects:
        return pos, []
    searched = pos.copy()
    for pid in suspects:
        searched.set_rank(pid, int(Rank.MINER))
    return searched, suspects
