"""The bench signature: one node count over fixed positions, searched at a fixed depth on one thread.

As Stockfish's ``bench``: a change that should not alter the search must leave the total unchanged,
and a change that does alter it updates the pinned count (tests/test_lab_signature.py) in the same
commit, on purpose. The positions are the 16 of ``bench/engine``: the side to move's view every 20
plies up to ply 160 of two games between depth-3 minimax engines from the thesis's semi-random setups
(7.1). The games are frozen here as text (board code and moves), so a change to the engine that played
them does not move the positions. Each position is searched by a fresh engine of the chosen profile
(seed 1, one thread, no deadline) to exactly the given depth, through the engine facade as a game
searches it: the psychological model, the raid defence's searched position and the strategic scores
included (the node count is the search's; the strategic scores add none). docs/lab.md, "Bench
signature".
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine_ext.engine.facade import Engine
from engine_ext.engine.settings import EngineSettings, builtin_settings
from engine_ext.research.selfplay import RefereedGame
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.notation import BoardCode, Move
from engine_ext.rules.pieces import Side
from engine_ext.rules.rulesets import CLASSIC

DEFAULT_PROFILE = "perspecto"
DEFAULT_DEPTH = 8
BENCH_SEED = 1
# The rules the games were played under (bench/engine's).
BENCH_OPTIONS = RulesOptions(ruleset=CLASSIC, move_limit=2000)


@dataclass(frozen=True)
class BenchGame:
    """A frozen game: ``seed`` made the semi-random setups (engine_ext/research/selfplay.py) and seeded the
    depth-3 minimax engines that played ``moves`` (space-separated) from ``board``."""

    seed: int
    board: str
    moves: str


BENCH_GAMES: tuple[BenchGame, ...] = (
    BenchGame(
        seed=1,
        board="EBMBDGDDDEKDBDIEFEBLDCHBDIFEBGJGFHJFIGHHAA__AA__AAAA__AA__AATRSRTUSRURQUPSPTPNQPWNQSPVXNQPQVPONTNYNP",
        moves=(
            "A4-A5 E7-E6 A5-A6 A7-A6 A6-A7 E6-E5 A7-A8 A9-A8 E4-E5 B7-B6 J4-J5 I7-I6 J5-J6 J7-J6 J6-I6 I6-I5 "
            "I4-J4 I5-I4 J4-J5 I4-H4 G4-H4 F7-F6 E5-E6 F6-F5 F4-F5 F5-F4 E6-E7 F4-F3 E7-E8 F8-F7 E8-E9 F9-E9 "
            "F2-F3 I8-I7 B4-B5 B6-B5 J5-J6 B8-B7 J6-J7 J8-I8 J7-I7 B7-B6 I7-I8 B6-B5 I8-I9 B5-B4 I9-I10 B4-B3 "
            "A3-A4 B3-B2 A2-B2 J9-J8 H3-H4 A8-A7 C3-B3 A10-A9 J3-J4 A7-A6 H2-H3 A9-A8 G3-G4 A6-A5 A4-A3 A5-A4 "
            "A3-A2 A4-A3 B3-B4 A3-A2 B2-A2 F7-F6 A1-A2 A8-A7 B4-B5 C7-B7 J2-J3 B7-B6 B5-B6 F6-F5 B6-A6 A7-B7 "
            "A2-A3 F5-F4 G4-F4 F4-F3 A3-A4 F3-F2 E2-F2 D9-E9 G2-G3 F10-F9 A6-A7 B7-B6 J4-J5 F9-F8 A7-B7 B6-B5 "
            "B7-B8 C8-C7 B8-B9 B5-B4 C4-B4 E9-E8 A4-A5 C9-C8 J1-J2 E8-E7 A5-A6 E7-E6 J5-J6 E6-E5 J6-J7 J8-I8 "
            "J7-I7 H7-I7 I7-I8 E5-E4 D4-E4 C8-B8 B4-B5 B8-B7 B5-B6 B7-A7 J3-J4 F8-F7 I1-J1 F7-F6 H1-I1 G9-F9 "
            "B6-B7 A7-A6 E4-E5 C7-C8 J4-J5 F9-F8 E5-F5 B10-A10 F5-F6 J10-J9 G3-G4 D8-E8 I8-I9 J9-J8 F2-F3 A10-A9 "
            "J5-J6 A9-A8 B7-B8 A8-B8 J6-J7 J8-J10 I9-J9 G8-G9 J9-J10 D10-D9 J7-J8 E8-E7 J2-J3 C10-D10 J3-J4 B8-B7"
        ),
    ),
    BenchGame(
        seed=2,
        board="MBKLDDDEEBBEEBCDHJDDGDBGIFBIEDFFIHHFGJGHAA__AA__AAAA__AA__AASRRRTURTUSTTOUNNSQPPNNVSPQPPXPYNNQPQPQVW",
        moves=(
            "B4-B5 A7-A6 I4-I5 A6-A5 I5-I6 I7-I6 J4-J5 A5-A4 F4-F5 A4-A3 F5-F6 F7-F6 I3-I4 I6-I5 J5-J6 I5-I4 "
            "J6-J7 I4-H4 J7-J8 F6-F5 J8-J9 F5-F4 J9-J10 F4-F3 E3-F3 E7-E6 E4-E5 E6-E5 E2-E3 B7-B6 B5-B6 J10-J9 "
            "B3-B4 G7-F7 B2-B3 B8-B7 E3-E4 F7-F6 B4-B5 A8-A7 G4-F4 B7-B6 B5-A5 A7-A6 A5-A4 J9-J8 F4-F5 F6-F5 "
            "H3-I3 I10-J10 H2-H3 A6-A5 C4-B4 A5-A4 B4-A4 J8-J7 A4-A5 G8-G7 B3-B4 J7-J6 I3-I4 J6-J5 F5-F6 J5-J4 "
            "F6-F7 J4-J3 F7-F8 J3-J2 I2-I3 J10-J9 A5-A6 B6-B5 D4-C4 B5-B4 C4-B4 J2-J1 I1-I2 D7-E7 I2-J2 E7-E6 "
            "A6-A7 J9-J8 A7-A8 E6-E5 A8-A9 E5-E4 I4-I5 J8-J7 I5-I6 E4-E3 I6-I7 H7-I7 I7-I8 I9-I8 D3-E3 D8-D7 "
            "C2-B2 D9-D8 B2-B3 J7-J6 E3-E4 C8-B8 H1-H2 I8-I7 B3-B4 B8-B7 E4-E5 H8-H7 E5-E6 H9-I9 E6-E7 D7-E7 "
            "C1-C2 D10-D9 B4-B5 J6-J5 J2-J3 J5-J4 J3-J4 J4-I4 H4-G4 I4-I3 H3-H4 I3-H3 H2-I2 H3-H4 B5-B6 B7-B8 "
            "B6-B7 C7-B7 I2-I3 E7-F7 G4-H4 C9-C8 I3-I4 F7-F6 H4-H3 E10-D10 H3-H4 I7-I6 H4-G4 I6-I5 I4-H4 I5-I4 "
            "H4-H3 I4-H4 G4-F4 H4-H3 D1-C1 H3-G3 F4-F5 F6-E6 G1-H1 B7-B6 F5-F6 E6-E5 F6-F7 G7-G8 F7-E7 B6-B5"
        ),
    ),
)


@dataclass(frozen=True)
class BenchPosition:
    label: str  # "game 1 ply  20", as bench/engine prints it
    view: Game  # the side to move's view, with the game's history


def bench_positions(games: int = 2, every: int = 20, last: int = 160) -> list[BenchPosition]:
    """The side to move's view every ``every`` plies (from ``every``) up to ply ``last`` of the first
    ``games`` frozen games. The defaults give the signature's 16 positions."""
    if not 1 <= games <= len(BENCH_GAMES):
        raise ValueError(f"games must be 1..{len(BENCH_GAMES)}, not {games}")
    if every < 1:
        raise ValueError(f"every must be at least 1, not {every}")
    out = []
    for frozen in BENCH_GAMES[:games]:
        for ply, game in _replay(frozen, last):
            if ply % every == 0 and ply > 0:
                side = game.referee.side_to_move
                out.append(BenchPosition(f"game {frozen.seed} ply {ply:3d}", game.view(side).copy()))
    return out


def _replay(frozen: BenchGame, last: int) -> Iterator[tuple[int, RefereedGame]]:
    """The game before each of its plies 0..``last`` (fewer if the frozen moves end first)."""
    board = BoardCode.parse(frozen.board, BENCH_OPTIONS.ruleset.width)
    red = {sq: rank for sq, (side, rank) in board.pieces.items() if side == Side.RED}
    blue = {sq: rank for sq, (side, rank) in board.pieces.items() if side == Side.BLUE}
    game = RefereedGame(BENCH_OPTIONS, red, blue)
    moves = frozen.moves.split()
    for ply in range(last + 1):
        yield ply, game
        if ply == len(moves) or game.result is not None:
            return
        game.play(Move.parse(moves[ply]))


@dataclass(frozen=True)
class PositionCount:
    label: str
    move: str  # the engine's answer (for a look; the signature is the node count)
    depth: int  # the last complete iteration: the asked depth (0 with a single legal move)
    nodes: int
    seconds: float


@dataclass(frozen=True)
class Signature:
    profile: str
    depth: int
    positions: tuple[PositionCount, ...]

    @property
    def nodes(self) -> int:
        """The signature: the nodes of every position's search, summed."""
        return sum(p.nodes for p in self.positions)

    @property
    def seconds(self) -> float:
        return sum(p.seconds for p in self.positions)

    @property
    def nodes_per_second(self) -> float:
        return self.nodes / self.seconds if self.seconds > 0 else 0.0


def bench_settings(profile: str = DEFAULT_PROFILE) -> EngineSettings:
    """The built-in ``profile``'s settings as the bench runs them: seed 1, one thread."""
    settings = builtin_settings(profile)
    if settings.engine == "random":
        raise ValueError("the random mover does not search: the bench needs a searching profile")
    return settings.model_copy(update={"seed": BENCH_SEED, "threads": 1})


def bench_signature(
    depth: int = DEFAULT_DEPTH,
    profile: str = DEFAULT_PROFILE,
    *,
    settings: EngineSettings | None = None,
    positions: list[BenchPosition] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    progress: Callable[[PositionCount], None] | None = None,
) -> Signature:
    """Search every bench position to exactly ``depth`` plies with a fresh engine of ``profile``
    (or ``settings``, whose seed and threads are taken as given) and no deadline. ``progress`` is
    called after each position."""
    settings = settings if settings is not None else bench_settings(profile)
    counts = []
    for position in positions if positions is not None else bench_positions():
        view = position.view
        engine = Engine(settings)
        engine.start_game(view, view.side_to_move, "bench")
        started = clock()
        # No deadline: the fixed depth alone ends the search (the engine's clock never binds).
        choice = engine.choose_move(view, math.inf, math.inf, depth=depth)
        count = PositionCount(position.label, str(choice.move), choice.depth, choice.nodes, clock() - started)
        counts.append(count)
        if progress is not None:
            progress(count)
    return Signature(profile, depth, tuple(counts))
