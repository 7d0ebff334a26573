"""Rank values from who captured and who detected whom: the rank-value study as code.

The study (Gravon games 2003-2006) gives each rank the value of what its pieces won: the pieces they
captured (material) and, when a piece was lost to a piece its owner's opponent did not know yet, a part
``d`` of the winner's value (detection). For every rank k of marshal .. bomb (the flag captures nothing
and is left out) that is one homogeneous linear equation::

    (c_k + n_k) * v_k = sum over i != k of (C[k][i] + N[k][i] * d_i) * v_i

with ``c_k`` the rank-k pieces that captured, ``C[k][i]`` their captures of rank i, ``n_k`` the rank-k
pieces lost to an unknown piece and ``N[k][i]`` how many of those losses were to (and so revealed) an
unknown rank-i piece. ``d = 0`` still keeps ``n_k`` on the left: that is the study's formula (3.5).

Solving follows the study's Appendix A: Gaussian elimination equation by equation, the last variable
(the bomb) set freely, back-substitution, then scaling so that the marshal is 100. Eleven equations in
eleven unknowns with real counts are not exactly singular, so elimination leaves the last equation
unused, as the appendix's own worked example does; :class:`HomogeneousSolution` reports which equation
that was and how far the solution misses it.

Count files (``--counts``, and the shipped ``data/rank_value_counts.json``) are JSON objects::

    {"format": "perspecto-rank-counts/1",        # optional; if present it must be this
     "source": "where the counts come from",      # free text, optional
     "comment": "...",                            # free text, optional
     "games": 29397,                              # optional
     "columns": ["pieces", "marshal", "general", ..., "bomb"],
     "material":  {"marshal": [46248, 0, 8277, ...], ..., "bomb": [...]},
     "detection": {"marshal": [11386, 0, ..., 9010, 2932], ..., "bomb": [...]}}

``columns`` names ``pieces`` and the eleven ranks (any order; the flag is not allowed); each of the two
tables has one row per rank, numbers in ``columns`` order. ``material`` row k: ``pieces`` = rank-k pieces
that captured at least one piece, rank column i = captures of a rank-i piece by a rank-k piece (as
attacker or defender). ``detection`` row k: ``pieces`` = rank-k pieces lost to an unknown piece, rank
column i = rank-k pieces lost to an unknown rank-i piece. Counts are non-negative integers and a rank
never captures its own rank (equal ranks both fall), so the diagonal must be 0. docs/rank-values.md
describes the layout, the counting from game records and the value-scale file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.rulesets import Square, get_ruleset

COUNTS_FORMAT = "perspecto-rank-counts/1"
STUDY_COUNTS_PATH = Path(__file__).with_name("data") / "rank_value_counts.json"

# The study's order; the bomb comes last, so it is the variable Appendix A leaves free.
RANKS: tuple[Rank, ...] = (
    Rank.MARSHAL, Rank.GENERAL, Rank.COLONEL, Rank.MAJOR, Rank.CAPTAIN, Rank.LIEUTENANT,
    Rank.SERGEANT, Rank.MINER, Rank.SCOUT, Rank.SPY, Rank.BOMB,
)
# The key order of a value-scale file.
SCALE_KEYS: tuple[Rank, ...] = (
    Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT,
    Rank.CAPTAIN, Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL,
)
# The study gives the flag no value of its own: it captures nothing, so by its definition the flag is
# worth 0 (section 2.2), the same rank value the Perspecto thesis gives it (its 300 is a special value).
STUDY_FLAG_VALUE = 0
STUDY_FACTORS: tuple[Fraction, ...] = tuple(Fraction(n, 10) for n in range(5))
MODELS = (1, 2, 3)


def _scale(*values: Fraction | int) -> dict[Rank, Fraction]:
    return {rank: Fraction(v) for rank, v in zip((*RANKS, Rank.FLAG), values, strict=True)}


# Section 1.1 of the study: literature scales, marshal .. bomb, then flag.
LITERATURE: dict[str, dict[Rank, Fraction]] = {
    "JM": _scale(100, 50, 20, 10, 4, 2, 1, 10, Fraction(1, 2), 20, 150, 200),
    "KS": _scale(100, 90, 58, 37, 26, 21, 16, 32, 18, 42, 26, 316),
    "MS": _scale(100, 75, 44, 35, 25, Fraction(25, 2), 5, 25, Fraction(5, 2), 25, 19, 250),
    "SA": _scale(100, 50, 25, 19, Fraction(25, 2), Fraction(25, 4), 4, Fraction(25, 4), Fraction(15, 2),
                 50, 5, 2500),
    "VB": _scale(100, 86, 59, 41, 28, 20, 13, 9, 6, 50, 50, 100),
}
LITERATURE_NAMES: dict[str, str] = {
    "JM": "Jeroen Mets, Monte Carlo Stratego, 2008",
    "KS": "Karl Stengård, Utveckling av minimax-baserad agent för strategispelet Stratego, 2006",
    "MS": "Maarten Schadd and Mark Winands, Quiescence Search for Stratego, 2009",
    "SA": "Sander Arts, Competitive play in Stratego, 2010",
    "VB": "Vincent de Boer, Invincible, A Stratego bot, 2007",
}

Number = Fraction | int | float


# --- the solver -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HomogeneousSolution:
    """Values with ``values[reference] == reference_value``; ``left_out`` is the index of the equation
    elimination did not use and ``residual`` its sum of terms over its sum of absolute terms (0 when the
    system is exactly singular, so the ratios satisfy every equation)."""

    values: tuple[Fraction, ...]
    left_out: int
    residual: Fraction


def solve_homogeneous(
    matrix: Sequence[Sequence[Number]], *, reference: int = 0, reference_value: Number = 100
) -> HomogeneousSolution:
    """Solve ``matrix @ v = 0`` for the ratios of ``v`` the way the study's Appendix A does.

    Forward elimination goes column by column over all but the last column, each time taking the
    first remaining equation (in the given order) with a non-zero coefficient as the pivot, so the
    last equation is the one left over unless an earlier one runs out. The last variable is set to 1,
    back-substitution gives the others, and everything is scaled so ``v[reference]`` is
    ``reference_value``. Exact arithmetic (Fractions), so no pivoting for size is needed.
    """
    n = len(matrix)
    if n == 0:
        raise ValueError("empty system")
    if any(len(row) != n for row in matrix):
        raise ValueError("the system must be square (one equation per unknown)")
    if not 0 <= reference < n:
        raise ValueError(f"reference {reference} is not one of the {n} unknowns")
    rows = [[Fraction(x) for x in row] for row in matrix]
    order = list(range(n))  # original index of the equation now in each position
    for col in range(n - 1):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            raise ValueError(f"unknown {col} has no equation left to fix it: the ratios are not determined")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        order[col], order[pivot] = order[pivot], order[col]
        for r in range(col + 1, n):
            if rows[r][col] != 0:
                factor = rows[r][col] / rows[col][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[col], strict=True)]
    v = [Fraction(0)] * n
    v[n - 1] = Fraction(1)
    for col in range(n - 2, -1, -1):
        v[col] = -sum((rows[col][j] * v[j] for j in range(col + 1, n)), Fraction(0)) / rows[col][col]
    if v[reference] == 0:
        raise ValueError(f"unknown {reference} comes out 0, so it cannot be the reference")
    scale = Fraction(reference_value) / v[reference]
    values = tuple(x * scale for x in v)
    left_out = order[n - 1]
    terms = [Fraction(a) * x for a, x in zip(matrix[left_out], values, strict=True)]
    total = sum((abs(t) for t in terms), Fraction(0))
    residual = sum(terms, Fraction(0)) / total if total else Fraction(0)
    return HomogeneousSolution(values, left_out, residual)


# --- counts -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CountTable:
    """One of the study's count tables: ``pieces[k]`` and ``counts[k][i]`` for k, i in RANKS."""

    pieces: dict[Rank, int]
    counts: dict[Rank, dict[Rank, int]]

    @classmethod
    def empty(cls) -> CountTable:
        return cls({k: 0 for k in RANKS}, {k: {i: 0 for i in RANKS} for k in RANKS})

    def row_total(self, rank: Rank) -> int:
        return sum(self.counts[rank].values())


@dataclass(frozen=True)
class RankCounts:
    material: CountTable
    detection: CountTable
    source: str = ""
    games: int | None = None
    comment: str = ""


def load_counts(path: Path | None = None) -> RankCounts:
    """Read a count file; without a path, the study's counts that ship with the package."""
    path = STUDY_COUNTS_PATH if path is None else path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    try:
        return counts_from_data(data)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def counts_from_data(data: Any) -> RankCounts:
    if not isinstance(data, dict):
        raise ValueError("a count file is a JSON object")
    if "format" in data and data["format"] != COUNTS_FORMAT:
        raise ValueError(f"format is {data['format']!r}, expected {COUNTS_FORMAT!r}")
    columns = data.get("columns")
    want = {"pieces", *(r.label for r in RANKS)}
    if not isinstance(columns, list) or sorted(map(str, columns)) != sorted(want) or len(columns) != 12:
        raise ValueError("'columns' must list 'pieces' and the eleven ranks marshal .. bomb, each once")
    games = data.get("games")
    if games is not None and (not isinstance(games, int) or isinstance(games, bool) or games < 0):
        raise ValueError("'games' must be a non-negative integer")
    tables = {name: _table_from_rows(name, data.get(name), columns) for name in ("material", "detection")}
    source, comment = str(data.get("source", "")), str(data.get("comment", ""))
    return RankCounts(tables["material"], tables["detection"], source, games, comment)


def _table_from_rows(name: str, rows: Any, columns: list[str]) -> CountTable:
    if not isinstance(rows, dict) or sorted(rows) != sorted(r.label for r in RANKS):
        raise ValueError(f"'{name}' must have one row for each of the eleven ranks marshal .. bomb")
    table = CountTable.empty()
    for rank in RANKS:
        row = rows[rank.label]
        if (
            not isinstance(row, list)
            or len(row) != len(columns)
            or any(not isinstance(x, int) or isinstance(x, bool) or x < 0 for x in row)
        ):
            raise ValueError(f"{name} row {rank.label}: {len(columns)} non-negative integers expected")
        for col, x in zip(columns, row, strict=True):
            if col == "pieces":
                table.pieces[rank] = x
            else:
                table.counts[rank][Rank.parse(col)] = x
        if table.counts[rank][rank]:
            raise ValueError(f"{name} row {rank.label}: a rank cannot win against its own rank (both fall)")
    return table


def counts_to_json(counts: RankCounts) -> str:
    """The count-file layout, one table row a line so it reads like the study's tables."""

    def rows(table: CountTable) -> str:
        lines = []
        for k in RANKS:
            numbers = ", ".join(str(x) for x in (table.pieces[k], *(table.counts[k][i] for i in RANKS)))
            lines.append(f'    "{k.label}": [{numbers}]')
        return "{\n" + ",\n".join(lines) + "\n  }"

    head: dict[str, object] = {"format": COUNTS_FORMAT, "source": counts.source, "comment": counts.comment}
    head["games"] = counts.games
    parts = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in head.items() if v]
    parts.append('  "columns": ' + json.dumps(["pieces", *(r.label for r in RANKS)]))
    parts.append('  "material": ' + rows(counts.material))
    parts.append('  "detection": ' + rows(counts.detection))
    return "{\n" + ",\n".join(parts) + "\n}\n"


# --- the study's system -----------------------------------------------------------------------------


def detection_factors(model: int, detection: Number) -> dict[Rank, Fraction]:
    """The per-rank detection factor of the study's models (section 2.3).

    1: every rank ``d``. 2: spy and bomb ``2.5 * d``. 3: as 2, but captain, lieutenant, sergeant and
    scout 0; the miner keeps ``d`` (the text of 2.3.3 governs over the table in 3.5, which zeroes it).
    Each factor must lie in [0, 1]: 1 means a detection costs the whole piece.
    """
    if model not in MODELS:
        raise ValueError(f"unknown model {model} (the study has models 1, 2 and 3)")
    d = Fraction(detection)
    factors = {rank: d for rank in RANKS}
    if model >= 2:
        factors[Rank.SPY] = factors[Rank.BOMB] = d * Fraction(5, 2)
    if model == 3:
        for rank in (Rank.CAPTAIN, Rank.LIEUTENANT, Rank.SERGEANT, Rank.SCOUT):
            factors[rank] = Fraction(0)
    for rank, f in factors.items():
        if not 0 <= f <= 1:
            raise ValueError(
                f"model {model} with d = {_fmt(d)} gives the {rank.label} factor {_fmt(f)}, outside [0, 1]"
            )
    return factors


def material_matrix(counts: RankCounts) -> list[list[Fraction]]:
    """Section 3.3: row k is ``-c_k`` on the diagonal and the captures ``C[k][i]`` elsewhere."""
    t = counts.material
    return [[Fraction(-t.pieces[k] if i == k else t.counts[k][i]) for i in RANKS] for k in RANKS]


def detection_matrix(counts: RankCounts) -> list[list[Fraction]]:
    """Section 3.4, before the factors: ``-n_k`` on the diagonal, the detections ``N[k][i]`` elsewhere."""
    t = counts.detection
    return [[Fraction(-t.pieces[k] if i == k else t.counts[k][i]) for i in RANKS] for k in RANKS]


def combined_matrix(counts: RankCounts, factors: Mapping[Rank, Fraction]) -> list[list[Fraction]]:
    """Section 3.5: material plus detection, the detection of rank i weighted by its factor ``d_i``
    (the left-hand ``n_k`` is not weighted)."""
    mat, det = material_matrix(counts), detection_matrix(counts)
    return [
        [mat[k][i] + (det[k][i] if i == k else det[k][i] * factors[rank]) for i, rank in enumerate(RANKS)]
        for k in range(len(RANKS))
    ]


@dataclass(frozen=True)
class RankValues:
    model: int
    detection: Fraction
    factors: dict[Rank, Fraction]
    values: dict[Rank, Fraction]
    left_out: Rank
    residual: Fraction

    def rounded(self) -> list[int]:
        return [round_half_up(self.values[r]) for r in RANKS]


def solve_model(counts: RankCounts, model: int, detection: Number) -> RankValues:
    """Values for one model and detection factor, marshal = 100."""
    missing = [k.label for k in RANKS if counts.material.pieces[k] + counts.detection.pieces[k] == 0]
    if missing:
        # Such a rank's equation reads 0 = 0: nothing fixes its value.
        raise ValueError(
            "no rank-" + "/".join(missing) + " piece captured anything or was lost to an unknown piece, "
            "so the counts cannot fix its value"
        )
    factors = detection_factors(model, detection)
    sol = solve_homogeneous(combined_matrix(counts, factors), reference=RANKS.index(Rank.MARSHAL))
    values = dict(zip(RANKS, sol.values, strict=True))
    return RankValues(model, Fraction(detection), factors, values, RANKS[sol.left_out], sol.residual)


def round_half_up(x: Fraction) -> int:
    """Nearest integer, halves away from zero (Python's round() would round halves to even)."""
    return math.floor(abs(x) + Fraction(1, 2)) * (1 if x >= 0 else -1)


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{float(x):g}"


# --- counting game records --------------------------------------------------------------------------


class ReplayError(ValueError):
    """A record that does not replay: the message names the game and the ply."""


@dataclass
class _Piece:
    ident: int
    side: Side
    rank: Rank
    known: bool = False


@dataclass
class RecordTally:
    """Captures and detections counted over game records, following the study's definitions.

    Replays each game square by square. A piece becomes known when it takes part in an attack (both
    ranks are shown); with ``scout_runs_reveal`` also when it moves more than one square (only a scout
    can). Counted, with the flag left out entirely (an attack on the flag counts for nothing):

    * material: the winner of an attack (attacker or defender) captured the loser; a piece that
      captured at least once counts once in ``pieces``;
    * detection: the winner was unknown just before the attack, so the loss revealed it: the loser's
      rank row, the winner's rank column; each such lost piece counts once in ``pieces``;
    * an attack where both fall (equal ranks) is neither.
    """

    scout_runs_reveal: bool = False
    games: int = 0
    material: CountTable = field(default_factory=CountTable.empty)
    detection: CountTable = field(default_factory=CountTable.empty)

    def add(self, record: GameRecord) -> None:
        """Count one game; a record that does not replay raises ReplayError and adds nothing."""
        game = _replay(record, self.scout_runs_reveal)
        for mine, theirs in ((self.material, game.material), (self.detection, game.detection)):
            for k in RANKS:
                mine.pieces[k] += theirs.pieces[k]
                for i in RANKS:
                    mine.counts[k][i] += theirs.counts[k][i]
        self.games += 1

    def counts(self, source: str = "") -> RankCounts:
        return RankCounts(self.material, self.detection, source, self.games)


def _replay(record: GameRecord, scout_runs_reveal: bool) -> RecordTally:
    gid = record.game_id or "?"
    try:
        ruleset = get_ruleset(record.ruleset)
    except ValueError as exc:
        raise ReplayError(f"game {gid}: {exc}") from None
    board: dict[Square, _Piece] = {}
    for side, player in ((Side.RED, record.red), (Side.BLUE, record.blue)):
        try:
            placement = {Square.parse(sq): Rank.parse(rank) for sq, rank in player.setup.items()}
            ruleset.validate_setup(side, placement)
        except (ValueError, AttributeError) as exc:  # AttributeError: a rank or square that is not text
            raise ReplayError(f"game {gid}: {side} setup: {exc}") from None
        for sq, rank in placement.items():
            board[sq] = _Piece(len(board), side, rank)
    rank_of = {p.ident: p.rank for p in board.values()}

    tally = RecordTally()
    capturers: set[int] = set()
    revealed_losers: set[int] = set()
    for ply, m in enumerate(record.moves, start=1):
        where = f"game {gid}, ply {ply} ({m.side} {m.notation()})"
        try:
            side = Side.parse(m.side)
            frm_text, to_text = m.move.split("-")
            frm, to = Square.parse(frm_text), Square.parse(to_text)
        except (ValueError, AttributeError) as exc:
            raise ReplayError(f"{where}: {exc}") from None
        if not (ruleset.on_board(frm) and ruleset.on_board(to)):
            raise ReplayError(f"{where}: off the {ruleset.name} board")
        mover = board.get(frm)
        if mover is None or mover.side != side:
            raise ReplayError(f"{where}: no {side} piece on {frm}")
        target = board.get(to)
        if not m.outcome:
            if target is not None:
                raise ReplayError(f"{where}: {to} is occupied but the move is not an attack")
            del board[frm]
            board[to] = mover
            if scout_runs_reveal and abs(frm.col - to.col) + abs(frm.row - to.row) > 1:
                mover.known = True
            continue
        if target is None or target.side == side:
            raise ReplayError(f"{where}: an attack needs an opponent piece on {to}")
        for label, piece in ((m.attacker, mover), (m.defender, target)):
            try:
                stated = None if label is None else Rank.parse(label)
            except (ValueError, AttributeError) as exc:
                raise ReplayError(f"{where}: {exc}") from None
            if stated is not None and stated != piece.rank:
                raise ReplayError(f"{where}: the record says {label}, the setup has a {piece.rank.label}")
        if m.outcome not in ("x", "o", "xo"):
            raise ReplayError(f"{where}: unknown outcome {m.outcome!r}")
        winner: _Piece | None
        loser: _Piece | None
        if m.outcome == "x":
            winner, loser = mover, target
        elif m.outcome == "o":
            winner, loser = target, mover
        else:
            winner = loser = None
        if winner is not None and loser is not None and loser.rank != Rank.FLAG:
            tally.material.counts[winner.rank][loser.rank] += 1
            capturers.add(winner.ident)
            if not winner.known:
                tally.detection.counts[loser.rank][winner.rank] += 1
                revealed_losers.add(loser.ident)
        mover.known = target.known = True
        del board[frm]
        if m.outcome == "x":
            board[to] = mover
        elif m.outcome == "xo":
            del board[to]
    for ident in capturers:
        tally.material.pieces[rank_of[ident]] += 1
    for ident in revealed_losers:
        tally.detection.pieces[rank_of[ident]] += 1
    return tally


def tally_directory(
    directory: Path, *, ruleset: str | None = None, scout_runs_reveal: bool = False
) -> tuple[RecordTally, list[str]]:
    """Count every game record (``*.json``, searched recursively) under ``directory``.

    Files that are not records, records of another ruleset (when ``ruleset`` is given) and records
    that do not replay are left out; the second value says which and why, one line a file.
    """
    if not directory.is_dir():
        raise ValueError(f"{directory}: not a directory")
    tally = RecordTally(scout_runs_reveal=scout_runs_reveal)
    skipped: list[str] = []
    for path in sorted(directory.rglob("*.json")):
        try:
            record = GameRecord.load(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            skipped.append(f"{path}: not a game record ({exc})")
            continue
        if ruleset is not None and record.ruleset.lower() != ruleset.lower():
            skipped.append(f"{path}: ruleset {record.ruleset}")
            continue
        try:
            tally.add(record)
        except ReplayError as exc:
            skipped.append(f"{path}: {exc}")
    return tally, skipped

# --- value-scale files ------------------------------------------------------------------------------


def scale_toml(
    values: Mapping[Rank, Fraction], *, name: str, flag_value: int | None = None, notes: Sequence[str] = ()
) -> str:
    """A value-scale file: ``[scale]`` with ``name`` and ``[scale.values]`` with one integer a rank,
    flag first and marshal last. ``flag_value`` None writes the study's flag value (0) with a comment
    saying where it comes from."""
    # One comment line a note: a line break inside a note would end the comment and break the TOML.
    lines = [f"# {' '.join(note.split())}" for note in notes]
    if flag_value is None:
        flag_value = STUDY_FLAG_VALUE
        lines += [
            "# flag = 0 is the study's own value: the flag captures nothing, so its material value",
            "# is 0 (section 2.2); taking it wins the game, which the engine scores apart from the scale.",
        ]
    lines += ["", "[scale]", f"name = {_toml_string(name)}", "", "[scale.values]"]
    for rank in SCALE_KEYS:
        number = flag_value if rank == Rank.FLAG else round_half_up(values[rank])
        lines.append(f"{rank.label} = {number}")
    return "\n".join(lines).lstrip("\n") + "\n"


def write_scale(
    path: Path, values: Mapping[Rank, Fraction], *, name: str, flag_value: int | None = None,
    notes: Sequence[str] = (),
) -> None:
    text = scale_toml(values, name=name, flag_value=flag_value, notes=notes)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _toml_string(text: str) -> str:
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
