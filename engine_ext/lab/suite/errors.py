"""The position suite's errors: one narrow tree, each a clear line for the command to print (no traceback).

- ``SuiteFileError``: the suite file cannot be read or is not a suite (a bad field is named by its path);
- ``PositionError``: an entry's position cannot be rebuilt (its record does not replay to that ply, or the
  side it names is not the one to move there);
- ``EngineChoiceError``: the profile cannot be asked (its engine is not the facade's, a bad ``--param``).
"""

from __future__ import annotations


class SuiteError(ValueError):
    """Anything the suite cannot do with the input it was given; the message says what and where."""


class SuiteFileError(SuiteError):
    """A suite file that is missing, not JSON, or not a valid suite."""


class PositionError(SuiteError):
    """An entry whose position cannot be rebuilt from its record."""


class EngineChoiceError(SuiteError):
    """A profile or parameter the suite cannot play with."""
