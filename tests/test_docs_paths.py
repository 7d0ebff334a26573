"""The documentation names no path of one machine (a developer's home, the build container's folders): a
reader's checkout is elsewhere. Paths inside the Docker image (/opt/perspecto, /var/lib/perspecto,
/etc/perspecto) are the image's own and stay."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:root|work|home|Users|tmp|mnt)/[\w.-]+")


def test_the_pattern_finds_machine_paths() -> None:
    found = [m.group() for m in MACHINE_PATH.finditer(
        "see /work/shared/x.txt, /home/me/perspecto, /root/y and /tmp/z; not /opt/perspecto, ./tmp/a or ~/home/b")]
    assert found == ["/work/shared", "/home/me", "/root/y", "/tmp/z"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_machine_paths_in_the_docs(doc: Path) -> None:
    hits = [f"{doc.name}:{n}: {m.group()}" for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1)
            for m in MACHINE_PATH.finditer(line)]
    assert hits == []
