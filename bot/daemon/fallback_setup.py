"""The last-resort setup: legal for any ruleset, flag on the back row, everything else shuffled.

The bot uses the setup library (setups/) first; this stays for when the library fails or a host rejects
its setup, because a legal setup sent in time beats a clever one that never arrives.
"""

from __future__ import annotations

import random

from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square


def fallback_setup(ruleset: Ruleset, side: Side, rng: random.Random | None = None) -> dict[Square, Rank]:
    rng = rng or random.Random()
    area = [sq for sq in ruleset.setup_squares(side) if not ruleset.is_lake(sq)]
    back_row = 0 if side == Side.RED else ruleset.height - 1
    flag_square = rng.choice([sq for sq in area if sq.row == back_row])
    others = [rank for rank, count in ruleset.pieces.items() if rank != Rank.FLAG for _ in range(count)]
    squares = rng.sample([sq for sq in area if sq != flag_square], len(others))
    return {flag_square: Rank.FLAG, **dict(zip(squares, others, strict=True))}
