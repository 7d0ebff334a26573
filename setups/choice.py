"""Which setup to play against an opponent, and what to play when the host refuses one.

An opponent profile carries a ``SetupChoice``; the bot keeps one ``SetupChooser`` for it and passes
in the setup it played against that opponent last time (the caller persists that history, as a
name or as setup text). Unless ``allow_repeat`` is set the chooser never hands out that same setup
again:

- ``fixed``: always the named setup; when it was the last one played, its left-right mirror image
  (the same idea, different squares), and back again the time after; a symmetric setup falls back to
  a generated one;
- ``pool``: the named setups in turn, starting after the last one played (at a random place when
  there is no history), skipping any that equals the last one;
- ``generated``: a new setup from the generator each game.

Names the chooser hands out can all be given back as ``previous``: library names, ``NAME-mirrored``
and ``generated-SEED`` (regenerated from the seed).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from engine_ext.rules.rulesets import CLASSIC, Ruleset, SetupError
from setups.generator import generate_setup
from setups.library import NamedSetup, SetupLibrary, load_library
from setups.notation import Setup, parse_setup

MIRRORED_SUFFIX = "-mirrored"
GENERATED_PREFIX = "generated-"
MAX_DRAWS = 50


class SetupChoice(BaseModel):
    """How an opponent profile picks its setups."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["fixed", "pool", "generated"] = "generated"
    name: str | None = Field(default=None, description="the setup for mode 'fixed'")
    pool: list[str] = Field(default_factory=list, description="the setups for mode 'pool', played in turn")
    allow_repeat: bool = False

    @model_validator(mode="after")
    def _names_for_mode(self) -> SetupChoice:
        if self.mode == "fixed" and not self.name:
            raise ValueError("mode 'fixed' needs a setup name")
        if self.mode == "pool" and not self.pool:
            raise ValueError("mode 'pool' needs at least one setup name")
        return self


class SetupChooser:
    """Picks setups for one opponent profile; see the module docstring for the rules."""

    def __init__(
        self,
        choice: SetupChoice,
        ruleset: Ruleset = CLASSIC,
        library: SetupLibrary | None = None,
        rng: random.Random | int | None = None,
    ) -> None:
        self.choice = choice
        self.ruleset = ruleset
        self.library = library if library is not None else load_library()
        self.rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        self._refused: set[str] = set()  # keys of setups the host refused: never offered again
        # A misspelt name should fail when the profile is loaded, not in the middle of a tournament.
        for name in self._configured_names():
            self.library.get(name, ruleset)

    def _configured_names(self) -> list[str]:
        if self.choice.mode == "fixed" and self.choice.name:
            return [self.choice.name]
        if self.choice.mode == "pool":
            return list(self.choice.pool)
        return []

    # -- names and history --------------------------------------------------------------------
    def resolve(self, previous: Setup | str | None) -> Setup | None:
        """The setup behind a name this chooser hands out or behind setup text; ``None`` if neither."""
        if previous is None or isinstance(previous, Setup):
            return previous
        text = previous.strip()
        if (self.ruleset.name, text) in self.library:
            return self.library.get(text, self.ruleset).setup
        if text.endswith(MIRRORED_SUFFIX):
            base = text[: -len(MIRRORED_SUFFIX)]
            if (self.ruleset.name, base) in self.library:
                return self.library.get(base, self.ruleset).setup.mirrored()
        if text.startswith(GENERATED_PREFIX) and text[len(GENERATED_PREFIX):].isdigit():
            return generate_setup(self.ruleset, int(text[len(GENERATED_PREFIX):]))
        try:
            return parse_setup(text, self.ruleset)
        except SetupError:
            return None

    def _generated(self) -> NamedSetup:
        seed = self.rng.randrange(2**32)
        return NamedSetup(
            name=f"{GENERATED_PREFIX}{seed}",
            setup=generate_setup(self.ruleset, seed),
            description="generated from the human statistics above the semi-random floor",
            source="generator",
        )

    def _mirror(self, entry: NamedSetup) -> NamedSetup:
        return NamedSetup(
            name=f"{entry.name}{MIRRORED_SUFFIX}",
            setup=entry.setup.mirrored(),
            description=f"{entry.description} (mirrored left to right)".strip(),
            tags=entry.tags,
            source=entry.source,
        )

    def _candidates(self, after: Setup | None, after_name: str | None) -> Iterator[NamedSetup]:
        """Setups in the order this mode prefers them, generated ones last (endless)."""
        configured = [self.library.get(n, self.ruleset) for n in self._configured_names()]
        if configured:
            start = 0
            if self.choice.mode == "pool":
                start = self.rng.randrange(len(configured))
                for k, entry in enumerate(configured):
                    if entry.name == after_name or (after is not None and entry.setup.cells == after.cells):
                        start = k + 1
                        break
            ordered = configured[start:] + configured[:start]
            yield from ordered
            for entry in ordered:
                yield self._mirror(entry)
        while True:
            yield self._generated()

    def choose(self, previous: Setup | str | None = None) -> NamedSetup:
        """The setup for the next game against this opponent, given the one played last time."""
        last = self.resolve(previous)
        last_name = previous.strip() if isinstance(previous, str) else None
        for count, candidate in enumerate(self._candidates(last, last_name)):
            if candidate.setup.key in self._refused:
                continue
            if self.choice.allow_repeat or last is None or candidate.setup.cells != last.cells:
                return candidate
            if count > MAX_DRAWS:
                break
        raise RuntimeError("no setup differs from the previous one")  # the generator never repeats

    def alternative(self, rejected: Setup) -> Setup:
        """A different legal setup, for when the host answers illegalSetup. Every setup refused so far
        is remembered and not offered again, by this call or by ``choose``."""
        self._refused.add(rejected.key)
        for count, candidate in enumerate(self._candidates(rejected, None)):
            setup = candidate.setup
            if setup.key not in self._refused and setup.is_legal():
                return setup
            if count > MAX_DRAWS + len(self._refused):
                break
        raise RuntimeError("no legal alternative setup found")
