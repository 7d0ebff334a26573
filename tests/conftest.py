"""Shared fixtures.

Tests never touch the user's home: before any test (or module fixture) runs, ``HOME``, the XDG folders and
``PERSPECTO_STATE_DIR`` point into a temporary folder of this session, so a ``BotDaemon``, an
``OpponentStore`` or a ``perspecto bot`` process a test starts writes its heartbeat, journal and opponent
store there and not in ``~/.local/state/perspecto`` (where a real bot would then play on the test
opponents). A subprocess inherits them through ``os.environ``; a test that builds a process's environment
from scratch must carry ``isolated_env()`` over. tests/test_home_isolation.py checks that it holds.
"""

from __future__ import annotations

import os
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import structlog

if TYPE_CHECKING:
    from tests.mqtt_broker import BotProcesses
    from tests.test_host_signals import HostProcess

# Where the variables pointed when the session started: the user's own folders, never to be written.
REAL_HOME = Path(os.path.expanduser("~")).resolve()
# The variables the isolation sets (and a test building a subprocess's environment must keep).
ISOLATED_VARIABLES = ("HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                      "PERSPECTO_STATE_DIR")


def isolated_env() -> dict[str, str]:
    """The isolation's variables as they are now, for a subprocess started with an environment of its own."""
    return {name: os.environ[name] for name in ISOLATED_VARIABLES if name in os.environ}


@pytest.fixture(scope="session", autouse=True)
def _isolated_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))
        for name, folder in (("XDG_STATE_HOME", ".local/state"), ("XDG_DATA_HOME", ".local/share"),
                             ("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache")):
            patch.setenv(name, str(home / folder))
        patch.setenv("PERSPECTO_STATE_DIR", str(home / ".local" / "state" / "perspecto"))
        yield home


@pytest.fixture
def rng() -> random.Random:
    return random.Random(1234)


@pytest.fixture(autouse=True)
def _structlog_as_found() -> Iterator[None]:
    """Each test starts from structlog's defaults: a test that configures logging (``configure_logging("warning")``
    installs a level filter) would otherwise hide the info events that a later test in the same worker captures
    with ``structlog.testing.capture_logs`` (which replaces the processors, not the filter), so that test's
    outcome would depend on the order pytest-xdist happens to run them in."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


# --- real processes: a ``perspecto host`` and ``perspecto bot``s, stopped after the test ----------------------
# Imported when a test asks for them: most tests start neither, and these modules start nothing on import.


@pytest.fixture
async def host_process(tmp_path: Path) -> AsyncIterator[HostProcess]:
    from tests.test_host_signals import HostProcess

    instance = HostProcess(tmp_path / "records")
    yield instance
    await instance.stop()


@pytest.fixture
async def bots(tmp_path: Path) -> AsyncIterator[BotProcesses]:
    from tests.mqtt_broker import BotProcesses

    processes = BotProcesses(tmp_path / "bots")
    yield processes
    await processes.stop()
