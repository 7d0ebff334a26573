"""The prior of the belief model: what a piece probably is from the square it started on.

The human statistics are the per-square rank counts of the *training* part of the Gravon setups
(``setups/stats.py``: the fixed split ``is_heldout``; the held-out part only ever scores the model).
``p(rank | position index)`` is the count plus a prior of ``SMOOTHING`` setups spread by each rank's
share, so no rank is ever impossible on a square (a bluff setup must not break the model). Barrage's
empty squares are left out: a piece stands on the square, so it is one of the ranks.

Across games (issue 22): against one opponent the prior blends the human statistics with the
opponent's own past setups, Dirichlet style: ``p = (alpha_r * p_human + n_r) / (alpha_r + n)`` where
``n_r`` counts the past setups with rank r on the square and ``n`` those that show the square at all (all
of them when whole; setups seen in part, engine_ext/beliefs/observed.py, show some squares), then each
square's row is normalised.
``alpha_r`` (the human statistics' weight in setups, for rank r) is chosen per opponent and rank by the
leave-one-out likelihood of where its past setups put that rank, over ``ALPHAS``: a rank the opponent
always puts in the same place (a flag in one corner) gets a small alpha, so the habit dominates by
game three; ranks it varies get a large one, so the human statistics stay. With a single past setup
there is nothing to leave out and ``DEFAULT_ALPHA`` applies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engine_ext.rules.rulesets import Ruleset
from setups.notation import Setup
from setups.stats import SMOOTHING, key_rank, load_stats, pairs_path

N_RANKS = 13  # rank codes 0..12 as in engine_ext/rules/core.pxd (12 is "unknown", never a belief)
FloatArray = npt.NDArray[np.float64]

# The human statistics' weight in setups when one past setup of the opponent is known.
DEFAULT_ALPHA = 4.0
# Candidates for the per-opponent weight, from "this opponent repeats itself" to "human statistics".
ALPHAS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0, 256.0)


@runtime_checkable
class SetupLearner(Protocol):
    """An engine whose belief model takes the opponent's past setups: the bot sets them before a game
    from its per-opponent store (bot/daemon/learning.py), oldest first."""

    opponent_setups: Sequence[Setup]


def pool_shares(ruleset: Ruleset) -> FloatArray:
    """The uniform pool of the thesis (7.3): each rank's share of a side's pieces."""
    shares = np.zeros(N_RANKS)
    for rank, count in ruleset.pieces.items():
        shares[int(rank)] = count
    return shares / shares.sum()


@lru_cache(maxsize=8)
def _human_table(ruleset: Ruleset) -> FloatArray:
    size = ruleset.width * ruleset.setup_rows
    pool = pool_shares(ruleset)
    stats = load_stats(ruleset)
    training = None if stats is None else stats.data.get("training")
    if training is None:  # no human data for this ruleset (mini): the uniform pool on every square
        table = np.tile(pool, (size, 1))
    else:
        setups = float(training["setups"])
        table = np.zeros((size, N_RANKS))
        for key, counts in training["rank_counts"].items():
            rank = key_rank(key)
            if rank is not None:
                table[:, int(rank)] = np.asarray(counts, dtype=np.float64)
        table = (table + SMOOTHING * pool) / (setups + SMOOTHING)
        table /= table.sum(axis=1, keepdims=True)  # Barrage: drop the empty squares' share
    table.setflags(write=False)
    return table


def human_prior(ruleset: Ruleset) -> FloatArray:
    """``(setup squares, N_RANKS)``: p(rank | position index, front row first) from human setups."""
    return _human_table(ruleset)


@lru_cache(maxsize=8)
def neighbour_ratios(ruleset: Ruleset) -> dict[tuple[int, int], FloatArray]:
    """The pair statistics: for neighbouring setup squares (i, j), in both orders, ``ratio[a, b] =
    p(rank b on j | rank a on i) / p(rank b on j)`` from the training setups (``setups/data/
    <ruleset>-pairs.json``; the conditional gets one setup spread by ``p(b on j)``, so nothing is
    impossible). Empty for a ruleset without pair statistics (Barrage, mini). When the piece that
    started on i is revealed as a, the hidden piece that started on j is weighed by ``ratio[a]``."""
    path = pairs_path(ruleset.name)
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    codes = [int(key_rank(k)) for k in data["ranks"]]  # type: ignore[arg-type]
    out: dict[tuple[int, int], FloatArray] = {}
    for key, table in data["pairs"].items():
        i, j = (int(x) for x in key.split("-"))
        counts = np.zeros((N_RANKS, N_RANKS))
        counts[np.ix_(codes, codes)] = np.asarray(table, dtype=np.float64)
        for a, b, c in ((i, j, counts), (j, i, counts.T)):
            on_b = c.sum(axis=0) / c.sum()  # p(rank on the second square)
            conditional = (c + on_b) / (c.sum(axis=1, keepdims=True) + 1.0)
            ratio = np.divide(conditional, on_b, out=np.ones_like(conditional), where=on_b > 0)
            ratio.setflags(write=False)
            out[(a, b)] = ratio
    return out


def _setup_counts(setups: Sequence[Setup], size: int) -> FloatArray:
    counts = np.zeros((size, N_RANKS))
    for setup in setups:
        for index, rank in enumerate(setup.cells):
            if rank is not None:
                counts[index, int(rank)] += 1.0
    return counts


def choose_alphas(human: FloatArray, setups: Sequence[Setup]) -> FloatArray:
    """Per rank, the human statistics' weight that best predicts where each past setup put that rank
    from where the others did (leave-one-out); ``DEFAULT_ALPHA`` for every rank with fewer than two. A rank
    that tells nothing (a flag never found, or never on a square two setups seen in part both show) takes
    the median weight of the ranks that do: how much this opponent repeats itself."""
    alphas = np.full(N_RANKS, DEFAULT_ALPHA)
    if len(setups) < 2:
        return alphas
    size = human.shape[0]
    per_setup = [_setup_counts([setup], size) for setup in setups]
    total = sum(per_setup, np.zeros((size, N_RANKS)))
    seen = total.sum(axis=1, keepdims=True)  # per square, the setups that show what stood on it
    scores = np.zeros((len(ALPHAS), N_RANKS))
    for a, alpha in enumerate(ALPHAS):
        for own in per_setup:
            others = seen - own.sum(axis=1, keepdims=True)
            p = (alpha * human + (total - own)) / (alpha + others)
            scores[a] += (own * np.log(np.where(own > 0, p, 1.0))).sum(axis=0)
    best = np.asarray(ALPHAS)[np.argmax(scores, axis=0)]  # the first (smallest) of equal scores
    # A rank tells only where a setup shows it on a square another setup shows too: otherwise every weight
    # scores the same (whole setups always overlap; setups seen in part may not).
    told = (total.sum(axis=0) > 0) & (scores.max(axis=0) - scores.min(axis=0) > 1e-9)
    alphas[told] = best[told]
    if told.any():
        alphas[~told] = float(np.median(best[told]))
    return alphas


def opponent_prior(ruleset: Ruleset, setups: Sequence[Setup]) -> tuple[FloatArray, FloatArray]:
    """The prior against one opponent from its past setups (same shape as ``human_prior``), and per
    rank the weight ``alpha`` the human statistics got (``inf`` without past setups)."""
    human = human_prior(ruleset)
    setups = [s for s in setups if s.ruleset.name == ruleset.name]
    if not setups:
        return human, np.full(N_RANKS, np.inf)
    alphas = choose_alphas(human, setups)
    counts = _setup_counts(setups, human.shape[0])
    # Each square by the setups that show it: all of them when whole; a square no game showed (a setup seen
    # in part, engine_ext/beliefs/observed.py) keeps the human statistics.
    seen = counts.sum(axis=1, keepdims=True)
    table = (alphas * human + counts) / (alphas + seen)
    table /= table.sum(axis=1, keepdims=True)
    return table, alphas


def setup_log_loss(table: FloatArray, setup: Setup) -> float:
    """Mean ``-ln p(true rank | square)`` a piece of ``setup`` under ``table`` (nats)."""
    losses = [-np.log(table[i, int(r)]) for i, r in enumerate(setup.cells) if r is not None]
    return float(np.mean(losses))
