"""How the commands print their rich tables: whole, wherever the output goes.

In a terminal rich fits a table to the window, squeezing columns it cannot wrap down to an ellipsis;
the person can widen the window. Output that is not a terminal (a pipe, a file, a log, a test's
capture) has no window to widen: rich then takes the width from ``COLUMNS`` or 80, and at 80 the lab's
result table lost W/D/L, the score and the LOS to "…", and ``config show`` cut profile names (issue 33).
There every table is drawn at its natural width, as wide as its longest cells need, so that every value
appears in full whatever the width; a script that wants fields rather than text has ``--json``.
"""

from __future__ import annotations

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

# A width no table reaches: the bound under which a table's natural width is measured.
_UNBOUNDED = 100_000


def natural_width(console: Console, table: Table) -> int:
    """The columns ``table`` takes when nothing squeezes it."""
    return Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum


def print_table(console: Console, table: Table) -> None:
    """Print ``table``: fitted to the window in a terminal, whole (its natural width, never cropped)
    anywhere else."""
    if console.is_terminal:
        console.print(table)
        return
    width = console.width  # print(width=...) would not go past it: widen the console for this table alone
    console.width = max(natural_width(console, table), 1)
    try:
        console.print(table, crop=False)
    finally:
        console.width = width
