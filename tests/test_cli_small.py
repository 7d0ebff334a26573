"""Small points of the command line: ``-V``, ``replay``'s output without a terminal and its check of the
stated result, and what ``play`` says about the profile and the configuration it uses."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from bot import __version__
from bot.cli import main
from engine_ext.rules.game import Game, RulesOptions
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord, RecordedMove, RecordedPlayer, RecordError
from engine_ext.rules.replay import ReplayError, replay_positions
from engine_ext.rules.rulesets import get_ruleset


def test_short_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["-V"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"perspecto {__version__}"


# --- replay ------------------------------------------------------------------------------------------


def random_record(seed: int = 3) -> GameRecord:
    """A whole game of random moves on the mini board, recorded as the host records it (seed 3: red takes
    blue's flag at ply 89)."""
    rng = random.Random(seed)
    ruleset = get_ruleset("mini")
    game = Game(RulesOptions(ruleset=ruleset), ruleset.random_placement(Side.RED, rng),
                ruleset.random_placement(Side.BLUE, rng))
    setups = {side: {str(sq): rank.label for sq, (s, rank) in game.pieces().items() if s == side} for side in Side}
    record = GameRecord(ruleset="mini", options={"move_limit": 2000}, red=RecordedPlayer("alice", setups[Side.RED]),
                        blue=RecordedPlayer("bob", setups[Side.BLUE]), game_id="g-1")
    while game.result is None:
        played = game.play(rng.choice(game.legal_moves()))
        record.moves.append(RecordedMove(
            str(played.side), str(played.move), played.outcome,
            played.attacker.label if played.attacker is not None else None,
            played.defender.label if played.defender is not None else None,
        ))
    assert game.result is not None
    winner = None if game.result.winner is None else str(game.result.winner)
    record.result = {"winner": winner, "reason": game.result.reason, "plies": game.ply, "forfeits": []}
    return record


def _save(record: GameRecord, folder: Path, **result: Any) -> Path:
    data = json.loads(record.to_json())
    data["result"].update(result)
    path = folder / "game.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_the_random_record_is_what_its_docstring_says() -> None:
    record = random_record()
    assert record.result == {"winner": "red", "reason": "flag", "plies": 89, "forfeits": []}
    assert len(list(replay_positions(record))) == 90


def _broken(data: dict[str, Any], change: str) -> Any:
    if change == "no blue":
        del data["blue"]
    elif change == "a side that is a number":
        data["moves"][3]["side"] = 5
    elif change == "a setup that is a text":
        data["red"]["setup"] = "A1 flag"
    elif change == "a list":
        return [data]
    elif change == "not json":
        return None
    return data


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("no blue", "not a valid record: blue: field required"),
        ("a side that is a number", "not a valid record: moves[3].side: input should be a valid string, got 5"),
        ("a setup that is a text", "red.setup: input should be a valid dictionary, got 'A1 flag'"),
        ("a list", "not a perspecto-record/1 record: a JSON list, not an object"),
        ("not json", "not JSON: "),
    ],
)
def test_a_broken_record_is_refused_naming_the_field_that_is_wrong(
    change: str, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 33: a record without its blue player was refused as "cannot read ...: 'blue'" (a KeyError's
    text); the record's fields are validated and each bad one is named by its path."""
    path = tmp_path / "game.json"
    broken = _broken(json.loads(random_record().to_json()), change)
    path.write_text("{" if broken is None else json.dumps(broken), encoding="utf-8")
    with pytest.raises(RecordError, match=re.escape(said)):
        GameRecord.load(path)
    assert main(["replay", str(path)]) == 2
    out = " ".join(capsys.readouterr().out.split())
    assert f"cannot read {path}: " in out and said in out


def test_a_record_still_reads_what_it_writes_and_leaves_out_what_is_optional(tmp_path: Path) -> None:
    record = random_record()
    assert GameRecord.from_json(record.to_json()) == record
    data = json.loads(record.to_json())
    for optional in ("options", "game_id", "started", "result"):
        del data[optional]
    loaded = GameRecord.from_json(json.dumps(data))
    assert (loaded.options, loaded.game_id, loaded.started, loaded.result) == ({}, "", "", None)
    assert loaded.moves == record.moves and isinstance(loaded.moves[0], RecordedMove)


def test_replay_without_a_terminal_prints_a_summary_and_the_final_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(random_record(), tmp_path)
    assert main(["replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "alice (red) vs bob (blue)" in out and "89 plies; attacks: red" in out
    assert out.count("ply ") == 1 and "ply 89" in out  # the final board only
    assert "  1. " not in out  # no move list
    assert out.rstrip().endswith("g-1: alice (red) wins by flag after 89 plies")


def test_replay_every_ply_when_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _save(random_record(), tmp_path)
    assert main(["replay", str(path), "--every", "1"]) == 0
    out = capsys.readouterr().out
    assert sum(1 for line in out.splitlines() if line.strip().split(".")[0].isdigit()) == 89
    assert out.count("ply ") == 90  # the setup and every ply


@pytest.mark.parametrize(("result", "why"), [
    ({"winner": "blue"}, "the record says blue winning by flag, its moves give red winning by flag"),
    ({"winner": None, "reason": "move_limit"}, "its moves give red winning by flag"),
    ({"reason": "no_moves"}, "its moves give red winning by flag"),
    ({"plies": 88}, "says 88 plies, the record has 89 moves"),
    ({"winner": "green"}, "names no side"),
    ({"winner": "red", "reason": "forfeit_timeout", "forfeits": ["blue"]}, "its moves had ended the game already"),
])
def test_replay_refuses_a_result_its_moves_contradict(
    result: dict[str, Any], why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _save(random_record(), tmp_path, **result)
    with pytest.raises(ReplayError, match=why):
        list(replay_positions(GameRecord.load(path)))
    assert main(["replay", str(path)]) == 1
    out = capsys.readouterr().out
    assert why in out.replace("\n", " ") and "ply " not in out  # refused before anything is shown


@pytest.mark.parametrize(("result", "why"), [
    ({"winner": "red", "reason": "forfeit_timeout", "forfeits": ["red"]}, "red forfeited"),
    ({"winner": "blue", "reason": "forfeit_crash", "forfeits": ["red", "blue"]}, "red and blue forfeited"),
    ({"winner": "red", "reason": "flag"}, "its moves leave the game undecided"),
])
def test_replay_checks_the_result_of_an_unfinished_game(result: dict[str, Any], why: str, tmp_path: Path) -> None:
    record = random_record()
    del record.moves[40:]
    path = _save(record, tmp_path, plies=40, **result)
    with pytest.raises(ReplayError, match=why):
        list(replay_positions(GameRecord.load(path)))


@pytest.mark.parametrize("result", [
    {"winner": "blue", "reason": "forfeit_timeout", "forfeits": ["red"]},
    {"winner": None, "reason": "forfeit_crash", "forfeits": ["red", "blue"]},
])
def test_replay_accepts_a_forfeit_in_an_unfinished_game(
    result: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = random_record()
    del record.moves[40:]
    path = _save(record, tmp_path, plies=40, **result)
    assert main(["replay", str(path)]) == 0
    assert "ply 40" in capsys.readouterr().out


# --- play: which profile and which configuration -----------------------------------------------------

REPO = Path(__file__).resolve().parents[1]


def _play_without_playing(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, list[str]]:
    """``perspecto play ARGV`` up to the game itself; returns the exit code and the profiles it would play."""
    from bot.commands import play

    chosen: list[str] = []

    def fake_match(args: Any, ours: str, opponent: str, games: int) -> int:
        chosen.extend([ours, opponent])
        return 0

    monkeypatch.setattr(play, "play_match", fake_match)
    return main(["play", *argv]), chosen


def test_play_outside_the_repository_says_it_uses_the_built_in_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PERSPECTO_CONFIG_DIR", raising=False)
    code, chosen = _play_without_playing(monkeypatch)
    assert code == 0 and chosen == ["perspecto", "random"]
    out = " ".join(capsys.readouterr().out.split())
    assert "our bot plays profile 'perspecto' (built in)" in out
    assert "no configuration at config: the built-in settings and profiles" in out
    assert "--config DIR or $PERSPECTO_CONFIG_DIR" in out


def test_play_names_the_profile_file_and_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, chosen = _play_without_playing(monkeypatch, "--config", str(REPO / "config"))
    assert code == 0 and chosen[0] == "default"
    out = " ".join(capsys.readouterr().out.split())
    assert f"our bot plays profile 'default' (from {REPO / 'config' / 'profiles' / 'default.toml'})" in out
    assert f"configuration {REPO / 'config'}" in out


def test_the_whole_command_line_is_there_without_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    # Only a named command's module is imported (bot/cli.py); without one, every command is listed.
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert all(name in out for name in ("setups", "rank-values", "play", "replay", "ucc"))
    with pytest.raises(SystemExit) as stop:
        main(["no-such-command"])
    assert stop.value.code == 2 and "invalid choice" in capsys.readouterr().err


# --- the README's promise ----------------------------------------------------------------------------


def test_the_readme_says_first_whose_wire_form_it_is_and_what_an_organiser_needs() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    first = " ".join(text.split("\n\n")[1].split())  # the first paragraph, under the title
    assert "The Metaforge SDK is not available" in first and "is this project's own" in first
    assert "docs/protocol.md" in first and "`perspecto host`" in first
    assert "UCC 2012 referee" in first and "`perspecto ucc`" in first
    # The first two commands stay what they were.
    block = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split()[0] for line in block[:2]] == ["scripts/play", "scripts/test"]
