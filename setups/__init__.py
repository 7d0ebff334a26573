"""Perspecto's setups: notation, the named library, human statistics, the generator and the choice
per opponent. See docs/setups.md.

Quick use::

    from setups import load_setup, generate_setup, parse_setup, SetupChooser, SetupChoice
    setup = load_setup("corner-fortress-left")           # classic by default
    placement = setup.placement(Side.BLUE)               # dict[Square, Rank] for the board
    fresh = generate_setup(seed=7)                        # legal, human-like, above the floor
    chooser = SetupChooser(SetupChoice(mode="pool", pool=["turtle", "lake-bluff"]))
    chosen = chooser.choose(previous="turtle")            # never "turtle" again in a row
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from setups.choice import SetupChoice, SetupChooser
    from setups.generator import (
        FloorRules,
        floor_rules,
        floor_violations,
        generate_setup,
        random_setup,
    )
    from setups.library import (
        SETUPS_DIR_ENV,
        LibraryError,
        NamedSetup,
        SetupLibrary,
        load_library,
        load_setup,
        read_setup_file,
    )
    from setups.notation import (
        Notation,
        Setup,
        detect_notation,
        format_setup,
        parse_setup,
        rank_letter,
        ucc_setup_lines,
    )
    from setups.stats import SetupScore, SetupStats, compute_stats, load_stats

__all__ = [
    "SETUPS_DIR_ENV",
    "FloorRules",
    "LibraryError",
    "NamedSetup",
    "Notation",
    "Setup",
    "SetupChoice",
    "SetupChooser",
    "SetupLibrary",
    "SetupScore",
    "SetupStats",
    "compute_stats",
    "detect_notation",
    "floor_rules",
    "floor_violations",
    "format_setup",
    "generate_setup",
    "load_library",
    "load_setup",
    "load_stats",
    "parse_setup",
    "random_setup",
    "rank_letter",
    "read_setup_file",
    "ucc_setup_lines",
]

# Each public name and the module that holds it: importing ``setups`` imports none of them (setups.choice
# costs pydantic, and ``perspecto ucc`` imports the generator before its setup is out: docs/ucc.md).
_HOME = {
    "SetupChoice": "setups.choice",
    "SetupChooser": "setups.choice",
    "FloorRules": "setups.generator",
    "floor_rules": "setups.generator",
    "floor_violations": "setups.generator",
    "generate_setup": "setups.generator",
    "random_setup": "setups.generator",
    "SETUPS_DIR_ENV": "setups.library",
    "LibraryError": "setups.library",
    "NamedSetup": "setups.library",
    "SetupLibrary": "setups.library",
    "load_library": "setups.library",
    "load_setup": "setups.library",
    "read_setup_file": "setups.library",
    "Notation": "setups.notation",
    "Setup": "setups.notation",
    "detect_notation": "setups.notation",
    "format_setup": "setups.notation",
    "parse_setup": "setups.notation",
    "rank_letter": "setups.notation",
    "ucc_setup_lines": "setups.notation",
    "SetupScore": "setups.stats",
    "SetupStats": "setups.stats",
    "compute_stats": "setups.stats",
    "load_stats": "setups.stats",
}


def __getattr__(name: str) -> object:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later look-ups find it without coming here
    return value
