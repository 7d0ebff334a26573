"""A game as the web page shows it: three boards (the referee's, and what each side knows) at the start, and
for every move the squares it changed on each board, the pieces it captured, the thesis notation, the
engine's ``info`` when the record has it, each side's thinking time so far and red's winning chances
(bot/web/outlook.py: the graph's value, the same scale for every engine).

The boards come from the rules engine, never from the page: the referee's is a ``Game`` with both setups;
a side's own view is a ``Game`` with the opponent's pieces hidden, played with ``play_observed`` and the
ranks an attack reveals, exactly as a bot keeps its view (bot/daemon/client.py). So the page only applies
the changes it is sent; seeking to a ply is replaying those changes, with no rules in JavaScript.

A cell is ``"red/marshal"``, ``"blue/unknown"`` (a piece that side cannot see) or ``"blue/unknown/moved"``
(unseen, but it has moved, so it is neither a bomb nor the flag); ``null`` is an empty square.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from bot.web.outlook import red_chance
from engine_ext.rules.game import Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordedMove
from engine_ext.rules.replay import ReplayError, replay_positions
from engine_ext.rules.rulesets import SetupError, Square
from protocol.messages import MoveInfo
from protocol.validation import validation_text

REFEREE = "referee"
VIEWS = (REFEREE, str(Side.RED), str(Side.BLUE))

Cells = dict[str, str]  # square name -> cell, occupied squares only


def cell(game: Game, square: Square) -> str | None:
    piece = game.piece_at(square)
    if piece is None:
        return None
    side, rank = piece
    text = f"{side}/{rank.name.lower()}"
    if rank == Rank.UNKNOWN and game.has_moved(square):
        text += "/moved"
    return text


def cells(game: Game) -> Cells:
    out: Cells = {}
    for square in game.pieces():
        value = cell(game, square)
        assert value is not None
        out[str(square)] = value
    return out


def _captured(played: MoveResult) -> list[str]:
    """The pieces the move took off the board, as cells of the referee's board."""
    mover, other = played.side, played.side.other
    fallen: list[tuple[Side, Rank | None]] = []
    if played.outcome in ("x", "xo"):
        fallen.append((other, played.defender))
    if played.outcome in ("o", "xo"):
        fallen.append((mover, played.attacker))
    return [f"{side}/{rank.name.lower()}" for side, rank in fallen if rank is not None]


def move_info(recorded: RecordedMove) -> dict[str, Any] | None:
    """The engine's ``info`` of a recorded move (depth, nodes, time, value, pv, reasons), if it has one,
    checked against the protocol's model (docs/protocol.md): an info in a shape the protocol does not allow
    (a hand-edited record) comes as ``{"unreadable": why}``, never as data the page would trust."""
    raw = dataclasses.asdict(recorded).get("info")  # the move's JSON form: there exactly when the bot sent it
    if raw is None:
        return None
    try:
        return MoveInfo.model_validate(raw).to_wire()
    except ValidationError as exc:
        return {"unreadable": validation_text(exc)}


def _info_time(info: dict[str, Any] | None) -> float | None:
    """The seconds a bot said it took (its ``info.time``), when its info is readable and has them."""
    value = None if info is None else info.get("time")
    return float(value) if isinstance(value, int | float) else None


class Timeline:
    """One game's boards, built move by move (live from the host) or all at once (from a record)."""

    def __init__(self, options: RulesOptions, setups: Mapping[Side, Mapping[Square, Rank]]) -> None:
        red, blue = dict(setups[Side.RED]), dict(setups[Side.BLUE])
        self.options = options
        self.games: dict[str, Game] = {
            REFEREE: Game(options, red, blue),
            str(Side.RED): Game(options, red, dict.fromkeys(blue, Rank.UNKNOWN)),
            str(Side.BLUE): Game(options, dict.fromkeys(red, Rank.UNKNOWN), blue),
        }
        self.start: dict[str, Cells] = {view: cells(game) for view, game in self.games.items()}
        self.start_outlook = red_chance(self.referee)
        self.moves: list[dict[str, Any]] = []
        self.used: dict[str, float] = {str(Side.RED): 0.0, str(Side.BLUE): 0.0}  # thinking time so far

    @property
    def referee(self) -> Game:
        return self.games[REFEREE]

    def add(self, move: Move, recorded: RecordedMove | None = None, *, seconds: float | None = None) -> dict[str, Any]:
        """Play ``move`` on the three boards; the entry the page gets for it. ``recorded``: the record's
        move (its outcome is checked, its info shown). ``seconds``: the mover's thinking time as the host
        measured it (a live game); without it, the time the bot gave in its ``info`` (a record) counts."""
        ply = self.referee.ply + 1
        played = self.referee.play(move)
        if recorded is not None and recorded.outcome != played.outcome:
            raise ReplayError(f"ply {ply}: {move} gives {played.outcome!r}, the record says {recorded.outcome!r}")
        for side in (Side.RED, Side.BLUE):
            self.games[str(side)].play_observed(move, played.attacker, played.defender)
        # A move changes its two squares and no other, on every board (a scout's path stays empty, a reveal
        # is of the mover or of the piece it attacks); the tests hold every board to a full scan.
        changes: dict[str, dict[str, str | None]] = {
            view: {str(sq): cell(game, sq) for sq in (move.frm, move.to)} for view, game in self.games.items()
        }
        info = move_info(recorded) if recorded is not None else None
        took = seconds if seconds is not None else _info_time(info)
        if took is not None:
            self.used[str(played.side)] += took
        entry: dict[str, Any] = {
            "ply": ply, "side": str(played.side), "move": str(move), "notation": played.notation(),
            "outcome": played.outcome,
            "attacker": played.attacker.name.lower() if played.attacker is not None else None,
            "defender": played.defender.name.lower() if played.defender is not None else None,
            "captured": _captured(played), "changes": changes, "info": info, "seconds": seconds,
            "took": took, "used": {side: round(total, 3) for side, total in self.used.items()},
            "outlook": red_chance(self.referee),
        }
        self.moves.append(entry)
        return entry

    def document(self) -> dict[str, Any]:
        """The boards part of a game's JSON (the page's ``/api/games/ID`` adds who, when and how it ended)."""
        ruleset = self.options.ruleset
        return {
            "board": {
                "ruleset": ruleset.name, "width": ruleset.width, "height": ruleset.height,
                "lakes": sorted(str(sq) for sq in ruleset.lakes),
                "pieces": {rank.name.lower(): count for rank, count in ruleset.pieces.items()},
                "symbols": {rank.name.lower(): rank.symbol("american") for rank in Rank},
            },
            "start": self.start,
            "start_outlook": self.start_outlook,
            "moves": self.moves,
        }


def setups_of(record: GameRecord) -> dict[Side, dict[Square, Rank]]:
    try:
        return {
            side: {Square.parse(sq): Rank.parse(rank) for sq, rank in player.setup.items()}
            for side, player in ((Side.RED, record.red), (Side.BLUE, record.blue))
        }
    except ValueError as exc:
        raise ReplayError(f"the record's setups do not make a game: {exc}") from None


def timeline_of(record: GameRecord) -> Timeline:
    """The whole game of a record, every move checked by the rules engine (as ``perspecto replay`` does:
    the side to move, the legality, the outcome of attacks and the stated result)."""
    positions = replay_positions(record)
    game, _ = next(positions)  # the record's rules, setups checked
    try:
        timeline = Timeline(game.options, setups_of(record))
    except (SetupError, ValueError) as exc:
        raise ReplayError(f"the record's setups do not make a game: {exc}") from None
    for index, (_game, played) in enumerate(positions):  # the last step checks the stated result
        assert played is not None
        try:
            timeline.add(played.move, record.moves[index])
        except IllegalMove as exc:  # cannot be, once the referee's board took it; say so if it ever is
            raise ReplayError(f"ply {index + 1}: {played.move}: {exc}") from None
    return timeline
