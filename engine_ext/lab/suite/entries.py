"""The suite file: positions from our games, each with what the engine must or must not play there.

A suite is one JSON object (format ``perspecto-suite/1``); records are named relative to the suite file's
folder and may be gzipped (``.json.gz``), so the suite ships with the records it needs:

    {"format": "perspecto-suite/1",
     "entries": [{"id": "bomb-01", "category": "likely_bomb", "record": "games/g1.json.gz", "ply": 120,
                  "side": "red", "predicate": "top_piece_spares_likely_bomb",
                  "played": "E6-E7", "note": "why this position is in the suite"}, ...]}

An entry's condition is exactly one of ``predicate`` (a name in engine_ext/lab/suite/predicates.py), ``pass``
(the moves that pass, e.g. ``["E6-E7"]``) or ``fail`` (the moves that fail; any other passes). ``ply`` is the
plies played before the position (as ``perspecto beliefs show --ply``), ``side`` the side to move there (ours).
``played`` is the move the game went on with, for the reader.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from engine_ext.lab.suite.errors import SuiteFileError
from engine_ext.lab.suite.knowledge import Knowledge
from engine_ext.lab.suite.predicates import PREDICATES
from engine_ext.rules.notation import Move
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord, RecordError, describe_validation_error

FORMAT = "perspecto-suite/1"


@dataclass(frozen=True)
class Category:
    name: str
    says: str


# The categories of issue 44, in the order the report lists them.
CATEGORIES: dict[str, Category] = {c.name: c for c in (
    Category("likely_bomb", "a marshal or general next to an unmoved unseen piece while they have unseen bombs"),
    Category("possible_spy",
             "our marshal next to (or a step from) an unseen piece, moved or not, while their spy is unseen"),
    Category("known_raider", "their shown marshal, general or colonel in our half, with an answer in reach"),
    Category("flag_raider", "a miner or unseen mover a few steps from our flag, with a defender in reach"),
    Category("won_endgame", "our strongest piece outranks all they have left; the game still drew or was lost"),
    Category("certain_loss", "a piece of ours next to a shown piece that beats it, and the game attacked it"),
)}


def _move(text: str) -> str:
    Move.parse(text)  # a ValueError names the bad text
    return text.strip().upper()


class Entry(BaseModel):
    """One position and its condition."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    id: str = Field(min_length=1)
    category: str
    record: str = Field(min_length=1)
    ply: int = Field(ge=0)
    side: Literal["red", "blue"]
    predicate: str | None = None
    pass_moves: tuple[str, ...] | None = Field(None, alias="pass")
    fail_moves: tuple[str, ...] | None = Field(None, alias="fail")
    played: str = ""
    note: str = Field(min_length=1)

    @field_validator("category")
    @classmethod
    def _known_category(cls, value: str) -> str:
        if value not in CATEGORIES:
            raise ValueError(f"unknown category {value!r} (known: {', '.join(CATEGORIES)})")
        return value

    @field_validator("predicate")
    @classmethod
    def _known_predicate(cls, value: str | None) -> str | None:
        if value is not None and value not in PREDICATES:
            raise ValueError(f"unknown predicate {value!r} (known: {', '.join(PREDICATES)})")
        return value

    @field_validator("pass_moves", "fail_moves")
    @classmethod
    def _moves(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("at least one move")
        return tuple(_move(text) for text in value)

    @model_validator(mode="after")
    def _one_condition(self) -> Entry:
        given = [name for name, value in (("predicate", self.predicate), ("pass", self.pass_moves),
                                          ("fail", self.fail_moves)) if value is not None]
        if len(given) != 1:
            raise ValueError(f"exactly one of predicate, pass, fail (this entry has {', '.join(given) or 'none'})")
        return self

    @property
    def our_side(self) -> Side:
        return Side.parse(self.side)

    def condition(self) -> str:
        """The condition as the report writes it."""
        if self.predicate is not None:
            return self.predicate
        if self.pass_moves is not None:
            return "one of " + ", ".join(self.pass_moves)
        assert self.fail_moves is not None
        return "none of " + ", ".join(self.fail_moves)

    def passes(self, known: Knowledge, move: Move) -> bool:
        """Whether ``move`` keeps this entry's condition, judged by what our side knew (``known``)."""
        text = str(move).upper()
        if self.pass_moves is not None:
            return text in self.pass_moves
        if self.fail_moves is not None:
            return text not in self.fail_moves
        assert self.predicate is not None
        return PREDICATES[self.predicate].check(known, move)


class _SuiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["perspecto-suite/1"]
    description: str = ""
    entries: list[Entry]

    @model_validator(mode="after")
    def _unique_ids(self) -> _SuiteFile:
        seen: set[str] = set()
        for entry in self.entries:
            if entry.id in seen:
                raise ValueError(f"entry id {entry.id!r} appears twice")
            seen.add(entry.id)
        return self


@cache
def _suite_adapter() -> TypeAdapter[_SuiteFile]:
    return TypeAdapter(_SuiteFile)


@dataclass(frozen=True)
class Suite:
    """A loaded suite: its entries and the folder their records are named from."""

    path: Path
    entries: tuple[Entry, ...]
    description: str = ""

    @classmethod
    def load(cls, path: Path) -> Suite:
        """The suite in ``path``; ``SuiteFileError`` naming what is wrong (every bad field by its path)."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise SuiteFileError(f"{path}: cannot read it: {exc.strerror or exc}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SuiteFileError(f"{path}: not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            found = data.get("format") if isinstance(data, dict) else type(data).__name__
            raise SuiteFileError(f"{path}: not a {FORMAT} file (format is {found!r})")
        try:
            parsed = _suite_adapter().validate_python(data)
        except ValidationError as exc:
            raise SuiteFileError(f"{path}: not a valid suite: {describe_validation_error(exc)}") from None
        suite = cls(path, tuple(parsed.entries), parsed.description)
        for entry in suite.entries:
            if not suite.record_path(entry).is_file():
                raise SuiteFileError(f"{path}: entry {entry.id!r}: no record {entry.record} beside the suite")
        return suite

    def record_path(self, entry: Entry) -> Path:
        return self.path.parent / entry.record

    def load_record(self, entry: Entry) -> GameRecord:
        return load_record(self.record_path(entry))

    def select(self, categories: list[str]) -> list[Entry]:
        return [e for e in self.entries if not categories or e.category in categories]


def load_record(path: Path) -> GameRecord:
    """A game record, plain or gzipped; ``SuiteFileError`` naming the file when it is not one."""
    try:
        raw = path.read_bytes()
        text = gzip.decompress(raw).decode("utf-8") if path.suffix == ".gz" else raw.decode("utf-8")
        return GameRecord.from_json(text)
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError, RecordError) as exc:
        raise SuiteFileError(f"{path}: {exc}") from None


def suite_document(entries: list[Entry], description: str = "") -> str:
    """The suite file's text for ``entries``: one entry a line, so a change to one is one line of a diff."""
    lines = [json.dumps(entry.model_dump(by_alias=True, exclude_none=True), separators=(", ", ": "))
             for entry in entries]
    head = json.dumps({"format": FORMAT, "description": description})[:-1]
    return head + ', "entries": [\n' + ",\n".join(lines) + "\n]}\n"
