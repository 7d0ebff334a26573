"""``perspecto setups``: browse, show, generate and check setups, with a board picture."""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from bot.tables import print_table
from engine_ext.rules.pieces import RANK_STYLES, Rank, Side
from engine_ext.rules.rulesets import RULESETS, Ruleset, SetupError, get_ruleset
from setups.generator import floor_violations, generate_setup
from setups.library import LibraryError, NamedSetup, SetupLibrary, read_setup_file
from setups.notation import LEGEND, Notation, Setup, format_setup, parse_setup
from setups.stats import load_stats

# Colours say what a piece is for at a glance: the flag and bombs stand out, the top pieces are bold.
_STYLE: dict[Rank | None, str] = {
    Rank.FLAG: "bold black on yellow",
    Rank.BOMB: "bold red",
    Rank.MARSHAL: "bold magenta",
    Rank.GENERAL: "bold magenta",
    Rank.COLONEL: "magenta",
    Rank.SPY: "bold blue",
    Rank.MINER: "green",
    Rank.SCOUT: "cyan",
    None: "dim",
}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "setups",
        help="list, show, generate and check setups",
        description="The setup library, the generator and a legality check, with a board picture. Setups "
        "are written in three text notations (american, ucc, gravon) and drawn on the board with the rank "
        f"symbols of --style; one legend of all of them: {LEGEND}.",
    )
    actions = parser.add_subparsers(dest="setups_action", metavar="ACTION", required=True)

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", action="append", type=Path, default=[], metavar="DIR",
                        help="also read the user setup files (*.toml) in DIR (repeatable)")
    display = argparse.ArgumentParser(add_help=False)
    display.add_argument("--side", choices=["red", "blue"], default="red",
                         help="label the board rows as this side plays them (default red)")
    display.add_argument("--style", choices=RANK_STYLES, default="american",
                         help=f"rank symbols on the board: american (marshal 10, spy 1) or european (marshal 1, "
                         f"spy S); legend: {LEGEND}")
    display.add_argument("--notation", choices=[n.value for n in Notation], default=Notation.AMERICAN.value,
                         help=f"notation of the printed text (default american); legend: {LEGEND}")

    p_list = actions.add_parser("list", parents=[common], help="the named setups")
    p_list.add_argument("--ruleset", default=None, help="only this ruleset (default: all)")
    p_list.set_defaults(func=run_list)

    p_show = actions.add_parser("show", parents=[common, display], help="one named setup")
    p_show.add_argument("name")
    p_show.add_argument("--ruleset", default=None, help="the ruleset the name belongs to")
    p_show.set_defaults(func=run_show)

    p_gen = actions.add_parser("generate", parents=[display], help="a new human-like setup")
    p_gen.add_argument("--seed", type=int, default=None, help="reproduce a setup (default: a random seed)")
    p_gen.add_argument("--ruleset", default="classic", choices=sorted(RULESETS))
    p_gen.add_argument("--plain", action="store_true",
                       help="print only the rows in --notation (front row first), nothing else")
    p_gen.set_defaults(func=run_generate)

    p_check = actions.add_parser("check", parents=[display], help="is a setup file legal? (exit 1 if not)")
    p_check.add_argument("file", help="a setup text file (rows, front row first, in any notation: "
                         f"{LEGEND}) or a library .toml; - for stdin")
    p_check.add_argument("--ruleset", default="classic", choices=sorted(RULESETS))
    p_check.add_argument("--input-notation", dest="input_notation", default=None,
                         choices=[n.value for n in Notation],
                         help=f"the file's notation (default: detect); legend: {LEGEND}")
    p_check.set_defaults(func=run_check)


# The line above the rows in the output of show, generate and check; ``check`` finds the rows by it, so
# that a saved ``generate`` output is a setup file ``check`` accepts.
NOTATION_HEADING = " notation, front row first:"


def _console() -> Console:
    # Created per call so output follows whatever sys.stdout is at that moment (tests capture it).
    return Console(file=sys.stdout, highlight=False)


def board_table(setup: Setup, side: Side = Side.RED, style: str = "american") -> Table:
    """The setup as it stands on the board: the row next to the lakes at the top, front row first."""
    ruleset = setup.ruleset
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 1), show_edge=False)
    table.add_column("", justify="right", style="dim")
    for col in range(ruleset.width):
        table.add_column("ABCDEFGHIJKL"[col], justify="center")
    squares = ruleset.setup_squares(side)
    # The row just in front of the setup area, to show which squares face a lake.
    ahead = squares[0].row + (1 if side == Side.RED else -1)
    if 0 <= ahead < ruleset.height:
        lake_cells = [
            Text("~~", style="blue") if any(sq.col == c and sq.row == ahead for sq in ruleset.lakes) else Text("")
            for c in range(ruleset.width)
        ]
        table.add_row(Text(str(ahead + 1)), *lake_cells)
    for row_index, row in enumerate(setup.rows()):
        board_row = squares[row_index * ruleset.width].row + 1
        cells = [Text("." if r is None else r.symbol(style), style=_STYLE.get(r, "")) for r in row]
        table.add_row(Text(str(board_row)), *cells)
    return table


def board_legend(style: str = "american") -> str:
    """One line under a board: what its symbols are (they are not the text notations' letters)."""
    ranks = sorted((rank for rank in Rank if rank.movable and rank is not Rank.UNKNOWN), reverse=True)
    symbols = " ".join(f"{rank.symbol(style)}={rank.label}" for rank in [*ranks, Rank.BOMB, Rank.FLAG])
    return f"board ({style}): {symbols}; every notation: {LEGEND}"


def _flag_square(setup: Setup, side: Side = Side.RED) -> str:
    flags = setup.index_of(Rank.FLAG)
    return str(setup.square(flags[0], side)) if flags else "-"


def _print_setup(console: Console, entry: NamedSetup, args: argparse.Namespace) -> None:
    side = Side.parse(args.side)
    setup = entry.setup
    console.print(Text(f"{entry.name} ({setup.ruleset.name})", style="bold"))
    if entry.description:
        console.print(entry.description)
    if entry.tags:
        console.print(Text("tags: " + ", ".join(entry.tags), style="dim"))
    print_table(console, board_table(setup, side, args.style))
    console.print(Text(board_legend(args.style), style="dim"), soft_wrap=True)
    console.print(f"{args.notation}{NOTATION_HEADING}")
    console.print(format_setup(setup, args.notation), markup=False)
    stats = load_stats(setup.ruleset)
    if stats is not None:
        console.print(f"human-likeness: {stats.score(setup)}")
    below_floor = floor_violations(setup)
    if below_floor:
        console.print(Text("below the generator's floor: " + "; ".join(below_floor), style="dim"))


def _library(args: argparse.Namespace) -> SetupLibrary:
    library = SetupLibrary.load(args.dir)
    for problem in library.errors:
        print(f"warning: skipped {problem}", file=sys.stderr)
    return library


def run_list(args: argparse.Namespace) -> int:
    console = _console()
    library = _library(args)
    ruleset: Ruleset | None = get_ruleset(args.ruleset) if args.ruleset else None
    table = Table(show_header=True, header_style="bold")
    for title in ("ruleset", "name", "flag", "human"):
        table.add_column(title, no_wrap=True)
    table.add_column("idea", overflow="fold", ratio=1)
    for entry in library.entries(ruleset):
        stats = load_stats(entry.ruleset)
        score = f"{stats.score(entry.setup).normalised:.2f}" if stats is not None else "-"
        table.add_row(entry.ruleset.name, entry.name, _flag_square(entry.setup), score, entry.description)
    print_table(console, table)
    console.print(f"{len(library.entries(ruleset))} setup(s); 'human' is 1.00 for a typical Gravon player's setup")
    return 0


def run_show(args: argparse.Namespace) -> int:
    library = _library(args)
    try:
        entry = library.lookup(args.name, args.ruleset)
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 1
    _print_setup(_console(), entry, args)
    return 0


def run_generate(args: argparse.Namespace) -> int:
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    ruleset = get_ruleset(args.ruleset)
    entry = NamedSetup(name=f"generated-{seed}", setup=generate_setup(ruleset, seed),
                       description=f"generated with seed {seed}", source="generator")
    if args.plain:
        print(format_setup(entry.setup, args.notation))
        return 0
    _print_setup(_console(), entry, args)
    return 0


def setup_text(text: str, ruleset: Ruleset) -> tuple[str, str | None]:
    """The rows of a setup file and the notation it names, if any: the rows under a
    "<notation> notation, front row first:" heading (the output of show and generate, saved), else every
    line that is neither blank nor a ``#`` comment."""
    lines = text.splitlines()
    heading = NOTATION_HEADING.strip()
    for number, line in enumerate(lines):
        notation = line.strip().removesuffix(heading).strip()
        if line.strip().endswith(heading) and notation in {n.value for n in Notation}:
            return "\n".join(lines[number + 1:number + 1 + ruleset.setup_rows]), notation
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#")), None


def run_check(args: argparse.Namespace) -> int:
    console = _console()
    path = Path(args.file)
    try:
        if args.file != "-" and path.suffix == ".toml":
            entries = read_setup_file(path)
            for entry in entries:
                console.print(f"{entry.name} ({entry.ruleset.name}): legal")
            console.print(f"{path}: {len(entries)} legal setup(s)")
            return 0
        text = sys.stdin.read() if args.file == "-" else path.read_text(encoding="utf-8")
        ruleset = get_ruleset(args.ruleset)
        rows, named = setup_text(text, ruleset)
        setup = parse_setup(rows, ruleset, args.input_notation or named)
    except (SetupError, LibraryError) as exc:
        console.print(Text(f"illegal: {exc}", style="bold red"))
        return 1
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    _print_setup(console, NamedSetup(name=str(path), setup=setup), args)
    console.print(Text("legal", style="bold green"))
    return 0
