"""What people's setups look like: per-square rank frequencies, how the flag is guarded, and a score.

The numbers come from the Gravon setup collections, shipped xz-compressed in ``setups/data/`` (where they
come from: ``setups/data/README.md``), boiled down by ``scripts/build_setup_stats.py`` into the compact
JSON files beside them that the engine loads. The collections themselves are read only to rebuild those
files and for the belief model's held-out score (``perspecto beliefs calibrate``).

Score of a setup (``SetupStats.score``): each piece is looked up in the per-square marginals
``p(rank | square)`` (counts plus a small prior so unseen pairs stay finite), and compared with
``p0(rank) = pieces of that rank / setup squares``, the chance of that rank on a square if placement
ignored position. ``gain`` is the mean of ``ln(p / p0)`` over the pieces (nats a piece; empty squares
of Barrage are not pieces): 0 for a setup that uses position no better than chance, higher when every
piece stands where people put it. ``normalised = gain / mean gain of the human setups``, so 1.0 is a
typical human setup, and ``human_percentile`` says how many human setups score lower.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import lzma
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import Ruleset, get_ruleset
from setups.notation import Notation, Setup, rank_letter

STATS_FORMAT = 1
# Prior weight (in setups) spread over the ranks by their share: keeps ln p finite for unseen pairs.
SMOOTHING = 1.0
# Conditional bomb maps are kept only for flag squares seen at least this often.
MIN_FLAG_SAMPLES = 50
QUANTILES = 20

EMPTY_LABEL = "empty"

# The fixed split of the human setups for the belief model (engine_ext/beliefs): a setup is held out
# when the first byte of the SHA-256 of its Gravon line is a multiple of HELDOUT_MODULUS (about 10 %).
# Equal setups fall on the same side, so no held-out setup is ever counted in the training statistics.
HELDOUT_MODULUS = 10
SPLIT_RULE = "held out when sha256(gravon line)[0] % 10 == 0"


def is_heldout(line: str) -> bool:
    """Whether a Gravon setup line belongs to the held-out part of the fixed split."""
    return hashlib.sha256(line.encode("ascii")).digest()[0] % HELDOUT_MODULUS == 0


def rank_key(rank: Rank | None) -> str:
    return EMPTY_LABEL if rank is None else rank.label


def key_rank(key: str) -> Rank | None:
    return None if key == EMPTY_LABEL else Rank[key.upper()]


# The shipped Gravon setup collections, by ruleset name (setups/data/README.md says where they come from).
GRAVON_FILES = {"classic": "gravon-setups-classic.txt.xz", "barrage": "gravon-setups-barrage.txt.xz"}


def gravon_path(ruleset_name: str) -> Path:
    """The shipped Gravon setup collection of a ruleset (``classic`` or ``barrage``), xz-compressed."""
    if ruleset_name not in GRAVON_FILES:
        raise ValueError(f"no Gravon setup collection for the {ruleset_name} ruleset "
                         f"(there are: {', '.join(GRAVON_FILES)})")
    return Path(str(resources.files("setups") / "data" / GRAVON_FILES[ruleset_name]))


def open_text(path: Path) -> TextIO:
    """A text file for reading, plain or compressed (``.xz``, ``.gz``: the stdlib reads both)."""
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open(encoding="utf-8")


def read_text(path: Path) -> str:
    """The whole text of a plain or compressed file; a damaged compressed file is a ValueError naming it."""
    try:
        with open_text(path) as handle:
            return handle.read()
    except (lzma.LZMAError, EOFError) as exc:  # a damaged or cut .xz/.gz (gzip's own errors are OSErrors)
        raise ValueError(f"{path}: not a readable compressed file: {exc}") from None


def read_gravon_lines(path: Path, ruleset: Ruleset) -> tuple[list[str], int]:
    """The setup lines of a Gravon data file (plain, ``.xz`` or ``.gz``), and how many non-comment lines
    were skipped as malformed (the Barrage file ends with a stray ``]``)."""
    size = ruleset.width * ruleset.setup_rows
    good: list[str] = []
    skipped = 0
    for raw in read_text(path).splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) == size and all("A" <= ch <= "M" for ch in line):
            good.append(line)
        else:
            skipped += 1
    return good, skipped


def _neighbours(index: int, width: int, rows: int) -> list[int]:
    row, col = divmod(index, width)
    out = []
    for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
        r, c = row + dr, col + dc
        if 0 <= r < rows and 0 <= c < width:
            out.append(r * width + c)
    return out


def compute_stats(lines: Iterable[str], ruleset: Ruleset, *, source: str = "", skipped: int = 0) -> dict[str, Any]:
    """The statistics as a JSON-ready dict, from Gravon lines (40 letters, front row first).
    Lines that are not legal setups of ``ruleset`` are counted in ``skipped_illegal`` and left out."""
    width, rows = ruleset.width, ruleset.setup_rows
    size = width * rows
    ranks: list[Rank | None] = [r for r in Rank if ruleset.pieces.get(r, 0) > 0]
    if not ruleset.fills_setup_area:
        ranks.append(None)
    letter_rank = {rank_letter(r, Notation.GRAVON): r for r in ranks}
    # Every square is in the setup area, so a line is legal exactly when its letter counts are right
    # (the same test as Ruleset.validate_setup, done on strings because there are 65,000 of them).
    wanted = Counter({rank_letter(r, Notation.GRAVON): ruleset.pieces.get(r, 0) for r in ranks if r is not None})
    if None in ranks:
        wanted[rank_letter(None, Notation.GRAVON)] = size - ruleset.piece_total
    counts: dict[str, list[int]] = {letter: [0] * size for letter in letter_rank}
    flag_letter = rank_letter(Rank.FLAG, Notation.GRAVON)
    bomb_letter = rank_letter(Rank.BOMB, Notation.GRAVON)
    flag_by_row = [0] * rows
    guard: dict[tuple[int, int], int] = {}
    bombs_given_flag: dict[int, list[int]] = {}
    kept: list[str] = []
    illegal = 0
    for line in lines:
        if len(line) != size or Counter(line) != wanted:
            illegal += 1
            continue
        kept.append(line)
        for index, letter in enumerate(line):
            counts[letter][index] += 1
        flag = line.index(flag_letter)
        flag_by_row[flag // width] += 1
        around = _neighbours(flag, width, rows)
        bombs = sum(1 for j in around if line[j] == bomb_letter)
        guard[(len(around), bombs)] = guard.get((len(around), bombs), 0) + 1
        per_square = bombs_given_flag.setdefault(flag, [0] * size)
        for j, letter in enumerate(line):
            if letter == bomb_letter:
                per_square[j] += 1
    total = len(kept)
    if total == 0:
        raise ValueError("no legal setups to count")
    # "Fully guarded": as many neighbours are bombs as the board and the bomb count allow.
    bomb_count = ruleset.pieces.get(Rank.BOMB, 0)
    fully = sum(c for (n, b), c in guard.items() if b == min(n, bomb_count))
    adjacent = sum(b * c for (_, b), c in guard.items())
    stats: dict[str, Any] = {
        "format": STATS_FORMAT,
        "ruleset": ruleset.name,
        "source": source,
        "setups": total,
        "skipped_lines": skipped,
        "skipped_illegal": illegal,
        "width": width,
        "rows": rows,
        "rank_counts": {rank_key(r): counts[rank_letter(r, Notation.GRAVON)] for r in ranks},
        "flag": {
            "by_row_from_front": flag_by_row,
            "on_back_row_share": round(flag_by_row[-1] / total, 6),
            "fully_guarded_share": round(fully / total, 6),
            "mean_adjacent_bombs": round(adjacent / total, 6),
            "neighbour_bombs": [
                {"neighbours": n, "bombs": b, "setups": c} for (n, b), c in sorted(guard.items())
            ],
        },
        "bombs_given_flag": {
            str(flag): per_square
            for flag, per_square in sorted(bombs_given_flag.items())
            if counts[flag_letter][flag] >= MIN_FLAG_SAMPLES
        },
    }
    # Calibrate the score on the very setups the marginals came from.
    model = SetupStats(stats, ruleset)
    by_letter = {letter: model.gain_table(rank) for letter, rank in letter_rank.items() if rank is not None}
    gains = sorted(
        sum(by_letter[letter][i] for i, letter in enumerate(line) if letter in by_letter) / ruleset.piece_total
        for line in kept
    )
    stats["score"] = {
        "smoothing": SMOOTHING,
        "human_mean_gain": round(sum(gains) / total, 6),
        "human_gain_quantiles": [
            round(gains[min(total - 1, round(q * (total - 1) / QUANTILES))], 6) for q in range(QUANTILES + 1)
        ],
    }
    return stats


def compute_training_counts(lines: Iterable[str], ruleset: Ruleset) -> dict[str, Any]:
    """Per-square rank counts of the training part of the split (``is_heldout`` false), for the belief
    model's prior; lines that are not legal setups are left out as in ``compute_stats``."""
    width, rows = ruleset.width, ruleset.setup_rows
    size = width * rows
    ranks: list[Rank | None] = [r for r in Rank if ruleset.pieces.get(r, 0) > 0]
    if not ruleset.fills_setup_area:
        ranks.append(None)
    wanted = Counter({rank_letter(r, Notation.GRAVON): ruleset.pieces.get(r, 0) for r in ranks if r is not None})
    if None in ranks:
        wanted[rank_letter(None, Notation.GRAVON)] = size - ruleset.piece_total
    counts: dict[str, list[int]] = {rank_letter(r, Notation.GRAVON): [0] * size for r in ranks}
    training = heldout = 0
    for line in lines:
        if len(line) != size or Counter(line) != wanted:
            continue
        if is_heldout(line):
            heldout += 1
            continue
        training += 1
        for index, letter in enumerate(line):
            counts[letter][index] += 1
    return {
        "split": SPLIT_RULE,
        "setups": training,
        "heldout_setups": heldout,
        "rank_counts": {rank_key(r): counts[rank_letter(r, Notation.GRAVON)] for r in ranks},
    }


def compute_neighbour_pairs(lines: Iterable[str], ruleset: Ruleset) -> dict[str, Any] | None:
    """For every two neighbouring setup squares i < j, how often rank a stood on i with rank b on j,
    over the training part of the split (the belief model's pair statistics: a revealed bomb makes its
    neighbours likelier to be the flag or bombs). Only for rulesets whose pieces fill the setup area
    (classic); ``None`` otherwise."""
    if not ruleset.fills_setup_area:
        return None
    width, rows = ruleset.width, ruleset.setup_rows
    size = width * rows
    ranks = [r for r in Rank if ruleset.pieces.get(r, 0) > 0]
    index = {rank_letter(r, Notation.GRAVON): k for k, r in enumerate(ranks)}
    wanted = Counter({rank_letter(r, Notation.GRAVON): ruleset.pieces[r] for r in ranks})
    pairs = {(i, j): [[0] * len(ranks) for _ in ranks] for i in range(size) for j in _neighbours(i, width, rows)
             if i < j}
    training = 0
    for line in lines:
        if len(line) != size or Counter(line) != wanted or is_heldout(line):
            continue
        training += 1
        for (i, j), table in pairs.items():
            table[index[line[i]]][index[line[j]]] += 1
    return {
        "split": SPLIT_RULE,
        "ruleset": ruleset.name,
        "setups": training,
        "ranks": [rank_key(r) for r in ranks],
        "pairs": {f"{i}-{j}": table for (i, j), table in pairs.items()},
    }


def pairs_path(ruleset_name: str) -> Path:
    """Where the shipped neighbour-pair statistics of a ruleset live (classic only)."""
    return Path(str(resources.files("setups") / "data" / f"{ruleset_name}-pairs.json"))


@dataclass(frozen=True)
class SetupScore:
    """How human a setup looks; see the module docstring for the definitions."""

    log_likelihood: float  # mean ln p(rank | square) a piece
    gain: float  # mean ln(p / p0) a piece, nats
    normalised: float  # gain / human mean gain (1.0 = a typical human setup)
    human_percentile: float  # share of human setups (0..100) with a lower gain

    def __str__(self) -> str:
        return (
            f"{self.normalised:.2f} of a typical human setup "
            f"(gain {self.gain:.3f} nats/piece, human percentile {self.human_percentile:.0f})"
        )


class SetupStats:
    """The statistics of one ruleset, with the smoothed marginals the generator and score use."""

    def __init__(self, data: Mapping[str, Any], ruleset: Ruleset | None = None) -> None:
        self.data = data
        self.ruleset = ruleset or get_ruleset(str(data["ruleset"]))
        self.setups = int(data["setups"])
        self.size = self.ruleset.width * self.ruleset.setup_rows
        counts = data["rank_counts"]
        self.rank_counts: dict[Rank | None, list[int]] = {key_rank(k): list(v) for k, v in counts.items()}
        self.bombs_given_flag: dict[int, list[int]] = {
            int(k): list(v) for k, v in data.get("bombs_given_flag", {}).items()
        }
        self._prior = {r: self.share(r) for r in self.rank_counts}
        self._log_p = {
            r: [math.log(self.probability(r, i)) for i in range(self.size)] for r in self.rank_counts
        }
        self._gain = {
            r: [lp - math.log(self._prior[r]) for lp in self._log_p[r]]
            for r in self.rank_counts
            if r is not None
        }

    def share(self, rank: Rank | None) -> float:
        """p0: the chance of ``rank`` on a square if position did not matter."""
        if rank is None:
            have = self.size - self.ruleset.piece_total
        else:
            have = self.ruleset.pieces.get(rank, 0)
        return have / self.size

    def probability(self, rank: Rank | None, index: int) -> float:
        """Smoothed p(rank | square at position index)."""
        seen = self.rank_counts.get(rank)
        count = seen[index] if seen is not None else 0
        return (count + SMOOTHING * self.share(rank)) / (self.setups + SMOOTHING)

    def bomb_probability_given_flag(self, index: int, flag_index: int) -> float | None:
        """p(bomb at index | flag at flag_index), or ``None`` when that flag square is too rare."""
        per_square = self.bombs_given_flag.get(flag_index)
        if per_square is None:
            return None
        seen = self.rank_counts[Rank.FLAG][flag_index]
        return (per_square[index] + SMOOTHING * self.share(Rank.BOMB)) / (seen + SMOOTHING)

    def flag_distribution(self) -> list[float]:
        return [self.probability(Rank.FLAG, i) for i in range(self.size)]

    def row_shares(self, rank: Rank | None) -> list[float]:
        """Share of the rank's pieces on each row, front row first."""
        w = self.ruleset.width
        per_square = self.rank_counts.get(rank, [0] * self.size)
        total = sum(per_square) or 1
        return [sum(per_square[r * w:(r + 1) * w]) / total for r in range(self.ruleset.setup_rows)]

    def gain_table(self, rank: Rank) -> list[float]:
        """ln(p(rank | square) / p0(rank)) for every position index."""
        return self._gain[rank]

    def gain(self, setup: Setup) -> float:
        pieces = [(i, r) for i, r in enumerate(setup.cells) if r is not None]
        if not pieces:
            return 0.0
        return sum(self._gain[r][i] for i, r in pieces) / len(pieces)

    def score(self, setup: Setup) -> SetupScore:
        if setup.ruleset.name != self.ruleset.name:
            raise ValueError(f"a {setup.ruleset.name} setup cannot be scored by {self.ruleset.name} statistics")
        pieces = [(i, r) for i, r in enumerate(setup.cells) if r is not None]
        log_likelihood = sum(self._log_p[r][i] for i, r in pieces) / max(1, len(pieces))
        gain = self.gain(setup)
        calibration = self.data.get("score", {})
        mean = float(calibration.get("human_mean_gain", 0.0)) or 1.0
        quantiles: list[float] = list(calibration.get("human_gain_quantiles", []))
        return SetupScore(
            log_likelihood=log_likelihood,
            gain=gain,
            normalised=gain / mean,
            human_percentile=_percentile(quantiles, gain),
        )


def _percentile(quantiles: list[float], value: float) -> float:
    """Where ``value`` falls among evenly spaced quantiles, 0..100, interpolated between them."""
    if len(quantiles) < 2:
        return 50.0
    if value <= quantiles[0]:
        return 0.0
    if value >= quantiles[-1]:
        return 100.0
    k = bisect_right(quantiles, value) - 1
    low, high = quantiles[k], quantiles[k + 1]
    frac = 0.0 if high == low else (value - low) / (high - low)
    return 100.0 * (k + frac) / (len(quantiles) - 1)


def stats_path(ruleset_name: str) -> Path:
    """Where the shipped statistics of a ruleset live inside the package."""
    return Path(str(resources.files("setups") / "data" / f"{ruleset_name}-stats.json"))


@lru_cache(maxsize=8)
def _load(ruleset_name: str) -> SetupStats | None:
    path = stats_path(ruleset_name)
    if not path.is_file():
        return None
    return SetupStats(json.loads(path.read_text(encoding="utf-8")))


def load_stats(ruleset: Ruleset | str) -> SetupStats | None:
    """The shipped statistics for a ruleset, or ``None`` (there are none for mini)."""
    name = ruleset if isinstance(ruleset, str) else ruleset.name
    return _load(name.lower())
