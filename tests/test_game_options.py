"""One model of a game's options for both ends: what the host's settings send is what the bot's view holds."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bot.config import get_profile
from bot.daemon.client import BotClient
from bot.game_options import GameOptions
from bot.host.referee import HostSettings
from engine_ext.rules.game import RulesOptions
from engine_ext.rules.rulesets import get_ruleset
from protocol.messages import GAME_OPTION_NAMES, Ack
from tests.helpers import option

# Options of one game that are not rules or limits: which game, which colour, against whom.
PER_GAME = ("gameId", "colour", "opponent")


def test_every_game_option_of_the_wire_is_a_field_and_back() -> None:
    wire_names = [name for name, _value in GameOptions().wire_options()]
    assert wire_names == [name for name in GAME_OPTION_NAMES if name not in PER_GAME]


def test_the_host_settings_are_the_game_options_and_more() -> None:
    settings = HostSettings(ruleset="barrage", range_attacks=False, two_squares=3, more_squares=False, move_limit=300,
                            move_time_max=2.5, move_time_average=1.5, grace=0.1)
    assert isinstance(settings, GameOptions)
    assert settings.game_options() == GameOptions(ruleset="barrage", range_attacks=False, two_squares=3,
                                                  more_squares=False, move_limit=300, move_time_max=2.5,
                                                  move_time_average=1.5)
    assert settings.rules() == RulesOptions(ruleset=get_ruleset("barrage"), range_attacks=False, two_squares=3,
                                            more_squares=False, move_limit=300)
    assert settings.record_options() == {"range_attacks": False, "two_squares": 3, "more_squares": False,
                                         "move_limit": 300, "move_time_max": 2.5, "move_time_average": 1.5}


async def test_what_the_host_sends_is_what_the_bot_holds() -> None:
    settings = HostSettings(ruleset="mini", range_attacks=False, two_squares=None, more_squares=False, move_limit=77,
                            move_time_max=3.0, move_time_average=0.75)
    client = BotClient(get_profile("random"))
    assert client.options.game_options() == GameOptions()  # nothing said yet: the tournament's options
    for name, value in [("gameId", "g-1"), ("colour", "red"), ("opponent", "x"), *settings.wire_options()]:
        assert await client.handle_request("setGameOption", option(name, value)) == Ack()
    assert client.options.game_options() == settings.game_options()
    assert (client.options.game_id, client.options.opponent) == ("g-1", "x")


def test_the_options_are_checked_where_they_are_made() -> None:
    with pytest.raises(ValidationError, match="two_squares"):
        HostSettings(two_squares=0)
    with pytest.raises(ValidationError, match="move_limit"):
        GameOptions(move_limit=0)
    with pytest.raises(ValidationError, match="not_an_option"):
        GameOptions(not_an_option=1)  # type: ignore[call-arg]
