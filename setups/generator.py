"""New setups that look like people's, never below the thesis's semi-random floor.

The floor (thesis 7.1: "the flag always somewhere on the back row, surrounded by bombs; miners,
scouts, the spy and the highest ranks drawn back from the front line"), made precise per ruleset
as ``FloorRules``:

1. the flag stands on the back row;
2. bombs guard it: every neighbour of the flag inside the setup area is a bomb, or, when the ruleset
   has fewer bombs than the flag has neighbours, every bomb stands beside the flag;
3. the front row holds none of the ``front_banned`` ranks (classic and mini: spy, general, marshal;
   Barrage: spy and its only miner);
4. ``front_deferred`` ranks (classic and mini: miners and scouts) stand on the front row only when
   every ``front_fillers`` piece (sergeant up to colonel) already does: on the classic board there are
   17 such pieces for 10 squares, so no miner or scout ever stands in front; on the small mini board
   they fill whatever the middle ranks and bombs cannot.

Barrage is a running game with 32 empty squares; people put the marshal and general on the front row
in more than half of the Gravon games, so the floor there only keeps the spy and the miner back.

Above the floor the generator follows the human statistics: the flag's square is drawn from the
flag distribution (restricted to the back row), the guarding bombs from the bomb frequencies seen
with a flag on that square, then the front row and the rest square by square in random order, each
square drawing a rank with weight ``p(rank | square) * left(rank) / count(rank)`` so that scarce
ranks are not starved and the counts always come out right. Without statistics (mini) the weights
are just the pieces left.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import CLASSIC, Ruleset
from setups.notation import Setup
from setups.stats import SetupStats, load_stats

MIDDLE_RANKS = frozenset({Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN, Rank.MAJOR, Rank.COLONEL})
MAX_ATTEMPTS = 100


@dataclass(frozen=True)
class FloorRules:
    """The minimum every generated setup meets; see the module docstring."""

    flag_on_back_row: bool = True
    bombs_guard_flag: bool = True
    front_banned: frozenset[Rank] = frozenset({Rank.FLAG, Rank.SPY, Rank.GENERAL, Rank.MARSHAL})
    front_deferred: frozenset[Rank] = frozenset({Rank.MINER, Rank.SCOUT})
    front_fillers: frozenset[Rank] = MIDDLE_RANKS


CLASSIC_FLOOR = FloorRules()
BARRAGE_FLOOR = FloorRules(
    front_banned=frozenset({Rank.FLAG, Rank.SPY, Rank.MINER}),
    front_deferred=frozenset(),
    front_fillers=frozenset(),
)
FLOOR_RULES: dict[str, FloorRules] = {"classic": CLASSIC_FLOOR, "barrage": BARRAGE_FLOOR, "mini": CLASSIC_FLOOR}


def floor_rules(ruleset: Ruleset) -> FloorRules:
    """The floor for a ruleset; unknown rulesets get the classic floor."""
    return FLOOR_RULES.get(ruleset.name, CLASSIC_FLOOR)


def floor_violations(setup: Setup, rules: FloorRules | None = None) -> list[str]:
    """The floor rules ``setup`` breaks, in words (squares named as red would play it); empty if none."""
    rules = rules or floor_rules(setup.ruleset)
    ruleset = setup.ruleset
    width = ruleset.width
    back_row = range((ruleset.setup_rows - 1) * width, ruleset.setup_rows * width)
    problems: list[str] = []
    for flag in setup.index_of(Rank.FLAG):
        where = setup.square(flag)
        if rules.flag_on_back_row and flag not in back_row:
            problems.append(f"flag on {where} is not on the back row")
        if rules.bombs_guard_flag:
            around = list(setup.neighbours(flag))
            need = min(len(around), ruleset.pieces.get(Rank.BOMB, 0))
            have = sum(1 for j in around if setup.cells[j] == Rank.BOMB)
            if have < need:
                problems.append(f"flag on {where} has {have} bomb(s) beside it, the floor wants {need}")
    # Fillers standing behind the front row make any deferred rank in front a waste.
    fillers_behind = [r for r in setup.cells[width:] if r is not None and r in rules.front_fillers]
    for i in range(width):
        rank = setup.cells[i]
        if rank is None or rank == Rank.FLAG:
            continue
        if rank in rules.front_banned:
            problems.append(f"{rank.label} on {setup.square(i)} in the front row")
        elif rank in rules.front_deferred and fillers_behind:
            problems.append(
                f"{rank.label} on {setup.square(i)} in the front row while a "
                f"{fillers_behind[0].label} stands behind it"
            )
    return problems


def _rng(seed: int | random.Random | None) -> random.Random:
    return seed if isinstance(seed, random.Random) else random.Random(seed)


def _weighted_choice(rng: random.Random, options: Sequence[object], weights: Sequence[float]) -> int:
    """Index of one option drawn by weight (all-zero weights fall back to a uniform draw)."""
    total = sum(weights)
    if total <= 0:
        return rng.randrange(len(options))
    mark = rng.random() * total
    for k, w in enumerate(weights):
        mark -= w
        if mark < 0:
            return k
    return len(options) - 1


class _Draft:
    """One attempt at a setup: the cells so far and the pieces still in the box."""

    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.size = ruleset.width * ruleset.setup_rows
        self.cells: list[Rank | None] = [None] * self.size
        self.filled = [False] * self.size
        self.total: dict[Rank | None, int] = {r: n for r, n in ruleset.pieces.items() if n > 0}
        if not ruleset.fills_setup_area:
            self.total[None] = self.size - ruleset.piece_total
        self.left = dict(self.total)

    def put(self, index: int, rank: Rank | None) -> None:
        self.cells[index] = rank
        self.filled[index] = True
        self.left[rank] -= 1

    def neighbours(self, index: int) -> list[int]:
        return list(Setup(self.ruleset, tuple(self.cells)).neighbours(index))


def _base_weight(stats: SetupStats | None, draft: _Draft, rank: Rank | None, index: int, flag: int) -> float:
    """How much people like ``rank`` on ``index``, before the count correction."""
    if stats is None:
        return draft.total[rank] / draft.size
    if rank == Rank.BOMB:
        conditional = stats.bomb_probability_given_flag(index, flag)
        if conditional is not None:
            return conditional
    return stats.probability(rank, index)


def _attempt(ruleset: Ruleset, rng: random.Random, stats: SetupStats | None, rules: FloorRules) -> Setup | None:
    draft = _Draft(ruleset)
    width = ruleset.width
    back_row = list(range((ruleset.setup_rows - 1) * width, draft.size))

    # 1. The flag, from the human flag distribution over the allowed squares.
    flag_squares = back_row if rules.flag_on_back_row else [i for i in range(width, draft.size)]
    flag_weights = [stats.probability(Rank.FLAG, i) if stats else 1.0 for i in flag_squares]
    flag = flag_squares[_weighted_choice(rng, flag_squares, flag_weights)]
    draft.put(flag, Rank.FLAG)

    # 2. Its guard: as many neighbours as there are bombs for, chosen as people choose them.
    if rules.bombs_guard_flag and draft.left.get(Rank.BOMB, 0) > 0:
        around = draft.neighbours(flag)
        need = min(len(around), draft.left[Rank.BOMB])
        for _ in range(need):
            bomb_weights = [_base_weight(stats, draft, Rank.BOMB, j, flag) for j in around]
            j = around.pop(_weighted_choice(rng, around, bomb_weights))
            draft.put(j, Rank.BOMB)

    # 3. The front row first (its rules bind), then everything else, each in random order.
    front = [i for i in range(width) if not draft.filled[i]]
    rest = [i for i in range(width, draft.size) if not draft.filled[i]]
    rng.shuffle(front)
    rng.shuffle(rest)
    for index in front + rest:
        in_front = index < width
        fillers_left = any(draft.left.get(r, 0) > 0 for r in rules.front_fillers)
        options: list[Rank | None] = []
        weights: list[float] = []
        for rank, left in draft.left.items():
            if left <= 0:
                continue
            if in_front and rank is not None:
                if rank in rules.front_banned:
                    continue
                if rank in rules.front_deferred and fillers_left:
                    continue
            options.append(rank)
            weights.append(_base_weight(stats, draft, rank, index, flag) * left / draft.total[rank])
        if not options:
            return None
        draft.put(index, options[_weighted_choice(rng, options, weights)])
    return Setup(ruleset, tuple(draft.cells))


def generate_setup(
    ruleset: Ruleset = CLASSIC,
    seed: int | random.Random | None = None,
    *,
    stats: SetupStats | None = None,
    human_like: bool = True,
    rules: FloorRules | None = None,
) -> Setup:
    """A new legal setup meeting the floor rules. ``seed`` makes it reproducible; ``stats`` defaults
    to the shipped statistics of the ruleset (``human_like=False`` ignores them: floor only)."""
    rng = _rng(seed)
    rules = rules or floor_rules(ruleset)
    if stats is None and human_like:
        stats = load_stats(ruleset)
    for _ in range(MAX_ATTEMPTS):
        setup = _attempt(ruleset, rng, stats, rules)
        if setup is not None and setup.is_legal() and not floor_violations(setup, rules):
            return setup
    raise RuntimeError(f"could not generate a {ruleset.name} setup meeting the floor rules")


def random_setup(ruleset: Ruleset = CLASSIC, seed: int | random.Random | None = None) -> Setup:
    """A uniformly shuffled legal setup with no floor at all (the thesis's bad baseline)."""
    rng = _rng(seed)
    bag: list[Rank | None] = [r for r, n in ruleset.pieces.items() for _ in range(n)]
    bag.extend([None] * (ruleset.width * ruleset.setup_rows - len(bag)))
    rng.shuffle(bag)
    return Setup(ruleset, tuple(bag))
