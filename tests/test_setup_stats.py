"""The shipped setup statistics: compact, computed from the Gravon data, and the score built on them."""

from __future__ import annotations

import gzip
import json
import lzma
import math
import tomllib
from collections import Counter
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, MINI, Ruleset
from setups import Notation, SetupStats, compute_stats, generate_setup, load_stats, parse_setup, random_setup
from setups.stats import (
    compute_neighbour_pairs,
    compute_training_counts,
    gravon_path,
    is_heldout,
    pairs_path,
    read_gravon_lines,
    stats_path,
)

# The collections' names in the statistics files: the plain text's, whatever the shipped file is compressed with.
SOURCES = {CLASSIC: "gravon-setups-classic.txt", BARRAGE: "gravon-setups-barrage.txt"}


def _shipped(name: str) -> dict[str, Any]:
    return json.loads(stats_path(name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("ruleset", [CLASSIC, BARRAGE])
def test_shipped_statistics_are_compact_and_inside_the_package(ruleset: Ruleset) -> None:
    path = stats_path(ruleset.name)
    assert path.is_file()
    assert Path(__file__).parents[1] / "setups" / "data" == path.parent
    assert path.stat().st_size < 32_000
    stats = load_stats(ruleset)
    assert stats is not None and stats.ruleset == ruleset


@pytest.mark.parametrize("ruleset", [CLASSIC, BARRAGE])
def test_the_gravon_collections_ship_inside_the_package(ruleset: Ruleset) -> None:
    # The source data is the project's own: a fresh clone (or an installed wheel) reads it, nothing beside it.
    path = gravon_path(ruleset.name)
    assert path.parent == stats_path(ruleset.name).parent == Path(__file__).parents[1] / "setups" / "data"
    assert path.name.endswith(".txt.xz") and path.stat().st_size < 1_000_000
    header = " ".join(line for line in lzma.decompress(path.read_bytes()).decode("ascii").splitlines()
                      if line.startswith("#"))
    assert "gravon.de" in header and "StrategoAI/ataraxos" in header and "MIT License" in header  # the source
    with open(Path(__file__).parents[1] / "pyproject.toml", "rb") as handle:
        package_data = tomllib.load(handle)["tool"]["setuptools"]["package-data"]["*"]
    assert any(fnmatch(path.name, pattern) for pattern in package_data)  # and the wheel carries it


def test_no_collection_for_mini() -> None:
    with pytest.raises(ValueError, match="no Gravon setup collection for the mini ruleset"):
        gravon_path("mini")


def test_a_collection_reads_the_same_plain_or_compressed(tmp_path: Path) -> None:
    text = "# a comment\nBDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG\n]\n\nBDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBX\n"
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    (tmp_path / "s.txt.xz").write_bytes(lzma.compress(text.encode()))
    (tmp_path / "s.txt.gz").write_bytes(gzip.compress(text.encode()))
    results = {name: read_gravon_lines(tmp_path / name, CLASSIC) for name in ("s.txt", "s.txt.xz", "s.txt.gz")}
    assert set(map(repr, results.values())) == {repr((["BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG"], 2))}


@pytest.mark.parametrize("name", ["s.txt.xz", "s.txt.gz"])
def test_a_damaged_compressed_collection_is_a_clear_error(tmp_path: Path, name: str) -> None:
    compress = lzma.compress if name.endswith(".xz") else gzip.compress
    packed = compress(b"BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG\n" * 50)
    (tmp_path / name).write_bytes(packed[: len(packed) // 2])  # cut short, as an interrupted copy leaves it
    with pytest.raises((ValueError, OSError), match=name):
        read_gravon_lines(tmp_path / name, CLASSIC)


def test_no_statistics_for_mini() -> None:
    assert load_stats(MINI) is None
    assert load_stats("mini") is None


@pytest.mark.parametrize("ruleset", [CLASSIC, BARRAGE])
def test_counts_add_up(ruleset: Ruleset) -> None:
    data = _shipped(ruleset.name)
    n = data["setups"]
    size = ruleset.width * ruleset.setup_rows
    counts = data["rank_counts"]
    for index in range(size):
        assert sum(per_square[index] for per_square in counts.values()) == n
    for rank, have in ruleset.pieces.items():
        assert sum(counts[rank.label]) == n * have
    assert sum(data["flag"]["by_row_from_front"]) == n
    assert sum(g["setups"] for g in data["flag"]["neighbour_bombs"]) == n


@pytest.mark.parametrize("ruleset", [pytest.param(CLASSIC, marks=pytest.mark.long), BARRAGE])
def test_statistics_are_computed_from_the_data_file(ruleset: Ruleset) -> None:
    lines, skipped = read_gravon_lines(gravon_path(ruleset.name), ruleset)
    shipped = _shipped(ruleset.name)
    training = shipped.pop("training")
    assert compute_stats(lines, ruleset, source=SOURCES[ruleset], skipped=skipped) == shipped
    # The belief model's prior: the training part of the fixed split only.
    assert training == compute_training_counts(lines, ruleset)
    assert training["setups"] + training["heldout_setups"] == shipped["setups"]
    assert training["heldout_setups"] == sum(1 for line in lines if is_heldout(line))
    assert training["heldout_setups"] == {CLASSIC: 6759, BARRAGE: 466}[ruleset]


@pytest.mark.long
def test_the_pair_statistics_are_computed_from_the_training_part() -> None:
    lines, _skipped = read_gravon_lines(gravon_path("classic"), CLASSIC)
    shipped = json.loads(pairs_path("classic").read_text(encoding="utf-8"))
    assert shipped == compute_neighbour_pairs(lines, CLASSIC)
    assert shipped["setups"] == 58_161
    # Every neighbouring pair of the 4 x 10 area once (i < j), each table counting every training setup.
    assert len(shipped["pairs"]) == 4 * 9 + 3 * 10
    assert all(sum(map(sum, table)) == shipped["setups"] for table in shipped["pairs"].values())


def test_pair_statistics_ship_for_classic_only() -> None:
    assert pairs_path("classic").is_file() and pairs_path("classic").parent == stats_path("classic").parent
    assert not pairs_path("barrage").exists()
    assert compute_neighbour_pairs(["DDDD"], BARRAGE) is None


def test_the_split_is_fixed_and_holds_out_about_a_tenth() -> None:
    # A fixed rule (the SHA-256 of the line), not a random draw: the same on every machine and run.
    assert [i for i in range(10) if is_heldout(f"{i:040d}")] == [0, 2, 5, 9]
    lines = [f"{i:040d}" for i in range(20_000)]
    share = sum(map(is_heldout, lines)) / len(lines)
    assert 0.08 < share < 0.12


def test_flag_statistics_match_a_plain_count_of_the_file() -> None:
    # An independent count straight from the text, not through compute_stats.
    lines = [
        line.strip()
        for line in lzma.decompress(gravon_path("classic").read_bytes()).decode("ascii").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert len(lines) == 64_920
    data = _shipped("classic")
    assert data["setups"] == len(lines)
    flags = Counter(line.index("M") for line in lines)
    assert data["rank_counts"]["flag"] == [flags[i] for i in range(40)]
    assert data["flag"]["by_row_from_front"][3] == sum(flags[i] for i in range(30, 40))
    marshal_front = sum(1 for line in lines if "L" in line[:10])
    assert sum(data["rank_counts"]["marshal"][:10]) == marshal_front

    def fully_bombed(line: str) -> bool:
        f = line.index("M")
        row, col = divmod(f, 10)
        around = [(row + dr) * 10 + col + dc for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                  if 0 <= row + dr < 4 and 0 <= col + dc < 10]
        return all(line[j] == "B" for j in around)

    share = sum(map(fully_bombed, lines)) / len(lines)
    assert data["flag"]["fully_guarded_share"] == pytest.approx(share, abs=1e-6)


def test_statistics_highlights() -> None:
    data = _shipped("classic")
    # People keep the flag on the back row nearly nine times in ten, and in a corner a fifth of the time.
    assert 0.85 < data["flag"]["on_back_row_share"] < 0.92
    corners = data["rank_counts"]["flag"][30] + data["rank_counts"]["flag"][39]
    assert 0.15 < corners / data["setups"] < 0.25
    stats = load_stats(CLASSIC)
    assert stats is not None
    # Scouts crowd the front row, miners the back rows.
    assert stats.row_shares(Rank.SCOUT)[0] > 0.3
    assert stats.row_shares(Rank.MINER)[3] > stats.row_shares(Rank.MINER)[0]
    barrage = _shipped("barrage")
    assert barrage["skipped_lines"] == 1  # the stray ']' at the end of the Barrage file


def test_score_is_normalised_to_human_setups() -> None:
    stats = load_stats(CLASSIC)
    assert stats is not None
    data = _shipped("classic")
    quantiles = data["score"]["human_gain_quantiles"]
    assert quantiles == sorted(quantiles)
    median_like = parse_setup("BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG", CLASSIC, Notation.GRAVON)
    score = stats.score(median_like)
    assert score.normalised == pytest.approx(score.gain / data["score"]["human_mean_gain"])
    assert 0.0 <= score.human_percentile <= 100.0
    assert math.isfinite(score.log_likelihood) and score.log_likelihood < 0


def test_score_orders_generated_above_random() -> None:
    for ruleset in (CLASSIC, BARRAGE):
        stats = load_stats(ruleset)
        assert stats is not None
        generated = sum(stats.score(generate_setup(ruleset, s)).gain for s in range(30)) / 30
        shuffled = sum(stats.score(random_setup(ruleset, s)).gain for s in range(30)) / 30
        assert generated > shuffled


def test_score_refuses_another_ruleset() -> None:
    stats = load_stats(CLASSIC)
    assert stats is not None
    with pytest.raises(ValueError, match="barrage"):
        stats.score(generate_setup(BARRAGE, 1))


def test_compute_stats_on_a_small_sample() -> None:
    lines = ["BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG", "DFIKFGDLFGDGHCDHIEDHBBEJDIJBEBGHDEDEBMBF", "X" * 40]
    data = compute_stats(lines, CLASSIC)
    assert data["setups"] == 2 and data["skipped_illegal"] == 1
    assert data["rank_counts"]["flag"][23] == 1 and data["rank_counts"]["flag"][37] == 1
    model = SetupStats(data)
    assert model.probability(Rank.FLAG, 23) > model.probability(Rank.FLAG, 0)
