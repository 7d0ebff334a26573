"""The web view in a real browser: headless Chromium from Debian's packages, driven by Playwright.

``perspecto host --web`` runs as its own process with two bots over TCP: ``minimax`` (our engine, which
thinks a little on each move and sends its ``info``: value, line) and ``random``. The page is opened with
no game named: it must open the live game by itself, its board must change as moves are played, the clock
of the side to move must tick, and the graph of red's chances must grow with the game. Then a finished game
is opened from the list and stepped through, and at every step the board the page drew (its squares in the
DOM) is held to the record replayed by the rules engine; a side's view is held to what that side knows; the
graph's marker to the ply, its value to the material on the referee's board (bot/web/outlook.py), a click
on it to the ply under the click; the engine's line to the arrows on the board; and a screenshot is read
back pixel by pixel (the colour at each square) and compared with the record's pieces. A copy of the
records served by ``perspecto replay FOLDER --web`` opens its newest game by itself; and at a phone's width
(420 px) the page is no wider than the screen.

Set WEB_VIEW_SCREENSHOTS=DIR to keep the screenshots (docs/img/ has them for docs/host.md).
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.web.outlook import red_chance
from bot.web.timeline import cells
from engine_ext.rules.game import Game
from engine_ext.rules.pieces import Side
from engine_ext.rules.record import GameRecord
from engine_ext.rules.replay import replay_positions
from engine_ext.rules.rulesets import Square
from tests.web_records import expected_view, random_record

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
async def host(tmp_path: Path) -> AsyncIterator[tuple[str, asyncio.subprocess.Process, dict[str, Any]]]:
    """``perspecto host --web``, and ``minimax`` (red or blue) and ``random`` playing on it; yields the page's
    URL, the host's process and the bots' (by profile)."""
    with open(tmp_path / "processes.log", "wb") as log:  # their stderr, for a failure's report
        processes = Processes(log)
        try:
            host = await processes.start(
                "host", "--listen", "127.0.0.1:0", "--web", "127.0.0.1:0", "--records", str(tmp_path / "records"),
                "--move-limit", "120", "--move-time-average", "0.3", "--move-time-max", "5",
                "--games-per-pairing", "50", stdout=asyncio.subprocess.PIPE,
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
            bots = {}
            for token, profile, seed in (("a", "minimax", 1), ("b", "random", 2)):
                bots[profile] = await processes.start(
                    "bot", "--profile", profile, "--connect", f"127.0.0.1:{port}", "--token", token,
                    "--name", f"{profile}-{token}", "--seed", str(seed), "--log-level", "warning",
                    "--state-dir", str(tmp_path / f"state-{token}"))
            yield url, host, bots
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


async def clocks(page: Any) -> tuple[int, str | None, dict[str, float]]:
    """The ply shown, the side whose clock runs (None: none) and each side's seconds, read at one instant."""
    ply, running, seconds = await page.evaluate("""() => {
        const clocks = [...document.querySelectorAll('.clock[data-side]')];
        const on = clocks.find(c => c.dataset.running === 'true');
        return [Number(document.querySelector('#board').dataset.ply), on ? on.dataset.side : null,
                Object.fromEntries(clocks.map(c => [c.dataset.side, Number(c.dataset.seconds || 0)]))];
    }""")
    return ply, running, seconds


async def arrows(page: Any) -> list[tuple[str, str, str]]:
    """The line drawn on the board: (side, from, to) for each arrow, in order."""
    drawn = await page.eval_on_selector_all(
        "#arrows line.arrow", "els => els.map(e => [e.dataset.index, e.dataset.side, e.dataset.from, e.dataset.to])")
    return [(side, frm, to) for _index, side, frm, to in sorted(drawn, key=lambda d: int(d[0]))]


async def graph(page: Any) -> tuple[int, int, float, float]:
    """The graph's plies, the ply its marker is on, the marker's x and the graph's width (in its own units)."""
    plies, ply, x, width = await page.evaluate("""() => {
        const g = document.querySelector('#graph'), now = document.querySelector('#graph-now');
        return [Number(g.dataset.plies), Number(g.dataset.ply), Number(now.getAttribute('x1')),
                g.viewBox.baseVal.width];
    }""")
    return plies, ply, x, width


def expected_line(record: GameRecord, ply: int) -> list[tuple[str, str, str]]:
    """The arrows at ``ply``: the line the next move's bot gave with it, sides taking turns from its own; at
    the last ply, the rest of the last mover's line."""
    if ply < len(record.moves):
        line, side = (record.moves[ply].info or {}).get("pv") or [], record.moves[ply].side
    else:
        last = record.moves[-1]
        line, side = ((last.info or {}).get("pv") or [])[1:], "blue" if last.side == "red" else "red"
    out = []
    for move in line:
        out.append((side, move["from"], move["to"]))
        side = "blue" if side == "red" else "red"
    return out


async def test_watch_a_live_game_then_step_through_a_finished_one(
    host: tuple[str, asyncio.subprocess.Process, dict[str, Any]], tmp_path: Path
) -> None:
    url, _process, bots = host
    keep = os.environ.get("WEB_VIEW_SCREENSHOTS")
    shots = Path(keep) if keep else tmp_path
    shots.mkdir(parents=True, exist_ok=True)
    async with playwright.async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = await browser.new_page(viewport={"width": 1280, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        await page.goto(url)
        await page.wait_for_selector("#connection[data-state=open]", timeout=15_000)

        # No game named in the address: the live one opens by itself, as soon as it starts.
        await page.wait_for_selector("#game:not([hidden]) #board .sq", timeout=60_000)
        live_id = await page.get_attribute("#live-games li.selected", "data-game", timeout=5_000)
        assert live_id and (await page.text_content("#status") or "").startswith(live_id)
        assert await page.locator("#empty").is_hidden()

        # Its board moves on; the clock of the side to move runs between moves; the graph grows with the game.
        before_ply, before = await snapshot(page)
        # (if that game ends first, the page moves on to the next live one by itself, from its start)
        await page.wait_for_function(f"""() => {{
            const ply = Number(document.querySelector('#board').dataset.ply);
            const same = document.querySelector('#status').textContent.startsWith({live_id!r});
            return same ? ply > {before_ply + 2} : ply > 2;
        }}""", timeout=60_000)
        after_ply, after = await snapshot(page)
        assert after_ply != before_ply and after != before
        # The clock: ``random`` held still (SIGSTOP), well within a move's 5 s, so that the game stands still for
        # a while (minimax answers in milliseconds: between moves the clocks are seen running only for an
        # instant). The host waits on random, on its move or on its word about minimax's, and the clock of the
        # side to move must tick while the other's stands. Each attempt starts from a running clock with random
        # let go: a game of 120 plies lasts seconds, and random held at a game's end or at the next one's setups
        # keeps every clock still (one CI run held it there through five attempts in a row, each let go for
        # only an instant). An attempt in which a move still fell (minimax's, seen just before it answered) is
        # tried again; one in which the game stood still must show the running clock ticking.
        running_clock = "document.querySelector('.clock[data-running=true]') !== null"
        for _attempt in range(10):
            await page.wait_for_function(running_clock, timeout=60_000)
            bots["random"].send_signal(signal.SIGSTOP)
            try:
                try:
                    await page.wait_for_function(running_clock, timeout=1_500)
                except playwright.TimeoutError:
                    continue
                ply, running, seconds = await clocks(page)
                # 1.5 s of waiting for 0.7 s of ticking: the page redraws its clock on a timer that a loaded
                # machine delays (0.66 s shown after 0.8 s in one CI run), and random's move stays 5 s away.
                await page.wait_for_timeout(1_500)
                ply2, running2, seconds2 = await clocks(page)
                running_text = (await page.text_content(f"#clock-{running} .move") or "") if running else ""
                await page.screenshot(path=str(shots / "web-live.png"))
            finally:
                bots["random"].send_signal(signal.SIGCONT)
            if running is None or (ply2, running2) != (ply, running):
                continue
            other = "blue" if running == "red" else "red"
            assert seconds2[running] - seconds[running] >= 0.7, "the running clock did not tick"
            assert seconds2[other] == seconds[other], "the waiting side's clock moved"
            assert running_text.endswith(" of 5 s"), running_text  # the move's time against the host's limit
            break
        else:
            raise AssertionError("never saw the game stand still with a clock running")
        # Following: the marker on the newest ply. The game plays on meanwhile, so the two reads are taken again
        # until no move fell between them.
        for _read in range(50):
            plies, marked, _x, _w = await graph(page)
            shown = await shown_ply(page)
            if marked == shown:
                break
            await page.wait_for_timeout(100)
        assert plies >= shown - 1 and marked == shown

        # A finished game from the list: from its setups, step by step, each board the rules engine's.
        finished = page.locator("#finished-games li").first
        await finished.click(timeout=120_000)
        game_id = await finished.get_attribute("data-game")
        record_path = tmp_path / "records" / f"{game_id}.json"
        await page.wait_for_function(
            f"document.querySelector('#status').textContent.startsWith({game_id + ' (record ' + game_id!r})")
        assert str(tmp_path) not in (await page.content())  # file names only, never where they are
        record = GameRecord.load(record_path)
        await page.click("#first")  # to the setups (it may be the game watched above, shown at its end)
        assert await shown_ply(page) == 0
        positions = replay_positions(record)
        game, _ = next(positions)
        assert await dom_board(page) == cells(game)
        last_seconds = (await clocks(page))[2]
        for ply in range(1, min(41, len(record.moves) + 1)):
            await page.click("#forward")
            game, played = next(positions)
            assert played is not None and await shown_ply(page) == ply
            assert await dom_board(page) == cells(game), f"ply {ply}"
            current = await page.text_content("#moves li.current")
            assert current is not None and played.notation() in current
            _plies, marked, _x, _w = await graph(page)
            assert marked == ply
            red = math.floor(red_chance(game) * 100 + 0.5)  # as the page rounds (halves up)
            assert f"red's chances {red} %, blue's {100 - red} %" in (await page.text_content("#outlook") or "")
            assert await arrows(page) == expected_line(record, ply), f"the line at ply {ply}"
            _ply, running, seconds = await clocks(page)
            mover = str(played.side)
            assert running is None and seconds[mover] >= last_seconds[mover]
            assert seconds[str(played.side.other)] == last_seconds[str(played.side.other)]
            last_seconds = seconds

        # The engine's line: at a ply where minimax moves next, its move (and what it expects) drawn.
        with_line = [p for p in range(len(record.moves)) if (record.moves[p].info or {}).get("pv")]
        assert with_line, "minimax sent no line"
        await page.locator("#seek").fill(str(with_line[len(with_line) // 2]))
        drawn = await arrows(page)
        assert drawn and drawn == expected_line(record, with_line[len(with_line) // 2])
        await page.click(f"button[data-view={drawn[0][0]}]")
        await page.screenshot(path=str(shots / "web-info.png"), full_page=True)
        await page.click("button[data-view=referee]")

        # The graph: a click goes to the ply under it; its values are the referee's material, ply by ply.
        plies, _marked, _x, width = await graph(page)
        assert plies == len(record.moves)
        box = await page.locator("#graph").bounding_box()
        assert box is not None
        await page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
        target = round(0.75 * plies)
        assert abs(await shown_ply(page) - target) <= 1
        _plies, marked, x, width = await graph(page)
        assert marked == await shown_ply(page) and abs(x - width * marked / plies) < 1
        values = await page.evaluate("""() => { const points = document.querySelector('#graph .trend').points;
            return Array.from({length: points.numberOfItems}, (_, i) => points.getItem(i).y); }""")
        assert len(values) == plies + 1
        height = await page.evaluate("() => document.querySelector('#graph').viewBox.baseVal.height")
        for ply in (0, plies // 3, plies):
            assert values[ply] == pytest.approx((1 - red_chance(position(record, ply))) * height, abs=0.06)

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

        # The screenshot against the record: the colour on every square is the piece (or none) the record has
        # (the squares under an arrow of the engine's line are left out: the arrow is drawn over them).
        ply = min(len(record.moves), attack + 60)
        await page.locator("#seek").fill(str(ply))
        seen = await screenshot_sides(page, shots / "web-replay.png")
        under_arrows = {square for _side, frm, to in await arrows(page) for square in (frm, to)}
        expected = expected_colours(position(record, ply))
        assert {k: v for k, v in seen.items() if k not in under_arrows} == \
            {k: v for k, v in expected.items() if k not in under_arrows}
        await page.click("button[data-view=blue]")
        await page.screenshot(path=str(shots / "web-blue-view.png"))

        # A phone: the page fits 420 px (nothing wider than the screen), the live game open by itself.
        phone = await browser.new_page(viewport={"width": 420, "height": 900}, is_mobile=True, has_touch=True)
        phone.on("pageerror", lambda exc: errors.append(str(exc)))
        await phone.goto(url)
        await phone.wait_for_selector("#game:not([hidden]) #board .sq", timeout=60_000)
        assert await phone.evaluate("document.documentElement.scrollWidth") <= 420
        right = await phone.evaluate("""() => Math.max(...[...document.querySelectorAll('#game *')]
            .filter(e => e.getClientRects().length).map(e => e.getBoundingClientRect().right))""")
        assert right <= 420, f"something on the page reaches {right} px"
        await phone.screenshot(path=str(shots / "web-phone.png"))
        assert not errors, errors
        await browser.close()


def pv(*moves: str) -> list[dict[str, str]]:
    return [dict(zip(("from", "to"), move.split("-"), strict=True)) for move in moves]


async def test_replay_opens_the_newest_record_by_itself_and_draws_its_lines(tmp_path: Path) -> None:
    """``perspecto replay FOLDER --web`` (no live game): the page opens the newest finished game by itself,
    and a newer one when it appears;
    a line of several moves is drawn as arrows, sides taking turns, and the last ply shows the rest of the
    last mover's line; a record's clocks are the times its bots gave; a record the rules refuse shows why,
    and no board."""
    folder = tmp_path / "records"
    folder.mkdir()
    for n, started in enumerate(("2026-11-25T12:00:00Z", "2026-11-26T09:30:00Z", "2026-11-24T18:00:00Z")):
        record = random_record(n, plies=30, game_id=f"game-{n}")
        record.started = started
        if n == 1:
            moves = [m.move for m in record.moves]
            record.moves[5].info = {"time": 0.75, "pv": pv(*moves[5:8])}
            record.moves[29].info = {"time": 0.5, "pv": pv(moves[29], moves[27], moves[28])}
            newest = record
        record.save(folder / f"game-{n}.json")
    broken = random_record(9, plies=20, game_id="broken")
    broken.moves[4].move = "A1-A2"  # red's back row: not a legal move there
    broken.save(folder / "broken.json")
    with open(tmp_path / "replay.log", "wb") as log:
        processes = Processes(log)
        try:
            replay = await processes.start("replay", str(folder), "--web", "127.0.0.1:0",
                                           stdout=asyncio.subprocess.PIPE)
            assert replay.stdout is not None
            async with asyncio.timeout(30):
                while not (m := re.search(r"web view: (http://\S+)", (await replay.stdout.readline()).decode())):
                    pass
            async with playwright.async_playwright() as pw:
                browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
                page = await browser.new_page(viewport={"width": 1280, "height": 900})
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                await page.goto(m.group(1))
                await page.wait_for_selector("#game:not([hidden]) #board .sq", timeout=30_000)
                assert await page.get_attribute("#finished-games li.selected", "data-game") == "game-1"
                assert (await page.text_content("#status") or "").startswith("game-1 (record game-1.json)")
                assert await shown_ply(page) == 0  # a finished game opens at its setups
                listing = await page.evaluate("fetch('/api/games').then(r => r.text())")
                assert str(tmp_path) not in listing and len(json.loads(listing)["games"]) == 4

                # A newer record (the lab writes one per game): the game the page opened by itself gives way.
                later = random_record(4, plies=10, game_id="game-4")
                later.started = "2026-11-27T08:00:00Z"
                later.save(folder / "game-4.json")
                await page.wait_for_function(
                    "document.querySelector('#status').textContent.startsWith('game-4 ')", timeout=15_000)
                await page.click("#finished-games li[data-game=game-1]")  # chosen: it stays
                await page.wait_for_function("document.querySelector('#status').textContent.startsWith('game-1 ')")

                side, other = newest.moves[5].side, newest.moves[6].side
                await page.locator("#seek").fill("5")
                assert await arrows(page) == expected_line(newest, 5) == [
                    (side, *newest.moves[5].move.split("-")), (other, *newest.moves[6].move.split("-")),
                    (side, *newest.moves[7].move.split("-"))]
                await page.locator("#seek").fill("6")
                assert await arrows(page) == []
                assert (await clocks(page))[2] == {side: 0.75, other: 0.0}
                await page.locator("#seek").fill("30")  # the last ply: the rest of the last mover's line
                last, reply = newest.moves[29].side, newest.moves[28].side
                assert await arrows(page) == expected_line(newest, 30) == [
                    (reply, *newest.moves[27].move.split("-")), (last, *newest.moves[28].move.split("-"))]
                assert (await clocks(page))[2] == {side: 0.75, other: 0.0, last: 0.5 + (0.75 if last == side else 0)}

                await page.click("#finished-games li[data-game=broken]")
                await page.wait_for_selector("#error:not([hidden])")
                assert "ply 5" in (await page.text_content("#error") or "")
                assert await page.locator(".board-wrap").is_hidden() and await page.locator("#graph").is_hidden()
                assert not errors, errors
                await browser.close()
        finally:
            await processes.stop()
