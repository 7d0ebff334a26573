"""The engine facade: the one object the bot talks to.

``Engine(settings)`` plays one side of a game as the bot sees it (its own pieces, the opponent's with
what is known of each). ``start_game`` before the first move, ``observe`` after every real move (the
move analysis of the psychological model), ``choose_move`` for a move with its reasons. The search
runs without the GIL, so the daemon's event loop keeps answering while the engine thinks.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import structlog

from engine_ext.beliefs import BeliefModel
from engine_ext.engine.evaluation import random_key
from engine_ext.engine.psychology import MoveAnalysis, Psychology
from engine_ext.engine.raiders import searched_position
from engine_ext.engine.search import SearchRunner
from engine_ext.engine.settings import (
    BUILTIN_ENGINE_SETTINGS,
    EngineSettings,
    builtin_settings,
    deep_merge,
    search_params,
    strategic_params,
)
from engine_ext.engine.spy_guard import spy_guard_charges
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.notation import Move, Square
from engine_ext.rules.pieces import Rank, Side
from setups.notation import Setup

log = structlog.get_logger()

# Kept between the search's abort deadline and the caller's hard deadline, for the answer to be built and
# handed over: at least _ANSWER_MARGIN seconds, and _ANSWER_RESERVE_SHARE of the move's whole time (its start
# to the hard deadline). Why the share: on a loaded machine the search threads and the Python that follows
# them wait for a core, and an iteration cut 20 ms before the hard deadline came back after it, so a random
# fallback move went out (measured in docs/engine.md, *The answer's reserve*). An iteration that runs into the
# reserve is one its forecast meant to end by the soft deadline, half of -T under the referee.
_ANSWER_MARGIN = 0.02
_ANSWER_RESERVE_SHARE = 0.15
_STOP_POLL = 0.005
_ALGORITHM_NAMES = {"minimax": "minimax", "expectiminimax": "expectiminimax", "pemm": "p-e-minimax"}
_OUTCOME_NAMES = ("win", "lose", "both fall", "passive")
_LIMIT_NAMES = {"depth": "the full depth", "nodes": "the node budget", "time": "the clock", "stop": "a stop request"}
# The deepest search the compiled search allows (search.pxd MAX_DEPTH; EngineSettings.max_depth's bound).
MAX_SEARCH_DEPTH = 24


def answer_reserve(start: float, hard_deadline: float) -> float:
    """Seconds the search leaves before ``hard_deadline`` (a move that started at ``start``) for its answer;
    a deadline that never binds (``math.inf``, the lab's node budgets and fixed depths) keeps it there."""
    if not math.isfinite(hard_deadline):
        return _ANSWER_MARGIN
    return max(_ANSWER_MARGIN, _ANSWER_RESERVE_SHARE * (hard_deadline - start))


def rank_root_moves(values: list[float], bonus: list[float], deeper: list[float | None] | None
                    ) -> tuple[list[float], list[float], list[int], int]:
    """The root moves ranked: each one's value (over the passive move) plus its ``bonus`` (the strategic
    score), best first, ties by index. ``deeper``: what an iteration the clock cut had finished (a value, or
    None). When it finished the best move of the complete iteration (the first it searched), the moves it
    finished are ranked at its depth, ahead of the rest, as Stockfish keeps a cut iteration's best: those
    others were below that move a ply shallower. Returns the values, the totals and the order used, and how
    many moves the cut iteration decided (0: it was not used)."""
    values = list(values)
    totals = [v + b for v, b in zip(values, bonus, strict=True)]
    order = sorted(range(len(values)), key=lambda i: (-totals[i], i))
    if deeper is None or not order or deeper[order[0]] is None:
        return values, totals, order, 0
    finished = []
    for i, value in enumerate(deeper):
        if value is not None:
            values[i] = value
            totals[i] = value + bonus[i]
            finished.append(i)
    rest = [i for i in order if deeper[i] is None]
    return values, totals, sorted(finished, key=lambda i: (-totals[i], i)) + rest, len(finished)


@dataclass(frozen=True)
class EngineChoice:
    move: Move
    value: float  # the chosen move's value over the passive move, plus its strategic score
    depth: int  # plies of the last complete search iteration (0: none finished)
    nodes: int
    elapsed: float  # seconds
    reasons: tuple[str, ...]
    # What ended the search: "depth" (the deepest iteration asked for), "nodes" (the node budget),
    # "time" (a deadline), "stop"; "" when nothing was searched (the random mover, a single legal move).
    limit: str = ""
    # The line the engine expects, from its move on (the bot's getAIMove ``info``, docs/protocol.md). The
    # compiled search keeps no principal variation, only each root move's value: the line is the move alone.
    line: tuple[Move, ...] = ()


def quiet_plies(game: Game) -> int:
    """Plies since a piece was last taken (an attack of any outcome ends the count; the whole game when
    none was): the progress term's clock (docs/engine.md, *A won endgame*)."""
    count = 0
    for entry in reversed(game.history):
        if entry.outcome:
            break
        count += 1
    return count


def initial_counts(game: Game) -> list[int]:
    """Pieces of each rank code (0..12) a side starts with under the game's ruleset."""
    pieces = game.options.ruleset.pieces
    return [int(pieces.get(Rank(code), 0)) for code in range(13)]


def search_beliefs(position: Position, me: int, enemy: np.ndarray, ours: np.ndarray) -> np.ndarray:
    """The one matrix the search reads (engine_ext/engine/knowledge.pyx ``belief_rows``): each piece's
    row as its opponent believes it, the opponent's pieces from ``enemy`` (ours of them), our pieces
    from ``ours`` (the opponent's, as we model it)."""
    rows = np.zeros(enemy.shape, dtype=np.float64)
    for pid in range(position.piece_count):
        rows[pid] = ours[pid] if position.piece(pid)[1] == me else enemy[pid]
    return rows


def describe_belief(row: list[float] | np.ndarray, square: str) -> str:
    """\"E7 is a bomb with 0.71 (general 0.12)\": the piece's likeliest rank and the runner-up."""
    order = sorted(range(12), key=lambda r: (-row[r], r))
    first, second = order[0], order[1]
    text = f"{square} is a {Rank(first).label} with {row[first]:.2f}"
    if row[second] >= 0.005:
        text += f" ({Rank(second).label} {row[second]:.2f})"
    return text


class Engine:
    def __init__(self, settings: EngineSettings | str | None = None) -> None:
        if settings is None:
            settings = builtin_settings("perspecto")
        elif isinstance(settings, str):
            settings = builtin_settings(settings)
        self.settings = settings
        self._rng = random.Random(settings.seed)
        self.psychology = Psychology(settings.fear, self._rng)
        # What was learnt per opponent name: (estOppFear, ownFear's bluff scale).
        self._learnt: dict[str, tuple[float, float]] = {}
        self._side: Side | None = None
        self._opponent = ""
        self._seen = 0  # history entries the move analysis has looked at
        self.last_analysis: list[MoveAnalysis] = []
        # The beliefs (issue 22): one model a game, built at the game's first look when ``beliefs`` is on.
        # ``opponent_setups``: the opponent's past setups (the daemon's store), the model's prior.
        self.opponent_setups: list[Setup] = []
        self.belief_model: BeliefModel | None = None

    @property
    def name(self) -> str:
        return self.settings.engine

    # The psychological variables the daemon keeps per opponent ------------------------------------

    @property
    def est_opp_fear(self) -> float:
        return self.psychology.est_opp_fear

    @est_opp_fear.setter
    def est_opp_fear(self, value: float) -> None:
        self.psychology.est_opp_fear = value
        self._remember()

    @property
    def own_fear(self) -> float:
        return self.psychology.own_fear

    @property
    def own_fear_scale(self) -> float:
        """ownFear's bluff scale (engine_ext/engine/psychology.py); kept per opponent like estOppFear."""
        return self.psychology.own_fear_scale

    @own_fear_scale.setter
    def own_fear_scale(self, value: float) -> None:
        self.psychology.own_fear_scale = value
        self._remember()

    def _remember(self) -> None:
        # Kept under the opponent's name ("" before a game names one), so values the bot primes
        # from its store before the first move are what start_game begins from.
        self._learnt[self._opponent] = (self.psychology.est_opp_fear, self.psychology.own_fear_scale)

    # The game ------------------------------------------------------------------------------------

    def start_game(self, game: Game, side: Side, opponent: str = "") -> None:
        """A new game: ``side`` is ours. estOppFear starts from what this engine learnt about the same
        opponent in an earlier game (10.3.3), else from the configured start value."""
        self._side = Side(side)
        self._opponent = opponent
        fear, scale = self._learnt.get(opponent, (None, None))
        self.psychology.start_game(fear, scale)
        self._seen = len(game.history)
        self.belief_model = None
        self._update_beliefs(game)

    def observe(self, game: Game, result: MoveResult | None = None) -> None:
        """Call after every real move (both sides'): runs the move analysis on every move of
        ``game.history`` not looked at yet. ``result`` is the latest entry (accepted for the
        bot's convenience; the history is what counts)."""
        if self._side is None:
            # Which side is ours is known from start_game or the first choose_move; until then
            # there is nothing to analyse against.
            self._seen = len(game.history)
            return
        self._catch_up(game)
        self._update_beliefs(game)

    def _update_beliefs(self, game: Game) -> BeliefModel | None:
        """Bring the belief model up to the game's history (built on first use); None without beliefs.
        The beliefs are an aid, not the rules: a model that fails is logged and this move is priced
        from the thesis's pools, never a lost move."""
        if not self.settings.beliefs or self._side is None:
            return None
        try:
            if self.belief_model is None:
                self.belief_model = BeliefModel(game, self._side, tuple(self.opponent_setups))
            else:
                self.belief_model.update(game)
        except Exception:  # any failure of the model: fall back to the pools, logged
            log.exception("engine.beliefs_failed", ply=game.ply)
            self.belief_model = None
        return self.belief_model

    def _catch_up(self, game: Game) -> None:
        history = game.history
        if self._seen > len(history):  # a different game: start looking from here
            self._seen = len(history)
        if self._seen == len(history) or not self.settings.psychology:
            self._seen = len(history)
            return
        assert self._side is not None
        for index in range(self._seen, len(history)):
            before = game.position.copy()
            for _ in range(len(history) - index):
                before.unmake()
            entry = history[index]
            code = game.code_of(entry.move)
            self.last_analysis.append(self.psychology.analyze(before, code, int(self._side),
                                                              (entry.attacker, entry.defender)))
        del self.last_analysis[:-8]
        self._seen = len(history)
        self._remember()

    def choose_move(
        self,
        game: Game,
        soft_deadline: float,
        hard_deadline: float,
        stop: threading.Event | None = None,
        *,
        nodes: int | None = None,
        depth: int | None = None,
    ) -> EngineChoice:
        """A legal move for ``game.side_to_move`` (which becomes our side if ``start_game`` was not
        called). Aims to answer by ``soft_deadline`` (time.monotonic()), never runs past
        ``hard_deadline``, and stops early when ``stop`` is set.

        Limits that do not depend on the machine (the strength lab, docs/lab.md): ``nodes`` is a node
        budget for this move (the search then runs one thread, and the answer is the last iteration
        that stays within it); ``depth`` searches to exactly that many plies, in place of the settings'
        ``max_depth``. The deadlines stay a safety net: with deadlines that do not bind, the same
        seed and limits give the same move on any machine (``EngineChoice.limit`` says which bound)."""
        if nodes is not None and nodes < 1:
            raise ValueError(f"the node budget must be at least 1, not {nodes}")
        if depth is not None and not 1 <= depth <= MAX_SEARCH_DEPTH:
            raise ValueError(f"the search depth must be 1..{MAX_SEARCH_DEPTH}, not {depth}")
        start = time.monotonic()
        side = game.side_to_move
        if self._side != side:
            self.start_game(game, side, self._opponent)
        self._catch_up(game)
        legal = game.sendable_codes()  # legal under both readings of a repeated position
        if not legal:
            raise ValueError("no legal move: the game is over")
        if self.settings.engine == "random":
            move = game.move_of(self._rng.choice(legal))
            return EngineChoice(move, 0.0, 0, 0, time.monotonic() - start,
                                (f"random mover: one of {len(legal)} legal moves",), line=(move,))
        if self.settings.fear.own_fear_redraw == "move":
            self.psychology.redraw_own_fear()
        if len(legal) == 1:
            move = game.move_of(legal[0])
            return EngineChoice(move, 0.0, 0, 0, time.monotonic() - start, ("the only legal move",), line=(move,))
        return self._search(game, legal, start, soft_deadline, hard_deadline, stop, nodes, depth)

    # The search ----------------------------------------------------------------------------------

    def _search(self, game: Game, legal: list[int], start: float, soft_deadline: float,
                hard_deadline: float, stop: threading.Event | None, nodes: int | None,
                depth: int | None) -> EngineChoice:
        settings = self.settings
        psy = self.psychology
        seed = settings.seed if settings.seed is not None else 0
        params = search_params(
            settings, own_fear=psy.own_fear, est_opp_fear=psy.est_opp_fear, est_own_fear=psy.est_own_fear,
            random_key=random_key(seed, game.ply), two_squares=game.options.two_squares or 0, max_depth=depth,
        )
        counts = initial_counts(game)
        # Not in the thesis: unseen pieces at our flag's door are searched as miners (engine_ext/engine/raiders.py).
        position, suspects = searched_position(game.position, int(game.side_to_move), settings.raider_radius,
                                               counts[Rank.MINER])
        me = int(game.side_to_move)
        model = self._update_beliefs(game)
        beliefs = None
        if model is not None:
            beliefs = search_beliefs(position, me, model.enemy_matrix(), model.own_matrix())
        # A node budget searches on one thread (engine_ext/engine/search.pyx says why): no copies for the others.
        runner = SearchRunner(position, me, counts, params, threads=1 if nodes is not None else None,
                              beliefs=beliefs)
        strategic = [0.0] * len(legal)
        if settings.engine == "perspecto" and settings.strategic:
            strategic = runner.strategic(legal, strategic_params(
                settings, runner.opponent_movers(), ahead=runner.ahead() or runner.outranks(),
                quiet_plies=quiet_plies(game), their_top=runner.top_mover(1 - me),
                their_miners=runner.alive(1 - me, int(Rank.MINER))))
        soft = start + max(0.0, soft_deadline - start) * settings.time_use
        abort = max(start, hard_deadline - answer_reserve(start, hard_deadline))
        soft = min(soft, abort)
        weight = params.strategic_weight
        guard = self._spy_guard(position, me, legal, runner)
        # What the search does not see of a move, for the order of its iterations: the best move overall first.
        bonus = [weight * s + g for s, g in zip(strategic, guard, strict=True)]
        done = threading.Event()
        watcher = None
        if stop is not None:
            if stop.is_set():
                runner.request_stop()
            watcher = threading.Thread(target=_watch_stop, args=(stop, done, runner.request_stop),
                                       name="perspecto-stop-watch", daemon=True)
            watcher.start()
        try:
            result = runner.run(legal, soft, abort, nodes, bonus=bonus, partial_share=settings.partial_share)
        finally:
            done.set()
            if watcher is not None:
                watcher.join()
        values: list[float] = result["values"] or [0.0] * len(legal)
        cut = result["partial"] if result["depth"] else None
        values, totals, order, finished = rank_root_moves(values, bonus, cut["values"] if cut else None)
        if finished and cut is not None:
            result = {**result, "depth": cut["depth"], "finished": finished}
        best = order[0]
        elapsed = time.monotonic() - start
        reasons = self._reasons(game, runner, legal, result, values, strategic, totals, order, elapsed)
        if any(guard):
            kept = sum(1 for g in guard if g == 0.0)
            reasons.insert(1, f"spy guard: {len(legal) - kept} moves leave our marshal next to a possible spy "
                              f"(charged {-min(guard):.1f}); {kept} do not")
        if suspects:
            squares = ", ".join(str(Square(*position.coords(position.piece(pid)[0]))) for pid in suspects)
            reasons.insert(1, f"searched as miners at our flag's door: the unseen pieces on {squares}")
        move = game.move_of(legal[best])
        return EngineChoice(move, totals[best], result["depth"], result["nodes"], elapsed, tuple(reasons),
                            result["limit"], line=(move,))

    def _spy_guard(self, position: Position, me: int, legal: list[int], runner: SearchRunner) -> list[float]:
        """Each root move's charge from the spy guard (engine_ext/engine/spy_guard.py): 0 when the setting
        is off. A piece may be their spy when it is unseen and its belief row (if the search has one) gives
        the spy a chance."""
        if not self.settings.spy_guard:
            return [0.0] * len(legal)

        def may_be_spy(pid: int) -> bool:
            row = runner.belief(pid)
            return row[Rank.SPY] > 0.0 or not any(row)

        return spy_guard_charges(position, me, legal, runner.is_public, may_be_spy,
                                 runner.piece_value(me, int(Rank.MARSHAL)))

    def _reasons(self, game: Game, runner: SearchRunner, legal: list[int], result: dict[str, Any],
                 values: list[float], strategic: list[float], totals: list[float], order: list[int],
                 elapsed: float) -> list[str]:
        settings = self.settings
        best = order[0]
        move = game.move_of(legal[best])
        algorithm = _ALGORITHM_NAMES.get("pemm" if settings.engine == "perspecto" else settings.engine, "")
        depth = result["depth"]
        shape = "variable depth" if settings.variable_depth else "fixed depth"
        area = "global" if settings.local_radius < 0 else f"local radius {settings.local_radius}"
        reasons = []
        if depth == 0:
            reasons.append(f"{algorithm}: no search iteration finished in time; "
                           f"{'strategic score decides' if any(strategic) else 'first legal move'}")
        else:
            # A cut iteration that decided (rank_root_moves) says how much of it was searched.
            finished = result.get("finished")
            cut = f" ({finished} of {len(legal)} moves; the others to ply {depth - 1})" if finished else ""
            reasons.append(f"{algorithm} to ply {depth}{cut} ({shape}, {area}): {move} is worth "
                           f"{values[best]:+.2f} over the passive move")
        outcomes = runner.root_outcomes(legal[best])
        if outcomes is not None:
            mine, theirs = outcomes
            text = ", ".join(f"{name} {p:.2f}" for name, p in zip(_OUTCOME_NAMES, mine, strict=True) if p > 0)
            reasons.append(f"attack, our view: {text}; their view: win {theirs[0]:.2f}")
        if settings.beliefs:
            reasons += self._belief_reasons(game, runner, legal, order)
        if any(strategic):
            reasons.append(f"strategic score {strategic[best]:+.2f} (weight {settings.strategic_weight:g})")
        if len(order) > 1:
            second = order[1]
            reasons.append(f"next best {game.move_of(legal[second])} at {totals[second]:+.2f} "
                           f"(chosen {totals[best]:+.2f})")
        if settings.psychology:
            psy = self.psychology
            reasons.append(f"ownFear {psy.own_fear:.2f} (bluff scale {psy.own_fear_scale:.2f}), "
                           f"estOppFear {psy.est_opp_fear:.2f}, estOwnFear {psy.est_own_fear:.2f}")
        stopped = " (stopped early)" if result["aborted"] else ""
        reasons.append(f"{result['nodes']} nodes in {elapsed:.3f} s{stopped}, "
                       f"ended by {_LIMIT_NAMES[result['limit']]}")
        return reasons


    def _belief_reasons(self, game: Game, runner: SearchRunner, legal: list[int], order: list[int]) -> list[str]:
        """The beliefs that decided an attack: what the chosen move's unknown target probably is, and
        what the unknown target of the best attack not chosen probably is (why it was left alone)."""
        pos = game.position
        reasons = []
        declined = None
        for rank_index, index in enumerate(order):
            code = legal[index]
            target = pos.piece_id(code >> 8)
            if target < 0 or pos.piece(target)[2] != Rank.UNKNOWN:
                continue
            row = runner.belief(target)
            if not any(row):
                continue
            square = str(game.move_of(code).to)
            if rank_index == 0:
                reasons.append(f"beliefs: {describe_belief(row, square)}")
            elif declined is None:
                declined = f"beliefs: not attacking {square}: {describe_belief(row, square)}"
        if declined is not None:
            reasons.append(declined)
        return reasons


def _watch_stop(stop: threading.Event, done: threading.Event, request_stop: Callable[[], None]) -> None:
    # The search holds no GIL and cannot look at a threading.Event; this thread passes the word on.
    while not done.is_set():
        if stop.wait(_STOP_POLL):
            request_stop()
            return


# --- the bot's MoveEngine protocol ------------------------------------------------------------------


@runtime_checkable
class FearLearner(Protocol):
    """An engine whose psychological variables the bot keeps per opponent (thesis 10.3.3): estOppFear
    and ownFear's bluff scale, read after a game and set before the next (bot/daemon/learning.py)."""

    est_opp_fear: float
    own_fear_scale: float


class _Budget(Protocol):
    # Read-only, as the bot's frozen SearchBudget offers them.
    @property
    def soft_deadline(self) -> float: ...

    @property
    def hard_deadline(self) -> float: ...

    @property
    def stop(self) -> threading.Event: ...


class EngineMove:
    """``Engine`` behind the bot's ``MoveEngine`` protocol (``choose_move(game, budget) -> Move``);
    the move analysis catches up with the game's history on every call."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.name = engine.name
        self.last_choice: EngineChoice | None = None

    # FearLearner: the engine's variables, so the bot learns them through the wrapper it holds.
    @property
    def est_opp_fear(self) -> float:
        return self.engine.est_opp_fear

    @est_opp_fear.setter
    def est_opp_fear(self, value: float) -> None:
        self.engine.est_opp_fear = value

    @property
    def own_fear_scale(self) -> float:
        return self.engine.own_fear_scale

    @own_fear_scale.setter
    def own_fear_scale(self, value: float) -> None:
        self.engine.own_fear_scale = value

    # The beliefs' prior against this opponent: its past setups, from the daemon's store.
    @property
    def opponent_setups(self) -> list[Setup]:
        return self.engine.opponent_setups

    @opponent_setups.setter
    def opponent_setups(self, value: list[Setup]) -> None:
        self.engine.opponent_setups = list(value)

    def choose_move(self, game: Game, budget: _Budget) -> Move:
        choice = self.engine.choose_move(game, budget.soft_deadline, budget.hard_deadline, budget.stop)
        self.last_choice = choice
        return choice.move


def engine_factory(profile: str) -> Callable[[Mapping[str, Any], int | None], EngineMove]:
    """A factory in the shape of the bot's engine registry: (parameters, seed) -> engine. The
    parameters are ``EngineSettings`` fields laid over the built-in profile ``profile``."""
    if profile not in BUILTIN_ENGINE_SETTINGS:
        raise ValueError(f"unknown engine profile {profile!r} (known: {', '.join(BUILTIN_ENGINE_SETTINGS)})")

    def make(params: Mapping[str, Any], seed: int | None) -> EngineMove:
        data = deep_merge(BUILTIN_ENGINE_SETTINGS[profile].model_dump(), params)
        if seed is not None:
            data["seed"] = seed
        return EngineMove(Engine(EngineSettings.model_validate(data)))

    return make
