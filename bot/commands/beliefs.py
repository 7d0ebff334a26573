"""``perspecto beliefs``: the belief model's tables and its measurement (docs/engine.md "Beliefs").

- ``perspecto beliefs fit RECORDS... [--out FILE] [--floor F]``: count behaviours by true rank in lab
  game records and write the likelihood tables the model loads (default: the shipped
  engine_ext/beliefs/data/likelihoods.json);
- ``perspecto beliefs calibrate [--records DIR...] [--data FILE|DIR] [--plot PNG]``: the prior's log-loss on
  the held-out human setups, and with records the posterior's log-loss by ply and its reliability;
- ``perspecto beliefs show RECORD [--ply N] [--side red|blue] [--own]``: what one side believes about
  the other's hidden pieces at a ply of a saved game (``--own``: what it models the other side to
  believe about its own), each piece with its likeliest ranks and, from the record, what it really was.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from engine_ext.beliefs.evidence import (
    DEFAULT_FLOOR,
    DEFAULT_REPEATS,
    Likelihoods,
    likelihoods_path,
    shipped_likelihoods,
)

PROG = "perspecto beliefs"
# matplotlib is an optional extra: the plot is a figure for the docs, nothing else needs it.
PLOT_INSTALL = "pip install 'perspecto[plot]' (in a clone: PERSPECTO_EXTRAS=dev,plot scripts/bootstrap)"


def _classic_setups(data: Path | None) -> Path:
    """The Gravon classic setups to score the prior on: ``--data`` (a file, or a directory holding
    gravon-setups-classic.txt, plain or .xz/.gz), else the collection the project ships."""
    from setups.stats import gravon_path

    if data is None:
        return gravon_path("classic")
    if data.is_dir():
        for name in ("gravon-setups-classic.txt", "gravon-setups-classic.txt.xz", "gravon-setups-classic.txt.gz"):
            if (data / name).is_file():
                return data / name
        return data / "gravon-setups-classic.txt"
    return data


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("beliefs", help="fit and measure the belief model (what hidden pieces probably are)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="beliefs_command", required=True)
    fit = sub.add_parser("fit", help="fit the soft-evidence tables from game records")
    fit.add_argument("records", nargs="+", type=Path, metavar="RECORDS", help="record files or directories")
    fit.add_argument("--out", type=Path, default=None, help=f"tables to write (default {likelihoods_path()})")
    fit.add_argument("--floor", type=float, default=DEFAULT_FLOOR,
                     help=f"the bluff floor of every behaviour's likelihood ratio (default {DEFAULT_FLOOR})")
    fit.add_argument("--repeats", type=float, default=DEFAULT_REPEATS,
                     help="weight of a repeated behaviour (same piece, same known rank), 0..1 "
                          f"(default {DEFAULT_REPEATS:g}: counted once)")
    fit.add_argument("--note", default="",
                     help="how the records were made (e.g. the match command), kept in the tables' source")
    fit.set_defaults(func=run_fit)
    cal = sub.add_parser("calibrate", help="log-loss and reliability of the prior and the posterior")
    cal.add_argument("--records", nargs="*", type=Path, default=[], metavar="DIR",
                     help="game records to score the posterior on (played from held-out setups)")
    cal.add_argument("--data", type=Path, default=None,
                     help="the Gravon classic setups: a file (plain, .xz or .gz) or a directory holding "
                          "gravon-setups-classic.txt (default: the shipped setups/data/gravon-setups-classic.txt.xz)")
    cal.add_argument("--tables", type=Path, default=None, help="likelihood tables (default: the shipped ones)")
    cal.add_argument("--floors", type=str, default="",
                     help="comma-separated bluff floors to score the tables with besides their own")
    cal.add_argument("--repeats", type=str, default="",
                     help="comma-separated weights of repeated behaviours to score the tables with besides their own")
    cal.add_argument("--every", type=int, default=2, help="score every N plies (default 2)")
    cal.add_argument("--plot", type=Path, default=None,
                     help="write a reliability plot (needs matplotlib: the 'plot' extra)")
    cal.set_defaults(func=run_calibrate)


    show = sub.add_parser("show", help="the beliefs at one ply of a saved game")
    show.add_argument("record", type=Path, metavar="RECORD", help="a game record (perspecto-record/1)")
    show.add_argument("--ply", type=int, default=None, help="after this many plies (default: the end)")
    show.add_argument("--side", default="red", help="whose beliefs: red or blue (default red)")
    show.add_argument("--own", action="store_true", help="the side's own pieces as it models the other seeing them")
    show.add_argument("--top", type=int, default=3, help="ranks shown a piece (default 3)")
    show.set_defaults(func=run_show)


def run_show(args: argparse.Namespace) -> int:
    from engine_ext.beliefs import BeliefModel
    from engine_ext.beliefs.fit import replay, start_game
    from engine_ext.rules.pieces import Rank, Side
    from engine_ext.rules.record import GameRecord
    from engine_ext.rules.rulesets import Square

    try:
        side = Side.parse(args.side)
        record = GameRecord.load(args.record)
        game = start_game(record)
        truth = [Rank(game.position.piece(pid)[2]) for pid in range(game.position.piece_count)]
        plies = len(record.moves) if args.ply is None else args.ply
        if not 0 <= plies <= len(record.moves):
            return _error(f"--ply must be 0..{len(record.moves)}", 2)
        for _, _entry in zip(range(plies), replay(record, game), strict=False):  # range first: no extra move
            pass
        model = BeliefModel(game, side)
    except (OSError, ValueError, KeyError) as exc:
        return _error(str(exc), 1)
    owner = side if args.own else side.other
    matrix = model.matrix(owner)
    pos = game.position
    whose = f"{side}'s own pieces as {side.other} is modelled to see them" if args.own else \
        f"{owner}'s pieces as {side} sees them"
    print(f"{args.record.name} after {game.ply} plies: {whose}")
    rows = []
    for pid in range(pos.piece_count):
        sq, piece_owner, _rank, moves = pos.piece(pid)
        if piece_owner != owner or sq < 0:
            continue
        square = Square(*pos.coords(sq))
        if model.tracker.shown[pid]:
            rows.append((square.row, square.col, f"{square}  {truth[pid].label} (revealed)"))
            continue
        order = sorted(range(12), key=lambda r: -matrix[pid, r])[: max(1, args.top)]
        guess = ", ".join(f"{Rank(r).label} {matrix[pid, r]:.2f}" for r in order)
        state = "moved" if moves > 0 else "unmoved"
        rows.append((square.row, square.col, f"{square}  {guess}  ({state}; really {truth[pid].label})"))
    for _row, _col, text in sorted(rows, key=lambda item: (-item[0], item[1])):
        print(f"  {text}")
    return 0


def run_fit(args: argparse.Namespace) -> int:
    from engine_ext.beliefs.fit import fit_records

    if not 0.0 < args.floor <= 1.0:
        return _error("--floor must be in (0, 1]", 2)
    if not 0.0 <= args.repeats <= 1.0:
        return _error("--repeats must be in [0, 1]", 2)
    try:
        tables, counts = fit_records(args.records, args.floor, note=args.note, repeats=args.repeats)
    except (OSError, ValueError) as exc:
        return _error(str(exc), 1)
    for line in counts.skipped[:10]:
        print(f"skipped {line}", file=sys.stderr)
    out = args.out or likelihoods_path()
    tables.save(out)
    print(f"{counts.games} games ({counts.plies} plies) counted, {len(counts.skipped)} skipped; "
          f"tables written to {out}")
    for situation, table in counts.behaviour.items():
        print(f"  {situation}: " + "; ".join(
            f"{o} {[int(v) for v in row]}" for o, row in zip(tables.to_json()['behaviour'][situation], table,
                                                              strict=True)) + "  (counts by wins/ties/loses)")
    return 0


def run_calibrate(args: argparse.Namespace) -> int:
    from engine_ext.beliefs.calibration import (
        Variant,
        hard_only,
        plot_reliability,
        posterior_report,
        prior_report,
    )
    from engine_ext.rules.rulesets import CLASSIC

    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:  # say so before the long part
        return _error(f"--plot needs matplotlib, which is not installed: {PLOT_INSTALL}", 2)
    data = _classic_setups(args.data)
    try:
        if data.is_file():
            print("\n".join(prior_report(CLASSIC, data).lines()))
        else:
            print(f"no {data}: the prior's held-out score is skipped", file=sys.stderr)
        if not args.records:
            return 0
        tables = Likelihoods.load(args.tables) if args.tables else shipped_likelihoods()
        models = [hard_only()]
        try:
            floors = [float(f) for f in args.floors.split(",") if f.strip()]
            repeats = [float(r) for r in args.repeats.split(",") if r.strip()]
        except ValueError:
            return _error(f"--floors / --repeats: not a list of numbers: {args.floors!r} {args.repeats!r}", 2)
        models.append(Variant("no pairs", tables, pairs=False))
        models += [Variant(f"floor {f:g}", tables.with_floor(f)) for f in floors if f != tables.floor]
        models += [Variant(f"repeats {r:g}", tables.with_repeats(r)) for r in repeats if r != tables.repeats]
        models.append(Variant(f"fitted (floor {tables.floor:g}, repeats {tables.repeats:g})", tables))
        report = posterior_report(args.records, models, every=max(1, args.every))
    except (OSError, ValueError) as exc:
        return _error(str(exc), 1)
    for line in report.skipped[:10]:
        print(f"skipped {line}", file=sys.stderr)
    print("\n".join(report.lines()))
    if args.plot is not None:
        if plot_reliability(report, args.plot):
            print(f"plot written to {args.plot}")
        else:
            print(f"matplotlib is not installed: no plot ({PLOT_INSTALL})", file=sys.stderr)
    return 0


def _error(message: str, code: int) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code
