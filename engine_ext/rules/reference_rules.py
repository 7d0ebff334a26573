"""The rules written plainly, for tests and benchmarks to check the compiled core against.

Slow on purpose: squares are ``Square`` objects, the board is a dict, every move is worked out from
the rule text without any of the core's tables or tricks. Nothing in the bot uses this module.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, DEFENDER_WINS, Rank, Side, combat
from engine_ext.rules.rulesets import Ruleset, Square

Piece = tuple[Side, Rank]


@dataclass
class ReferenceBoard:
    ruleset: Ruleset
    pieces: dict[Square, Piece]
    side: Side = Side.RED
    range_attacks: bool = True
    history: list[tuple[Square, Square]] = field(default_factory=list)

    @classmethod
    def from_pieces(
        cls, ruleset: Ruleset, pieces: Mapping[Square, Piece], side: Side = Side.RED, range_attacks: bool = True
    ) -> ReferenceBoard:
        return cls(ruleset, dict(pieces), side, range_attacks)

    def copy(self) -> ReferenceBoard:
        return ReferenceBoard(self.ruleset, dict(self.pieces), self.side, self.range_attacks, list(self.history))

    def _free(self, sq: Square) -> bool:
        return self.ruleset.on_board(sq) and not self.ruleset.is_lake(sq) and sq not in self.pieces

    def flag_taken(self) -> bool:
        flags = [p for p in self.pieces.values() if p[1] == Rank.FLAG]
        return len(flags) < 2

    def moves(self) -> list[tuple[Square, Square]]:
        """Every move of the side to move; no repetition rules."""
        return list(self._moves())

    def _moves(self) -> Iterator[tuple[Square, Square]]:
        for sq, (owner, rank) in sorted(self.pieces.items(), key=lambda kv: (kv[0].row, kv[0].col)):
            if owner != self.side or rank in (Rank.FLAG, Rank.BOMB):
                continue
            reach = max(self.ruleset.width, self.ruleset.height) if rank in (Rank.SCOUT, Rank.UNKNOWN) else 1
            for dc, dr in ((0, 1), (0, -1), (-1, 0), (1, 0)):
                for dist in range(1, reach + 1):
                    to = Square(sq.col + dc * dist, sq.row + dr * dist)
                    if not self.ruleset.on_board(to) or self.ruleset.is_lake(to):
                        break
                    if self._free(to):
                        yield sq, to
                        continue
                    target = self.pieces[to]
                    if target[0] != owner and (dist == 1 or self.range_attacks):
                        yield sq, to
                    break

    def play(self, frm: Square, to: Square) -> int:
        """Play a move (assumed legal). Returns 0 for a plain move, else the combat result."""
        attacker = self.pieces.pop(frm)
        defender = self.pieces.get(to)
        self.history.append((frm, to))
        self.side = self.side.other
        if defender is None:
            self.pieces[to] = attacker
            return 0
        result = combat(attacker[1], defender[1])
        if result == ATTACKER_WINS:
            self.pieces[to] = attacker
        elif result == DEFENDER_WINS:
            pass
        elif result == BOTH_DIE:
            del self.pieces[to]
        return result

    def perft(self, depth: int) -> int:
        if depth == 0:
            return 1
        if self.flag_taken():
            return 0
        total = 0
        for frm, to in self.moves():
            child = self.copy()
            child.play(frm, to)
            total += child.perft(depth - 1)
        return total


def breaks_two_squares(own_moves: list[tuple[Square, Square]], move: tuple[Square, Square], limit: int) -> bool:
    """The tournament page's pseudocode over the side's own earlier moves (most recent last)."""
    if len(own_moves) < limit:
        return False
    for prev in own_moves[-limit:]:
        if prev != move and prev != (move[1], move[0]):
            return False
    return True


__all__ = ["ATTACKER_WINS", "BOTH_DIE", "DEFENDER_WINS", "ReferenceBoard", "breaks_two_squares"]
