"""The test suite never writes into the user's home (issue 31, point 10): a test run once left 13 test
opponents in ``~/.local/state/perspecto/opponents.sqlite``, where ``perspecto results`` listed them and a bot
with learning on would have played on them. tests/conftest.py points every folder a bot writes to into a
temporary one; these tests fail if it does not, in this process and in a ``perspecto bot`` process a test
starts."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from bot.daemon.health import default_state_dir, health_path
from bot.settings import load_settings
from tests.conftest import REAL_HOME

REPO = Path(__file__).resolve().parents[1]


def outside_real_home(path: Path) -> bool:
    return not path.resolve().is_relative_to(REAL_HOME)


def test_every_folder_a_bot_writes_to_is_a_temporary_one(tmp_path: Path) -> None:
    assert outside_real_home(Path.home())
    assert outside_real_home(Path(os.path.expanduser("~")))
    assert outside_real_home(default_state_dir())
    assert outside_real_home(load_settings(tmp_path).state.dir)
    for name in ("XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        assert outside_real_home(Path(os.environ[name])), name


def test_a_bot_process_a_test_starts_writes_its_state_outside_the_home() -> None:
    """No --state-dir: the process finds its state folder as a user's bot would, from the environment the
    test gave it (its heartbeat is written before it gives up on a host that is not there)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    # Nothing listens on the port now: the bot fails to connect at once and exits 1.
    run = subprocess.run(
        [sys.executable, "-m", "bot.cli", "bot", "--connect", f"127.0.0.1:{port}", "--connect-attempts", "1",
         "--no-learn", "--no-journal", "--name", "isolation-probe"],
        cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=60,
    )
    assert run.returncode == 1, run.stderr
    written = health_path(default_state_dir())
    assert outside_real_home(written)
    heartbeat = json.loads(written.read_text())
    assert heartbeat["bot"] == "isolation-probe" and heartbeat["stopped"] is True
