"""The web view in a real browser: headless Chromium from Debian's packages, driven by Playwright.

``perspecto host --web`` runs as its own process with two random bots over TCP. The page is opened while
the games run: the board of a live game must change as moves are played. Then a finished game is opened
from the list and stepped through, and at every step the board the page drew (its squares in the DOM) is
held to the record replayed by the rules engine; a side's view is held to what that side knows; and a
screenshot is read back pixel by pixel (the colour at each square) and compared with the record's pieces.

Set WEB_VIEW_SCREENSHOTS=DIR to keep the screenshots (docs/img/ has them for docs/host.md).
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.web.timeline import cells
from engine_ext.rules.game import Game
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import Square
from tests.web_records import expected_view

playwright = pytest.importorskip("playwright.async_api")
Image = pytest.importorskip("PIL.Image")

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")  # Debian's (.ci/run installs it); Playwright downloads no browser of its own

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]


class Processes:
    def __init__(self, log: Any) -> None:
        self.started: list[asyncio.subprocess.Process] = []
        self.log = log  # their stderr, for a failure's report

    async def start(self, *args: str, stdout: int = asyncio.subprocess.DEVNULL) -> asyncio.subprocess.Process:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot.cli", *args, cwd=REPO, env=dict(os.environ),
            stdin=asyncio.subprocess.DEVNULL, stdout=stdout, stderr=self.log,
        )
        self.started.append(process)
        return process

    async def stop(self) -> None:
        for process in self.started:
            if process.returncode is None:
                process.kill()
            await process.wait()


@pytest.fixture
async def host(tmp_path: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """``perspecto host --web`` and two random bots playing on it; yields the page's URL."""
    with open(tmp_path / "processes.log", "wb") as log:  # their stderr, for a failure's report
        processes = Processes(log)
        try:
            host = await processes.start(
                "host", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--records", str(tmp_path / "records"),
                "--move-limit", "600", "--games-per-pairing", "50", stdout=asyncio.subprocess.PIPE,
            )
            assert host.stdout is not None
            port = url = None
            async with asyncio.timeout(30):
                while port is None or url is None:
                    line = (await host.stdout.readline()).decode()
                    assert line, "the host stopped before it said where it listens"
                    if m := re.search(r"host listening on 127\.0\.0\.1:(\d+)", line):
                        port = m.group(1)
                    if m := re.search(r"web view: (http://\S+)", line):
                        url = m.group(1)
            for token, seed in (("a", 1), ("b", 2)):
                await processes.start("bot", "--profile", "random", "--connect", f"127.0.0.1:{port}", "--token", token,
                                      "--name", f"random-{token}", "--seed", str(seed), "--log-level", "warning",
                                      "--state-dir", str(tmp_path / f"state-{token}"))
            yield url, host
            host.send_signal(signal.SIGTERM)
            async with asyncio.timeout(20):
                await host.wait()
        finally:
            await processes.stop()


async def dom_board(page: Any) -> dict[str, str]:
    return (await snapshot(page))[1]


async def snapshot(page: Any) -> tuple[int, dict[str, str]]:
    """The ply the page shows and its board's squares, read at one instant (a live board moves on)."""
    ply, squares = await page.eval_on_selector(
        "#board",
        "b => [Number(b.dataset.ply), [...b.querySelectorAll('.sq')].map(e => [e.dataset.square, e.dataset.cell])]",
    )
    return ply, {square: cell for square, cell in squares if cell}


async def shown_ply(page: Any) -> int:
    return int(await page.get_attribute("#board", "data-ply"))


def position(record: GameRecord, ply: int) -> Game:
    for game, _played in replay_positions(record):
        if game.ply == ply:
            return game
    raise AssertionError(f"no ply {ply}")


# The colours of style.css: a piece's face (a hidden one is drawn at 80 % over the board), the land, a lake.
COLOURS = {
    "red": [(0xC0, 0x39, 0x2B), (0xCD, 0x5A, 0x4A)],
    "blue": [(0x1F, 0x5F, 0xA8), (0x4B, 0x79, 0xAC)],
    "land": [(0xE9, 0xDF, 0xC4)],
    "lake": [(0x7F, 0xB3, 0xD5)],
}


def colour_name(pixel: tuple[int, ...]) -> str:
    def distance(a: tuple[int, ...], b: tuple[int, int, int]) -> int:
        return sum((x - y) ** 2 for x, y in zip(a[:3], b, strict=True))

    return min(COLOURS, key=lambda name: min(distance(pixel, c) for c in COLOURS[name]))


async def screenshot_sides(page: Any, path: Path) -> dict[str, str]:
    """Take a screenshot and read each square's colour from it: "red", "blue", "land" or "lake"."""
    png = await page.screenshot(path=str(path))
    image = Image.open(io.BytesIO(png)).convert("RGB")
    boxes = await page.eval_on_selector_all(
        "#board .sq",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [e.dataset.square, r.x, r.y, r.width]; })",
    )
    seen = {}
    for square, x, y, size in boxes:
        # A quarter in from the corner: on a piece's face, clear of its symbol and of the last-move frame.
        seen[square] = colour_name(image.getpixel((int(x + size * 0.27), int(y + size * 0.27))))
    return seen


def expected_colours(game: Game) -> dict[str, str]:
    ruleset = game.options.ruleset
    out = {}
    for col in range(ruleset.width):
        for row in range(ruleset.height):
            square = Square(col, row)
            piece = game.piece_at(square)
            out[str(square)] = "lake" if ruleset.is_lake(square) else "land" if piece is None else str(piece[0])
    return out


async def test_watch_a_live_game_then_step_through_a_finished_one(
    host: tuple[str, asyncio.subprocess.Process], tmp_path: Path
) -> None:
    url, _process = host
    keep = os.environ.get("WEB_VIEW_SCREENSHOTS")
    shots = Path(keep) if keep else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    async with playwright.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(url)
        await page.wait_for_selector("#connection[data-state=open]", timeout=15_000)

        # A live game: open it, and see its board change as moves come in (if the game ends first, the next).
        for _attempt in range(5):
            live = page.locator("#live-games li").first
            await live.click(timeout=60_000)
            live_id = await live.get_attribute("data-game")
            await page.wait_for_function(f"document.querySelector('#status').textContent.startsWith({live_id!r})")
            before_ply, before = await snapshot(page)
            try:
                await page.wait_for_function(
                    f"Number(document.querySelector('#board').dataset.ply) > {before_ply}", timeout=15_000)
                await page.screenshot(path=str(shots / "web-live.png"))  # at once: the game is still on
                break
            except playwright.TimeoutError:
                assert await page.locator(f"#finished-games li[data-game='{live_id}']").count() == 1, \
                    "a live game's board did not move, and the game is not over"
        else:
            raise AssertionError("no live game moved on the page")
        after_ply, after = await snapshot(page)
        assert after_ply > before_ply and after != before
        clock = await page.text_content("#clock") or ""
        assert "to move" in clock or await page.locator(f"#finished-games li[data-game='{live_id}']").count() == 1

        # A finished game from the list: from its setups, step by step, each board the rules engine's.
        finished = page.locator("#finished-games li").first
        await finished.click(timeout=120_000)
        game_id = await finished.get_attribute("data-game")
        record_path = tmp_path / "records" / f"{game_id}.json"
        await page.wait_for_function(f"document.querySelector('#status').textContent.includes({str(record_path)!r})")
        record = GameRecord.load(record_path)
        await page.click("#first")  # to the setups (it may be the game watched above, shown at its end)
        assert await shown_ply(page) == 0
        positions = replay_positions(record)
        game, _ = next(positions)
        assert await dom_board(page) == cells(game)
        for ply in range(1, min(41, len(record.moves) + 1)):
            await page.click("#forward")
            game, played = next(positions)
            assert played is not None and await shown_ply(page) == ply
            assert await dom_board(page) == cells(game), f"ply {ply}"
            current = await page.text_content("#moves li.current")
            assert current is not None and played.notation() in current

        # Seek to the first attack and to the end; look with each side's eyes.
        attack = next(i for i, m in enumerate(record.moves, start=1) if m.outcome)
        for ply in (attack, len(record.moves)):
            await page.locator("#seek").fill(str(ply))
            assert await shown_ply(page) == ply
            game = position(record, ply)
            assert await dom_board(page) == cells(game)
            for side in (Side.RED, Side.BLUE):
                await page.click(f"button[data-view={side}]")
                assert await dom_board(page) == expected_view(game, side), f"{side}'s view at ply {ply}"
            await page.click("button[data-view=referee]")

        # The screenshot against the record: the colour on every square is the piece (or none) the record has.
        ply = min(len(record.moves), attack + 60)
        await page.locator("#seek").fill(str(ply))
        seen = await screenshot_sides(page, shots / "web-replay.png")
        assert seen == expected_colours(position(record, ply))
        await page.click("button[data-view=blue]")
        await page.screenshot(path=str(shots / "web-blue-view.png"))
        assert not errors, errors
        await browser.close()
