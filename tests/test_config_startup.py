"""Commands that play refuse a bad configuration before they connect (issue 19, points 1, 4 and 5).

A bad engine parameter, a configuration directory that is not there, or a PERSPECTO_* variable that
names no setting must stop ``perspecto bot`` (and ``play``, ``match``) with exit 2 and a message that
names the file, the key and the variable; none of them may reach the host.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli import main
from bot.profiles import load_configuration
from bot.settings import ENV_NOT_SETTINGS, ENV_PREFIX, ConfigDirMissing, ConfigError, load_settings, settings_env
from engine_ext.engine.settings import EngineSettings, builtin_settings
from tests.conftest import ISOLATED_VARIABLES, isolated_env

REPO = Path(__file__).resolve().parents[1]
SCALE_ENV = "PERSPECTO_PROFILES__DEFAULT__ENGINE_PARAMS__SCALE"
MISSPELT_PROFILE = 'engine = "perspecto"\n[engine_params]\nlocal_raduis = 2\n'


@pytest.fixture(autouse=True)
def no_perspecto_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sets the PERSPECTO_* variables it is about, and no others (but the state folder stays the
    session's temporary one, tests/conftest.py: never the user's)."""
    for name in list(os.environ):
        if name.upper().startswith(ENV_PREFIX) and name not in ISOLATED_VARIABLES:
            monkeypatch.delenv(name)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def config_with_profile(root: Path, text: str, name: str = "default") -> Path:
    write(root / "profiles" / f"{name}.toml", text)
    return root


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    """A real TCP socket on a free port that nobody answers: a bot that reaches it would hang there."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server


def run_bot(config: Path, port: int, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.upper().startswith(ENV_PREFIX)} | isolated_env()
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "bot", "--config", str(config), "--connect", f"127.0.0.1:{port}",
         "--connect-attempts", "1", "--no-journal", "--no-learn"],
        cwd=REPO, capture_output=True, text=True, env={**clean, **(env or {})}, timeout=60,
    )


def assert_never_connected(server: socket.socket) -> None:
    server.setblocking(False)
    with pytest.raises(BlockingIOError):
        server.accept()


# --- point 1: engine parameters are validated before the bot connects -----------------------------------------


def test_bot_refuses_a_misspelt_engine_parameter_before_connecting(tmp_path: Path, listener: socket.socket) -> None:
    config = config_with_profile(tmp_path, MISSPELT_PROFILE)
    out = run_bot(config, listener.getsockname()[1])
    assert out.returncode == 2, out.stderr
    problem = next(line for line in out.stderr.splitlines() if "local_raduis" in line)
    assert str(config / "profiles" / "default.toml") in problem
    assert "engine_params.local_raduis" in problem and "local_radius" in problem
    assert "PERSPECTO_PROFILES__DEFAULT__ENGINE_PARAMS__LOCAL_RADUIS" in problem
    assert_never_connected(listener)


def test_bot_refuses_a_bad_scale_from_the_environment(tmp_path: Path, listener: socket.socket) -> None:
    config = config_with_profile(tmp_path, 'engine = "perspecto"\n[engine_params]\nscale = "thesis"\n')
    out = run_bot(config, listener.getsockname()[1], env={SCALE_ENV: "NOPE"})
    assert out.returncode == 2, out.stderr
    problem = next(line for line in out.stderr.splitlines() if "NOPE" in line)
    # The variable is the source, the file only what it overrides.
    assert problem.strip().startswith(f"{SCALE_ENV} (environment, over {config / 'profiles' / 'default.toml'})")
    assert "engine_params.scale" in problem
    assert_never_connected(listener)


def test_config_check_names_file_key_and_variable_of_an_engine_parameter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_with_profile(tmp_path, 'engine = "pemm"\n[engine_params.fear]\nown_fear_mni = 0.1\n', "probe")
    assert main(["config", "check", "--config", str(config)]) == 1
    err = capsys.readouterr().err
    assert f"{config / 'profiles' / 'probe.toml'}: engine_params.fear.own_fear_mni: not a known setting" in err
    assert "own_fear_min" in err and "PERSPECTO_PROFILES__PROBE__ENGINE_PARAMS__FEAR__OWN_FEAR_MNI" in err


def test_every_profile_is_checked_not_only_the_default(tmp_path: Path) -> None:
    config = config_with_profile(tmp_path, 'engine = "random"\n')
    write(config / "profiles" / "probe.toml", 'match = ["Probe*"]\nengine = "random"\n[engine_params]\ndepth = 3\n')
    with pytest.raises(ConfigError, match=r"probe\.toml: engine_params: engine 'random' takes no parameters"):
        load_configuration(config)


@pytest.mark.parametrize("command", [["play"], ["match", "random", "random", "--via-host"], ["match", "random",
                                                                                               "random"]])
def test_play_and_match_refuse_a_bad_engine_parameter(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = config_with_profile(tmp_path, MISSPELT_PROFILE)
    assert main([*command, "--config", str(config), "--no-records"]) == 2
    assert "engine_params.local_raduis" in capsys.readouterr().err


def test_a_good_configuration_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_with_profile(tmp_path, 'engine = "perspecto"\n[engine_params]\nlocal_radius = 3\n')
    monkeypatch.setenv(SCALE_ENV, "KS")
    settings, profiles = load_configuration(config)
    profile = profiles.select(None)
    assert profile.engine_params_set() == {"local_radius": 3, "scale": "KS"}
    # Typed from the file on: the engine's settings, the built-in perspecto values under what was set.
    assert isinstance(profile.engine_params, EngineSettings)
    built_in = builtin_settings("perspecto")
    assert profile.engine_params.local_radius == 3 and profile.engine_params.full_plies == built_in.full_plies
    assert settings.default_profile == "default"


# --- point 4: a configuration directory that was named must exist --------------------------------------------


def test_config_check_refuses_a_directory_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no" / "such" / "dir"
    assert main(["config", "check", "--config", str(missing)]) == 2
    assert f"--config {missing}: no such directory" in capsys.readouterr().err


def test_bot_refuses_a_directory_that_is_not_there(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nothing"
    assert main(["bot", "--config", str(missing), "--connect", "127.0.0.1:9", "--connect-attempts", "1"]) == 2
    assert "no such directory" in capsys.readouterr().err


def test_config_dir_variable_naming_nothing_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERSPECTO_CONFIG_DIR", str(tmp_path / "gone"))
    with pytest.raises(ConfigDirMissing, match=r"PERSPECTO_CONFIG_DIR=.*gone: no such directory"):
        load_configuration()
    write(tmp_path / "a-file", "")
    with pytest.raises(ConfigDirMissing, match="not a directory"):
        load_settings(tmp_path / "a-file")


def test_the_implicit_default_directory_may_be_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no ./config here: the built-in defaults
    settings, profiles = load_configuration()
    assert settings.connection.port == 7575 and not profiles.files


# --- point 5: every PERSPECTO_* variable must name something ------------------------------------------------


def test_misspelt_environment_section_is_refused_with_the_nearest_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PERSPECTO_CONECTION__HOST", "x")
    assert main(["bot", "--config", str(tmp_path), "--connect", "127.0.0.1:9", "--connect-attempts", "1"]) == 2
    err = capsys.readouterr().err
    assert "PERSPECTO_CONECTION__HOST (environment): not a setting" in err
    assert "did you mean PERSPECTO_CONNECTION__HOST?" in err


@pytest.mark.parametrize(("variable", "nearest"), [
    ("PERSPECTO_CONNECTION__PROT", "PERSPECTO_CONNECTION__PORT"),  # a known section, a misspelt key
    ("PERSPECTO_STAT_DIR", "PERSPECTO_STATE_DIR"),  # one of the variables that are not settings
    ("perspecto_logging__levl", "PERSPECTO_LOGGING__LEVEL"),  # names are read case-insensitively
    ("PERSPECTO_PROFILE__DEFAULT", "PERSPECTO_PROFILE"),  # a plain setting has no keys inside
])
def test_variables_that_set_nothing_are_named_with_the_nearest_valid_name(
    variable: str, nearest: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "1")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert variable in str(info.value) and f"did you mean {nearest}?" in str(info.value)


def test_bad_value_from_the_environment_is_reported_as_the_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "perspecto.toml", "[connection]\nport = 7000\n")
    monkeypatch.setenv("PERSPECTO_CONNECTION__PORT", "seventy")
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    text = str(info.value)
    assert text.startswith(f"PERSPECTO_CONNECTION__PORT (environment, over {tmp_path / 'perspecto.toml'}): "
                           "connection.port:")
    assert "set in the file" not in text


def test_bad_value_in_the_file_is_reported_as_the_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "perspecto.toml", '[connection]\nport = "seventy"\n')
    monkeypatch.setenv("PERSPECTO_CONNECTION__HOST", "10.0.0.1")  # a good variable elsewhere changes nothing
    with pytest.raises(ConfigError) as info:
        load_settings(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'perspecto.toml'}: connection.port:")
    assert "(set in the file or as PERSPECTO_CONNECTION__PORT)" in str(info.value)


def test_override_of_a_misspelt_profile_names_the_nearest_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_with_profile(tmp_path, 'engine = "random"\nseed = 1\n')
    monkeypatch.setenv("PERSPECTO_PROFILES__DEFALT__SEED", "2")
    with pytest.raises(ConfigError) as info:
        load_configuration(config)
    assert "PERSPECTO_PROFILES__DEFALT__SEED (environment): names no profile file" in str(info.value)
    assert "did you mean PERSPECTO_PROFILES__DEFAULT__" in str(info.value)


def test_an_override_of_a_broken_file_is_not_called_a_stray(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = config_with_profile(tmp_path, 'engine = "random"\nmove_time_sfot = 1\n')
    monkeypatch.setenv("PERSPECTO_PROFILES__DEFAULT__SEED", "2")
    with pytest.raises(ConfigError) as info:
        load_configuration(config)
    assert "move_time_sfot" in str(info.value) and "names no profile file" not in str(info.value)


def test_variables_read_elsewhere_are_not_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV_NOT_SETTINGS:
        monkeypatch.setenv(name, str(tmp_path))
    monkeypatch.setenv("PERSPECTO_LOGGING__LEVEL", "debug")
    monkeypatch.setenv("PERSPECTO_CONNECTION", '{"port": 7001}')
    settings = load_settings(tmp_path)
    assert settings.logging.level == "debug" and settings.connection.port == 7001


def test_every_perspecto_variable_the_project_uses_is_accepted() -> None:
    """A variable read somewhere in the project must be a setting or on the allow-list (ENV_NOT_SETTINGS):
    otherwise setting it would stop the bot."""
    sources = [*REPO.glob("bot/**/*.py"), *REPO.glob("engine_ext/**/*.py"), *REPO.glob("protocol/**/*.py"),
               *REPO.glob("setups/**/*.py"), *REPO.glob("scripts/*"), *REPO.glob("bench/*"), REPO / "Dockerfile",
               *REPO.glob("docs/*.md"), REPO / "README.md", *REPO.glob("config/**/*.toml"), *REPO.glob("tests/*.py")]
    deliberate = {"PERSPECTO_CONNECTION__PROT", "PERSPECTO_CONECTION__HOST", "PERSPECTO_STAT_DIR",
                  "PERSPECTO_PROFILE__DEFAULT", "PERSPECTO_ZZZZ"}  # the misspellings tests use on purpose
    used = set()
    for path in sources:
        if path.is_file():
            used |= set(re.findall(r"\bPERSPECTO_[A-Z0-9_]*[A-Z0-9]\b", path.read_text(encoding="utf-8",
                                                                                          errors="replace")))
    assert "PERSPECTO_VENV" in used and "PERSPECTO_CONFIG_DIR" in used  # the scan sees scripts and code
    refused = sorted(name for name in used - deliberate if settings_env({name: "1"})[1])
    assert refused == []
