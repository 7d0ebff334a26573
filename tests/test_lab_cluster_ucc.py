"""A lab worker's UCC programs: at the paths the profile names, or by file name in ``$PERSPECTO_UCC_DIR``
(bot/ucc/engine.py ``UccEngineParams.argv``), the setting of a worker whose programs live elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.ucc.engine import UCC_DIR_ENV, UccEngineParams


def test_a_program_missing_at_its_path_is_taken_from_the_workers_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "vixen").write_text("#!/bin/sh\n")
    params = UccEngineParams(command="/opt/nowhere/ucc2012/bin/vixen --fast")
    monkeypatch.delenv(UCC_DIR_ENV, raising=False)
    assert params.argv() == ["/opt/nowhere/ucc2012/bin/vixen", "--fast"]  # no setting: as named
    monkeypatch.setenv(UCC_DIR_ENV, str(tmp_path))
    assert params.argv() == [str(tmp_path / "vixen"), "--fast"]


def test_a_program_at_its_path_or_missing_from_the_folder_too_is_left_as_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = tmp_path / "here" / "ramen"
    here.parent.mkdir()
    here.write_text("#!/bin/sh\n")
    (tmp_path / "ramen").write_text("#!/bin/sh\n")
    monkeypatch.setenv(UCC_DIR_ENV, str(tmp_path))
    assert UccEngineParams(command=f"{here} -x").argv() == [str(here), "-x"]
    assert UccEngineParams(command="/opt/nowhere/celsius").argv() == ["/opt/nowhere/celsius"]
