"""How a lab run looks in a terminal: a rich progress bar a match while it plays (games, W/D/L, Elo and the
SPRT's LLR with its bounds), then one result table and the SPRT lines. The runner (engine_ext/lab/runner.py)
knows nothing of this; it calls ``LabProgress.update`` after each game."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from engine_ext.lab.runner import GameOutcome, Match, sprt_line
from engine_ext.lab.stats import EloEstimate


def signed(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return f"{value + 0.0:+.1f}"  # + 0.0: no "-0.0"


def elo_text(elo: EloEstimate | None) -> str:
    """``+35.2 [-5.1, +76.0]``: the estimate and its 95 % interval (asymmetric: the logistic curve)."""
    if elo is None:
        return "-"
    return f"{signed(elo.elo)} [{signed(elo.low)}, {signed(elo.high)}]"


def status(match: Match) -> str:
    """The progress line's right part: W/D/L, Elo and the LLR over the consumed pairs."""
    t = match.trinomial
    text = f"W {t.wins} D {t.draws} L {t.losses}"
    elo = match.elo()
    if elo is not None:
        half = (elo.high - elo.low) / 2
        text += f"  Elo {signed(elo.elo)} ± {half:.0f}" if math.isfinite(half) else f"  Elo {signed(elo.elo)}"
    if match.sprt is not None:
        text += f"  LLR {match.llr:+.2f} [{match.sprt.lower:.2f}, {match.sprt.upper:.2f}]"
        if match.verdict is not None:
            text += f" {match.verdict}"
    return text


class LabProgress:
    """One progress bar a match; the total is the match's cap (an SPRT usually stops sooner). Without a
    terminal (a log file, a pipe) the bars are not drawn until the end, so a status line is printed every
    ``every`` games instead: a long run in the background can be followed."""

    def __init__(self, console: Console, matches: Sequence[Match], *, every: int = 10) -> None:
        self.console = console
        self.every = max(1, every)
        columns = (
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"), TimeElapsedColumn(),
        )
        # Without a terminal the bars would be drawn once, at the end, cut to COLUMNS: the status lines
        # say the same in full.
        self.progress = Progress(*columns, console=console, transient=False, disable=not console.is_terminal)
        self.tasks: dict[str, TaskID] = {
            m.label: self.progress.add_task(f"{m.a.name} vs {m.b.name}", total=2 * m.pairs, status="")
            for m in matches
        }

    def __enter__(self) -> LabProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def update(self, match: Match, outcome: GameOutcome) -> None:
        task = self.tasks[match.label]
        completed = len(match.games) if match.done else len(match.outcomes)
        total = len(match.games) if match.done else 2 * match.pairs
        self.progress.update(task, completed=completed, total=total, status=status(match))
        if not self.console.is_terminal and (len(match.outcomes) % self.every == 0 or match.done):
            self.console.print(f"{match.a.name} vs {match.b.name}: {len(match.outcomes)} games played, "
                               f"{len(match.games)} counted: {status(match)}", highlight=False, soft_wrap=True)
        if outcome.forfeit is not None:
            self.progress.console.print(f"[yellow]game {outcome.index} ({match.label}): {outcome.reason}: "
                                        f"{outcome.detail}[/yellow]", highlight=False)


def result_table(matches: Sequence[Match]) -> Table:
    """One row a pairing: W/D/L and score of A, Elo of A over B with its 95 % interval (from the game
    pairs), LOS, draw ratio and the pentanomial counts (pairs scoring 0, ½, 1, 1½, 2 for A)."""
    count = sum(len(m.games) for m in matches)
    table = Table(title=f"{len(matches)} pairing{'' if len(matches) == 1 else 's'}, {count} games")
    for column in ("A", "B", "games", "W", "D", "L", "score", "Elo [95 %]", "LOS", "draws", "pairs 0/½/1/1½/2"):
        # A narrow terminal (80 columns) wraps the names, the interval and the headings onto more lines and
        # keeps every figure whole; squeezing the counts left W/D/L, score and LOS empty (issue 33).
        wide = column in ("A", "B", "Elo [95 %]", "pairs 0/½/1/1½/2")
        table.add_column(column, justify="left" if column in ("A", "B") else "right", no_wrap=not wide,
                         overflow="fold" if wide else "ellipsis")
    for m in matches:
        t = m.trinomial
        elo = m.elo()
        table.add_row(
            m.a.name, m.b.name, str(t.games), str(t.wins), str(t.draws), str(t.losses),
            f"{100 * t.score:.1f} %" if t.games else "-", elo_text(elo),
            f"{100 * elo.los:.1f} %" if elo is not None else "-",
            f"{100 * t.draws / t.games:.0f} %" if t.games else "-",
            "/".join(str(n) for n in m.pentanomial.counts),
        )
    return table


def footer(matches: Sequence[Match], seconds: float, concurrency: int) -> list[str]:
    """The SPRT lines, game lengths and ends, and the rate, under the table."""
    lines = [line for line in (sprt_line(m) for m in matches) if line is not None]
    games = [g for m in matches for g in m.games]
    if games:
        reasons: dict[str, int] = {}
        for g in games:
            reasons[g.reason] = reasons.get(g.reason, 0) + 1
        plies = [g.plies for g in games]
        ends = ", ".join(f"{r} {n}" for r, n in sorted(reasons.items(), key=lambda i: -i[1]))
        lines.append(f"plies a game: mean {sum(plies) / len(plies):.0f}, min {min(plies)}, max {max(plies)}; "
                     f"ends: {ends}")
        rate = 60 * len(games) / seconds if seconds > 0 else 0.0
        lines.append(f"{len(games)} games in {seconds:.0f} s: {rate:.1f} games a minute with {concurrency} "
                     f"worker{'' if concurrency == 1 else 's'}")
    return lines


def json_summary(matches: Sequence[Match], settings: dict[str, Any], seconds: float) -> dict[str, Any]:
    games = sum(len(m.games) for m in matches)
    return {"settings": settings, "seconds": seconds,
            "games_per_minute": 60 * games / seconds if seconds > 0 else None,
            "matches": [m.summary() for m in matches]}
