"""A lab worker logs at the command's level: ``perspecto gauntlet --via lab --log-level warning`` printed the UCC
adapter's ``ucc_opponent.line`` debug lines (thousands a run) from its worker processes, which start from a clean
interpreter where structlog prints everything to stdout."""

from __future__ import annotations

import json
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import pytest
import structlog

from bot.logging_setup import configure_logging
from engine_ext.lab.runner import start_worker, worker_logging


def _log_a_line_at_each_level() -> None:
    log = structlog.get_logger()
    log.debug("ucc_opponent.line", program="peternlewis", line="0 3 DOWN 2 OK")
    log.warning("ucc_engine.stopped", reason="it surrendered")


@pytest.mark.parametrize("fmt", ["json", "console"])
def test_a_worker_logs_at_the_commands_level_to_stderr(fmt: str, capfd: pytest.CaptureFixture[str]) -> None:
    configure_logging("warning", fmt)
    try:
        # spawn: a clean interpreter, as the lab's forkserver workers are; it writes to this test's captured fds.
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=start_worker,
                                 initargs=worker_logging()) as pool:
            pool.submit(_log_a_line_at_each_level).result(timeout=120)
    finally:
        structlog.reset_defaults()  # this test's configuration writes to its captured stderr, closed after it
    out, err = capfd.readouterr()
    assert "ucc_opponent.line" not in out + err
    assert "ucc_engine.stopped" in err and "ucc_engine.stopped" not in out
    if fmt == "json":  # the command's own format too
        (line,) = [line for line in err.splitlines() if "ucc_engine.stopped" in line]
        assert json.loads(line)["level"] == "warning"
