"""The gauntlet (docs/lab.md, "The gauntlet"): the referee's result line and log read into records
(bot/ucc/referee.py), known raiders' takes in the victim's half (engine_ext/lab/causes.py), the per-opponent
table (engine_ext/lab/gauntlet.py), the ucc-* profiles' $PERSPECTO_UCC2012, and the command's checks."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from bot.cli import main
from bot.ucc.engine import UccCommandError, UccEngineParams
from bot.ucc.referee import (
    RefereeLogError,
    last_result_line,
    log_to_record,
    parse_referee_log,
    parse_result_line,
)
from engine_ext.lab.analysis import analyse_record
from engine_ext.lab.causes import HopelessAttack
from engine_ext.lab.gauntlet import gauntlet_game, score_interval, summarise_gauntlet
from engine_ext.lab.stats import Trinomial
from engine_ext.rules.pieces import Rank, Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import ReplayError
from engine_ext.rules.rulesets import Square

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _logging_to_no_closed_stream() -> Iterator[None]:
    """The command configures logging onto the stream capsys lends it; later tests must not log there."""
    yield
    structlog.reset_defaults()

# Setups made for the test: blue's general stands on its front row in column 0 (x 0), red's column 0 holds a
# sergeant, a lieutenant and a captain in front of a bomb; red's scout on (9, 3) has (9, 4) to step to.
RED_SETUP = ["BFB8sB4798", "5BB3155583", "6724898974", "7666B99999"]  # y 0 (red's back row) first
BLUE_SETUP = ["2666B99999", "6774898974", "5BB3155583", "BFB8sB4798"]  # y 6 (blue's front row) first
# Blue's general walks up column 0 and takes the sergeant (unknown to red before: not counted), then, shown,
# the lieutenant and the captain: two takes in red's half by a known raider, the second in a row.
MOVES = [
    "1 RED: 9 3 DOWN OK", "1 BLU: 0 6 UP OK",
    "2 RED: 9 4 UP OK", "2 BLU: 0 5 UP OK",
    "3 RED: 9 3 DOWN OK", "3 BLU: 0 4 UP KILLS 2 7",
    "4 RED: 9 4 UP OK", "4 BLU: 0 3 UP KILLS 2 6",
    "5 RED: 9 3 DOWN OK", "5 BLU: 0 2 UP KILLS 2 5",
]


def referee_log(moves: list[str], ending: list[str]) -> str:
    return "\n".join([
        "/x/red RED SETUP", *RED_SETUP, "/x/blue BLUE SETUP", *BLUE_SETUP, *moves, *ending,
    ]) + "\n"


TIMEOUT_END = ["6 RED: ", "Game ends on RED's turn - REASON: Response timeout after 2.000000 seconds.",
               "/x/red RED ILLEGAL 6 120 140"]
NAMES = {Side.RED: "ours", Side.BLUE: "theirs"}


# --- the result line ----------------------------------------------------------------------------------------


def test_result_lines_parse() -> None:
    result = parse_result_line("/opt/ucc2012/bin/vixen BLUE VICTORY 145 32 53")
    assert (result.name, result.colour, result.outcome) == ("/opt/ucc2012/bin/vixen", Side.BLUE, "VICTORY")
    assert result.turns == 145
    assert (result.red_value, result.blue_value, result.winner, result.forfeit) == (32, 53, Side.BLUE, None)
    illegal = parse_result_line("./perspecto-ucc RED ILLEGAL 12 100 100")
    assert (illegal.winner, illegal.forfeit) == (Side.BLUE, Side.RED)
    setup = parse_result_line("/x/perspecto-ucc RED BAD_SETUP 0 0 148")
    assert (setup.winner, setup.forfeit) == (Side.BLUE, Side.RED)
    draw = parse_result_line("neither BOTH DRAW_DEFAULT 5000 80 70")
    assert (draw.colour, draw.winner, draw.forfeit) == (None, None, None)
    assert parse_result_line("a name with spaces RED DRAW 3 1 1").name == "a name with spaces"


@pytest.mark.parametrize("line", ["", "RED VICTORY 1 2 3", "x GREEN VICTORY 1 2 3", "x RED WON 1 2 3",
                                  "x RED VICTORY one 2 3", "x RED VICTORY 1 2"])
def test_bad_result_lines_are_refused(line: str) -> None:
    with pytest.raises(RefereeLogError):
        parse_result_line(line)


@given(st.text())
def test_any_text_reads_as_a_result_line_or_a_referee_log_error(text: str) -> None:
    try:
        parse_result_line(text)
    except RefereeLogError:
        pass
    parse_referee_log(text)  # reads what it can, never raises
    last_result_line(text)


def test_the_last_result_line_of_the_output_is_taken() -> None:
    assert last_result_line("noise\n/x/a RED VICTORY 3 1 2\nmore noise\n") is not None
    assert last_result_line("nothing here\n") is None


# --- the log as a record ------------------------------------------------------------------------------------


def test_a_referee_log_becomes_a_record_that_replays() -> None:
    log = parse_referee_log(referee_log(MOVES, TIMEOUT_END))
    assert log.names == {Side.RED: "/x/red", Side.BLUE: "/x/blue"}
    assert log.end_reason is not None and log.end_reason.startswith("Response timeout")
    record = log_to_record(log, names=NAMES, game_id="g1")
    assert (record.red.name, record.blue.name) == ("ours", "theirs")
    assert record.red.setup["A1"] == "bomb" and record.blue.setup["A7"] == "general"
    assert len(record.moves) == 10
    assert [m.notation() for m in record.moves[5:10:2]] == ["A5xA4", "A4xA3", "A3xA2"]
    assert record.result is not None
    assert (record.result["winner"], record.result["reason"], record.result["forfeits"]) == ("blue", "forfeit_timeout",
                                                                                              ["red"])
    assert record.result["referee"]["outcome"] == "ILLEGAL"
    # It reads back and replays through the rules like any record.
    analysis = analyse_record(GameRecord.from_json(record.to_json()))
    assert analysis.plies == 10


def test_a_red_win_is_reds() -> None:
    # Side.RED is 0: a winner or a colour read with `or` / `if` turned red's wins into draws and its result
    # line into "neither". Blue's flag stands on its front row here, in reach of red's sergeant.
    blue = ["F666B99999", *BLUE_SETUP[1:3], "B2B8sB4798"]
    moves = ["1 RED: 0 3 DOWN OK", "1 BLU: 9 6 UP OK", "2 RED: 0 4 DOWN OK", "2 BLU: 9 5 DOWN OK",
             "3 RED: 0 5 DOWN VICTORY_FLAG"]
    text = "\n".join(["/x/red RED SETUP", *RED_SETUP, "/x/blue BLUE SETUP", *blue, *moves,
                      "Game ends on RED's turn - REASON: Captured the flag", "/x/red RED VICTORY 3 148 140"])
    record = log_to_record(parse_referee_log(text), names=NAMES)
    assert record.result is not None
    assert (record.result["winner"], record.result["reason"], record.result["plies"]) == ("red", "flag", 5)
    assert record.result["referee"]["line"] == "red VICTORY 3 148 140"
    ours = gauntlet_game(analyse_record(record), "ours")
    assert ours is not None and ours.score == 1.0


def test_a_win_by_attrition_is_the_referees_where_our_rules_play_on() -> None:
    # A real -T 4 game (tests/data, paths shortened): RED's 148th move, a both-die attack, lost its own last
    # movable piece. The referee ends the game at the start of BLUE's turn (no mobile enemy piece); our rules
    # look only at the side to move and would let BLUE move on: the record takes the referee's ending.
    log = parse_referee_log((REPO / "tests" / "data" / "ucc-referee-attrition.log").read_text())
    record = log_to_record(log, names=NAMES)
    assert record.result is not None
    assert (record.result["winner"], record.result["reason"], record.result["plies"]) == ("blue", "attrition", 295)
    assert "forfeits" not in record.result
    ours = gauntlet_game(analyse_record(record), "ours")  # it replays: the check finds red without a movable piece
    assert ours is not None and (ours.score, ours.loss) == (0.0, "no_moves")


def test_an_attrition_the_moves_do_not_show_does_not_replay() -> None:
    # The referee's word alone is not enough: red still has movable pieces after these moves.
    ending = ["Game ends on RED's turn - REASON: Destroyed all mobile enemy pieces", "/x/red RED VICTORY 6 148 140"]
    record = log_to_record(parse_referee_log(referee_log(MOVES, ending)), names=NAMES)
    assert record.result is not None and record.result["reason"] == "attrition"
    with pytest.raises(ReplayError, match="a movable piece"):
        analyse_record(GameRecord.from_json(record.to_json()))


def test_a_side_without_a_move_loses_by_no_moves_though_the_referee_gives_it_its_turn() -> None:
    # A real -T 2 game (tests/data, paths shortened): after RED's 335th move PeternLewis (BLUE) had mobile pieces
    # but none that could move; the referee, which counts mobile pieces, asked it for a move all the same,
    # and it surrendered. Our rules ended the game a line earlier: the record must not stop there.
    log = parse_referee_log((REPO / "tests" / "data" / "ucc-referee-no-moves.log").read_text())
    record = log_to_record(log, names=NAMES)
    assert record.result is not None
    assert (record.result["winner"], record.result["reason"], record.result["plies"]) == ("red", "no_moves", 669)
    assert record.result["referee"]["line"] == "blue ILLEGAL 335 17 4"
    assert analyse_record(record).plies == 669


def test_a_game_stopped_at_its_wall_time_is_adjourned() -> None:
    # Blue's general goes on from (0, 1) into red's bomb at (0, 0) and dies; the game is cut off after red's
    # next move (no result line): undecided, with the general's fate in the record.
    moves = [*MOVES, "6 RED: 9 4 UP OK", "6 BLU: 0 1 UP DIES 2 B"]
    record = log_to_record(parse_referee_log(referee_log(moves, ["7 RED: 9 3 DOWN OK"])), names=NAMES,
                           stopped=True)
    assert record.result == {"winner": None, "reason": "adjourned", "plies": 13,
                             "detail": "stopped at the game's wall-time bound"}
    fates = analyse_record(record).fates
    assert any(f.side == Side.BLUE and f.rank == Rank.GENERAL and f.cause.value == "bomb" for f in fates)


def test_an_outcome_our_rules_do_not_give_is_an_error() -> None:
    wrong = [*MOVES[:5], "3 BLU: 0 4 UP DIES 2 7"]
    with pytest.raises(RefereeLogError, match="the referee says DIES"):
        log_to_record(parse_referee_log(referee_log(wrong, [])), names=NAMES)


def test_a_bad_setup_is_the_forfeit_of_its_side() -> None:
    text = "\n".join(["/x/red RED SETUP", "INVALID!", "/x/blue BLUE SETUP", *BLUE_SETUP,
                      "Game ends in the SETUP phase - REASON: An illegal setup was made by RED",
                      "/x/red RED BAD_SETUP 0 0 148"])
    record = log_to_record(parse_referee_log(text), names=NAMES)
    assert record.result is not None
    result = (record.result["winner"], record.result["reason"], record.result["forfeits"])
    assert result == ("blue", "forfeit_illegal_setup", ["red"])


# --- the analysis: known raiders in the victim's half -------------------------------------------------------


def test_known_raiders_takes_in_the_victims_half_are_counted_with_their_run() -> None:
    record = log_to_record(parse_referee_log(referee_log(MOVES, TIMEOUT_END)), names=NAMES)
    taken = analyse_record(record).taken_in_half
    # The sergeant fell to a general red had not been shown: not counted; then two in a row.
    assert [(t.side, t.square, t.taken, t.raider_rank, t.run) for t in taken] == [
        (Side.RED, Square(0, 2), Rank.LIEUTENANT, Rank.GENERAL, 1),
        (Side.RED, Square(0, 1), Rank.CAPTAIN, Rank.GENERAL, 2),
    ]


# --- the table ----------------------------------------------------------------------------------------------


def test_a_game_from_each_side() -> None:
    record = log_to_record(parse_referee_log(referee_log(MOVES, TIMEOUT_END)), names=NAMES)
    analysis = analyse_record(record)
    ours = gauntlet_game(analysis, "ours")
    assert ours is not None
    assert (ours.opponent, ours.side, ours.score, ours.loss, ours.forfeit_ours, ours.forfeit_theirs) == (
        "theirs", Side.RED, 0.0, "forfeit_timeout", True, False)
    assert (ours.taken_in_half, ours.longest_raid) == (2, 2)
    theirs = gauntlet_game(analysis, "theirs")
    assert theirs is not None and (theirs.score, theirs.loss, theirs.forfeit_theirs) == (1.0, None, True)
    assert gauntlet_game(analysis, "nobody") is None
    summary = summarise_gauntlet([analysis, analysis], "ours")["theirs"]
    assert summary.trinomial == Trinomial(0, 0, 2)
    assert summary.to_json()["loss_causes"] == {"forfeit_timeout": 2}


def test_our_attacks_that_lost_for_certain_are_counted_for_our_side_only() -> None:
    record = log_to_record(parse_referee_log(referee_log(MOVES, TIMEOUT_END)), names=NAMES)
    analysis = replace(analyse_record(record), hopeless=[
        HopelessAttack(Side.RED, 3, Square(0, 5), Rank.SCOUT, Rank.GENERAL),
        HopelessAttack(Side.RED, 7, Square(1, 5), Rank.MINER, Rank.MAJOR),
        HopelessAttack(Side.BLUE, 8, Square(1, 3), Rank.SPY, Rank.SERGEANT),
    ])
    ours, theirs = gauntlet_game(analysis, "ours"), gauntlet_game(analysis, "theirs")
    assert ours is not None and theirs is not None
    assert (ours.hopeless_attacks, theirs.hopeless_attacks) == (2, 1)
    summary = summarise_gauntlet([analysis, analysis], "ours")["theirs"]
    assert summary.hopeless_attacks == 4 and summary.to_json()["hopeless_attacks"] == 4


def test_the_score_interval_is_wilsons() -> None:
    four_wins = score_interval(Trinomial(wins=4, draws=0, losses=0))
    assert four_wins is not None and four_wins.score == 1.0 and four_wins.high == 1.0
    assert four_wins.low == pytest.approx(0.510, abs=0.001)  # Wilson's 95 % lower end for 4 of 4
    even = score_interval(Trinomial(wins=10, draws=0, losses=10))
    assert even is not None
    assert (even.low, even.high) == (pytest.approx(0.299, abs=0.001), pytest.approx(0.701, abs=0.001))
    assert score_interval(Trinomial(0, 0, 0)) is None


# --- profiles and the command -------------------------------------------------------------------------------


def test_a_command_names_its_missing_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    params = UccEngineParams(command="${PERSPECTO_UCC2012}/peternlewis")
    monkeypatch.delenv("PERSPECTO_UCC2012", raising=False)
    with pytest.raises(UccCommandError, match=r"needs \$PERSPECTO_UCC2012, which is not set: set PERSPECTO_UCC2012"):
        params.argv()
    monkeypatch.setenv("PERSPECTO_UCC2012", str(tmp_path))
    with pytest.raises(UccCommandError, match="is not an executable file"):
        params.argv()
    program = tmp_path / "peternlewis"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    assert params.argv() == [str(program)]


def test_the_eight_sparring_profiles_ship_and_load_without_the_programs(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.profiles import load_configuration

    monkeypatch.delenv("PERSPECTO_UCC2012", raising=False)
    _settings, profiles = load_configuration(str(REPO / "config"))
    names = {n for n, p in profiles.profiles.items() if n.startswith("ucc-") and p.engine == "ucc"}
    assert names == {f"ucc-{p}" for p in ("peternlewis", "celsius", "ramen", "vixen", "asmodeus", "hunter",
                                          "basic_cpp", "basic_python")}


def test_the_gauntlet_says_what_is_missing(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                           tmp_path: Path) -> None:
    for var in [v for v in os.environ if v.startswith("PERSPECTO_")]:
        monkeypatch.delenv(var)
    config = str(REPO / "config")
    records = str(tmp_path / "records")
    assert main(["gauntlet", "--config", config, "--records", records]) == 2
    assert "PERSPECTO_UCC2012, which is not set" in capsys.readouterr().out
    assert main(["gauntlet", "no-such-thing", "--config", config, "--records", records]) == 2
    assert "neither a profile nor a program's path" in capsys.readouterr().out
    assert main(["gauntlet", "random", "--config", config, "--records", records]) == 2
    assert "the gauntlet plays UCC programs" in capsys.readouterr().out
    monkeypatch.setenv("PERSPECTO_UCC2012", str(tmp_path))  # no programs there
    assert main(["gauntlet", "ucc-vixen", "--config", config, "--records", records]) == 2
    assert "is not an executable file" in capsys.readouterr().out
    program = tmp_path / "vixen"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    assert main(["gauntlet", "ucc-vixen", "--config", config, "--records", records]) == 2  # no referee beside it
    assert "referee" in capsys.readouterr().out


@pytest.mark.parametrize(("as_path", "line"), [(True, "RED ./perspecto 10 10"), (False, "RED perspecto 10 10")])
def test_the_adapter_names_the_opponent_by_a_path_as_the_referee_does(tmp_path: Path, as_path: bool,
                                                                      line: str) -> None:
    """Ramen (2012) takes a file name from the opponent's name and crashes on one with no '/'."""
    from bot.ucc.engine import UccEngine
    from engine_ext.rules.rulesets import CLASSIC

    heard = tmp_path / "heard"
    program = tmp_path / "program"
    program.write_text(f"#!/bin/sh\nread line\necho \"$line\" > {heard}\n"
                       "printf 'FB8sB479B8\\nBB31555583\\n6724898974\\n967B669999\\n'\nread x\n", encoding="utf-8")
    program.chmod(0o755)
    engine = UccEngine(UccEngineParams(command=str(program), opponent_as_path=as_path))
    engine.choose_setup(Side.RED, "perspecto", CLASSIC)
    engine.finish(None, None)
    assert heard.read_text().strip() == line


def test_the_referees_turn_cap_in_plies() -> None:
    """stratego -m 10 plays turns 1 to 9 and declares the draw: 18 plies (seen in a real game)."""
    from bot.ucc.referee import referee_move_limit

    assert referee_move_limit(10) == 18
    assert referee_move_limit(5000) == 8000  # 9998, beyond our rules' longest game
    with pytest.raises(ValueError):
        referee_move_limit(1)


def test_a_game_at_the_referees_turn_cap_is_a_draw_by_the_move_limit() -> None:
    moves = [*MOVES[:4], "3 RED: 9 3 DOWN OK", "3 BLU: 0 4 DOWN OK"]
    ending = ["Game ends on BLUE's turn - REASON: Game declared a draw after 4 turns",
              "/x/red BLUE DRAW_DEFAULT 4 148 148"]
    record = log_to_record(parse_referee_log(referee_log(moves, ending)), names=NAMES, max_turns=4)
    assert record.result is not None and (record.result["winner"], record.result["reason"]) == (None, "move_limit")
    analyse_record(record)


def test_an_old_records_forfeit_setup_counts_as_the_illegal_setup_it_was() -> None:
    # Records written before the referee core spelled the lab's and this reader's setup forfeit forfeit_setup.
    analysis = analyse_record(log_to_record(parse_referee_log(referee_log(MOVES, TIMEOUT_END)), names=NAMES))
    old = replace(analysis, result={"winner": "blue", "reason": "forfeit_setup", "plies": 0, "forfeits": ["red"]})
    ours = gauntlet_game(old, NAMES[Side.RED])
    assert ours is not None and ours.reason == "forfeit_illegal_setup" and ours.loss == "forfeit_illegal_setup"


# --- running the referee ------------------------------------------------------------------------------------


def test_relative_paths_reach_the_referee_as_the_files_meant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The referee runs in the log's folder, so a relative ``-o`` (``perspecto gauntlet --records runs/x``) named
    another file there: the real referee died of it (signal 11) and every game of the run was lost. A stand-in
    referee that opens ``-o`` from its own working directory, as the real one does, writes a whole game."""
    from bot.ucc.referee import play_referee_game

    log = referee_log(MOVES, TIMEOUT_END)
    stand_in = tmp_path / "stratego"
    stand_in.write_text(
        "#!/bin/sh\n"
        "# -T S -m N -o LOG RED BLUE: the log from this working directory, or die as the referee does\n"
        f"cat > \"$6\" <<'LOG' || exit 139\n{log}LOG\n"
        "[ -x \"$7\" ] && [ -x \"$8\" ] || exit 139\n"
        f"echo '{TIMEOUT_END[-1]}'\n", encoding="utf-8")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    program = tmp_path / "program"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "runs" / "referee").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    game = play_referee_game(Path("stratego"), Path("program"), Path("program"), names=NAMES,
                             log_path=Path("runs/referee/game.log"), wall_time=30)
    assert game.error is None
    assert game.result is not None and game.record is not None
    assert game.record.result is not None and game.record.result["winner"] == "blue"


def test_the_report_prints_the_names_and_files_a_folder_gives_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hostile = "\x1b[2J\x1b]0;t\x07x"  # clear the screen, retitle the window, ring the bell
    records = tmp_path / "records"
    records.mkdir()
    record = log_to_record(parse_referee_log(referee_log(MOVES, TIMEOUT_END)),
                           names={Side.RED: "ours", Side.BLUE: f"[bold]{hostile}"}, game_id="g1")
    record.save(records / "g1.json")
    (records / f"{hostile}.json").write_text("not a record", encoding="utf-8")  # a file's name, left out
    assert main(["gauntlet", "--report", str(records), "--profile", "ours"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold]\\x1b[2J\\x1b]0;t\\x07x" in out  # the opponent's name, markup and all, as written
    assert f"{records}/\\x1b[2J\\x1b]0;t\\x07x.json: left out: " in out


def test_the_long_game_failure_is_the_tournaments_turn_cap_as_the_referee_plays_it() -> None:
    """A game that shuffles to the 1,000-turn cap ends at the referee's last ply, 1998: a threshold past it (2000
    was one) would count no game of a ``--max-turns 1000`` run, however long it shuffled while ahead."""
    from bot.ucc.referee import referee_move_limit
    from engine_ext.lab.gauntlet import LONG_GAME_PLIES

    assert LONG_GAME_PLIES == referee_move_limit(1000)


def test_a_run_stopped_by_sigterm_stops_its_games_in_play(tmp_path: Path) -> None:
    """Each game runs in a session of its own, which no signal to the run reaches: ``kill`` (or ``docker stop``)
    used to end the run and leave its referees playing on, orphans. SIGTERM now stops the run as Ctrl-C does,
    and the run kills the games in play. A stand-in referee that would play for a minute says where it is."""
    started = tmp_path / "referee-pids"
    referee = tmp_path / "stratego"
    referee.write_text(f"#!/bin/sh\necho $$ >> {started}\nexec sleep 60\n", encoding="utf-8")
    referee.chmod(0o755)
    program = tmp_path / "vixen"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    command = [sys.executable, "-m", "bot.cli", "gauntlet", str(program), "--referee", str(referee), "--games", "4",
               "--concurrency", "2", "--records", str(tmp_path / "records"), "--config", str(REPO / "config")]
    run = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(started.read_text().split() if started.exists() else []) < 2:
            time.sleep(0.05)
        pids = [int(pid) for pid in started.read_text().split()]
        assert len(pids) == 2, "the two games in play never started"
        run.send_signal(signal.SIGTERM)
        out, _ = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, out
    assert "interrupted" in out
    time.sleep(0.2)
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # the referee's group was killed with the run
