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
