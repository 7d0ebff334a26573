"""Replaying a game record through the rules engine: every move checked against the record (the side to
move, the legality, the outcome of attacks) and the stated result against the one the moves reach.

Used by ``perspecto replay``, the lab's analysis of finished games (engine_ext/lab/game_events.py) and the
host's web view (bot/web/timeline.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from engine_ext.rules.game import Game, IllegalMove, Move, MoveResult, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import Square, get_ruleset

# A win by attrition: the loser has no movable piece, whoever is to move (the UCC 2012 referee's ending).
ATTRITION = "attrition"


class ReplayError(ValueError):
    """A record the rules engine cannot replay as written; the message names the ply."""


def _placement(setup: dict[str, str]) -> dict[Square, Rank]:
    return {Square.parse(sq): Rank.parse(rank) for sq, rank in setup.items()}


def replay_positions(record: GameRecord) -> Iterator[tuple[Game, MoveResult | None]]:
    """The game after its setups (with None), then after every move; each move is checked against the
    record: the side, the legality and the outcome of attacks."""
    known = ("range_attacks", "two_squares", "more_squares", "move_limit")
    rules = {k: v for k, v in record.options.items() if k in known}
    options = RulesOptions(ruleset=get_ruleset(record.ruleset), **rules)
    try:
        game = Game(options, _placement(record.red.setup), _placement(record.blue.setup))
    except ValueError as exc:
        raise ReplayError(f"the record's setups do not make a game: {exc}") from None
    yield game, None
    for ply, recorded in enumerate(record.moves, start=1):
        if recorded.side != str(game.side_to_move):
            raise ReplayError(f"ply {ply}: the record has {recorded.side} moving on {game.side_to_move}'s turn")
        try:
            played = game.play(Move.parse(recorded.move))
        except (IllegalMove, ValueError) as exc:
            raise ReplayError(f"ply {ply}: {recorded.move}: {exc}") from None
        if played.outcome != recorded.outcome:
            raise ReplayError(
                f"ply {ply}: {recorded.move} gives {played.outcome!r}, the record says {recorded.outcome!r}"
            )
        yield game, played
    check_result(record, game)


def _describe(winner: str | None, reason: object) -> str:
    return f"{'a draw' if winner is None else winner + ' winning'} by {reason}"


def check_result(record: GameRecord, game: Game) -> None:
    """The record's stated result against the game its moves lead to: an ending the rules decide (flag,
    no moves, no movable pieces, move limit) must be the one the moves reach; a forfeit must come while
    the game is still on, and its winner is the side that did not forfeit."""
    result = record.result
    if not result:
        return
    winner, reason, forfeits = result.get("winner"), result.get("reason"), result.get("forfeits") or []
    try:
        sides = [str(Side.parse(side)) for side in [*forfeits, *([winner] if winner is not None else [])]]
    except ValueError as exc:
        raise ReplayError(f"the record's result names no side: {exc}") from None
    plies = result.get("plies")
    if plies is not None and plies != len(record.moves):
        raise ReplayError(f"the record's result says {plies} plies, the record has {len(record.moves)} moves")
    if forfeits or str(reason).startswith("forfeit"):
        if game.result is not None:
            raise ReplayError(f"the record says {_describe(winner, reason)}, but its moves had ended the game "
                              f"already: {game.result}")
        if forfeits:
            expected = None if len(forfeits) > 1 else str(Side.parse(forfeits[0]).other)
            if winner != expected:
                who = " and ".join(sides[:len(forfeits)])
                raise ReplayError(f"the record says {_describe(winner, reason)}, but {who} forfeited")
        return
    if reason == "adjourned":  # the host stopped it unfinished (bot/host/referee.py ADJOURNED): undecided, no winner
        if game.result is not None or winner is not None:
            raise ReplayError(f"the record says the game was adjourned, but its moves had ended it: {game.result}")
        return
    if reason == ATTRITION:
        # The UCC referee's ending (bot/ucc/referee.py): the loser has no movable piece left, found at the
        # start of the winner's turn, where our rules would let the winner move on.
        loser = None if winner is None else Side.parse(winner).other
        if game.result is not None or loser is None or any(rank.movable for _, rank in game.pieces(loser).values()):
            raise ReplayError(f"the record says {_describe(winner, reason)}, but its moves leave "
                              f"{'a draw' if loser is None else f'{loser} a movable piece'} or an ended game")
        return
    if game.result is None:
        raise ReplayError(f"the record says {_describe(winner, reason)} after {len(record.moves)} plies, but its "
                          "moves leave the game undecided")
    expected_winner = None if game.result.winner is None else str(game.result.winner)
    if (winner, reason) != (expected_winner, game.result.reason):
        raise ReplayError(f"the record says {_describe(winner, reason)}, its moves give "
                          f"{_describe(expected_winner, game.result.reason)}")
