"""``perspecto rank-values``: rank values from who captured and detected whom (the rank-value study).

Without a source the study's own counts (29,397 Gravon games) are used; ``--counts FILE`` reads other
counts in the same layout and ``--records DIR`` counts the project's own game records. The last line of
output is always the eleven values, marshal .. bomb, when ``--detection`` is given. See
docs/rank-values.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bot.tables import print_table
from engine_ext.research.rank_values import (
    LITERATURE,
    LITERATURE_NAMES,
    MODELS,
    RANKS,
    STUDY_FACTORS,
    RankCounts,
    RankValues,
    counts_to_json,
    load_counts,
    round_half_up,
    solve_model,
    tally_directory,
    write_scale,
)
from engine_ext.rules.pieces import Rank

PROG = "perspecto rank-values"
MODEL_TEXT = {
    1: "every rank d",
    2: "as 1, spy and bomb 2.5·d",
    3: "as 2, captain, lieutenant, sergeant and scout 0 (miner keeps d)",
}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "rank-values",
        help="derive rank values from capture and detection counts (the rank-value study)",
        description=(
            "Solve the rank-value study's material and detection equations (marshal = 100) and print "
            "marshal general colonel major captain lieutenant sergeant miner scout spy bomb as the last line."
        ),
    )
    p.add_argument("--model", type=int, choices=MODELS, default=1,
                   help="detection-factor model of the study's section 2.3 (default 1)")
    p.add_argument("--detection", type=_factor, metavar="D",
                   help="detection factor d, 0..1 (the study used 0, 0.1, 0.2, 0.3, 0.4)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--counts", type=Path, metavar="FILE", help="count file in the study's layout")
    source.add_argument("--records", type=Path, metavar="DIR", help="count captures in these game records")
    p.add_argument("--ruleset", metavar="NAME", help="with --records: only games of this ruleset")
    p.add_argument("--scout-runs-reveal", action="store_true",
                   help="with --records: a move of more than one square makes the scout known")
    p.add_argument("--save-counts", type=Path, metavar="FILE",
                   help="write the counts used, in the count layout")
    p.add_argument("--table", action="store_true",
                   help="print all models for several factors beside the literature scales")
    p.add_argument("--factors", type=_factor_list, default=STUDY_FACTORS, metavar="LIST",
                   help="with --table: comma-separated detection factors (default 0,0.1,0.2,0.3,0.4)")
    p.add_argument("--write-scale", type=Path, metavar="FILE",
                   help="write the values as a value-scale TOML file")
    p.add_argument("--scale-name", metavar="NAME", help="name written in the scale file")
    p.add_argument("--flag-value", type=int, metavar="N",
                   help="flag value for the scale file (default: the study's 0)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.detection is None and not (args.table or args.save_counts):
        return _error("give --detection D (the study used 0, 0.1, 0.2, 0.3, 0.4), or --table", 2)
    if args.write_scale and args.detection is None:
        return _error("--write-scale needs --detection D", 2)
    if (args.ruleset or args.scout_runs_reveal) and args.records is None:
        return _error("--ruleset and --scout-runs-reveal go with --records", 2)
    try:
        counts, notes = _load(args)
    except ValueError as exc:
        return _error(str(exc), 1)
    for note in notes:
        print(note)
    if args.save_counts:
        args.save_counts.write_text(counts_to_json(counts), encoding="utf-8")
        print(f"counts written to {args.save_counts}")
    if args.table:
        _print_tables(counts, args.factors)
    if args.detection is None:
        return 0
    try:
        result = solve_model(counts, args.model, args.detection)
    except ValueError as exc:
        return _error(str(exc), 1)
    d = _fmt(args.detection)
    if args.write_scale:
        name = args.scale_name or f"rank-{'records' if args.records else 'study'}-m{args.model}-d{d}"
        write_scale(
            args.write_scale, result.values, name=name, flag_value=args.flag_value,
            notes=[f"Written by perspecto rank-values: model {args.model}, detection {d}, marshal = 100.",
                   f"Counts: {_source(counts)}."],
        )
        print(f"scale {name!r} written to {args.write_scale}")
    print(f"model {args.model}, d = {d}: detection factor {_factors_text(result)}")
    print(f"counts: {_source(counts)}")
    print(f"elimination left the {result.left_out.label} equation unused (Appendix A); these values miss it "
          f"by {float(result.residual):+.1%} of its terms' total size")
    print(" ".join(r.label for r in RANKS))
    print(" ".join(str(v) for v in result.rounded()))
    return 0


def _load(args: argparse.Namespace) -> tuple[RankCounts, list[str]]:
    if args.records is None:
        return load_counts(args.counts), []
    tally, skipped = tally_directory(
        args.records, ruleset=args.ruleset, scout_runs_reveal=args.scout_runs_reveal
    )
    for line in skipped[:10]:
        print(f"skipped {line}", file=sys.stderr)
    if len(skipped) > 10:
        print(f"... and {len(skipped) - 10} more skipped", file=sys.stderr)
    where = f"game records under {args.records}" + (f" (ruleset {args.ruleset})" if args.ruleset else "")
    note = f"counted {tally.games} {where}, {len(skipped)} file(s) skipped"
    if tally.games == 0:
        raise ValueError(f"no game records counted under {args.records}")
    return tally.counts(f"{tally.games} {where}"), [note]


def _print_tables(counts: RankCounts, factors: Sequence[Fraction]) -> None:
    console = Console()
    problems: list[str] = []
    for model in MODELS:
        table = Table(title=f"Model {model}: {MODEL_TEXT[model]}", caption=None)
        table.add_column("rank")
        for ref in LITERATURE:
            table.add_column(ref, justify="right", style="dim")
        columns: list[RankValues | None] = []
        for f in factors:
            header = f"d={_fmt(f)}" + (f"\nS/B {_fmt(f * Fraction(5, 2))}" if model > 1 else "")
            table.add_column(header, justify="right")
            try:
                columns.append(solve_model(counts, model, f))
            except ValueError as exc:
                columns.append(None)
                problems.append(f"model {model}, d = {_fmt(f)}: {exc}")
        for rank in RANKS:
            cells = [rank.label, *(_lit(LITERATURE[ref][rank]) for ref in LITERATURE)]
            cells += ["–" if c is None else str(round_half_up(c.values[rank])) for c in columns]
            table.add_row(*cells)
        print_table(console, table)  # whole in a pipe or a file, however many --factor columns
    flags = ", ".join(f"{ref} {_lit(scale[Rank.FLAG])}" for ref, scale in LITERATURE.items())
    console.print(f"Counts: {_source(counts)}. Marshal = 100; values rounded. "
                  f"Flag left out (0 by the study's definition; literature: {flags}).")
    refs = "; ".join(f"{k} {v}" for k, v in LITERATURE_NAMES.items())
    console.print(f"Literature (study, section 1.1): {refs}")
    for line in problems:
        console.print(f"not solved: {line}")


def _source(counts: RankCounts) -> str:
    games = f" ({counts.games} games)" if counts.games and str(counts.games) not in counts.source else ""
    return (counts.source or "unnamed counts") + games


def _factors_text(result: RankValues) -> str:
    groups: dict[Fraction, list[str]] = {}
    for rank in RANKS:
        groups.setdefault(result.factors[rank], []).append(rank.label)
    if len(groups) == 1:
        return f"every rank {_fmt(result.detection)}"
    return "; ".join(f"{_fmt(f)} for {', '.join(names)}" for f, names in groups.items())


def _factor(text: str) -> Fraction:
    try:
        value = Fraction(text.strip())
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a detection factor lies in 0..1, not {text}")
    return value


def _factor_list(text: str) -> tuple[Fraction, ...]:
    items = [t for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError("no factors given")
    return tuple(_factor(t) for t in items)


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


def _lit(x: Fraction) -> str:
    """Literature values the way the study prints them (12½, ½, 6¼)."""
    whole, part = divmod(x, 1)
    marks = {Fraction(1, 2): "½", Fraction(1, 4): "¼", Fraction(3, 4): "¾"}
    if part == 0:
        return str(whole)
    if part in marks:
        return (str(whole) if whole else "") + marks[part]
    return f"{float(x):g}"


def _error(message: str, code: int) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return code
