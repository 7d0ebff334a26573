"""The belief model: for every piece, the chance of each rank, as one side sees the other's pieces.

Interface (the search's side, engine_ext/engine/facade.py, codes against this):

    model = BeliefModel(game, side, opponent_setups=())  # game: the bot's view; side: ours
    model.update(game)            # after every move (both sides'); idempotent, cheap, also on a copy
    enemy = model.enemy_matrix()  # the opponent's pieces as we believe them
    ours = model.own_matrix()     # our pieces as we model the opponent believing them

Both matrices are read-only float64 arrays of shape (MAX_PIECES, N_RANKS) = (96, 13), indexed by the
piece id of engine_ext/rules/core.pxd and the rank code (column 12, "unknown", is always 0). Rows of
the other side's pieces and of captured pieces are all zero; a live piece whose rank the observer has
seen (a fight, a scout's long move) is one-hot; every other live row is a distribution summing to 1.
Column r over the side's rows sums to the side's count of r minus the r captured (in a game set up
with the ruleset's pieces; a position from a board code with fewer pieces keeps rows of 1 and columns
in proportion). A piece that has moved has exactly 0 for bomb and flag.

How a matrix is made (issue 22; docs/engine.md "Beliefs"): each hidden piece's row is its prior from
its starting square (engine_ext/beliefs/prior.py; against the opponent blended with its past setups),
times the pair statistics of each revealed piece that started next to it (a revealed bomb makes its
neighbours likelier the flag), times the likelihoods of what it did (engine_ext/beliefs/evidence.py:
moved or not by this ply, and each behaviour the tracker saw), and the hidden rows are then balanced
by iterative proportional fitting (Sinkhorn) so that each rank's column holds exactly the pieces of
that rank still hidden: probabilities of setups that exist, not independent guesses that add up to
three flags.

Catching up (issue 31): the engine gets a fresh copy of the game every move, so ``update`` does not
go by object identity. A game whose start position and first ``ply_seen`` history entries are the ones
already consumed is the same game: only its new entries are played. Anything else (another game, a
rewound history, a view rebuilt from other pieces) is built from scratch. Both ways give the same
matrices (tests/test_beliefs.py); the check costs about a tenth of a millisecond at ply 300, where a
rebuild costs 10 ms (load 6) to 130 ms (load 22) before each search (bench/beliefs_update).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engine_ext.beliefs.events import GameTracker
from engine_ext.beliefs.evidence import MOVED_MASK, N_RANKS, FloatArray, Likelihoods, shipped_likelihoods
from engine_ext.beliefs.prior import human_prior, neighbour_ratios, opponent_prior
from engine_ext.rules.core import Position
from engine_ext.rules.game import Game, MoveResult
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import Square
from setups.notation import Setup

MAX_PIECES = 96  # engine_ext/rules/core.pxd MAX_PIECES
# Iterative proportional fitting stops when every row sums to 1 within SINKHORN_TOL after the column
# step (the last step rescales the rows, so rows are exact and columns within the tolerance).
SINKHORN_TOL = 1e-9
SINKHORN_MAX_ITER = 1000


# What identifies a game's start as the model sees it: side to move, range attacks, and every piece's
# owner, start square and, for the observer's own pieces, rank (the other side's ranks a view learns
# during the game persist in its position, so they are no part of the identity; the model never reads
# a rank the history has not shown, tests/test_beliefs.py ``the view and the full game``).
Origin = tuple[int, bool, tuple[tuple[int, int, int], ...]]


def game_origin(game: Game, side: Side) -> Origin:
    """The identity of ``game``'s start position from ``side``'s seat (see ``Origin``): the game's
    position with its whole history taken back."""
    pos: Position = game.position.copy()
    for _ in range(len(game.history)):
        pos.unmake()
    return position_origin(pos, side)


def position_origin(pos: Position, side: Side) -> Origin:
    """``Origin`` of a position at the start of its game (nothing to take back)."""
    pieces = []
    for pid in range(pos.piece_count):
        sq, owner, rank, _moves = pos.piece(pid)
        pieces.append((sq, owner, rank if owner == side else -1))
    return int(pos.side), bool(pos.range_attacks), tuple(pieces)


def feasible_support(allowed: npt.NDArray[np.bool_], targets: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """The (piece, rank) pairs that some whole assignment meeting the counts uses: piece i can be rank r
    in a real setup only if the other pieces can then still fill every rank's count.

    Why: when the evidence pins a set down (say the only unmoved hidden pieces are exactly the bombs
    and the flag left), every other rank's weight on those pieces must go to zero, and proportional
    fitting only creeps towards such zeros (thousands of iterations). Cutting them first lets it
    converge in a few. How: one assignment by augmenting paths, then (i, r) is possible iff r = the
    rank i holds in it, or a chain of moves leads from r back to it (r -> b when a piece holding r may
    be b). When no assignment exists (the information contradicts itself) ``allowed`` is returned."""
    n, ranks = allowed.shape
    options = [np.flatnonzero(allowed[i]).tolist() for i in range(n)]
    holders: list[list[int]] = [[] for _ in range(ranks)]
    assigned = [-1] * n

    def place(i: int, visited: set[int]) -> bool:
        for r in options[i]:
            if r in visited:
                continue
            visited.add(r)
            if len(holders[r]) < targets[r]:
                holders[r].append(i)
                assigned[i] = r
                return True
            for k, j in enumerate(holders[r]):
                if place(j, visited):
                    holders[r][k] = i
                    assigned[i] = r
                    return True
        return False

    for i in range(n):
        if not place(i, set()):
            return allowed
    reach = np.zeros((ranks, ranks), dtype=bool)
    for j in range(n):
        reach[assigned[j]] |= allowed[j]
    np.fill_diagonal(reach, True)
    for k in range(ranks):  # transitive closure (Warshall) over 13 ranks
        reach |= reach[:, k:k + 1] & reach[k:k + 1, :]
    home = np.array(assigned)
    return allowed & reach[:, home].T


def balance(weights: FloatArray, targets: FloatArray, iterations: list[int] | None = None) -> FloatArray:
    """Iterative proportional fitting of a non-negative (pieces, ranks) matrix to row sums 1 and column
    sums ``targets`` (whole counts; their total is the number of rows). Entries that are 0 stay 0, and
    so do entries no assignment meeting the counts can use (``feasible_support``). ``iterations``, if
    given, gets the number of iterations this fitting took appended (bench/beliefs)."""
    a = weights * feasible_support(weights > 0, np.rint(targets).astype(np.int64))
    rows = a.sum(axis=1, keepdims=True)
    a /= np.where(rows > 0, rows, 1.0)
    done = SINKHORN_MAX_ITER
    for step in range(SINKHORN_MAX_ITER):
        cols = a.sum(axis=0)
        a *= np.divide(targets, cols, out=np.zeros_like(cols), where=cols > 0)
        rows = a.sum(axis=1, keepdims=True)
        a /= np.where(rows > 0, rows, 1.0)
        if np.abs(rows - 1.0).max() < SINKHORN_TOL:
            done = step + 1
            break
    if iterations is not None:
        iterations.append(done)
    return a


class BeliefModel:
    """Beliefs about both sides' pieces in one game, from ``side``'s seat (see the module docstring)."""

    def __init__(self, game: Game, side: Side, opponent_setups: Sequence[Setup] = (),
                 likelihoods: Likelihoods | None = None, *, pairs: bool = True) -> None:
        self.side = Side(side)
        # The pair statistics (prior.py ``neighbour_ratios``): a revealed piece reweighs the hidden
        # pieces that started next to it. ``pairs=False`` is the measurement's baseline.
        self.pairs = pairs
        self.ruleset = game.options.ruleset
        self.likelihoods = likelihoods or shipped_likelihoods()
        self.opponent_setups = tuple(opponent_setups)
        # Per rank, the human statistics' weight in the prior against this opponent (prior.py).
        self.opponent_alphas = np.full(N_RANKS, np.inf)
        self._counts = np.zeros(N_RANKS)
        for rank, count in self.ruleset.pieces.items():
            self._counts[int(rank)] = count
        self._rebuild(game)

    # Building and updating --------------------------------------------------------------------

    def _rebuild(self, game: Game) -> None:
        self._game = game
        self.tracker = GameTracker(game)
        tracker = self.tracker
        self._origin = position_origin(tracker.pos, self.side)
        # The history entries consumed, in order: the prefix a later copy of the game must repeat.
        self._consumed: list[MoveResult] = []
        enemy_table, self.opponent_alphas = opponent_prior(self.ruleset, self.opponent_setups)
        tables = {self.side: human_prior(self.ruleset), self.side.other: enemy_table}
        self._prior = np.zeros((MAX_PIECES, N_RANKS))
        index_of = {s: {sq: i for i, sq in enumerate(self.ruleset.setup_squares(s))} for s in Side}
        start_index: list[int | None] = []
        for pid in range(tracker.piece_count):
            owner = Side(tracker.owner[pid])
            square = Square(*tracker.pos.coords(tracker.start_square[pid]))
            index = index_of[owner].get(square)
            start_index.append(index)
            if index is None:  # a position set up outside the setup rows (tests, board codes): the pool
                self._prior[pid] = tables[owner].mean(axis=0)
            else:
                self._prior[pid] = tables[owner][index]
        # For each piece, the pieces of its side that started next to it, with the pair ratio table.
        ratios = neighbour_ratios(self.ruleset) if self.pairs else {}
        by_index = {(tracker.owner[pid], index): pid for pid, index in enumerate(start_index) if index is not None}
        self._neighbours: list[list[tuple[int, FloatArray]]] = [[] for _ in range(tracker.piece_count)]
        for (i, j), ratio in ratios.items():
            for owner in Side:
                a, b = by_index.get((owner, i)), by_index.get((owner, j))
                if a is not None and b is not None:
                    self._neighbours[b].append((a, ratio))
        self._log_evidence = np.zeros((MAX_PIECES, N_RANKS))
        self._seen_behaviours: set[tuple[int, str, str, int]] = set()
        self._cache: dict[Side, FloatArray] = {}
        self._consume(game)

    def update(self, game: Game) -> None:
        """Catch up with ``game.history``: only its new entries when it continues the history consumed
        (the same game object or a copy of it, ``continues``), else start over from scratch."""
        if not self.continues(game):
            self._rebuild(game)
            return
        self._game = game
        if len(game.history) > self.tracker.seen:
            self._consume(game)

    def continues(self, game: Game) -> bool:
        """Whether ``game`` is the game consumed so far, perhaps with more moves: the same ruleset and
        start position, and a history that begins with the entries consumed.

        The history check is one list comparison in C; on a copy (``Game.copy`` shares the frozen
        entries) each element compares by identity, and a rebuilt view's new but equal entries by value.
        The start check takes the game's position back to its start in the core (a copy and ``ply``
        unmakes) and reads the pieces: about 0.1 ms at ply 300 (bench/beliefs_update)."""
        seen = self.tracker.seen
        history = game.history
        if game is self._game:
            # The game the model holds only ever grows; a catch-up that failed half-way starts over.
            return len(history) >= seen and len(self._consumed) == seen
        if game.options.ruleset != self.ruleset or len(history) < seen or game.ply != len(history):
            return False
        if (history if len(history) == seen else history[:seen]) != self._consumed:
            return False
        return game_origin(game, self.side) == self._origin

    def _consume(self, game: Game) -> None:
        likelihoods = self.likelihoods
        new = game.history[self.tracker.seen:]
        behaviours = self.tracker.catch_up(game)
        # Only once the tracker has played them all: a history it fails on mid-way then no longer
        # matches ``_consumed``, so the next update starts over instead of trusting half a catch-up.
        self._consumed.extend(new)
        for b in behaviours:
            key = (b.pid, b.situation, b.outcome, b.known_rank)
            weight = likelihoods.repeats if key in self._seen_behaviours else 1.0
            self._seen_behaviours.add(key)
            if weight > 0.0:
                self._log_evidence[b.pid] += weight * np.log(likelihoods.vector(b.situation, b.outcome, b.known_rank))
        self._cache.clear()

    @property
    def ply_seen(self) -> int:
        return self.tracker.seen

    # The matrices -----------------------------------------------------------------------------

    def enemy_matrix(self) -> FloatArray:
        """The opponent's pieces as we believe them (shape and rows: the module docstring)."""
        return self.matrix(self.side.other)

    def own_matrix(self) -> FloatArray:
        """Our pieces as we model the opponent believing them."""
        return self.matrix(self.side)

    def prior_matrix(self, enemy: bool = True) -> FloatArray:
        """The start-square prior of one side's pieces before any evidence (rows normalised, not balanced)."""
        owner = self.side.other if enemy else self.side
        out = np.zeros((MAX_PIECES, N_RANKS))
        for pid in range(self.tracker.piece_count):
            if self.tracker.owner[pid] == owner:
                out[pid] = self._prior[pid]
        out.setflags(write=False)
        return out

    def matrix(self, owner: Side) -> FloatArray:
        """``owner``'s pieces as the other side sees them."""
        cached = self._cache.get(owner)
        if cached is not None:
            return cached
        tracker = self.tracker
        out = np.zeros((MAX_PIECES, N_RANKS))
        remaining = self._counts.copy()
        hidden: list[int] = []
        moved: list[bool] = []
        for pid in range(tracker.piece_count):
            if tracker.owner[pid] != owner:
                continue
            sq, _owner, rank, moves = tracker.pos.piece(pid)
            if tracker.shown[pid]:
                remaining[rank] -= 1
                if sq >= 0:
                    out[pid, rank] = 1.0
            elif sq >= 0:
                hidden.append(pid)
                moved.append(moves > 0)
        if hidden:
            unmoved = self.likelihoods.unmoved_row(tracker.ply)
            motion = np.where(np.array(moved)[:, None], MOVED_MASK * (1.0 - unmoved), unmoved)
            evidence = self._log_evidence[hidden]
            evidence = np.exp(evidence - evidence.max(axis=1, keepdims=True))
            weights = self._prior[hidden] * evidence * motion
            for row, pid in enumerate(hidden):
                for other, ratio in self._neighbours[pid]:
                    if tracker.shown[other]:
                        weights[row] *= ratio[tracker.rank(other)]
            out[hidden] = balance(weights, np.maximum(remaining, 0.0))
        out.setflags(write=False)
        self._cache[owner] = out
        return out
