"""The lines the lab's UCC adapter sends a program, against the lines the real UCC 2012 referee sent in one game.

tests/data/ucc-referee-peternlewis.log is the real referee's ``-o`` log (``stratego -T 2``) of PeternLewis (RED)
against a program that answered, move for move, what Perspecto's ``base`` engine played as BLUE in the lab game
where PeternLewis "forfeited" with ``0 4 DOWN 6`` (a gauntlet ``--via lab``, seed 3001, game 1). PeternLewis read
the referee's lines and played the same 188 moves it had played through the adapter, then answered the same
``0 4 DOWN 6``, which the referee judged ILLEGAL: PeternLewis's own move off the board, not a board picture the
adapter had put out of step (docs/ucc.md, "PeternLewis's illegal moves"). The referee sends every mover's line,
with its outcome, to both programs unchanged (judge/manager/game.cpp), so the log's move lines are exactly what
each program read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.ucc.opponent import move_line
from bot.ucc.referee import parse_referee_log, referee_rules
from engine_ext.rules.game import Game
from engine_ext.rules.pieces import Side
from protocol.ucc import MoveLine, UccMove, UccProtocolError, parse_answer, parse_referee_line, parse_setup_lines

LOG = Path(__file__).parent / "data" / "ucc-referee-peternlewis.log"


def _explicit_steps(line: str) -> str:
    """The referee echoes a mover's text as it came: PeternLewis writes ``X Y DIR 1``, Perspecto ``X Y DIR``;
    the programs read a missing count as 1 (PeternLewis inserts it), so compare with the count written out."""
    tokens = line.split()
    if len(tokens) > 3 and not tokens[3].isdigit():
        tokens.insert(3, "1")
    return " ".join(tokens)


def test_the_adapter_sends_the_referees_move_lines() -> None:
    log = parse_referee_log(LOG.read_text(encoding="utf-8"))
    options = referee_rules()
    placements = {side: parse_setup_lines(log.setups[side], side, options.ruleset) for side in (Side.RED, Side.BLUE)}
    game = Game(options, placements[Side.RED], placements[Side.BLUE])
    *played, last = log.moves
    kinds = set()
    for logged in played:
        event = parse_referee_line(logged.text)
        assert isinstance(event, MoveLine)
        result = game.play(event.move.to_move(options.ruleset))
        ours = move_line(result)
        assert _explicit_steps(ours) == _explicit_steps(logged.text), f"turn {logged.turn} {logged.side}"
        assert parse_referee_line(ours) == event
        kinds.add(event.outcome.kind.value + (" far" if event.move.steps > 1 else ""))
    # The game covers what a picture of the board could go wrong on: scouts' long moves, every fight's result
    # with both ranks (a bomb's among them).
    assert {"OK", "OK far", "KILLS", "DIES", "BOTHDIE"} <= kinds
    assert any(m.text.endswith(" B") for m in played)
    # Its last answer, judged ILLEGAL by the referee, is one the adapter refuses too (a forfeit, as there).
    assert last.side == Side.RED and last.text == "0 4 DOWN 6 ILLEGAL"
    answer = parse_answer(" ".join(last.text.split()[:4]))
    assert isinstance(answer, UccMove)
    with pytest.raises(UccProtocolError, match="leaves the 10x10 board"):
        answer.to_move(options.ruleset)
