"""The belief model (engine_ext/beliefs): consistency over random games, the evidence, the prior across
games, the fitted tables and the measurement commands."""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.cli import main
from engine_ext.beliefs import MAX_PIECES, BeliefModel, balance
from engine_ext.beliefs.calibration import hard_only, posterior_report, prior_report, thesis_pool
from engine_ext.beliefs.events import GameTracker
from engine_ext.beliefs.evidence import (
    OUTCOMES,
    RELATIONS,
    Likelihoods,
    relation,
    shipped_likelihoods,
)
from engine_ext.beliefs.fit import fit_records
from engine_ext.beliefs.prior import ALPHAS, human_prior, opponent_prior, pool_shares
from engine_ext.engine.facade import Engine
from engine_ext.engine.settings import builtin_settings
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.game import Game, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, MINI, Ruleset, Square
from setups import generate_setup
from setups.notation import Setup
from setups.stats import gravon_path

TOL = 1e-6
FLAG, BOMB = int(Rank.FLAG), int(Rank.BOMB)


def _counts(ruleset: Ruleset) -> np.ndarray:
    out = np.zeros(13)
    for rank, count in ruleset.pieces.items():
        out[int(rank)] = count
    return out


def _refereed(seed: int, ruleset: Ruleset = CLASSIC) -> RefereedGame:
    rng = random.Random(seed)
    red = generate_setup(ruleset, rng.randrange(2**32)).placement(Side.RED)
    blue = generate_setup(ruleset, rng.randrange(2**32)).placement(Side.BLUE)
    return RefereedGame(RulesOptions(ruleset=ruleset, move_limit=2000), red, blue)


def _random_move(game: RefereedGame, rng: random.Random) -> bool:
    referee = game.referee
    if referee.result is not None:
        return False
    codes = referee.legal_codes()
    if not codes:
        return False
    game.play(referee.move_of(rng.choice(codes)))
    return True


def _check_matrix(matrix: np.ndarray, game: Game, owner: Side, tracker: GameTracker) -> None:
    """The invariants of the module docstring of engine_ext/beliefs/model.py."""
    assert matrix.shape == (MAX_PIECES, 13) and matrix.dtype == np.float64
    assert not matrix.flags.writeable
    assert np.all(matrix >= 0.0) and np.all(matrix[:, 12] == 0.0)
    counts = _counts(game.options.ruleset)
    pos = game.position
    for pid in range(pos.piece_count):
        sq, side, rank, moves = pos.piece(pid)
        row = matrix[pid]
        if side != owner or sq < 0:
            assert np.all(row == 0.0), (pid, row)
            continue
        assert abs(row.sum() - 1.0) < TOL
        if moves > 0:
            assert row[FLAG] == 0.0 and row[BOMB] == 0.0  # a piece seen to move is neither
        if tracker.shown[pid]:
            assert row[rank] == 1.0  # revealed: one-hot
        if rank == int(Rank.UNKNOWN):
            assert not tracker.shown[pid]
    dead = np.zeros(13)
    for pid in range(pos.piece_count):
        sq, side, rank, _moves = pos.piece(pid)
        if side == owner and sq < 0:
            dead[rank] += 1
    assert np.allclose(matrix.sum(axis=0), counts - dead, atol=TOL)


# --- consistency over random games (hypothesis) -------------------------------------------------------


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), plies=st.integers(0, 160), every=st.integers(1, 9))
def test_every_update_keeps_rows_columns_moves_and_reveals_consistent(seed: int, plies: int, every: int) -> None:
    game = _refereed(seed)
    rng = random.Random(seed)
    view = game.view(Side.RED)
    model = BeliefModel(view, Side.RED)
    for ply in range(plies + 1):
        if ply % every == 0 or ply == plies:
            model.update(view)
            _check_matrix(model.enemy_matrix(), view, Side.BLUE, model.tracker)
            _check_matrix(model.own_matrix(), view, Side.RED, model.tracker)
        if not _random_move(game, rng):
            break


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**31), plies=st.integers(1, 120))
def test_the_view_and_the_full_game_give_the_same_beliefs(seed: int, plies: int) -> None:
    # The model reads only what the view shows: from the referee's full game it must say exactly the same.
    game = _refereed(seed)
    rng = random.Random(seed)
    for _ in range(plies):
        if not _random_move(game, rng):
            break
    for side in Side:
        seen = BeliefModel(game.view(side), side)
        full = BeliefModel(game.referee, side)
        assert np.array_equal(seen.enemy_matrix(), full.enemy_matrix())
        assert np.array_equal(seen.own_matrix(), full.own_matrix())


def test_an_incremental_update_equals_a_rebuild() -> None:
    game = _refereed(7)
    rng = random.Random(7)
    view = game.view(Side.BLUE)
    model = BeliefModel(view, Side.BLUE)
    for _ in range(90):
        _random_move(game, rng)
        model.update(view)
    fresh = BeliefModel(view, Side.BLUE)
    assert np.allclose(model.enemy_matrix(), fresh.enemy_matrix(), atol=1e-12)
    assert np.allclose(model.own_matrix(), fresh.own_matrix(), atol=1e-12)
    # A different game starts over.
    other = _refereed(8).view(Side.BLUE)
    model.update(other)
    assert model.ply_seen == 0 and np.array_equal(model.enemy_matrix(), BeliefModel(other, Side.BLUE).enemy_matrix())


# --- catching up with a copy of the game (issue 31: the engine gets a fresh copy every move) ----------


def _same(a: BeliefModel, b: BeliefModel) -> bool:
    return (np.array_equal(a.enemy_matrix(), b.enemy_matrix()) and np.array_equal(a.own_matrix(), b.own_matrix())
            and a.ply_seen == b.ply_seen)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), plies=st.integers(1, 120), side=st.sampled_from(list(Side)),
       every=st.integers(1, 4))
def test_a_copy_that_continues_the_game_is_caught_up_and_equals_a_rebuild(
        seed: int, plies: int, side: Side, every: int) -> None:
    # As the engine sees it: a fresh copy of the view each move (every ``every`` plies). The model plays
    # only the new entries (its tracker is kept) and says exactly what a model built from scratch says.
    game = _refereed(seed)
    rng = random.Random(seed)
    view = game.view(side)
    model = BeliefModel(view.copy(), side)
    for ply in range(1, plies + 1):
        if not _random_move(game, rng):
            break
        if ply % every:
            continue
        tracker = model.tracker
        copy = view.copy()
        assert model.continues(copy)
        model.update(copy)
        assert model.tracker is tracker  # caught up, not rebuilt
        assert _same(model, BeliefModel(view.copy(), side))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**31), plies=st.integers(2, 80), data=st.data())
def test_a_history_that_differs_from_the_one_consumed_starts_over(seed: int, plies: int, data: st.DataObject) -> None:
    # The same start, the same length or longer, but one move differs at ``fork``: a rebuild, and the
    # model then says what a model of the new history says.
    game = _refereed(seed)
    rng = random.Random(seed)
    for _ in range(plies):
        if not _random_move(game, rng):
            break
    played = [entry.move for entry in game.referee.history]
    fork = data.draw(st.integers(0, len(played) - 1), label="fork")
    model = BeliefModel(game.view(Side.RED).copy(), Side.RED)
    other = _refereed(seed)
    for move in played[:fork]:
        other.play(move)
    codes = [c for c in other.referee.legal_codes() if other.referee.move_of(c) != played[fork]]
    if not codes:
        return
    other.play(other.referee.move_of(data.draw(st.sampled_from(codes), label="other move")))
    while other.referee.ply < len(played) and _random_move(other, rng):
        pass
    copy = other.view(Side.RED).copy()
    tracker = model.tracker
    assert not model.continues(copy)
    model.update(copy)
    assert model.tracker is not tracker
    assert _same(model, BeliefModel(other.view(Side.RED).copy(), Side.RED))


def test_another_start_or_a_rewound_or_rebuilt_view_starts_over() -> None:
    # Barrage leaves setup squares empty, so two games with no moves yet differ in where pieces start.
    first, second = _refereed(1, BARRAGE), _refereed(2, BARRAGE)
    model = BeliefModel(first.view(Side.RED).copy(), Side.RED)
    assert model.continues(first.view(Side.RED).copy())
    assert not model.continues(second.view(Side.RED)) and not model.continues(first.view(Side.BLUE))
    model.update(second.view(Side.RED).copy())
    assert _same(model, BeliefModel(second.view(Side.RED), Side.RED))
    # Our own setup with two untouched pieces swapped: the same squares and moves, another game.
    game, rng = _refereed(5), random.Random(5)
    for _ in range(30):
        _random_move(game, rng)
    played = [entry.move for entry in game.referee.history]
    touched = {sq for move in played for sq in (move.frm, move.to)}
    seeds = random.Random(5)
    red = generate_setup(CLASSIC, seeds.randrange(2**32)).placement(Side.RED)
    blue = generate_setup(CLASSIC, seeds.randrange(2**32)).placement(Side.BLUE)
    a, b = next((a, b) for a in red for b in red if red[a] != red[b] and not {a, b} & touched)
    swapped = RefereedGame(RulesOptions(move_limit=2000), dict(red) | {a: red[b], b: red[a]}, blue)
    for move in played:
        swapped.play(move)
    assert swapped.view(Side.RED).history == game.view(Side.RED).history
    model = BeliefModel(game.view(Side.RED).copy(), Side.RED)
    assert not model.continues(swapped.view(Side.RED))
    model.update(swapped.view(Side.RED))
    assert _same(model, BeliefModel(swapped.view(Side.RED), Side.RED))
    # A view rebuilt from the pieces on the board (the UCC player after a mismatch): no history.
    pieces = game.view(Side.RED).pieces()
    rebuilt = Game(RulesOptions(move_limit=2000), {sq: r for sq, (s, r) in pieces.items() if s == Side.RED},
                   {sq: r for sq, (s, r) in pieces.items() if s == Side.BLUE},
                   side_to_move=game.view(Side.RED).side_to_move, validate_setups=False)
    model = BeliefModel(game.view(Side.RED).copy(), Side.RED)
    assert not model.continues(rebuilt)
    model.update(rebuilt)
    assert _same(model, BeliefModel(rebuilt, Side.RED))
    # A rewound history (fewer entries) and a view rebuilt from the pieces on the board (no history).
    shorter = _refereed(5)
    rng = random.Random(5)
    for _ in range(10):
        _random_move(shorter, rng)
    assert not model.continues(shorter.view(Side.RED))
    model.update(shorter.view(Side.RED).copy())
    assert _same(model, BeliefModel(shorter.view(Side.RED), Side.RED))


def test_a_catch_up_that_fails_half_way_is_not_trusted_afterwards() -> None:
    # A history the tracker cannot play (its last entry a move from an empty square) raises; the entry
    # it did play before failing lost its evidence, so the next update must start over, not carry on.
    game, rng = _refereed(4), random.Random(4)
    for _ in range(10):
        _random_move(game, rng)
    view = game.view(Side.RED)
    at_ten = view.copy()
    for _ in range(2):
        _random_move(game, rng)
    last = view.history[-1]
    empty = next(sq for sq in (Square(col, row) for row in range(4, 6) for col in (0, 1, 4, 5, 8, 9))
                 if view.piece_at(sq) is None)
    bogus = MoveResult(Move(empty, Square(empty.col, empty.row + 1)), last.side)
    for then in ("the same object put right", "a copy"):
        model = BeliefModel(at_ten, Side.RED)
        bad = view.copy()
        bad.history[-1] = bogus
        with pytest.raises(ValueError, match="no piece"):
            model.update(bad)
        tracker = model.tracker
        if then == "a copy":
            model.update(view.copy())
        else:
            bad.history[-1] = last
            model.update(bad)
        assert model.tracker is not tracker, then
        assert _same(model, BeliefModel(view.copy(), Side.RED)), then


def test_the_engine_handed_a_copy_each_move_keeps_one_model_caught_up() -> None:
    # The daemon's pattern (bot/daemon/deadline.py): ``observe`` on its own game after each move, then
    # ``choose_move`` on a fresh copy. Until issue 31 each copy rebuilt the model from scratch, twice a move.
    engine = Engine(builtin_settings("perspecto").model_copy(update={"beliefs": True, "seed": 1, "threads": 1}))
    game, rng = _refereed(11), random.Random(11)
    view = game.view(Side.RED)
    engine.start_game(view, Side.RED)
    model = engine.belief_model
    assert model is not None
    tracker = model.tracker
    for _ in range(12):
        _random_move(game, rng)
        engine.observe(view)
        if view.side_to_move == Side.RED and view.result is None:
            start = time.monotonic()
            engine.choose_move(view.copy(), start + 60, start + 120, nodes=500)
    assert engine.belief_model is model and model.tracker is tracker and model.ply_seen == len(view.history)
    assert _same(model, BeliefModel(view, Side.RED))


@pytest.mark.parametrize("ruleset", [BARRAGE, MINI], ids=["barrage", "mini"])
def test_barrage_and_mini_work_too(ruleset: Ruleset) -> None:
    # Barrage: empty setup squares and no pair statistics; mini: no human statistics at all (the pool).
    game = _refereed(3, ruleset)
    rng = random.Random(3)
    for _ in range(40):
        _random_move(game, rng)
    view = game.view(Side.RED)
    model = BeliefModel(view, Side.RED)
    _check_matrix(model.enemy_matrix(), view, Side.BLUE, model.tracker)


# --- hard evidence --------------------------------------------------------------------------------------


def _scout_game() -> tuple[RefereedGame, Square]:
    # Red's scout on A4 (front row, column A: no lake ahead), free to run up to A6.
    cells = list(generate_setup(CLASSIC, 11).cells)
    scout = cells.index(Rank.SCOUT)
    cells[scout], cells[0] = cells[0], cells[scout]
    red = Setup(CLASSIC, tuple(cells)).placement(Side.RED)
    blue = generate_setup(CLASSIC, 12).placement(Side.BLUE)
    return RefereedGame(RulesOptions(), red, blue), CLASSIC.setup_squares(Side.RED)[0]


def test_a_long_move_reveals_a_scout_and_a_step_rules_out_bomb_and_flag() -> None:
    game, scout = _scout_game()
    view_blue = game.view(Side.BLUE)
    model = BeliefModel(view_blue, Side.BLUE)
    pid = view_blue.position.piece_id(view_blue.position.square(scout.col, scout.row))
    before = model.enemy_matrix()[pid].copy()
    assert before[BOMB] > 0 and before[int(Rank.SCOUT)] < 1
    game.play(Move(scout, Square(scout.col, 5)))  # two squares: only a scout does that
    model.update(view_blue)
    assert model.enemy_matrix()[pid, int(Rank.SCOUT)] == 1.0
    # Blue steps a front-row piece one square: it is neither bomb nor flag from now on.
    mover = next(sq for sq, (side, r) in game.referee.pieces(Side.BLUE).items()
                 if sq.row == 6 and r.movable and game.referee.piece_at(Square(sq.col, 5)) is None
                 and not CLASSIC.is_lake(Square(sq.col, 5)))
    game.play(Move(mover, Square(mover.col, 5)))
    model_red = BeliefModel(game.view(Side.RED), Side.RED)
    mid = game.referee.position.piece_id(game.referee.position.square(mover.col, 5))
    row = model_red.enemy_matrix()[mid]
    assert row[BOMB] == 0.0 and row[FLAG] == 0.0 and abs(row.sum() - 1) < TOL


def test_captured_ranks_leave_the_pool() -> None:
    game = _refereed(21)
    rng = random.Random(21)
    while _random_move(game, rng) and game.referee.ply < 400:
        pass
    view = game.view(Side.RED)
    model = BeliefModel(view, Side.RED)
    matrix = model.enemy_matrix()
    lost = {r: CLASSIC.pieces[r] - sum(1 for _sq, (_s, rk) in game.referee.pieces(Side.BLUE).items() if rk == r)
            for r in CLASSIC.pieces}
    for rank, gone in lost.items():
        assert matrix[:, int(rank)].sum() == pytest.approx(CLASSIC.pieces[rank] - gone, abs=TOL)


# --- the fitting ----------------------------------------------------------------------------------------


def test_balance_meets_row_and_column_sums_and_keeps_zeros() -> None:
    rng = np.random.default_rng(5)
    weights = rng.random((8, 4))
    weights[0, 1] = weights[3, 2] = 0.0
    targets = np.array([3.0, 1.0, 2.0, 2.0])
    iterations: list[int] = []
    out = balance(weights, targets, iterations)
    assert len(iterations) == 1 and 1 <= iterations[0] < 100
    assert np.allclose(out.sum(axis=1), 1.0, atol=1e-9)
    assert np.allclose(out.sum(axis=0), targets, atol=1e-7)
    assert out[0, 1] == 0.0 and out[3, 2] == 0.0


def test_pinned_sets_converge_quickly_once_impossible_pairs_are_cut() -> None:
    # Three pieces, two ranks of one piece each left among the first two: piece 2 must be the third rank,
    # so (2, rank 0) and (2, rank 1) are impossible though their weights are large. Without the cut the
    # fitting only creeps towards those zeros.
    weights = np.array([[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [5.0, 5.0, 1.0]])
    targets = np.array([1.0, 1.0, 1.0])
    iterations: list[int] = []
    out = balance(weights, targets, iterations)
    assert out[2, 0] == 0.0 and out[2, 1] == 0.0 and out[2, 2] == pytest.approx(1.0)
    assert np.allclose(out.sum(axis=0), targets, atol=1e-9) and iterations[0] < 10


# --- soft evidence --------------------------------------------------------------------------------------


def test_behaviour_vectors_follow_the_relations_and_never_go_below_the_floor() -> None:
    tables = shipped_likelihoods()
    assert tables.source.get("fitted") is True
    marshal, spy, general = int(Rank.MARSHAL), int(Rank.SPY), int(Rank.GENERAL)
    approach = tables.vector("near", "approach", marshal)
    # Walking up to a known marshal: what wins against it (the spy) is the likeliest; everything else loses.
    assert relation("near", spy, marshal) == RELATIONS.index("wins")
    assert approach[spy] == approach.max() == 1.0
    assert approach[general] < approach[spy]
    for situation, outcomes in OUTCOMES.items():
        for outcome in outcomes:
            for known in (int(Rank.SCOUT), int(Rank.CAPTAIN), marshal):
                v = tables.vector(situation, outcome, known)
                movable = [r for r in range(12) if r not in (FLAG, BOMB)]
                assert v[movable].min() >= tables.floor - 1e-12
    # A piece that stays put when a known captain steps next to it: bombs (which beat the captain) gain.
    stay = tables.vector("threat", "stay", int(Rank.CAPTAIN))
    assert stay[BOMB] > stay[int(Rank.SERGEANT)]


def test_one_bold_move_is_never_proof() -> None:
    # A piece that approached our known marshal five times still keeps weight on losing ranks.
    tables = shipped_likelihoods()
    v = tables.vector("near", "approach", int(Rank.MARSHAL))
    assert (v ** 5)[int(Rank.SCOUT)] >= tables.floor ** 5 > 0


def test_the_likelihood_file_round_trips_and_rejects_other_formats(tmp_path: Path) -> None:
    tables = shipped_likelihoods()
    path = tmp_path / "t.json"
    tables.save(path)
    again = Likelihoods.load(path)
    assert np.allclose(again.unmoved, tables.unmoved, atol=1e-6) and again.floor == tables.floor
    data = json.loads(path.read_text())
    data["format"] = "something/2"
    with pytest.raises(ValueError, match="not a perspecto-beliefs-likelihoods/1 file"):
        Likelihoods.from_json(data)
    with pytest.raises(ValueError, match="bluff floor"):
        tables.with_floor(0.0)


def _played_record(seed: int, plies: int = 300) -> GameRecord:
    rng = random.Random(seed)
    red = generate_setup(CLASSIC, rng.randrange(2**32)).placement(Side.RED)
    blue = generate_setup(CLASSIC, rng.randrange(2**32)).placement(Side.BLUE)
    game = RefereedGame(RulesOptions(move_limit=2000), red, blue)
    while game.referee.ply < plies and _random_move(game, rng):
        pass
    moves = [RecordedMove(str(e.side), str(e.move), e.outcome, e.attacker.label if e.attacker else None,
                          e.defender.label if e.defender else None) for e in game.referee.history]
    return GameRecord("classic", {"move_limit": 2000},
                      RecordedPlayer("a", {str(sq): r.label for sq, r in red.items()}),
                      RecordedPlayer("b", {str(sq): r.label for sq, r in blue.items()}), moves)


def test_fit_counts_what_the_tracker_sees_by_true_relation(tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    for seed in (1, 2):
        _played_record(seed).save(records / f"g{seed}.json")
    (records / "broken.json").write_text("{}")
    tables, counts = fit_records([records], floor=0.3)
    assert counts.games == 2 and len(counts.skipped) == 1 and "broken.json" in counts.skipped[0]
    # An independent count of the same behaviours, straight from the tracker and the true ranks.
    expected = {s: np.zeros((len(o), 3)) for s, o in OUTCOMES.items()}
    for seed in (1, 2):
        record = _played_record(seed)
        game = RefereedGame(RulesOptions(move_limit=2000),
                            {Square.parse(k): Rank.parse(v) for k, v in record.red.setup.items()},
                            {Square.parse(k): Rank.parse(v) for k, v in record.blue.setup.items()})
        tracker = GameTracker(game.referee)
        truth = [tracker.rank(pid) for pid in range(tracker.piece_count)]
        for m in record.moves:
            entry = game.referee.play(Move.parse(m.move))
            for b in tracker.step(entry):
                expected[b.situation][OUTCOMES[b.situation].index(b.outcome),
                                      relation(b.situation, truth[b.pid], b.known_rank)] += 1
    for situation in OUTCOMES:
        assert np.array_equal(counts.behaviour[situation], expected[situation])
    assert expected["near"].sum() > 0 and expected["threat"].sum() > 0
    assert np.all(tables.unmoved[:, [FLAG, BOMB]] == 1.0) and tables.floor == 0.3
    assert np.all(counts.samples.sum(axis=1)[:3] > 0)


def test_the_fit_and_calibrate_commands_run_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "records"
    records.mkdir()
    _played_record(4, plies=120).save(records / "g.json")
    out = tmp_path / "tables.json"
    assert main(["beliefs", "fit", str(records), "--out", str(out)]) == 0
    assert Likelihoods.load(out).source["games"] == 1
    assert main(["beliefs", "calibrate", "--data", str(tmp_path), "--records", str(records),
                 "--tables", str(out), "--floors", "0.5"]) == 0
    text = capsys.readouterr().out
    assert "posterior over 1 games" in text and "thesis pool" in text and "floor 0.5" in text
    assert "expected calibration error" in text
    assert main(["beliefs", "fit", str(tmp_path / "missing")]) == 1


def test_calibrate_scores_the_prior_on_the_shipped_setups_by_default(tmp_path: Path) -> None:
    from bot.commands.beliefs import _classic_setups

    assert _classic_setups(None) == gravon_path("classic")  # nothing beside the clone is needed
    assert _classic_setups(gravon_path("classic").parent) == gravon_path("classic")  # a folder holding the .xz
    (tmp_path / "gravon-setups-classic.txt").write_text("")
    assert _classic_setups(tmp_path) == tmp_path / "gravon-setups-classic.txt"  # plain text first
    assert _classic_setups(tmp_path / "mine.txt.gz") == tmp_path / "mine.txt.gz"  # a file as it is


# --- the prior and across games --------------------------------------------------------------------------


def _with(setup: Setup, **wanted: int) -> Setup:
    """``setup`` with the named ranks swapped onto the given position indices."""
    cells = list(setup.cells)
    for name, index in wanted.items():
        rank = Rank[name.upper()]
        at = next(i for i, r in enumerate(cells) if r == rank and i not in wanted.values())
        cells[at], cells[index] = cells[index], cells[at]
    return Setup(CLASSIC, tuple(cells))


def test_a_revealed_bomb_makes_the_hidden_piece_behind_it_likelier_the_flag() -> None:
    # Blue: a bomb on A7 (front row) with its flag behind it on A8; red's sergeant walks up column A and
    # hits the bomb. The fight shows the bomb; the pair statistics then raise A8's chance of the flag.
    red = _with(generate_setup(CLASSIC, 61), sergeant=0)
    blue = _with(generate_setup(CLASSIC, 62), bomb=0, flag=10, captain=9)
    game = RefereedGame(RulesOptions(), red.placement(Side.RED), blue.placement(Side.BLUE))
    sq = Square.parse
    for move in ("A4-A5", "J7-J6", "A5-A6", "J6-J7", "A6-A7"):
        game.play(Move.parse(move))
    assert game.referee.history[-1].defender == Rank.BOMB
    view = game.view(Side.RED)
    pid = view.position.piece_id(view.position.square(sq("A8").col, sq("A8").row))
    with_pairs, without = BeliefModel(view, Side.RED), BeliefModel(view, Side.RED, pairs=False)
    assert with_pairs.tracker.shown[view.position.piece_id(view.position.square(0, 6))]
    assert with_pairs.enemy_matrix()[pid, FLAG] > 1.5 * without.enemy_matrix()[pid, FLAG]


def test_the_prior_is_a_distribution_per_square_and_knows_where_flags_stand() -> None:
    table = human_prior(CLASSIC)
    assert table.shape == (40, 13) and np.allclose(table.sum(axis=1), 1.0)
    assert np.all(table[:, :12] > 0) and np.all(table[:, 12] == 0)
    # The flag: on the back row (indices 30..39) far more than the front row; scouts the other way.
    assert table[30:, FLAG].mean() > 20 * table[:10, FLAG].mean()
    assert table[:10, int(Rank.SCOUT)].mean() > table[30:, int(Rank.SCOUT)].mean()
    assert np.allclose(pool_shares(CLASSIC) * 40, _counts(CLASSIC))


def _flag_in_left_corner(seed: int) -> Setup:
    cells = list(generate_setup(CLASSIC, seed).cells)
    flag = cells.index(Rank.FLAG)
    cells[flag], cells[30] = cells[30], cells[flag]  # 30: the back row's left end (front row first)
    return Setup(CLASSIC, tuple(cells))


def _enemy_flag_chance(past: list[Setup], game_setup: Setup) -> tuple[float, int]:
    own = generate_setup(CLASSIC, 99).placement(Side.RED)
    game = Game(RulesOptions(), own, {sq: Rank.UNKNOWN for sq in game_setup.placement(Side.BLUE)})
    model = BeliefModel(game, Side.RED, opponent_setups=past)
    corner = CLASSIC.setup_squares(Side.BLUE)[30]
    pid = game.position.piece_id(game.position.square(corner.col, corner.row))
    flags = model.enemy_matrix()[:, FLAG]
    return float(flags[pid]), int(np.argmax(flags)) == pid


def test_an_opponent_that_always_hides_its_flag_in_the_left_corner_is_found_out_by_game_three() -> None:
    game_setups = [_flag_in_left_corner(seed) for seed in (101, 102, 103)]
    first, first_top = _enemy_flag_chance([], game_setups[0])
    second, _ = _enemy_flag_chance(game_setups[:1], game_setups[1])
    third, third_top = _enemy_flag_chance(game_setups[:2], game_setups[2])
    assert first < 0.2 and not first_top  # the human statistics alone: one flag square of several
    assert first < second < 0.5  # one past setup: a hint, not yet the answer
    assert third_top and third > 0.5  # by game three: the corner is where its flag is
    # An opponent that varies its setups keeps the human statistics' weight high.
    varied = [generate_setup(CLASSIC, seed) for seed in range(200, 210)]
    assert np.median(opponent_prior(CLASSIC, varied)[1][:12]) >= 16.0
    assert opponent_prior(CLASSIC, game_setups[:2])[1][FLAG] == min(ALPHAS)
    assert np.all(opponent_prior(CLASSIC, [])[1] == np.inf)


# --- measurement ----------------------------------------------------------------------------------------


@pytest.mark.slow  # scores 6,759 held-out setups and the pair statistics: a measurement
def test_the_prior_beats_the_uniform_pool_on_held_out_human_setups() -> None:
    report = prior_report(CLASSIC, gravon_path("classic"), pair_sample=150)  # the collection the project ships
    assert report.setups == 6759
    assert report.marginals < report.pool - 0.15  # 2.096 vs 2.270 nats a piece when measured
    assert report.balanced <= report.marginals + 1e-3
    # The pair statistics earn their place: revealed neighbours make the hidden pieces better predicted.
    for without, with_pairs in report.pairs.values():
        assert with_pairs < without - 0.01


def test_the_model_scores_better_than_the_thesis_pool_on_played_games(tmp_path: Path) -> None:
    records = tmp_path / "r"
    records.mkdir()
    for seed in (31, 32):
        _played_record(seed, plies=200).save(records / f"{seed}.json")
    report = posterior_report([records], [hard_only()], every=5)
    assert report.games == 2
    pool, hard = report.mean_loss()
    assert hard < pool
    assert report.bin_count.sum() > 0


def test_the_thesis_pool_baseline_is_the_hidden_pool() -> None:
    game = _refereed(40)
    tracker = GameTracker(game.referee)
    pool = thesis_pool(tracker, int(Side.BLUE), _counts(CLASSIC))
    blue = [pid for pid in range(tracker.piece_count) if tracker.owner[pid] == Side.BLUE]
    assert np.allclose(pool[blue], pool_shares(CLASSIC))


def test_the_reliability_plot_is_a_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from engine_ext.beliefs.calibration import plot_reliability

    records = tmp_path / "r"
    records.mkdir()
    _played_record(33, plies=60).save(records / "g.json")
    report = posterior_report([records], [hard_only()], every=3)
    out = tmp_path / "img" / "rel.png"
    assert plot_reliability(report, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_without_matplotlib_says_how_to_get_it_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed (the plot is an optional extra)
    assert main(["beliefs", "calibrate", "--records", str(tmp_path), "--plot", str(tmp_path / "rel.png")]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and "perspecto[plot]" in err
    assert not (tmp_path / "rel.png").exists()


def test_the_show_command_prints_each_hidden_piece_with_its_likeliest_ranks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "g.json"
    record = _played_record(34, plies=80)
    record.save(path)
    assert main(["beliefs", "show", str(path), "--ply", "40", "--side", "blue", "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "g.json after 40 plies: red's pieces as blue sees them"
    hidden = [line for line in lines[1:] if "really" in line]
    assert hidden and all(line.count(" 0.") + line.count(" 1.") == 2 for line in hidden)
    assert main(["beliefs", "show", str(path), "--own"]) == 0
    assert "red's own pieces as blue is modelled to see them" in capsys.readouterr().out  # red by default
    assert main(["beliefs", "show", str(path), "--ply", "9999"]) == 2
    assert main(["beliefs", "show", str(tmp_path / "missing.json")]) == 1
