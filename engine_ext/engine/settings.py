"""Engine settings: one pydantic model, the built-in profiles, and the plain parameters a search takes.

Every number the thesis fixes is a field here with the thesis's value as default; docs/engine.md says
what each does. A bad key is an error that names it (``extra="forbid"``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine_ext.engine.scales import ScaleError, ValueScale, get_scale

EngineKind = Literal["random", "minimax", "expectiminimax", "pemm", "perspecto"]
ENGINE_KINDS: tuple[str, ...] = ("random", "minimax", "expectiminimax", "pemm", "perspecto")


class FearSettings(BaseModel):
    """The psychological model (9.3)."""

    model_config = ConfigDict(extra="forbid")

    own_fear_min: float = Field(0.2, ge=0.0, le=1.0, description="ownFear is drawn from [min, max]")
    own_fear_max: float = Field(0.5, ge=0.0, le=1.0)
    own_fear_redraw: Literal["move", "game"] = Field(
        "move", description="draw ownFear anew before every move (the thesis's games) or once a game")
    est_opp_fear_start: float = Field(0.3, ge=0.0, le=1.0, description="estOppFear at the start")
    est_own_fear: float | None = Field(
        None, ge=0.0, le=1.0, description="fixed estOwnFear; None: midway between ownFear and estOppFear")
    opponent_attacks_unknown: float = Field(
        -0.04, description="their known piece above lieutenant attacks our unknown moved piece")
    we_attack_with_unknown: float = Field(
        -0.02, description="we attack a known piece of theirs with an unknown moved piece")
    opponent_declines_attack: float = Field(
        0.04, description="their known piece above lieutenant could attack our unknown moved piece and "
        "does not (once a pair of pieces a game)")
    bluff_step: float = Field(
        0.1, ge=0.0, le=1.0, description="not in the thesis: ownFear is scaled by a factor kept per "
        "opponent, which falls by this when an opponent piece that approached one of our known pieces "
        "turns out weaker than it (a bluff) and rises by it when it was not; 0: the thesis's fixed ownFear")

    @model_validator(mode="after")
    def _range(self) -> FearSettings:
        if self.own_fear_min > self.own_fear_max:
            raise ValueError(f"own_fear_min {self.own_fear_min} is above own_fear_max {self.own_fear_max}")
        return self


class SearchShape(BaseModel):
    """How the tree is shaped: depth, variable depth (9.4), local area (7.4). C: ``SearchConfig``."""

    model_config = ConfigDict(extra="forbid")

    max_depth: int = Field(9, ge=1, le=24, description="plies searched, the root move being ply 1")
    variable_depth: bool = Field(True, description="Perspecto's variable depth (9.4)")
    full_plies: int = Field(4, ge=1, description="plies 1..full_plies search every local move")
    en_prise_plies: int = Field(5, ge=1, description="up to this ply also moves into reach of an opponent")
    last_piece_plies: int = Field(8, ge=1, description="up to this ply also the last moved piece's moves")
    depth_step: int = Field(1, ge=1, le=4, description="iterative deepening: plies added an iteration "
                            "beyond the full plies (the first iterations go one ply at a time)")
    local_radius: int = Field(2, ge=-1, description="local search radius (7.4); -1: global search")
    scout_runs: bool = Field(False, description="known scouts make range moves below the root; the "
                             "thesis leaves scouts' long strikes to the strategic search (9.2)")
    search_two_squares: bool = Field(True, description="apply the two-squares rule inside the search")
    skip_lost_captures: bool = Field(False, description="quiescence: at the plies past en_prise_plies no attack "
                                     "that loses for certain in the mover's own view (both ranks known to it)")
    flee: bool = Field(False, description="quiescence: at the plies past en_prise_plies a piece of known "
                       "rank next to an enemy piece the mover knows takes it may also step where nothing may take it")
    fight_reach: int = Field(-1, ge=-1, le=18, description="not in the thesis: one of our pieces and an enemy piece "
                             "of known rank, one of which takes the other, at most this many steps apart: the squares "
                             "between them join every local area (-1: none)")

    @model_validator(mode="after")
    def _plies(self) -> SearchShape:
        if not self.full_plies <= self.en_prise_plies <= self.last_piece_plies:
            raise ValueError("need full_plies <= en_prise_plies <= last_piece_plies")
        return self


class PemmRules(BaseModel):
    """p-e-minimax's own rules (8.3, 9.4). C: ``SearchConfig``."""

    model_config = ConfigDict(extra="forbid")

    average_margin: float = Field(3.0, ge=0.0, description="opponent moves this close to its best are averaged")
    failed_attack_passive: bool = Field(True, description="an unknown piece's failed attack on a known "
                                        "one counts as the passive move (8.3)")
    failed_attack_alternative: bool = Field(
        True, description="... and that failed branch takes the value of the mover's best other move, not "
        "of doing nothing: it would have made that move instead (the weak point 8.3 names)")
    pemm_plies: int = Field(0, ge=0, le=24, description="not in the thesis: plies 1..pemm_plies are "
                            "p-e-minimax's, the plies below them one value in our own view with alpha-beta (the "
                            "minimax's rules, an attack ending the more likely way); 0: every ply p-e-minimax's")


class PsychologySettings(BaseModel):
    """The psychological model (9.3) and its move analysis. C: ``Knowledge`` (the fears of one move)."""

    model_config = ConfigDict(extra="forbid")

    psychology: bool = True
    line_approach: bool = Field(True, description="a plain move towards a known piece earlier in the search "
                                "line counts as an approach for the psychological model, not only real moves")
    fear: FearSettings = Field(default_factory=FearSettings)


class BeliefSettings(BaseModel):
    """Not in the thesis (issue 22): what each unknown piece probably is, from human setups and from how
    it moves (engine_ext/beliefs), prices the attacks instead of the thesis's pools (7.3), in both views;
    the flag and bomb probabilities (7.5) and the strategic search's targets come from it too.
    C: ``Knowledge`` (``prepare_root``)."""

    model_config = ConfigDict(extra="forbid")

    beliefs: bool = Field(False, description="not in the thesis: attacks priced from each piece's rank "
                          "distribution (the belief model) instead of the pools' five cases (7.3)")


class EvaluationSettings(BaseModel):
    """Values of pieces and captures (Tables 4, 5, 8). C: ``build_values`` into ``Values``."""

    model_config = ConfigDict(extra="forbid")

    scale: str = Field("thesis", description="thesis, JM, KS, MS, SA, VB or the path of a scale file")
    default_flag_value: float = Field(300.0, gt=0.0, description="the flag's value when the scale gives none")
    capture_decay: float = Field(0.95, gt=0.0, le=1.0, description="captures lose this factor every two plies")
    advance_bonus: float = Field(0.0, description="Table 5: per row a piece (not a scout) advances")
    reveal_factor: float = Field(0.0, ge=0.0, description="Table 5: a piece that becomes known loses this share")
    reveal_bomb: float = Field(0.0, ge=0.0, description="Table 5: a bomb that becomes known loses this")
    random_amplitude: float = Field(2.0, ge=0.0, description="the random term lies in [-a, a]")
    ahead_trade_bias: float = Field(
        0.0, ge=0.0, lt=1.0, description="not in the thesis: when we are ahead (AHEAD_MARGIN), each of our "
        "movable ranks is worth the lower of ours and theirs of that rank times (1 - this), so an even trade "
        "scores positive for us; 0: off")
    seed: int | None = Field(None, description="seed of the random term, ownFear and the random mover")

    @field_validator("scale")
    @classmethod
    def _scale_exists(cls, value: str) -> str:
        try:
            get_scale(value)
        except ScaleError as exc:
            raise ValueError(str(exc)) from None
        return value

    def value_scale(self) -> ValueScale:
        return get_scale(self.scale)


# Not in the thesis (issue 45): we are ahead when (ours - theirs) / (ours + theirs) over the live movable
# pieces' plain rank values (theirs: the known ones and the pool) is at least this. The compiled evaluation
# (evaluation.pyx) has the same number; docs/engine.md, *A won endgame*.
AHEAD_MARGIN = 0.2


class StrategicSettings(BaseModel):
    """The strategic search (9.2, Appendix 1) and its additions. C: ``StrategicConfig``."""

    model_config = ConfigDict(extra="forbid")

    strategic: bool = Field(True, description="add the strategic search's scores at the root (9.2)")
    strategic_weight: float = Field(1.0, ge=0.0)
    hunt_movers: int = Field(0, ge=0, description="not in the thesis: once the opponent has at most this "
                             "many movable pieces, every own piece is pulled towards each known one it "
                             "beats (the endgame hunt); 0: never")
    hunt_force: float = Field(32.0, ge=0.0, description="the endgame hunt's force, as Appendix 1's forces")
    endgame_miner_pull: float | None = Field(
        None, ge=0.0, description="not in the thesis: ``miner_pull`` once the opponent has at most "
        "``hunt_movers`` movable pieces (the endgame: the miners go for the bombs round the flag); "
        "none: ``miner_pull`` throughout")
    miner_pull: float = Field(
        1.0, ge=0.0, description="not in the thesis: a factor on Appendix 1's rules 3 and 5, the miner's "
        "pulls towards likely bombs and flags among the unknown pieces (1: as written)")
    chase_weight: float = Field(
        0.0, ge=0.0, description="not in the thesis: the weight of the two-squares chase model "
        "(docs/two-squares.md) in the strategic search: each root move scores this times the change it "
        "makes to the chases the rule decides (the chased piece's value, a tenth less for every attacker "
        "move to its capture; ours up, theirs down; none where a piece on the trap's border may protect "
        "the chased one), and a known piece that escapes a closed trap no longer pulls the chaser; needs "
        "the game's two-squares rule; 0: off")
    answer_force: float = Field(
        0.0, ge=0.0, description="not in the thesis (issue 45): each known opponent marshal, general, colonel or "
        "major in our half gets one responder, the nearest own piece by path that beats it (the spy their "
        "marshal) or, when we are not behind in pieces, trades with it; the responder's root moves score this "
        "for a step nearer it (minus this for one away), and those of our pieces it beats within 2 steps of it "
        "score this for a step away from it and nearer the responder; 0: off")
    progress_force: float = Field(
        0.0, ge=0.0, description="not in the thesis: when we are ahead (AHEAD_MARGIN) or our strongest mover "
        "outranks all theirs, and no piece has been taken for ``progress_after`` plies, every root move that is "
        "no strike scores this times the steps it takes the moved piece nearer to its nearest target (a known "
        "mover it beats; a moved unknown one when it is above all they have left; for miners, scouts, sergeants, "
        "lieutenants and any piece with nothing else to hunt the unmoved unknown pieces with at least half the "
        "highest P(flag)), and as much less for a step away; 0: off")
    progress_after: int = Field(
        20, ge=0, description="not in the thesis: plies without a capture before ``progress_force`` applies")


class FlagDefence(BaseModel):
    """Not in the thesis: the defence of our own flag (docs/engine.md, *Raids*). ``flag_area`` fills
    ``SearchConfig``, ``own_flag_value`` ``build_values``, ``miner_guard`` and ``home_guard``
    ``StrategicConfig``; ``raider_radius`` rewrites the searched position (engine_ext/engine/raiders.py)."""

    model_config = ConfigDict(extra="forbid")

    flag_area: int = Field(-1, ge=-1, description="not in the thesis: squares this many steps from our flag "
                           "belong to every local area, so raids on it are searched; -1: none")
    own_flag_value: float | None = Field(
        None, gt=0.0, description="not in the thesis: what losing our own flag costs in our own view; "
        "None: the scale's flag value (the opponent's flag and its suspects keep that value)")
    miner_guard: float = Field(
        0.0, ge=0.0, description="not in the thesis: every own piece that beats a miner is pulled with this "
        "force towards each known opponent miner within 5 steps of our flag (the flag's guard); 0: off")
    home_guard: float = Field(
        0.0, ge=0.0, description="not in the thesis: up to two sergeants to majors (the home guards) are "
        "pulled with this force to stations next to the bombs by our flag, and a move off a station scores "
        "twice that pull less, so a miner that takes one of those bombs is taken at once; 0: off")
    raider_radius: int = Field(
        -1, ge=-1, le=10, description="not in the thesis: an opponent piece we have not seen that has moved and "
        "stands within this many steps of a bomb beside our flag (of the flag, when no bomb is beside it) is "
        "searched as a miner, as many as their unseen miners (the raider); -1: off")
    flag_defence_force: float = Field(
        0.0, ge=0.0, description="not in the thesis: the flag defence by distance: an opponent piece that may "
        "raid our flag (a known miner, an unseen piece that has moved) and would reach the last square before "
        "our bomb or flag on its cheapest way no later than one step after our nearest piece that stops it "
        "gets that piece sent there; the piece's steps that shorten its way there score this force / (L * t), "
        "those that lengthen it as much below 0 (docs/strategic.md, departure 13); 0: off")


class TopPieces(BaseModel):
    """Not in the thesis (issue 45): our marshal and general are not for lotteries. ``top_piece_rank`` fills
    the search's knowledge (``Knowledge.top_piece_rank``); ``spy_guard`` is the facade's (engine_ext/engine/
    spy_guard.py)."""

    model_config = ConfigDict(extra="forbid")

    top_piece_rank: int = Field(
        0, ge=0, le=10, description="not in the thesis: in our view an attack of our piece of this rank or "
        "higher on an unseen piece that has not moved and may be a bomb costs the whole attacker (the top "
        "pieces take a piece that has moved or one whose rank they know); 9: the general and the marshal; "
        "0: off")
    spy_guard: bool = Field(
        False, description="not in the thesis: a root move after which our marshal, known to the opponent, "
        "stands next to an unseen piece that may be their spy is charged the marshal's value")


class TimeUse(BaseModel):
    """Time and hardware. C: ``SearchRunner``'s workers and deadlines."""

    model_config = ConfigDict(extra="forbid")

    threads: int = Field(1, ge=0, le=8, description="search threads sharing the root moves; 0: one a core "
                         "this process may use, at most 8 (the perspecto profile's default)")
    partial_share: float = Field(0.0, ge=0.0, le=1.0, description="0: off. Else an iteration also starts, before "
                                 "the soft deadline, when this share of it is forecast to end by the abort deadline, "
                                 "and when the clock cuts it, the moves it finished decide if the last best is among "
                                 "them (never under a node budget)")
    time_use: float = Field(1.0, gt=0.0, le=1.0, description="share of the soft time budget to plan for")


# The groups by concern, in the order docs/engine.md's table lists them. Every field name is the name
# of the compiled field (or parameter) it fills: one name from the profile file to the C struct.
SETTINGS_GROUPS: tuple[type[BaseModel], ...] = (
    SearchShape, PemmRules, PsychologySettings, BeliefSettings, EvaluationSettings, StrategicSettings, FlagDefence,
    TopPieces, TimeUse,
)


# Settings taken out because the lab measured no gain (docs/engine.md, "Settings removed"): a profile
# that still sets one is told so by name rather than with "not a known setting".
REMOVED_SETTINGS: dict[str, str] = {
    "suspect_odds": "removed in issue 21: the lab measured a loss (docs/engine.md, Settings removed)",
    "captures_keep_strategic": "removed in issue 21: the lab measured no gain (docs/engine.md, Settings removed)",
    "trade_down": "removed in issue 21: the lab measured no gain (docs/engine.md, Settings removed)",
    "miner_bonus": "removed in issue 21: the lab measured no gain (docs/engine.md, Settings removed)",
    "deepen_past_full": "removed in issue 21: the lab measured no gain (docs/engine.md, Settings removed)",
}


class EngineSettings(TimeUse, TopPieces, FlagDefence, StrategicSettings, EvaluationSettings, BeliefSettings,
                     PsychologySettings, PemmRules, SearchShape):
    """Every engine setting, flat (a profile's ``engine_params`` keys are these names), grouped by concern
    through the base classes (``SETTINGS_GROUPS``)."""

    model_config = ConfigDict(extra="forbid")

    engine: EngineKind = "perspecto"

    @model_validator(mode="before")
    @classmethod
    def _removed(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            gone = [f"{key}: {REMOVED_SETTINGS[key]}" for key in data if key in REMOVED_SETTINGS]
            if gone:
                raise ValueError("; ".join(gone))
        return data


@dataclass(frozen=True)
class SearchParams:
    """Everything one search needs, as plain values (the compiled and the reference search take it).
    Each field named as the ``EngineSettings`` field it comes from; the rest is the move's state
    (the fears, the random key) or the game's (the two-squares limit)."""

    algorithm: str  # minimax | expectiminimax | pemm
    max_depth: int
    variable_depth: bool
    full_plies: int
    en_prise_plies: int
    last_piece_plies: int
    local_radius: int
    two_squares: int  # 0: not applied in the search
    failed_attack_passive: bool
    failed_attack_alternative: bool
    average_margin: float
    psychology: bool
    own_fear: float
    est_opp_fear: float
    est_own_fear: float
    base: tuple[float, ...]  # rank values by rank code 0..12
    special: tuple[float, ...]
    default_flag_value: float
    capture_decay: float
    reveal_factor: float
    reveal_bomb: float
    advance_bonus: float
    random_amplitude: float
    random_key: int
    strategic_weight: float
    threads: int = 1
    depth_step: int = 1
    scout_runs: bool = False
    flee: bool = False
    skip_lost_captures: bool = False
    fight_reach: int = -1
    pemm_plies: int = 0
    line_approach: bool = True
    own_flag_value: float = 0.0  # 0: the scale's flag value
    flag_area: int = -1
    beliefs: bool = False
    top_piece_rank: int = 0
    ahead_trade_bias: float = 0.0  # 0: off


@dataclass(frozen=True)
class StrategicParams:
    """The strategic search's knobs for one move (C: ``StrategicConfig``), named as the settings they
    come from. ``hunt_force`` and ``miner_pull`` are the ones in force for this move: the hunt's force
    only once the opponent is down to ``hunt_movers`` movers (else 0), and ``endgame_miner_pull`` then."""

    hunt_force: float = 0.0
    miner_pull: float = 1.0
    miner_guard: float = 0.0
    home_guard: float = 0.0
    chase_weight: float = 0.0
    answer_force: float = 0.0
    flag_defence_force: float = 0.0
    progress_force: float = 0.0  # in force for this move only: 0 unless ahead and quiet (``strategic_params``)
    progress_top: int = 10  # their strongest movable rank left (10, the marshal: no piece hunts moved unknowns)


# The SearchParams fields that are no setting: the algorithm (from ``engine``), the game's two-squares
# limit, the move's fears and random key, and the scale's values.
SEARCH_STATE_FIELDS: frozenset[str] = frozenset(
    {"algorithm", "two_squares", "own_fear", "est_opp_fear", "est_own_fear", "base", "special", "random_key"})
# The StrategicParams fields that are no setting: the game's state for one move (their strongest movable
# rank left, which the progress term reads).
STRATEGIC_STATE_FIELDS: frozenset[str] = frozenset({"progress_top"})
# The settings the facade (engine_ext/engine/facade.py) uses itself instead of handing them to compiled code:
# which engine, the scale (handed on as ``base``/``special``), the seed, the fears (the psychology),
# whether the search applies the two-squares rule, whether the strategic search runs, when the hunt and
# the endgame miner pull start (``strategic_params``), the raiders' rewrite of the position, the time.
FACADE_FIELDS: frozenset[str] = frozenset(
    {"engine", "scale", "seed", "fear", "search_two_squares", "strategic", "hunt_movers", "endgame_miner_pull",
     "raider_radius", "spy_guard", "time_use", "partial_share", "progress_after"})


def usable_cores() -> int:
    """Cores this process may run on (a container's CPU set included), at most the engine's 8 threads."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        count = os.cpu_count() or 1
    return max(1, min(8, count))


def search_params(
    settings: EngineSettings,
    *,
    own_fear: float = 0.0,
    est_opp_fear: float = 0.0,
    est_own_fear: float = 0.0,
    random_key: int = 0,
    two_squares: int | None = None,
    max_depth: int | None = None,
) -> SearchParams:
    """The search's parameters for one move: the settings, the move's fears and random key, the game's
    two-squares limit; ``max_depth``: a fixed depth in place of the settings'."""
    if settings.engine == "random":
        raise ValueError("the random mover does not search")
    scale = settings.value_scale()
    algorithm = "pemm" if settings.engine in ("pemm", "perspecto") else settings.engine
    return SearchParams(
        algorithm=algorithm,
        max_depth=max_depth or settings.max_depth,
        variable_depth=settings.variable_depth,
        full_plies=settings.full_plies,
        en_prise_plies=settings.en_prise_plies,
        last_piece_plies=settings.last_piece_plies,
        local_radius=settings.local_radius,
        two_squares=(two_squares or 0) if settings.search_two_squares else 0,
        failed_attack_passive=settings.failed_attack_passive,
        failed_attack_alternative=settings.failed_attack_alternative,
        average_margin=settings.average_margin,
        psychology=settings.psychology,
        own_fear=own_fear,
        est_opp_fear=est_opp_fear,
        est_own_fear=est_own_fear,
        base=scale.base_array(),
        special=scale.special_array(),
        default_flag_value=settings.default_flag_value,
        capture_decay=settings.capture_decay,
        reveal_factor=settings.reveal_factor,
        reveal_bomb=settings.reveal_bomb,
        advance_bonus=settings.advance_bonus,
        random_amplitude=settings.random_amplitude,
        random_key=random_key,
        strategic_weight=settings.strategic_weight if settings.strategic else 0.0,
        threads=settings.threads or usable_cores(),
        depth_step=settings.depth_step,
        scout_runs=settings.scout_runs,
        flee=settings.flee,
        skip_lost_captures=settings.skip_lost_captures,
        fight_reach=settings.fight_reach,
        pemm_plies=settings.pemm_plies,
        line_approach=settings.line_approach,
        own_flag_value=settings.own_flag_value or 0.0,
        flag_area=settings.flag_area,
        beliefs=settings.beliefs,
        top_piece_rank=settings.top_piece_rank,
        ahead_trade_bias=settings.ahead_trade_bias,
    )



def strategic_params(settings: EngineSettings, opponent_movers: int, *, ahead: bool = False,
                     quiet_plies: int = 0, their_top: int = 10, their_miners: int = 1) -> StrategicParams:
    """The strategic knobs for a move against an opponent with ``opponent_movers`` movable pieces left:
    the endgame hunt and the endgame miner pull apply once that is at most ``hunt_movers`` (not 0); the
    progress term once we are ``ahead`` and no piece has been taken for ``quiet_plies`` >= ``progress_after``.
    The home guards only while they have a miner left (``their_miners``): they hold the squares a miner takes
    a bomb from, and without one they kept our last mover at home in won endgames."""
    progressing = ahead and quiet_plies >= settings.progress_after
    hunting = settings.hunt_movers > 0 and 0 < opponent_movers <= settings.hunt_movers
    miner_pull = settings.miner_pull
    if hunting and settings.endgame_miner_pull is not None:
        miner_pull = settings.endgame_miner_pull
    return StrategicParams(
        hunt_force=settings.hunt_force if hunting else 0.0,
        miner_pull=miner_pull,
        miner_guard=settings.miner_guard,
        home_guard=settings.home_guard if their_miners > 0 else 0.0,
        chase_weight=settings.chase_weight,
        answer_force=settings.answer_force,
        flag_defence_force=settings.flag_defence_force,
        progress_force=settings.progress_force if progressing else 0.0,
        progress_top=their_top,
    )

# The thesis's first tests (section 8) used a fixed depth of five plies, local search, and the early
# evaluation: Table 4's values with Table 5's advance bonus and penalties for known pieces.
_SECTION_8: dict[str, Any] = dict(
    max_depth=5, variable_depth=False, psychology=False, average_margin=0.0, capture_decay=1.0,
    strategic=False, advance_bonus=1.0, reveal_factor=0.2, reveal_bomb=15.0,
)
# p-e-minimax's own rules as the issue and the thesis state them: a failed attack of an unknown piece on
# a known one is the passive move (8.3), and the opponent's moves within 3 points of its best are
# averaged (9.4). Measured against expectiminimax: with our departure for the failed branch and no
# averaging it lost (docs/engine.md, "Departures").
_PEMM_RULES: dict[str, Any] = dict(failed_attack_alternative=False, average_margin=3.0)

# Not in the thesis: Perspecto keeps the squares near its flag in every local area and prices the loss
# of its flag above the scale's flag, so a miner's raid is searched whatever the move. Against `pemm`
# (100 games, two seeds) 48/11/41 and 44/7/49 against 44/9/47 and 37/14/49 without (docs/engine.md).
_FLAG_DEFENCE: dict[str, Any] = dict(flag_area=3, own_flag_value=1000.0)
# Not in the thesis: Perspecto's miners follow rules 3 and 5 (towards likely bombs and flags) at 0.15 of
# Appendix 1's force. As written they walked into the opponent's pieces early (4.2 of 5 miners lost a
# game, at a median ply of 135) and the flag's bombs then stood: against the ablation 55/22/23 became
# 71/12/17 over 100 games (0.4: 61/18/21, 0: 48/30/22; docs/strategic.md).
_MINER_PULL: dict[str, Any] = dict(miner_pull=0.15)
# Not in the thesis: Perspecto defends its flag against the raid that beat it, a miner taking a bomb
# beside the flag and then the flag (41 of its 48 losses in 100 games against `pemm`): the unseen
# pieces within 3 steps of those bombs are searched as miners, up to two sergeants to majors hold the
# squares next to them, and the pieces that beat a miner are pulled towards a known one near the flag.
# In the endgame (at most 5 opponent movers) the miners pull at Appendix 1's full force and our pieces
# hunt the known movers. Against `pemm` 46/6/48 became 66/9/25 over 100 games (docs/engine.md, Raids).
_RAID_DEFENCE: dict[str, Any] = dict(raider_radius=3, home_guard=64.0, miner_guard=64.0, hunt_movers=5,
                                     endgame_miner_pull=1.0)
# Not in the thesis: the two-squares chase model (issue 24, docs/two-squares.md) in the strategic search at a
# quarter of a piece's discounted value. Against the same profile without it, 30 000 nodes a move:
# 112 / 18 / 68 over 198 games, +78.5 Elo [+34.0, +125.7], SPRT(0, 25) accepted; pointless chases of a known
# weaker piece 609 -> 192, chases ending in a capture 81 -> 102, flags lost 93 -> 48 in the same games.
_CHASE_MODEL: dict[str, Any] = dict(chase_weight=0.25)
# Not in the thesis: beliefs (issue 22, docs/engine.md "Beliefs"): attacks priced from each unknown piece's
# rank distribution (human setups, its moves, the opponent's past setups) instead of the uniform pools.
# Against the same profile without them, 30 000 nodes a move, on people's setups held out from the prior
# (Gravon): 158 / 16 / 110 over 284 games, +59.3 Elo [+21.2, +98.9], SPRT(0, 25) accepted. On the
# generator's setups (no scouts or miners in the front row, unlike people's) the SPRT accepted H0 after 568
# games, -11.0 [-38.4, +16.2]: the prior expects people; the per-opponent setups correct it game by game.
_BELIEFS: dict[str, Any] = dict(beliefs=True)
# Perspecto searches on every core it may use: its full variable depth then stays within a second on
# a busy two-core machine (bench/engine). The root moves are shared; values do not depend on it.
_EVERY_CORE: dict[str, Any] = dict(threads=0)

BUILTIN_ENGINE_SETTINGS: dict[str, EngineSettings] = {
    "random": EngineSettings(engine="random", psychology=False, strategic=False),
    "minimax": EngineSettings(engine="minimax", failed_attack_passive=False, **_SECTION_8),
    "expectiminimax": EngineSettings(engine="expectiminimax", failed_attack_passive=False,
                                     **_SECTION_8),
    "pemm": EngineSettings(engine="pemm", **{**_SECTION_8, **_PEMM_RULES}),
    "perspecto": EngineSettings(**_FLAG_DEFENCE, **_MINER_PULL, **_RAID_DEFENCE, **_CHASE_MODEL, **_BELIEFS,
                                **_EVERY_CORE),
}


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` laid over ``base``; nested tables (``fear``) key by key, so a profile that sets one
    fear value keeps the other values of what it is laid over."""
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def builtin_settings(name: str) -> EngineSettings:
    try:
        return BUILTIN_ENGINE_SETTINGS[name].model_copy(deep=True)
    except KeyError:
        raise ValueError(f"unknown engine profile {name!r} (known: {', '.join(BUILTIN_ENGINE_SETTINGS)})") from None
