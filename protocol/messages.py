"""The Stratego AI API as JSON-RPC messages: one params model and one result model per method.

Squares are written A1..J10 (columns from A, rows from 1 on red's side), ranks by name (``marshal``,
``bomb``), sides as ``red``/``blue``. Field names are camelCase on the wire. Every model forbids unknown
fields and validates strictly (no ``"5"`` for 5, no ``1`` for true), so a bad message gets a precise
``-32602`` naming the field instead of a guess. docs/protocol.md is the reference for all of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Self, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    PrivateAttr,
    RootModel,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from engine_ext.rules.game import MAX_MOVE_LIMIT
from engine_ext.rules.pieces import ATTACKER_WINS, BOTH_DIE, Rank, Side, combat
from engine_ext.rules.referee import END_REASONS as CORE_END_REASONS
from engine_ext.rules.rulesets import RULESETS, Square
from protocol.limits import DETAIL_MAX, clip
from protocol.validation import validation_text

# major.minor: a bot and a host talk when the majors match. A minor version only adds methods,
# options and notifications, which an older peer answers with -32601/-32602 without harm, and optional
# fields that a peer sends only to a peer whose hello says it knows them (1.1: getAIMove's ``info``).
PROTOCOL_VERSION = "1.1"
# The first minor version of major 1 whose host takes ``info`` in a getAIMove answer.
MOVE_INFO_MINOR = 1


def protocol_major(version: str) -> int:
    return int(version.split(".", 1)[0])


def protocol_minor(version: str) -> int:
    return int(version.split(".", 1)[1]) if "." in version else 0


def takes_move_info(host_protocol: str) -> bool:
    """Whether a host that answered hello with ``host_protocol`` takes ``info`` in getAIMove answers: a 1.0
    host refuses the answer's unknown field (a forfeit), so a bot sends it only to 1.1 and later."""
    try:
        return protocol_major(host_protocol) == 1 and protocol_minor(host_protocol) >= MOVE_INFO_MINOR
    except ValueError:
        return False


def protocol_compatible(version: str) -> bool:
    return protocol_major(version) == protocol_major(PROTOCOL_VERSION)


# --- field types -------------------------------------------------------------------------------------


def _square(value: object) -> Square:
    if isinstance(value, Square):
        return value
    if not isinstance(value, str):
        raise ValueError("a square is a string like 'A1'")
    return Square.parse(value)


def _rank(value: object) -> Rank:
    if isinstance(value, Rank) and value != Rank.UNKNOWN:
        return value
    if not isinstance(value, str):
        raise ValueError("a rank is a name like 'marshal'")
    name = value.strip().upper()
    # Names only: symbols differ between the American and European conventions.
    if name not in Rank.__members__ or name == "UNKNOWN":
        known = ", ".join(r.label for r in Rank if r != Rank.UNKNOWN)
        raise ValueError(f"unknown rank {value!r} (known: {known})")
    return Rank[name]


def _side(value: object) -> Side:
    if isinstance(value, Side):
        return value
    if not isinstance(value, str):
        raise ValueError("a side is 'red' or 'blue'")
    return Side.parse(value)


SquareField = Annotated[
    Square,
    PlainValidator(_square),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "pattern": "^[A-La-l](1[0-2]|[1-9])$"}),
]
RankField = Annotated[
    Rank,
    PlainValidator(_rank),
    PlainSerializer(lambda r: r.label, return_type=str),
    WithJsonSchema({"type": "string", "enum": [r.label for r in Rank if r != Rank.UNKNOWN]}),
]
SideField = Annotated[
    Side,
    PlainValidator(_side),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "enum": ["red", "blue"]}),
]
Outcome = Literal["x", "o", "xo"]
# Free text we send (why a setup was refused, why a game ended, why we hang up) often repeats what a peer
# sent: it is clipped to DETAIL_MAX characters when the message is made, so that no message we compose can
# exceed the line bound (protocol/limits.py). A peer's longer text is clipped the same way on arrival.
ClippedText = Annotated[str, AfterValidator(lambda text: clip(text, DETAIL_MAX))]
Setup = dict[SquareField, RankField]


class WireModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


class Ack(WireModel):
    """The empty result ``{}`` of calls that only inform the receiver."""


# --- session -----------------------------------------------------------------------------------------


# The resume extension (docs/mqtt.md): a bot that can pick a game up again after a lost connection or a
# restart says so in ``features``, and the host's answer gives it a secret resume key for its session.
# Coming back, it names the game, how many of its calls it handled, and presents that key: the name alone
# proves nothing on a host without tokens, and the opponent is told the game id.
RESUME_FEATURE = "resume"
RESUME_KEY_MAX = 128
_HELLO_EXTENSIONS = (
    "features", "resumeGame", "resume_game", "resumeCalls", "resume_calls", "resumeKey", "resume_key", "resumed",
)


def _omit_unset_extensions(data: dict[str, Any]) -> dict[str, Any]:
    """Extension fields go on the wire only when set, so a plain hello (and its answer) stays the 1.0
    message a peer without the extension expects."""
    for key in _HELLO_EXTENSIONS:
        if key in data and data[key] is None:
            del data[key]
    return data


NAME_MAX = 64  # characters of a bot's name


class HelloParams(WireModel):
    name: str = Field(min_length=1, max_length=NAME_MAX)
    version: str = Field(max_length=64)
    protocol: str = Field(pattern=r"^\d{1,4}\.\d{1,4}$")
    token: str | None = Field(default=None, max_length=256)
    features: list[Annotated[str, Field(min_length=1, max_length=32)]] | None = Field(default=None, max_length=16)
    resume_game: str | None = Field(default=None, min_length=1, max_length=128)
    resume_calls: int | None = Field(default=None, ge=0)
    resume_key: str | None = Field(default=None, min_length=1, max_length=RESUME_KEY_MAX)

    @model_validator(mode="after")
    def _resume_fields_together(self) -> HelloParams:
        given = (self.resume_game is not None, self.resume_calls is not None, self.resume_key is not None)
        if any(given) and not all(given):
            raise ValueError("resumeGame, resumeCalls and resumeKey come together")
        return self

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_unset_extensions(handler(self))


class HelloResult(WireModel):
    host: str
    version: str
    protocol: str
    session: str
    # Only in the answer to a hello that asked to resume: whether the game goes on, and how many of the
    # bot's calls in it the host saw answered (the bot answers the one after that again from its journal).
    resumed: bool | None = None
    resume_calls: int | None = Field(default=None, ge=0)
    # Only in the answer to a hello whose features include "resume": the secret a resume of this session's
    # games must present. It goes to this connection alone; the bot keeps it in its journal.
    resume_key: str | None = Field(default=None, min_length=1, max_length=RESUME_KEY_MAX)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _omit_unset_extensions(handler(self))


class NotificationModel(WireModel):
    """Notifications are never answered, so a peer cannot be told about a field it does not know: they
    ignore unknown fields, which lets a minor version add optional ones."""

    model_config = ConfigDict(extra="ignore")


class GoodbyeParams(NotificationModel):
    reason: ClippedText


# --- setGameOption: one option a call, told apart by ``option`` --------------------------------------


def _known_ruleset(name: str) -> str:
    if name.lower() not in RULESETS:
        raise ValueError(f"unknown ruleset {name!r} (known: {', '.join(RULESETS)})")
    return name.lower()


class GameIdOption(WireModel):
    option: Literal["gameId"]
    value: str = Field(min_length=1, max_length=128)


class ColourOption(WireModel):
    option: Literal["colour"]
    value: SideField


class OpponentOption(WireModel):
    option: Literal["opponent"]
    value: str = Field(min_length=1, max_length=64)


class RulesetOption(WireModel):
    option: Literal["ruleset"]
    value: Annotated[str, AfterValidator(_known_ruleset)]


class RangeAttacksOption(WireModel):
    option: Literal["rangeAttacks"]
    value: bool


class TwoSquaresOption(WireModel):
    """The two-squares limit (5 in the tournament); null turns the rule off."""

    option: Literal["twoSquares"]
    value: int | None = Field(ge=1, le=50)


class MoreSquaresOption(WireModel):
    option: Literal["moreSquares"]
    value: bool


class MoveLimitOption(WireModel):
    option: Literal["moveLimit"]
    value: int = Field(ge=1, le=MAX_MOVE_LIMIT)


MOVE_TIME_OPTION_MAX = 3600.0  # seconds: the largest moveTimeMax and moveTimeAverage


class MoveTimeMaxOption(WireModel):
    """Seconds the host waits for one getAIMove answer before it forfeits the bot."""

    option: Literal["moveTimeMax"]
    value: float = Field(gt=0, le=MOVE_TIME_OPTION_MAX)


class MoveTimeAverageOption(WireModel):
    option: Literal["moveTimeAverage"]
    value: float = Field(gt=0, le=MOVE_TIME_OPTION_MAX)


GameOption = Annotated[
    GameIdOption
    | ColourOption
    | OpponentOption
    | RulesetOption
    | RangeAttacksOption
    | TwoSquaresOption
    | MoreSquaresOption
    | MoveLimitOption
    | MoveTimeMaxOption
    | MoveTimeAverageOption,
    Field(discriminator="option"),
]


class SetGameOptionParams(RootModel[GameOption]):
    model_config = ConfigDict(frozen=True)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


GAME_OPTION_NAMES = (
    "gameId", "colour", "opponent", "ruleset", "rangeAttacks", "twoSquares", "moreSquares", "moveLimit",
    "moveTimeMax", "moveTimeAverage",
)


# --- setup -------------------------------------------------------------------------------------------


class CreateAISetupParams(WireModel):
    pass


class GetAISetupPieceParams(WireModel):
    square: SquareField


class GetAISetupPieceResult(WireModel):
    """The rank on the square, or null for a square the setup leaves empty (Barrage)."""

    rank: RankField | None


class IllegalSetupParams(WireModel):
    reason: ClippedText
    attempts_left: int = Field(ge=0)


class SetOpponentSetupPieceParams(WireModel):
    square: SquareField


# --- moves -------------------------------------------------------------------------------------------


class GetAIMoveParams(WireModel):
    ply: int = Field(ge=0)


class MoveModel(WireModel):
    frm: SquareField = Field(alias="from")
    to: SquareField

    @classmethod
    def of(cls, frm: Square, to: Square) -> Self:
        return cls.model_validate({"from": frm, "to": to})


# Bounds of getAIMove's ``info``: enough for any engine's account of a move, far below the line limit.
INFO_LINE_MAX = 32  # moves in ``pv``
INFO_REASONS_MAX = 16
INFO_REASON_LENGTH = 300


class MoveInfo(WireModel):
    """What the engine thought of the move it sends (protocol 1.1, optional): the host keeps it in the game
    record and shows it beside the move. Every field is optional and left off the wire when unknown.
    Unknown fields are ignored rather than refused, so that a later minor version can add some."""

    model_config = ConfigDict(extra="ignore", allow_inf_nan=False)

    depth: int | None = Field(default=None, ge=0, le=1000)  # plies of the last complete search iteration
    nodes: int | None = Field(default=None, ge=0)  # positions searched
    time: float | None = Field(default=None, ge=0, le=86400)  # seconds the bot took for the move
    value: float | None = None  # the move's value in the engine's own units, for the side that moves
    pv: list[MoveModel] | None = Field(default=None, max_length=INFO_LINE_MAX)  # the line it expects, from this move
    reasons: list[Annotated[str, Field(max_length=INFO_REASON_LENGTH)]] | None = Field(
        default=None, max_length=INFO_REASONS_MAX
    )

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {key: value for key, value in handler(self).items() if value is not None}


class GetAIMoveResult(MoveModel):
    """The move, and from protocol 1.1 what the engine thought of it (``info``, optional). A host must never
    forfeit a bot over its ``info``: one that does not validate is dropped (``info`` None) and the reason kept
    in ``info_problem`` for the host's log, while the move stands or falls on its own."""

    info: MoveInfo | None = None
    _info_problem: str | None = PrivateAttr(default=None)

    @property
    def info_problem(self) -> str | None:
        """Why the peer's ``info`` was dropped; None when it had none or it validated."""
        return self._info_problem

    @model_validator(mode="wrap")
    @classmethod
    def _drop_bad_info(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> GetAIMoveResult:
        if not isinstance(data, dict) or data.get("info") is None or isinstance(data["info"], MoveInfo):
            return cast(GetAIMoveResult, handler(data))
        try:
            info = MoveInfo.model_validate(data["info"])
        except ValidationError as exc:
            model = cast(GetAIMoveResult, handler({key: value for key, value in data.items() if key != "info"}))
            model._info_problem = validation_text(
                {**error, "loc": ("info", *error["loc"])} for error in exc.errors(include_url=False)
            )
            return model
        return cast(GetAIMoveResult, handler({**data, "info": info}))

    @model_serializer(mode="wrap")
    def _serialize(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("info") is None:
            data.pop("info", None)  # without info the answer is the 1.0 message
        return data


def outcome_of(attacker: Rank, defender: Rank) -> Outcome:
    result = combat(attacker, defender)
    if result == ATTACKER_WINS:
        return "x"
    return "xo" if result == BOTH_DIE else "o"


class MoveReport(WireModel):
    """A move as played, with what the tournament rules reveal of an attack: both ranks and the outcome
    (``x`` the attacker won, ``o`` it lost, ``xo`` both fell). A plain move carries none of the three."""

    frm: SquareField = Field(alias="from")
    to: SquareField
    attacker: RankField | None = None
    defender: RankField | None = None
    outcome: Outcome | None = None

    @classmethod
    def of(
        cls, frm: Square, to: Square, attacker: Rank | None = None, defender: Rank | None = None,
        outcome: str | None = None,
    ) -> Self:
        return cls.model_validate(
            {"from": frm, "to": to, "attacker": attacker, "defender": defender, "outcome": outcome}
        )

    @model_validator(mode="after")
    def _attack_fields_agree(self) -> MoveReport:
        given = [self.attacker is not None, self.defender is not None, self.outcome is not None]
        if any(given) and not all(given):
            raise ValueError("an attack gives attacker, defender and outcome together; a plain move none")
        if self.attacker is not None and self.defender is not None:
            if not self.attacker.movable:
                raise ValueError(f"a {self.attacker.label} cannot attack")
            expected = outcome_of(self.attacker, self.defender)
            if self.outcome != expected:
                raise ValueError(
                    f"{self.attacker.label} attacking {self.defender.label} has outcome {expected!r}, "
                    f"not {self.outcome!r}"
                )
        return self


# Both reports of a played move share one shape.
SubmitAIMoveResultParams = MoveReport
SubmitOpponentMoveParams = MoveReport


# --- end of a game -----------------------------------------------------------------------------------


class GameOverParams(NotificationModel):
    """Sent to both bots when a game ends; ``reason`` is one of END_REASONS, ``detail`` says more for a
    forfeit. The setups are both full setups (empty if a side never gave a legal one)."""

    game_id: str
    winner: SideField | None
    reason: str
    plies: int = Field(ge=0)
    red_score: int
    blue_score: int
    red_setup: Setup
    blue_setup: Setup
    detail: ClippedText | None = None


# The reasons a game ends (``gameOver``'s ``reason``): the referee core's table (engine_ext/rules/referee.py),
# which the host and the lab's records share.
END_REASONS = tuple(CORE_END_REASONS)


# --- the method tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MethodSpec:
    name: str
    params: type[BaseModel]
    result: type[BaseModel] | None  # None: a notification, never answered

    @property
    def is_notification(self) -> bool:
        return self.result is None


def _table(*specs: MethodSpec) -> Mapping[str, MethodSpec]:
    return {spec.name: spec for spec in specs}


# The eight tournament calls, in the order a game uses them.
API_METHODS = (
    "setGameOption", "createAISetup", "getAISetupPiece", "illegalSetup", "setOpponentSetupPiece",
    "getAIMove", "submitAIMoveResult", "submitOpponentMove",
)

# What the host sends and the bot receives.
HOST_TO_BOT: Mapping[str, MethodSpec] = _table(
    MethodSpec("setGameOption", SetGameOptionParams, Ack),
    MethodSpec("createAISetup", CreateAISetupParams, Ack),
    MethodSpec("getAISetupPiece", GetAISetupPieceParams, GetAISetupPieceResult),
    MethodSpec("illegalSetup", IllegalSetupParams, Ack),
    MethodSpec("setOpponentSetupPiece", SetOpponentSetupPieceParams, Ack),
    MethodSpec("getAIMove", GetAIMoveParams, GetAIMoveResult),
    MethodSpec("submitAIMoveResult", SubmitAIMoveResultParams, Ack),
    MethodSpec("submitOpponentMove", SubmitOpponentMoveParams, Ack),
    MethodSpec("gameOver", GameOverParams, None),
    MethodSpec("goodbye", GoodbyeParams, None),
)

# What the bot sends and the host receives.
BOT_TO_HOST: Mapping[str, MethodSpec] = _table(
    MethodSpec("hello", HelloParams, HelloResult),
    MethodSpec("goodbye", GoodbyeParams, None),
)
