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
dictionary lookup gave. The ruleset must be one we know and the options the rules engine reads must be of its
types and ranges (``options.move_limit: input should be a valid integer, got 1e+30``), so that no reader meets
them as a traceback later, halfway through a replay.

Every reader of records (``replay``, ``analyse``, ``gauntlet --report``, the web views and their folder
watchers, the lab's studies) loads them here, and a record folder is anybody's to write to, so loading is
bounded: at most ``MAX_RECORD_BYTES`` are read (``/dev/zero`` or a huge file is refused at once, not read
until memory runs out) and JSON nested deeper than ``MAX_RECORD_DEPTH`` is refused before it is parsed
(Python's parser recurses: ``'[' * 200000`` was a RecursionError, which no reader caught). Either is a
``RecordError`` like any other bad file: one line, and the other records are read.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    ConfigDict,
    GetPydanticSchema,
    StrictBool,
    StrictInt,
    TypeAdapter,
    ValidationError,
    with_config,
)
from typing_extensions import TypedDict

from engine_ext.bounded_read import FileTooLarge, JsonTooDeep, check_json_depth, read_bounded
from engine_ext.rules.game import RulesOptions
from engine_ext.rules.rulesets import get_ruleset

FORMAT = "perspecto-record/1"
# The largest record file read. Measured: a host game between two Perspecto bots, both sending their engine's
# info with every move, takes 490 bytes a ply (674 at most), so the longest game the rules allow (8000 plies,
# MAX_MOVE_LIMIT) is about 4-5 MB and a tournament game (2000 plies) 1 MB. 16 MiB also holds a 2000-ply game
# whose bots send the most info the protocol lets them (about 6 KB a move), and keeps what a hostile file of
# that size costs to parse to a few hundred MB.
MAX_RECORD_BYTES = 16 * 2**20
# The deepest nesting of a record's JSON: a real one has 6 levels (record, moves, a move, its info, its pv, a
# move of the pv); the rest is room for what later versions add.
MAX_RECORD_DEPTH = 32
# Errors listed in a RecordError's message; a file broken everywhere says how many more there are.
_ERRORS_SHOWN = 5


class RecordError(ValueError):
    """A file that is not a valid game record; the message says why, naming each bad field by its path."""


def _known_ruleset(name: str) -> str:
    get_ruleset(name)  # ValueError: unknown ruleset '../../x' (known: classic, barrage, mini)
    return name


@with_config(ConfigDict(extra="allow"))
class _RuleOptions(TypedDict, total=False):
    """The options the rules engine reads, with its types; the others a writer keeps there (the lab's
    ``nodes``, the host's times, the UCC referee's name) pass as they are."""

    range_attacks: StrictBool
    two_squares: StrictInt | None
    more_squares: StrictBool
    move_limit: StrictInt


def _rules_allow(options: dict[str, Any]) -> dict[str, Any]:
    # The ranges are the rules engine's own (RulesOptions checks them), not a copy of them here.
    RulesOptions(**{key: options[key] for key in _RuleOptions.__annotations__ if key in options})
    return options


# A dict to the code that reads it, validated as ``_RuleOptions`` (errors name ``options.move_limit``).
RecordOptions = Annotated[dict[str, Any], GetPydanticSchema(lambda _type, handler: handler(_RuleOptions)),
                          AfterValidator(_rules_allow)]


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
    ruleset: Annotated[str, AfterValidator(_known_ruleset)]
    options: RecordOptions
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
        """The record in ``text``; ``RecordError`` when it is not JSON, nested too deeply, not this format, or a
        field is missing, of the wrong type or out of range."""
        try:
            check_json_depth(text, MAX_RECORD_DEPTH)
        except JsonTooDeep as exc:
            raise RecordError(f"not a {FORMAT} record: {exc}") from None
        try:
            data = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or an integer of more digits than Python converts
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
        """The record in the file ``path``: ``RecordError`` for anything that is not a record (too large
        included), ``OSError`` when it cannot be read."""
        try:
            data = read_bounded(path, MAX_RECORD_BYTES, "a game record")
        except FileTooLarge as exc:
            raise RecordError(str(exc)) from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(f"not UTF-8 text: {exc}") from None
        return cls.from_json(text)


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
        message = error["msg"].removeprefix("Value error, ")  # a check of ours: its message says it all
        problem = f"{_field_path(error['loc'])}: {message[:1].lower()}{message[1:]}"
        if error["type"] not in ("missing", "value_error"):
            shown = repr(error["input"])
            problem += f", got {shown if len(shown) <= 40 else shown[:37] + '...'}"
        problems.append(problem)
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
