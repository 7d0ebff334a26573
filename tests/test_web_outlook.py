"""Red's winning chances on the web view's graph (bot/web/outlook.py, through bot/web/timeline.py): the
documented material logistic, the same for every game whoever plays it, moved by captures alone."""

from __future__ import annotations

import json
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.web.outlook import MATERIAL, STEEPNESS, material, red_chance
from bot.web.timeline import timeline_of
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import CLASSIC, MINI
from tests.web_records import random_record, replayed


def classic_game(seed: int = 1) -> Game:
    rng = random.Random(seed)
    red, blue = (CLASSIC.random_placement(side, rng) for side in (Side.RED, Side.BLUE))
    return Game(RulesOptions(ruleset=CLASSIC), red, blue)


def test_the_values_and_the_logistic_are_the_documented_ones() -> None:
    assert {rank.name.lower(): value for rank, value in MATERIAL.items()} == {
        "spy": 40, "scout": 17, "miner": 30, "sergeant": 15, "lieutenant": 20, "captain": 25, "major": 35,
        "colonel": 55, "general": 85, "marshal": 95}
    game = classic_game()
    assert material(game, Side.RED) == material(game, Side.BLUE) == 961  # bombs and the flag count nothing
    assert red_chance(game) == 0.5
    # The figures docs/host.md and the module's docstring give.
    full = 961.0
    for lost, expected in ((95.0, 0.40), (full / 4, 0.24), (full / 2, 0.065)):
        share = -lost / (2 * full - lost)
        assert 1 / (1 + math.exp(-STEEPNESS * share)) == pytest.approx(expected, abs=0.006)


def test_a_game_the_rules_ended_stands_at_its_result() -> None:
    ended = {}
    for seed in range(40):
        record = random_record(seed, plies=3000, ruleset=MINI)
        assert record.result is not None
        ended.setdefault(record.result["reason"], record)
    assert "flag" in ended, sorted(ended)
    for reason, record in ended.items():
        last = timeline_of(record).document()["moves"][-1]["outlook"]
        winner = record.result["winner"] if record.result else None
        assert last == (0.5 if winner is None else 1.0 if winner == "red" else 0.0), reason


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), ruleset=st.sampled_from([CLASSIC, MINI]))
def test_the_outlook_of_every_ply_is_the_referees_material(seed: int, ruleset: object) -> None:
    record = random_record(seed, plies=150, ruleset=ruleset)  # type: ignore[arg-type]
    doc = timeline_of(record).document()
    assert doc["start_outlook"] == 0.5  # both sides have the same army
    previous = doc["start_outlook"]
    for entry in doc["moves"]:
        game = replayed(record, entry["ply"])
        assert entry["outlook"] == red_chance(game)
        if not entry["captured"] and game.result is None:
            assert entry["outlook"] == previous, f"ply {entry['ply']}: no capture, yet the outlook moved"
        if entry["captured"] and game.result is None:
            lost = {str(side): sum(MATERIAL.get(Rank.parse(c.split("/")[1]), 0.0)
                                   for c in entry["captured"] if c.startswith(str(side)))
                    for side in Side}
            if lost["red"] > lost["blue"]:
                assert entry["outlook"] < previous
            elif lost["blue"] > lost["red"]:
                assert entry["outlook"] > previous
        previous = entry["outlook"]


def test_each_sides_thinking_time_adds_up_from_the_host_or_the_records_info() -> None:
    record = random_record(3, plies=6)
    data = json.loads(record.to_json())
    for index, seconds in enumerate((0.5, 0.25, 1.0, None, 2.0, 0.125)):
        if seconds is not None:
            data["moves"][index]["info"] = {"time": seconds}
    moves = timeline_of(GameRecord.from_json(json.dumps(data))).document()["moves"]
    assert [m["took"] for m in moves] == [0.5, 0.25, 1.0, None, 2.0, 0.125]
    assert [m["seconds"] for m in moves] == [None] * 6  # no host measured these
    assert [m["used"] for m in moves] == [
        {"red": 0.5, "blue": 0.0}, {"red": 0.5, "blue": 0.25}, {"red": 1.5, "blue": 0.25},
        {"red": 1.5, "blue": 0.25}, {"red": 3.5, "blue": 0.25}, {"red": 3.5, "blue": 0.375},
    ]
