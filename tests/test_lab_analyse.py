"""Causes of loss and chases from game records (engine_ext/lab/causes.py, chases.py, analysis.py) and the
``perspecto analyse`` command: hand-made games whose causes are known, and real lab records whose totals
must agree with their final positions."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cli import main as cli_main
from bot.config import get_profile
from engine_ext.beliefs import BeliefModel
from engine_ext.lab.analysis import GroupBy, analyse_record, summarise
from engine_ext.lab.causes import TRACKED_RANKS, BombState, Cause, LossObserver, PieceFate
from engine_ext.lab.chases import MIN_CHASE_MOVES, Chase, ChaseEnd, ChaseObserver
from engine_ext.lab.game_events import PlyEvent, ReplayView, walk
from engine_ext.lab.runner import GeneratedSetups, Limits, Match, Rules, make_player, run_matches
from engine_ext.research.selfplay import random_setup_game
from engine_ext.rules.game import Game, Move, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import CLASSIC, Square, get_ruleset

# --- hand-made games --------------------------------------------------------------------------------------


def placement(side: Side, placed: dict[str, str]) -> dict[Square, Rank]:
    """A classic setup with the named pieces where given and the rest of the army filled in square by square
    (movable pieces first, so that bombs stay away from the front rows the scenarios use)."""
    out = {Square.parse(sq): Rank.parse(rank) for sq, rank in placed.items()}
    left = Counter(CLASSIC.pieces) - Counter(out.values())
    fill = sorted(left.elements(), key=lambda r: (not r.movable, r))
    free = [sq for sq in CLASSIC.setup_squares(side) if sq not in out]  # front row first
    out.update(zip(free, fill, strict=True))
    return out


def make_record(red: dict[str, str], blue: dict[str, str], moves: list[str]) -> GameRecord:
    """Play ``moves`` (red first) with full information and write them down as the lab would."""
    reds, blues = placement(Side.RED, red), placement(Side.BLUE, blue)
    game = Game(RulesOptions(), reds, blues)
    record = GameRecord(
        ruleset="classic", options={"range_attacks": True, "two_squares": 5, "more_squares": True},
        red=RecordedPlayer("perspecto", {str(s): r.label for s, r in reds.items()}),
        blue=RecordedPlayer("pemm", {str(s): r.label for s, r in blues.items()}), game_id="hand-made",
    )
    for text in moves:
        played = game.play(Move.parse(text))
        record.moves.append(RecordedMove(
            str(played.side), text, played.outcome,
            played.attacker.label if played.attacker else None, played.defender.label if played.defender else None,
        ))
    if game.result is not None:
        winner = None if game.result.winner is None else str(game.result.winner)
        record.result = {"winner": winner, "reason": game.result.reason, "plies": len(moves)}
    return record


BLUE_WAITS = ["J7-J6", "J6-J5", "J5-J6", "J6-J7"] * 3  # a blue sergeant stepping about, never a fight
RED_WAITS = ["E4-E5", "E5-F5", "F5-E5", "E5-E4"] * 3


def interleave(red: list[str], blue: list[str]) -> list[str]:
    return [m for pair in zip(red, blue, strict=False) for m in pair] + red[len(blue):]


def fate(record: GameRecord, side: Side, rank: Rank) -> PieceFate:
    found = [f for f in analyse_record(record).fates if f.side == side and f.rank == rank]
    assert len(found) == 1
    return found[0]


def test_a_marshal_that_attacks_an_unknown_bomb_is_lost_to_it() -> None:
    record = make_record({"A4": "marshal"}, {"A7": "bomb", "J7": "sergeant"},
                         interleave(["A4-A5", "A5-A6", "A6-A7"], BLUE_WAITS[:2]))
    lost = fate(record, Side.RED, Rank.MARSHAL)
    assert lost.cause is Cause.BOMB and lost.ply == 5
    assert lost.attacked and lost.opponent_known is False and lost.opponent_moved is False
    assert lost.opponent_row == 4  # A7 is blue's fourth row from its back
    assert fate(record, Side.BLUE, Rank.MARSHAL).cause is Cause.SURVIVED
    group = summarise([analyse_record(record)])["perspecto"]
    assert group.lost_to_bomb_or_spy == 1
    assert group.ranks[Rank.MARSHAL].unknown[Cause.BOMB] == 1 and group.ranks[Rank.MARSHAL].bomb_back_rows == 0


def test_a_bomb_shown_by_an_earlier_fight_is_known_when_the_marshal_hits_it() -> None:
    # A sergeant runs into the bomb first (and shows it); the marshal then walks up the same file.
    red = ["A4-A5", "A5-A6", "A6-A7", "A3-A4", "A4-A5", "A5-A6", "A6-A7"]
    record = make_record({"A4": "sergeant", "A3": "marshal"}, {"A7": "bomb", "J7": "sergeant"},
                         interleave(red, BLUE_WAITS[:6]))
    lost = fate(record, Side.RED, Rank.MARSHAL)
    assert lost.cause is Cause.BOMB and lost.opponent_known is True


def test_the_spy_taking_the_marshal_is_the_spy_s_kill() -> None:
    record = make_record({"A4": "marshal"}, {"A7": "spy", "J7": "sergeant"},
                         ["A4-A5", "J7-J6", "A5-A6", "A7-A6"])
    lost = fate(record, Side.RED, Rank.MARSHAL)
    assert lost.cause is Cause.SPY and lost.ply == 4 and not lost.attacked
    assert lost.opponent_rank == Rank.SPY and lost.opponent_known is False and lost.known_to_opponent is False
    assert lost.opponent_moved is False  # the spy's first move was the attack
    assert summarise([analyse_record(record)])["perspecto"].lost_to_bomb_or_spy == 1


def test_generals_lost_to_the_marshal_and_in_a_trade() -> None:
    # Red's general attacks blue's marshal (a higher piece); in another game red's marshal trades with blue's.
    record = make_record({"A4": "general"}, {"A7": "marshal", "J7": "sergeant"},
                         interleave(["A4-A5", "A5-A6", "A6-A7"], BLUE_WAITS[:2]))
    lost = fate(record, Side.RED, Rank.GENERAL)
    assert lost.cause is Cause.HIGHER and lost.attacked and lost.opponent_rank == Rank.MARSHAL
    trade = make_record({"A4": "marshal"}, {"A7": "marshal", "J7": "sergeant"},
                        interleave(["A4-A5", "A5-A6", "A6-A7"], BLUE_WAITS[:2]))
    assert fate(trade, Side.RED, Rank.MARSHAL).cause is Cause.TRADE
    assert fate(trade, Side.BLUE, Rank.MARSHAL).cause is Cause.TRADE


def test_an_attack_on_a_shown_piece_that_beats_the_attacker_lost_for_certain() -> None:
    # Red's sergeant runs into blue's marshal on A7 (an attack on a piece not yet shown: not hopeless) and
    # shows it; red's lieutenant then walks up and attacks the shown marshal (hopeless).
    red = ["A4-A5", "A5-A6", "A6-A7", "A3-A4", "A4-A5", "A5-A6", "A6-A7"]
    record = make_record({"A4": "sergeant", "A3": "lieutenant"}, {"A7": "marshal", "J7": "sergeant"},
                         interleave(red, BLUE_WAITS[:6]))
    hopeless = analyse_record(record).hopeless
    assert [(h.side, h.ply, h.square, h.attacker, h.defender) for h in hopeless] == [
        (Side.RED, 13, Square.parse("A7"), Rank.LIEUTENANT, Rank.MARSHAL)]
    # A scout's strike from afar on the shown marshal is hopeless too.
    strike = make_record({"A4": "sergeant", "A3": "scout"}, {"A7": "marshal", "J7": "sergeant"},
                         interleave(["A4-A5", "A5-A6", "A6-A7", "A3-A7"], BLUE_WAITS[:3]))
    analysis = analyse_record(strike)
    assert [(h.ply, h.attacker) for h in analysis.hopeless] == [(7, Rank.SCOUT)]
    groups = summarise([analysis, analyse_record(record)])
    assert groups["perspecto"].hopeless == Counter({Rank.SCOUT: 1, Rank.LIEUTENANT: 1})
    assert groups["pemm"].hopeless == Counter()
    assert groups["perspecto"].to_json()["hopeless_attacks"] == {"lieutenant": 1, "scout": 1}
    # A trade with a shown piece of the same rank is not hopeless, nor a miner's attack on a shown bomb.
    even = make_record({"A4": "sergeant", "A3": "marshal"}, {"A7": "marshal", "J7": "sergeant"},
                       interleave(red, BLUE_WAITS[:6]))
    assert analyse_record(even).hopeless == []
    bomb = make_record({"A4": "sergeant", "A3": "miner"}, {"A7": "bomb", "J7": "sergeant"},
                       interleave(red, BLUE_WAITS[:6]))
    assert analyse_record(bomb).hopeless == []


@pytest.mark.parametrize(("scout_moves", "known"), [(["A4-A5", "A5-A6"], False), (["A4-A6"], True)])
def test_a_flag_raided_by_a_scout_known_or_not(scout_moves: list[str], known: bool) -> None:
    # Blue's flag on A7 with bombs on A8 and B7 and three movable pieces two steps away.
    blue = {"A7": "flag", "A8": "bomb", "B7": "bomb", "C7": "captain", "B8": "sergeant", "A9": "lieutenant",
            "J7": "sergeant"}
    record = make_record({"A4": "scout"}, blue, interleave([*scout_moves, "A6-A7"], BLUE_WAITS[:len(scout_moves)]))
    assert record.result is not None and record.result["reason"] == "flag"
    (fall,) = analyse_record(record).flags
    assert fall.side == Side.BLUE and fall.raider_rank == Rank.SCOUT and fall.raider_known is known
    assert fall.square == Square.parse("A7") and fall.guards == 3 and fall.nearest_guard == 2
    assert (fall.bombs_at_start, fall.bombs_left, fall.bomb_state) == (2, 2, BombState.INTACT)
    flags = summarise([analyse_record(record)])["pemm"].flags
    assert flags.falls == 1 and flags.raider_unknown == (0 if known else 1)


# A red sergeant (I4) and a blue scout that shows itself with a long move (J7-J5) next to the sergeant's file.
CHASE_START = ["E4-E5", "J7-J5", "I4-I5", "J5-J6", "I5-I6", "J6-J5", "I6-I5"]  # three chase moves


def chases_of(moves: list[str]) -> list[Chase]:
    record = make_record({"I4": "sergeant"}, {"J7": "scout", "A7": "sergeant"}, moves)
    return analyse_record(record).chases


def test_a_chase_that_ends_in_a_capture() -> None:
    (chase,) = chases_of([*CHASE_START, "A7-A6", "I5-J5"])  # the scout stands still and is taken
    assert (chase.side, chase.chaser_rank, chase.chased_rank) == (Side.RED, Rank.SERGEANT, Rank.SCOUT)
    assert (chase.start_ply, chase.end_ply, chase.length, chase.end) == (3, 9, 4, ChaseEnd.CAPTURE)


def test_a_chase_the_chaser_abandons_is_pointless() -> None:
    (chase,) = chases_of([*CHASE_START, "J5-J6", "E5-E4"])  # it could follow to I6, and plays elsewhere
    assert (chase.length, chase.end) == (3, ChaseEnd.ABANDONED) and chase.end.pointless


def test_a_chase_the_chased_piece_escapes_from() -> None:
    (chase,) = chases_of([*CHASE_START, "J5-J7", "E5-E4"])  # a long flight: no move of I5 reaches J7's side
    assert (chase.length, chase.end) == (3, ChaseEnd.ESCAPED) and chase.end.pointless


def test_two_chase_moves_are_not_a_chase_and_an_unknown_piece_is_never_chased() -> None:
    assert chases_of([*CHASE_START[:3], "A7-A6", "I5-J5"]) == []  # approach and take: two chase moves
    assert chases_of([*CHASE_START[:6], "E5-E4"]) == []  # approach and follow, then given up
    (taken,) = chases_of([*CHASE_START[:5], "A7-A6", "I6-J6"])  # approach, follow and take: three
    assert (taken.length, taken.end) == (3, ChaseEnd.CAPTURE)
    # The same walk after a one-step move of the scout: it was never shown, so nothing is chased.
    record = make_record({"I4": "sergeant"}, {"J7": "scout", "A7": "sergeant"},
                         ["E4-E5", "J7-J6", "E5-E4", "J6-J5", "I4-I5", "J5-J6", "I5-I6", "J6-J5", "I6-I5"])
    assert analyse_record(record).chases == []


def test_a_chase_still_running_when_the_record_ends_is_pointless() -> None:
    (chase,) = chases_of(CHASE_START)
    assert (chase.length, chase.end) == (3, ChaseEnd.GAME_OVER)
    group = summarise([analyse_record(make_record({"I4": "sergeant"}, {"J7": "scout", "A7": "sergeant"},
                                                  CHASE_START))])["perspecto"]
    assert (group.chases.total, group.chases.captures, group.chases.pointless) == (1, 0, 1)
    assert group.chases.mean_length(pointless=True) == 3.0


def test_a_record_with_an_illegal_move_is_refused_with_its_ply() -> None:
    record = make_record({"A4": "marshal"}, {"J7": "sergeant"}, ["A4-A5"])
    record.moves.append(RecordedMove("blue", "J7-J4"))  # a sergeant cannot move three squares
    with pytest.raises(ValueError, match="ply 2"):
        analyse_record(record)


# --- random games: the event stream against the referee's own views -------------------------------------


class _Events:
    """An observer that keeps every event (game_events.Observer)."""

    def __init__(self) -> None:
        self.events: list[PlyEvent] = []

    def start(self, view: ReplayView) -> None:
        pass

    def observe(self, event: PlyEvent, view: ReplayView) -> None:
        self.events.append(event)

    def finish(self, view: ReplayView) -> None:
        pass


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31), ruleset=st.sampled_from(["mini", "classic"]))
def test_what_each_side_knows_matches_the_referee_s_views(seed: int, ruleset: str) -> None:
    """Random games played by ``RefereedGame`` (the referee and each side's view of hidden pieces): before every
    move, the event's "known" flags are what the other side's view shows, "moved" what the referee says; and
    the fates and flag falls agree with how the game ended."""
    options = RulesOptions(ruleset=get_ruleset(ruleset))
    game = random_setup_game(options, seed)
    rng = random.Random(seed)
    expected = []
    record = GameRecord(
        ruleset=ruleset, options={}, game_id="random",
        red=RecordedPlayer("a", {str(s): r.label for s, (_side, r) in game.referee.pieces(Side.RED).items()}),
        blue=RecordedPlayer("b", {str(s): r.label for s, (_side, r) in game.referee.pieces(Side.BLUE).items()}),
    )
    while game.result is None and len(record.moves) < 300:
        side = game.referee.side_to_move
        move = rng.choice(game.referee.legal_moves())
        target = game.view(side).piece_at(move.to)
        expected.append((
            game.view(side.other).piece_at(move.frm)[1] != Rank.UNKNOWN,  # type: ignore[index]
            target is not None and target[1] != Rank.UNKNOWN,
            game.referee.has_moved(move.frm), target is not None and game.referee.has_moved(move.to),
        ))
        played = game.play(move)
        record.moves.append(RecordedMove(str(side), str(move), played.outcome,
                                         played.attacker.label if played.attacker else None,
                                         played.defender.label if played.defender else None))
    events, losses, chases = _Events(), LossObserver(), ChaseObserver()
    walk(record, [events, losses, chases])
    assert [(e.mover_known, e.target is not None and e.target_known, e.mover_moved, e.target_moved)
            for e in events.events] == expected
    for side in (Side.RED, Side.BLUE):
        on_board = Counter(rank for _sq, (_s, rank) in game.referee.pieces(side).items())
        for rank in TRACKED_RANKS:
            fates = [f for f in losses.fates if f.side == side and f.rank == rank]
            assert len(fates) == options.ruleset.pieces.get(rank, 0)
            assert sum(f.cause is Cause.SURVIVED for f in fates) == on_board[rank]
    ended_by_flag = game.result is not None and game.result.reason == "flag"
    assert [f.side for f in losses.flags] == ([game.result.winner.other] if ended_by_flag else [])  # type: ignore[union-attr]
    for chase in chases.chases:
        assert chase.length >= MIN_CHASE_MOVES and chase.start_ply < chase.end_ply <= len(record.moves)
        if chase.end is ChaseEnd.CAPTURE:
            assert record.moves[chase.end_ply - 1].outcome is not None


def test_a_risky_attack_records_what_the_attacker_s_side_believed_just_before_it() -> None:
    # The marshal walks up and hits the unmoved bomb on A7; the general then takes the unmoved piece on
    # B7 (a sergeant). Each attack's P(bomb) is the attacker's side's belief model at the ply before.
    red = ["A4-A5", "A5-A6", "A6-A7", "B4-B5", "B5-B6", "B6-B7"]
    record = make_record({"A4": "marshal", "B4": "general"}, {"A7": "bomb", "B7": "sergeant", "J7": "sergeant"},
                         interleave(red, BLUE_WAITS[:5]))
    risks = analyse_record(record, beliefs=True).risks
    assert risks is not None and [(r.rank, r.found, r.ply) for r in risks] == [
        (Rank.MARSHAL, Rank.BOMB, 5), (Rank.GENERAL, Rank.SERGEANT, 11)]
    for risk in risks:
        positions = replay_positions(record)
        for _ in range(risk.ply):  # the start, then the plies before the attack
            game, _ = next(positions)
        expected = BeliefModel(game, Side.RED).enemy_matrix()
        to = Move.parse(record.moves[risk.ply - 1].move).to
        target = game.position.piece_id(game.position.square(to.col, to.row))
        assert risk.p_bomb == pytest.approx(expected[target, int(Rank.BOMB)])
        assert 0.0 < risk.p_bomb < 1.0
    assert analyse_record(record).risks is None  # only when asked
    summary = summarise([analyse_record(record, beliefs=True)])["perspecto"].risks
    assert summary is not None and summary.count == 2 and summary.bombs == 1
    assert summary.expected_bombs == pytest.approx(sum(r.p_bomb for r in risks))
    assert sum(n for _span, n, _p, _f in summary.bin_rows()) == 2
    assert summarise([analyse_record(record, beliefs=True)])["pemm"].risks is not None  # counted, if empty


# --- real records from the lab ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lab_records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pair of random-mover games and a pair of search-engine games, played by the runner in-process."""
    folder = tmp_path_factory.mktemp("records")
    randoms = Match(make_player("random-a", get_profile("random"), label="A"),
                    make_player("random-b", get_profile("random"), label="B"), pairs=1,
                    source=GeneratedSetups(CLASSIC), seed=5, limits=Limits(), rules=Rules(), records=folder)
    search = Match(make_player("perspecto", get_profile("perspecto"), label="A"),
                   make_player("pemm", get_profile("pemm"), label="B"), pairs=1,
                   source=GeneratedSetups(CLASSIC), seed=5, limits=Limits(nodes=3000), rules=Rules(),
                   records=folder)
    run_matches([randoms, search])
    return folder


def test_every_marshal_and_general_of_real_games_survived_or_has_one_cause(lab_records: Path) -> None:
    paths = sorted(lab_records.glob("*.json"))
    assert len(paths) == 4
    for path in paths:
        record = GameRecord.load(path)
        analysis = analyse_record(record)
        *_, (final, _last) = replay_positions(record)
        for side in (Side.RED, Side.BLUE):
            on_board = Counter(rank for _sq, (_s, rank) in final.pieces(side).items())
            for rank in TRACKED_RANKS:
                fates = [f for f in analysis.fates if f.side == side and f.rank == rank]
                assert len(fates) == CLASSIC.pieces[rank]  # one fate a piece
                survived = sum(f.cause is Cause.SURVIVED for f in fates)
                assert survived == on_board[rank], path.name
                for f in fates:
                    assert (f.ply is None) == (f.cause is Cause.SURVIVED)
        result = record.result or {}
        flag_falls = [f.side for f in analysis.flags]
        assert flag_falls == ([Side.parse(result["winner"]).other] if result.get("reason") == "flag" else [])
        for chase in analysis.chases:
            assert chase.length >= 3 and chase.start_ply < chase.end_ply <= len(record.moves)


def test_perspecto_analyse_prints_tables_and_json(lab_records: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "analysis.json"
    assert cli_main(["analyse", str(lab_records), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "How marshals and generals left the board" in printed and "How flags fell" in printed
    assert "perspecto: marshal or general lost to a bomb or the spy" in printed
    assert "attacks that lost for certain" in printed or "attack that lost for certain" in printed
    data = json.loads(out.read_text())
    assert set(data["groups"]) == {"random-a", "random-b", "perspecto", "pemm"} and data["records"] == 4
    for group in data["groups"].values():
        assert all(n > 0 for n in group["hopeless_attacks"].values())
        for rank in data["groups"]["pemm"]["ranks"]:
            assert sum(group["ranks"][rank]["causes"].values()) == group["games"]
    assert cli_main(["analyse", str(lab_records), "--beliefs"]) == 0
    assert "attacks on unshown pieces that never moved, against the beliefs" in capsys.readouterr().out
    assert cli_main(["analyse", str(lab_records), "--by", "side", "--json"]) == 0
    by_side = json.loads(capsys.readouterr().out)
    assert set(by_side["groups"]) == {"red", "blue"} and by_side["groups"]["red"]["games"] == 4
    assert GroupBy(by_side["by"]) is GroupBy.SIDE


def test_perspecto_analyse_names_a_bad_record_and_counts_the_rest(lab_records: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something else"}')
    assert cli_main(["analyse", str(bad), str(next(lab_records.glob("*.json")))]) == 1
    printed = capsys.readouterr().out
    assert "bad.json" in printed and "not a perspecto-record/1 record" in printed and "1 games" in printed


def test_perspecto_analyse_never_writes_its_json_over_a_record(lab_records: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    # ``--json`` takes an optional FILE: written before the records, it would swallow the first one.
    first, second, *_ = sorted(lab_records.glob("*.json"))
    before = first.read_text()
    assert cli_main(["analyse", "--json", str(first), str(second)]) == 2
    assert first.read_text() == before
    assert "a folder or a game record" in capsys.readouterr().out
    assert cli_main(["analyse", "--json", str(lab_records), str(second)]) == 2
