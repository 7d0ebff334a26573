"""The setup package: notation, library, generator, floor rules, chooser and the CLI."""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.rulesets import BARRAGE, CLASSIC, MINI, RULESETS, SetupError, Square
from setups import (
    SETUPS_DIR_ENV,
    LibraryError,
    Notation,
    Setup,
    SetupChoice,
    SetupChooser,
    SetupLibrary,
    detect_notation,
    floor_rules,
    floor_violations,
    format_setup,
    generate_setup,
    load_library,
    load_setup,
    load_stats,
    parse_setup,
    random_setup,
    read_setup_file,
    ucc_setup_lines,
)
from setups.notation import LEGEND, rank_letter

# The example setup of the rules seed (stratego-rules-classic.txt), front row first.
RULES_SEED_EXAMPLE = "96S4SSSN6S\nNS87B5M758\nB6X75S65B4\n4SNB4NNBFB"
# The RED example of the UCC manager summary: rows from the top of its board, red's back row first.
UCC_RED_EXAMPLE = ["FB8sB479B8", "BB31555583", "6724898974", "967B669999"]


@pytest.fixture(scope="module")
def library() -> SetupLibrary:
    return SetupLibrary.load(use_env=False, strict=True)


# -- the shipped library --------------------------------------------------------------------------


def test_library_ships_enough_setups(library: SetupLibrary) -> None:
    assert len(library.entries(CLASSIC)) >= 40
    assert len(library.entries(BARRAGE)) >= 4
    assert len(library.entries(MINI)) >= 2


def test_every_shipped_setup_is_legal_and_described(library: SetupLibrary) -> None:
    for entry in library:
        entry.setup.validate(Side.RED)
        entry.setup.validate(Side.BLUE)
        assert entry.description, entry.name
        assert entry.tags, entry.name
        assert entry.source.endswith(".toml")


def test_shipped_setups_are_all_different(library: SetupLibrary) -> None:
    keys = [(e.ruleset.name, e.setup.key) for e in library]
    assert len(keys) == len(set(keys))


def test_shipped_setups_are_sensible(library: SetupLibrary) -> None:
    stats = load_stats(CLASSIC)
    assert stats is not None
    scores = [stats.score(e.setup).normalised for e in library.entries(CLASSIC)]
    assert sum(scores) / len(scores) > 0.8  # as human-like as a typical Gravon setup, on average
    for entry in library:
        setup = entry.setup
        flag = setup.index_of(Rank.FLAG)[0]
        on_front_row = flag < setup.ruleset.width
        assert not on_front_row or "flag-lake" in entry.tags, f"{entry.name}: flag exposed on the front row"
        guards = [setup.cells[j] for j in setup.neighbours(flag)]
        assert Rank.BOMB in guards or "flag-unbombed" in entry.tags, f"{entry.name}: flag without a bomb"
        # The spy belongs with the general, not in the marshal's way on the front row.
        assert Rank.SPY not in setup.cells[: setup.ruleset.width], f"{entry.name}: spy on the front row"


def test_load_setup_by_name(library: SetupLibrary) -> None:
    setup = load_setup("corner-fortress-left", "classic")
    assert setup == library.get("corner-fortress-left").setup
    assert library.lookup("corner-bomb").ruleset == BARRAGE
    with pytest.raises(KeyError, match="did you mean"):
        library.get("corner-fortres-left")


# -- user files -----------------------------------------------------------------------------------

USER_FILE = """
ruleset = "classic"

[[setup]]
name = "turtle"
description = "my own turtle"
tags = ["mine"]
notation = "gravon"
rows = "BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG"

[[setup]]
name = "my-barrage"
ruleset = "barrage"
description = "a barrage setup of mine"
rows = ["..........", "..........", ".M9X..SS..", "......N.BF"]
"""


def test_user_files_extend_and_override(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(USER_FILE, encoding="utf-8")
    library = SetupLibrary.load([tmp_path], use_env=False, strict=True)
    turtle = library.get("turtle")
    assert turtle.description == "my own turtle"
    assert turtle.setup.key == "BDGFDFDDDBHFLJGKDIFGEHEMCEHBDDIBJEIBHEBG"
    assert library.get("my-barrage", "barrage").setup.index_of(Rank.FLAG) == [39]
    assert len(library.entries(CLASSIC)) == len(load_library(use_env=False).entries(CLASSIC))


def test_user_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mine.toml").write_text(USER_FILE, encoding="utf-8")
    monkeypatch.setenv(SETUPS_DIR_ENV, str(tmp_path))
    assert load_library().get("my-barrage", BARRAGE).description == "a barrage setup of mine"


def test_bad_user_file_is_reported_with_its_reason(tmp_path: Path) -> None:
    bad = USER_FILE.replace(".M9X..SS..", ".M9X..SSS.")
    (tmp_path / "bad.toml").write_text(bad, encoding="utf-8")
    library = SetupLibrary.load([tmp_path], use_env=False)
    assert len(library.errors) == 1
    assert "my-barrage" in library.errors[0] and "3 scout(s)" in library.errors[0]
    assert "turtle" in library and library.get("turtle").description != "my own turtle"
    with pytest.raises(LibraryError, match="needs 2"):
        SetupLibrary.load([tmp_path], use_env=False, strict=True)


def test_duplicate_names_in_one_file_are_refused(tmp_path: Path) -> None:
    entry = '[[setup]]\nname = "twice"\nrows = "{}"\n'.format(RULES_SEED_EXAMPLE.replace("\n", ""))
    path = tmp_path / "twice.toml"
    path.write_text(entry + entry, encoding="utf-8")
    with pytest.raises(LibraryError, match="used twice"):
        read_setup_file(path)


# -- notation -------------------------------------------------------------------------------------


@pytest.mark.parametrize("notation", list(Notation))
def test_round_trip_every_notation(library: SetupLibrary, notation: Notation) -> None:
    for entry in library:
        text = format_setup(entry.setup, notation)
        assert parse_setup(text, entry.ruleset, notation) == entry.setup
        assert parse_setup(text, entry.ruleset) == entry.setup  # detected
        one_line = format_setup(entry.setup, notation, row_separator="")
        assert parse_setup(one_line, entry.ruleset, notation) == entry.setup


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), name=st.sampled_from(sorted(RULESETS)), notation=st.sampled_from(list(Notation)))
def test_round_trip_generated(seed: int, name: str, notation: Notation) -> None:
    setup = generate_setup(RULESETS[name], seed)
    text = setup.to_text(notation, row_separator="/")
    assert parse_setup(text, setup.ruleset, notation) == setup
    assert detect_notation(text, setup.ruleset) == notation


def test_the_three_notations_spell_the_same_setup() -> None:
    setup = parse_setup(RULES_SEED_EXAMPLE)
    assert detect_notation(RULES_SEED_EXAMPLE) == Notation.AMERICAN
    assert setup.cells[:3] == (Rank.GENERAL, Rank.CAPTAIN, Rank.SCOUT)
    assert setup.to_text(Notation.UCC).splitlines()[0] == "2597999859"
    assert setup.to_text(Notation.GRAVON).splitlines()[-1] == "FDEBFEEBMB"
    assert setup.to_text(Notation.AMERICAN) == RULES_SEED_EXAMPLE
    assert str(setup) == RULES_SEED_EXAMPLE.replace("\n", "/")


def test_ucc_example_reads_and_writes() -> None:
    front_first = "\n".join(reversed(UCC_RED_EXAMPLE))
    setup = parse_setup(front_first, CLASSIC, "ucc")
    assert setup.placement(Side.RED)[Square.parse("A1")] == Rank.FLAG  # red's back row is row 1
    assert ucc_setup_lines(setup, Side.RED) == UCC_RED_EXAMPLE
    assert ucc_setup_lines(setup, Side.BLUE) == list(reversed(UCC_RED_EXAMPLE))


def test_lowercase_american_and_empty_squares() -> None:
    assert parse_setup(RULES_SEED_EXAMPLE.lower().replace("x", "X"), CLASSIC, "american") == parse_setup(
        RULES_SEED_EXAMPLE
    )
    barrage = parse_setup("..........\n..........\n.M9X..SS..\n......N.BF", BARRAGE)
    assert barrage.cells.count(None) == 32
    assert barrage.to_text(Notation.GRAVON).splitlines()[0] == "AAAAAAAAAA"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (RULES_SEED_EXAMPLE.replace("96S4", "96SS", 1), "9 scout(s), the classic ruleset needs 8"),
        (RULES_SEED_EXAMPLE.replace("B6X7", "B647", 1), "0 spy(s), the classic ruleset needs 1"),
        (RULES_SEED_EXAMPLE.replace("96S4", "96Q4", 1), "letter 'Q' in row 1 column C"),
        (RULES_SEED_EXAMPLE.replace("96S4", "96S", 1), "row 1 (counting from the front) has 9 letters"),
        ("\n".join(RULES_SEED_EXAMPLE.splitlines()[:3]), "got 3 row(s)"),
    ],
)
def test_illegal_setups_say_exactly_why(text: str, reason: str) -> None:
    with pytest.raises(SetupError, match=re.escape(reason)):
        parse_setup(text, CLASSIC, "american")


def test_setup_with_too_many_pieces_is_illegal_in_barrage() -> None:
    with pytest.raises(SetupError, match="bomb"):
        parse_setup("..........\n..........\n.M9X..SS.B\n......N.BF", BARRAGE)


# -- board squares, sides, mirroring -------------------------------------------------------------


def test_placement_puts_red_and_blue_on_their_rows() -> None:
    setup = parse_setup(RULES_SEED_EXAMPLE)
    red = setup.placement(Side.RED)
    blue = setup.placement(Side.BLUE)
    # Front row (first text row) is row 4 for red and row 7 for blue; back row 1 and 10.
    assert red[Square.parse("A4")] == Rank.GENERAL and blue[Square.parse("A7")] == Rank.GENERAL
    assert red[Square.parse("I1")] == Rank.FLAG and blue[Square.parse("I10")] == Rank.FLAG
    # Same columns A..J for both sides.
    assert red[Square.parse("J4")] == blue[Square.parse("J7")] == Rank.SCOUT
    CLASSIC.validate_setup(Side.RED, red)
    CLASSIC.validate_setup(Side.BLUE, blue)
    assert Setup.from_placement(CLASSIC, Side.RED, red) == setup
    assert Setup.from_placement(CLASSIC, Side.BLUE, blue) == setup
    assert Setup.from_mapping(CLASSIC, setup.pieces) == setup


def test_from_placement_refuses_squares_outside_the_area() -> None:
    placement = parse_setup(RULES_SEED_EXAMPLE).placement(Side.RED)
    with pytest.raises(SetupError, match="blue piece on A4: outside blue's setup rows"):
        Setup.from_placement(CLASSIC, Side.BLUE, placement)


def test_mini_and_barrage_rows() -> None:
    mini = load_setup("corner", MINI)
    assert set(sq.row for sq in mini.placement(Side.RED)) == {0, 1}
    assert set(sq.row for sq in mini.placement(Side.BLUE)) == {4, 5}
    barrage = load_setup("corner-bomb", BARRAGE)
    assert len(barrage.placement(Side.BLUE)) == BARRAGE.piece_total


def test_mirror_is_legal_and_involutive(library: SetupLibrary) -> None:
    for entry in library:
        mirrored = entry.setup.mirrored()
        mirrored.validate()
        assert mirrored.mirrored() == entry.setup


# -- generator and floor ---------------------------------------------------------------------------


def _assert_floor(setup: Setup) -> None:
    """The floor, checked from its definition rather than through floor_violations."""
    ruleset, width = setup.ruleset, setup.ruleset.width
    rules = floor_rules(ruleset)
    flag = setup.index_of(Rank.FLAG)[0]
    assert flag >= width * (ruleset.setup_rows - 1), "flag on the back row"
    around = list(setup.neighbours(flag))
    bombs = sum(1 for j in around if setup.cells[j] == Rank.BOMB)
    assert bombs >= min(len(around), ruleset.pieces.get(Rank.BOMB, 0)), "bombs beside the flag"
    front = [r for r in setup.cells[:width] if r is not None]
    assert not set(front) & rules.front_banned
    if set(front) & rules.front_deferred:
        assert not [r for r in setup.cells[width:] if r in rules.front_fillers]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**64), name=st.sampled_from(sorted(RULESETS)))
def test_generator_is_always_legal_and_above_the_floor(seed: int, name: str) -> None:
    setup = generate_setup(RULESETS[name], seed)
    setup.validate(Side.RED)
    setup.validate(Side.BLUE)
    assert floor_violations(setup) == []
    _assert_floor(setup)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), name=st.sampled_from(sorted(RULESETS)))
def test_floor_only_generator_is_legal_too(seed: int, name: str) -> None:
    setup = generate_setup(RULESETS[name], seed, human_like=False)
    setup.validate()
    _assert_floor(setup)


def test_classic_floor_keeps_miners_scouts_spy_and_top_ranks_off_the_front_row() -> None:
    for seed in range(30):
        front = set(generate_setup(CLASSIC, seed).cells[:10])
        assert not front & {Rank.MINER, Rank.SCOUT, Rank.SPY, Rank.GENERAL, Rank.MARSHAL, Rank.FLAG}


def test_generator_is_seeded() -> None:
    for ruleset in RULESETS.values():
        assert generate_setup(ruleset, 11) == generate_setup(ruleset, 11)
        assert generate_setup(ruleset, random.Random(5)) == generate_setup(ruleset, 5)
        distinct = {generate_setup(ruleset, seed).key for seed in range(20)}
        assert len(distinct) == 20


def test_floor_violations_name_the_problem() -> None:
    setup = parse_setup(RULES_SEED_EXAMPLE)  # flag on I1 with bombs H1, J1 and I2, scouts in front
    problems = floor_violations(setup)
    assert not any("flag" in p for p in problems)
    assert "general on A4 in the front row" in problems
    assert any(p.startswith("scout on C4 in the front row while a") for p in problems)
    bare = [p for seed in range(5) for p in floor_violations(random_setup(CLASSIC, seed))]
    assert any("not on the back row" in p or "bomb(s) beside it" in p for p in bare)


def test_generated_setups_look_more_human_than_random_ones() -> None:
    stats = load_stats(CLASSIC)
    assert stats is not None
    generated = [stats.score(generate_setup(CLASSIC, s)).normalised for s in range(40)]
    floor_only = [stats.score(generate_setup(CLASSIC, s, human_like=False)).normalised for s in range(40)]
    shuffled = [stats.score(random_setup(CLASSIC, s)).normalised for s in range(40)]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    assert mean(generated) > 0.7
    assert mean(generated) > mean(floor_only) > mean(shuffled)


def test_random_setup_is_legal() -> None:
    for ruleset in RULESETS.values():
        random_setup(ruleset, 3).validate()


# -- choosing per opponent -------------------------------------------------------------------------


def test_choice_model_checks_its_mode() -> None:
    with pytest.raises(ValueError, match="needs a setup name"):
        SetupChoice(mode="fixed")
    with pytest.raises(ValueError, match="at least one"):
        SetupChoice(mode="pool")
    with pytest.raises(ValueError):
        SetupChoice(mode="random")  # type: ignore[arg-type]
    assert SetupChoice().mode == "generated" and SetupChoice().allow_repeat is False


def test_chooser_refuses_unknown_names(library: SetupLibrary) -> None:
    with pytest.raises(KeyError, match="no classic setup named"):
        SetupChooser(SetupChoice(mode="fixed", name="nope"), library=library)


@pytest.mark.parametrize(
    "choice",
    [
        SetupChoice(mode="fixed", name="turtle"),
        SetupChoice(mode="pool", pool=["turtle", "lake-bluff", "zigzag"]),
        SetupChoice(mode="pool", pool=["turtle"]),
        SetupChoice(mode="generated"),
    ],
)
def test_chooser_never_repeats_against_the_same_opponent(choice: SetupChoice, library: SetupLibrary) -> None:
    chooser = SetupChooser(choice, CLASSIC, library, rng=7)
    history: list[str] = []
    previous: str | None = None
    for game in range(12):
        chosen = chooser.choose(previous)
        chosen.setup.validate()
        if history:
            assert chosen.setup.key != history[-1]
        history.append(chosen.setup.key)
        # The caller stores either the name or the setup text; both must work.
        previous = chosen.name if game % 2 else chosen.setup.to_text(Notation.GRAVON)


def test_pool_rotates_in_order(library: SetupLibrary) -> None:
    chooser = SetupChooser(SetupChoice(mode="pool", pool=["turtle", "lake-bluff", "zigzag"]), CLASSIC, library)
    assert chooser.choose("turtle").name == "lake-bluff"
    assert chooser.choose("lake-bluff").name == "zigzag"
    assert chooser.choose("zigzag").name == "turtle"
    assert chooser.choose(None).name in {"turtle", "lake-bluff", "zigzag"}


def test_fixed_alternates_with_its_mirror(library: SetupLibrary) -> None:
    chooser = SetupChooser(SetupChoice(mode="fixed", name="turtle"), CLASSIC, library)
    first = chooser.choose()
    second = chooser.choose(first.name)
    assert first.name == "turtle" and second.name == "turtle-mirrored"
    assert second.setup == first.setup.mirrored()
    assert chooser.choose(second.name).name == "turtle"


def test_allow_repeat_gives_the_same_setup(library: SetupLibrary) -> None:
    chooser = SetupChooser(SetupChoice(mode="fixed", name="turtle", allow_repeat=True), CLASSIC, library)
    assert chooser.choose("turtle").name == "turtle"
    pool = SetupChooser(SetupChoice(mode="pool", pool=["zigzag"], allow_repeat=True), CLASSIC, library)
    assert pool.choose("zigzag").name == "zigzag"


def test_generated_names_can_be_given_back(library: SetupLibrary) -> None:
    chooser = SetupChooser(SetupChoice(), BARRAGE, library, rng=3)
    chosen = chooser.choose()
    assert chosen.name.startswith("generated-")
    assert chooser.resolve(chosen.name) == chosen.setup
    assert chooser.choose(chosen.name).setup != chosen.setup


@pytest.mark.parametrize("mode", ["fixed", "pool", "generated"])
def test_alternative_differs_and_is_legal(mode: str, library: SetupLibrary) -> None:
    choice = SetupChoice(mode=mode, name="turtle", pool=["turtle", "zigzag"])  # type: ignore[arg-type]
    chooser = SetupChooser(choice, CLASSIC, library, rng=1)
    refused = [chooser.choose().setup]
    for _ in range(5):
        alternative = chooser.alternative(refused[-1])
        alternative.validate()
        assert alternative.key not in {r.key for r in refused}
        refused.append(alternative)
    # A refused setup is not chosen again for a later game either.
    assert chooser.choose().setup.key not in {r.key for r in refused}


def test_alternative_for_mini_and_barrage(library: SetupLibrary) -> None:
    for ruleset in (MINI, BARRAGE):
        chooser = SetupChooser(SetupChoice(), ruleset, library, rng=2)
        rejected = chooser.choose().setup
        alternative = chooser.alternative(rejected)
        assert alternative != rejected and alternative.is_legal()


# -- the command line -------------------------------------------------------------------------------


def _run(argv: list[str]) -> int:
    from bot.commands import setups as command

    parser = argparse.ArgumentParser(prog="perspecto")
    command.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return int(args.func(args))


def test_cli_list(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(SETUPS_DIR_ENV, raising=False)
    shipped = len(load_library(use_env=False).entries(CLASSIC))
    assert _run(["setups", "list", "--ruleset", "classic"]) == 0
    out = capsys.readouterr().out
    assert "corner-fortress-left" in out and f"{shipped} setup(s)" in out
    (tmp_path / "mine.toml").write_text(USER_FILE, encoding="utf-8")
    assert _run(["setups", "list", "--dir", str(tmp_path)]) == 0
    assert "my-barrage" in capsys.readouterr().out


def test_cli_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["setups", "show", "turtle", "--notation", "ucc"]) == 0
    out = capsys.readouterr().out
    assert "turtle (classic)" in out
    assert format_setup(load_setup("turtle"), Notation.UCC) in out
    assert "human-likeness" in out
    assert "board (american): 10=marshal 9=general" in out and "1=spy B=bomb F=flag" in out  # the board's key
    assert _run(["setups", "show", "turtle", "--style", "european"]) == 0
    assert "board (european): 1=marshal 2=general" in capsys.readouterr().out
    assert _run(["setups", "show", "turtel"]) == 1
    assert "did you mean turtle" in capsys.readouterr().err


def test_cli_generate(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["setups", "generate", "--seed", "5", "--ruleset", "barrage", "--side", "blue"]) == 0
    out = capsys.readouterr().out
    assert "generated-5 (barrage)" in out
    assert format_setup(generate_setup(BARRAGE, 5)) in out
    assert " 10 " in out  # blue's back row is labelled row 10


def test_cli_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.txt"
    good.write_text("# my setup\n" + RULES_SEED_EXAMPLE + "\n", encoding="utf-8")
    assert _run(["setups", "check", str(good)]) == 0
    assert "legal" in capsys.readouterr().out

    bad = tmp_path / "bad.txt"
    bad.write_text(RULES_SEED_EXAMPLE.replace("B6X7", "B647", 1), encoding="utf-8")
    assert _run(["setups", "check", str(bad)]) == 1
    assert "0 spy(s), the classic ruleset needs 1" in capsys.readouterr().out.replace("\n", "")

    toml = tmp_path / "mine.toml"
    toml.write_text(USER_FILE, encoding="utf-8")
    assert _run(["setups", "check", str(toml)]) == 0
    # the line names the file: a long tmp path (a pytest-xdist worker's) wraps it at the console's width
    assert "2 legal setup(s)" in capsys.readouterr().out.replace("\n", "")

    assert _run(["setups", "check", str(tmp_path / "missing.txt")]) == 2


def test_cli_is_registered_in_the_dispatcher() -> None:
    text = (Path(__file__).parents[1] / "bot" / "cli.py").read_text(encoding="utf-8")
    assert '"bot.commands.setups",' in text


def test_counts_of_library_match_rulesets(library: SetupLibrary) -> None:
    for entry in library:
        counts = Counter(r for r in entry.setup.cells if r is not None)
        assert dict(counts) == {r: n for r, n in entry.ruleset.pieces.items() if n}


@pytest.mark.parametrize("notation", [n.value for n in Notation])
def test_cli_check_accepts_what_generate_prints(
    notation: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Saved as printed (board picture, score and all), a generated setup is a file ``check`` accepts.
    assert _run(["setups", "generate", "--seed", "9", "--notation", notation]) == 0
    saved = tmp_path / "generated.txt"
    saved.write_text(capsys.readouterr().out, encoding="utf-8")
    assert _run(["setups", "check", str(saved)]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("legal") and format_setup(generate_setup(CLASSIC, 9)) in out  # read back as is


def test_cli_generate_plain_prints_only_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["setups", "generate", "--seed", "9", "--ruleset", "barrage", "--plain", "--notation", "ucc"]) == 0
    out = capsys.readouterr().out
    assert out == format_setup(generate_setup(BARRAGE, 9), Notation.UCC) + "\n"
    saved = tmp_path / "plain.txt"
    saved.write_text(out, encoding="utf-8")
    assert _run(["setups", "check", str(saved), "--ruleset", "barrage"]) == 0


def test_cli_check_reads_only_the_rows_under_the_heading(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The heading names the notation; a bad row under it is still reported as such.
    text = "a picture\nucc notation, front row first:\n" + format_setup(generate_setup(CLASSIC, 4), "ucc")
    bad = tmp_path / "bad.txt"
    bad.write_text(text.replace("F", "9", 1) + "\nfooter\n", encoding="utf-8")
    assert _run(["setups", "check", str(bad)]) == 1
    assert "illegal: red has 0 flag(s)" in capsys.readouterr().out


# --- one legend of the notations (issue 33) ----------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent


def _legend_rows() -> dict[str, list[str]]:
    """docs/setups.md's legend: piece -> its symbol in each column (board american, board european,
    american, ucc, gravon text)."""
    text = (REPO / "docs" / "setups.md").read_text(encoding="utf-8")
    section = text[text.index("## Notation"):text.index("## The `Setup` value")]
    rows = {}
    for line in section.splitlines():
        parts = [part.strip() for part in line.strip().strip("|").split("|")]
        if len(parts) == 6 and parts[1].startswith("`"):
            rows[parts[0]] = [re.sub(r"`([^`]*)`.*", r"\1", part) for part in parts[1:]]
    return rows


def test_the_legend_in_docs_is_the_code_s_every_notation_and_board_symbol() -> None:
    rows = _legend_rows()
    pieces = [rank for rank in Rank if rank is not Rank.UNKNOWN]
    assert set(rows) == {rank.label for rank in pieces} | {"empty (Barrage)"}
    for rank in pieces:
        assert rows[rank.label] == [rank.symbol("american"), rank.symbol("european"),
                                    *(rank_letter(rank, notation) for notation in Notation)], rank.label
    assert rows["empty (Barrage)"][2:] == [rank_letter(None, notation) for notation in Notation]


@pytest.mark.parametrize(
    "text",
    ["Q" * 40, "96S4SSSN6S/NS87B5M758/B6X75S65B4", "96S4SSSN6S/NS87B5M758/B6X75S65B4/4SNB4NNBF"],
)
def test_errors_about_a_setup_s_letters_point_to_the_legend(text: str) -> None:
    with pytest.raises(SetupError, match=re.escape(LEGEND)):
        parse_setup(text, CLASSIC)
    with pytest.raises(SetupError, match=re.escape(LEGEND)):
        parse_setup(text.replace("Q", "Z"), CLASSIC, Notation.GRAVON)


@pytest.mark.parametrize("command", [["setups", "check"], ["setups", "show"], ["setups", "generate"], ["match"]])
def test_the_help_of_commands_that_read_or_print_setups_points_to_the_legend(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli import main

    with pytest.raises(SystemExit):
        main([*command, "--help"])
    assert "docs/setups.md" in " ".join(capsys.readouterr().out.split())
