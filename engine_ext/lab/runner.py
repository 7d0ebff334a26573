"""The lab's game runner: engine against engine in worker processes, paired games, ordered results.

No host, no TCP, no bot processes: a game is the referee and two engines with their partial views
(``engine_ext.research.selfplay.RefereedGame``), played to the end in one process. Every game is a picklable
``GameJob`` (the two players' profiles with their parameters, both setups, the seeds, the limits) that a
worker turns into a picklable ``GameOutcome``, and every game is saved in the record format ``perspecto
replay`` reads (engine_ext/rules/record.py).

Games come in pairs: pair i draws two setups (red's and blue's) and two engine seeds from the match seed
and i alone; game 2i has engine A as red, game 2i+1 the same two setups and seeds with the engines swapped,
so each engine plays each setup once and setup luck cancels out. Results are consumed pair by pair in
order of index whatever order the workers finish in, so statistics and an SPRT verdict depend on the seed
only, not on the number of workers.

Limits: a node budget a move (``Limits.nodes``, the same game on any machine), a fixed depth (the
engine's ``max_depth``) and a move time. Search engines play with one thread (one worker a core).

Profiles come from the bot's configuration (bot/config.py, bot/profiles.py), so any profile plays,
including a UCC 2012 program (``engine = "ucc"``), which chooses its own setup in place of the pair's. The
lab sits below the bot: it asks a profile only for what ``LabProfile`` names, and the commands hand it the
bot's profiles (bot/commands/match.py).
"""

from __future__ import annotations

import inspect
import multiprocessing
import pickle
import random
import re
import signal
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import structlog

from engine_ext.beliefs.observed import for_colour, parse_seen
from engine_ext.beliefs.prior import SetupLearner
from engine_ext.engine.facade import Engine, EngineMove
from engine_ext.engine.interface import MoveEngine, ProgramEngine, SearchBudget
from engine_ext.engine.settings import deep_merge
from engine_ext.engine.timeman import ProfileTimes, TimeLimits, TimeManager
from engine_ext.lab.sprt import EMPTY_CLASS_WEIGHT, SprtSpec, llr_pentanomial, sprt_verdict
from engine_ext.lab.stats import EloEstimate, Pentanomial, Trinomial, elo_from_pentanomial, elo_from_trinomial
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.game import Game, Move, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.referee import (
    Event,
    PlayerFailed,
    Referee,
    SetupsShown,
    SetupSubmitted,
    SetupUnreadable,
    Verdict,
)
from engine_ext.rules.rulesets import Ruleset, get_ruleset
from engine_ext.rules.tournament import MOVE_LIMIT, MOVE_TIME_AVERAGE, MOVE_TIME_MAX
from setups.generator import generate_setup
from setups.library import load_library
from setups.notation import Notation, Setup, parse_setup
from setups.stats import read_text

log = structlog.get_logger()

# Seconds a move may take when a node budget or a fixed depth is the limit: a net against a hung search,
# far beyond any budget the lab uses, so that the budget, never the clock, ends a search.
UNLIMITED_SECONDS = 3600.0
# Engines that search (and so take ``max_depth``, ``threads`` and a node budget).
SEARCH_ENGINES = frozenset({"minimax", "expectiminimax", "pemm", "perspecto"})


class LabError(ValueError):
    """A match that cannot be set up (a bad parameter, setup source or limit); the message says why."""


# --- what a game is played with ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """How long an engine thinks: a node budget a move, a fixed depth, a move time (soft seconds; the
    hard limit is three times it). Without any, each profile's own move times apply, capped by the
    rules' ``move_time_average`` / ``move_time_max`` as the bot caps them."""

    nodes: int | None = None
    depth: int | None = None
    move_time: float | None = None

    def __post_init__(self) -> None:
        if self.nodes is not None and self.nodes < 1:
            raise LabError(f"a node budget must be at least 1, not {self.nodes}")
        if self.depth is not None and not 1 <= self.depth <= 24:
            raise LabError(f"a depth must be 1..24, not {self.depth}")
        if self.move_time is not None and self.move_time <= 0:
            raise LabError(f"a move time must be above 0 s, not {self.move_time:g}")

    @property
    def machine_independent(self) -> bool:
        """The limits decide every search by themselves (the clock never does)."""
        return self.move_time is None and (self.nodes is not None or self.depth is not None)

    def describe(self) -> str:
        parts = []
        if self.nodes is not None:
            parts.append(f"{self.nodes} nodes a move")
        if self.depth is not None:
            parts.append(f"depth {self.depth}")
        if self.move_time is not None:
            parts.append(f"{self.move_time:g} s a move")
        return ", ".join(parts) or "the profiles' move times"


@dataclass(frozen=True)
class Rules:
    """The game options, as plain values (picklable; ``options()`` builds the engine's)."""

    ruleset: str = "classic"
    range_attacks: bool = True
    two_squares: int | None = 5
    more_squares: bool = True
    move_limit: int = MOVE_LIMIT
    move_time_average: float = MOVE_TIME_AVERAGE  # caps the profiles' move times when no limit is given
    move_time_max: float = MOVE_TIME_MAX

    def options(self) -> RulesOptions:
        return RulesOptions(ruleset=get_ruleset(self.ruleset), range_attacks=self.range_attacks,
                            two_squares=self.two_squares, more_squares=self.more_squares,
                            move_limit=self.move_limit)

    def record_options(self, limits: Limits) -> dict[str, Any]:
        return {"range_attacks": self.range_attacks, "two_squares": self.two_squares,
                "more_squares": self.more_squares, "move_limit": self.move_limit,
                "nodes": limits.nodes, "depth": limits.depth, "move_time": limits.move_time}


class LabProfile(ProfileTimes, Protocol):
    """What the lab asks of a profile (bot/config.py's profiles are ones; injected, so the lab does not
    reach up into the bot): its engine, made fresh for each game, and its engine parameters."""

    @property
    def name(self) -> str: ...

    @property
    def engine(self) -> str: ...

    def create_engine(self, seed: int | None = None) -> MoveEngine: ...

    def engine_param_values(self) -> dict[str, Any]: ...

    def engine_params_set(self) -> dict[str, Any]: ...

    def with_engine_params(self, engine_params: Mapping[str, Any]) -> LabProfile:
        """The profile with these parameters in place of its own, checked by the engine; a ``ValueError``
        naming a bad one."""
        ...


@dataclass(frozen=True)
class Player:
    """One side of a match: a name unique within it and the profile it plays (parameters merged in);
    ``opponent_seen``: what earlier games showed of the opponent's setup, as played (``Setup.key``) with the
    colour it played ("red", "blue"), as the opponent store keeps it (engine_ext/beliefs/observed.py; the
    gauntlet's memory across games), for an engine whose beliefs take past setups."""

    name: str
    profile: LabProfile
    opponent_seen: tuple[tuple[str, str], ...] = ()

    @property
    def engine(self) -> str:
        return self.profile.engine


def parse_param(item: str) -> tuple[str, list[str], Any]:
    """``SIDE.KEY=VALUE`` -> (side, key path, value). SIDE is ``A``, ``B`` or a profile name; KEY may be
    dotted (``fear.own_fear_min``); VALUE is read as TOML (``64``, ``true``, ``"KS"``), else as text."""
    side, sep, assignment = item.partition(".")
    if not sep or "=" not in assignment or not side:
        raise LabError(f"--param {item!r}: expected SIDE.KEY=VALUE (SIDE: A, B or a profile name), "
                       "e.g. A.home_guard=64")
    key, raw = (part.strip() for part in assignment.split("=", 1))
    if not key or not raw:
        raise LabError(f"--param {item!r}: the key and the value must not be empty")
    try:
        value: Any = tomllib.loads(f"value = {raw}")["value"]
    except tomllib.TOMLDecodeError:
        value = raw
    return side, key.split("."), value


def _nested(path: list[str], value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {path[-1]: value}
    for part in reversed(path[:-1]):
        out = {part: out}
    return out


def make_player(name: str, profile: LabProfile, *, label: str = "", params: Iterable[str] = (),
                depth: int | None = None) -> Player:
    """The profile as the lab plays it: one search thread, ``depth`` as its ``max_depth``, and every
    ``--param`` aimed at this side (by ``label`` "A"/"B" or by the profile's name) laid over its
    ``engine_params``. A bad key or value is a ``LabError`` naming it, raised before any game starts."""
    engine_params: dict[str, Any] = profile.engine_param_values()
    if profile.engine in SEARCH_ENGINES:
        # One thread a search: the workers take the cores, and one thread keeps a node budget exact.
        engine_params["threads"] = 1
        if depth is not None:
            engine_params["max_depth"] = depth
    for item in params:
        side, path, value = parse_param(item)
        if side.upper() == label.upper() or side == profile.name:
            engine_params = deep_merge(engine_params, _nested(path, value))
    try:
        merged = profile.with_engine_params(engine_params)  # the engine's own validation: a misspelt one fails
    except ValueError as exc:
        raise LabError(str(exc)) from None
    return Player(name, merged)


def player_names(profiles: Sequence[str]) -> list[str]:
    """Names for the sides of a match: the profile names, with -a, -b... where one profile plays twice."""
    counts = Counter(profiles)
    return [f"{p}-{'ab'[i] if i < 2 else i}" if counts[p] > 1 else p for i, p in enumerate(profiles)]


# --- setup sources ----------------------------------------------------------------------------------------


class SetupSource(Protocol):
    """Where pair ``index`` of a match with seed ``seed`` gets its red and blue setups (deterministic)."""

    @property
    def description(self) -> str: ...

    def pair(self, index: int, seed: int) -> tuple[Setup, Setup]: ...


def _pair_rng(seed: int, index: int, what: str) -> random.Random:
    # A string seed is hashed with SHA-512 by random.Random: the same on every run and machine.
    return random.Random(f"{what}/{seed}/{index}")


@dataclass(frozen=True)
class LibrarySetups:
    """Two different named setups of the library (setups/library.py) a pair."""

    setups: tuple[Setup, ...]
    description: str = "the named library"

    @classmethod
    def load(cls, ruleset: Ruleset) -> LibrarySetups:
        entries = load_library().entries(ruleset)
        if len(entries) < 2:
            raise LabError(f"the setup library has {len(entries)} {ruleset.name} setup(s); a pair needs two")
        return cls(tuple(e.setup for e in entries), f"the named library ({len(entries)} {ruleset.name} setups)")

    def pair(self, index: int, seed: int) -> tuple[Setup, Setup]:
        red, blue = _pair_rng(seed, index, "library").sample(self.setups, 2)
        return red, blue


@dataclass(frozen=True)
class GeneratedSetups:
    """Two fresh setups a pair from the human-like generator (setups/generator.py)."""

    ruleset: Ruleset
    description: str = "generated human-like setups"

    def pair(self, index: int, seed: int) -> tuple[Setup, Setup]:
        rng = _pair_rng(seed, index, "generated")
        return generate_setup(self.ruleset, rng.randrange(2**32)), generate_setup(self.ruleset, rng.randrange(2**32))


@dataclass(frozen=True)
class FileSetups:
    """Setups from a file, one a line (any notation ``perspecto setups`` reads, e.g. the Gravon data's 40
    letters, front row first); ``#`` starts a comment line. Lines are read when a pair draws them, so a
    large file costs little; a bad line drawn is an error naming its line."""

    path: Path
    ruleset: Ruleset
    lines: tuple[tuple[int, str], ...]  # (line number, text)
    description: str = ""

    @classmethod
    def load(cls, path: Path, ruleset: Ruleset) -> FileSetups:
        try:
            text = read_text(path)  # plain, or compressed as the shipped Gravon collections are (.xz, .gz)
        except OSError as exc:
            raise LabError(f"cannot read the setup file {path}: {exc.strerror or exc}") from None
        except ValueError as exc:  # a damaged compressed file, or not UTF-8
            raise LabError(f"cannot read the setup file {path}: {exc}") from None
        lines = tuple((n, line.strip()) for n, line in enumerate(text.splitlines(), start=1)
                      if line.strip() and not line.lstrip().startswith("#"))
        if len(lines) < 2:
            raise LabError(f"{path}: {len(lines)} setup line(s); a pair needs two")
        return cls(path, ruleset, lines, f"{path} ({len(lines)} setups)")

    def _setup(self, number: int, text: str) -> Setup:
        notation = Notation.GRAVON if re.fullmatch(r"[A-Ma-m]+", text) else None
        try:
            return parse_setup(text, self.ruleset, notation)
        except ValueError as exc:  # SetupError is a ValueError
            raise LabError(f"{self.path}:{number}: not a legal {self.ruleset.name} setup: {exc}") from None

    def pair(self, index: int, seed: int) -> tuple[Setup, Setup]:
        first, second = _pair_rng(seed, index, "file").sample(self.lines, 2)
        return self._setup(*first), self._setup(*second)


def setup_source(spec: str, ruleset: Ruleset) -> SetupSource:
    """``library``, ``generated`` or the path of a file of setups."""
    if spec == "library":
        return LibrarySetups.load(ruleset)
    if spec == "generated":
        return GeneratedSetups(ruleset)
    return FileSetups.load(Path(spec), ruleset)


# --- one game ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameJob:
    """Everything a worker needs for one game (picklable)."""

    match: str  # the match's label, e.g. "perspecto-vs-pemm"
    index: int  # game number in the match: 2 * pair, 2 * pair + 1
    pair: int
    a: Player
    b: Player
    a_side: Side
    red_setup: str  # Gravon letters, front row first
    blue_setup: str
    red_seed: int  # the seed of the engine playing red (the pair's, whichever engine that is)
    blue_seed: int
    limits: Limits
    rules: Rules
    records: Path | None
    seed: int  # the match's

    @property
    def red(self) -> Player:
        return self.a if self.a_side == Side.RED else self.b

    @property
    def blue(self) -> Player:
        return self.b if self.a_side == Side.RED else self.a

    @property
    def record_name(self) -> str:
        return f"{self.match}-s{self.seed}-{self.index:05d}"


@dataclass(frozen=True)
class GameOutcome:
    """A game's result (picklable)."""

    match: str
    index: int
    pair: int
    a_side: Side
    winner: Side | None
    reason: str
    plies: int
    forfeit: Side | None = None
    detail: str | None = None
    seconds: float = 0.0
    nodes: tuple[int, int] = (0, 0)  # red's and blue's nodes searched
    record_path: Path | None = None

    @property
    def a_score(self) -> float:
        """1, 0.5 or 0 for engine A."""
        if self.winner is None:
            return 0.5
        return 1.0 if self.winner == self.a_side else 0.0


def _accepts_node_budget() -> bool:
    return "nodes" in inspect.signature(Engine.choose_move).parameters


class _Side:
    """One engine in a game: how it is asked for a move under the match's limits."""

    def __init__(self, player: Player, seed: int, limits: Limits, rules: Rules, colour: Side) -> None:
        self.player = player
        self.engine: MoveEngine = player.profile.create_engine(seed)
        if player.opponent_seen and isinstance(self.engine, SetupLearner):
            ruleset = rules.options().ruleset
            seen = [(parse_seen(key, ruleset), Side.parse(played)) for key, played in player.opponent_seen]
            self.engine.opponent_setups = for_colour(seen, colour.other)
        self.limits = limits
        profile = player.profile
        searcher = isinstance(self.engine, EngineMove)
        self.timer: TimeManager | None = None
        if limits.move_time is not None:
            self.soft, self.hard = limits.move_time, 3 * limits.move_time
        elif searcher and (limits.nodes is not None or limits.depth is not None):
            self.soft = self.hard = UNLIMITED_SECONDS
        else:  # as the bot plays: the time manager under the rules' time options (engine_ext/engine/timeman.py)
            self.timer = TimeManager(TimeLimits.for_host(profile, move_time_max=rules.move_time_max,
                                                         move_time_average=rules.move_time_average,
                                                         move_limit=rules.move_limit))
            self.soft, self.hard = self.timer.spans(0)
        self.nodes = 0

    def choose(self, view: Game) -> Move:
        if self.timer is None:
            return self._choose(view)
        times = self.timer.start_move(view.ply)
        self.soft, self.hard = times.optimum, times.maximum
        try:
            return self._choose(view)
        finally:
            self.timer.finish_move(times)

    def _choose(self, view: Game) -> Move:
        engine = self.engine
        if isinstance(engine, EngineMove):
            start = time.monotonic()
            if self.limits.nodes is not None:
                choice = engine.engine.choose_move(view, start + self.soft, start + self.hard,
                                                   nodes=self.limits.nodes)
            else:
                choice = engine.engine.choose_move(view, start + self.soft, start + self.hard)
            self.nodes += choice.nodes
            return choice.move
        return engine.choose_move(view, SearchBudget.starting_now(self.soft, self.hard))


def _program_setup(side: _Side, colour: Side, opponent: str, ruleset: Ruleset) -> Event | None:
    """An outside program (UCC) chooses its own setup: the event that reports it; ``None`` for every other
    engine (they play the pair's setup)."""
    if not isinstance(side.engine, ProgramEngine):
        return None
    try:
        return SetupSubmitted(colour, side.engine.choose_setup(colour, opponent, ruleset))
    except Exception as exc:  # any failure of the program is its forfeit, not the match's end
        return SetupUnreadable(colour, f"{side.player.name} gave no usable setup: {exc}")


def play_game(job: GameJob) -> GameOutcome:
    """Play one game to the end and save its record (in ``job.records``, if any); an engine that fails or
    plays an illegal move forfeits (the game is scored, the match goes on)."""
    outcome, record = play_game_with_record(job)
    if job.records is None:
        return outcome
    job.records.mkdir(parents=True, exist_ok=True)
    path = job.records / f"{job.record_name}.json"
    record.save(path)
    return replace(outcome, record_path=path)


def play_game_with_record(job: GameJob) -> tuple[GameOutcome, GameRecord]:
    """Play one game to the end and return its record rather than save it (a cluster's worker sends it
    back: the records are written where the match runs, not on the worker's disk). The referee core
    (engine_ext/rules/referee.py) judges the setups and the moves and makes the record; this loop asks the
    engines and reports what they did."""
    started = time.monotonic()
    rules = job.rules
    options = rules.options()
    ruleset = options.ruleset
    sides = {Side.RED: _Side(job.red, job.red_seed, job.limits, rules, Side.RED),
             Side.BLUE: _Side(job.blue, job.blue_seed, job.limits, rules, Side.BLUE)}
    # No second chance in the lab: a program whose setup is illegal forfeits at once.
    core = Referee(options, names={colour: side.player.name for colour, side in sides.items()},
                   game_id=job.record_name, started=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                   record_options=rules.record_options(job.limits), setup_attempts=1)
    for colour, setup_key in ((Side.RED, job.red_setup), (Side.BLUE, job.blue_setup)):
        side = sides[colour]
        event = None if core.forfeits else _program_setup(side, colour, sides[colour.other].player.name, ruleset)
        if event is None:
            drawn = parse_setup(setup_key, ruleset, Notation.GRAVON, validate=False).placement(colour)
            event = SetupSubmitted(colour, drawn)
        core.submit(event)
    game: RefereedGame | None = None
    if not core.over:
        core.submit(SetupsShown())
        game = RefereedGame.around(core)
    while not core.over:
        assert game is not None
        colour = game.referee.side_to_move
        try:
            move = sides[colour].choose(game.view(colour))
        except Exception as exc:  # an engine that breaks loses the game, as it would on the host
            core.submit(PlayerFailed(colour, f"{sides[colour].player.name}: {exc!r}"))
        else:
            game.submit(move)
    verdict = core.verdict
    assert verdict is not None
    forfeit = min(verdict.forfeits, default=None)  # one side at most: the lab asks one engine at a time
    _finish_programs(sides, game, verdict, forfeit)
    nodes = (sides[Side.RED].nodes, sides[Side.BLUE].nodes)
    record = core.record({"pair": job.pair, "nodes": {"red": nodes[0], "blue": nodes[1]}})
    return GameOutcome(
        match=job.match, index=job.index, pair=job.pair, a_side=job.a_side, winner=verdict.winner,
        reason=verdict.reason, plies=verdict.plies, forfeit=forfeit, detail=verdict.detail,
        seconds=time.monotonic() - started, nodes=nodes,
    ), record


def _finish_programs(sides: Mapping[Side, _Side], game: RefereedGame | None, verdict: Verdict,
                     forfeit: Side | None) -> None:
    """Tell outside programs the game is over (they exit); a failure here changes nothing."""
    result = "DRAW" if verdict.winner is None else str(verdict.winner).upper()
    for colour, side in sides.items():
        engine = side.engine
        if not isinstance(engine, ProgramEngine):
            continue
        try:
            if forfeit == colour:
                engine.abandon(verdict.detail or verdict.reason)
            engine.finish(game.view(colour) if game is not None else None, result)
        except Exception as exc:  # the game is decided; the program's exit is its own business
            log.warning("lab.program_finish_failed", player=side.player.name, error=repr(exc))


# --- a match: its jobs and its ordered tally --------------------------------------------------------------


@dataclass
class Match:
    """One pairing: ``pairs`` pairs of games (at most; an SPRT may stop it sooner)."""

    a: Player
    b: Player
    pairs: int
    source: SetupSource
    seed: int
    limits: Limits
    rules: Rules
    records: Path | None = None
    sprt: SprtSpec | None = None
    # Filled in as games come back.
    outcomes: dict[int, GameOutcome] = field(default_factory=dict)
    consumed_pairs: int = 0
    pair_scores: list[float] = field(default_factory=list)
    llr: float = 0.0
    verdict: str | None = None  # "H0" | "H1" once the SPRT has decided
    started: float = 0.0
    seconds: float = 0.0

    @property
    def label(self) -> str:
        return re.sub(r"[^A-Za-z0-9._-]", "_", f"{self.a.name}-vs-{self.b.name}")

    @property
    def done(self) -> bool:
        return self.verdict is not None or self.consumed_pairs >= self.pairs

    def jobs(self) -> Iterator[GameJob]:
        """The games in order; stops early once the match is done (an SPRT verdict)."""
        ruleset = self.rules.options().ruleset
        for pair in range(self.pairs):
            if self.done:
                return
            red_setup, blue_setup = self.source.pair(pair, self.seed)
            for setup, colour in ((red_setup, Side.RED), (blue_setup, Side.BLUE)):
                if setup.ruleset.name != ruleset.name:
                    raise LabError(f"the setup source gives {setup.ruleset.name} setups for a {ruleset.name} game")
                setup.validate(colour)
            seeds = _pair_rng(self.seed, pair, "engines")
            red_seed, blue_seed = seeds.randrange(2**31), seeds.randrange(2**31)
            for k, a_side in enumerate((Side.RED, Side.BLUE)):
                if 2 * pair + k in self.outcomes:  # finished in an earlier run (--resume)
                    continue
                yield GameJob(
                    match=self.label, index=2 * pair + k, pair=pair, a=self.a, b=self.b, a_side=a_side,
                    red_setup=red_setup.key, blue_setup=blue_setup.key, red_seed=red_seed,
                    blue_seed=blue_seed, limits=self.limits, rules=self.rules, records=self.records,
                    seed=self.seed,
                )

    def add(self, outcome: GameOutcome) -> bool:
        """Take a finished game; complete pairs are consumed in order of index and the SPRT, if any, is
        checked after each, so the verdict does not depend on the order the workers finish in. A game
        already taken (a cluster may finish one twice when a worker is lost just after it) is not counted
        again: ``False``."""
        if outcome.index in self.outcomes:
            return False
        self.outcomes[outcome.index] = outcome  # kept even after a verdict: ``unconsumed`` lists it
        self._consume()
        return True

    def _consume(self) -> None:
        while not self.done:
            first = self.outcomes.get(2 * self.consumed_pairs)
            second = self.outcomes.get(2 * self.consumed_pairs + 1)
            if first is None or second is None:
                return
            self.pair_scores.append(first.a_score + second.a_score)
            self.consumed_pairs += 1
            if self.sprt is not None:
                self.llr = llr_pentanomial(self.pentanomial, self.sprt)
                self.verdict = sprt_verdict(self.llr, self.sprt)

    @property
    def games(self) -> list[GameOutcome]:
        """The consumed games (complete pairs up to the verdict), in order."""
        return [self.outcomes[i] for i in range(2 * self.consumed_pairs)]

    @property
    def unconsumed(self) -> list[GameOutcome]:
        """Games played beyond the consumed pairs (after a verdict, or an unfinished pair)."""
        return [o for i, o in sorted(self.outcomes.items()) if i >= 2 * self.consumed_pairs]

    @property
    def trinomial(self) -> Trinomial:
        scores = Counter(g.a_score for g in self.games)
        return Trinomial(wins=scores[1.0], draws=scores[0.5], losses=scores[0.0])

    @property
    def pentanomial(self) -> Pentanomial:
        return Pentanomial.from_pair_scores(self.pair_scores)

    def elo(self) -> EloEstimate | None:
        """Elo of A over B from the game pairs (pentanomial: pairs are the independent trials)."""
        if not self.pair_scores:
            return None
        return elo_from_pentanomial(self.pentanomial)

    def elo_games(self) -> EloEstimate | None:
        """The same from single games (trinomial), for comparison with tools that count games."""
        if not self.pair_scores:
            return None
        return elo_from_trinomial(self.trinomial)

    @property
    def reasons(self) -> Counter[str]:
        return Counter(g.reason for g in self.games)

    def summary(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        t = self.trinomial
        elo = self.elo()
        out: dict[str, Any] = {
            "a": self.a.name, "b": self.b.name, "a_profile": self.a.profile.name, "b_profile": self.b.profile.name,
            "a_params": self.a.profile.engine_params_set(), "b_params": self.b.profile.engine_params_set(),
            "games": t.games, "pairs": self.consumed_pairs, "wins": t.wins, "draws": t.draws, "losses": t.losses,
            "score": t.score if t.games else None,
            "draw_ratio": t.draws / t.games if t.games else None,  # drawn games / games, as counted
            "pentanomial": list(self.pentanomial.counts),
            # From the pairs (the pentanomial model); an unbounded or infinite figure is written as null
            # (bot/commands/match.py). even_pair_ratio: pairs in which A made 1 point (two draws, or a win
            # and a loss) / pairs, which is not a draw ratio: a match without a draw can have them.
            "elo": None if elo is None else {"elo": elo.elo, "low": elo.low, "high": elo.high, "los": elo.los,
                                             "even_pair_ratio": elo.draw_ratio},
            "reasons": dict(self.reasons),
            "mean_plies": (sum(g.plies for g in self.games) / t.games) if t.games else None,
            "seconds": self.seconds, "seed": self.seed, "limits": self.limits.describe(),
            "setups": self.source.description,
        }
        if self.sprt is not None:
            s = self.sprt
            # The LLR counts an empty pair class 0.001 times (fishtest's regularisation): said here, so
            # that a script recomputing it from "pentanomial" gets the same figure.
            out["sprt"] = {"elo0": s.elo0, "elo1": s.elo1, "alpha": s.alpha, "beta": s.beta, "llr": self.llr,
                           "llr_empty_class_weight": EMPTY_CLASS_WEIGHT,
                           "lower": s.lower, "upper": s.upper, "verdict": self.verdict}
        return out


def sprt_line(match: Match) -> str | None:
    """``SPRT elo0=0 elo1=10 alpha=0.05 beta=0.05: LLR 2.96 [-2.94, 2.94] H1 accepted``."""
    s = match.sprt
    if s is None:
        return None
    state = {"H0": "H0 accepted", "H1": "H1 accepted"}.get(match.verdict or "", "inconclusive")
    return (f"SPRT elo0={s.elo0:g} elo1={s.elo1:g} alpha={s.alpha:g} beta={s.beta:g}: "
            f"LLR {match.llr:.2f} [{s.lower:.2f}, {s.upper:.2f}] {state}")


# --- running matches --------------------------------------------------------------------------------------


ProgressHook = Callable[[Match, GameOutcome], None]


class GamePool(Protocol):
    """Somewhere else to play the games than this machine's process pool (engine_ext/lab/cluster.py):
    it plays ``jobs`` in order, hands each outcome (its record saved) to ``finished`` and skips or cancels
    queued games of a match for which ``is_done`` is true."""

    @property
    def threads(self) -> int: ...

    def run(self, jobs: Iterator[GameJob], finished: Callable[[GameOutcome], None],
            is_done: Callable[[str], bool]) -> None: ...


def _check_limits(matches: Sequence[Match]) -> None:
    for match in matches:
        if match.limits.nodes is not None and not _accepts_node_budget():
            raise LabError("this engine has no node budget yet (Engine.choose_move takes no nodes=); "
                           "use --depth or --move-time")


def run_matches(matches: Sequence[Match], *, concurrency: int = 1, on_game: ProgressHook | None = None,
                pool: GamePool | None = None, saved: Iterable[GameOutcome] = ()) -> None:
    """Play the matches' games, ``concurrency`` at a time (worker processes; 1: in this process) or on
    ``pool`` (a cluster), in order, keeping a few jobs ahead so every worker stays busy. Each finished
    game goes to its match (``Match.add``) and then, unless the match had it already, to ``on_game``.
    ``saved`` are games finished in an earlier run (--resume): taken first and not played again. Games of
    a match that has decided are not started; records of games played beyond its verdict are deleted, so
    the record folder holds exactly the games counted."""
    if concurrency < 1:
        raise LabError(f"--concurrency must be at least 1, not {concurrency}")
    _check_limits(matches)
    by_label = {m.label: m for m in matches}
    if len(by_label) != len(matches):
        raise LabError("two matches of the same pairing in one run: give each pairing once")
    for outcome in saved:
        if outcome.match not in by_label:
            raise LabError(f"a saved game of {outcome.match!r}, which is not a pairing of this run")
        by_label[outcome.match].add(outcome)

    def jobs() -> Iterator[GameJob]:
        for match in matches:
            match.started = time.monotonic()
            yield from match.jobs()

    def finished(outcome: GameOutcome) -> None:
        match = by_label[outcome.match]
        new = match.add(outcome)
        match.seconds = time.monotonic() - match.started
        if new and on_game is not None:
            on_game(match, outcome)

    try:
        if pool is not None:
            pool.run(jobs(), finished, lambda label: by_label[label].done)
        elif concurrency == 1:
            for job in jobs():
                finished(play_game(job))
        else:
            _run_pool(jobs(), concurrency, finished, lambda label: by_label[label].done)
    finally:
        for match in matches:
            for extra in match.unconsumed:
                if match.done and extra.record_path is not None:
                    extra.record_path.unlink(missing_ok=True)


def _ignore_interrupts() -> None:
    # Ctrl-C is the parent's to handle (it stops the run and prints the results so far); a worker that
    # took it too would only print a traceback in the middle of the table.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


WorkerLogging = tuple[int, list[Any] | None]


def worker_logging() -> WorkerLogging:
    """This process's log level and structlog processors, for the workers to log as the command does: a
    worker starts from a clean interpreter, where structlog's defaults print everything, debug included, to
    stdout (thousands of lines of a UCC program's protocol in a ``--log-level warning`` table). Processors
    that do not pickle are left to the worker's defaults; the level always goes."""
    level = structlog.get_logger().bind().get_effective_level()
    processors: list[Any] | None = list(structlog.get_config()["processors"])
    try:
        pickle.dumps(processors)
    except Exception:  # a processor holding a stream or a lock; the level is what matters
        processors = None
    return level, processors


def start_worker(level: int, processors: list[Any] | None) -> None:
    """A lab worker's initializer: Ctrl-C is the parent's, and logs go to stderr at the parent's level."""
    _ignore_interrupts()
    if processors is not None:
        structlog.configure(processors=processors)
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def _run_pool(jobs: Iterator[GameJob], concurrency: int, finished: Callable[[GameOutcome], None],
              is_done: Callable[[str], bool]) -> None:
    # forkserver: workers start from a clean interpreter (no copy of a rich console or of threads).
    context = multiprocessing.get_context("forkserver" if "forkserver" in multiprocessing.get_all_start_methods()
                                          else "spawn")
    ahead = 2 * concurrency
    with ProcessPoolExecutor(max_workers=concurrency, mp_context=context, initializer=start_worker,
                             initargs=worker_logging()) as pool:
        pending: dict[Future[GameOutcome], GameJob] = {}
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < ahead:
                    job = next(jobs, None)
                    if job is None:
                        exhausted = True
                    else:
                        pending[pool.submit(play_game, job)] = job
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: pending[f].index):
                    del pending[future]
                    if not future.cancelled():
                        finished(future.result())
                # A match that has decided needs none of its queued games.
                for future, job in list(pending.items()):
                    if is_done(job.match) and future.cancel():
                        del pending[future]
        except BaseException:
            pool.shutdown(wait=False, cancel_futures=True)
            raise
