"""A lab worker's UCC programs: at the paths the profile names, or by file name in ``$PERSPECTO_UCC_DIR``
(bot/ucc/engine.py ``UccEngineParams.argv``), the setting of a worker whose programs live elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.ucc.engine import UCC_DIR_ENV, UccCommandError, UccEngineParams


def program(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_program_missing_at_its_path_is_taken_from_the_workers_folder(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    program(tmp_path / "vixen")
    params = UccEngineParams(command="/opt/nowhere/ucc2012/bin/vixen --fast")
    monkeypatch.delenv(UCC_DIR_ENV, raising=False)
    with pytest.raises(UccCommandError, match="not an executable file"):  # no setting: the path as named
        params.argv()
    monkeypatch.setenv(UCC_DIR_ENV, str(tmp_path))
    assert params.argv() == [str(tmp_path / "vixen"), "--fast"]


def test_the_workers_folder_stands_in_for_an_unset_programs_variable(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that has the programs but not the client's $PERSPECTO_UCC2012 plays the shipped ucc-* profiles."""
    program(tmp_path / "celsius")
    monkeypatch.delenv("PERSPECTO_UCC2012", raising=False)
    params = UccEngineParams(command="${PERSPECTO_UCC2012}/celsius")
    monkeypatch.delenv(UCC_DIR_ENV, raising=False)
    with pytest.raises(UccCommandError, match="PERSPECTO_UCC2012"):
        params.argv()
    monkeypatch.setenv(UCC_DIR_ENV, str(tmp_path))
    assert params.argv() == [str(tmp_path / "celsius")]


def test_a_program_at_its_path_is_kept_and_one_missing_from_the_folder_too_is_an_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = program(tmp_path / "here" / "ramen")
    program(tmp_path / "ramen")
    monkeypatch.setenv(UCC_DIR_ENV, str(tmp_path))
    assert UccEngineParams(command=f"{here} -x").argv() == [str(here), "-x"]
    with pytest.raises(UccCommandError, match="/opt/nowhere/celsius"):
        UccEngineParams(command="/opt/nowhere/celsius").argv()
