"""The lab's runner: paired games, ordered consumption, SPRT stops, setup sources, records, determinism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.config import get_profile, profile_from_mapping
from engine_ext.lab.runner import (
    FileSetups,
    GameOutcome,
    GeneratedSetups,
    LabError,
    LibrarySetups,
    Limits,
    Match,
    Rules,
    make_player,
    parse_param,
    play_game,
    player_names,
    run_matches,
    sprt_line,
)
from engine_ext.lab.schedule import build_matches, pairings
from engine_ext.lab.sprt import SprtSpec
from engine_ext.lab.stats import Pentanomial
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import CLASSIC
from setups.notation import Notation, parse_setup
from setups.stats import gravon_path, read_text

# The Gravon setups people played, as the project ships them (xz-compressed).
GRAVON = gravon_path("classic")


def random_match(records: Path | None, *, pairs: int = 2, seed: int = 7, move_limit: int = 60,
                 sprt: SprtSpec | None = None) -> Match:
    a = make_player("random-a", get_profile("random"), label="A")
    b = make_player("random-b", get_profile("random"), label="B")
    return Match(a, b, pairs=pairs, source=GeneratedSetups(CLASSIC), seed=seed, limits=Limits(),
                 rules=Rules(move_limit=move_limit), records=records, sprt=sprt)


def search_match(records: Path, limits: Limits, *, pairs: int = 1, move_limit: int = 24) -> Match:
    a = make_player("perspecto", get_profile("perspecto"), label="A", depth=limits.depth)
    b = make_player("pemm", get_profile("pemm"), label="B", depth=limits.depth)
    return Match(a, b, pairs=pairs, source=GeneratedSetups(CLASSIC), seed=11, limits=limits,
                 rules=Rules(move_limit=move_limit), records=records)


def records_of(folder: Path) -> dict[str, dict[str, object]]:
    """Every record of a folder by file name, without the wall-clock start time (the one field that is
    not a function of the seed)."""
    out = {}
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        data.pop("started")
        out[path.name] = data
    return out


def outcome(index: int, a_score: float) -> GameOutcome:
    a_side = Side.RED if index % 2 == 0 else Side.BLUE
    winner = None if a_score == 0.5 else (a_side if a_score == 1.0 else a_side.other)
    return GameOutcome(match="m", index=index, pair=index // 2, a_side=a_side, winner=winner, reason="flag",
                       plies=10)


# --- pairing and records ---------------------------------------------------------------------------------


def test_a_pair_plays_the_same_setups_and_seeds_with_the_engines_swapped(tmp_path: Path) -> None:
    match = random_match(tmp_path, pairs=2)
    jobs = list(match.jobs())
    assert [(j.index, j.pair, j.a_side) for j in jobs] == [
        (0, 0, Side.RED), (1, 0, Side.BLUE), (2, 1, Side.RED), (3, 1, Side.BLUE)]
    first, second = jobs[0], jobs[1]
    assert (first.red_setup, first.blue_setup) == (second.red_setup, second.blue_setup)
    assert (first.red_seed, first.blue_seed) == (second.red_seed, second.blue_seed)
    assert first.red.name == second.blue.name == "random-a"
    assert jobs[2].red_setup != first.red_setup  # the next pair draws new setups
    run_matches([match])
    red_names = [GameRecord.load(p).red.name for p in sorted(tmp_path.glob("*.json"))]
    assert red_names == ["random-a", "random-b", "random-a", "random-b"]
    one, two = (GameRecord.load(p) for p in sorted(tmp_path.glob("*.json"))[:2])
    assert one.red.setup == two.red.setup and one.blue.setup == two.blue.setup


def test_every_game_is_a_record_perspecto_replay_reads(tmp_path: Path) -> None:
    match = random_match(tmp_path, pairs=1, move_limit=40)
    run_matches([match])
    paths = sorted(tmp_path.glob("*.json"))
    assert [g.record_path for g in match.games] == paths
    for path in paths:
        record = GameRecord.load(path)
        assert len(list(replay_positions(record))) == len(record.moves) + 1
        assert record.result is not None and record.result["plies"] == len(record.moves) == 40
        assert record.result["reason"] == "move_limit" and record.result["scores"] == {"red": 3, "blue": 3}
        assert record.options["move_limit"] == 40


# --- determinism ------------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_records_twice_and_at_concurrency_1_and_2(tmp_path: Path) -> None:
    runs = {}
    for name, concurrency in (("one", 1), ("again", 1), ("two", 2)):
        run_matches([random_match(tmp_path / name, pairs=3)], concurrency=concurrency)
        runs[name] = records_of(tmp_path / name)
    assert len(runs["one"]) == 6
    assert runs["one"] == runs["again"] == runs["two"]
    other = random_match(tmp_path / "other", pairs=3, seed=8)
    run_matches([other])
    assert records_of(tmp_path / "other") != runs["one"]


@pytest.mark.parametrize("limits", [Limits(nodes=3000), Limits(depth=2)], ids=["nodes", "depth"])
def test_a_search_engine_under_a_node_budget_or_depth_plays_the_same_games_twice_and_at_concurrency_1_and_2(
        tmp_path: Path, limits: Limits) -> None:
    # No clock in the limits: with one search thread the budget (or the depth) alone decides every move.
    for name, concurrency in (("one", 1), ("again", 1), ("two", 2)):
        run_matches([search_match(tmp_path / name, limits)], concurrency=concurrency)
    one, again, two = (records_of(tmp_path / name) for name in ("one", "again", "two"))
    assert len(one) == 2 and one == again == two
    nodes = [r["result"]["nodes"] for r in one.values()]  # type: ignore[index]
    assert all(0 < n["red"] and 0 < n["blue"] for n in nodes)
    if limits.nodes is not None:  # every search kept to its budget: 12 moves a side
        assert all(n["red"] <= 12 * limits.nodes and n["blue"] <= 12 * limits.nodes for n in nodes)


# --- ordered consumption and the SPRT ---------------------------------------------------------------------


def test_pairs_are_consumed_in_order_whatever_order_games_finish_in() -> None:
    scores = [1.0, 0.5, 0.0, 0.0, 1.0, 1.0]  # pairs: 1.5, 0, 2
    forward, backward = random_match(None, pairs=3), random_match(None, pairs=3)
    for i in range(6):
        forward.add(outcome(i, scores[i]))
    for i in (5, 4, 3, 1, 2):
        backward.add(outcome(i, scores[i]))
        assert backward.consumed_pairs == 0  # game 0 is missing: nothing can be counted yet
    backward.add(outcome(0, scores[0]))
    assert forward.pair_scores == backward.pair_scores == [1.5, 0.0, 2.0]
    assert forward.pentanomial == Pentanomial((1, 0, 0, 1, 1))
    assert (forward.trinomial.wins, forward.trinomial.draws, forward.trinomial.losses) == (3, 1, 2)
    assert forward.done


def test_the_sprt_stops_the_match_at_the_pair_that_decides_it() -> None:
    spec = SprtSpec(0, 10)
    match = random_match(None, pairs=1000, sprt=spec)
    jobs = match.jobs()
    while not match.done:
        job = next(jobs)
        match.add(outcome(job.index, 1.0 if job.index % 4 else 0.5))  # A wins almost everything
    assert match.verdict == "H1" and match.llr >= spec.upper
    assert next(jobs, None) is None  # no game after the verdict
    decided = match.consumed_pairs
    match.add(outcome(2 * decided, 0.0))  # a game still on its way when the verdict came: not counted
    assert match.consumed_pairs == decided and len(match.games) == 2 * decided
    line = sprt_line(match)
    assert line is not None and line.startswith("SPRT elo0=0 elo1=10 alpha=0.05 beta=0.05: LLR ")
    assert line.endswith("H1 accepted") and f"[{spec.lower:.2f}, {spec.upper:.2f}]" in line


@pytest.mark.long
def test_an_sprt_run_keeps_exactly_the_games_it_counted(tmp_path: Path) -> None:
    # Random movers that cannot finish in 30 plies draw every game: every pair alike, so the test accepts
    # H0 once the chance that a change worth elo1 = 10 left that many pairs alike is below beta: after
    # 102 pairs (engine_ext/lab/sprt.py), not before, and plays no more.
    counted = {}
    for name, concurrency in (("one", 1), ("two", 2)):
        match = random_match(tmp_path / name, pairs=150, move_limit=30, sprt=SprtSpec(0, 10))
        run_matches([match], concurrency=concurrency)
        assert match.verdict == "H0" and match.consumed_pairs == 102
        assert len(list((tmp_path / name).glob("*.json"))) == len(match.games) == 2 * match.consumed_pairs
        counted[name] = (match.consumed_pairs, match.llr)
    assert counted["one"] == counted["two"]


# --- setup sources ----------------------------------------------------------------------------------------


def test_setup_sources_are_deterministic_per_seed_and_pair() -> None:
    generated = GeneratedSetups(CLASSIC)
    assert generated.pair(3, 1) == generated.pair(3, 1) != generated.pair(4, 1)
    library = LibrarySetups.load(CLASSIC)
    red, blue = library.pair(0, 1)
    assert red != blue and red in library.setups and blue in library.setups
    assert library.pair(0, 1) == (red, blue)


def test_a_file_of_setups_reads_gravon_lines_and_names_a_bad_line(tmp_path: Path) -> None:
    lines = [line for line in read_text(GRAVON).splitlines() if line and not line.startswith("#")][:3]
    path = tmp_path / "setups.txt"
    path.write_text("# three Gravon setups\n" + "\n".join(lines) + "\n")
    source = FileSetups.load(path, CLASSIC)
    red, blue = source.pair(0, 5)
    assert {red.key, blue.key} <= set(lines) and red != blue
    path.write_text(lines[0] + "\nBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\n")
    with pytest.raises(LabError, match=r"setups.txt:2: not a legal classic setup"):
        FileSetups.load(path, CLASSIC).pair(0, 1)
    with pytest.raises(LabError, match="a pair needs two"):
        path.write_text("# nothing\n" + lines[0] + "\n")
        FileSetups.load(path, CLASSIC)
    with pytest.raises(LabError, match="cannot read"):
        FileSetups.load(tmp_path / "missing.txt", CLASSIC)


def test_the_shipped_gravon_collection_is_a_setup_file_as_it_is(tmp_path: Path) -> None:
    # `--setups setups/data/gravon-setups-classic.txt.xz`: compressed, read as it ships.
    source = FileSetups.load(GRAVON, CLASSIC)
    assert len(source.lines) == 64_920 and source.lines[0][0] == 5  # four comment lines first
    red, blue = source.pair(0, 1)
    assert red != blue
    (tmp_path / "cut.txt.xz").write_bytes(GRAVON.read_bytes()[:1000])
    with pytest.raises(LabError, match=r"cannot read the setup file .*cut.txt.xz"):
        FileSetups.load(tmp_path / "cut.txt.xz", CLASSIC)


# --- players, parameters, schedules -----------------------------------------------------------------------


def test_params_reach_only_the_side_they_name() -> None:
    assert parse_param("A.fear.own_fear_min=0.3") == ("A", ["fear", "own_fear_min"], 0.3)
    assert parse_param('B.scale="KS"') == ("B", ["scale"], "KS")
    assert parse_param("perspecto.scale=KS") == ("perspecto", ["scale"], "KS")
    params = ["A.home_guard=0", "pemm.max_depth=3", "B.fear.own_fear_min=0.3"]
    a = make_player("perspecto", get_profile("perspecto"), label="A", params=params, depth=5)
    b = make_player("pemm", get_profile("pemm"), label="B", params=params, depth=5)
    assert a.profile.engine_params_set() == {"threads": 1, "max_depth": 5, "home_guard": 0}
    assert b.profile.engine_params_set() == {"max_depth": 3, "fear": {"own_fear_min": 0.3}}  # pemm: one thread built in
    with pytest.raises(LabError, match="home_gaurd"):
        make_player("perspecto", get_profile("perspecto"), label="A", params=["A.home_gaurd=1"])
    with pytest.raises(LabError, match=r"expected SIDE\.KEY=VALUE"):
        parse_param("home_guard=64")


def test_schedules_pair_the_profiles_as_asked() -> None:
    assert pairings("a", "b") == [("a", "b")]
    assert pairings("a", gauntlet=["b", "c", "b"]) == [("a", "b"), ("a", "c")]
    assert pairings(round_robin=["a", "b", "c"]) == [("a", "b"), ("a", "c"), ("b", "c")]
    for bad in ({"a": "a"}, {"a": "a", "b": "b", "gauntlet": ["c"]}, {"round_robin": ["a", "a"]}):
        with pytest.raises(LabError):
            pairings(**bad)  # type: ignore[arg-type]
    assert player_names(["random", "random"]) == ["random-a", "random-b"]
    with pytest.raises(LabError, match="'nonesuch' is neither A, B nor a profile"):
        build_matches([("random", "pemm")], get_profile, pairs=1, source=GeneratedSetups(CLASSIC), seed=1,
                      limits=Limits(), rules=Rules(), params=["nonesuch.max_depth=2"])


# --- engines that fail ------------------------------------------------------------------------------------


def test_a_program_that_cannot_set_up_forfeits_and_the_match_goes_on(tmp_path: Path) -> None:
    broken = profile_from_mapping({"name": "broken", "engine": "ucc", "engine_params": {"command": "false"}})
    match = Match(make_player("broken", broken, label="A"), make_player("random", get_profile("random"), label="B"),
                  pairs=1, source=GeneratedSetups(CLASSIC), seed=2, limits=Limits(), rules=Rules(move_limit=20),
                  records=tmp_path)
    run_matches([match])
    assert [g.reason for g in match.games] == ["forfeit_illegal_setup", "forfeit_illegal_setup"]
    assert [g.a_score for g in match.games] == [0.0, 0.0]
    record = GameRecord.load(sorted(tmp_path.glob("*.json"))[0])
    assert record.result is not None and record.result["forfeits"] == ["red"]
    assert record.result["scores"] == {"red": 0, "blue": 6} and "broken gave no usable setup" in record.result["detail"]
    assert record.red.setup == {} and record.blue.setup  # as the host records it: no setup was accepted


def test_a_ucc_program_plays_in_the_runner_with_its_own_setup(tmp_path: Path) -> None:
    program = profile_from_mapping({"name": "ucc-random", "engine": "ucc",
                                    "engine_params": {"command": "perspecto ucc --profile random"}})
    match = Match(make_player("ucc-random", program, label="A"),
                  make_player("random", get_profile("random"), label="B"), pairs=1,
                  source=GeneratedSetups(CLASSIC), seed=2, limits=Limits(move_time=0.5),
                  rules=Rules(move_limit=30), records=tmp_path)
    job = next(match.jobs())
    result = play_game(job)
    assert result.reason == "move_limit" and result.plies == 30, result.detail
    record = GameRecord.load(result.record_path)  # type: ignore[arg-type]
    drawn = parse_setup(job.red_setup, CLASSIC, Notation.GRAVON).placement(Side.RED)
    assert record.red.setup != {str(sq): rank.label for sq, rank in drawn.items()}  # the program set up itself
    assert record.blue.setup == {str(sq): rank.label for sq, rank in
                                 parse_setup(job.blue_setup, CLASSIC, Notation.GRAVON).placement(Side.BLUE).items()}


# --- the view ---------------------------------------------------------------------------------------------


def test_without_a_terminal_the_progress_is_a_status_line_every_few_games() -> None:
    import io

    from rich.console import Console

    from bot.commands.lab_view import LabProgress, elo_text, result_table

    out = io.StringIO()
    match = random_match(None, pairs=3, sprt=SprtSpec(0, 10))
    with LabProgress(Console(file=out, force_terminal=False, width=200), [match], every=2) as progress:
        for index, score in enumerate([1.0, 1.0, 0.5, 0.0]):
            match.add(outcome(index, score))
            progress.update(match, outcome(index, score))
    lines = [line for line in out.getvalue().splitlines() if line.startswith("random-a vs random-b:")]
    assert lines[0].startswith("random-a vs random-b: 2 games played, 2 counted: W 2 D 0 L 0  Elo +inf")
    assert lines[1].startswith("random-a vs random-b: 4 games played, 4 counted: W 2 D 1 L 1  Elo ")
    assert f"LLR {match.llr:+.2f} [-2.94, 2.94]" in lines[1]
    assert elo_text(match.elo()).startswith("+") and result_table([match]).row_count == 1


def test_pairs_played_alike_are_no_verdict_and_a_sweep_stops_early() -> None:
    """Issue 33. Ten self-play pairs that each split 1-1 (the change altered no result yet) are no verdict:
    the ratio stays between the bounds and the match plays on. A sweep (every pair 2-0, minimax against
    random) stops at the pair that puts it past the upper bound, not after a hundred pairs."""
    from bot.commands.lab_view import status

    match = random_match(None, pairs=30, sprt=SprtSpec(0, 25))
    for index in range(20):
        match.add(outcome(index, 1.0 if index % 2 == 0 else 0.0))
    assert match.pentanomial.counts == (0, 0, 10, 0, 0)
    assert match.sprt is not None and match.sprt.lower < match.llr < 0
    assert match.verdict is None and not match.done
    assert status(match).endswith(f"LLR {match.llr:+.2f} [-2.94, 2.94]")

    sweep = random_match(None, pairs=100, sprt=SprtSpec(0, 100))
    jobs = sweep.jobs()
    while not sweep.done:
        sweep.add(outcome(next(jobs).index, 1.0))
    assert sweep.verdict == "H1" and sweep.consumed_pairs == 12
    assert status(sweep).endswith(" H1")
