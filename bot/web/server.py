"""The web server of the page (aiohttp, on the event loop of whatever serves the games).

Read-only by construction: the routes are GETs (any other method gets 405, on any path), and the
WebSocket only sends; what a page writes to it is ignored. Routes:

- ``/``: the page (bot/web/static/, plain HTML/CSS/JS shipped in the package, no CDN, no build step);
- ``/api/games``: the games (in progress and finished) and the standings (a host's; null otherwise);
- ``/api/games/{id}``: one game with its boards move by move (bot/web/timeline.py); an id that is not a
  plain name (a path: a slash, "..", a leading dot, ...) is refused with 400 before anything is looked up;
- ``/api/live``: a WebSocket of changes: ``{"type": "game"|"move"|"standings"|"removed", ...}``.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import structlog
from aiohttp import WSCloseCode, web
from aiohttp.typedefs import Handler

from bot.web.feed import GameFeed, is_game_id
from bot.web.options import DEFAULT_WEB_ADDRESS, parse_web_address

log = structlog.get_logger()

STATIC = Path(__file__).resolve().parent / "static"
_FEED: web.AppKey[GameFeed] = web.AppKey("feed", GameFeed)
_SOCKETS: web.AppKey[set[web.WebSocketResponse]] = web.AppKey("sockets", set)


async def _index(request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "index.html")


async def _games(request: web.Request) -> web.Response:
    feed = request.app[_FEED]
    return web.json_response({"games": feed.summaries(), "standings": feed.standings()})


async def _game(request: web.Request) -> web.Response:
    feed, game_id = request.app[_FEED], request.match_info["game_id"]
    if not is_game_id(game_id):
        raise web.HTTPBadRequest(text="a game id is a plain name, not a path")
    doc = await feed.document(game_id)
    if doc is None:
        raise web.HTTPNotFound(text=f"no game {game_id}")
    return web.json_response(doc)


async def _live(request: web.Request) -> web.WebSocketResponse:
    feed = request.app[_FEED]
    ws = web.WebSocketResponse(heartbeat=20.0)
    await ws.prepare(request)
    request.app[_SOCKETS].add(ws)
    with feed.listen() as listener:
        await ws.send_json({"type": "hello", "games": feed.summaries(), "standings": feed.standings()})

        async def ignore_input() -> None:
            async for _message in ws:  # read-only: a viewer cannot act; reading keeps pings and close working
                pass

        reader = asyncio.create_task(ignore_input())
        try:
            while not reader.done():
                getting = asyncio.ensure_future(listener.queue.get())
                dropped = asyncio.ensure_future(listener.dropped.wait())
                await asyncio.wait({reader, getting, dropped}, return_when=asyncio.FIRST_COMPLETED)
                dropped.cancel()
                if getting.done():
                    await ws.send_json(getting.result())
                    continue
                getting.cancel()
                if listener.dropped.is_set():
                    await ws.close(code=WSCloseCode.TRY_AGAIN_LATER, message=b"fell behind: reconnect")
                    break
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            request.app[_SOCKETS].discard(ws)
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    return ws


async def _close_sockets(app: web.Application) -> None:
    sockets = app[_SOCKETS]
    for ws in list(sockets):
        await ws.close(code=WSCloseCode.GOING_AWAY, message=b"the server is stopping")


_READ_METHODS = ("GET", "HEAD")


@web.middleware
async def _read_only(request: web.Request, handler: Handler) -> web.StreamResponse:
    """405 for every method but GET and HEAD, whatever the path: aiohttp's router answers a method it has no
    route for with 405 only where a path matches, and a CONNECT's target (``host:port``) matches none (404)."""
    if request.method not in _READ_METHODS:
        raise web.HTTPMethodNotAllowed(request.method, _READ_METHODS)
    return await handler(request)


def web_app(feed: GameFeed) -> web.Application:
    app = web.Application(middlewares=[_read_only])
    app[_FEED] = feed
    app[_SOCKETS] = set()
    app.router.add_get("/", _index)
    app.router.add_get("/api/games", _games)
    app.router.add_get("/api/games/{game_id}", _game)
    app.router.add_get("/api/live", _live)
    app.router.add_static("/static/", STATIC)
    app.on_shutdown.append(_close_sockets)
    return app


class WebServer:
    """The page's server on the running event loop: ``await start()`` ... ``await close()``."""

    def __init__(self, feed: GameFeed, address: str = DEFAULT_WEB_ADDRESS) -> None:
        self.feed = feed
        self.host, self.port = parse_web_address(address)
        self._runner: web.AppRunner | None = None

    async def start(self) -> str:
        """Listen; returns the page's URL (the real port when 0 was asked for)."""
        self._runner = web.AppRunner(web_app(self.feed), access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, shutdown_timeout=1.0)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            self._runner = None
            raise
        if self.port == 0:  # the port the system gave
            self.port = int(self._runner.addresses[0][1])
        log.debug("web.listening", url=self.url)
        return self.url

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

