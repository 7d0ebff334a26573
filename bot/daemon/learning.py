"""What the bot carries from one game against an opponent to the next.

``OpponentMemory`` sits between the client and the opponent store: it picks the game's setup with the
profile's ``SetupChooser`` (never the last setup played against that opponent unless the profile
allows it), starts the engine from the estOppFear learnt in earlier games (thesis 10.3.3), and writes
each finished game back. With no store (``state.learn = false``) it still chooses setups by the
profile, only without history across processes.

The store never costs a game: a read that fails (a store damaged while the bot runs) plays the game without
what was learnt, a write that fails (a full disk) keeps the game in the client's results only, and both are
logged and shown in the heartbeat (``problem``, ``unsaved_games``: bot/daemon/service.py).
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass, field
from typing import Any

import structlog

from bot.config import BotProfile
from bot.daemon.opponent_store import OpponentStore
from engine_ext.beliefs.observed import for_colour, parse_seen
from engine_ext.beliefs.prior import SetupLearner
from engine_ext.engine.facade import FearLearner
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import Ruleset, Square
from setups.notation import Notation, Setup, parse_setup

log = structlog.get_logger()


@dataclass
class ChosenSetup:
    name: str
    placement: dict[Square, Rank]


@dataclass
class OpponentMemory:
    store: OpponentStore | None = None
    # Why what is learnt is not kept now: no store could be opened, or its last write failed (None: all is well).
    problem: str | None = None
    unsaved_games: int = 0  # finished games the store should have taken and did not
    # Without a store, the last setup per opponent is still remembered for this process's life.
    _last_setup: dict[str, str] = field(default_factory=dict)
    # The setup library is read from disk once, not at every game's setup on the event loop.
    _library: Any = None

    def _setup_library(self) -> Any:
        if self._library is None:
            from setups.library import load_library

            self._library = load_library()
        return self._library

    def choose_setup(
        self, profile: BotProfile, opponent: str | None, ruleset: Ruleset, side: Side, rng: random.Random,
        rejected: dict[Square, Rank] | None = None,
    ) -> ChosenSetup:
        from setups.choice import SetupChooser
        from setups.notation import Setup

        chooser = SetupChooser(profile.setup, ruleset, library=self._setup_library(), rng=rng)
        if rejected is not None:
            setup = chooser.alternative(Setup.from_placement(ruleset, side, rejected))
            return ChosenSetup("alternative", setup.placement(side))
        key = opponent or ""
        previous = self._last_setup.get(key)
        if previous is None and self.store is not None:
            try:
                previous = self.store.history(key).last_setup
            except sqlite3.Error as exc:
                self._read_failed(key, exc)
        named = chooser.choose(previous)
        self._last_setup[key] = named.name
        return ChosenSetup(named.name, named.setup.placement(side))

    def prime_engine(self, engine: Any, opponent: str | None, ruleset: Ruleset | None = None,
                     side: Side | None = None) -> None:
        """Start the engine from the fear estimate of earlier games against this opponent and, given the
        game's ruleset, from the opponent's setups in those games (the belief model's prior); given the side
        the opponent plays now, also from what the games that revealed no setup showed of it."""
        if self.store is None or not opponent:
            return
        try:
            if ruleset is not None and isinstance(engine, SetupLearner):
                engine.opponent_setups = self._opponent_setups(opponent, ruleset, side)
            if not isinstance(engine, FearLearner):
                return  # an engine with no psychological model (the random mover, a UCC program)
            hist = self.store.history(opponent)
        except sqlite3.Error as exc:  # the game is played without what was learnt, never forfeited
            self._read_failed(opponent, exc)
            return
        if hist.est_opp_fear is not None:
            engine.est_opp_fear = hist.est_opp_fear
            log.info("bot.learnt_fear_used", opponent=opponent, est_opp_fear=round(hist.est_opp_fear, 3))
        if hist.own_fear_scale is not None:
            engine.own_fear_scale = hist.own_fear_scale
            log.info("bot.learnt_bluff_scale_used", opponent=opponent, own_fear_scale=round(hist.own_fear_scale, 3))

    def _opponent_setups(self, opponent: str, ruleset: Ruleset, side: Side | None = None) -> list[Setup]:
        assert self.store is not None
        setups = []
        for text in self.store.opponent_setups(opponent, ruleset.name):
            try:
                setups.append(parse_setup(text, ruleset, Notation.GRAVON))
            except ValueError as exc:  # a damaged row costs that setup, not the game
                log.warning("bot.stored_setup_unreadable", opponent=opponent, error=str(exc))
        whole = len(setups)
        if side is not None:
            seen = []
            for text, played in self.store.opponent_seen(opponent, ruleset.name):
                try:
                    seen.append((parse_seen(text, ruleset), Side.parse(played)))
                except ValueError as exc:
                    log.warning("bot.stored_setup_unreadable", opponent=opponent, error=str(exc))
            setups += for_colour(seen, side)
        if setups:
            log.info("bot.opponent_setups_used", opponent=opponent, setups=whole, seen=len(setups) - whole)
        return setups

    def record(
        self, opponent: str | None, *, won: bool | None, reason: str, setup: str | None, plies: int,
        engine: Any, game_id: str, score: int | None = None, opponent_setup: Setup | None = None,
        opponent_seen: Setup | None = None, opponent_side: Side | None = None, replace: bool = False,
    ) -> None:
        """Store a finished game: ``won`` None for no winner, ``score`` the points the host's gameOver gave us;
        the opponent's whole setup when the host revealed it, else what the game showed of it
        (``opponent_seen``, played as ``opponent_side``: engine_ext/beliefs/observed.py). ``replace``: bring
        the game ``game_id``, kept before as far as it had gone, up to date (OpponentStore.record_game)."""
        if not opponent or reason == "void":
            return  # a void game never started (the host's gameOver says so): nothing to learn, no result
        if self.store is None:
            if self.problem is not None:  # learning is on, but no store could be opened
                self.unsaved_games += 1
                log.error("bot.game_not_stored", opponent=opponent, game=game_id, why=self.problem,
                          unsaved_games=self.unsaved_games)
            return
        forfeit = reason.startswith("forfeit")
        if reason == "adjourned":
            result = "adjourned"  # stopped unfinished by the host: no result, but what was learnt in it counts
        elif won is None:
            result = "forfeit_loss" if forfeit else "draw"  # no winner of a forfeit: both sides forfeited
        elif won:
            result = "forfeit_win" if forfeit else "win"
        else:
            result = "forfeit_loss" if forfeit else "loss"
        learner = engine if isinstance(engine, FearLearner) else None
        shown = opponent_setup or opponent_seen
        seen = side_name = None
        if opponent_setup is None and opponent_seen is not None and opponent_side is not None:
            seen, side_name = opponent_seen.key, str(opponent_side)
        try:
            self.store.record_game(opponent, result, reason=reason, setup=setup, plies=plies,
                                   est_opp_fear=None if learner is None else float(learner.est_opp_fear),
                                   game_id=game_id, score=score,
                                   own_fear_scale=None if learner is None else float(learner.own_fear_scale),
                                   ruleset="" if shown is None else shown.ruleset.name,
                                   opponent_setup=None if opponent_setup is None else opponent_setup.key,
                                   opponent_seen=seen, opponent_seen_side=side_name, replace=replace)
        except Exception as exc:  # a full disk must not cost the next game
            self.unsaved_games += 1
            self.problem = f"{self.store.path}: {exc}"
            log.error("bot.store_write_failed", opponent=opponent, game=game_id, error=repr(exc),
                      unsaved_games=self.unsaved_games)
        else:
            self.problem = None

    def _read_failed(self, opponent: str, exc: sqlite3.Error) -> None:
        assert self.store is not None
        self.problem = f"{self.store.path}: {exc}"
        log.error("bot.store_read_failed", opponent=opponent, error=str(exc),
                  detail="this game is played without what was learnt about the opponent")
