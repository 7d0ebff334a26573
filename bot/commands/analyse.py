"""``perspecto analyse RECORD_OR_DIR...``: causes of loss and chases, counted per profile over game records.

The counting is ``engine_ext.lab.analysis`` (causes of loss: ``causes``; chases: ``chases``; with
``--beliefs`` the high pieces' risky attacks against the beliefs: ``risks``); this module
reads the records, prints one rich table a concern, and with ``--json`` writes the same for scripts. A
record that cannot be read or replayed is named with its reason and left out; the others are counted.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.safe_text import terminal_safe
from bot.tables import print_table
from engine_ext.lab.analysis import (
    GameAnalysis,
    GroupBy,
    GroupSummary,
    analyse_record,
    record_paths,
    summaries_json,
    summarise,
)
from engine_ext.lab.causes import BACK_ROWS, GUARD_DISTANCE, Cause
from engine_ext.lab.chases import MIN_CHASE_MOVES, ChaseEnd
from engine_ext.rules.record import FORMAT as RECORD_FORMAT
from engine_ext.rules.record import GameRecord


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "analyse",
        help="causes of loss and chases, counted from game records",
        description="Replay game records (perspecto-record/1: the lab's, the host's) and count, per profile: "
        "how each marshal and general left the board (a bomb, the spy, a higher piece, an even trade, "
        "and whether the piece it met was known), how each flag fell (the raider, known or not, the guards' "
        "distance, the bombs left), and chases of a weaker known piece that ended in a capture against "
        "pointless ones (docs/lab.md, Analysing games).",
    )
    p.add_argument("paths", metavar="RECORD_OR_DIR", nargs="+", type=Path,
                   help="record files, or folders whose *.json records are all read")
    p.add_argument("--by", choices=[g.value for g in GroupBy], default=GroupBy.PROFILE.value,
                   help="group by the players' names (profiles) or by colour (default %(default)s)")
    p.add_argument("--beliefs", action="store_true",
                   help="also replay both sides' belief models: for every attack of a marshal or general on an "
                   "unshown piece that never moved, the P(bomb) its side believed against what was found "
                   "(about a third more time)")
    p.add_argument("--json", metavar="FILE", nargs="?", const="-",
                   help="write the counts and every game's findings as JSON to FILE (to stdout without FILE, "
                   "in place of the tables)")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    to_stdout = args.json == "-"
    console = Console(stderr=to_stdout)
    if args.json not in (None, "-") and _would_clobber(Path(args.json)):
        # ``--json`` takes an optional FILE, so ``--json some-record.json ...`` would write over that record.
        console.print(f"[red]--json {args.json}: a folder or a game record, not a file to write the analysis to "
                      "(put --json after the records, or give it a new file name)[/red]", highlight=False,
                      soft_wrap=True)
        return 2
    paths = record_paths(args.paths)
    if not paths:
        console.print("[red]no records: the folders hold no *.json files[/red]")
        return 2
    games: list[GameAnalysis] = []
    failures: dict[str, str] = {}
    for path in paths:
        try:
            games.append(analyse_record(GameRecord.load(path), beliefs=args.beliefs))
        except (OSError, ValueError, KeyError, TypeError) as exc:  # RecordError, ReplayError are ValueErrors
            failures[str(path)] = str(exc)
            # A file's name and a replay's complaint may quote what the file holds (a move, a reason).
            console.print(f"[red]{terminal_safe(str(path))}: {terminal_safe(str(exc))}[/red]", highlight=False,
                          soft_wrap=True)
    by = GroupBy(args.by)
    if args.json is not None:
        text = json.dumps(summaries_json(games, by, failures), indent=1)
        if to_stdout:
            sys.stdout.write(text + "\n")
        else:
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if not to_stdout:
        print_tables(console, games, by)
    if failures:
        console.print(f"[red]{len(failures)} of {len(paths)} records could not be analysed[/red]")
    return 1 if failures else 0


def _would_clobber(target: Path) -> bool:
    if target.is_dir():
        return True
    try:
        with target.open(encoding="utf-8") as f:
            head = f.read(64)
    except OSError:
        return False  # absent (or unreadable: writing it says why)
    return RECORD_FORMAT in head


def print_tables(console: Console, games: list[GameAnalysis], by: GroupBy) -> None:
    # A group's name is a player's name from a record, which a remote bot chose (escape codes, rich markup):
    # every table and line below shows the groups' names, so they are made safe here, once, for all of them
    # (--json keeps them as they are: JSON escapes them).
    groups = {name: dataclasses.replace(group, name=terminal_safe(name))
              for name, group in summarise(games, by).items()}
    console.print(f"{len(games)} games", highlight=False)
    if not groups:
        return
    print_table(console, fates_table(groups))
    for group in groups.values():
        console.print(f"{group.name}: marshal or general lost to a bomb or the spy {group.lost_to_bomb_or_spy} "
                      f"of {group.tracked_pieces}; {headline(group)}", highlight=False, soft_wrap=True)
    print_table(console, flags_table(groups))
    for group in groups.values():
        console.print(f"{group.name}: {group.taken_in_half} pieces taken in its own half by enemy pieces it had "
                      f"been shown (the most by one raider in a row: {group.longest_raid})",
                      highlight=False, soft_wrap=True)
    for group in groups.values():
        console.print(f"{group.name}: {hopeless_line(group)}", highlight=False, soft_wrap=True)
    print_table(console, chases_table(groups))
    if any(group.risks is not None for group in groups.values()):
        print_table(console, risks_table(groups))


def hopeless_line(group: GroupSummary) -> str:
    """How many attacks lost for certain (on a piece the attacker's side had been shown and that beat the
    attacker), then how many by each attacker's rank, the commonest first."""
    total = sum(group.hopeless.values())
    text = (f"{total} {'attack' if total == 1 else 'attacks'} that lost for certain (on a piece it had been "
            "shown that beat the attacker)")
    if total:
        ranks = sorted(group.hopeless.items(), key=lambda kv: (-kv[1], -kv[0]))
        text += ": " + ", ".join(f"{rank.label} {n}" for rank, n in ranks)
    return text


def risks_table(groups: dict[str, GroupSummary]) -> Table:
    table = Table(title="Marshals' and generals' attacks on unshown pieces that never moved, against the beliefs",
                  caption="believed: the attacker's side's mean P(bomb) just before the attack; found: the share "
                  "that were bombs. Found well above believed: the beliefs under-rate bombs where it matters; "
                  "about equal: the risks were taken knowingly")
    for column in ("player", "attacks", "bombs expected", "bombs found", "flags expected", "flags found",
                   "by believed P(bomb): n believed -> found"):
        table.add_column(column, justify="left" if column.startswith(("player", "by")) else "right",
                         no_wrap=column == "player")
    for group in groups.values():
        r = group.risks
        if r is None:
            continue
        bins = "; ".join(f"{span}: {n} {p:.2f} -> {f:.2f}" for span, n, p, f in r.bin_rows()) or "-"
        table.add_row(group.name, str(r.count), f"{r.expected_bombs:.1f}", str(r.bombs),
                      f"{r.expected_flags:.1f}", str(r.flags), bins)
    return table


def headline(group: GroupSummary) -> str:
    """The marshal's story in words, e.g. ``marshal lost to bomb 12 (unknown 12, back rows 9), to spy 3 ...``."""
    parts = []
    for rank, s in group.ranks.items():
        lost = [f"to bomb {s.causes[Cause.BOMB]} (unknown {s.unknown[Cause.BOMB]}, back rows {s.bomb_back_rows})",
                f"to spy {s.causes[Cause.SPY]} (unknown {s.unknown[Cause.SPY]})",
                f"to a higher piece {s.causes[Cause.HIGHER]}", f"in a trade {s.causes[Cause.TRADE]}"]
        parts.append(f"{rank.label} lost {', '.join(lost)}, survived {s.causes[Cause.SURVIVED]}")
    return "; ".join(parts)


def _with_unknown(total: int, unknown: int) -> str:
    return f"{total} ({unknown})" if total else "0"


def fates_table(groups: dict[str, GroupSummary]) -> Table:
    table = Table(title="How marshals and generals left the board",
                  caption="(n): the piece it met was unknown to its owner; back: the bomb stood on its owner's "
                  f"back {BACK_ROWS} rows; att/def: lost to a higher piece attacking it / attacked by it")
    for column in ("player", "piece", "games", "survived", "bomb (n)", "back", "spy (n)", "higher (n)",
                   "att/def", "trade"):
        # The names stay whole; a narrow terminal squeezes the counts' headers instead.
        table.add_column(column, justify="left" if column in ("player", "piece") else "right",
                         no_wrap=column in ("player", "piece"))
    for group in groups.values():
        for rank, s in group.ranks.items():
            higher = s.causes[Cause.HIGHER]
            table.add_row(
                group.name, rank.label, str(s.pieces), str(s.causes[Cause.SURVIVED]),
                _with_unknown(s.causes[Cause.BOMB], s.unknown[Cause.BOMB]), str(s.bomb_back_rows),
                _with_unknown(s.causes[Cause.SPY], s.unknown[Cause.SPY]),
                _with_unknown(higher, s.unknown[Cause.HIGHER]),
                f"{s.attacked[Cause.HIGHER]}/{higher - s.attacked[Cause.HIGHER]}", str(s.causes[Cause.TRADE]),
            )
    return table


def flags_table(groups: dict[str, GroupSummary]) -> Table:
    table = Table(title="How flags fell",
                  caption=f"guards: the owner's movable pieces within {GUARD_DISTANCE} steps of the flag when it "
                  "fell; nearest: the distance of the nearest one; the flag's bombs (next to it in the setup): "
                  "intact, breached (some removed), removed (all), none")
    for column in ("player", "games", "flags lost", "raiders", "raider unknown", "guards (mean)",
                   "nearest (mean)", "flag's bombs"):
        table.add_column(column, justify="left" if column in ("player", "raiders", "flag's bombs") else "right",
                         no_wrap=column == "player")
    for group in groups.values():
        f = group.flags
        nearest = [d for d, n in f.nearest_guard.items() if d is not None for _ in range(n)]
        guards = sum(k * n for k, n in f.guards.items())
        table.add_row(
            group.name, str(group.games), str(f.falls),
            ", ".join(f"{r.label} {n}" for r, n in f.raiders.most_common()) or "-", str(f.raider_unknown),
            f"{guards / f.falls:.1f}" if f.falls else "-",
            f"{sum(nearest) / len(nearest):.1f}" if nearest else "-",
            ", ".join(f"{state} {n}" for state, n in f.bombs.most_common()) or "-",
        )
    return table


def _mean(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def chases_table(groups: dict[str, GroupSummary]) -> Table:
    table = Table(title=f"Chases of a weaker known piece ({MIN_CHASE_MOVES} chase moves or more), by the chaser",
                  caption="pointless: escaped, abandoned or the game ended; len: mean chase moves; other: the "
                  "chaser fell / the chased piece fell to another")
    for column in ("player", "chases", "captures", "len", "pointless", "len", "escaped", "abandoned",
                   "game over", "other"):
        table.add_column(column, justify="left" if column == "player" else "right", no_wrap=column == "player")
    for group in groups.values():
        c = group.chases
        table.add_row(
            group.name, str(c.total), str(c.captures), _mean(c.mean_length(pointless=False)), str(c.pointless),
            _mean(c.mean_length(pointless=True)), str(c.ends[ChaseEnd.ESCAPED]), str(c.ends[ChaseEnd.ABANDONED]),
            str(c.ends[ChaseEnd.GAME_OVER]), f"{c.ends[ChaseEnd.CHASER_FELL]}/{c.ends[ChaseEnd.CHASED_FELL]}",
        )
    return table
