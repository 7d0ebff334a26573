"""Game records: what the host saves for every game and what ``perspecto replay`` reads.

A record is one JSON object (format ``perspecto-record/1``):

    {"format": "perspecto-record/1", "game_id": "...", "ruleset": "classic",
     "options": {"range_attacks": true, "two_squares": 5, "more_squares": true, "move_limit": 2000},
     "red": {"name": "...", "setup": {"A1": "flag", ...}},
     "blue": {"name": "...", "setup": {...}},
     "moves": [{"side": "red", "move": "A4-A5"},
               {"side": "blue", "move": "B7-B5", "outcome": "x", "attacker": "scout", "defender": "spy"}],
     "result": {"winner": "red" | "blue" | null, "reason": "flag" | "no_moves" | "draw_no_movable"
                | "move_limit" | "forfeit_timeout" | ..., "plies": 123},
     "started": "2026-11-22T01:02:03Z"}

``outcome`` is the thesis notation: ``x`` the attacker won, ``o`` it lost, ``xo`` both fell; absent for a
plain move. ``attacker`` and ``defender`` are the revealed ranks of an attack.

``info`` (optional, absent when the bot sent none) is what the moving bot's engine said about the move: the
``info`` object of its getAIMove answer as the host validated it (protocol 1.1, docs/protocol.md), e.g.
``{"depth": 4, "nodes": 51234, "time": 0.81, "value": 1.5, "pv": [{"from": "A4", "to": "A5"}],
"reasons": ["p-e-minimax to ply 4 ..."]}``. Records written before it existed load as they are.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "perspecto-record/1"


@dataclass
class RecordedMove:
    side: str
    move: str
    outcome: str | None = None
    attacker: str | None = None
    defender: str | None = None
    info: dict[str, Any] | None = None  # the engine's own account of the move (see above)

    def notation(self) -> str:
        """The thesis's move notation: A5-A6, A5xA6 (won), A5oA6 (lost), A5xoA6 (both fell)."""
        if not self.outcome:
            return self.move
        frm, to = self.move.split("-")
        return f"{frm}{self.outcome}{to}"


@dataclass
class RecordedPlayer:
    name: str
    setup: dict[str, str]


@dataclass
class GameRecord:
    ruleset: str
    options: dict[str, Any]
    red: RecordedPlayer
    blue: RecordedPlayer
    moves: list[RecordedMove] = field(default_factory=list)
    result: dict[str, Any] | None = None
    game_id: str = ""
    started: str = ""

    def to_json(self) -> str:
        data = {"format": FORMAT, **asdict(self)}
        # Drop absent attack fields (and an absent info) so plain moves stay short.
        data["moves"] = [{k: v for k, v in m.items() if v is not None} for m in data["moves"]]
        return json.dumps(data, indent=None, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> GameRecord:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} record (format is {data.get('format')!r})")
        return cls(
            ruleset=data["ruleset"],
            options=data.get("options", {}),
            red=RecordedPlayer(**data["red"]),
            blue=RecordedPlayer(**data["blue"]),
            moves=[RecordedMove(**m) for m in data.get("moves", [])],
            result=data.get("result"),
            game_id=data.get("game_id", ""),
            started=data.get("started", ""),
        )

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        try:
            tmp.write_text(self.to_json() + "\n", encoding="utf-8")
            tmp.replace(path)
        except OSError:  # a full disk: no half-written file left behind
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise

    @classmethod
    def load(cls, path: Path) -> GameRecord:
        return cls.from_json(path.read_text(encoding="utf-8"))
