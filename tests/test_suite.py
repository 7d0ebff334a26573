"""The position suite (engine_ext/lab/suite/, ``perspecto suite``): the side's view rebuilt from a record, what
our side knew, each predicate on hand-made positions (one that makes it true, one that makes it false), the
suite file's checks, the condition check on fixed moves, the extractor, and a smoke run of the shipped suite
from the command line at a node budget."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.cli import main
from engine_ext.lab.suite.entries import CATEGORIES, Entry, Suite, suite_document
from engine_ext.lab.suite.errors import PositionError, SuiteFileError
from engine_ext.lab.suite.extract import SITUATIONS, candidates, our_side
from engine_ext.lab.suite.knowledge import EnemyPiece, Knowledge, beats
from engine_ext.lab.suite.predicates import PREDICATES, flag_raiders, makes_progress, possible_spy
from engine_ext.lab.suite.view import side_view, view_options
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import CLASSIC, Square

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "engine_ext" / "lab" / "suite" / "data" / "suite.json"

U = Rank.UNKNOWN
# The five categories issue 44 asks for, at least 25 entries each (certain_loss is a further one).
ISSUE_CATEGORIES = ("likely_bomb", "possible_spy", "known_raider", "flag_raider", "won_endgame")


def sq(text: str) -> Square:
    return Square.parse(text)


def mv(text: str) -> Move:
    return Move.parse(text)


def board(ours: dict[str, Rank], theirs: dict[str, tuple[Rank, bool]], *, side: Side = Side.RED,
          their_lost: dict[Rank, int] | None = None, last: str | None = None) -> Knowledge:
    """A hand-made position as our side knows it: ``theirs`` maps a square to (shown rank or UNKNOWN, moved)."""
    return Knowledge(side, CLASSIC, {sq(s): r for s, r in ours.items()},
                     {sq(s): EnemyPiece(r, moved) for s, (r, moved) in theirs.items()},
                     Counter(), Counter(their_lost or {}), frozenset(),
                     mv(last) if last else None)


def _shipped_record() -> Path:
    suite = Suite.load(SHIPPED)
    return suite.record_path(suite.entries[0])


# --- the view -----------------------------------------------------------------------------------------------


def test_a_ucc_record_is_seen_with_the_ucc_players_own_rules() -> None:
    from bot.ucc.player import VIEW_OPTIONS

    suite = Suite.load(SHIPPED)
    record = suite.load_record(suite.entries[0])
    assert record.options.get("referee") == "ucc2012"
    assert view_options(record) == VIEW_OPTIONS


def test_the_view_hides_what_the_side_was_not_shown_and_keeps_what_it_was() -> None:
    suite = Suite.load(SHIPPED)
    entry = suite.entries[0]
    record = suite.load_record(entry)
    side = entry.our_side
    view = side_view(record, entry.ply, side)
    full = None
    for full, _played in replay_positions(record):
        if full.ply == entry.ply:
            break
    assert full is not None and full.ply == entry.ply
    truth = full.pieces()
    seen = view.pieces()
    assert set(seen) == set(truth)  # every piece where it really is
    for square, (owner, rank) in seen.items():
        if owner == side:
            assert rank == truth[square][1]
        else:
            assert rank in (U, truth[square][1])
    assert any(rank == U for owner, rank in seen.values() if owner != side)
    assert any(rank != U for owner, rank in seen.values() if owner != side)  # fights showed some


def test_a_ply_that_is_not_ours_is_refused() -> None:
    suite = Suite.load(SHIPPED)
    entry = suite.entries[0]
    record = suite.load_record(entry)
    with pytest.raises(PositionError, match="move, not"):
        side_view(record, entry.ply + 1, entry.our_side)
    with pytest.raises(PositionError, match="not a move of the record"):
        side_view(record, len(record.moves) + 3, entry.our_side)


# --- what our side knew ------------------------------------------------------------------------------------


def test_unseen_counts_what_was_neither_lost_nor_shown() -> None:
    known = board({}, {"E7": (Rank.BOMB, False), "F7": (U, False)}, their_lost={Rank.BOMB: 2, Rank.SPY: 1})
    assert known.unseen(Rank.BOMB) == 6 - 2 - 1
    assert known.unseen(Rank.SPY) == 0
    assert known.their_strongest_mover() == Rank.MARSHAL


def test_path_distance_goes_round_pieces_and_lakes() -> None:
    lakes = board({"C4": Rank.MARSHAL}, {"C7": (U, True)})
    assert lakes.path_distance(sq("C4"), [sq("C7")]) == 5  # round the lake C5-D6: B4 B5 B6 B7 C7
    open_board = board({"A4": Rank.MARSHAL}, {"A7": (U, True)})
    assert open_board.path_distance(sq("A4"), [sq("A7")]) == 3
    blocked = board({"A4": Rank.MARSHAL, "A5": Rank.SCOUT, "B4": Rank.SCOUT, "A3": Rank.SCOUT}, {"A7": (U, True)})
    assert blocked.path_distance(sq("A4"), [sq("A7")]) is None
    assert blocked.path_distance(sq("A4"), [sq("A7")], through=sq("A5")) == 3


def test_combat_as_the_rules_have_it() -> None:
    assert beats(Rank.SPY, Rank.MARSHAL) and not beats(Rank.MARSHAL, Rank.BOMB)
    assert beats(Rank.MINER, Rank.BOMB) and beats(Rank.SCOUT, Rank.FLAG) and not beats(Rank.GENERAL, Rank.GENERAL)


# --- the predicates: each true on one hand-made position, false on another ------------------------------------


def test_top_piece_spares_likely_bomb() -> None:
    check = PREDICATES["top_piece_spares_likely_bomb"].check
    known = board({"E6": Rank.GENERAL, "A4": Rank.SCOUT}, {"E7": (U, False), "F7": (U, True)})
    assert not check(known, mv("E6-E7"))  # the general on an unmoved unseen piece, bombs unseen
    assert check(known, mv("A4-A5"))
    no_bombs_left = board({"E6": Rank.GENERAL}, {"E7": (U, False)}, their_lost={Rank.BOMB: 6})
    assert check(no_bombs_left, mv("E6-E7"))


def test_marshal_shuns_possible_spy() -> None:
    check = PREDICATES["marshal_shuns_possible_spy"].check
    known = board({"E5": Rank.MARSHAL, "A4": Rank.SCOUT}, {"E6": (U, True)})
    assert not check(known, mv("A4-A5"))  # the marshal stays next to it
    assert check(known, mv("E5-E4"))  # steps away
    assert check(known, mv("E5-E6"))  # takes it
    assert check(known, mv("E5-F5"))  # F5 is not next to E6


def test_marshal_shuns_possible_spy_step_next_to_it() -> None:
    check = PREDICATES["marshal_shuns_possible_spy"].check
    known = board({"E4": Rank.MARSHAL}, {"E6": (U, True)})
    assert not check(known, mv("E4-E5"))
    assert check(known, mv("E4-F4"))
    spy_gone = board({"E4": Rank.MARSHAL}, {"E6": (U, True)}, their_lost={Rank.SPY: 1})
    assert check(spy_gone, mv("E4-E5"))


def test_possible_spy_counts_unmoved_pieces() -> None:
    """Every spy that took our marshal in the no-learn baseline had never moved (issue 45): an unmoved unseen
    piece may be the spy; a shown piece is none; with their spy seen, no piece is."""
    check = PREDICATES["marshal_shuns_possible_spy"].check
    known = board({"E4": Rank.MARSHAL, "A4": Rank.SCOUT}, {"E6": (U, False), "F4": (U, False)})
    assert possible_spy(known, sq("E6")) and possible_spy(known, sq("F4"))
    assert not check(known, mv("A4-A5"))  # the marshal stays next to unmoved unseen F4
    assert not check(known, mv("E4-E5"))  # steps next to unmoved unseen E6
    assert check(known, mv("E4-F4"))  # takes the suspect: a defending spy loses
    assert check(known, mv("E4-D4"))
    shown = board({"E4": Rank.MARSHAL, "A4": Rank.SCOUT}, {"F4": (Rank.SERGEANT, False), "E6": (Rank.MINER, True)})
    assert not possible_spy(shown, sq("F4")) and not possible_spy(shown, sq("E6"))
    assert check(shown, mv("A4-A5")) and check(shown, mv("E4-E5"))
    spy_seen = board({"E4": Rank.MARSHAL, "A4": Rank.SCOUT}, {"F4": (U, False), "E6": (U, True)},
                     their_lost={Rank.SPY: 1})
    assert not possible_spy(spy_seen, sq("F4")) and not possible_spy(spy_seen, sq("E6"))
    assert check(spy_seen, mv("A4-A5")) and check(spy_seen, mv("E4-E5"))


def test_answers_known_raider() -> None:
    check = PREDICATES["answers_known_raider"].check
    ours = {"E3": Rank.MARSHAL, "G3": Rank.SERGEANT, "A1": Rank.SCOUT}
    known = board(ours, {"E4": (Rank.GENERAL, True)})
    assert check(known, mv("E3-E4"))  # the marshal takes their general
    assert not check(known, mv("A1-A2"))
    assert not check(known, mv("G3-F3"))  # a sergeant nearer is no answer
    far = board({"E1": Rank.MARSHAL, "A1": Rank.SCOUT}, {"E4": (Rank.GENERAL, True)})
    assert check(far, mv("E1-E2"))  # brings the answer nearer
    assert not check(far, mv("E1-D1"))
    threatened = board({"F4": Rank.CAPTAIN, "A1": Rank.SCOUT}, {"E4": (Rank.GENERAL, True)})
    assert check(threatened, mv("F4-G4"))  # steps out of its reach
    assert not check(threatened, mv("A1-A2"))  # leaves the captain to it
    assert not check(threatened, mv("F4-E4"))  # a captain on a general is no answer
    behind = board({"E3": Rank.GENERAL, "A1": Rank.SCOUT}, {"E4": (Rank.GENERAL, True), "J7": (U, True)})
    assert not check(behind, mv("E3-E4"))  # no trade when behind in movers (2 against their 33)


def test_stops_flag_raider() -> None:
    check = PREDICATES["stops_flag_raider"].check
    ours = {"A1": Rank.FLAG, "B1": Rank.BOMB, "A2": Rank.BOMB, "D2": Rank.CAPTAIN, "J4": Rank.SCOUT}
    known = board(ours, {"C3": (U, True)}, last="C4-C3")
    assert list(flag_raiders(known)) == [(sq("C3"), 3)]
    assert check(known, mv("D2-C2"))  # in its way, and nearer
    assert check(known, mv("D2-D3"))  # nearer, next to it
    assert not check(known, mv("J4-J5"))
    came_away = board(ours, {"C3": (U, True)}, last="C2-C3")
    assert list(flag_raiders(came_away)) == []
    assert not check(came_away, mv("D2-C2"))  # no raider walking in: nothing to stop


def test_no_certain_loss_attack() -> None:
    check = PREDICATES["no_certain_loss_attack"].check
    known = board({"E4": Rank.CAPTAIN, "F4": Rank.MAJOR, "A4": Rank.MINER},
                  {"E5": (Rank.MAJOR, True), "A5": (Rank.BOMB, False), "F5": (U, True)})
    assert not check(known, mv("E4-E5"))  # a captain on a shown major
    assert check(known, mv("F4-F5"))  # an unseen piece: not certain
    assert check(known, mv("A4-A5"))  # a miner on a shown bomb wins
    assert check(known, mv("E4-D4"))
    trade = board({"E4": Rank.MAJOR}, {"E5": (Rank.MAJOR, True)})
    assert check(trade, mv("E4-E5"))  # both fall: not a certain loss


def test_makes_progress() -> None:
    ours = {"E4": Rank.MARSHAL, "A1": Rank.SCOUT}
    lost = {Rank.MARSHAL: 1, Rank.GENERAL: 1}
    known = board(ours, {"E8": (Rank.COLONEL, True), "J10": (U, False)}, their_lost=lost)
    assert makes_progress(known, mv("E4-E5"))  # nearer the colonel it takes
    assert not makes_progress(known, mv("E4-D4"))  # a shuffle sideways
    assert not makes_progress(known, mv("E4-F4"))
    near = board(ours, {"E5": (Rank.COLONEL, True)}, their_lost=lost)
    assert makes_progress(near, mv("E4-E5"))  # takes it


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), min_size=3, max_size=12, unique=True),
       st.integers(0, 3))
def test_a_shuffle_cannot_make_progress_both_ways(cells: list[tuple[int, int]], direction: int) -> None:
    """The anti-shuffle invariant: a plain move that passes ``makes_progress`` is never followed by its own
    reversal passing too (the nearest target's distance fell, so it cannot fall again going back)."""
    squares = [Square(c, r) for c, r in cells if not CLASSIC.is_lake(Square(c, r))]
    if len(squares) < 3:
        return
    mover, *rest = squares
    half = len(rest) // 2 or 1
    ours = {mover: Rank.GENERAL, **dict.fromkeys(rest[:half][:-1], Rank.SCOUT)}
    theirs = {s: EnemyPiece(Rank.COLONEL if i % 2 else U, i % 3 == 0) for i, s in enumerate(rest[half:] or rest[-1:])}
    theirs = {s: p for s, p in theirs.items() if s not in ours}
    known = Knowledge(Side.RED, CLASSIC, ours, theirs, Counter(), Counter({Rank.MARSHAL: 1}), frozenset())
    dc, dr = ((1, 0), (-1, 0), (0, 1), (0, -1))[direction]
    to = Square(mover.col + dc, mover.row + dr)
    if not CLASSIC.on_board(to) or CLASSIC.is_lake(to) or not known.empty(to):
        return
    there = Move(mover, to)
    if makes_progress(known, there):
        moved = Knowledge(Side.RED, CLASSIC, {**{s: r for s, r in ours.items() if s != mover}, to: Rank.GENERAL},
                          theirs, Counter(), Counter({Rank.MARSHAL: 1}), frozenset())
        assert not makes_progress(moved, Move(to, mover))


# --- the suite file ------------------------------------------------------------------------------------------



def _a_record(folder: Path) -> Path:
    """A plain copy of the shipped suite's first record (a gauntlet game under the UCC referee)."""
    suite = Suite.load(SHIPPED)
    path = folder / "game.json"
    path.write_bytes(gzip.decompress(suite.record_path(suite.entries[0]).read_bytes()))
    return path


def _entry(**fields: object) -> dict[str, object]:
    base: dict[str, object] = {"id": "e1", "category": "likely_bomb", "record": "g.json", "ply": 0, "side": "red",
                               "predicate": "top_piece_spares_likely_bomb", "note": "why"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def _write_suite(folder: Path, entries: list[dict[str, object]], **top: object) -> Path:
    _a_record(folder).rename(folder / "g.json")
    path = folder / "suite.json"
    path.write_text(json.dumps({"format": "perspecto-suite/1", "entries": entries, **top}), encoding="utf-8")
    return path


@pytest.mark.parametrize(("entries", "top", "message"), [
    ([_entry(category="bombs")], {}, "unknown category 'bombs'"),
    ([_entry(predicate="no_such_rule")], {}, "unknown predicate 'no_such_rule'"),
    ([_entry(**{"pass": ["E4-E5"]})], {}, "exactly one of predicate, pass, fail (this entry has predicate, pass)"),
    ([_entry(predicate=None)], {}, "exactly one of predicate, pass, fail (this entry has none)"),
    ([_entry(predicate=None, fail=["E4-E99"])], {}, "entries[0].fail: bad square 'E99'"),
    ([_entry(ply=-1)], {}, "entries[0].ply"),
    ([_entry(note=None)], {}, "entries[0].note: field required"),
    ([_entry(), _entry()], {}, "entry id 'e1' appears twice"),
    ([_entry(record="missing.json")], {}, "entry 'e1': no record missing.json beside the suite"),
    ([_entry()], {"format": "perspecto-suite/9"}, "not a perspecto-suite/1 file"),
])
def test_a_bad_suite_file_is_named_with_its_fault(tmp_path: Path, entries: list[dict[str, object]],
                                                  top: dict[str, object], message: str) -> None:
    path = _write_suite(tmp_path, entries, **top)
    with pytest.raises(SuiteFileError) as caught:
        Suite.load(path)
    assert message in str(caught.value), str(caught.value)


def test_a_suite_that_is_not_json_or_not_there(tmp_path: Path) -> None:
    path = tmp_path / "suite.json"
    path.write_text("{nope", encoding="utf-8")
    with pytest.raises(SuiteFileError, match="not JSON"):
        Suite.load(path)
    with pytest.raises(SuiteFileError, match="cannot read it"):
        Suite.load(tmp_path / "absent.json")


def test_the_command_says_what_is_wrong_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write_suite(tmp_path, [_entry(predicate="no_such_rule")])
    assert main(["suite", "--suite", str(path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.startswith("perspecto suite: ") and "unknown predicate 'no_such_rule'" in err
    assert len(err.strip().splitlines()) == 1
    assert main(["suite", "--suite", str(path), "--category", "nope"]) == 2
    assert "unknown category nope" in capsys.readouterr().err


def test_a_gzipped_record_and_the_written_document_load_back(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    record = _a_record(tmp_path)
    (tmp_path / "games" / "g.json.gz").write_bytes(gzip.compress(record.read_bytes()))
    entry = Entry.model_validate(_entry(record="games/g.json.gz", predicate=None, fail=["e4-e5"]))
    path = tmp_path / "suite.json"
    path.write_text(suite_document([entry]), encoding="utf-8")
    suite = Suite.load(path)
    assert suite.entries == (entry,)
    assert entry.fail_moves == ("E4-E5",)
    assert suite.load_record(entry).game_id == GameRecord.load(record).game_id


# --- the condition check on fixed moves ----------------------------------------------------------------------


def test_an_entrys_condition_judges_the_move_it_is_given() -> None:
    known = board({"E6": Rank.GENERAL, "A4": Rank.SCOUT}, {"E7": (U, False)})
    by_predicate = Entry.model_validate(_entry())
    assert not by_predicate.passes(known, mv("E6-E7"))
    assert by_predicate.passes(known, mv("A4-A5"))
    must = Entry.model_validate(_entry(predicate=None, **{"pass": ["A4-A5"]}))
    assert must.passes(known, mv("A4-A5")) and not must.passes(known, mv("E6-E7"))
    must_not = Entry.model_validate(_entry(predicate=None, fail=["E6-E7"]))
    assert not must_not.passes(known, mv("E6-E7")) and must_not.passes(known, mv("A4-A5"))


def test_a_move_that_breaks_the_condition_is_reported_failed(tmp_path: Path) -> None:
    """The engine's own move, at a small node budget, against an entry that fails every legal move."""
    from bot.profiles import load_configuration
    from engine_ext.lab.runner import make_player
    from engine_ext.lab.suite.run import SuiteSettings, judge, scores_json

    path = _a_record(tmp_path)
    record = GameRecord.load(path)
    side = our_side(record, "perspecto")
    assert side is not None
    ply = 10 + (side == Side.BLUE)
    view = side_view(record, ply, side)
    every_move = [str(move) for move in view.sendable_moves()]
    entry = Entry.model_validate(_entry(ply=ply, side=str(side), predicate=None, fail=every_move))
    _settings, profiles = load_configuration(None)
    profile = make_player("perspecto", profiles.get("perspecto"), label="A").profile
    verdict = judge(entry, path, SuiteSettings(profile, 2.0, nodes=500))
    assert not verdict.passed and verdict.move in every_move and not verdict.error
    document = scores_json([verdict])
    assert document["categories"] == {"likely_bomb": {"total": 1, "passed": 0, "failed": ["e1"]}}


# --- the extractor -------------------------------------------------------------------------------------------


def test_the_extractor_proposes_only_where_the_situation_holds(tmp_path: Path) -> None:
    path = _a_record(tmp_path)
    record = GameRecord.load(path)
    side = our_side(record, "perspecto")
    assert side is not None
    found = list(candidates(path, record, side, SITUATIONS, per_game=2, spacing=10))
    assert found
    for candidate in found:
        view = side_view(record, candidate.ply, side)
        known = Knowledge.from_view(view, side)
        assert SITUATIONS[candidate.category].holds(known) is not None
        played = mv(record.moves[candidate.ply].move)
        assert PREDICATES[candidate.predicate].check(known, played) == candidate.played_passes
    per_category = Counter(c.category for c in found)
    assert max(per_category.values()) <= 2


# --- the shipped suite --------------------------------------------------------------------------------------


def test_the_shipped_suite_loads_with_every_category_filled() -> None:
    suite = Suite.load(SHIPPED)
    counts = Counter(entry.category for entry in suite.entries)
    assert set(counts) <= set(CATEGORIES)
    assert all(entry.note and entry.played for entry in suite.entries)


def test_a_smoke_run_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One entry of each category at a node budget: the table, and the JSON in exactly its shape."""
    suite = Suite.load(SHIPPED)
    firsts: dict[str, Entry] = {}
    for entry in suite.entries:
        firsts.setdefault(entry.category, entry)
    small = tmp_path / "suite.json"
    (tmp_path / "games").mkdir()
    for entry in firsts.values():
        (tmp_path / entry.record).write_bytes(suite.record_path(entry).read_bytes())
    small.write_text(suite_document(list(firsts.values())), encoding="utf-8")
    out = tmp_path / "scores.json"
    code = main(["suite", "--suite", str(small), "--nodes", "3000", "--jobs", "1", "--json", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert "The position suite" in printed.out
    document = json.loads(out.read_text(encoding="utf-8"))
    assert set(document["categories"]) == set(firsts)
    for name, score in document["categories"].items():
        assert set(score) == {"total", "passed", "failed"}
        assert score["total"] == 1 and score["passed"] + len(score["failed"]) == 1
        assert all(failed == firsts[name].id for failed in score["failed"])


@pytest.mark.long
def test_every_shipped_entry_rebuilds_and_is_judged_by_its_own_category() -> None:
    suite = Suite.load(SHIPPED)
    counts = Counter(entry.category for entry in suite.entries)
    assert all(counts[name] >= 25 for name in ISSUE_CATEGORIES), counts
    for entry in suite.entries:
        view = side_view(suite.load_record(entry), entry.ply, entry.our_side)
        known = Knowledge.from_view(view, entry.our_side)
        assert SITUATIONS[entry.category].holds(known) is not None, entry.id
        assert entry.predicate == SITUATIONS[entry.category].predicate


def test_the_shipped_records_are_not_ignored_by_git() -> None:
    """The suite ships its records: a folder the repository ignores (``records/`` is the lab's output) would
    leave a fresh clone with a suite and no games."""
    import shutil
    import subprocess

    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    suite = Suite.load(SHIPPED)
    paths = sorted({str(suite.record_path(entry).relative_to(ROOT)) for entry in suite.entries})
    done = subprocess.run(["git", "check-ignore", *paths], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert done.stdout.strip() == "", f"ignored by git: {done.stdout}"
