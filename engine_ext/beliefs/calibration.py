"""How good the beliefs are (``perspecto beliefs calibrate``): the proof asked for in issue 22.

- **Prior**, on the held-out human setups (the split of setups/stats.py; the prior never saw them):
  mean log-loss a piece, ``-ln p(true rank)``, of the uniform pool (thesis 7.3), of the start-square
  marginals, and of the marginals balanced to the pool's counts (what the model starts a game with);
  then with 5, 10, 20, 30 pieces revealed at random, the hidden ones balanced with and without the pair
  statistics of their revealed neighbours (whether the pairs earn their place).
- **Posterior**, on game records (both setups known; play them from held-out setups, e.g. ``perspecto
  match ... --setups FILE`` with the held-out lines): every ``every`` plies, each hidden live piece of
  both sides as the other side sees it, scored by log-loss per ply bucket for the thesis's pool (an
  unmoved hidden piece: the hidden pool with bombs and flag; a moved one: the movable part), the model
  with hard evidence only (no soft tables) and the model with the fitted tables; and the reliability of
  the full model: predicted probability against observed frequency in ten bins over all (piece, rank)
  pairs.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine_ext.beliefs.events import GameTracker
from engine_ext.beliefs.evidence import (
    MOVED_MASK,
    N_RANKS,
    PLY_EDGES,
    FloatArray,
    Likelihoods,
    neutral_likelihoods,
    ply_bucket,
)
from engine_ext.beliefs.fit import record_files, replay, start_game
from engine_ext.beliefs.model import BeliefModel, balance
from engine_ext.beliefs.prior import human_prior, neighbour_ratios, pool_shares
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import Ruleset
from setups.notation import Notation, parse_setup
from setups.stats import is_heldout, read_gravon_lines

BINS = 10
_EPS = 1e-12  # a probability of 0 for the true rank would be an infinite loss; it is scored as 1e-12


REVEALED = (5, 10, 20, 30)  # pieces shown at random in the pair statistics' test
PAIR_SAMPLE = 1500  # held-out setups that test uses


@dataclass(frozen=True)
class PriorReport:
    setups: int
    pool: float  # mean log-loss a piece, nats
    marginals: float
    balanced: float
    # revealed count -> (balanced marginals, with the pair statistics): log-loss of the hidden pieces
    pairs: dict[int, tuple[float, float]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [
            f"prior on {self.setups} held-out human setups, mean log-loss a piece (nats):",
            f"  uniform pool (thesis 7.3)      {self.pool:.4f}",
            f"  start-square marginals         {self.marginals:.4f}  ({self.marginals - self.pool:+.4f})",
            f"  marginals balanced to the pool {self.balanced:.4f}  ({self.balanced - self.pool:+.4f})",
        ]
        if self.pairs:
            out.append("with pieces revealed at random (held-out setups), the hidden ones:")
            for k, (without, with_pairs) in self.pairs.items():
                out.append(f"  {k:>2} revealed: balanced {without:.4f}, with the pair statistics {with_pairs:.4f} "
                           f"({with_pairs - without:+.4f})")
        return out


def prior_report(ruleset: Ruleset, data_file: Path, pair_sample: int = PAIR_SAMPLE) -> PriorReport:
    lines, _skipped = read_gravon_lines(data_file, ruleset)
    held = [line for line in lines if is_heldout(line)]
    if not held:
        raise ValueError(f"no held-out setups in {data_file}")
    table = human_prior(ruleset)
    counts = np.zeros(N_RANKS)
    for rank, count in ruleset.pieces.items():
        counts[int(rank)] = count
    balanced = balance(table, counts)
    pool = pool_shares(ruleset)
    sums = np.zeros(3)
    pieces = 0
    for line in held:
        setup = parse_setup(line, ruleset, Notation.GRAVON)
        for index, cell in enumerate(setup.cells):
            if cell is None:
                continue
            r = int(cell)
            sums -= np.log([pool[r], table[index, r], max(balanced[index, r], _EPS)])
            pieces += 1
    pool_loss, marginal_loss, balanced_loss = (sums / pieces).tolist()
    return PriorReport(len(held), pool_loss, marginal_loss, balanced_loss,
                       _pair_test(ruleset, held[:pair_sample], table, counts))


def _pair_test(ruleset: Ruleset, lines: Sequence[str], table: FloatArray,
               counts: FloatArray) -> dict[int, tuple[float, float]]:
    """Reveal k random pieces of each setup (seeded), balance the rest with and without the pair
    statistics of the revealed neighbours, and score the hidden pieces."""
    ratios = neighbour_ratios(ruleset)
    if not ratios:
        return {}
    neighbours: dict[int, list[int]] = {}
    for i, j in ratios:
        neighbours.setdefault(j, []).append(i)
    rng = random.Random(1)
    out = {}
    for k in REVEALED:
        sums = np.zeros(2)
        pieces = 0
        for line in lines:
            truth = [int(r) for r in parse_setup(line, ruleset, Notation.GRAVON).cells if r is not None]
            shown = set(rng.sample(range(len(truth)), k))
            hidden = [i for i in range(len(truth)) if i not in shown]
            targets = counts.copy()
            for i in shown:
                targets[truth[i]] -= 1
            plain = table[hidden]
            paired = plain.copy()
            for row, j in enumerate(hidden):
                for i in neighbours.get(j, []):
                    if i in shown:
                        paired[row] *= ratios[(i, j)][truth[i]]
            rows = np.arange(len(hidden))
            true_ranks = np.array([truth[j] for j in hidden])
            for m, weights in enumerate((plain, paired)):
                sums[m] -= np.log(np.maximum(balance(weights, targets)[rows, true_ranks], _EPS)).sum()
            pieces += len(hidden)
        out[k] = (float(sums[0] / pieces), float(sums[1] / pieces))
    return out


def thesis_pool(tracker: GameTracker, owner: int, counts: FloatArray) -> FloatArray:
    """The uniform pool of the thesis (7.3) for ``owner``'s hidden pieces: rows by piece id."""
    remaining = counts.copy()
    for pid in range(tracker.piece_count):
        if tracker.owner[pid] == owner and tracker.shown[pid]:
            remaining[tracker.rank(pid)] -= 1
    remaining = np.maximum(remaining, 0.0)
    unmoved = remaining / max(remaining.sum(), 1.0)
    movable = remaining * MOVED_MASK
    moved = movable / max(movable.sum(), 1.0)
    out = np.zeros((tracker.piece_count, N_RANKS))
    for pid in range(tracker.piece_count):
        if tracker.owner[pid] == owner:
            out[pid] = moved if tracker.moves(pid) > 0 else unmoved
    return out


@dataclass
class PosteriorReport:
    names: tuple[str, ...]
    loss: FloatArray  # (models, ply buckets): summed log-loss
    samples: FloatArray  # (ply buckets,): hidden pieces scored
    bin_predicted: FloatArray = field(default_factory=lambda: np.zeros(BINS))  # full model: sum of p a bin
    bin_hits: FloatArray = field(default_factory=lambda: np.zeros(BINS))
    bin_count: FloatArray = field(default_factory=lambda: np.zeros(BINS))
    games: int = 0
    skipped: list[str] = field(default_factory=list)

    def mean_loss(self) -> FloatArray:
        return self.loss.sum(axis=1) / max(self.samples.sum(), 1.0)

    def lines(self) -> list[str]:
        out = [f"posterior over {self.games} games, hidden live pieces of both sides as the other side "
               f"sees them, mean log-loss a piece (nats) by ply:"]
        header = f"  {'plies':>10} {'pieces':>8} " + " ".join(f"{n:>14}" for n in self.names)
        out.append(header)
        for b, edge in enumerate(PLY_EDGES):
            if self.samples[b] == 0:
                continue
            end = PLY_EDGES[b + 1] - 1 if b + 1 < len(PLY_EDGES) else None
            label = f"{edge}-{end}" if end is not None else f"{edge}+"
            values = " ".join(f"{v:>14.4f}" for v in self.loss[:, b] / self.samples[b])
            out.append(f"  {label:>10} {int(self.samples[b]):>8} {values}")
        values = " ".join(f"{v:>14.4f}" for v in self.mean_loss())
        out.append(f"  {'all':>10} {int(self.samples.sum()):>8} {values}")
        out.append(f"reliability of {self.names[-1]} (all hidden (piece, rank) pairs): predicted -> observed")
        for b in range(BINS):
            n = self.bin_count[b]
            if n == 0:
                continue
            out.append(f"  [{b / BINS:.1f}, {(b + 1) / BINS:.1f}) {int(n):>8} pairs: "
                       f"{self.bin_predicted[b] / n:.3f} -> {self.bin_hits[b] / n:.3f}")
        ece = float(np.abs(self.bin_predicted - self.bin_hits).sum() / max(self.bin_count.sum(), 1.0))
        out.append(f"  expected calibration error {ece:.4f}")
        return out


@dataclass(frozen=True)
class Variant:
    """One model to score: its tables, and whether it uses the pair statistics."""

    name: str
    tables: Likelihoods
    pairs: bool = True


def posterior_report(paths: Sequence[Path], likelihoods: Sequence[Variant], every: int = 2) -> PosteriorReport:
    """Score the thesis pool, then each model, on the records; the last model's reliability is binned.
    Add ``hard_only()`` for the baseline of hard evidence alone."""
    names = ("thesis pool", *(v.name for v in likelihoods))
    report = PosteriorReport(names, np.zeros((len(names), len(PLY_EDGES))), np.zeros(len(PLY_EDGES)))
    for path in record_files(paths):
        try:
            record = GameRecord.load(path)
            _score_game(record, likelihoods, every, report)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            report.skipped.append(f"{path}: {exc}")
    return report


def _score_game(record: GameRecord, likelihoods: Sequence[Variant], every: int, report: PosteriorReport) -> None:
    game = start_game(record)
    truth = [int(game.position.piece(pid)[2]) for pid in range(game.position.piece_count)]
    models = [BeliefModel(game, Side.RED, likelihoods=v.tables, pairs=v.pairs) for v in likelihoods]
    counts = np.zeros(N_RANKS)
    for rank, count in game.options.ruleset.pieces.items():
        counts[int(rank)] = count
    loss = np.zeros_like(report.loss)
    samples = np.zeros_like(report.samples)
    bins = np.zeros((3, BINS))
    entries = replay(record, game)
    while True:
        for model in models:
            model.update(game)
        tracker = models[0].tracker
        if tracker.ply % every == 0:
            bucket = ply_bucket(tracker.ply)
            for owner in Side:
                hidden = [pid for pid in range(tracker.piece_count)
                          if tracker.owner[pid] == owner and not tracker.shown[pid] and tracker.alive(pid)]
                if not hidden:
                    continue
                truth_h = np.array([truth[pid] for pid in hidden])
                rows = np.arange(len(hidden))
                matrices = [thesis_pool(tracker, owner, counts)[hidden]]
                matrices += [model.matrix(owner)[hidden] for model in models]
                for m, matrix in enumerate(matrices):
                    loss[m, bucket] -= np.log(np.maximum(matrix[rows, truth_h], _EPS)).sum()
                samples[bucket] += len(hidden)
                full = matrices[-1][:, : int(Rank.UNKNOWN)]
                hits = np.zeros_like(full)
                hits[rows, truth_h] = 1.0
                which = np.minimum((full * BINS).astype(int), BINS - 1).ravel()
                bins[0] += np.bincount(which, weights=full.ravel(), minlength=BINS)
                bins[1] += np.bincount(which, weights=hits.ravel(), minlength=BINS)
                bins[2] += np.bincount(which, minlength=BINS)
        entry = next(entries, None)
        if entry is None:
            break
    # Only a game replayed to its end counts.
    report.loss += loss
    report.samples += samples
    report.bin_predicted += bins[0]
    report.bin_hits += bins[1]
    report.bin_count += bins[2]
    report.games += 1


def hard_only() -> Variant:
    """The prior (no pair statistics) and hard evidence only."""
    return Variant("hard evidence", neutral_likelihoods(), pairs=False)


def plot_reliability(report: PosteriorReport, path: Path) -> bool:
    """A reliability diagram and the log-loss by ply as a PNG; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    used = report.bin_count > 0
    predicted = report.bin_predicted[used] / report.bin_count[used]
    observed = report.bin_hits[used] / report.bin_count[used]
    left.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfect")
    left.plot(predicted, observed, marker="o", label=report.names[-1])
    left.set_xlabel("predicted probability")
    left.set_ylabel("observed frequency")
    left.set_title(f"Reliability ({report.games} games)")
    left.legend()
    buckets = [b for b in range(len(PLY_EDGES)) if report.samples[b] > 0]
    for m, name in enumerate(report.names):
        right.plot([PLY_EDGES[b] for b in buckets], [report.loss[m, b] / report.samples[b] for b in buckets],
                   marker="o", label=name)
    right.set_xscale("symlog", linthresh=10)
    right.set_xlabel("ply (bucket start)")
    right.set_ylabel("log-loss a hidden piece (nats)")
    right.set_title("Posterior log-loss as the game goes on")
    right.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return True
