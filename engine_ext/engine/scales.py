"""Value scales: what each rank is worth to the evaluation.

The thesis's scale (Table 4: a rank value and a special value a rank) is the default. The literature
scales of the rank-value study (section 1.1: JM, KS, MS, SA, VB) are selectable by name; they give one
value a rank, which the engine uses as the rank value with no special value. Any other scale comes
from a TOML file::

    [scale]
    name = "my scale"

    [scale.values]          # rank values, all twelve ranks
    flag = 0
    bomb = 0
    spy = 5
    ...
    marshal = 125

    [scale.special]         # optional: special values (Table 4), missing ranks 0
    flag = 300
    marshal = -30
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine_ext.rules.pieces import Rank

# The twelve ranks of a scale, in the order of the thesis's Table 4.
SCALE_RANKS: tuple[Rank, ...] = (
    Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT,
    Rank.CAPTAIN, Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL,
)


class ScaleError(ValueError):
    """A scale name or scale file that cannot be used; the message says why."""


@dataclass(frozen=True)
class ValueScale:
    name: str
    values: Mapping[Rank, float]
    special: Mapping[Rank, float] = field(default_factory=dict)
    source: str = ""

    def __post_init__(self) -> None:
        missing = [r.label for r in SCALE_RANKS if r not in self.values]
        if missing:
            raise ScaleError(f"scale {self.name!r}: no value for {', '.join(missing)}")
        extra = [r.label for r in self.special if r not in SCALE_RANKS]
        if extra:
            raise ScaleError(f"scale {self.name!r}: special value for {', '.join(extra)}")

    def base_array(self) -> tuple[float, ...]:
        """Rank values indexed by rank code 0..12 (unknown 0), for the compiled evaluation."""
        return tuple(float(self.values.get(Rank(code), 0.0)) for code in range(13))

    def special_array(self) -> tuple[float, ...]:
        return tuple(float(self.special.get(Rank(code), 0.0)) for code in range(13))

    def total(self, rank: Rank) -> float:
        return float(self.values[rank]) + float(self.special.get(rank, 0.0))


def _values(*numbers: float) -> dict[Rank, float]:
    return dict(zip(SCALE_RANKS, numbers, strict=True))


def _literature(name: str, source: str, marshal: float, general: float, colonel: float, major: float,
                captain: float, lieutenant: float, sergeant: float, miner: float, scout: float, spy: float,
                bomb: float, flag: float) -> ValueScale:
    return ValueScale(name, _values(flag, bomb, spy, scout, miner, sergeant, lieutenant, captain, major,
                                    colonel, general, marshal), {}, source)


THESIS = ValueScale(
    "thesis",
    _values(0, 0, 5, 7, 10, 15, 20, 25, 35, 55, 85, 125),
    {Rank.FLAG: 300, Rank.BOMB: 25, Rank.SPY: 35, Rank.SCOUT: 10, Rank.MINER: 20, Rank.MARSHAL: -30},
    "Stengård 2006, Table 4",
)

# Section 1.1 of the rank-value study, marshal first as the study lists them.
BUILTIN_SCALES: dict[str, ValueScale] = {
    "thesis": THESIS,
    "JM": _literature("JM", "Jeroen Mets, Monte Carlo Stratego, 2008",
                      100, 50, 20, 10, 4, 2, 1, 10, 0.5, 20, 150, 200),
    "KS": _literature("KS", "Karl Stengård 2006, as normalised by the rank-value study",
                      100, 90, 58, 37, 26, 21, 16, 32, 18, 42, 26, 316),
    "MS": _literature("MS", "Maarten Schadd and Mark Winands, Quiescence Search for Stratego, 2009",
                      100, 75, 44, 35, 25, 12.5, 5, 25, 2.5, 25, 19, 250),
    "SA": _literature("SA", "Sander Arts, Competitive play in Stratego, 2010",
                      100, 50, 25, 19, 12.5, 6.25, 4, 6.25, 7.5, 50, 5, 2500),
    "VB": _literature("VB", "Vincent de Boer, Invincible, a Stratego bot, 2007",
                      100, 86, 59, 41, 28, 20, 13, 9, 6, 50, 50, 100),
}


def _table(data: object, what: str, path: Path) -> dict[Rank, float]:
    if not isinstance(data, dict):
        raise ScaleError(f"{path}: [{what}] must be a table of rank = number")
    out: dict[Rank, float] = {}
    for key, value in data.items():
        try:
            rank = Rank.parse(str(key))
        except ValueError:
            raise ScaleError(f"{path}: [{what}] has an unknown rank {key!r}") from None
        if rank not in SCALE_RANKS:
            raise ScaleError(f"{path}: [{what}] cannot value {key!r}")
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ScaleError(f"{path}: [{what}] {key} = {value!r} is not a number")
        out[rank] = float(value)
    return out


def load_scale_file(path: Path) -> ValueScale:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScaleError(f"cannot read scale file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ScaleError(f"{path}: not valid TOML ({exc})") from None
    scale = data.get("scale")
    if not isinstance(scale, dict):
        raise ScaleError(f"{path}: no [scale] table")
    unknown = sorted(set(scale) - {"name", "values", "special"})
    if unknown:
        raise ScaleError(f"{path}: unknown key(s) in [scale]: {', '.join(unknown)}")
    name = scale.get("name", path.stem)
    if not isinstance(name, str):
        raise ScaleError(f"{path}: [scale] name must be a string")
    values = _table(scale.get("values"), "scale.values", path)
    special = _table(scale.get("special", {}), "scale.special", path)
    return ValueScale(name, values, special, str(path))


def get_scale(name_or_path: str) -> ValueScale:
    """A built-in scale by name (``thesis``, ``JM``, ``KS``, ``MS``, ``SA``, ``VB``; any case) or a
    scale file by path."""
    for key, scale in BUILTIN_SCALES.items():
        if key.lower() == name_or_path.strip().lower():
            return scale
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == ".toml" or path.exists():
        return load_scale_file(path)
    raise ScaleError(f"unknown value scale {name_or_path!r} (built in: {', '.join(BUILTIN_SCALES)}; "
                     "or the path of a .toml scale file)")
