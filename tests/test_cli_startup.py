"""What the ``perspecto`` command imports before it does its work (issue 31; bench/startup times it).

The UCC referee forfeits a program whose setup is not out within its -T seconds, and ``perspecto --help``
took seconds importing every command. These check the structure that keeps both fast: which modules are
loaded at each point (no timing here: speed is measured by bench/startup).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]

# Modules that cost a perceptible share of a second each (or pull such modules in).
HEAVY = ("pydantic", "numpy", "structlog", "rich", "engine_ext.engine", "engine_ext.beliefs", "bot.config",
         "bot.settings", "bot.profiles", "protocol.messages", "setups.choice", "scipy")


def loaded_after(code: str) -> dict[str, list[str]]:
    """Run ``code`` in a fresh interpreter; it prints a JSON object of module lists (see ``heavy``)."""
    prelude = (
        "import json, sys\n"
        f"HEAVY = {HEAVY!r}\n"
        "def heavy():\n"
        "    return sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in HEAVY))\n"
        "def commands():\n"
        "    return sorted(m for m in sys.modules if m.startswith('bot.commands.'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PERSPECTO_CONFIG_DIR"}
    run = subprocess.run([sys.executable, "-c", prelude + code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env=env)
    lines = [line for line in run.stderr.splitlines() if line.startswith("{")]
    assert lines, run.stderr
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def test_the_console_script_entry_imports_nothing_heavy() -> None:
    seen = loaded_after("import bot.cli\nprint(json.dumps({'heavy': heavy(), 'commands': commands()}), "
                        "file=sys.stderr)")
    assert seen == {"heavy": [], "commands": []}


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["-V"]])
def test_help_and_version_import_no_command(argv: list[str]) -> None:
    code = ("from bot.cli import main\n"
            "try:\n"
            f"    main({argv!r})\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(json.dumps({'heavy': heavy(), 'commands': commands()}), file=sys.stderr)\n")
    assert loaded_after(code) == {"heavy": [], "commands": []}


def test_a_command_imports_its_own_module_only() -> None:
    code = ("from bot import cli\n"
            "cli.build_parser(cli.command_module(['health']))\n"
            "print(json.dumps({'commands': commands()}), file=sys.stderr)\n")
    assert loaded_after(code) == {"commands": ["bot.commands.health"]}


def test_the_ucc_player_sends_its_setup_before_importing_the_engine() -> None:
    # The setup's write is watched: what is loaded at that moment. Then the game goes on with its engine.
    code = (
        "import json, sys\n"
        f"HEAVY = {HEAVY!r}\n"
        "from bot.ucc import opening\n"
        "answer = opening.answer_colour\n"
        "def watched(*args, **kwargs):\n"
        "    result = answer(*args, **kwargs)\n"
        "    heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in HEAVY))\n"
        "    print(json.dumps({'at_setup': heavy}), file=sys.stderr, flush=True)\n"
        "    return result\n"
        "opening.answer_colour = watched\n"
        "from bot.cli import main\n"
        "sys.exit(main(['ucc', '--profile', 'random', '--config', 'config', '--seed', '4']))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PERSPECTO_CONFIG_DIR"}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write("RED scripted-referee 10 10\n")
        proc.stdin.flush()
        setup = [proc.stdout.readline() for _ in range(4)]
        at_setup = None
        for line in proc.stderr:  # until the engine has loaded
            if line.startswith("{"):
                at_setup = json.loads(line)["at_setup"]
            if "ucc.game" in line:
                break
        proc.stdin.write("QUIT\n")
        proc.stdin.flush()
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(len(line.strip()) == 10 for line in setup)
    assert at_setup == []


def test_every_summary_is_the_one_its_module_registers() -> None:
    for command in COMMANDS:
        parser = argparse.ArgumentParser(prog="perspecto")
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(command.module).register(sub)
        registered = {action.dest: action.help for action in sub._choices_actions}
        assert registered == {command.name: command.summary}, command.module


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_shows_its_own_options(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: perspecto {command}") and "-h, --help" in out


def test_the_top_level_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for command in COMMANDS:
        assert f"{command.name} {command.summary[:30]}" in text  # (argparse may wrap the rest at a hyphen)


def test_an_unknown_command_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["no-such-command"])
    assert stop.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
