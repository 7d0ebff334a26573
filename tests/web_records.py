"""Games for the web view's tests: random legal games turned into records, as the host writes them."""

from __future__ import annotations

import random

from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import CLASSIC, Ruleset, Square


def random_record(seed: int, plies: int, ruleset: Ruleset = CLASSIC, game_id: str = "") -> GameRecord:
    """A game of random legal moves (to its end or ``plies``), recorded like the host records one."""
    rng = random.Random(seed)
    setups = {side: ruleset.random_placement(side, rng) for side in (Side.RED, Side.BLUE)}
    options = RulesOptions(ruleset=ruleset)
    game = Game(options, setups[Side.RED], setups[Side.BLUE])
    record = GameRecord(
        ruleset=ruleset.name, options={"range_attacks": True, "two_squares": 5, "more_squares": True,
                                       "move_limit": options.move_limit},
        red=RecordedPlayer("red-bot", {str(sq): r.label for sq, r in setups[Side.RED].items()}),
        blue=RecordedPlayer("blue-bot", {str(sq): r.label for sq, r in setups[Side.BLUE].items()}),
        game_id=game_id or f"test-{seed}", started="2026-11-25T12:00:00Z",
    )
    while game.result is None and game.ply < plies:
        played = game.play(rng.choice(game.legal_moves()))
        record.moves.append(RecordedMove(
            side=str(played.side), move=str(played.move), outcome=played.outcome,
            attacker=played.attacker.label if played.attacker else None,
            defender=played.defender.label if played.defender else None,
        ))
    if game.result is not None:
        winner = None if game.result.winner is None else str(game.result.winner)
        record.result = {"winner": winner, "reason": game.result.reason, "plies": game.ply, "forfeits": []}
    else:
        record.result = {"winner": None, "reason": "adjourned", "plies": game.ply, "forfeits": []}
    return record


def replayed(record: GameRecord, plies: int) -> Game:
    """The referee's game after ``plies`` plies of ``record`` (independently of the web code)."""
    for game, _played in replay_positions(record):
        if game.ply == plies:
            return game
    raise AssertionError(f"the record has no ply {plies}")


def apply(board: dict[str, str], changes: dict[str, str | None]) -> None:
    for square, cell in changes.items():
        if cell is None:
            board.pop(square, None)
        else:
            board[square] = cell


def hidden_squares(game: Game, viewer: Side) -> set[str]:
    """The squares ``render`` shows as ``?`` to ``viewer``: the opponent pieces it has not seen."""
    ruleset = game.options.ruleset
    lines = game.render(viewer=viewer).splitlines()
    hidden = set()
    for index, row in enumerate(range(ruleset.height - 1, -1, -1)):
        for col in range(ruleset.width):
            if lines[index][3 + 3 * col: 6 + 3 * col].strip() == "?":
                hidden.add(str(Square(col, row)))
    return hidden


def expected_view(game: Game, viewer: Side) -> dict[str, str]:
    hidden = hidden_squares(game, viewer)
    out = {}
    for square, (side, rank) in game.pieces().items():
        name = str(square)
        if name in hidden:
            out[name] = f"{side}/unknown" + ("/moved" if game.has_moved(square) else "")
        else:
            out[name] = f"{side}/{rank.name.lower()}"
    return out
