"""The web server: textual-serve's ``Server`` with its routes locked to the page it serves.

- ``/?token=T``: the page (textual-serve's own template), only with the run's token; it names the websocket
  ``/ws/T``. Without the token: 403 and one line saying where the URL is. The page is sent with
  ``Referrer-Policy: no-referrer`` (its URL holds the token) and may not be framed.
- ``/ws/T``: a session, when the token matches, the Origin is the page's own (``guard.page_origins``) and
  fewer than ``max_sessions`` are open; the size it asks for is capped (``guard.terminal_size``), and so is
  every resize after. A tab over the cap is told so in the page and gets no process. Malformed messages
  are dropped (textual-serve logged a traceback with its locals for each).
- ``/static/``: textual-serve's scripts and fonts, without a directory listing. No ``/download`` route:
  spectui delivers no files.

``serve()`` runs the event loop itself (textual-serve's leaves the sessions' processes to the loop's
teardown: a 20 s stop, then "Event loop is closed" tracebacks, then exit 0): SIGINT, SIGTERM or SIGHUP
closes the listening socket, ends every session (``Session.stop``: quit, SIGTERM, SIGKILL, each with a
deadline) and returns 128 + N. A connection that has not sent its request within ``HEADER_S`` seconds is
closed (aiohttp's keep-alive deadline also runs from the connection's start).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Callable, Sequence

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, WSMsgType, web
from textual_serve.server import Server, to_int

from ..contract.exitcodes import STOP_SIGNALS, for_signal
from ..contract.text import visible_line
from .guard import origin_allowed, page_origins, page_url, terminal_size, token_matches
from .session import Session

HEADER_S = 10.0  # a connection's request must be in within this (slowloris)
CLOSE_S = 0.5  # a websocket's close handshake
SHUTDOWN_S = 1.0  # aiohttp's wait for handlers after the sessions have ended
MAX_MESSAGE = 1024 * 1024  # one message from the page (a paste)
REFUSALS_LOGGED = 20  # refused Origins named in the log, each once
LOG_LINES = 50  # aiohttp's and textual-serve's notes in serve's log, at most
LOGGERS = ("aiohttp", "textual-serve", "asyncio")


class OneLineLog(logging.Handler):
    """The log records of aiohttp, textual-serve and asyncio as serve's one-line notes: the message and the
    exception's first line, escaped, no traceback (aiohttp logs one, quoting the request's bytes, for every
    malformed request a client sends), at most ``most`` of them."""

    def __init__(self, say: Callable[[str], None], most: int = LOG_LINES) -> None:
        super().__init__(logging.WARNING)
        self.say = say
        self.most = most
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if self.count > self.most:
            if self.count == self.most + 1:
                self.say(f"(more than {self.most} notes from the web server: the rest are not shown)")
            return
        try:
            text = record.getMessage()
        except (TypeError, ValueError):
            text = str(record.msg)
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()][:2]  # aiohttp's: "400, message:", why
            text += f": {type(exc).__name__}" + (f": {' '.join(lines)}" if lines else "")
        self.say(text[:300])

    @classmethod
    def install(cls, say: Callable[[str], None]) -> "OneLineLog":
        handler = cls(say)
        for name in LOGGERS:
            logger = logging.getLogger(name)
            logger.handlers[:] = [handler]
            logger.propagate = False
            logger.setLevel(logging.WARNING)
        return handler


@web.middleware
async def _static_names(request: web.Request, handler) -> web.StreamResponse:
    """A /static/ path that names no file the file system can even look up (3,000 segments: ENAMETOOLONG, a
    segment over 255 bytes) is 404, as any missing file: not a 500 whose log line names the install path."""
    try:
        return await handler(request)
    except OSError:
        if not request.path.startswith("/static/"):
            raise
        raise web.HTTPNotFound() from None


class PageServer(Server):
    """``PageServer(argv, shown, host=..., port=..., token=...)``: serves ``argv`` (``python -m spectui ...``)
    to browsers that have the token. ``say``: where its one-line notes go (serve's stderr)."""

    def __init__(self, argv: Sequence[str], shown: str, *, host: str, port: int, token: str, max_sessions: int,
                 title: str | None = None, public_url: str | None = None,
                 say: Callable[[str], None] | None = None) -> None:
        super().__init__(shown, host=host, port=port, title=title or shown, public_url=public_url)
        self.argv = list(argv)
        self.shown = shown
        self.token = token
        self.max_sessions = max_sessions
        self.origins = page_origins(self.public_url, host, port)
        self.sessions: dict[Session, web.WebSocketResponse] = {}
        self.sockets: set[web.WebSocketResponse] = set()
        self.signum: int | None = None
        self.ended = 0  # sessions ended by serve's own stop
        self.stopping = False
        self._refused: set[str] = set()
        self._say = say or (lambda line: print(f"spectui serve: {line}", file=sys.stderr, flush=True))

    def say(self, line: str) -> None:
        self._say(visible_line(line))

    @property
    def url(self) -> str:
        """The page's URL, token included (what serve prints)."""
        return page_url(self.public_url, self.token)

    def websocket_url(self) -> str:
        base = self.public_url.rstrip("/")
        scheme = "wss" if base.startswith("https:") else "ws"
        return f"{scheme}:{base.split(':', 1)[1]}/ws/{self.token}"

    async def _make_app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024, middlewares=[_static_names])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws/{token}", self.handle_websocket, name="websocket"),
            web.static("/static", self.statics_path, show_index=False, name="static"),
        ])
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        if not token_matches(request.query.get("token"), self.token):
            raise web.HTTPForbidden(text="spectui serve: this page needs the token in the URL spectui serve "
                                         "printed (http://HOST:PORT/?token=...)\n")
        context = {
            "font_size": max(6, min(to_int(request.query.get("fontsize", "16"), 16), 64)),
            "app_websocket_url": self.websocket_url(),
            "config": {"static": {"url": f"{self.public_url.rstrip('/')}/static/"}},
            "application": {"name": self.title},
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Frame-Options"] = "DENY"
        return response

    def _refuse(self, request: web.Request, why: str) -> web.HTTPForbidden:
        origin = visible_line(request.headers.get("Origin", "(none)"))[:200]
        if origin not in self._refused and len(self._refused) < REFUSALS_LOGGED:
            self._refused.add(origin)
            self.say(f"refused a websocket ({why}; Origin {origin})")
        return web.HTTPForbidden(text=f"spectui serve: {why}\n")

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        if not token_matches(request.match_info.get("token"), self.token):
            raise self._refuse(request, "no token, or not this run's")
        if not origin_allowed(request.headers.get("Origin"), self.origins):
            raise self._refuse(request, "not from this server's own page")
        if self.stopping:
            raise web.HTTPServiceUnavailable(text="spectui serve: stopping\n")
        width, height = terminal_size(request.query.get("width"), request.query.get("height"))
        ws = web.WebSocketResponse(heartbeat=15, timeout=CLOSE_S, max_msg_size=MAX_MESSAGE)
        await ws.prepare(request)
        self.sockets.add(ws)
        try:
            if self.active() >= self.max_sessions:
                await self._full(ws)
            else:
                await self._session(ws, width, height)
        except (ConnectionError, RuntimeError) as exc:  # the browser went while a message was on its way
            self.say(f"a session's websocket broke: {exc}")
        finally:
            self.sockets.discard(ws)
            if not ws.closed:
                await ws.close()
        return ws

    def active(self) -> int:
        """Sessions whose process is starting or running (one that ended and shows why does not count)."""
        return sum(not s.over() for s in self.sessions)

    async def _full(self, ws: web.WebSocketResponse) -> None:
        text = (f"spectui serve: {self.active()} sessions are open, the most this server takes "
                "(spectui serve --max-sessions N). Close a tab, then reload this page.")
        await ws.send_bytes(text.encode() + b"\r\n")
        async for _message in ws:  # until the tab goes (the page keeps showing why)
            pass

    async def _session(self, ws: web.WebSocketResponse, width: int, height: int) -> None:
        session = Session(self.argv, self.shown, write_bytes=ws.send_bytes, write_str=ws.send_str,
                          close=ws.close, download_manager=self.download_manager, log=self.say)
        self.sessions[session] = ws
        try:
            try:
                await session.start(width, height)
            except OSError as exc:  # no process (out of processes or file descriptors)
                self.say(f"cannot start `{self.shown}`: {exc}")
                await ws.send_bytes(f"spectui serve: cannot start `{self.shown}`: {exc}\r\n".encode())
                return
            await self._process_messages(ws, session)
        finally:
            await session.stop()
            self.sessions.pop(session, None)

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: Session) -> None:
        """textual-serve's messages from the page (stdin, resize, ping, blur, focus); anything malformed is
        dropped, a size is capped."""
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except ValueError:
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(*terminal_size(data.get("width"), data.get("height")))
            elif kind == "ping" and isinstance(data, str):
                await websocket.send_json(["pong", data[:64]])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()

    async def on_startup(self, app: web.Application) -> None:
        """(textual-serve prints its logo here; serve prints its one line once it listens.)"""

    async def on_shutdown(self, app: web.Application) -> None:
        """Every session ended, every websocket closed: within QUIT_S + TERM_S + a second."""
        self.stopping = True
        self.ended = self.active()
        going = [s.stop() for s in list(self.sessions)]
        closing = [ws.close(code=WSCloseCode.GOING_AWAY, message=b"spectui serve stopped")
                   for ws in list(self.sockets)]
        await asyncio.gather(*going, *closing, return_exceptions=True)

    def serve(self, ready: Callable[[], None] | None = None) -> int:
        """Listen until SIGINT, SIGTERM or SIGHUP; end every session; return 128 + the signal's number.
        ``ready`` is called once the socket listens. OSError: the address cannot be had."""
        return asyncio.run(self._serve(ready))

    async def _serve(self, ready: Callable[[], None] | None) -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        OneLineLog.install(self.say)

        def on_signal(signum: int) -> None:
            if self.signum is None:
                self.signum = int(signum)
            stop.set()

        for signum in STOP_SIGNALS:
            loop.add_signal_handler(signum, on_signal, signum)
        runner = web.AppRunner(await self._make_app(), handle_signals=False, access_log=None,
                               keepalive_timeout=HEADER_S, shutdown_timeout=SHUTDOWN_S)
        await runner.setup()
        try:
            await web.TCPSite(runner, self.host, self.port).start()
            if ready is not None:
                ready()
            await stop.wait()
        finally:
            await runner.cleanup()
            for signum in STOP_SIGNALS:
                loop.remove_signal_handler(signum)
        return for_signal(self.signum)
