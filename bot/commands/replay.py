"""``perspecto replay FILE``: show a saved game move by move, replayed through the rules engine."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.text import Text

from bot.daemon.runtime import run
from bot.host.board_view import board_panel
from bot.logging_setup import configure_logging
from bot.safe_text import terminal_safe
from bot.web.options import add_web_argument
from engine_ext.rules.game import MoveResult
from engine_ext.rules.pieces import RANK_STYLES, Side
from engine_ext.rules.record import GameRecord, RecordedMove
from engine_ext.rules.replay import ReplayError, replay_positions
from protocol.messages import MoveInfo
from protocol.validation import validation_text


def _move_line(played: MoveResult) -> str:
    line = f"{played.side} {played.notation()}"
    if played.attacker is not None and played.defender is not None:
        line += f" ({played.attacker.label} vs {played.defender.label})"
    return line


def info_lines(recorded: RecordedMove) -> list[str]:
    """What the moving bot's engine said about the move (the record's ``info``, protocol 1.1): one line of
    figures, then its reasons; nothing for a move without info. An info the record holds in a shape the
    protocol does not allow (a hand-edited file) is named, not trusted."""
    if recorded.info is None:
        return []
    try:
        info = MoveInfo.model_validate(recorded.info)
    except ValidationError as exc:
        return [f"info unreadable: {validation_text(exc)}"]
    figures = []
    if info.depth is not None:
        figures.append(f"depth {info.depth}")
    if info.nodes is not None:
        figures.append(f"{info.nodes} nodes")
    if info.time is not None:
        figures.append(f"{info.time:.3f} s")
    if info.value is not None:
        figures.append(f"value {info.value:+.2f}")
    if info.pv:
        figures.append("line " + " ".join(f"{m.frm}-{m.to}" for m in info.pv))
    lines = [", ".join(figures)] if figures else []
    return lines + list(info.reasons or ())


def _with_info(board: Panel, recorded: RecordedMove | None) -> RenderableType:
    """The board, and under it what the engine said about the move that led to it."""
    lines = info_lines(recorded) if recorded is not None else []
    return Group(board, Text("\n".join(lines), style="dim")) if lines else board


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "replay",
        help="show a saved game move by move",
        description="Replay a game record (perspecto-record/1, as saved by host, match and play) through the "
        "rules engine, checking every move, and show it move by move.",
    )
    p.add_argument("file", type=Path, help="the record (a .json file under records/)")
    p.add_argument("--style", default="american", choices=RANK_STYLES, help="rank symbols (default %(default)s)")
    p.add_argument("--delay", type=float, help="seconds a move on a terminal (default 0.2)")
    p.add_argument("--every", type=int, help="without a terminal: every move, and the board every N plies "
                   "(default: a summary and the final board)")
    p.add_argument("--ply", type=int, help="show only the position after this many plies")
    add_web_argument(p, "the record (FILE may then also be a folder of records, new ones shown as they come)")
    p.set_defaults(func=main)


def summary_lines(record: GameRecord, played: list[MoveResult]) -> list[str]:
    """What a game was, in a few lines: who played which side, the rules, the length, the fights."""
    rules = record.ruleset
    if record.options:
        rules += " (" + ", ".join(f"{key} {value}" for key, value in record.options.items()) + ")"
    if record.started:
        rules += f", started {record.started}"
    lines = [f"{record.game_id or 'game'}: {record.red.name} (red) vs {record.blue.name} (blue)", rules]
    fights = {side: sum(1 for p in played if p.side == side and p.outcome) for side in (Side.RED, Side.BLUE)}
    won = {side: sum(1 for p in played if p.side == side and p.outcome == "x") for side in (Side.RED, Side.BLUE)}
    lines.append(f"{len(played)} plies; attacks: red {fights[Side.RED]} (won {won[Side.RED]}), "
                 f"blue {fights[Side.BLUE]} (won {won[Side.BLUE]})")
    explained = {side: sum(1 for m in record.moves if m.side == side and m.info is not None)
                 for side in ("red", "blue")}
    if any(explained.values()):
        lines.append(f"moves with the engine's info (--every 1 shows it): red {explained['red']}, "
                     f"blue {explained['blue']}")
    return lines


def main(args: argparse.Namespace) -> int:
    console = Console()
    if args.web is not None:
        # Here, not above: the web stack (aiohttp) loads only when the page is asked for.
        from bot.web.service import serve_records

        configure_logging("warning")
        return run(serve_records(args.file, args.web, console))
    try:
        record = GameRecord.load(args.file)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        # Whole on one line (a path cut in two by a narrow console is no path to copy); the text may quote the file.
        console.print(f"[red]cannot read {terminal_safe(str(args.file))}: {terminal_safe(str(exc))}[/red]",
                      soft_wrap=True, highlight=False)
        return 2
    names = {Side.RED: record.red.name, Side.BLUE: record.blue.name}  # board_panel shows them safely
    moves: list[MoveResult] = []
    try:
        # The whole record is checked before anything is shown: a broken one is refused, not half-shown.
        # replay_positions plays one Game on, so ``final`` ends as the last position.
        for position in replay_positions(record):
            final, last = position
            if last is not None:
                moves.append(last)
    except ReplayError as exc:  # it may quote the record (a move, a result's reason)
        console.print(f"[red]{terminal_safe(str(exc))}[/red]", highlight=False)
        return 1
    if args.ply is not None:
        for game, played in replay_positions(record):
            if game.ply >= args.ply or game.ply == len(record.moves):
                console.print(_with_info(board_panel(game, names, style=args.style, last=played),
                                         record.moves[game.ply - 1] if game.ply else None))
                break
    elif console.is_terminal:
        delay = args.delay if args.delay is not None else 0.2
        with Live(console=console, refresh_per_second=30) as live:
            for game, played in replay_positions(record):
                live.update(_with_info(board_panel(game, names, style=args.style, last=played),
                                       record.moves[game.ply - 1] if game.ply else None))
                if delay:
                    time.sleep(delay)
    elif args.every is None:
        for line in summary_lines(record, moves):
            console.print(terminal_safe(line), highlight=False)
        console.print(board_panel(final, names, style=args.style, last=last))
    else:
        every = max(1, args.every)
        for game, played in replay_positions(record):
            if played is not None:
                console.print(f"{game.ply:>5}. {_move_line(played)}")
                for line in info_lines(record.moves[game.ply - 1]):
                    console.print(f"         {terminal_safe(line)}", highlight=False, style="dim")
            if played is None or game.ply % every == 0 or game.ply == len(record.moves):
                console.print(board_panel(game, names, style=args.style, last=played))
    if record.result:
        result = record.result
        winner = result.get("winner")
        who = "draw" if winner is None else f"{names[Side.parse(winner)]} ({winner}) wins"
        detail = f": {result['detail']}" if result.get("detail") else ""
        console.print(terminal_safe(f"{record.game_id}: {who} by {result.get('reason')} after {result.get('plies')} "
                                    f"plies{detail}"))
    return 0
