"""Evaluation (7.5, 9.4, Tables 4, 5 and 8) and the value scales."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from engine_ext.engine.evaluation import ValuesView, random_key, random_term_of
from engine_ext.engine.scales import BUILTIN_SCALES, THESIS, ScaleError, get_scale, load_scale_file
from engine_ext.engine.settings import EngineSettings
from engine_ext.rules.core import Position
from engine_ext.rules.pieces import Rank
from engine_ext.rules.rulesets import Square

OWN, OPP = 0, 1
BASE, SPECIAL = THESIS.base_array(), THESIS.special_array()
F, B, SPY, SC, MI, SG, LT, CA, MJ, CO, GE, MA, U = (
    Rank.FLAG, Rank.BOMB, Rank.SPY, Rank.SCOUT, Rank.MINER, Rank.SERGEANT, Rank.LIEUTENANT, Rank.CAPTAIN,
    Rank.MAJOR, Rank.COLONEL, Rank.GENERAL, Rank.MARSHAL, Rank.UNKNOWN,
)
ALL_TWELVE = (F, B, SPY, SC, MI, SG, LT, CA, MJ, CO, GE, MA)


def counts(ranks: list[Rank]) -> list[int]:
    out = [0] * 13
    for r in ranks:
        out[int(r)] += 1
    return out


def build(red: dict[str, Rank], blue: dict[str, Rank]) -> tuple[Position, dict[str, int]]:
    pieces: list[tuple[int, int, int, int]] = []
    ids: dict[str, int] = {}
    for owner, placement in ((0, red), (1, blue)):
        for name, rank in placement.items():
            sq = Square.parse(name)
            ids[name] = len(pieces)
            pieces.append((sq.col, sq.row, owner, int(rank)))
    return Position(8, 8, [], pieces, 0), ids


def one_of_each(row: int) -> dict[str, Rank]:
    """One piece of every rank of the twelve on the given row and the next (12 squares)."""
    squares = [f"{c}{row}" for c in "ABCDEFGH"] + [f"{c}{row + 1}" for c in "ABCD"]
    return dict(zip(squares, ALL_TWELVE, strict=True))


def test_table_4_values() -> None:
    red = one_of_each(1)
    blue = {sq.replace("1", "7").replace("2", "8"): U for sq in red}
    pos, _ = build(red, blue)
    view = ValuesView(pos, 0, counts(list(ALL_TWELVE)), BASE, SPECIAL)
    expected = {F: 300, B: 25, SPY: 40, SC: 17, MI: 30, SG: 15, LT: 20, CA: 25, MJ: 35, CO: 55, GE: 85, MA: 95}
    for rank, value in expected.items():
        assert view.piece(0, int(rank)) == value, rank
        assert view.piece(1, int(rank)) == value, rank


def test_notches_when_opponent_ranks_vanish() -> None:
    # The thesis's example (7.5) seen from the other side: we have lost our general and all our
    # captains, so the opponent's captains count one notch up (35) and its miners two (20 + 20).
    start = [*ALL_TWELVE, CA]
    red = {f"{c}1": r for c, r in zip("ABCDEFGH", [F, B, SPY, SC, MI, SG, LT, MJ], strict=True)}
    red |= {"A2": CO, "B2": MA}
    blue = {"A8": CA, "B8": CA, "C8": MI, "D8": GE, "E8": F, "F8": B, "G8": MA}
    pos, _ = build(red, blue)
    view = ValuesView(pos, 0, counts(start), BASE, SPECIAL)
    assert view.rank_value(1, int(CA)) == 35
    assert view.piece(1, int(MI)) == 40
    assert view.rank_value(1, int(GE)) == 85  # nothing above a general has vanished
    # Our own pieces rise by the opponent's vanished ranks: none here.
    assert view.rank_value(0, int(MJ)) == 35


def test_special_values_lapse() -> None:
    # We have no bombs, no spy, no marshal: their miner loses its 20, their marshal gets its 30 back,
    # their spy loses its 35.
    red = {"A1": F, "B1": SC, "C1": MI, "D1": GE}
    blue = {"A8": MI, "B8": MA, "C8": SPY, "D8": F, "E8": B}
    pos, _ = build(red, blue)
    start = counts([F, B, SPY, SC, MI, GE, MA])
    view = ValuesView(pos, 0, start, BASE, SPECIAL)
    # (Our marshal has vanished, so their miner and spy also rise a notch: to 15 and 7.)
    assert view.piece(1, int(MI)) == 15
    assert view.piece(1, int(MA)) == 125
    assert view.piece(1, int(SPY)) == 7
    # Their bombs still kill our scout and general: 25 kept; our miner keeps its 20 (their bomb lives).
    assert view.piece(1, int(B)) == 25
    assert view.piece(0, int(MI)) == 30
    # Every piece of ours is known to them: their scout has nothing left to find.
    view_all_known = ValuesView(pos, 0, start, BASE, SPECIAL, public=[0, 1, 2, 3])
    assert view_all_known.piece(1, int(SC)) == 10  # 7 a notch up (to the miner's 10), no special
    assert view.piece(1, int(SC)) == 20


def test_bomb_special_lapses_without_targets() -> None:
    red = {"A1": F, "B1": MI}
    blue = {"A8": B, "B8": F}
    pos, _ = build(red, blue)
    view = ValuesView(pos, 0, counts([F, B, MI]), BASE, SPECIAL)
    assert view.piece(1, int(B)) == 0  # only a miner left to meet it


def suspects(**options: float) -> tuple[ValuesView, ValuesView, dict[str, int]]:
    """One of each rank for red; blue unknown on A8 and B8 (its back row: one suspicion each; B8 next
    to blue's known bomb C8: one more) and D6 (off the back row). The view with ``options`` and the
    plain one."""
    pos, ids = build(one_of_each(1), {"A8": U, "B8": U, "C8": B, "D6": U})
    plain = ValuesView(pos, 0, counts(list(ALL_TWELVE)), BASE, SPECIAL)
    return ValuesView(pos, 0, counts(list(ALL_TWELVE)), BASE, SPECIAL, **options), plain, ids


def test_flag_value_spread_over_suspects() -> None:
    view, _, ids = suspects()
    assert view.flag_share(ids["A8"]) == pytest.approx(300 * 1 / 3)
    assert view.flag_share(ids["B8"]) == pytest.approx(300 * 2 / 3)
    assert view.flag_share(ids["D6"]) == 0.0


def test_own_flag_value_prices_only_our_flag_in_our_view() -> None:
    # Not in the thesis: losing our flag may cost more than the scale's flag. The opponent's flag,
    # and the flag share the opponent's view puts on our unknown pieces, keep the scale's value.
    view, plain, ids = suspects(own_flag_value=1000.0)
    assert view.piece(0, int(F)) == 1000
    assert view.piece(1, int(F)) == plain.piece(1, int(F)) == 300
    assert view.flag_value(0) == view.flag_value(1) == 300
    assert view.flag_share(ids["B8"]) == plain.flag_share(ids["B8"])
    assert view.flag_share(ids["A1"]) == plain.flag_share(ids["A1"]) > 0


# --- Table 8 ---------------------------------------------------------------------------------------

# Each side: flag, bomb, spy, scout, sergeant, captain, general, marshal.
EIGHT = [F, B, SPY, SC, SG, CA, GE, MA]


@pytest.fixture
def table8() -> tuple[ValuesView, dict[str, int]]:
    red = {"A1": F, "B1": B, "C1": SPY, "D1": SC, "E1": SG, "F1": CA, "G1": GE, "H1": MA}
    blue = {"A8": U, "B8": U, "C8": U, "D6": U, "E6": U, "F6": CA, "G6": U, "H6": U}
    pos, ids = build(red, blue)
    # The opponent has seen our captain and general; we have seen its captain. Moved: our sergeant,
    # their E6.
    view = ValuesView(pos, 0, counts(EIGHT), BASE, SPECIAL, public=[ids["F1"], ids["G1"]],
                      moved=[ids["E1"], ids["E6"]])
    return view, ids


def test_table_8_own_attacker(table8: tuple[ValuesView, dict[str, int]]) -> None:
    view, ids = table8
    our_known, our_unknown = ids["F1"], ids["E1"]  # captain (seen), sergeant (unseen)
    their_known, their_unknown = ids["F6"], ids["E6"]  # captain, a moved unknown
    # Their pool: F B S Sc Sg Ge Ma; moved means movable: S 40, Sc 17, Sg 15, Ge 85, Ma 95.
    take_by_captain = (40 + 17 + 15) / 3  # what a captain can take among them
    all_movable = (40 + 17 + 15 + 85 + 95) / 5
    for persp in (OWN, OPP):
        assert view.captured_value(persp, their_known, our_known) == 25  # known takes known
        assert view.captured_value(persp, their_unknown, our_known) == pytest.approx(take_by_captain)
        assert view.captured_value(persp, their_known, our_unknown) == 25  # unknown takes known
        assert view.captured_value(persp, their_unknown, our_unknown) == pytest.approx(all_movable)


def test_table_8_opponent_attacker(table8: tuple[ValuesView, dict[str, int]]) -> None:
    view, ids = table8
    their_known, their_unknown = ids["F6"], ids["E6"]
    our_known, our_unknown = ids["G1"], ids["E1"]  # general (seen), sergeant (unseen, moved)
    # Our pool as they see it: F B S Sc Sg Ma (captain and general seen); movable: 40, 17, 15, 95.
    assert view.captured_value(OWN, our_known, their_known) == 85
    assert view.captured_value(OPP, our_known, their_known) == 85
    assert view.captured_value(OWN, our_unknown, their_known) == 15  # we know it is a sergeant
    assert view.captured_value(OPP, our_unknown, their_known) == pytest.approx((40 + 17 + 15) / 3)
    assert view.captured_value(OWN, our_known, their_unknown) == 85
    assert view.captured_value(OPP, our_known, their_unknown) == 85
    assert view.captured_value(OWN, our_unknown, their_unknown) == 15
    assert view.captured_value(OPP, our_unknown, their_unknown) == pytest.approx((40 + 17 + 15 + 95) / 4)


def test_table_8_unmoved_piece_carries_its_flag_share(table8: tuple[ValuesView, dict[str, int]]) -> None:
    view, ids = table8
    # A8 is an unmoved suspect; a captain can take the flag (0), spy, scout, sergeant among the pool.
    value = view.captured_value(OWN, ids["A8"], ids["F1"])
    assert view.flag_share(ids["A8"]) > 0
    assert value == pytest.approx((0 + 40 + 17 + 15) / 4 + view.flag_share(ids["A8"]))


def test_capture_list_decay() -> None:
    red, blue = {"A1": F}, {"A8": F}
    pos, _ = build(red, blue)
    view = ValuesView(pos, 0, counts([F]), BASE, SPECIAL, capture_decay=0.95)
    assert [view.decay(p) for p in range(1, 8)] == pytest.approx([1, 1, 0.95, 0.95, 0.9025, 0.9025, 0.857375])


# --- the random term -------------------------------------------------------------------------------------


def test_random_term_is_bounded_seeded_and_spread() -> None:
    key = random_key(seed=7, ply=12)
    values = [random_term_of(2.0, key, h * 0x9E3779B97F4A7C15 % 2**64) for h in range(4000)]
    assert all(-2.0 <= v <= 2.0 for v in values)
    assert abs(statistics.mean(values)) < 0.1
    assert statistics.pstdev(values) == pytest.approx(4 / 12**0.5, rel=0.05)  # uniform on [-2, 2]
    assert values == [random_term_of(2.0, key, h * 0x9E3779B97F4A7C15 % 2**64) for h in range(4000)]
    assert random_key(7, 12) != random_key(7, 14) != random_key(8, 12)
    assert random_term_of(0.0, key, 12345) == 0.0


# --- scales --------------------------------------------------------------------------------------------


def test_builtin_scales() -> None:
    assert set(BUILTIN_SCALES) == {"thesis", "JM", "KS", "MS", "SA", "VB"}
    assert get_scale("jm").values[Rank.BOMB] == 150
    assert get_scale("SA").values[Rank.FLAG] == 2500
    assert get_scale("KS").values[Rank.GENERAL] == 90
    assert get_scale("MS").values[Rank.LIEUTENANT] == 12.5
    assert get_scale("vb").values[Rank.SPY] == 50
    assert all(scale.values[Rank.MARSHAL] == 100 for name, scale in BUILTIN_SCALES.items() if name != "thesis")
    assert THESIS.total(Rank.MARSHAL) == 95


def test_literature_scale_in_the_evaluation() -> None:
    red = one_of_each(1)
    blue = {sq.replace("1", "7").replace("2", "8"): r for sq, r in red.items()}
    pos, _ = build(red, blue)
    jm = get_scale("JM")
    view = ValuesView(pos, 0, counts(list(ALL_TWELVE)), jm.base_array(), jm.special_array())
    assert view.piece(1, int(MA)) == 100
    assert view.piece(1, int(B)) == 150
    assert view.flag_value(1) == 200


def test_scale_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        '[scale]\nname = "mine"\n[scale.values]\n'
        + "".join(f"{r.label} = {i}\n" for i, r in enumerate(ALL_TWELVE))
        + "[scale.special]\nflag = 500\nmarshal = -3\n",
        encoding="utf-8",
    )
    scale = load_scale_file(path)
    assert scale.name == "mine"
    assert scale.values[Rank.MARSHAL] == 11
    assert scale.special[Rank.FLAG] == 500
    assert get_scale(str(path)).special[Rank.MARSHAL] == -3
    settings = EngineSettings(scale=str(path))
    assert settings.value_scale().values[Rank.SPY] == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[scale]\nname = "x"\n[scale.values]\nflag = 1\n', "no value for bomb"),
        ('[scale]\n[scale.values]\nqueen = 3\n', "unknown rank 'queen'"),
        ('[scale]\ncolour = "red"\n', "unknown key(s) in [scale]: colour"),
        ('[scale]\n[scale.values]\nflag = "high"\n', "is not a number"),
        ("[other]\n", "no [scale] table"),
        ("[scale\n", "not valid TOML"),
    ],
)
def test_bad_scale_files_say_why(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScaleError, match=message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        load_scale_file(path)


def test_unknown_scale_name() -> None:
    with pytest.raises(ScaleError, match="unknown value scale 'nope'"):
        get_scale("nope")
    with pytest.raises(ValueError, match="unknown value scale"):
        EngineSettings(scale="nope")
