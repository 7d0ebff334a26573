"""``perspecto replay FILE``: show a saved game move by move, replayed through the rules engine."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live

from bot.host.board_view import board_panel
from engine_ext.rules.game import Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import RANK_STYLES, Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import Square, get_ruleset


class ReplayError(ValueError):
    """A record the rules engine cannot replay as written; the message names the ply."""


def _placement(setup: dict[str, str]) -> dict[Square, Rank]:
    return {Square.parse(sq): Rank.parse(rank) for sq, rank in setup.items()}


def replay_positions(record: GameRecord) -> Iterator[tuple[Game, MoveResult | None]]:
    """The game after its setups (with None), then after every move; each move is checked against the
    record: the side, the legality and the outcome of attacks."""
    known = ("range_attacks", "two_squares", "more_squares", "move_limit")
    rules = {k: v for k, v in record.options.items() if k in known}
    options = RulesOptions(ruleset=get_ruleset(record.ruleset), **rules)
    try:
        game = Game(options, _placement(record.red.setup), _placement(record.blue.setup))
    except ValueError as exc:
        raise ReplayError(f"the record's setups do not make a game: {exc}") from None
    yield game, None
    for ply, recorded in enumerate(record.moves, start=1):
        if recorded.side != str(game.side_to_move):
            raise ReplayError(f"ply {ply}: the record has {recorded.side} moving on {game.side_to_move}'s turn")
        try:
            played = game.play(Move.parse(recorded.move))
        except (IllegalMove, ValueError) as exc:
            raise ReplayError(f"ply {ply}: {recorded.move}: {exc}") from None
        if played.outcome != recorded.outcome:
            raise ReplayError(
                f"ply {ply}: {recorded.move} gives {played.outcome!r}, the record says {recorded.outcome!r}"
            )
        yield game, played
    check_result(record, game)


def _describe(winner: str | None, reason: object) -> str:
    return f"{'a draw' if winner is None else winner + ' winning'} by {reason}"


def check_result(record: GameRecord, game: Game) -> None:
    """The record's stated result against the game its moves lead to: an ending the rules decide (flag,
    no moves, no movable pieces, move limit) must be the one the moves reach; a forfeit must come while
    the game is still on, and its winner is the side that did not forfeit."""
    result = record.result
    if not result:
        return
    winner, reason, forfeits = result.get("winner"), result.get("reason"), result.get("forfeits") or []
    try:
        sides = [str(Side.parse(side)) for side in [*forfeits, *([winner] if winner is not None else [])]]
    except ValueError as exc:
        raise ReplayError(f"the record's result names no side: {exc}") from None
    plies = result.get("plies")
    if plies is not None and plies != len(record.moves):
        raise ReplayError(f"the record's result says {plies} plies, the record has {len(record.moves)} moves")
    if forfeits or str(reason).startswith("forfeit"):
        if game.result is not None:
            raise ReplayError(f"the record says {_describe(winner, reason)}, but its moves had ended the game "
                              f"already: {game.result}")
        if forfeits:
            expected = None if len(forfeits) > 1 else str(Side.parse(forfeits[0]).other)
            if winner != expected:
                who = " and ".join(sides[:len(forfeits)])
                raise ReplayError(f"the record says {_describe(winner, reason)}, but {who} forfeited")
        return
    if reason == "adjourned":  # the host stopped it unfinished (bot/host/referee.py ADJOURNED): undecided, no winner
        if game.result is not None or winner is not None:
            raise ReplayError(f"the record says the game was adjourned, but its moves had ended it: {game.result}")
        return
    if game.result is None:
        raise ReplayError(f"the record says {_describe(winner, reason)} after {len(record.moves)} plies, but its "
                          "moves leave the game undecided")
    expected_winner = None if game.result.winner is None else str(game.result.winner)
    if (winner, reason) != (expected_winner, game.result.reason):
        raise ReplayError(f"the record says {_describe(winner, reason)}, its moves give "
                          f"{_describe(expected_winner, game.result.reason)}")


def _move_line(played: MoveResult) -> str:
    line = f"{played.side} {played.notation()}"
    if played.attacker is not None and played.defender is not None:
        line += f" ({played.attacker.label} vs {played.defender.label})"
    return line


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
    return lines


def main(args: argparse.Namespace) -> int:
    console = Console()
    try:
        record = GameRecord.load(args.file)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        console.print(f"[red]cannot read {args.file}: {exc}[/red]")
        return 2
    names = {Side.RED: record.red.name, Side.BLUE: record.blue.name}
    moves: list[MoveResult] = []
    try:
        # The whole record is checked before anything is shown: a broken one is refused, not half-shown.
        # replay_positions plays one Game on, so ``final`` ends as the last position.
        for position in replay_positions(record):
            final, last = position
            if last is not None:
                moves.append(last)
    except ReplayError as exc:
        console.print(f"[red]{exc}[/red]")
        return 1
    if args.ply is not None:
        for game, played in replay_positions(record):
            if game.ply >= args.ply or game.ply == len(record.moves):
                console.print(board_panel(game, names, style=args.style, last=played))
                break
    elif console.is_terminal:
        delay = args.delay if args.delay is not None else 0.2
        with Live(console=console, refresh_per_second=30) as live:
            for game, played in replay_positions(record):
                live.update(board_panel(game, names, style=args.style, last=played))
                if delay:
                    time.sleep(delay)
    elif args.every is None:
        for line in summary_lines(record, moves):
            console.print(line, highlight=False)
        console.print(board_panel(final, names, style=args.style, last=last))
    else:
        every = max(1, args.every)
        for game, played in replay_positions(record):
            if played is not None:
                console.print(f"{game.ply:>5}. {_move_line(played)}")
            if played is None or game.ply % every == 0 or game.ply == len(record.moves):
                console.print(board_panel(game, names, style=args.style, last=played))
    if record.result:
        result = record.result
        winner = result.get("winner")
        who = "draw" if winner is None else f"{names[Side.parse(winner)]} ({winner}) wins"
        detail = f": {result['detail']}" if result.get("detail") else ""
        console.print(f"{record.game_id}: {who} by {result.get('reason')} after {result.get('plies')} plies{detail}")
    return 0
