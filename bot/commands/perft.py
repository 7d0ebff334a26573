"""``perspecto perft``: count leaf positions at a depth, to check move generation."""

from __future__ import annotations

import argparse
import time

from rich.console import Console

from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import get_ruleset


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "perft",
        help="count the leaf positions at exactly depth N (checks move generation)",
        description="Count the leaf positions at exactly depth N from a full-information position. "
        "Scouts attack at range, the repetition rules are off, and a position whose flag has been "
        "taken has no moves. The count is printed alone on the last line.",
    )
    p.add_argument("--board", required=True, help="board code: one letter a square, row 1 first (Gravon letters)")
    p.add_argument("--turn", default="red", choices=["red", "blue"], help="side to move (default red)")
    p.add_argument("--depth", type=int, required=True, help="plies to search")
    p.add_argument("--ruleset", default="classic", help="ruleset giving board size and lakes (default classic)")
    p.add_argument("--divide", action="store_true", help="also print the count below each first move")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    if args.depth < 0:
        console.print("[red]--depth must be 0 or more[/red]")
        return 2
    options = RulesOptions(ruleset=get_ruleset(args.ruleset), range_attacks=True, two_squares=None, more_squares=False)
    try:
        game = Game.from_board_code(args.board, options, Side.parse(args.turn))
    except ValueError as exc:
        console.print(f"[red]bad board: {exc}[/red]")
        return 2
    pos = game.position.copy()
    started = time.perf_counter()
    if args.divide and args.depth > 0:
        total = 0
        for code in pos.moves(False):
            pos.make(code)
            n = pos.perft(args.depth - 1)
            pos.unmake()
            total += n
            print(f"{game.move_of(code)}: {n}")
    else:
        total = pos.perft(args.depth)
    elapsed = time.perf_counter() - started
    console.print(f"perft depth {args.depth}: {total} leaves in {elapsed:.3f} s")
    print(total)
    return 0
