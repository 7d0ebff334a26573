"""Named setups kept as TOML files: the ones that ship in ``setups/library/`` and the user's own.

A library file looks like this (``ruleset`` at the top is the default for its entries)::

    ruleset = "classic"

    [[setup]]
    name = "corner-fortress-left"
    description = "Flag in the left back corner behind two bombs ..."
    tags = ["flag-corner", "fortress"]
    notation = "american"          # optional: american, ucc or gravon; detected when left out
    rows = [                       # front row first; or one string with the rows on separate lines
        "S47B56S4S6",
        "5X9M768N5S",
        "BB45N687SS",
        "FBBNSN4NSB",
    ]

Names are unique per ruleset. User directories (given by the caller, e.g. from the bot's
configuration, and the ``PERSPECTO_SETUPS_DIR`` environment variable, several joined with the path
separator) are read after the shipped files, so a user entry with a shipped name replaces it.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from engine_ext.rules.rulesets import CLASSIC, Ruleset, SetupError, get_ruleset
from setups.notation import Setup, parse_setup

SETUPS_DIR_ENV = "PERSPECTO_SETUPS_DIR"


class LibraryError(ValueError):
    """A library file that cannot be read, or an entry in it that is not a legal setup."""


@dataclass(frozen=True)
class NamedSetup:
    """A setup with the name and idea people know it by."""

    name: str
    setup: Setup
    description: str = ""
    tags: tuple[str, ...] = ()
    source: str = ""  # the file it came from, or how it was made

    @property
    def ruleset(self) -> Ruleset:
        return self.setup.ruleset


def _ruleset_of(value: Ruleset | str) -> Ruleset:
    return value if isinstance(value, Ruleset) else get_ruleset(value)


def _entry_text(entry: dict[str, Any]) -> str:
    rows = entry.get("rows", entry.get("text"))
    if isinstance(rows, str):
        return rows
    if isinstance(rows, list) and all(isinstance(r, str) for r in rows):
        return "\n".join(rows)
    raise SetupError("needs 'rows': a list of row strings (front row first) or one multi-line string")


def read_setup_file(path: Path | str) -> list[NamedSetup]:
    """Every entry of one library file, each checked to be legal; ``LibraryError`` names the file,
    the entry and the exact reason otherwise."""
    path = Path(path)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise LibraryError(f"{path}: {exc}") from None
    default_ruleset = str(document.get("ruleset", CLASSIC.name))
    entries = document.get("setup", [])
    if not isinstance(entries, list):
        raise LibraryError(f"{path}: 'setup' must be an array of tables ([[setup]])")
    found: list[NamedSetup] = []
    seen: set[tuple[str, str]] = set()
    for number, entry in enumerate(entries, start=1):
        name = str(entry.get("name", "")).strip()
        label = f"{path}: setup {name!r}" if name else f"{path}: setup #{number}"
        if not name:
            raise LibraryError(f"{label}: has no name")
        try:
            ruleset = get_ruleset(str(entry.get("ruleset", default_ruleset)))
            setup = parse_setup(_entry_text(entry), ruleset, entry.get("notation"))
        except (SetupError, ValueError) as exc:
            raise LibraryError(f"{label}: {exc}") from None
        if (ruleset.name, name) in seen:
            raise LibraryError(f"{label}: the name is used twice for {ruleset.name}")
        seen.add((ruleset.name, name))
        tags = entry.get("tags", [])
        found.append(
            NamedSetup(
                name=name,
                setup=setup,
                description=str(entry.get("description", "")).strip(),
                tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
                source=str(path),
            )
        )
    return found


def shipped_library_dir() -> Path:
    return Path(str(resources.files("setups") / "library"))


def user_setup_dirs(extra: Iterable[Path | str] | None = None, *, use_env: bool = True) -> list[Path]:
    """The user directories to read: ``extra`` first, then those in ``PERSPECTO_SETUPS_DIR``."""
    dirs = [Path(d).expanduser() for d in (extra or [])]
    if use_env:
        dirs.extend(Path(d).expanduser() for d in os.environ.get(SETUPS_DIR_ENV, "").split(os.pathsep) if d)
    return dirs


@dataclass
class SetupLibrary:
    """Named setups by (ruleset, name); later additions replace earlier ones of the same name."""

    _entries: dict[tuple[str, str], NamedSetup] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # files or entries skipped while loading

    @classmethod
    def load(
        cls,
        user_dirs: Iterable[Path | str] | None = None,
        *,
        use_env: bool = True,
        include_shipped: bool = True,
        strict: bool = False,
    ) -> SetupLibrary:
        """The shipped setups, then the user's. A bad user file is recorded in ``errors`` and skipped
        (a tournament should not stop over it) unless ``strict``; a bad shipped file always raises."""
        library = cls()
        if include_shipped:
            for path in sorted(shipped_library_dir().glob("*.toml")):
                library.extend(read_setup_file(path))
        for directory in user_setup_dirs(user_dirs, use_env=use_env):
            if not directory.is_dir():
                library._fail(f"{directory}: not a directory", strict)
                continue
            for path in sorted(directory.glob("*.toml")):
                try:
                    library.extend(read_setup_file(path))
                except LibraryError as exc:
                    library._fail(str(exc), strict)
        return library

    def _fail(self, message: str, strict: bool) -> None:
        if strict:
            raise LibraryError(message)
        self.errors.append(message)

    def add(self, entry: NamedSetup) -> None:
        self._entries[(entry.ruleset.name, entry.name)] = entry

    def extend(self, entries: Iterable[NamedSetup]) -> None:
        for entry in entries:
            self.add(entry)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[NamedSetup]:
        return iter(self._entries.values())

    def __contains__(self, key: object) -> bool:
        """``(ruleset_name, name)``, or a bare name of any ruleset."""
        if isinstance(key, str):
            return any(name == key for _, name in self._entries)
        return key in self._entries

    def entries(self, ruleset: Ruleset | str | None = None) -> list[NamedSetup]:
        """Entries sorted by ruleset and name, optionally of one ruleset only."""
        wanted = None if ruleset is None else _ruleset_of(ruleset).name
        return [e for (rs, _), e in sorted(self._entries.items()) if wanted is None or rs == wanted]

    def names(self, ruleset: Ruleset | str = CLASSIC) -> list[str]:
        return [e.name for e in self.entries(ruleset)]

    def get(self, name: str, ruleset: Ruleset | str = CLASSIC) -> NamedSetup:
        """The entry called ``name`` for ``ruleset``; ``KeyError`` suggests close names."""
        rs = _ruleset_of(ruleset).name
        entry = self._entries.get((rs, name))
        if entry is None:
            close = difflib.get_close_matches(name, self.names(rs), n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise KeyError(f"no {rs} setup named {name!r}{hint}")
        return entry

    def lookup(self, name: str, ruleset: Ruleset | str | None = None) -> NamedSetup:
        """Like ``get``, but without a ruleset the name may belong to any one ruleset."""
        if ruleset is not None:
            return self.get(name, ruleset)
        matches = [e for (_, n), e in sorted(self._entries.items()) if n == name]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(e.ruleset.name for e in matches)
            raise KeyError(f"{name!r} names setups of several rulesets ({names}); give the ruleset")
        return self.get(name, CLASSIC)  # raises with suggestions

    def find(self, setup: Setup) -> NamedSetup | None:
        """The entry holding exactly this setup, if any."""
        for (rs, _), entry in sorted(self._entries.items()):
            if rs == setup.ruleset.name and entry.setup.cells == setup.cells:
                return entry
        return None


def load_library(user_dirs: Iterable[Path | str] | None = None, *, use_env: bool = True) -> SetupLibrary:
    """Shipped plus user setups (see ``SetupLibrary.load``)."""
    return SetupLibrary.load(user_dirs, use_env=use_env)


def load_setup(
    name: str, ruleset: Ruleset | str = CLASSIC, user_dirs: Iterable[Path | str] | None = None
) -> Setup:
    """One named setup, by name."""
    return load_library(user_dirs).get(name, ruleset).setup
