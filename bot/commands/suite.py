"""``perspecto suite``: positions from our lost and drawn games, each with what the engine must or must not play.

- ``perspecto suite [--suite FILE] [--move-time S] [--jobs N] [--category C] [--profile P] [--param K=V]
  [--json FILE]``: rebuild every entry's position as our side saw it in its game, ask the profile's engine
  for its move at the referee's time a move, judge it by the entry's condition; a table of passes per
  category with the failed entries named (engine_ext/lab/suite/);
- ``perspecto suite extract RECORDS... --out FILE``: propose entries from game records, where a category's
  situation holds for our side; every proposal is for a person to check before it goes into a suite;
- ``perspecto suite show ID``: one entry's position from our side, its condition, the game's move.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.safe_text import terminal_safe
from bot.tables import print_table

PROG = "perspecto suite"
SUITE_FILE = Path(__file__).resolve().parents[2] / "engine_ext" / "lab" / "suite" / "data" / "suite.json"
DEFAULT_MOVE_TIME = 2.0  # the tournament's referee's -T
# Where a suite's records go beside it: not "records/", which the repository ignores (the lab's output folder).
GAMES_FOLDER = "games"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("suite", help="positions from our lost games: what the engine must or must not play",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", type=Path, default=None, metavar="FILE",
                   help="the suite file (default: the shipped engine_ext/lab/suite/data/suite.json)")
    p.add_argument("--move-time", type=float, default=DEFAULT_MOVE_TIME, metavar="S",
                   help=f"the referee's time a move, its -T; the time manager's deadlines follow from it "
                   f"(default {DEFAULT_MOVE_TIME:g})")
    p.add_argument("--nodes", type=int, default=None, metavar="N",
                   help="also stop each search after N nodes (one thread; the same move on any machine)")
    p.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="positions at a time, each in its own process (default: the usable cores); the engine's "
                   "search threads are the cores shared out among them")
    p.add_argument("--category", action="append", default=[], metavar="NAME",
                   help="only this category (repeatable)")
    p.add_argument("--profile", default="perspecto", help="the profile whose engine plays (default perspecto)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="an engine parameter laid over the profile's, VALUE in TOML (as perspecto match --param, "
                   "without the side: e.g. home_guard=64, fear.own_fear_min=0.3); repeatable")
    p.add_argument("--seed", type=int, default=1, help="the engine's seed (default 1)")
    p.add_argument("--config", help="configuration directory (default $PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--json", type=Path, default=None, metavar="FILE",
                   help='write {"categories": {NAME: {"total", "passed", "failed": [ID...]}}, "entries": [...]}')
    p.set_defaults(func=run_suite)
    sub = p.add_subparsers(dest="suite_command")
    ex = sub.add_parser("extract", help="propose entries from game records (each to be checked by hand)")
    ex.add_argument("records", nargs="+", type=Path, metavar="RECORD_OR_DIR",
                    help="record files, or folders whose *.json records are all read")
    ex.add_argument("--out", type=Path, required=True, metavar="FILE",
                    help="the suite file to write; the records it names are copied (gzipped) into FILE's "
                    "folder, games/")
    ex.add_argument("--category", action="append", default=[], metavar="NAME", help="only this category")
    ex.add_argument("--player", default="perspecto",
                    help="our side is the player whose name starts with this (default perspecto)")
    ex.add_argument("--per-game", type=int, default=3, help="at most this many of a category a game (default 3)")
    ex.add_argument("--spacing", type=int, default=20, help="plies between two of a category in a game (default 20)")
    ex.add_argument("--won-too", action="store_true", help="propose from won games too (default: lost and drawn)")
    ex.set_defaults(func=run_extract)
    show = sub.add_parser("show", help="one entry's position from our side, its condition and the game's move")
    show.add_argument("ids", nargs="+", metavar="ID", help="entry ids")
    show.set_defaults(func=run_show)


def _error(message: str, code: int = 2) -> int:
    print(f"{PROG}: {terminal_safe(message)}", file=sys.stderr)
    return code


def _load_suite(args: argparse.Namespace) -> Any:
    from engine_ext.lab.suite.entries import Suite

    return Suite.load(args.suite or SUITE_FILE)


# --- perspecto suite ----------------------------------------------------------------------------------------


def run_suite(args: argparse.Namespace) -> int:
    from engine_ext.engine.settings import usable_cores
    from engine_ext.lab.suite.entries import CATEGORIES
    from engine_ext.lab.suite.errors import SuiteError
    from engine_ext.lab.suite.run import SuiteSettings, run_entries, scores_json

    if not args.move_time > 0:
        return _error(f"--move-time must be above 0 s, not {args.move_time:g}")
    if args.nodes is not None and args.nodes < 1:
        return _error(f"--nodes must be at least 1, not {args.nodes}")
    if args.jobs is not None and args.jobs < 1:
        return _error(f"--jobs must be at least 1, not {args.jobs}")
    unknown = [name for name in args.category if name not in CATEGORIES]
    if unknown:
        return _error(f"unknown category {', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
    try:
        suite = _load_suite(args)
        entries = suite.select(args.category)
        if not entries:
            return _error("no entries to run")
        cores = usable_cores()
        jobs = min(args.jobs or cores, len(entries))
        profile = _profile(args, threads=max(1, cores // jobs) if args.nodes is None else 1)
    except SuiteError as exc:
        return _error(str(exc))
    settings = SuiteSettings(profile, args.move_time, args.nodes, args.seed)
    console = Console()
    started = time.monotonic()
    verdicts = run_entries([(e, suite.record_path(e)) for e in entries], settings, jobs)
    wall = time.monotonic() - started
    document = scores_json(verdicts)
    if args.json is not None:
        document["move_time"], document["profile"], document["params"] = args.move_time, args.profile, args.param
        document["wall_seconds"] = round(wall, 1)
        try:
            args.json.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        except OSError as exc:
            return _error(f"--json {args.json}: {exc.strerror or exc}")
    print_table(console, scores_table(document["categories"]))
    for name, score in document["categories"].items():
        if score["failed"]:
            console.print(f"failed in {name}: {', '.join(score['failed'])}", highlight=False, soft_wrap=True)
    by_id = {e.id: e for e in entries}
    for verdict in sorted(verdicts, key=lambda v: v.entry):
        if not verdict.passed:
            entry = by_id[verdict.entry]
            why = f"error: {verdict.error}" if verdict.error else f"played {verdict.move}, wanted {entry.condition()}"
            console.print(f"failed {entry.id}: {terminal_safe(why)} ({terminal_safe(entry.note)})", highlight=False,
                          soft_wrap=True)
    passed = sum(v.passed for v in verdicts)
    console.print(f"{passed} of {len(verdicts)} passed in {wall:.0f} s ({jobs} at a time, {args.move_time:g} s a move"
                  + (f", {args.nodes} nodes" if args.nodes else "") + f", profile {args.profile})", highlight=False)
    errors = [v for v in verdicts if v.error]
    return 1 if errors else 0


def _profile(args: argparse.Namespace, threads: int) -> Any:
    """The profile with the search threads shared out and every ``--param`` laid over it (the lab's
    ``make_player``, as ``perspecto match --param`` does); a bad name or value is an ``EngineChoiceError``."""
    from bot.config import ProfileError
    from bot.profiles import load_configuration
    from bot.settings import ConfigError
    from engine_ext.lab.runner import LabError, make_player
    from engine_ext.lab.suite.errors import EngineChoiceError

    try:
        _settings, profiles = load_configuration(args.config)
        profile = profiles.get(args.profile)
        params = [f"A.threads={threads}", *(f"A.{item}" for item in args.param)]
        return make_player(profile.name, profile, label="A", params=params).profile
    except (ProfileError, ConfigError, LabError) as exc:
        raise EngineChoiceError(str(exc)) from None


def scores_table(categories: dict[str, dict[str, Any]]) -> Table:
    from engine_ext.lab.suite.entries import CATEGORIES

    table = Table(title="The position suite")
    table.add_column("category")
    table.add_column("passed", justify="right")
    table.add_column("of", justify="right")
    table.add_column("%", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("the situation")
    for name, score in categories.items():
        share = 100.0 * score["passed"] / score["total"] if score["total"] else 0.0
        says = CATEGORIES[name].says if name in CATEGORIES else ""
        table.add_row(name, str(score["passed"]), str(score["total"]), f"{share:.0f}", str(len(score["failed"])),
                      says)
    return table


# --- perspecto suite extract --------------------------------------------------------------------------------


def run_extract(args: argparse.Namespace) -> int:
    from engine_ext.lab.analysis import record_paths
    from engine_ext.lab.suite.entries import CATEGORIES, Entry, suite_document
    from engine_ext.lab.suite.errors import SuiteError
    from engine_ext.lab.suite.extract import SITUATIONS, candidates, lost_or_drawn, our_side
    from engine_ext.rules.record import GameRecord

    unknown = [name for name in args.category if name not in CATEGORIES]
    if unknown:
        return _error(f"unknown category {', '.join(unknown)} (known: {', '.join(CATEGORIES)})")
    categories = args.category or list(SITUATIONS)
    paths = record_paths(args.records)
    if not paths:
        return _error("no records: the folders hold no *.json files")
    folder = args.out.parent / GAMES_FOLDER
    entries: list[Entry] = []
    counts = dict.fromkeys(categories, 0)
    skipped = 0
    for path in paths:
        try:
            record = GameRecord.load(path)
            side = our_side(record, args.player)
            if side is None or not (args.won_too or lost_or_drawn(record, side)):
                continue
            found = list(candidates(path, record, side, categories, args.per_game, args.spacing))
        except (OSError, ValueError) as exc:  # RecordError and SuiteError are ValueErrors
            skipped += 1
            print(f"{PROG}: {terminal_safe(str(path))}: {terminal_safe(str(exc))}", file=sys.stderr)
            continue
        if not found:
            continue
        name = f"{GAMES_FOLDER}/{path.stem}.json.gz"
        folder.mkdir(parents=True, exist_ok=True)
        (args.out.parent / name).write_bytes(gzip.compress(path.read_bytes(), mtime=0))
        for candidate in found:
            counts[candidate.category] += 1
            entries.append(candidate.entry(name, counts[candidate.category]))
    try:
        args.out.write_text(suite_document(entries, "candidates from perspecto suite extract: check each by hand"),
                            encoding="utf-8")
    except (OSError, SuiteError) as exc:
        return _error(f"--out {args.out}: {exc}")
    print(f"{len(entries)} candidates written to {args.out} ("
          + ", ".join(f"{name} {n}" for name, n in counts.items()) + f"); {skipped} records skipped")
    return 0


# --- perspecto suite show -----------------------------------------------------------------------------------


def render_known(known: Any) -> str:
    """The board as our side knew it, our back row at the bottom: ``[9]`` ours (American symbols), ``<8>``
    theirs shown, `` ? `` theirs unseen that moved, `` # `` theirs unseen unmoved, ``~~~`` a lake."""
    ruleset = known.ruleset
    rows = range(ruleset.height - 1, -1, -1) if str(known.side) == "red" else range(ruleset.height)
    columns = range(ruleset.width) if str(known.side) == "red" else range(ruleset.width - 1, -1, -1)
    from engine_ext.rules.rulesets import Square

    lines = []
    for row in rows:
        cells = []
        for col in columns:
            square = Square(col, row)
            if ruleset.is_lake(square):
                text = "~~"
            elif square in known.ours:
                text = f"[{known.ours[square].symbol()}]"
            elif square in known.theirs:
                piece = known.theirs[square]
                text = ("?" if piece.moved else "#") if piece.unseen else f"<{piece.rank.symbol()}>"
            else:
                text = "."
            cells.append(text.center(5))
        lines.append(f"{row + 1:>2} " + "".join(cells))
    lines.append("   " + "".join(f"{Square(col, 0)!s:.1}".center(5) for col in columns))
    return "\n".join(lines)


def run_show(args: argparse.Namespace) -> int:
    from engine_ext.lab.suite.errors import SuiteError
    from engine_ext.lab.suite.knowledge import Knowledge
    from engine_ext.lab.suite.view import side_view
    from engine_ext.rules.notation import Move
    from engine_ext.rules.pieces import Rank

    try:
        suite = _load_suite(args)
        by_id = {e.id: e for e in suite.entries}
        missing = [i for i in args.ids if i not in by_id]
        if missing:
            return _error(f"no entry {', '.join(missing)} in {suite.path}")
        for ident in args.ids:
            entry = by_id[ident]
            record = suite.load_record(entry)
            view = side_view(record, entry.ply, entry.our_side)
            known = Knowledge.from_view(view, entry.our_side)
            print(f"{entry.id} ({entry.category}): {record.game_id} after {entry.ply} plies, {entry.side} to move")
            print(render_known(known))
            print(f"unseen: bombs {known.unseen(Rank.BOMB)}, spy {known.unseen(Rank.SPY)}; "
                  f"movers ours {known.material()[0]}, theirs {known.material()[1]}")
            print(f"condition: {entry.condition()}")
            if entry.played:
                kept = entry.passes(known, Move.parse(entry.played))
                print(f"the game played {entry.played}: {'passes' if kept else 'fails'}")
            print(f"note: {terminal_safe(entry.note)}\n")
    except SuiteError as exc:
        return _error(str(exc))
    return 0
