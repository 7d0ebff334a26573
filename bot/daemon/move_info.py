"""What the bot tells the host about a move it sends: getAIMove's optional ``info`` (protocol 1.1,
docs/protocol.md).

The engine facade's ``EngineChoice`` has all of it (depth, nodes, value, the line, the reasons); any other
engine (the random mover, an outside UCC program) and a fallback move still get the time, and a fallback
says why the engine's own move was not sent. What does not fit the protocol's bounds is cut, never
refused: the info is a courtesy to people watching, and the move must go out whatever happens to it.
"""

from __future__ import annotations

import math

import structlog
from pydantic import ValidationError

from bot.daemon.deadline import Answer
from engine_ext.engine.facade import EngineChoice, EngineMove
from protocol.messages import INFO_LINE_MAX, INFO_REASON_LENGTH, INFO_REASONS_MAX, MoveInfo, MoveModel

log = structlog.get_logger()


def _reasons(lines: list[str]) -> list[str]:
    cut = [line if len(line) <= INFO_REASON_LENGTH else line[: INFO_REASON_LENGTH - 1] + "…" for line in lines]
    return cut[:INFO_REASONS_MAX]


def _engine_choice(answer: Answer) -> EngineChoice | None:
    """The engine's account of the move sent, if it gave one for this very move."""
    engine = answer.engine
    if answer.fallback is not None or not isinstance(engine, EngineMove):
        return None
    choice = engine.last_choice
    # The engine's own move was sent, so its last choice is this call's: checked all the same.
    return choice if choice is not None and choice.move == answer.move else None


def move_info(answer: Answer) -> MoveInfo | None:
    """The ``info`` for the move in ``answer``; None only if even that could not be built (logged)."""
    seconds = round(max(0.0, answer.seconds), 4)
    try:
        if answer.fallback is not None:
            return MoveInfo(time=seconds, reasons=_reasons([f"fallback move: {answer.fallback}"]))
        choice = _engine_choice(answer)
        if choice is None:
            return MoveInfo(time=seconds)
        return MoveInfo(
            depth=choice.depth,
            nodes=choice.nodes,
            time=seconds,
            value=round(choice.value, 4) if math.isfinite(choice.value) else None,
            pv=[MoveModel.of(move.frm, move.to) for move in choice.line[:INFO_LINE_MAX]] or None,
            reasons=_reasons(list(choice.reasons)) or None,
        )
    except (ValidationError, ValueError) as exc:  # an engine's odd number must not cost the move
        log.warning("bot.move_info_dropped", error=str(exc))
        return None
