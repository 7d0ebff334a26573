"""Perspecto: the bot daemon, its command line, the local host (referee) and the match runner.

``__version__`` is looked up on first use: importlib.metadata and the search of the installed
distributions cost tens of milliseconds that ``perspecto ucc`` cannot spare before its setup
(docs/ucc.md, start-up).
"""

from __future__ import annotations

__version__: str  # the installed distribution's version, computed by __getattr__ on first use


def __getattr__(name: str) -> str:
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("perspecto")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+source"
    globals()["__version__"] = found  # later look-ups find it without coming here
    return found
