"""Game records: what the host saves for every game and what ``perspecto replay`` reads.

A record is one JSON object (format ``perspecto-record/1``):

    {"format": "perspecto-record/1", "game_id": "...", "ruleset": "classic",
     "options": {"range_attacks": true, "two_squares": 5, "more_squares": true, "move_limit": 2000},
     "red": {"name": "...", "setup": {"A1": "flag", ...}},
     "blue": {"name": "...", "setup": {...}},
     "moves": [{"side": "red", "move": "A4-A5"},
               {"side": "blue", "move": "B7-B5", "outcome": "x", "attacker": "scout", "defender": "spy"}],
     "result": {"winner": "red" | "blue" | null, "reason": "flag" | "no_moves" | "attrition" | "draw_no_movable"
                | "move_limit" | "forfeit_timeout" | ..., "plies": 123},
     "started": "2026-11-22T01:02:03Z"}

``outcome`` is the thesis notation: ``x`` the attacker won, ``o`` it lost, ``xo`` both fell; absent for a
plain move. ``attacker`` and ``defender`` are the revealed ranks of an attack.

``info`` (optional, absent when the bot sent none) is what the moving bot's engine said about the move: the
``info`` object of its getAIMove answer as the host validated it (protocol 1.1, docs/protocol.md), e.g.
``{"depth": 4, "nodes": 51234, "time": 0.81, "value": 1.5, "pv": [{"from": "A4", "to": "A5"}],
"reasons": ["p-e-minimax to ply 4 ..."]}``. Records written before it existed load as they are.

Loading validates the file against these dataclasses with pydantic: a file that is not such a record
raises ``RecordError`` naming every bad field by its path (``blue: field required``,
``moves[3].side: input should be a valid string, got 5``), rather than the bare ``KeyError: 'blue'`` a
dictionary lookup gave.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

FORMAT = "perspecto-record/1"
# Errors listed in a RecordError's message; a file broken everywhere says how many more there are.
_ERRORS_SHOWN = 5


class RecordError(ValueError):
    """A file that is not a valid game record; the message says why, naming each bad field by its path."""


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
        """The record in ``text``; ``RecordError`` when it is not JSON, not this format, or a field is
        missing or of the wrong type."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecordError(f"not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise RecordError(f"not a {FORMAT} record: a JSON {type(data).__name__}, not an object")
        if data.get("format") != FORMAT:
            raise RecordError(f"not a {FORMAT} record (format is {data.get('format')!r})")
        fields = {"options": {}, **{key: value for key, value in data.items() if key != "format"}}
        try:
            return _record_adapter().validate_python(fields)
        except ValidationError as exc:
            raise RecordError(f"not a valid record: {describe_validation_error(exc)}") from None

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


@cache
def _record_adapter() -> TypeAdapter[GameRecord]:
    # Built on first use: the schema is compiled once, and importing this module stays cheap.
    return TypeAdapter(GameRecord)


def _field_path(location: tuple[int | str, ...]) -> str:
    """``("moves", 3, "side")`` -> ``moves[3].side``."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(the record)"


def describe_validation_error(exc: ValidationError) -> str:
    """One line: each bad field by its path and what is wrong with it, e.g.
    ``blue: field required; moves[3].side: input should be a valid string, got 5``."""
    problems = []
    for error in exc.errors()[:_ERRORS_SHOWN]:
        problem = f"{_field_path(error['loc'])}: {error['msg'][:1].lower()}{error['msg'][1:]}"
        if error["type"] != "missing":
            shown = repr(error["input"])
            problem += f", got {shown if len(shown) <= 40 else shown[:37] + '...'}"
        problems.append(problem)
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
