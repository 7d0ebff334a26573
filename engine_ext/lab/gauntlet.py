"""The gauntlet's table: one engine against a set of independent programs, read from the games' records.

Pure: records in, per-opponent summaries out (``perspecto gauntlet`` plays the games and prints these; the
same folder read again gives the same table). A record counts for the pairing "ours against the other
player"; ``ours`` is the name our player has in the records (the profile's name).

Per opponent: wins, draws and losses (a game stopped at its wall-time bound, ``adjourned``, counts as a
draw and is also shown on its own), the score with its 95 % Wilson interval (independent games: the
programs choose their own setups, so games do not pair), forfeits on either side (an illegal or late answer, a
surrender, a bad setup), the game lengths, and the causes of every loss from ``analysis.analyse_record``:
how the loss ended (our flag taken, and by what; no movable pieces or no moves; a forfeit) and how our
marshal and general fell in the lost games (to a bomb, to the spy, to a higher piece), plus, over all
games, our pieces taken in our own half by enemy pieces we had been shown (``causes.TakenInHalf``) and our
attacks that lost for certain (``causes.HopelessAttack``).

Failures over all games (``FAILURES``, ``failure_rates``), per 100 games with a 95 % interval: our marshal
lost to a bomb, our general lost to a bomb, our marshal or general lost to the spy, to a higher piece, our
pieces taken in our half by a known piece (and the longest run of them), our flag taken by a miner, and
games that reached ``LONG_GAME_PLIES`` (the 1,000-turn cap) while we were ahead in material at that ply. Material is the
sum, over a side's pieces on the board, of the thesis's rank values (``engine_ext.engine.scales.THESIS``,
Table 4, without the special values); ahead means ours is greater than theirs. An event that happens at most
once a game (the marshal falls once) has a Wilson interval on games (``score_interval``); a count that can
be several in a game (to a higher piece: marshal and general; pieces taken in our half) has the normal
interval of the mean per game, the game the unit (a raid of twelve takes in one game is one game's
figure, not twelve independent events), with the variance at least the mean's (Poisson's) and, for none at
all, the exact Poisson upper bound -ln(0.025) / n.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine_ext.engine.scales import THESIS
from engine_ext.lab.analysis import GameAnalysis
from engine_ext.lab.causes import Cause, LossObserver
from engine_ext.lab.game_events import PlyEvent, ReplayView, walk
from engine_ext.lab.stats import Trinomial, normal_quantile
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.referee import canonical_reason
from engine_ext.rules.replay import ATTRITION

# Why a lost game ended, from its result's reason.
LOSS_FLAG = "flag"
LOSS_NO_MOVES = "no_moves"  # no movable piece left, or none that may move
LOSS_FORFEIT = "forfeit"  # when the reason does not say which (forfeit_illegal_setup, forfeit_timeout... do)

# The tournament's cap as the gauntlet plays it (the referee's -m 1000 draws after 999 turns of a move each: the
# game's last ply is the 1998th): a game that reaches it while ahead in material is a failure to convert. At
# 2000 no game of a -m 1000 run could count, however long it shuffled.
LONG_GAME_PLIES = 1998

# The failures counted over all games, and whether each happens at most once a game (a Wilson interval).
FAILURES: tuple[tuple[str, bool], ...] = (
    ("marshal to bomb", True),
    ("general to bomb", True),
    ("marshal/general to spy", True),  # only a marshal falls to the spy
    ("marshal/general to higher", False),
    ("taken in our half by a known piece", False),
    ("flag taken by a miner", True),
    (f"{LONG_GAME_PLIES} plies or more, ahead in material", True),
)


class MaterialObserver:
    """Each side's material (the thesis's rank values of its pieces on the board) after ply ``at_ply``."""

    def __init__(self, at_ply: int = LONG_GAME_PLIES) -> None:
        self.at_ply = at_ply
        self.material: dict[Side, float] | None = None

    def start(self, view: ReplayView) -> None:
        pass

    def observe(self, event: PlyEvent, view: ReplayView) -> None:
        if event.ply == self.at_ply:
            self.material = material(view)

    def finish(self, view: ReplayView) -> None:
        pass


def material(view: ReplayView) -> dict[Side, float]:
    out = {Side.RED: 0.0, Side.BLUE: 0.0}
    for pid in view.piece_ids():
        piece = view.piece(pid)
        if piece.square is not None:
            out[piece.side] += float(THESIS.values[piece.rank])
    return out


@dataclass(frozen=True)
class AnalysedGame:
    """A record's analysis for the gauntlet: causes of loss, and the material at ``LONG_GAME_PLIES`` (None for
    a shorter game)."""

    analysis: GameAnalysis
    material: dict[Side, float] | None = None


def analyse_gauntlet_record(record: GameRecord) -> AnalysedGame:
    """Replay a record once for what the gauntlet counts (``ReplayError`` for a record the rules refuse)."""
    losses, stock = LossObserver(), MaterialObserver()
    walk(record, [losses, stock])
    analysis = GameAnalysis(
        game_id=record.game_id, players={Side.RED: record.red.name, Side.BLUE: record.blue.name},
        result=record.result, plies=len(record.moves), fates=losses.fates, flags=losses.flags, chases=[],
        taken_in_half=losses.taken_in_half, hopeless=losses.hopeless)
    return AnalysedGame(analysis, stock.material)


@dataclass(frozen=True)
class GauntletGame:
    """One game from our side: against whom, with which colour, how it ended and why it was lost."""

    game_id: str
    opponent: str
    side: Side  # our colour
    score: float  # 1, 0.5 or 0 for us
    reason: str
    plies: int
    forfeit_ours: bool
    forfeit_theirs: bool
    stopped: bool  # cut off at the wall-time bound (adjourned): counted as a draw
    loss: str | None  # LOSS_FLAG, LOSS_NO_MOVES, the forfeit's reason or the reason itself; None unless lost
    flag_raider: Rank | None  # the piece that took our flag
    top_losses: tuple[tuple[Rank, Cause], ...]  # our marshal / general that fell, and to what
    taken_in_half: int  # our pieces taken in our half by enemy pieces we had been shown
    longest_raid: int
    hopeless_attacks: int  # our attacks on a piece we had been shown and that beat the attacker
    long_ahead: bool = False  # reached LONG_GAME_PLIES, ahead in material there
    flag_by_miner: bool = False  # our flag taken by a miner

    @property
    def lost(self) -> bool:
        return self.score == 0.0

    @property
    def failures(self) -> dict[str, int]:
        """This game's count of every failure of ``FAILURES``."""
        lost = [(rank, cause) for rank, cause in self.top_losses]
        values = (
            sum(1 for r, c in lost if r == Rank.MARSHAL and c == Cause.BOMB),
            sum(1 for r, c in lost if r == Rank.GENERAL and c == Cause.BOMB),
            sum(1 for _r, c in lost if c == Cause.SPY),
            sum(1 for _r, c in lost if c == Cause.HIGHER),
            self.taken_in_half,
            int(self.flag_by_miner),
            int(self.long_ahead),
        )
        return {name: value for (name, _once), value in zip(FAILURES, values, strict=True)}


def gauntlet_game(game: GameAnalysis | AnalysedGame, ours: str) -> GauntletGame | None:
    """The game from ``ours``'s side; None when ``ours`` did not play it."""
    stock = game.material if isinstance(game, AnalysedGame) else None
    game = game.analysis if isinstance(game, AnalysedGame) else game
    sides = [side for side, name in game.players.items() if name == ours]
    if len(sides) != 1:
        return None
    side = sides[0]
    result = game.result or {}
    # An old record may spell a reason as it is no longer written (``forfeit_setup``): counted as it is now.
    winner, reason = result.get("winner"), canonical_reason(str(result.get("reason") or "unknown"))
    forfeits = {Side.parse(s) for s in result.get("forfeits") or []}
    score = 0.5 if winner is None else (1.0 if Side.parse(winner) == side else 0.0)
    loss: str | None = None
    raider: Rank | None = None
    if score == 0.0:
        if side in forfeits or reason.startswith("forfeit"):
            loss = reason if reason.startswith("forfeit") else LOSS_FORFEIT  # forfeit_timeout, ...
        elif reason == "flag":
            loss = LOSS_FLAG
            raider = next((f.raider_rank for f in game.flags if f.side == side), None)
        elif reason in ("no_moves", "no_movable_pieces", ATTRITION):
            loss = LOSS_NO_MOVES
        else:
            loss = reason
    taken = [t for t in game.taken_in_half if t.side == side]
    return GauntletGame(
        game_id=game.game_id, opponent=game.players[side.other], side=side, score=score, reason=reason,
        plies=game.plies, forfeit_ours=side in forfeits, forfeit_theirs=side.other in forfeits,
        stopped=reason == "adjourned", loss=loss, flag_raider=raider,
        top_losses=tuple((f.rank, f.cause) for f in game.fates if f.side == side and f.lost),
        taken_in_half=len(taken), longest_raid=max((t.run for t in taken), default=0),
        hopeless_attacks=sum(1 for h in game.hopeless if h.side == side),
        long_ahead=stock is not None and stock[side] > stock[side.other],
        flag_by_miner=any(f.side == side and f.raider_rank == Rank.MINER for f in game.flags),
    )


@dataclass(frozen=True)
class ScoreInterval:
    score: float
    low: float
    high: float


def score_interval(trinomial: Trinomial, confidence: float = 0.95) -> ScoreInterval | None:
    """The mean score per game with its Wilson interval; None for no games. Games are the trials (every game
    has its own setups). Wilson, not the normal approximation the lab's matches use: a gauntlet has a few
    dozen games an opponent, often all won or all lost, where the normal interval shrinks to nothing. A draw
    counts as half a win, which makes the interval a little wider than the draws' smaller spread needs."""
    n = trinomial.games
    if n == 0:
        return None
    p = trinomial.score
    z = normal_quantile(confidence)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return ScoreInterval(p, max(0.0, centre - half), min(1.0, centre + half))


@dataclass(frozen=True)
class Rate:
    """A failure's count per 100 games with its 95 % interval."""

    per_100: float
    low: float
    high: float
    games: int
    events: int

    def __str__(self) -> str:
        return f"{self.per_100:.1f} [{self.low:.1f}, {self.high:.1f}]"

    def to_json(self) -> dict[str, float | int]:
        return {"per_100": self.per_100, "low": self.low, "high": self.high, "games": self.games,
                "events": self.events}


def rate_per_100(values: Sequence[int], *, once: bool, confidence: float = 0.95) -> Rate | None:
    """A failure's count per 100 games (see the module docstring for the intervals); None for no games."""
    n = len(values)
    if n == 0:
        return None
    events = sum(values)
    mean = events / n
    if once:
        if any(v not in (0, 1) for v in values):
            raise ValueError(f"a failure that happens once a game counts 0 or 1, got {sorted(set(values))}")
        interval = score_interval(Trinomial(wins=events, draws=0, losses=n - events), confidence)
        assert interval is not None
        return Rate(100 * mean, 100 * min(interval.low, mean), 100 * max(interval.high, mean), n, events)
    if events == 0:
        return Rate(0.0, 0.0, 100 * -math.log((1 - confidence) / 2) / n, n, 0)
    variance = max(sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else 0.0, mean)
    half = normal_quantile(confidence) * math.sqrt(variance / n)
    return Rate(100 * mean, 100 * max(0.0, mean - half), 100 * (mean + half), n, events)


def failure_rates(games: Sequence[GauntletGame]) -> dict[str, Rate | None]:
    """Every failure of ``FAILURES`` per 100 of these games."""
    return {name: rate_per_100([g.failures[name] for g in games], once=once) for name, once in FAILURES}


@dataclass
class OpponentSummary:
    """Everything the gauntlet reports about one opponent."""

    opponent: str
    games: list[GauntletGame] = field(default_factory=list)

    def add(self, game: GauntletGame) -> None:
        self.games.append(game)

    @property
    def trinomial(self) -> Trinomial:
        scores = Counter(g.score for g in self.games)
        return Trinomial(wins=scores[1.0], draws=scores[0.5], losses=scores[0.0])

    @property
    def interval(self) -> ScoreInterval | None:
        return score_interval(self.trinomial)

    @property
    def forfeits_ours(self) -> int:
        return sum(g.forfeit_ours for g in self.games)

    @property
    def forfeits_theirs(self) -> int:
        return sum(g.forfeit_theirs for g in self.games)

    @property
    def stopped(self) -> int:
        return sum(g.stopped for g in self.games)

    @property
    def plies(self) -> list[int]:
        return sorted(g.plies for g in self.games)

    @property
    def loss_causes(self) -> Counter[str]:
        """How the lost games ended: ``flag`` (``flag by scout`` ...), ``no_moves``, ``forfeit``."""
        out: Counter[str] = Counter()
        for g in self.games:
            if g.loss is not None:
                out[f"flag by {g.flag_raider.label}" if g.loss == LOSS_FLAG and g.flag_raider else g.loss] += 1
        return out

    @property
    def top_losses_in_lost_games(self) -> Counter[str]:
        """Our marshal and general lost in the games we lost: ``marshal to bomb``, ``general to higher``..."""
        return Counter(f"{rank.label} to {cause.value}" for g in self.games if g.lost for rank, cause in g.top_losses)

    @property
    def top_losses_all(self) -> Counter[str]:
        return Counter(f"{rank.label} to {cause.value}" for g in self.games for rank, cause in g.top_losses)

    @property
    def taken_in_half(self) -> int:
        return sum(g.taken_in_half for g in self.games)

    @property
    def longest_raid(self) -> int:
        return max((g.longest_raid for g in self.games), default=0)

    @property
    def hopeless_attacks(self) -> int:
        return sum(g.hopeless_attacks for g in self.games)

    def to_json(self) -> dict[str, Any]:
        t, interval = self.trinomial, self.interval
        return {
            "opponent": self.opponent, "games": t.games, "wins": t.wins, "draws": t.draws, "losses": t.losses,
            "score": None if interval is None else interval.score,
            "score_low": None if interval is None else interval.low,
            "score_high": None if interval is None else interval.high,
            "forfeits_ours": self.forfeits_ours, "forfeits_theirs": self.forfeits_theirs, "stopped": self.stopped,
            "plies": self.plies, "loss_causes": dict(self.loss_causes),
            "top_losses_in_lost_games": dict(self.top_losses_in_lost_games),
            "top_losses_all_games": dict(self.top_losses_all),
            "taken_in_half": self.taken_in_half, "longest_raid": self.longest_raid,
            "hopeless_attacks": self.hopeless_attacks,
            "lost_games": [g.game_id for g in self.games if g.lost],
            "failures_per_100": {name: None if rate is None else rate.to_json()
                                 for name, rate in failure_rates(self.games).items()},
        }


def summarise_gauntlet(games: Iterable[GameAnalysis | AnalysedGame], ours: str) -> dict[str, OpponentSummary]:
    """Per opponent, in order of first appearance; games ``ours`` did not play are left out."""
    out: dict[str, OpponentSummary] = {}
    for analysis in games:
        game = gauntlet_game(analysis, ours)
        if game is not None:
            out.setdefault(game.opponent, OpponentSummary(game.opponent)).add(game)
    return out


def total(summaries: Iterable[OpponentSummary]) -> OpponentSummary:
    """All opponents together (the "whole set" row)."""
    out = OpponentSummary("all")
    for summary in summaries:
        for game in summary.games:
            out.add(game)
    return out
