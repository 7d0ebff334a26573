"""The referee core (engine_ext/rules/referee.py) driven directly: random games through it agree with the
rules' ``Game``, junk from a player is a rejection or a forfeit and never an exception, and the ends, the
forfeits and the record come out as the host and the lab have always written them."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.rules.game import Game, IllegalMove, RulesOptions
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.referee import (
    ADJOURNED,
    END_REASONS,
    FORFEIT_CRASH,
    FORFEIT_ILLEGAL_MOVE,
    FORFEIT_ILLEGAL_SETUP,
    FORFEIT_TIMEOUT,
    VOID,
    Adjourned,
    Ended,
    Forfeited,
    MoveAccepted,
    MoveSubmitted,
    MoveUnreadable,
    Noted,
    NotOver,
    PlayerFailed,
    PlayerGone,
    PlayerLeft,
    PlayStarted,
    Referee,
    RefereeError,
    Rejected,
    SetupAccepted,
    SetupRejected,
    SetupsShown,
    SetupSubmitted,
    SetupUnreadable,
    TimeExpired,
    UnknownEvent,
    canonical_reason,
)
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, MINI, Ruleset, Square
from protocol.messages import END_REASONS as WIRE_END_REASONS

RULESETS = st.sampled_from([CLASSIC, BARRAGE, MINI])
NAMES = {Side.RED: "alice", Side.BLUE: "bob"}


def placements(ruleset: Ruleset, seed: int) -> dict[Side, dict[Square, Rank]]:
    rng = random.Random(seed)
    return {side: ruleset.random_placement(side, rng) for side in Side}


def started(options: RulesOptions, setups: Mapping[Side, Mapping[Square, Rank]], **kwargs: Any) -> Referee:
    """A core with both setups in and shown."""
    core = Referee(options, names=NAMES, **kwargs)
    assert isinstance(core.submit(SetupSubmitted(Side.RED, setups[Side.RED])), SetupAccepted)
    assert core.submit(SetupSubmitted(Side.BLUE, setups[Side.BLUE])) == SetupAccepted(Side.BLUE)
    assert core.submit(SetupsShown()) == PlayStarted()
    return core


def any_move(game: Game, rng: random.Random) -> Move:
    """A move along a row or column from a square of the side to move: legal or not."""
    ruleset = game.options.ruleset
    own = [sq for sq, (side, _rank) in game.pieces(game.side_to_move).items()]
    frm = rng.choice(own)
    if rng.random() < 0.5:
        to = Square(frm.col, rng.randrange(ruleset.height))
    else:
        to = Square(rng.randrange(ruleset.width), frm.row)
    return Move(frm, to)


# --- random games agree with the rules ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(ruleset=RULESETS, seed=st.integers(0, 10**9), two_squares=st.sampled_from([None, 1, 2, 3, 5]),
       more_squares=st.booleans(), move_limit=st.integers(1, 400), wild=st.sampled_from([0.0, 0.02, 0.3]))
def test_random_games_through_the_core_agree_with_the_rules(
    ruleset: Ruleset, seed: int, two_squares: int | None, more_squares: bool, move_limit: int, wild: float,
) -> None:
    options = RulesOptions(ruleset=ruleset, two_squares=two_squares, more_squares=more_squares,
                           move_limit=move_limit)
    setups = placements(ruleset, seed)
    core = started(options, setups)
    rules = Game(options, setups[Side.RED], setups[Side.BLUE])
    rng = random.Random(seed)
    while rules.result is None:
        side = rules.side_to_move
        assert core.side_to_move == side
        move = any_move(rules, rng) if rng.random() < wild else rng.choice(rules.legal_moves())
        outcome = core.submit(MoveSubmitted(side, move))
        try:
            played = rules.play(move)
        except IllegalMove as exc:
            # The rules forbid it: the mover forfeits, the other side wins, with the rules' reason.
            assert outcome == Ended(core.verdict)  # type: ignore[arg-type]
            verdict = core.verdict
            assert verdict is not None
            assert (verdict.winner, verdict.reason, verdict.forfeits) == (side.other, FORFEIT_ILLEGAL_MOVE,
                                                                          frozenset({side}))
            assert verdict.detail == str(exc) and verdict.plies == rules.ply
            return
        assert isinstance(outcome, MoveAccepted) and outcome.played == played
        assert outcome.recorded.move == str(move) and outcome.recorded.outcome == played.outcome
    verdict = core.verdict
    assert rules.result is not None and verdict is not None
    assert (verdict.winner, verdict.reason, verdict.plies) == (rules.result.winner, rules.result.reason, rules.ply)
    assert not verdict.forfeits and verdict.detail is None
    assert [m.move for m in core.moves] == [str(r.move) for r in rules.history]


# --- junk from a player ----------------------------------------------------------------------------------------

JUNK_VALUES = st.one_of(st.none(), st.integers(), st.text(max_size=4), st.floats(allow_nan=True), st.booleans(),
                        st.tuples(st.integers(), st.integers()))
SQUARES = st.builds(Square, st.integers(-3, 14), st.integers(-3, 14))
ANY_SQUARES = st.one_of(SQUARES, st.builds(Square, st.integers(-(2**70), 2**70), st.integers(-(2**70), 2**70)),
                        st.builds(Square, JUNK_VALUES, JUNK_VALUES))
RANKS = st.sampled_from(list(Rank))
JUNK_PLACEMENTS = st.one_of(
    JUNK_VALUES,
    st.lists(st.tuples(SQUARES, RANKS), max_size=6),
    st.dictionaries(ANY_SQUARES, st.one_of(RANKS, JUNK_VALUES), max_size=45),
    st.dictionaries(st.one_of(JUNK_VALUES, st.text(max_size=3)), RANKS, max_size=5),
)


@settings(max_examples=200, deadline=None)
@given(ruleset=RULESETS, placement=JUNK_PLACEMENTS, seed=st.integers(0, 1000))
def test_a_junk_setup_is_rejected_and_then_forfeits_never_raises(ruleset: Ruleset, placement: Any, seed: int) -> None:
    core = Referee(RulesOptions(ruleset=ruleset), names=NAMES)
    first = core.submit(SetupSubmitted(Side.RED, placement))
    assert isinstance(first, SetupRejected) and first.attempts_left == 1 and first.reason
    second = core.submit(SetupSubmitted(Side.RED, placement))
    assert second == Forfeited(Side.RED, FORFEIT_ILLEGAL_SETUP, first.reason)
    assert not core.over  # blue's setup is not settled yet
    blue = placements(ruleset, seed)[Side.BLUE]
    ended = core.submit(SetupSubmitted(Side.BLUE, blue))
    assert isinstance(ended, Ended) and ended.verdict.winner == Side.BLUE
    assert ended.verdict.reason == FORFEIT_ILLEGAL_SETUP and ended.verdict.forfeits == {Side.RED}
    record = core.record()
    assert record.red.setup == {} and record.blue.setup and record.moves == []


JUNK_MOVES = st.one_of(JUNK_VALUES, st.builds(Move, ANY_SQUARES, ANY_SQUARES), st.builds(Move, SQUARES, SQUARES),
                       st.builds(Move, JUNK_VALUES, JUNK_VALUES))


@settings(max_examples=300, deadline=None)
@given(ruleset=RULESETS, seed=st.integers(0, 10**6), move=JUNK_MOVES, plies=st.integers(0, 30))
def test_a_junk_move_is_played_or_forfeits_never_raises(ruleset: Ruleset, seed: int, move: Any, plies: int) -> None:
    options = RulesOptions(ruleset=ruleset)
    core = started(options, placements(ruleset, seed))
    rng = random.Random(seed)
    for _ in range(plies):
        assert core.game is not None
        if core.over:
            return
        core.submit(MoveSubmitted(core.game.side_to_move, rng.choice(core.game.legal_moves())))
    if core.over:
        return
    side = core.side_to_move
    assert side is not None
    before = core.plies
    outcome = core.submit(MoveSubmitted(side, move))
    if isinstance(outcome, MoveAccepted):
        assert core.plies == before + 1
    else:
        assert isinstance(outcome, Ended) and outcome.verdict.reason == FORFEIT_ILLEGAL_MOVE
        assert outcome.verdict.winner == side.other and outcome.verdict.plies == before


# --- setups ----------------------------------------------------------------------------------------------------


def test_an_illegal_setup_gets_a_second_chance_and_the_attempts_are_configured() -> None:
    setups = placements(CLASSIC, 3)
    bad = dict(setups[Side.RED])
    bad.pop(next(iter(bad)))
    core = Referee(RulesOptions(), names=NAMES)
    rejected = core.submit(SetupSubmitted(Side.RED, bad))
    assert isinstance(rejected, SetupRejected) and rejected.attempts_left == 1
    assert "the classic ruleset needs" in rejected.reason
    assert core.submit(SetupSubmitted(Side.RED, setups[Side.RED])) == SetupAccepted(Side.RED)
    assert isinstance(core.submit(SetupSubmitted(Side.RED, setups[Side.RED])), Rejected)  # in already

    once = Referee(RulesOptions(), names=NAMES, setup_attempts=1)
    outcome = once.submit(SetupUnreadable(Side.BLUE, "bob gave no usable setup: it crashed"))
    assert outcome == Forfeited(Side.BLUE, FORFEIT_ILLEGAL_SETUP, "bob gave no usable setup: it crashed")


def test_a_setup_on_a_lake_or_of_the_other_side_is_illegal() -> None:
    setups = placements(MINI, 1)
    lake = next(iter(MINI.lakes))
    on_lake = dict(setups[Side.RED])
    on_lake[lake] = on_lake.pop(next(iter(on_lake)))
    core = Referee(RulesOptions(ruleset=MINI))
    outcome = core.submit(SetupSubmitted(Side.RED, on_lake))
    assert isinstance(outcome, SetupRejected) and "lake" in outcome.reason
    outcome = core.submit(SetupSubmitted(Side.RED, setups[Side.BLUE]))
    assert isinstance(outcome, Forfeited) and "outside red's setup rows" in outcome.detail


def test_both_sides_forfeiting_in_the_setups_is_no_win_and_names_both() -> None:
    core = Referee(RulesOptions(), names=NAMES)
    assert isinstance(core.submit(TimeExpired(Side.BLUE, "no answer to getAISetupPiece within 10 s")), Forfeited)
    assert core.submit(MoveSubmitted(Side.RED, Move(Square(0, 3), Square(0, 4)))) == Rejected(
        "red moved before play began")
    ended = core.submit(PlayerFailed(Side.RED, "createAISetup answered error -32603: no"))
    assert isinstance(ended, Ended)
    assert ended.verdict.winner is None and ended.verdict.reason == "forfeit_error"  # red's reason
    assert ended.verdict.detail == ("red: createAISetup answered error -32603: no; "
                                    "blue: no answer to getAISetupPiece within 10 s")
    assert ended.verdict.forfeits == {Side.RED, Side.BLUE}
    assert (ended.verdict.score(Side.RED), ended.verdict.score(Side.BLUE)) == (0, 0)


# --- the ends ---------------------------------------------------------------------------------------------------


def test_goodbye_before_the_setups_are_shown_is_void_after_it_a_forfeit() -> None:
    setups = placements(CLASSIC, 5)
    core = Referee(RulesOptions(), names=NAMES)
    core.submit(SetupSubmitted(Side.RED, setups[Side.RED]))
    core.submit(SetupSubmitted(Side.BLUE, setups[Side.BLUE]))
    assert isinstance(core.submit(PlayerGone(Side.BLUE, "connection lost during setOpponentSetupPiece")), Ended)
    assert core.verdict is not None and core.verdict.reason == FORFEIT_CRASH
    assert core.submit(PlayerLeft(Side.BLUE)) == Noted()
    assert core.verdict is not None and core.verdict.void and not core.verdict.forfeits
    assert core.verdict.detail == "the game never started: bob (blue) said goodbye"
    assert (core.verdict.score(Side.RED), core.verdict.outcome_for(Side.BLUE)) == (0, VOID)

    later = started(RulesOptions(), setups)
    later.submit(PlayerGone(Side.BLUE, "connection lost during getAIMove"))
    later.submit(PlayerLeft(Side.BLUE))
    assert later.verdict is not None and later.verdict.reason == FORFEIT_CRASH and later.verdict.winner == Side.RED


def test_adjourning_overrides_everything_and_scores_nothing() -> None:
    core = started(RulesOptions(), placements(CLASSIC, 8))
    assert core.game is not None
    core.submit(MoveSubmitted(Side.RED, core.game.legal_moves()[0]))
    core.submit(TimeExpired(Side.BLUE, "no answer to getAIMove within 15.5 s"))
    ended = core.submit(Adjourned("the host is shutting down"))
    assert isinstance(ended, Ended)
    verdict = ended.verdict
    assert (verdict.winner, verdict.reason, verdict.plies, verdict.forfeits) == (None, ADJOURNED, 1, frozenset())
    assert core.record().result == {"winner": None, "reason": ADJOURNED, "plies": 1, "forfeits": [],
                                    "scores": {"red": 0, "blue": 0}, "detail": "the host is shutting down"}


def test_a_failure_while_the_last_move_is_told_still_forfeits_until_the_record_is_made() -> None:
    # A flag a move away: red's scout takes it.
    red = {Square(0, 0): Rank.SCOUT, Square(9, 0): Rank.FLAG}
    blue = {Square(0, 5): Rank.FLAG, Square(9, 9): Rank.SERGEANT}
    core = Referee.from_position(RulesOptions(), red, blue, validate_setups=False, names=NAMES)
    played = core.submit(MoveSubmitted(Side.RED, Move(Square(0, 0), Square(0, 5))))
    assert isinstance(played, MoveAccepted) and played.ended is not None and played.ended.reason == "flag"
    assert isinstance(core.submit(MoveSubmitted(Side.BLUE, Move(Square(9, 9), Square(9, 8)))), Rejected)
    ended = core.submit(TimeExpired(Side.BLUE, "no answer to submitOpponentMove within 10 s"))
    assert isinstance(ended, Ended) and ended.verdict.reason == FORFEIT_TIMEOUT and ended.verdict.winner == Side.RED
    record = core.record()
    assert record.result is not None and record.result["forfeits"] == ["blue"]
    assert core.submit(TimeExpired(Side.RED, "too late")) == Rejected("the game is over and recorded")
    assert core.verdict is not None and core.verdict.forfeits == {Side.BLUE}


def test_a_move_out_of_turn_or_before_play_changes_nothing() -> None:
    setups = placements(BARRAGE, 2)
    core = Referee(RulesOptions(ruleset=BARRAGE), names=NAMES)
    assert isinstance(core.submit(SetupsShown()), Rejected)
    core.submit(SetupSubmitted(Side.RED, setups[Side.RED]))
    core.submit(SetupSubmitted(Side.BLUE, setups[Side.BLUE]))
    assert core.game is not None
    blue_move = Move(Square(0, 6), Square(0, 5))
    assert isinstance(core.submit(MoveSubmitted(Side.BLUE, blue_move)), Rejected)
    assert core.submit(SetupsShown()) == PlayStarted()
    assert isinstance(core.submit(SetupsShown()), Rejected)
    assert core.submit(MoveSubmitted(Side.BLUE, blue_move)) == Rejected("blue moved out of turn: red is to move")
    assert core.plies == 0 and not core.over


def test_an_unreadable_move_forfeits_and_a_second_failure_of_the_same_side_is_only_noted() -> None:
    core = started(RulesOptions(), placements(CLASSIC, 4))
    ended = core.submit(MoveUnreadable(Side.RED, "getAIMove result: 'from' is not a square"))
    assert isinstance(ended, Ended) and ended.verdict.reason == FORFEIT_ILLEGAL_MOVE
    assert core.submit(PlayerGone(Side.RED, "connection lost")) == Noted()
    assert core.verdict is not None and core.verdict.reason == FORFEIT_ILLEGAL_MOVE


# --- the record -------------------------------------------------------------------------------------------------


def test_the_record_holds_the_game_and_the_drivers_fields_before_the_detail() -> None:
    setups = placements(CLASSIC, 9)
    core = started(RulesOptions(move_limit=2), setups, game_id="g-1", started="2026-11-27T19:00:00Z",
                   record_options={"move_limit": 2, "nodes": None})
    with pytest.raises(NotOver):
        core.record()
    assert core.game is not None
    info = {"depth": 1, "nodes": 3}
    first = core.submit(MoveSubmitted(Side.RED, core.game.legal_moves()[0], info))
    assert isinstance(first, MoveAccepted) and first.recorded.info == info and first.ended is None
    last = core.submit(MoveSubmitted(Side.BLUE, core.game.legal_moves()[0]))
    assert isinstance(last, MoveAccepted) and last.ended is not None and last.ended.reason == "move_limit"
    record = core.record({"pair": 3})
    assert (record.game_id, record.started, record.options) == ("g-1", "2026-11-27T19:00:00Z",
                                                                 {"move_limit": 2, "nodes": None})
    assert (record.red.name, record.blue.name) == ("alice", "bob")
    assert record.red.setup == {str(sq): rank.label for sq, rank in
                                sorted(setups[Side.RED].items(), key=lambda i: (i[0].row, i[0].col))}
    assert list(record.red.setup) == sorted(record.red.setup, key=lambda s: (int(s[1:]), s[0]))
    assert record.result == {"winner": None, "reason": "move_limit", "plies": 2, "forfeits": [],
                             "scores": {"red": 3, "blue": 3}, "pair": 3}
    assert [m.info for m in record.moves] == [info, None]


# --- the driver's mistakes and the reason tables ------------------------------------------------------------------


def test_only_the_drivers_mistakes_raise() -> None:
    core = Referee(RulesOptions())
    with pytest.raises(UnknownEvent):
        core.submit("a move")  # type: ignore[arg-type]
    with pytest.raises(UnknownEvent):
        core.submit(None)  # type: ignore[arg-type]
    with pytest.raises(RefereeError, match="needs a Side"):
        core.submit(TimeExpired("red", "no answer"))  # type: ignore[arg-type]
    with pytest.raises(RefereeError, match="at least one setup attempt"):
        Referee(RulesOptions(), setup_attempts=0)


def test_the_protocol_sends_the_cores_reasons_and_old_records_read_the_same() -> None:
    assert tuple(WIRE_END_REASONS) == tuple(END_REASONS)
    assert canonical_reason("forfeit_setup") == FORFEIT_ILLEGAL_SETUP
    assert all(canonical_reason(reason) == reason for reason in END_REASONS)


SIDES = st.sampled_from(list(Side))
TEXT = st.text(max_size=20)


def any_event(setups: Mapping[Side, Mapping[Square, Rank]]) -> st.SearchStrategy[Any]:
    """Any event a driver may report, in any order: good and junk setups, moves, failures, goodbyes."""
    return st.one_of(
        st.builds(lambda side: SetupSubmitted(side, setups[side]), SIDES),
        st.builds(SetupSubmitted, SIDES, JUNK_PLACEMENTS),
        st.builds(SetupUnreadable, SIDES, TEXT),
        st.just(SetupsShown()),
        st.builds(MoveSubmitted, SIDES, JUNK_MOVES),
        st.builds(MoveUnreadable, SIDES, TEXT),
        st.builds(TimeExpired, SIDES, TEXT),
        st.builds(PlayerGone, SIDES, TEXT),
        st.builds(PlayerFailed, SIDES, TEXT),
        st.builds(PlayerLeft, SIDES),
        st.builds(Adjourned, TEXT),
    )


@settings(max_examples=150, deadline=None)
@given(data=st.data(), ruleset=RULESETS, seed=st.integers(0, 1000))
def test_any_sequence_of_events_keeps_the_game_consistent(data: st.DataObject, ruleset: Ruleset, seed: int) -> None:
    setups = placements(ruleset, seed)
    core = Referee(RulesOptions(ruleset=ruleset), names=NAMES)
    rng = random.Random(seed)
    for event in data.draw(st.lists(any_event(setups), max_size=25)):
        if rng.random() < 0.5 and core.side_to_move is not None and core.game is not None:
            core.submit(MoveSubmitted(core.side_to_move, rng.choice(core.game.legal_moves())))
        outcome = core.submit(event)
        verdict = core.verdict
        if isinstance(outcome, Ended):
            assert outcome.verdict == verdict
        if verdict is None:
            continue
        assert verdict.reason in END_REASONS
        if verdict.forfeits and not verdict.adjourned:
            assert verdict.winner == (None if len(verdict.forfeits) == 2 else next(iter(verdict.forfeits)).other)
        assert verdict.plies == len(core.moves)
    if core.over:
        record = core.record()
        assert GameRecord.from_json(record.to_json()) == record
        assert isinstance(core.submit(SetupsShown()), Rejected)
    else:
        with pytest.raises(NotOver):
            core.record()
