"""Output that is not a terminal is whole (issue 33): every rich table the commands print keeps every value
at 80 columns (``COLUMNS=80``, stdout a capture, not a tty), and ``--json`` holds numbers, never text."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from bot.cli import main as cli_main
from bot.tables import natural_width, print_table
from setups.library import SetupLibrary

NARROW = "80"
ELLIPSIS = "…"


@pytest.fixture
def narrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe that claims 80 columns, as a log file or ``| less`` on a default terminal does."""
    monkeypatch.setenv("COLUMNS", NARROW)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("│")[1:-1]]


def test_a_table_is_fitted_in_a_terminal_and_whole_anywhere_else() -> None:
    table = Table(title="wide")
    for heading in ("name", "figures", "more figures"):
        table.add_column(heading)
    table.add_row("a-name-that-is-long-enough-to-matter", "1234567890 " * 4, "+12.5 [-3.0, +28.1] 99.9 %")

    piped = io.StringIO()
    print_table(Console(file=piped, width=80, force_terminal=False), table)
    text = piped.getvalue()
    assert ELLIPSIS not in text
    row = next(line for line in text.splitlines() if "a-name" in line)
    assert cells(row) == ["a-name-that-is-long-enough-to-matter", ("1234567890 " * 4).strip(),
                          "+12.5 [-3.0, +28.1] 99.9 %"]
    assert max(len(line) for line in text.splitlines()) == natural_width(Console(width=80), table) > 80

    terminal = io.StringIO()
    print_table(Console(file=terminal, width=80, force_terminal=True, color_system=None), table)
    assert max(len(line) for line in terminal.getvalue().splitlines()) <= 80


def test_the_lab_match_table_and_json_are_whole_at_80_columns(
    narrow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    summary = tmp_path / "match.json"
    code = cli_main(["match", "random", "random", "--games", "4", "--move-limit", "40", "--seed", "5",
                     "--concurrency", "1", "--records", str(tmp_path / "records"), "--json", str(summary)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert ELLIPSIS not in out
    [match] = json.loads(summary.read_text())["matches"]
    row = cells(next(line for line in out.splitlines() if line.startswith("│ random-a")))
    games = match["games"]
    elo = match["elo"]
    assert row[:6] == ["random-a", "random-b", str(games), str(match["wins"]), str(match["draws"]),
                       str(match["losses"])]
    assert row[6] == f"{100 * match['score']:.1f} %"
    assert row[8] == f"{100 * elo['los']:.1f} %" and row[9] == f"{100 * match['draw_ratio']:.0f} %"
    assert row[10] == "/".join(str(n) for n in match["pentanomial"])
    # every figure of the JSON is a number or null, never the text "inf"
    assert all(value is None or isinstance(value, (int, float)) for value in elo.values())
    assert match["draw_ratio"] == match["draws"] / games
    assert elo["even_pair_ratio"] == match["pentanomial"][2] / match["pairs"]

    # ``analyse`` reads those records and prints its four tables, whole too
    assert cli_main(["analyse", str(tmp_path / "records")]) == 0
    analysed = capsys.readouterr()
    assert ELLIPSIS not in analysed.out + analysed.err
    assert f"{games} games" in analysed.out + analysed.err


def test_an_unbounded_interval_is_null_in_the_json(tmp_path: Path) -> None:
    """A match without a decisive game has no spread: its interval is (-inf, +inf), written as null (the
    text "inf" before), and a draw ratio of 1, counted from the games."""
    summary = tmp_path / "draws.json"
    assert cli_main(["match", "random", "random", "--games", "2", "--move-limit", "10", "--seed", "5",
                     "--concurrency", "1", "--no-records", "--json", str(summary)]) == 0
    [match] = json.loads(summary.read_text())["matches"]
    assert match["draws"] == match["games"] == 2 and match["draw_ratio"] == 1.0
    assert match["elo"]["low"] is None and match["elo"]["high"] is None
    assert match["elo"]["elo"] == 0.0 and match["elo"]["even_pair_ratio"] == 1.0


def test_config_show_names_every_profile_whole_at_80_columns(
    narrow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_name = "an-opponent-profile-with-a-name-as-long-as-people-give-them"
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / f"{long_name}.toml").write_text(
        'engine = "random"\nmatch = ["SomeVeryLongOpponentName*", "another-pattern-for-the-same-opponent"]\n')
    assert cli_main(["config", "show", "--config", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert ELLIPSIS not in out
    row = cells(next(line for line in out.splitlines() if long_name in line))
    assert row == [long_name, "random", "SomeVeryLongOpponentName*, another-pattern-for-the-same-opponent", "0",
                   "generated", str(tmp_path / "profiles" / f"{long_name}.toml")]


def test_results_tables_are_whole_at_80_columns(
    narrow: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_results_store import old_store

    path = old_store(tmp_path / "opponents.sqlite")
    opponent = "a-tournament-opponent-with-a-long-name-2026"
    with sqlite3.connect(str(path)) as db:
        db.execute("UPDATE opponent SET name = ? WHERE name = 'probe'", (opponent,))
        db.execute("UPDATE game SET opponent = ? WHERE opponent = 'probe'", (opponent,))
    assert cli_main(["results", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert ELLIPSIS not in out
    row = cells(next(line for line in out.splitlines() if line.startswith(f"│ {opponent}")))
    assert row[:8] == [opponent, "4", "2", "0", "2", "1/1", "0", row[7]] and row[8:] == ["0.250", "0.800"]
    assert str(path) in out


def test_setups_list_prints_every_name_and_idea_whole_at_80_columns(
    narrow: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_main(["setups", "list"]) == 0
    out = capsys.readouterr().out
    assert ELLIPSIS not in out
    lines = out.splitlines()
    for entry in SetupLibrary.load([]).entries(None):
        row = cells(next(line for line in lines if f"│ {entry.name} " in line))
        assert row[1] == entry.name and row[4] == entry.description


def test_the_lab_table_keeps_every_count_and_figure_in_an_80_column_terminal() -> None:
    """In a terminal the table is fitted to the window: at 80 columns the names, the interval and the
    headings wrap onto more lines, and W/D/L, score, LOS and draws stay whole (they were squeezed to
    nothing)."""
    from bot.commands.lab_view import result_table
    from engine_ext.lab.sprt import SprtSpec
    from tests.test_lab_runner import outcome, random_match

    match = random_match(None, pairs=30, sprt=SprtSpec(0, 25))
    for index in range(24):
        match.add(outcome(index, (1.0, 0.5, 0.0, 1.0)[index % 4]))
    out = io.StringIO()
    print_table(Console(file=out, width=80, force_terminal=True, color_system=None), result_table([match]))
    lines = out.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80 and ELLIPSIS not in out.getvalue()
    first_row = cells(next(line for line in lines if line.startswith("│ ")))
    assert first_row[2:7] == ["24", "12", "6", "6", "62.5 %"] and first_row[8:10] == ["100.0 %", "25 %"]
    text = "".join(lines)
    assert "+88." in text and "143" in text  # the interval, folded over lines
