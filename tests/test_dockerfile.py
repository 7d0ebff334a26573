"""The Docker image: what the Dockerfile and .dockerignore promise, checked without building (fast), and
scripts/build-image end to end (slow: buildah, a debootstrapped base, the image's self-check)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
BUILD_SCRIPT = ROOT / "scripts" / "build-image"

CONFIG_DIR = "/etc/perspecto"
STATE_DIR = "/var/lib/perspecto"
BUILD_TOOLS = re.compile(
    r"\b(gcc|g\+\+|clang|cc|build-essential|libc6-dev|python3(\.\d+)?-dev|cython|pip\s+wheel|setup\.py)\b",
    re.IGNORECASE,
)


# --------------------------------------------------------------------------------------------- parsing
@dataclass
class Instruction:
    keyword: str
    args: str


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction | None:
        found = self.all(keyword)
        return found[-1] if found else None


def parse_dockerfile(text: str) -> tuple[list[Instruction], list[Stage]]:
    """Instructions before the first FROM (global ARGs), and the stages; continuation lines joined."""
    logical: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        logical.append(pending + line)
        pending = ""
    if pending.strip():
        logical.append(pending)

    preamble: list[Instruction] = []
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.partition(" ")
        inst = Instruction(keyword.upper(), args.strip())
        if inst.keyword == "FROM":
            words = [w for w in inst.args.split() if not w.startswith("--")]
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base=words[0], name=name))
        elif stages:
            stages[-1].instructions.append(inst)
        else:
            preamble.append(inst)
    return preamble, stages


def exec_form(args: str) -> list[str] | None:
    """The JSON array of an exec-form instruction, or None for the shell form."""
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


@pytest.fixture(scope="module")
def dockerfile() -> tuple[list[Instruction], list[Stage]]:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def runtime(dockerfile: tuple[list[Instruction], list[Stage]]) -> Stage:
    return dockerfile[1][-1]


# --------------------------------------------------------------------------------------------- Dockerfile
def test_parser_joins_continuations_and_splits_stages() -> None:
    preamble, stages = parse_dockerfile(
        "ARG X=1\n# c\nFROM a AS b\nRUN one \\\n  # inner\n  two\nFROM --platform=p c\nUSER u\n"
    )
    assert [i.keyword for i in preamble] == ["ARG"]
    assert [(s.base, s.name) for s in stages] == [("a", "b"), ("c", None)]
    assert stages[0].instructions[0].args == "one two"


def test_base_image_is_an_argument_used_by_every_stage(dockerfile: tuple[list[Instruction], list[Stage]]) -> None:
    preamble, stages = dockerfile
    args = {i.args.split("=", 1)[0]: i.args.partition("=")[2] for i in preamble if i.keyword == "ARG"}
    assert args.get("BASE_IMAGE") == "python:3.11-slim"
    for stage in stages:
        assert stage.base in ("${BASE_IMAGE}", "$BASE_IMAGE"), f"stage {stage.name} is FROM {stage.base}"


def test_multi_stage_build_compiles_the_wheel_and_runtime_copies_the_result(
    dockerfile: tuple[list[Instruction], list[Stage]], runtime: Stage
) -> None:
    _, stages = dockerfile
    assert len(stages) >= 2
    build = stages[0]
    assert build.name, "the build stage needs a name for COPY --from"
    build_runs = " ".join(i.args for i in build.all("RUN"))
    assert re.search(r"\bgcc\b", build_runs) and "libc6-dev" in build_runs
    assert "pip wheel" in build_runs and "/wheels" in build_runs
    assert "/opt/perspecto" in build_runs
    copies = [i.args for i in runtime.all("COPY")]
    assert any(f"--from={build.name}" in c and "/opt/perspecto" in c for c in copies)


def test_runtime_stage_has_no_compiler(runtime: Stage) -> None:
    for inst in runtime.instructions:
        if inst.keyword in ("RUN", "COPY", "ADD"):
            assert not BUILD_TOOLS.search(inst.args), f"build tool in the runtime stage: {inst.keyword} {inst.args}"
            assert "/wheels" not in inst.args, "the runtime copies the venv, not the wheels"


def test_runtime_runs_as_the_non_root_perspecto_user(runtime: Stage) -> None:
    user = runtime.last("USER")
    assert user is not None, "no USER in the runtime stage"
    name = user.args.split(":")[0]
    assert name not in ("", "0", "root")
    runs = " ".join(i.args for i in runtime.all("RUN"))
    assert re.search(r"useradd\b.*--uid 10001\b.*\bperspecto\b", runs)
    assert name in ("perspecto", "10001")
    # USER comes after every RUN: nothing runs as root after the switch, and the switch is not undone.
    last_user = max(n for n, i in enumerate(runtime.instructions) if i.keyword == "USER")
    assert all(i.keyword != "RUN" for i in runtime.instructions[last_user:])


def test_entrypoint_and_cmd_are_exec_form_and_cmd_is_a_real_command(runtime: Stage) -> None:
    entrypoint = runtime.last("ENTRYPOINT")
    assert entrypoint is not None and exec_form(entrypoint.args) == ["perspecto"]
    cmd = runtime.last("CMD")
    assert cmd is not None
    argv = exec_form(cmd.args)
    assert argv, f"CMD is not exec form: {cmd.args}"
    from bot.cli import build_parser

    build_parser().parse_args(argv)  # exits (SystemExit) on an unknown command or option


def test_healthcheck_is_exec_form_perspecto_health(runtime: Stage) -> None:
    health = runtime.last("HEALTHCHECK")
    assert health is not None
    options, sep, command = health.args.partition("CMD ")
    assert sep, f"HEALTHCHECK without CMD: {health.args}"
    assert all(o.startswith("--") for o in options.split())
    assert exec_form(command) == ["perspecto", "health"]


def test_config_and_state_are_volumes_named_by_the_environment(runtime: Stage) -> None:
    volumes: list[str] = []
    for inst in runtime.all("VOLUME"):
        volumes += exec_form(inst.args) or inst.args.split()
    assert CONFIG_DIR in volumes and STATE_DIR in volumes
    env = " ".join(i.args for i in runtime.all("ENV"))
    assert f"PERSPECTO_CONFIG_DIR={CONFIG_DIR}" in env
    assert f"PERSPECTO_STATE_DIR={STATE_DIR}" in env
    workdir = runtime.last("WORKDIR")
    assert workdir is not None and workdir.args == STATE_DIR  # relative outputs (records) land in state
    runs = " ".join(i.args for i in runtime.all("RUN"))
    assert re.search(rf"install -d -o perspecto\b.*{re.escape(STATE_DIR)}", runs), "state must be the user's"


def test_copied_sources_exist(dockerfile: tuple[list[Instruction], list[Stage]]) -> None:
    for stage in dockerfile[1]:
        for inst in stage.all("COPY"):
            words = inst.args.split()
            if any(w.startswith("--from") for w in words):
                continue
            sources = [w for w in words if not w.startswith("--")][:-1]
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: missing from the build context"
                assert not dockerignored(src), f"COPY {src}: excluded by .dockerignore"


# --------------------------------------------------------------------------------------------- .dockerignore
def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern (Go filepath.Match plus "**", relative to the context root) as a regex."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pattern[i] == "[":
            end = pattern.index("]", i)
            out, i = out + "[" + pattern[i + 1 : end].replace("!", "^", 1) + "]", end + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def _ignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for line in DOCKERIGNORE.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        rules.append((negate, _pattern_regex(pattern)))
    return rules


def dockerignored(path: str) -> bool:
    """Whether Docker leaves ``path`` out of the context: the last matching rule (on it or a parent) wins."""
    parts = path.strip("/").split("/")
    candidates = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    excluded = False
    for negate, regex in _ignore_rules():
        if any(regex.match(c) for c in candidates):
            excluded = not negate
    return excluded


@pytest.mark.parametrize(
    "path",
    [
        ".git/HEAD",
        ".venv/bin/python",
        "build/lib.linux-x86_64-cpython-311/engine_ext/rules/core.so",
        "records/abc-0001.json",
        "engine_ext/rules/core.c",
        "engine_ext/engine/strategic.c",
        "engine_ext/rules/core.cpython-311-x86_64-linux-gnu.so",
        "bot/__pycache__/cli.cpython-311.pyc",
        "perspecto.egg-info/PKG-INFO",
        ".mypy_cache/3.11/x.json",
    ],
)
def test_dockerignore_keeps_out(path: str) -> None:
    assert dockerignored(path)


@pytest.mark.parametrize(
    "path",
    [
        "pyproject.toml",
        "setup.py",
        "README.md",
        "engine_ext/rules/core.pyx",
        "engine_ext/rules/core.pxd",
        "engine_ext/data/rank_value_counts.json",
        "bot/cli.py",
        "protocol/codec.py",
        "setups/library/classic.txt",
        "config/default.toml",
    ],
)
def test_dockerignore_keeps_in(path: str) -> None:
    assert not dockerignored(path)


# --------------------------------------------------------------------------------------------- end to end
def _can_build() -> str | None:
    """Why scripts/build-image cannot run here, or None."""
    if os.environ.get("PERSPECTO_SKIP_IMAGE_BUILD"):
        return "PERSPECTO_SKIP_IMAGE_BUILD is set"
    if shutil.which("buildah") and shutil.which("debootstrap") and os.geteuid() == 0:
        return None
    if os.geteuid() != 0:
        return "scripts/build-image needs root (buildah with chroot isolation, debootstrap)"
    if not shutil.which("apt-get"):
        return "buildah/debootstrap are missing and there is no apt-get to install them"
    return None


@pytest.mark.slow
def test_build_image_end_to_end() -> None:
    reason = _can_build()
    if reason:
        pytest.skip(reason)
    proc = subprocess.run(
        [str(BUILD_SCRIPT)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=45 * 60,
        check=False,
    )
    tail = "\n".join(proc.stdout.splitlines()[-60:])
    print(tail)
    assert proc.returncode == 0, tail
    assert "build-image: PASS" in proc.stdout
    for check in ("perspecto --version: perspecto", "runs as uid 10001", "local game", "compiled engine"):
        assert re.search(rf"^\s+PASS\s+{re.escape(check)}", proc.stdout, re.M), f"no PASS for {check!r}"
