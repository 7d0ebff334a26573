"""A side's view of a recorded game at a ply, rebuilt as the bot kept it while it played.

The bot never sees the opponent's setup: its ``Game`` starts with the opponent's pieces hidden and plays every
move with ``Game.play_observed`` and the ranks the referee reveals in a fight (bot/ucc/player.py,
bot/daemon/client.py, bot/web/timeline.py). So the view here is that same ``Game``: the record is replayed
on the full game (``replay_positions``, which checks every move and outcome against the rules) and each move
is passed on to the side's view with the ranks it revealed. What the view knows at the ply (ranks shown, who
moved, the two-squares and more-squares histories) is then what the bot knew.

The engine is brought along the same way: in a game the facade is first asked at our first turn
(``start_game`` then), and looks at the moves since its last look at each of our turns (the move analysis of
the psychological model, the beliefs); ``on_turn`` is called at each of our turns before the entry's ply,
for the caller to ``observe``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from engine_ext.lab.suite.errors import PositionError
from engine_ext.rules.game import MAX_MOVE_LIMIT, Game, IllegalMove, RulesOptions
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord, RecordError
from engine_ext.rules.replay import ReplayError, replay_positions
from engine_ext.rules.rulesets import SetupError, Square, get_ruleset

# The record option the gauntlet writes for a game under the UCC 2012 referee (engine_ext/lab/gauntlet.py).
UCC_REFEREE = "ucc2012"
_RULE_KEYS = ("range_attacks", "two_squares", "more_squares", "move_limit")


def view_options(record: GameRecord) -> RulesOptions:
    """The rules the side's view kept. Under the UCC referee, the UCC player's own (bot/ucc/player.py
    ``VIEW_OPTIONS``: the referee enforces no repetition rule, but our moves obey them, and its draw is too far
    off for the view to end the game); otherwise the record's options, as the lab's and the host's views."""
    ruleset = get_ruleset(record.ruleset)
    if record.options.get("referee") == UCC_REFEREE:
        return RulesOptions(ruleset=ruleset, move_limit=MAX_MOVE_LIMIT)
    return RulesOptions(ruleset=ruleset, **{k: v for k, v in record.options.items() if k in _RULE_KEYS})


def _hidden_view(record: GameRecord, side: Side, options: RulesOptions) -> Game:
    own = record.red.setup if side == Side.RED else record.blue.setup
    other = record.blue.setup if side == Side.RED else record.red.setup
    placement = {Square.parse(sq): Rank.parse(rank) for sq, rank in own.items()}
    hidden = {Square.parse(sq): Rank.UNKNOWN for sq in other}
    red, blue = (placement, hidden) if side == Side.RED else (hidden, placement)
    return Game(options, red, blue, validate_setups=False)


def _rebuilt(view: Game, full: Game, side: Side, options: RulesOptions) -> Game:
    """A fresh view of the board after a move the view could not follow: every piece where the game has it,
    ours with their ranks, theirs with the ranks the old view knew of them (the repetition histories and who
    has moved start again, as the player's rebuilt view does)."""
    known = view.pieces()
    placement: dict[Side, dict[Square, Rank]] = {Side.RED: {}, Side.BLUE: {}}
    for square, (owner, rank) in full.pieces().items():
        if owner != side:
            before = known.get(square)
            rank = before[1] if before is not None and before[0] == owner else Rank.UNKNOWN
        placement[owner][square] = rank
    return Game(options, placement[Side.RED], placement[Side.BLUE], side_to_move=full.side_to_move,
                validate_setups=False)


def our_turns(record: GameRecord, side: Side, until: int | None = None) -> Iterator[tuple[int, Game]]:
    """``side``'s view at each of its turns, as (plies played, view), up to ``until`` plies (default: every
    turn with a move of the record). The view is the same object throughout, moved on after each yield.
    ``PositionError`` when the record does not replay."""
    last = len(record.moves) - 1 if until is None else until
    options = view_options(record)
    relaxed = RulesOptions(ruleset=options.ruleset, range_attacks=options.range_attacks, two_squares=None,
                           more_squares=False, move_limit=MAX_MOVE_LIMIT)
    try:
        view = _hidden_view(record, side, options)
        positions = replay_positions(record)
        next(positions)
        for index in range(last + 1):
            if view.side_to_move == side:
                yield index, view
            if index == last:
                return
            full, played = next(positions)
            assert played is not None
            try:
                view.play_observed(played.move, played.attacker, played.defender)
            except IllegalMove:
                # The referee allowed what the view's repetition rules forbid (the UCC player does the same).
                view.options = relaxed
                try:
                    view.play_observed(played.move, played.attacker, played.defender)
                except IllegalMove:
                    # Not even then (the view had ended the game by its own rules): the player starts a fresh
                    # view from the board (bot/ucc/player.py ``_apply_by_hand``), and so does this.
                    view = _rebuilt(view, full, side, options)
                finally:
                    view.options = options
    except (ReplayError, RecordError, SetupError) as exc:
        raise PositionError(f"the record does not replay: {exc}") from None


def side_view(record: GameRecord, ply: int, side: Side,
              on_turn: Callable[[Game], None] | None = None) -> Game:
    """``side``'s view after the record's first ``ply`` moves; ``on_turn(view)`` at each turn of ``side``
    before that (the view as it stood when the bot was asked). ``PositionError`` when the record has no
    move of ``side`` there."""
    if not 0 <= ply < len(record.moves):
        raise PositionError(f"ply {ply} is not a move of the record (it has {len(record.moves)} moves)")
    for index, view in our_turns(record, side, ply):
        if index == ply:
            if not view.sendable_moves():
                raise PositionError(f"after {ply} plies the view has no move the rules allow (the player sent a "
                                    "random one there): not a position to ask the engine")
            return view
        if on_turn is not None:
            on_turn(view)
    raise PositionError(f"after {ply} plies it is {side.other}'s move, not {side}'s")
