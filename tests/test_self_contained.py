"""A fresh clone needs nothing beside it: no code, test, script or doc reaches outside the repository for
its data (the project's source material once lay in a folder next to the clone; what the project uses of
it now ships inside, e.g. the Gravon setups in setups/data/)."""

from __future__ import annotations

import os
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKIPPED_DIRS = {".git", ".venv", "build", "dist", "records", "node_modules", "__pycache__", ".hypothesis",
                ".mypy_cache", ".ruff_cache", ".pytest_cache"}
TEXT_SUFFIXES = {".py", ".pyx", ".pxd", ".pyi", ".md", ".toml", ".txt", ".sh", ".cfg", ".ini", ".yml", ".yaml"}
# A path up and out of the checkout to a sibling folder (../shared/..., ../../data), a path built from the
# checkout's parents in code (parents[2] / "shared"), or an absolute path of the build machine's folders.
OUTSIDE = re.compile(
    r"(?<![\w.])\.\./(?:\.\./)*(?:shared|data|seeds|spec)\b"
    r"|parents\[\d+\]\s*/\s*[\"'](?:shared|data)[\"']"
    r"|[\"'`(]/work/"
)


def _sources() -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")]  # not into .venv
        here = Path(folder)
        for name in files:
            path = here / name
            in_scripts = here.name in ("scripts", ".ci") and not path.suffix  # the shell scripts
            if path.suffix in TEXT_SUFFIXES or in_scripts or name == "Dockerfile":
                found.append(path)
    return sorted(found)


def test_the_pattern_finds_paths_outside_the_checkout() -> None:
    hits = [m.group() for m in OUTSIDE.finditer(
        'see ../shared/data/x.txt; Path(__file__).parents[2] / "shared"; Path("/work/shared/data"); '
        "`../../seeds/y`; not ../base (a worktree the reader makes), ./shared or setups/data/x.txt.xz")]
    assert hits == ["../shared", 'parents[2] / "shared"', '"/work/', "../../seeds"]


def test_the_sources_are_found() -> None:
    names = {p.relative_to(REPO).as_posix() for p in _sources()}
    assert {"README.md", "setups/stats.py", "scripts/bootstrap", ".ci/run", "Dockerfile",
            "tests/test_self_contained.py"} <= names


def test_nothing_names_a_path_outside_the_checkout() -> None:
    # The tests of such patterns spell paths out in their examples.
    examples = {Path(__file__).resolve(), REPO / "tests" / "test_docs_paths.py"}
    # CI's own script knows CI's layout: the sparring programs (test material, never the project's data) lie in
    # the copy of the source material beside the clone; it hands their folder to the one test that plays them.
    examples.add(REPO / ".ci" / "run")
    hits = [f"{path.relative_to(REPO)}:{n}: {m.group()}" for path in _sources() if path not in examples
            for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
            for m in OUTSIDE.finditer(line)]
    assert hits == []
