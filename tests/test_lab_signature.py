"""The bench signature (engine_ext/lab/signature.py, ``perspecto bench``): the pinned node counts.

A change that should not alter the search must leave these counts as they are; a change that does
alter it updates them here in the same commit, on purpose (docs/lab.md, "Bench signature").
"""

from __future__ import annotations

import pytest

from bot.cli import main
from engine_ext.lab.signature import (
    BENCH_GAMES,
    DEFAULT_DEPTH,
    bench_positions,
    bench_settings,
    bench_signature,
)
from engine_ext.rules.pieces import Side

# The signature of the default bench: the perspecto profile, depth 8, the 16 positions.
DEFAULT_SIGNATURE = 132_884_971  # 142_585_106 until beliefs became the default (issue 22)
# The perspecto profile's full depth (9 plies: its captures-only plies too); about 16 s.
FULL_DEPTH_SIGNATURE = 382_656_914  # 413_405_535 before beliefs


@pytest.mark.long
def test_the_default_bench_signature_is_pinned() -> None:
    signature = bench_signature()
    assert (signature.profile, signature.depth) == ("perspecto", DEFAULT_DEPTH)
    assert len(signature.positions) == 16
    assert all(p.depth == DEFAULT_DEPTH for p in signature.positions)
    assert signature.nodes == DEFAULT_SIGNATURE


@pytest.mark.slow
def test_the_full_depth_bench_signature_is_pinned() -> None:
    assert bench_signature(9).nodes == FULL_DEPTH_SIGNATURE


@pytest.mark.parametrize(("profile", "depth", "nodes"), [("pemm", 4, 285_764), ("minimax", 5, 681_350)])
def test_other_profiles_have_their_own_signature(profile: str, depth: int, nodes: int) -> None:
    assert bench_signature(depth, profile).nodes == nodes


def test_the_positions_are_bench_engines_sixteen() -> None:
    positions = bench_positions()
    assert [p.label for p in positions] == [f"game {g} ply {ply:3d}" for g in (1, 2) for ply in range(20, 161, 20)]
    # Each is the side to move's own view: its pieces known, the opponent's hidden until shown.
    for position in positions:
        view = position.view
        assert view.side_to_move == (Side.RED if int(position.label[-3:]) % 2 == 0 else Side.BLUE)
        assert len(view.history) == int(position.label[-3:])
        assert not view.is_hidden(view.side_to_move)
        assert view.is_hidden(view.side_to_move.other)
    # The frozen games are played out to their last move (a game that ended early would lose positions).
    assert all(len(game.moves.split()) == 160 for game in BENCH_GAMES)
    quick = bench_positions(1, 30, 120)
    assert [p.label for p in quick] == [f"game 1 ply {ply:3d}" for ply in (30, 60, 90, 120)]


def test_the_count_does_not_depend_on_threads() -> None:
    positions = bench_positions(1, 40, 160)
    one = bench_signature(6, positions=positions)
    two = bench_signature(6, settings=bench_settings().model_copy(update={"threads": 2}), positions=positions)
    assert [p.nodes for p in one.positions] == [p.nodes for p in two.positions]
    assert [p.move for p in one.positions] == [p.move for p in two.positions]


def test_the_random_mover_has_no_signature() -> None:
    with pytest.raises(ValueError, match="does not search"):
        bench_settings("random")
    with pytest.raises(ValueError, match=r"games must be 1\.\.2"):
        bench_positions(3)


def test_perspecto_bench_prints_the_count_alone_on_its_last_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--depth", "4", "--profile", "pemm"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "285764"
    assert "game 2 ply 160" in err
    assert "nodes/second" in err


def test_perspecto_bench_refuses_a_bad_depth(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--depth", "25"]) == 2
    assert "--depth must be 1..24" in capsys.readouterr().err
