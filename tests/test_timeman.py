"""The time manager (engine_ext/engine/timeman.py): each move's optimum and maximum from the limits and the game so
far, on an injectable clock."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_ext.engine.timeman import BANK_HORIZON, MIN_OPTIMUM, MoveTimes, TimeLimits, TimeManager
from engine_ext.rules import tournament
from engine_ext.rules.game import RulesOptions
from tests.helpers import FakeClock


def play(manager: TimeManager, clock: FakeClock, seconds: list[float], ply: int = 0) -> list[MoveTimes]:
    """Our moves from ``ply`` on (every other ply), each answered after the given seconds."""
    budgets = []
    for i, spent in enumerate(seconds):
        budget = manager.start_move(ply + 2 * i)
        clock.advance(spent)
        assert manager.finish_move(budget) == pytest.approx(spent)
        budgets.append(budget)
    return budgets


def test_the_tournament_limits_are_written_once() -> None:
    """15 s a move, 5 s on average, a draw at 2000 plies: every default that means them agrees."""
    from bot.config import make_profile
    from bot.game_options import GameOptions
    from bot.host.referee import HostSettings

    written = (tournament.MOVE_TIME_MAX, tournament.MOVE_TIME_AVERAGE, tournament.MOVE_LIMIT)
    assert written == (15.0, 5.0, 2000)
    for options in (TimeLimits(), GameOptions(), HostSettings()):
        assert (options.move_time_max, options.move_time_average, options.move_limit) == written
    profile = make_profile(name="p")
    assert (profile.move_time_hard, profile.move_time_soft) == written[:2]
    assert RulesOptions().move_limit == tournament.MOVE_LIMIT


def test_the_first_move_of_a_tournament_game() -> None:
    """5 s to aim for, 14.75 s at most: the 15 s limit less the profile's default 0.25 s margin."""
    assert TimeManager(TimeLimits()).spans(0) == (5.0, 14.75)


def test_deadlines_are_on_the_injected_clock() -> None:
    clock = FakeClock(100.0)
    manager = TimeManager(TimeLimits(), clock=clock)
    budget = manager.start_move(0)
    assert (budget.started, budget.soft_deadline, budget.hard_deadline) == (100.0, 105.0, 114.75)
    clock.advance(1.5)
    assert manager.finish_move(budget) == 1.5
    assert (manager.moves, manager.used, manager.bank) == (1, 1.5, 3.5)


def test_quick_moves_bank_time_for_later_ones() -> None:
    clock = FakeClock()
    manager = TimeManager(TimeLimits(), clock=clock)
    play(manager, clock, [0.5] * 20)
    assert manager.bank == pytest.approx(90.0)
    optimum, maximum = manager.spans(40)
    assert optimum == pytest.approx(5.0 + 90.0 / BANK_HORIZON)  # the next 20 moves share the bank
    assert maximum == 14.75  # never over the 15 s limit less the margin
    # Spent as planned, the bank shrinks move by move and the average stays within the tournament's.
    budgets: list[MoveTimes] = []
    for i in range(40):
        budget = manager.start_move(40 + 2 * i)
        clock.advance(budget.optimum)
        manager.finish_move(budget)
        budgets.append(budget)
    assert all(a.optimum > b.optimum for a, b in pairwise(budgets))
    assert 0 < manager.bank < 90.0 and manager.average_used < 5.0


def test_overspending_shrinks_the_next_budgets() -> None:
    clock = FakeClock()
    manager = TimeManager(TimeLimits(), clock=clock)
    play(manager, clock, [14.75] * 10)
    assert manager.bank == pytest.approx(50.0 - 147.5)
    optimum, maximum = manager.spans(20)
    assert optimum == pytest.approx(5.0 - 97.5 / BANK_HORIZON)
    assert maximum == pytest.approx(100.0 - 97.5)  # what the window still allows this move at worst
    play(manager, clock, [14.75] * 10, ply=20)
    assert manager.spans(40) == (MIN_OPTIMUM, MIN_OPTIMUM)  # deep in debt: the floor, never below it


def test_the_profile_may_aim_lower_than_the_average() -> None:
    limits = TimeLimits(move_time_soft=2.0, move_time_hard=6.0)
    assert TimeManager(limits).spans(0) == (2.0, 6.0)


def test_the_last_moves_before_the_move_limit_spend_the_bank() -> None:
    clock = FakeClock()
    manager = TimeManager(TimeLimits(), clock=clock)
    play(manager, clock, [4.0] * 6, ply=1978)
    assert manager.bank == pytest.approx(6.0)
    assert manager.window(1990) == 5  # red's plies 1990, 1992, ..., 1998 are left
    assert manager.window(1997) == 2  # blue's 1997 and 1999
    assert manager.spans(1990) == pytest.approx((5.0 + 6.0 / 5, 14.75))
    assert manager.spans(1998) == pytest.approx((11.0, 11.0))  # the last move: all of the bank, no more
    assert TimeManager(TimeLimits(move_limit=None)).window(1998) == BANK_HORIZON


def test_the_ucc_referees_limit_alone() -> None:
    """Under the UCC referee (-T 2) there is no average: nothing to bank, half the limit to aim for."""
    clock = FakeClock()
    limits = TimeLimits.for_ucc(TimeLimits(), 2.0)
    assert (limits.move_time_average, limits.move_limit) == (None, None)
    manager = TimeManager(limits, clock=clock)
    assert manager.spans(0) == (1.0, 1.75)
    play(manager, clock, [0.1] * 30)
    assert manager.bank == 0.0 and manager.spans(60) == (1.0, 1.75)
    assert TimeManager(TimeLimits.for_ucc(TimeLimits(move_time_soft=0.3), 2.0)).spans(0) == (0.3, 1.75)


def test_the_host_options_and_the_profile_together() -> None:
    profile = TimeLimits(move_time_soft=4.0, move_time_hard=10.0, safety_margin=0.5)
    limits = TimeLimits.for_host(profile, move_time_max=2.0, move_time_average=1.0, move_limit=300)
    assert (limits.move_time_soft, limits.move_time_hard, limits.safety_margin) == (4.0, 10.0, 0.5)
    assert (limits.move_time_max, limits.move_time_average, limits.move_limit) == (2.0, 1.0, 300)
    assert TimeManager(limits).spans(0) == (1.0, 1.5)


@pytest.mark.parametrize(
    ("move_time_max", "safety_margin", "cap"),
    [(15.0, 0.25, 14.75), (15.0, 1.0, 14.0), (2.0, 0.25, 1.75), (0.2, 0.25, 0.1), (0.2, 0.0, 0.2)],
)
def test_the_safety_margin_is_kept_but_never_takes_more_than_half(
    move_time_max: float, safety_margin: float, cap: float
) -> None:
    limits = TimeLimits(move_time_max=move_time_max, safety_margin=safety_margin)
    assert limits.cap == pytest.approx(cap)
    assert TimeManager(limits).spans(0)[1] == pytest.approx(cap)


def test_an_average_above_the_maximum_does_not_bind() -> None:
    """A host may announce odd options: the per-move limit still holds, nothing fails."""
    assert TimeManager(TimeLimits(move_time_max=2.0, move_time_average=10.0)).spans(0) == (1.75, 1.75)


@pytest.mark.parametrize(
    "bad", [{"move_time_max": 0.0}, {"move_time_soft": -1.0}, {"move_time_average": 0.0}, {"safety_margin": -0.1},
            {"move_limit": 0}],
)
def test_nonsense_limits_are_refused(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        TimeLimits(**bad)  # type: ignore[arg-type]


@given(
    soft=st.floats(0.01, 20.0), hard=st.floats(0.01, 20.0), margin=st.floats(0.0, 2.0),
    move_time_max=st.floats(0.05, 20.0), average=st.none() | st.floats(0.05, 10.0),
    move_limit=st.none() | st.integers(1, 3000), first_ply=st.integers(0, 3000),
    spent=st.lists(st.floats(0.0, 30.0), max_size=40),
)
def test_a_move_never_gets_more_than_the_cap(
    soft: float, hard: float, margin: float, move_time_max: float, average: float | None, move_limit: int | None,
    first_ply: int, spent: list[float],
) -> None:
    limits = TimeLimits(move_time_soft=soft, move_time_hard=hard, safety_margin=margin,
                        move_time_max=move_time_max, move_time_average=average, move_limit=move_limit)
    clock = FakeClock()
    manager = TimeManager(limits, clock=clock)
    for i, seconds in enumerate([*spent, 0.0]):
        optimum, maximum = manager.spans(first_ply + 2 * i)
        assert 0 < optimum <= maximum <= limits.cap <= hard
        assert maximum <= move_time_max - min(margin, move_time_max / 2) + 1e-12
        assert optimum >= min(MIN_OPTIMUM, limits.cap)
        manager.record(seconds)
