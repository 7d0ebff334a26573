"""``perspecto bench``: the bench signature, one node count over fixed positions (engine_ext/lab/signature.py)."""

from __future__ import annotations

import argparse

from rich.console import Console

from engine_ext.engine.facade import MAX_SEARCH_DEPTH
from engine_ext.engine.settings import BUILTIN_ENGINE_SETTINGS
from engine_ext.lab.signature import DEFAULT_DEPTH, DEFAULT_PROFILE, PositionCount, bench_signature

# Every built-in profile that searches (the random mover has no node to count).
SEARCHING_PROFILES = tuple(name for name, settings in BUILTIN_ENGINE_SETTINGS.items() if settings.engine != "random")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="the bench signature: nodes searched over fixed positions at a fixed depth (last line)",
        description="Search the 16 bench positions (bench/engine's) to a fixed depth on one thread, no "
        "deadline, with a built-in engine profile, and print each position's nodes and time, then the "
        "nodes per second, and on the last line the total node count alone: the signature. A change "
        "that should not alter the search leaves it unchanged (docs/lab.md, \"Bench signature\").",
    )
    p.add_argument("--depth", type=int, default=DEFAULT_DEPTH,
                   help=f"plies searched at every position (default %(default)s; 1..{MAX_SEARCH_DEPTH})")
    p.add_argument("--profile", default=DEFAULT_PROFILE, choices=SEARCHING_PROFILES,
                   help="built-in engine profile whose search settings are used (default %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # The table and the rate go to stderr, the count alone to stdout (as `perspecto perft` does):
    # `perspecto bench | tail -1` and `$(perspecto bench)` both give the signature.
    console = Console(stderr=True, highlight=False)
    if not 1 <= args.depth <= MAX_SEARCH_DEPTH:
        console.print(f"[red]--depth must be 1..{MAX_SEARCH_DEPTH}, not {args.depth}[/red]")
        return 2
    console.print(f"bench: profile {args.profile}, depth {args.depth}, one thread, no deadline")
    console.print(f"{'position':<16} {'move':>8} {'depth':>5} {'nodes':>13} {'ms':>8}")

    def show(count: PositionCount) -> None:
        # A line as each position finishes (a deep bench takes a while), not a table at the end.
        console.print(f"{count.label:<16} {count.move:>8} {count.depth:>5} {count.nodes:>13,} "
                      f"{count.seconds * 1000:>8.0f}")

    signature = bench_signature(args.depth, args.profile, progress=show)
    console.print(f"total time (ms) : {signature.seconds * 1000:.0f}")
    console.print(f"nodes/second    : {signature.nodes_per_second:,.0f}")
    print(signature.nodes, flush=True)
    return 0
