"""The options of a game that the host sets and the bot follows: the rules and the time limits.

One model for both ends: the host's settings (bot/host/referee.py ``HostSettings``) are these options plus how it
serves, and the bot's view of a game (bot/daemon/client.py) is these options as ``setGameOption`` has set them
so far, plus the game's id, the bot's colour and the opponent. Each field is one ``setGameOption`` of the
wire (docs/protocol.md): its name there is the field's name in camelCase (``two_squares``:
``twoSquares``). An option the host never sends keeps the tournament's value, the default here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from engine_ext.rules.game import MAX_MOVE_LIMIT, RulesOptions
from engine_ext.rules.rulesets import get_ruleset
from engine_ext.rules.tournament import MOVE_LIMIT, MOVE_TIME_AVERAGE, MOVE_TIME_MAX


class GameOptions(BaseModel):
    """The rules and time limits of one game; the defaults are the tournament's."""

    model_config = ConfigDict(extra="forbid")

    ruleset: str = "classic"
    range_attacks: bool = True
    two_squares: int | None = Field(default=5, ge=1, le=50)  # None: the two-squares rule is off
    more_squares: bool = True
    move_limit: int = Field(default=MOVE_LIMIT, ge=1, le=MAX_MOVE_LIMIT)  # plies; a draw when reached
    move_time_max: float = Field(default=MOVE_TIME_MAX, gt=0)  # seconds for any one move
    move_time_average: float = Field(default=MOVE_TIME_AVERAGE, gt=0)  # seconds a move on average over the game

    def rules(self) -> RulesOptions:
        """The rules engine's options (ValueError: an unknown ruleset)."""
        return RulesOptions(
            ruleset=get_ruleset(self.ruleset),
            range_attacks=self.range_attacks,
            two_squares=self.two_squares,
            more_squares=self.more_squares,
            move_limit=self.move_limit,
        )

    def game_options(self) -> GameOptions:
        """Only these options (of a model that extends them, like the host's settings)."""
        return GameOptions.model_validate({name: getattr(self, name) for name in GameOptions.model_fields})

    def wire_options(self) -> list[tuple[str, Any]]:
        """Each option as ``setGameOption`` sends it: (its wire name, its value), in the order of the fields."""
        return [(to_camel(name), value) for name, value in self.game_options().model_dump(mode="json").items()]

    def record_options(self) -> dict[str, Any]:
        """The options a game record keeps beside its ruleset (engine_ext/rules/record.py)."""
        return self.game_options().model_dump(exclude={"ruleset"})
