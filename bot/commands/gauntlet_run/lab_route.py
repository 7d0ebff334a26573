"""The lab's route: the referee's conditions as the lab's rules, the players, and a slot's game as a job."""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.commands.gauntlet_run.jobs import Clock, GauntletJob, game_id, slot_side
from bot.commands.gauntlet_run.opponents import Opponent
from bot.config import BotProfile
from bot.ucc.referee import referee_move_limit
from engine_ext.rules.pieces import Side


@dataclass
class LabGames:
    """What the lab's jobs share: the referee's conditions as the lab's rules, the setup source, the players."""

    rules: Any
    source: Any
    seed: int
    players: dict[str, Any]  # opponent name -> its Player; our arms' players under their names
    records: Path


def lab_games(args: argparse.Namespace, opponents: list[Opponent],
              ours: dict[str, BotProfile], records: Path) -> LabGames:
    from engine_ext.lab.runner import Rules, make_player, setup_source
    from engine_ext.rules.rulesets import get_ruleset

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little") >> 1
    # The referee's conditions: its clock for every answer, no repetition rule, its turn cap.
    rules = Rules(two_squares=None, more_squares=False, move_limit=referee_move_limit(args.max_turns),
                  move_time_average=args.move_time, move_time_max=args.move_time)
    source = setup_source("generated", get_ruleset("classic"))
    players = {name: make_player(name, profile, label="A") for name, profile in ours.items()}
    # Each program gets the referee's full time an answer (-T), not what the lab's time manager leaves a bot.
    for o in opponents:
        players[o.name] = make_player(o.name, o.profile, label="B", params=[f"B.answer_time={args.move_time:g}"])
    return LabGames(rules, source, seed, players, records)


def slot_seed(seed: int, opponent: str, slot: int) -> int:
    """A slot's seed (our setup's and engine's), from the run's seed, the opponent and the slot alone."""
    return random.Random(f"gauntlet/{seed}/{opponent}/{slot}").randrange(2**31)


def lab_job(games: LabGames, ours: str, opponent: str, slot: int, clock: Clock, *, arm: str = "",
            setup_seed: int, seen: Sequence[tuple[str, str]] = ()) -> GauntletJob:
    """The lab's game of a slot: our setup and engine seed from ``setup_seed``; ``seen``, what the games
    before showed of this opponent's setups (none: learns nothing)."""
    from engine_ext.lab.runner import GameJob, Limits

    our_side = slot_side(slot)
    red_setup, blue_setup = games.source.pair(0, setup_seed)
    a = dataclasses.replace(games.players[ours], opponent_seen=tuple(seen))
    gid = game_id(ours, opponent, slot)
    lab = GameJob(match=gid, index=0 if our_side == Side.RED else 1, pair=slot, a=a, b=games.players[opponent],
                  a_side=our_side, red_setup=red_setup.key, blue_setup=blue_setup.key, red_seed=setup_seed,
                  blue_seed=setup_seed, limits=Limits(), rules=games.rules, records=None, seed=games.seed)
    return GauntletJob(game_id=gid, ours=ours, opponent=opponent, slot=slot, our_side=our_side, clock=clock,
                       via="lab", work=games.records, arm=arm, setup_seed=setup_seed, lab=lab)
