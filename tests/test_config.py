"""Configuration: the file, environment overrides, per-opponent profiles, errors that name the key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import ProfileError, make_profile, profile_from_mapping
from bot.profiles import ProfileSet, profile_env_overrides
from bot.settings import ConfigError, load_settings

REPO = Path(__file__).resolve().parents[1]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], cwd=REPO, capture_output=True, text=True,
                          env=full_env)


class TestSettings:
    def test_defaults_without_a_file(self, tmp_path: Path) -> None:
        s = load_settings(tmp_path)
        assert s.connection.transport == "tcp" and s.connection.port == 7575
        assert s.state.learn is True

    def test_file_then_environment(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        write(tmp_path / "perspecto.toml", '[connection]\nhost = "10.1.2.3"\nport = 7000\n[logging]\nlevel = "debug"\n')
        s = load_settings(tmp_path)
        assert (s.connection.host, s.connection.port, s.logging.level) == ("10.1.2.3", 7000, "debug")
        monkeypatch.setenv("PERSPECTO_CONNECTION__PORT", "7100")
        monkeypatch.setenv("PERSPECTO_IDENTITY__TOKEN", "sesame")
        s = load_settings(tmp_path)
        assert s.connection.port == 7100 and s.connection.host == "10.1.2.3"
        assert s.identity.token is not None and s.identity.token.get_secret_value() == "sesame"
        assert s.redacted()["identity"]["token"] == "***"
        assert "sesame" not in repr(s)

    def test_bad_key_is_named_with_its_environment_variable(self, tmp_path: Path) -> None:
        write(tmp_path / "perspecto.toml", "[connection]\nprot = 7000\n")
        with pytest.raises(ConfigError, match=r"connection\.prot: not a known setting.*PERSPECTO_CONNECTION__PROT"):
            load_settings(tmp_path)

    def test_bad_value_is_named(self, tmp_path: Path) -> None:
        write(tmp_path / "perspecto.toml", '[connection]\ntransport = "pigeon"\nmqtt_url = "http://x"\n')
        with pytest.raises(ConfigError) as info:
            load_settings(tmp_path)
        assert "connection.transport" in str(info.value) and "connection.mqtt_url" in str(info.value)

    def test_broken_toml_names_the_file(self, tmp_path: Path) -> None:
        write(tmp_path / "perspecto.toml", "[connection\n")
        with pytest.raises(ConfigError, match=r"perspecto\.toml"):
            load_settings(tmp_path)


PROBE = """
match = ["Probe*"]
priority = 5
engine = "random"
move_time_soft = 1.0
"""


class TestProfiles:
    def make(self, tmp_path: Path) -> ProfileSet:
        write(tmp_path / "profiles" / "default.toml", 'engine = "random"\nseed = 7\n')
        write(tmp_path / "profiles" / "probe.toml", PROBE)
        write(tmp_path / "profiles" / "probe-two.toml", 'match = ["probe2", "Pro*"]\nengine = "random"\n')
        return ProfileSet.load(tmp_path, environ={})

    def test_selection_order(self, tmp_path: Path) -> None:
        profiles = self.make(tmp_path)
        assert profiles.select("probe2").name == "probe-two"  # exact name beats any glob
        assert profiles.select("PROBE-2008").name == "probe"  # glob, higher priority
        assert profiles.select("Prometheus").name == "probe-two"  # the only glob that fits
        assert profiles.select("Invincible").name == "default"
        assert profiles.select(None).name == "default"

    def test_builtins_are_always_there(self, tmp_path: Path) -> None:
        profiles = ProfileSet.load(tmp_path, environ={})
        assert "random" in profiles.profiles
        assert profiles.select("anyone").name in profiles.profiles

    def test_environment_overrides_a_profile_field(self, tmp_path: Path) -> None:
        write(tmp_path / "profiles" / "default.toml", 'engine = "random"\nseed = 7\n')
        env = {"PERSPECTO_PROFILES__DEFAULT__SEED": "42", "PERSPECTO_PROFILES__DEFAULT__MATCH": '["x*"]'}
        profiles = ProfileSet.load(tmp_path, environ=env)
        assert profiles.get("default").seed == 42 and profiles.get("default").match == ["x*"]
        assert profile_env_overrides(env) == {"default": {"seed": 42, "match": ["x*"]}}

    def test_override_of_a_missing_profile_is_an_error(self, tmp_path: Path) -> None:
        with pytest.raises(ProfileError, match="nosuch"):
            ProfileSet.load(tmp_path, environ={"PERSPECTO_PROFILES__NOSUCH__SEED": "1"})

    def test_every_bad_file_is_reported_with_its_key(self, tmp_path: Path) -> None:
        write(tmp_path / "profiles" / "a.toml", 'engine = "random"\nmove_time_sfot = 2\n')
        write(tmp_path / "profiles" / "b.toml", 'engine = "random"\nmove_time_soft = 20\nmove_time_hard = 10\n')
        write(tmp_path / "profiles" / "c.toml", 'engine = "random"\n[setup]\nmode = "fixed"\n')
        with pytest.raises(ProfileError) as info:
            ProfileSet.load(tmp_path, environ={})
        text = str(info.value)
        assert "a.toml: move_time_sfot" in text
        assert "b.toml" in text and "exceeds" in text
        assert "c.toml: setup" in text and "needs a setup name" in text

    def test_profile_model_refuses_unknown_engine(self) -> None:
        with pytest.raises(ValueError, match="unknown engine"):
            make_profile(name="x", engine="deep-blue")


class TestConfigCommands:
    def test_shipped_configuration_checks_out(self) -> None:
        out = cli("config", "check", "--config", str(REPO / "config"))
        assert out.returncode == 0, out.stderr
        assert "configuration OK" in out.stdout

    def test_check_names_the_bad_key_and_fails(self, tmp_path: Path) -> None:
        write(tmp_path / "perspecto.toml", "[logging]\nlevel = \"loud\"\n")
        out = cli("config", "check", "--config", str(tmp_path))
        assert out.returncode == 1 and "logging.level" in out.stderr

    def test_check_catches_setup_names_that_do_not_exist(self, tmp_path: Path) -> None:
        write(tmp_path / "profiles" / "x.toml", 'engine = "random"\n[setup]\nmode = "fixed"\nname = "no-such-setup"\n')
        out = cli("config", "check", "--config", str(tmp_path))
        assert out.returncode == 1 and "no-such-setup" in out.stderr

    def test_show_merges_environment_and_masks_secrets(self, tmp_path: Path) -> None:
        write(tmp_path / "profiles" / "probe.toml", PROBE)
        env = {"PERSPECTO_CONNECTION__PASSWORD": "hunter2", "PERSPECTO_CONNECTION__PORT": "7777"}
        out = cli("config", "show", "--config", str(tmp_path), "--json", "--opponent", "ProbeX", env=env)
        assert out.returncode == 0, out.stderr
        data = json.loads(out.stdout)
        assert data["settings"]["connection"]["port"] == 7777
        assert data["settings"]["connection"]["password"] == "***" and "hunter2" not in out.stdout
        assert data["selected_for"] == {"ProbeX": "probe"}


class TestProfilesAreTypedByTheirEngine:
    """A profile is a discriminated union on ``engine``: engine_params are checked against that engine's
    model when the file is read, before any engine is created."""

    def test_a_misspelt_search_setting_fails_when_read_and_creates_no_engine(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from bot.daemon import engine_interface

        def no_engine(params: object, seed: object) -> object:
            raise AssertionError("reading a profile must not create an engine")

        monkeypatch.setitem(engine_interface.ENGINES, "pemm", no_engine)
        with pytest.raises(ProfileError, match=r"x\.toml: engine_params\.max_depht: not a known setting "
                                               r"\(did you mean max_depth\?\)"):
            profile_from_mapping({"name": "x", "engine": "pemm", "engine_params": {"max_depht": 3}}, "x.toml")
        with pytest.raises(ProfileError, match=r"x\.toml: engine_params\.fear\.own_fear_min"):
            profile_from_mapping({"name": "x", "engine": "perspecto",
                                  "engine_params": {"fear": {"own_fear_min": "high"}}}, "x.toml")

    def test_each_engine_lays_the_file_over_its_own_built_in_settings(self) -> None:
        from bot.config import SearchEngineProfile
        from engine_ext.engine.settings import builtin_settings

        for engine in ("pemm", "perspecto"):
            profile = profile_from_mapping({"name": "x", "engine": engine,
                                            "engine_params": {"fear": {"own_fear_min": 0.25}}})
            assert isinstance(profile, SearchEngineProfile)
            expected = builtin_settings(engine).model_dump()
            expected["fear"] = {**expected["fear"], "own_fear_min": 0.25}
            assert profile.engine_params.model_dump() == expected
            assert profile.engine_params_set() == {"fear": {"own_fear_min": 0.25}}

    def test_a_ucc_profile_needs_its_command_when_read(self) -> None:
        from bot.config import UccProfile

        with pytest.raises(ProfileError, match=r"u\.toml: engine_params\.command: Field required"):
            profile_from_mapping({"name": "u", "engine": "ucc"}, "u.toml")
        with pytest.raises(ProfileError, match=r"u\.toml: engine_params\.command: Field required"):
            profile_from_mapping({"name": "u", "engine": "ucc", "engine_params": {"setup_time": 5}}, "u.toml")
        profile = profile_from_mapping({"name": "u", "engine": "ucc",
                                        "engine_params": {"command": "prog --fast", "setup_time": 5}})
        assert isinstance(profile, UccProfile) and profile.engine_params.argv() == ["prog", "--fast"]
        assert profile.engine_param_values() == {"command": "prog --fast", "setup_time": 5.0}

    def test_an_engine_registered_at_run_time_is_judged_by_its_factory(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from bot.config import RegisteredEngineProfile, engine_params_errors
        from bot.daemon import engine_interface
        from bot.daemon.engine_interface import EngineConfigError

        def picky(params: dict[str, object], seed: object) -> object:
            if params.get("speed") != "fast":
                raise EngineConfigError("speed must be 'fast'")
            return object()

        monkeypatch.setitem(engine_interface.ENGINES, "picky", picky)
        profile = make_profile(name="p", engine="picky", engine_params={"speed": "slow"})
        assert isinstance(profile, RegisteredEngineProfile)
        assert [e["msg"] for e in engine_params_errors("picky", profile.engine_params)] == ["speed must be 'fast'"]
        with pytest.raises(ProfileError, match="unknown engine 'nobody'"):
            profile_from_mapping({"name": "n", "engine": "nobody"})
