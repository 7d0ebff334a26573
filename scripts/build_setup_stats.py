"""Boil the Gravon setup collections down to the compact statistics files the package ships.

Usage: python scripts/build_setup_stats.py [--data DIR] [--out DIR]
Reads gravon-setups-classic.txt and gravon-setups-barrage.txt (plain, or compressed as .txt.xz / .txt.gz)
from ``--data`` (default: setups/data, where the project ships them as .txt.xz; setups/data/README.md says
where they come from) and writes classic-stats.json, classic-pairs.json and barrage-stats.json into
``--out`` (default: setups/data). Run it again whenever the data files change.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_ext.rules.rulesets import BARRAGE, CLASSIC  # noqa: E402
from setups.stats import (  # noqa: E402
    compute_neighbour_pairs,
    compute_stats,
    compute_training_counts,
    read_gravon_lines,
)

SOURCES = {CLASSIC: "gravon-setups-classic.txt", BARRAGE: "gravon-setups-barrage.txt"}


def source_file(data_dir: Path, file_name: str) -> Path:
    """The collection in ``data_dir``: plain text if it is there, else its compressed form."""
    for candidate in (file_name, f"{file_name}.xz", f"{file_name}.gz"):
        if (data_dir / candidate).is_file():
            return data_dir / candidate
    raise SystemExit(f"build_setup_stats: no {file_name}[.xz|.gz] in {data_dir}")


def to_json(value: object, indent: int = 0) -> str:
    """JSON with one line a list of numbers: small, yet a change shows up as a readable diff."""
    pad = "  " * (indent + 1)
    if isinstance(value, dict):
        items = [f"{pad}{json.dumps(k)}: {to_json(v, indent + 1)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        items = [f"{pad}{to_json(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return json.dumps(value, separators=(",", ":") if isinstance(value, list) else (", ", ": "))


def build(data_dir: Path, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for ruleset, file_name in SOURCES.items():
        lines, skipped = read_gravon_lines(source_file(data_dir, file_name), ruleset)
        stats = compute_stats(lines, ruleset, source=file_name, skipped=skipped)
        # The belief model's prior (engine_ext/beliefs/prior.py) counts only the training part.
        stats["training"] = compute_training_counts(lines, ruleset)
        target = out_dir / f"{ruleset.name}-stats.json"
        target.write_text(to_json(stats) + "\n", encoding="utf-8")
        written.append(target)
        print(f"{target}: {stats['setups']} setups, {skipped} malformed line(s) skipped")
        pairs = compute_neighbour_pairs(lines, ruleset)
        if pairs is not None:  # the belief model's pair statistics (engine_ext/beliefs/prior.py)
            target = out_dir / f"{ruleset.name}-pairs.json"
            target.write_text(to_json(pairs) + "\n", encoding="utf-8")
            written.append(target)
            print(f"{target}: neighbour pairs of {pairs['setups']} training setups")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=REPO / "setups" / "data")
    parser.add_argument("--out", type=Path, default=REPO / "setups" / "data")
    args = parser.parse_args(argv)
    build(args.data, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
