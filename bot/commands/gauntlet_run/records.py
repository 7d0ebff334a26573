"""The records a run leaves: an outcome saved (or its failure marked), a game's line, a record's score read
back, and what a game showed us of the opponent's setup."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from bot.commands.gauntlet_run.jobs import GauntletOutcome
from bot.safe_text import terminal_safe
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord

FAILED_SUFFIX = ".failed"  # beside the records: a game that was played and gave none


def game_line(record: GameRecord, ours: str, seconds: float) -> str:
    result = record.result or {}
    side = Side.RED if record.red.name == ours else Side.BLUE
    winner = result.get("winner")
    verdict = "draw" if winner is None else ("win" if Side.parse(winner) == side else "loss")
    opponent = record.blue.name if side == Side.RED else record.red.name
    return terminal_safe(f"{record.game_id}: {ours} ({side}) against {opponent}: {verdict} by "
                         f"{result.get('reason')} in {result.get('plies')} plies, {seconds:.0f} s")


def save_outcome(outcome: GauntletOutcome, records: Path, console: Console) -> Path | None:
    """The record saved as ``records/GAME_ID.json`` and the game's line printed; None, and the error, when the
    game gave no record."""
    job = outcome.job
    if outcome.record is None:
        console.print(f"[red]{terminal_safe(job.game_id)}: no record: {terminal_safe(str(outcome.error))}[/red]",
                      highlight=False, soft_wrap=True)
        # Played and failed, not unplayed: a report plays the schedule on past it (--resume plays it again).
        (records / f"{job.game_id}{FAILED_SUFFIX}").write_text(f"{outcome.error}\n", encoding="utf-8")
        return None
    path = records / f"{job.game_id}.json"
    outcome.record.save(path)
    (records / f"{job.game_id}{FAILED_SUFFIX}").unlink(missing_ok=True)  # played again (--resume), this time with one
    console.print(game_line(outcome.record, job.ours, outcome.seconds), highlight=False, soft_wrap=True)
    return path


def shown_setup(record: GameRecord, ours: str) -> tuple[str, str] | None:
    """What ``record``'s game showed us of the opponent's setup as the store keeps it: as played, and the colour
    it played (engine_ext/beliefs/observed.py); None: nothing, or a record that does not replay."""
    from engine_ext.beliefs.observed import seen_setup
    from engine_ext.rules.replay import ReplayError, replay_positions

    side = Side.RED if record.red.name == ours else Side.BLUE
    game = None
    try:
        for position, _played in replay_positions(record):
            game = position  # the same game, one move further each time
    except (ReplayError, ValueError, KeyError):
        pass  # what it showed up to there still stands
    if game is None:
        return None
    seen = seen_setup(game, side)
    return None if seen is None else (seen.key, str(side.other))


def record_score(record: GameRecord, ours: str) -> float | None:
    """Our score in a record (1, 0.5, 0); None when ``ours`` is not a player of it."""
    sides = [side for side, player in ((Side.RED, record.red), (Side.BLUE, record.blue)) if player.name == ours]
    if len(sides) != 1:
        return None
    winner = (record.result or {}).get("winner")
    return 0.5 if winner is None else (1.0 if Side.parse(winner) == sides[0] else 0.0)


def existing_score(path: Path, ours: str) -> float | None:
    """The score of a record already in the folder (None: none there, or not one that reads)."""
    if not path.is_file():
        return None
    try:
        return record_score(GameRecord.load(path), ours)
    except (OSError, ValueError, KeyError):
        return None
