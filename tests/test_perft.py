"""perft: the compiled count against the plain reference, and the CLI's output contract."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.reference_rules import ReferenceBoard
from engine_ext.rules.rulesets import CLASSIC
from tests.helpers import board_code, play_random, random_game

REPO = Path(__file__).resolve().parents[1]
START = "JKMBHFDIJDEDGFHLFBCEBBDHDFEEGIBDEBGHGIDDAA__AA__AAAA__AA__AANNVQTTWXTUNYPNPORQPQPQSPQRPRTUPUNNRPSVSS"
PERFT_OPTIONS = RulesOptions(two_squares=None, more_squares=False)


def reference_perft(code: str, depth: int, blue: bool = False) -> int:
    game = Game.from_board_code(code, PERFT_OPTIONS)
    from engine_ext.rules.pieces import Side

    board = ReferenceBoard.from_pieces(CLASSIC, game.pieces(), Side.BLUE if blue else Side.RED)
    return board.perft(depth)


def run_cli(*args: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "bot.cli", "perft", *args], cwd=REPO, capture_output=True, text=True, check=True
    )
    return out.stdout.strip().splitlines()


def test_start_position_counts_pinned() -> None:
    # Pinned from the reference generator; a change here means move generation changed.
    game = Game.from_board_code(START, PERFT_OPTIONS)
    assert [game.position.copy().perft(d) for d in range(4)] == [1, 11, 44, 554]
    assert reference_perft(START, 3) == 554


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_midgame_positions_match_the_reference(seed: int) -> None:
    code = play_random(random_game(CLASSIC, seed, two_squares=None, more_squares=False), 80, seed).board_code()
    game = Game.from_board_code(code, PERFT_OPTIONS)
    assert game.position.copy().perft(3) == reference_perft(code, 3)


def test_flag_taken_position_has_no_moves_but_counts_as_a_leaf() -> None:
    # The red scout can take the flag at range; that line ends there.
    code = board_code({"A1": "M", "A5": "D", "A10": "Y", "J10": "P"})
    game = Game.from_board_code(code, PERFT_OPTIONS)
    assert game.position.copy().perft(1) == reference_perft(code, 1)
    assert game.position.copy().perft(2) == reference_perft(code, 2)


def test_cli_prints_the_count_alone_on_the_last_line() -> None:
    lines = run_cli("--board", START, "--turn", "red", "--depth", "3")
    assert lines[-1] == "554"
    lines = run_cli("--board", START, "--turn", "blue", "--depth", "2")
    assert lines[-1] == str(reference_perft(START, 2, blue=True))


def test_cli_divide_sums_to_the_total() -> None:
    lines = run_cli("--board", START, "--depth", "3", "--divide")
    assert sum(int(line.split(": ")[1]) for line in lines[:-1]) == int(lines[-1]) == 554


def test_cli_rejects_a_bad_board() -> None:
    out = subprocess.run([sys.executable, "-m", "bot.cli", "perft", "--board", "XYZ", "--depth", "1"],
                         cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 2 and "bad board" in out.stderr
