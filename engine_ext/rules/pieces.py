"""Sides, ranks and how they are written.

Ranks are numbered internally the American way (higher beats lower), with the flag at 0 and the
bomb at 11, so that combat is a plain comparison except for the three special cases. ``UNKNOWN``
marks an opponent piece whose rank the viewer has not seen.
"""

from __future__ import annotations

from enum import IntEnum


class Side(IntEnum):
    RED = 0
    BLUE = 1

    @property
    def other(self) -> Side:
        return Side(1 - self.value)

    @classmethod
    def parse(cls, text: str) -> Side:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown side {text!r} (expected red or blue)") from None

    def __str__(self) -> str:
        return self.name.lower()


class Rank(IntEnum):
    FLAG = 0
    SPY = 1
    SCOUT = 2
    MINER = 3
    SERGEANT = 4
    LIEUTENANT = 5
    CAPTAIN = 6
    MAJOR = 7
    COLONEL = 8
    GENERAL = 9
    MARSHAL = 10
    BOMB = 11
    UNKNOWN = 12

    @property
    def movable(self) -> bool:
        return self not in (Rank.FLAG, Rank.BOMB)

    @property
    def label(self) -> str:
        """The rank's name as the wire protocol and the logs write it."""
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Rank:
        """Accept a name (``marshal``) or an American symbol (``10``, ``B``); European symbols collide
        with American numbers, so they are for display only."""
        key = text.strip()
        by_name = _BY_NAME.get(key.lower())
        if by_name is not None:
            return by_name
        by_symbol = _AMERICAN_SYMBOLS.get(key.upper())
        if by_symbol is not None:
            return by_symbol
        raise ValueError(f"unknown rank {text!r}")

    def symbol(self, style: str = "american") -> str:
        """Short display symbol: American (marshal 10, spy 1) or European (marshal 1, spy S)."""
        if style == "european":
            return _EUROPEAN[self]
        if style == "american":
            return _AMERICAN[self]
        raise ValueError(f"unknown rank style {style!r} (expected american or european)")


RANK_STYLES = ("american", "european")

_BY_NAME = {r.name.lower(): r for r in Rank}
_AMERICAN = {
    Rank.FLAG: "F", Rank.SPY: "1", Rank.SCOUT: "2", Rank.MINER: "3", Rank.SERGEANT: "4",
    Rank.LIEUTENANT: "5", Rank.CAPTAIN: "6", Rank.MAJOR: "7", Rank.COLONEL: "8", Rank.GENERAL: "9",
    Rank.MARSHAL: "10", Rank.BOMB: "B", Rank.UNKNOWN: "?",
}
_EUROPEAN = {
    Rank.FLAG: "F", Rank.SPY: "S", Rank.SCOUT: "9", Rank.MINER: "8", Rank.SERGEANT: "7",
    Rank.LIEUTENANT: "6", Rank.CAPTAIN: "5", Rank.MAJOR: "4", Rank.COLONEL: "3", Rank.GENERAL: "2",
    Rank.MARSHAL: "1", Rank.BOMB: "B", Rank.UNKNOWN: "?",
}
_AMERICAN_SYMBOLS = {v: k for k, v in _AMERICAN.items() if k is not Rank.UNKNOWN}

# Outcome of an attack, as the core reports it.
ATTACKER_WINS = 1
DEFENDER_WINS = 2
BOTH_DIE = 3


def combat(attacker: Rank, defender: Rank) -> int:
    """The ISF combat rule, written plainly (the compiled core uses a table built from this)."""
    if defender == Rank.FLAG:
        return ATTACKER_WINS
    if defender == Rank.BOMB:
        return ATTACKER_WINS if attacker == Rank.MINER else DEFENDER_WINS
    if attacker == Rank.SPY and defender == Rank.MARSHAL:
        return ATTACKER_WINS
    if attacker == defender:
        return BOTH_DIE
    return ATTACKER_WINS if attacker > defender else DEFENDER_WINS
