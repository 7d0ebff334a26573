"""The board in colour, for the live view of a game and for replays (rich renderables).

Red pieces in red, blue in blue and in brackets (so the sides stay apart without colour, in logs and
pipes), lakes as ``~~``, the squares of the last move underlined; ranks in the American (marshal 10,
spy 1) or European (marshal 1, spy S) style. A bot's view shows the opponent's unrevealed pieces as ``?``.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group
from rich.panel import Panel
from rich.text import Text

from bot.safe_text import visible
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import COLUMNS, Square

SIDE_STYLES = {Side.RED: "bold red", Side.BLUE: "bold blue"}
CELL = 4  # characters a square


def board_text(game: Game, *, style: str = "american", last: MoveResult | None = None) -> Text:
    ruleset = game.options.ruleset
    marked = {last.move.frm, last.move.to} if last is not None else set()
    text = Text()
    for row in range(ruleset.height - 1, -1, -1):
        text.append(f"{row + 1:>2} ", style="dim")
        for col in range(ruleset.width):
            sq = Square(col, row)
            highlight = " underline" if sq in marked else ""
            piece = game.piece_at(sq)
            if ruleset.is_lake(sq):
                text.append(" ~~ ", style="blue")
            elif piece is None:
                text.append("  . ", style="dim" + highlight)
            else:
                side, rank = piece
                symbol = rank.symbol(style)
                cell = f"{symbol:>3} " if side == Side.RED else f"{'(' + symbol + ')':>4}"
                text.append(cell, style=SIDE_STYLES[side] + highlight)
        text.append("\n")
    text.append("   " + "".join(f"{c:>{CELL - 1}} " for c in COLUMNS[: ruleset.width]), style="dim")
    return text


def status_line(game: Game, last: MoveResult | None = None) -> Text:
    line = Text(f"ply {game.ply}")
    if last is not None:
        line.append("   last ")
        line.append(f"{last.side} {last.notation()}", style=SIDE_STYLES[last.side])
        if last.attacker is not None and last.defender is not None:
            line.append(f" ({last.attacker.label} vs {last.defender.label})")
    if game.result is not None:
        line.append(f"   {game.result}", style="bold")
    else:
        line.append("   to move ")
        line.append(str(game.side_to_move), style=SIDE_STYLES[game.side_to_move])
    return line


def board_panel(
    game: Game,
    names: Mapping[Side, str],
    *,
    style: str = "american",
    last: MoveResult | None = None,
    title: str | None = None,
) -> Panel:
    heading = Text.assemble(
        (visible(names.get(Side.RED, "red")), SIDE_STYLES[Side.RED]),  # a name is the bot's own choice
        " vs ",
        (visible(names.get(Side.BLUE, "blue")), SIDE_STYLES[Side.BLUE]),
    )
    return Panel(
        Group(board_text(game, style=style, last=last), Text(), status_line(game, last)),
        title=heading if title is None else Text(title),
        expand=False,
    )
