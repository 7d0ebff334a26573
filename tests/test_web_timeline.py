"""The web view's boards (bot/web/timeline.py) against the rules engine, ply by ply.

The page shows a board by applying each move's changes to the start; here those same changes are applied
and every board is held to an independent account: the referee's board to a full scan of a replayed game,
each side's view to what ``Game.render(viewer=side)`` hides, the moved marks to ``Game.has_moved`` and the
captured pieces to what left the board.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.web.timeline import REFEREE, Timeline, cells, timeline_of
from engine_ext.rules.game import Move
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import ReplayError, replay_positions
from engine_ext.rules.rulesets import CLASSIC, MINI
from tests.web_records import apply, expected_view, random_record, replayed


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), ruleset=st.sampled_from([CLASSIC, MINI]))
def test_every_board_at_every_ply_is_the_rules_engines(seed: int, ruleset: object) -> None:
    record = random_record(seed, plies=120, ruleset=ruleset)  # type: ignore[arg-type]
    doc = json.loads(json.dumps(timeline_of(record).document()))  # what the page gets
    assert len(doc["moves"]) == len(record.moves)
    boards = {view: dict(doc["start"][view]) for view in doc["start"]}
    initial: Counter[str] = Counter()
    taken: Counter[str] = Counter()
    for game, played in replay_positions(record):  # the referee's game, replayed apart from the web code
        ply = game.ply
        if played is None:
            initial = Counter(f"{side}/{rank.name.lower()}" for side, rank in game.pieces().values())
        else:
            move = doc["moves"][ply - 1]
            assert move["ply"] == ply and move["notation"] == record.moves[ply - 1].notation()
            for view in boards:
                apply(boards[view], move["changes"][view])
            taken.update(move["captured"])
        assert boards[REFEREE] == cells(game)
        for side in (Side.RED, Side.BLUE):
            assert boards[str(side)] == expected_view(game, side), f"{side}'s view at ply {ply}"
        left = Counter(f"{side}/{rank.name.lower()}" for side, rank in game.pieces().values())
        assert taken == initial - left


def test_a_side_sees_its_own_pieces_and_only_what_was_revealed() -> None:
    record = random_record(7, plies=300)
    doc = timeline_of(record).document()
    red_start = doc["start"]["red"]
    assert all(cell.startswith("red/") and "unknown" not in cell
               for sq, cell in red_start.items() if int(sq[1:]) <= 4)
    assert {cell for cell in red_start.values() if cell.startswith("blue/")} == {"blue/unknown"}
    attack = next(m for m in doc["moves"] if m["outcome"] == "x")
    # The winner of an attack stands revealed on the target square in both views.
    for view in ("red", "blue"):
        assert attack["changes"][view][attack["move"].split("-")[1]] == f"{attack['side']}/{attack['attacker']}"


def test_the_engine_info_is_read_from_the_record() -> None:
    record = random_record(3, plies=4)
    data = json.loads(record.to_json())
    info = {"depth": 3, "nodes": 1234, "time": 0.25, "value": 1.5, "pv": [{"from": "A4", "to": "A5"}],
            "reasons": ["the only safe move"]}
    data["moves"][0]["info"] = info
    with_info = GameRecord.from_json(json.dumps(data))
    moves = timeline_of(with_info).document()["moves"]
    assert moves[0]["info"] == info
    assert [m["info"] for m in moves[1:]] == [None] * (len(moves) - 1)

    data["moves"][1]["info"] = {"depth": -4, "nodes": "many"}  # a hand-edited record: not the protocol's shape
    moves = timeline_of(GameRecord.from_json(json.dumps(data))).document()["moves"]
    assert set(moves[1]["info"]) == {"unreadable"} and "depth" in moves[1]["info"]["unreadable"]


def test_a_record_the_rules_refuse_is_not_shown() -> None:
    record = random_record(5, plies=40)
    frm, to = record.moves[10].move.split("-")
    record.moves[10].move = f"{to}-{frm}"  # backwards: not the piece of the side to move, or illegal
    with pytest.raises(ReplayError, match="ply 11"):
        timeline_of(record)


def test_a_live_timeline_refuses_an_outcome_the_record_does_not_have() -> None:
    record = random_record(11, plies=200)
    attack = next(i for i, m in enumerate(record.moves) if m.outcome)
    start = replayed(record, 0)
    setups = {side: {sq: rank for sq, (_side, rank) in start.pieces(side).items()} for side in Side}
    timeline = Timeline(start.options, setups)
    for recorded in record.moves[:attack]:
        timeline.add(Move.parse(recorded.move), recorded)
    wrong = record.moves[attack]
    wrong.outcome = "xo" if wrong.outcome != "xo" else "x"
    with pytest.raises(ReplayError, match=f"ply {attack + 1}"):
        timeline.add(Move.parse(wrong.move), wrong)
