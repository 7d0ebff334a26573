"""``perspecto results``: how the bot fares against each opponent, from its opponent store (docs/operating.md).

The store is the SQLite file ``perspecto bot`` keeps in its state directory (bot/daemon/opponent_store.py):
per opponent the games with their results and points, the fear values learnt (thesis 10.3.3) and the setups
played. A table for people, ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bot.daemon.opponent_store import OpponentStore, OpponentSummary, SetupUse, store_path
from bot.safe_text import terminal_safe
from bot.settings import load_settings
from bot.tables import print_table

# How a setup without a name shows: the generated fallback, or an outside program's own setup.
UNNAMED_SETUP = "(unnamed)"


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "results",
        help="the bot's results per opponent, from its opponent store",
        description="Print, per opponent the bot has played: games, wins, draws and losses (forfeits "
        "included, and counted apart), the points the host gave, the fear values it learnt (estOppFear and "
        "ownFear's bluff scale) and the setups it played with how each fared. Reads the opponent store of "
        "`perspecto bot` (STATE_DIR/opponents.sqlite; an older store gets the newer columns, as the bot "
        "would add them). Exit 0; 2 when the store is not there or not readable.",
    )
    p.add_argument("--config", help="configuration directory, for its state directory (default "
                   "$PERSPECTO_CONFIG_DIR or ./config)")
    p.add_argument("--state-dir", type=Path, help="the bot's state directory (default: the configuration's "
                   "state.dir)")
    p.add_argument("--store", type=Path, help="the store file itself (overrides --state-dir)")
    p.add_argument("--json", action="store_true", help="print JSON (one object, opponents in name order)")
    p.set_defaults(func=main)


def _setup_json(use: SetupUse) -> dict[str, Any]:
    return {"name": use.name, "games": use.games, "wins": use.wins, "draws": use.draws, "losses": use.losses}


def _when(timestamp: float | None) -> str | None:
    if timestamp is None:
        return None
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def summary_json(summary: OpponentSummary) -> dict[str, Any]:
    return {
        "name": summary.name,
        "games": summary.games,
        "wins": summary.wins,
        "draws": summary.draws,
        "losses": summary.losses,
        "forfeit_wins": summary.results.get("forfeit_win", 0),
        "forfeit_losses": summary.results.get("forfeit_loss", 0),
        "adjourned": summary.results.get("adjourned", 0),
        "score": summary.score,
        "est_opp_fear": summary.est_opp_fear,
        "own_fear_scale": summary.own_fear_scale,
        "setups": [_setup_json(use) for use in summary.setups],
        "last_game": _when(summary.last_game),
    }


def _fear(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def results_table(summaries: list[OpponentSummary], path: Path) -> Table:
    table = Table(title=f"results per opponent ({terminal_safe(str(path))})",
                  caption="W/D/L include forfeits (F: won/lost by forfeit); adj: adjourned, no points")
    for heading in ("opponent", "games", "W", "D", "L", "F", "adj", "score", "estOppFear", "bluff scale"):
        table.add_column(heading, justify="left" if heading == "opponent" else "right",
                         overflow="fold")  # a narrow terminal folds a long name, never cuts it
    for s in summaries:
        forfeits = f"{s.results.get('forfeit_win', 0)}/{s.results.get('forfeit_loss', 0)}"
        table.add_row(terminal_safe(s.name), str(s.games), str(s.wins), str(s.draws), str(s.losses), forfeits,
                      str(s.results.get("adjourned", 0)), str(s.score), _fear(s.est_opp_fear),
                      _fear(s.own_fear_scale))
    return table


def setups_table(summaries: list[OpponentSummary]) -> Table:
    table = Table(title="setups played, per opponent (most played first)")
    table.add_column("opponent", overflow="fold")
    table.add_column("setup", overflow="fold")
    for heading in ("games", "W", "D", "L"):
        table.add_column(heading, justify="right")
    for s in summaries:
        for i, use in enumerate(s.setups):
            table.add_row(terminal_safe(s.name) if i == 0 else "", terminal_safe(use.name or UNNAMED_SETUP),
                          str(use.games), str(use.wins),
                          str(use.draws), str(use.losses), end_section=i == len(s.setups) - 1)
    return table


def read_results(path: Path) -> list[OpponentSummary]:
    """Every opponent's summary, in name order; FileNotFoundError when there is no store at ``path``."""
    if not path.is_file():
        raise FileNotFoundError(f"no opponent store at {path}")
    with OpponentStore(path) as store:
        return [store.summary(name) for name in store.opponents()]


def main(args: argparse.Namespace) -> int:
    err = Console(stderr=True)
    if args.store is not None:
        path = args.store
    else:
        state_dir = args.state_dir or load_settings(args.config).state.dir
        path = store_path(state_dir)
    try:
        summaries = read_results(path)
    except (OSError, sqlite3.Error) as exc:
        err.print(f"[red]cannot read the opponent store: {exc}[/red]")
        return 2
    if args.json:
        print(json.dumps({"store": str(path), "opponents": [summary_json(s) for s in summaries]}, sort_keys=True))
        return 0
    console = Console()
    if not summaries:
        console.print(f"no games in {path} yet")
        return 0
    print_table(console, results_table(summaries, path))
    print_table(console, setups_table(summaries))
    return 0
