"""The hostile-input report's `spectui serve` rows (../shared/reports/bad-input-2026-12-02.md: SV06, SV07,
SV09 and the 17 held probes), each a function that runs it against a real ``spectui serve demo`` (by PID,
tests/serve_probe.py) and returns an ``Outcome``: what happened, the wall time, and the peak resident memory
of serve with everything it started. tests/hostile/test_round2_serve.py asserts on them;
benchmarks/serve_hostile.py prints them as a table.

A session is a websocket opened as the page opens it: ``/ws/TOKEN?width=W&height=H`` with the page's own
Origin. The hostile ones leave out the token, send another Origin, ask for 20000 x 20000 cells, open more
sessions than the cap, send malformed messages or a frame claiming 2^63-1 bytes, kill a session's process
or serve itself.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import os
import signal
import socket
import struct
import time

import aiohttp
from serve_probe import Serve, client, gone, no_traceback, read_for

DEMO = ("demo", "--act", "1")
CHILD_MB_CAP = 400.0  # a demo at the size cap (500 x 200) stays near 50-100 MB; uncapped it passed 3.6 GB


@dataclasses.dataclass
class Outcome:
    case: str
    held: bool
    wall_s: float = 0.0
    total_mb: float = 0.0  # peak resident memory of serve plus its children, summed
    child_mb: float = 0.0  # peak of the largest child
    children: int = 0  # most children alive at once
    notes: list[str] = dataclasses.field(default_factory=list)

    def check(self, ok: bool, what: str) -> None:
        self.notes.append(("ok: " if ok else "FAILED: ") + what)
        self.held = self.held and bool(ok)


def _finish(out: Outcome, srv: Serve, t0: float, sig: int | None = signal.SIGTERM) -> Outcome:
    if sig is not None and srv.proc.poll() is None:
        rc, wall = srv.stop(sig)
        out.check(rc == 143 and wall < 2.0, f"SIGTERM ends serve: exit {rc} in {wall:.2f} s")
    out.check(no_traceback(srv.stderr()), "no traceback in serve's log")
    out.wall_s = time.monotonic() - t0
    out.total_mb, out.child_mb, out.children = srv.peak.total_mb, srv.peak.child_mb, srv.peak.children
    return out


async def oversize() -> Outcome:
    """SV07: one websocket asking for 20000 x 20000 cells (and a resize to the same): capped at 500 x 200,
    bounded memory, and the process ends with its socket. The report's bare `GET /ws?...` finds no route."""
    out, t0 = Outcome("SV07 oversize terminal", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{srv.base}/ws?width=20000&height=20000",
                                headers={"Origin": "http://evil.example"}) as r:
                out.check(r.status == 404 and not srv.children(), f"the report's request: HTTP {r.status}, no process")
            _s, ws = await client(srv, query="width=20000&height=20000", session=http)
            got = await read_for(ws, 4.0)
            await ws.send_json(["resize", {"width": 20000, "height": 20000}])
            got += await read_for(ws, 4.0)
            kids = srv.children()
            env = kids[0].environ() if kids else {}
            out.check(len(kids) == 1 and (env.get("COLUMNS"), env.get("ROWS")) == ("500", "200"),
                      f"the session runs at {env.get('COLUMNS')} x {env.get('ROWS')}")
            out.check(len(got) > 1000, f"the screen arrives ({len(got)} bytes)")
            out.check(srv.peak.child_mb < CHILD_MB_CAP, f"child peak {srv.peak.child_mb:.0f} MB < {CHILD_MB_CAP:.0f}")
            t1 = time.monotonic()
            await ws.close()
            left = gone(kids, 2.5)
            out.check(not left, f"the process ends with its socket ({time.monotonic() - t1:.2f} s)")
        return _finish(out, srv, t0)


async def foreign_origin() -> Outcome:
    """SV06: 8 websockets from another Origin (with the token), 8 with none, 8 from the page's Origin without
    the token or with another run's: all refused before any process starts."""
    out, t0 = Outcome("SV06 foreign Origin / no token", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            tries = ([dict(origin="http://evil.example")] * 8 + [dict(origin=None)] * 8
                     + [dict(origin="null")] * 2 + [dict(origin=f"http://127.0.0.1:{srv.port + 1}")] * 2
                     + [dict(token="x" * 32)] * 4 + [dict(token="")] * 4)
            statuses = []
            for kw in tries:
                try:
                    _s, ws = await client(srv, session=http, **kw)
                    statuses.append(101)
                    await ws.close()
                except aiohttp.WSServerHandshakeError as exc:
                    statuses.append(exc.status)
            out.check(all(s in (403, 404) for s in statuses), f"{len(tries)} refused: HTTP {sorted(set(statuses))}")
            out.check(srv.peak.children == 0 and not srv.children(), "no process started")
            async with http.get(f"{srv.base}/") as r:
                out.check(r.status == 403, f"the page without the token: HTTP {r.status}")
            async with http.get(f"{srv.base}/?token={srv.token}") as r:
                page = await r.text()
                out.check(r.status == 200 and f"/ws/{srv.token}" in page
                          and r.headers.get("Referrer-Policy") == "no-referrer",
                          "the page with the token names its websocket, no referrer")
        return _finish(out, srv, t0)


async def many_sessions() -> Outcome:
    """8 sessions from the page itself: 4 processes (the cap), the other 4 told why in the page; all end
    with their sockets."""
    out, t0 = Outcome("sessions over the cap (8 tabs, cap 4)", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            sockets = [(await client(srv, session=http))[1] for _ in range(8)]
            screens = await asyncio.gather(*(read_for(ws, 5.0) for ws in sockets))
            told = sum(b"sessions are open" in s for s in screens)
            kids = srv.children()
            out.check(len(kids) == 4 and srv.peak.children <= 4, f"{len(kids)} processes (most {srv.peak.children})")
            out.check(told == 4, f"{told} tabs told the cap in the page")
            await asyncio.gather(*(ws.close() for ws in sockets))
            out.check(not gone(kids, 2.5), "every process ends with its socket")
        return _finish(out, srv, t0)


async def killed_session() -> Outcome:
    """SV09: a session's process is SIGKILLed; the page says so; then SIGTERM to serve: 143 within 2 s, no
    "Event loop is closed" traceback."""
    out, t0 = Outcome("SV09 a session SIGKILLed, then SIGTERM", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            _s, ws = await client(srv, session=http)
            _s, ws2 = await client(srv, session=http)
            await read_for(ws, 3.0)
            kids = srv.children()
            out.check(len(kids) == 2, f"{len(kids)} sessions")
            os.kill(kids[0].pid, signal.SIGKILL)
            said = (await read_for(ws, 3.0)) + (await read_for(ws2, 0.5))
            out.check(b"killed by SIGKILL" in said, "the page of the killed session says so")
        return _finish(out, srv, t0)


async def serve_killed() -> Outcome:
    """serve itself SIGKILLed (nothing of it runs): its sessions' processes still end (the kernel's
    parent-death signal), within 3 s."""
    out, t0 = Outcome("serve SIGKILLed with 2 sessions", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            sockets = [(await client(srv, session=http))[1] for _ in range(2)]
            await asyncio.gather(*(read_for(ws, 3.0) for ws in sockets))
            kids = srv.children()
            srv.proc.kill()
            srv.proc.wait(10)
            left = gone(kids, 3.0)
            out.check(len(kids) == 2 and not left, f"{len(kids)} processes, left alive: {left}")
        return _finish(out, srv, t0, sig=None)


async def malformed() -> Outcome:
    """Messages no page sends: binary, not JSON, wrong shapes and types, a 2 MB message. Dropped (the last
    closes its socket, 1009), no traceback, the session keeps answering."""
    out, t0 = Outcome("malformed messages", True), time.monotonic()
    with Serve(*DEMO) as srv:
        async with aiohttp.ClientSession() as http:
            _s, ws = await client(srv, session=http)
            await read_for(ws, 2.0)
            await ws.send_bytes(b"\x00\xff" * 10)
            for text in ("not json", "[]", "{}", "null", '["resize", "x"]',
                         '["resize", {"width": "1e9", "height": -5}]', '["resize", {"width": true, "height": 1e400}]',
                         '["stdin", 5]', '["stdin", "\\ud800"]',
                         '["ping", {"a": 1}]', '[["nested"]]', '["focus"]', '["blur"]', '["quit"]'):
                await ws.send_str(text)
            await ws.send_json(["ping", "12345"])
            pong = None
            deadline = time.monotonic() + 5
            while pong is None and time.monotonic() < deadline:
                msg = await ws.receive(timeout=5)
                if msg.type == aiohttp.WSMsgType.TEXT and "pong" in msg.data:
                    pong = msg.data
                elif msg.type != aiohttp.WSMsgType.BINARY:
                    break
            out.check(pong == '["pong", "12345"]', f"still answers: {pong!r}")
            out.check(len(srv.children()) == 1, "the session's process is alive")
            _s, big = await client(srv, session=http)
            await big.send_str("x" * (2 * 1024 * 1024))
            msg = await big.receive(timeout=5)
            out.check(msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR),
                      f"a 2 MB message closes its socket ({msg.type.name} {big.close_code})")
            await ws.close()
        return _finish(out, srv, t0)


async def _raw(port: int, request: bytes, timeout: float = 5.0) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(request)
        await writer.drain()
        return await asyncio.wait_for(reader.read(65536), timeout)
    except (ConnectionError, asyncio.TimeoutError):
        return b""
    finally:
        writer.close()


def _status(response: bytes) -> int:
    try:
        return int(response.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0  # reset, or not HTTP


async def held_http() -> Outcome:
    """The report's held probes, again: traversal paths, the static folder's listing (now none), ESC in the
    query string, a 1 MB header, a name with HTML in the page's title."""
    out, t0 = Outcome("held: traversal, listing, ESC, 1 MB header, HTML", True), time.monotonic()
    with Serve("replay", "<img src=x onerror=alert(1)>.jsonl") as srv:
        paths = ["/static/../../etc/passwd", "/static/%2e%2e/%2e%2e/etc/passwd", "/static/..%2f..%2fetc%2fpasswd",
                 "/static/%252e%252e/%252e%252e/etc/passwd", "//etc/passwd", "/download/..%2f..%2fetc%2fpasswd",
                 "/static/....//....//etc/passwd", "/ws/../../etc/passwd", "/static/js/../../../../etc/passwd",
                 "/static/%2e%2e%5c%2e%2e%5cetc%5cpasswd", "/%2e%2e/%2e%2e/etc/passwd", "/static//etc/passwd"]
        statuses = []
        for path in paths:
            got = await _raw(srv.port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode())
            statuses.append(_status(got))
            out.check(b"root:" not in got, f"{path}: HTTP {_status(got)}, no /etc/passwd")
        out.check(all(s in (400, 403, 404) for s in statuses), f"traversals answered {sorted(set(statuses))}")
        listing = await _raw(srv.port, b"GET /static/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        out.check(_status(listing) in (403, 404) and b"textual.js" not in listing,
                  f"/static/ lists nothing: HTTP {_status(listing)}")
        esc = await _raw(srv.port, f"GET /?token={srv.token}&x=\x1b[2J HTTP/1.1\r\nHost: h\r\n\r\n".encode())
        out.check(_status(esc) in (0, 400), f"ESC in the query string: HTTP {_status(esc)}")
        big = await _raw(srv.port, b"GET / HTTP/1.1\r\nHost: h\r\nX-Big: " + b"a" * 1024 * 1024 + b"\r\n\r\n")
        out.check(_status(big) in (0, 400, 431), f"a 1 MB header: HTTP {_status(big)} (0: reset)")
        async with aiohttp.ClientSession() as http:
            async with http.get(srv.url) as r:
                page = await r.text()
        out.check("<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page,
                  "the command's name is HTML-escaped in the page")
        return _finish(out, srv, t0)


async def huge_frame() -> Outcome:
    """A raw websocket frame claiming 2^63-1 bytes: the socket is closed, its process ends, serve answers."""
    out, t0 = Outcome("a frame claiming 2^63-1 bytes", True), time.monotonic()
    with Serve(*DEMO) as srv:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.port)
        key = base64.b64encode(os.urandom(16)).decode()
        writer.write((f"GET /ws/{srv.token}?width=80&height=24 HTTP/1.1\r\nHost: 127.0.0.1:{srv.port}\r\n"
                      f"Origin: {srv.origin}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                      f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        out.check(head.startswith(b"HTTP/1.1 101"), "the upgrade is accepted")
        deadline = time.monotonic() + 20
        while not srv.children() and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        kids = srv.children()
        writer.write(bytes([0x82, 0xFF]) + struct.pack(">Q", 2**63 - 1) + os.urandom(4) + b"x" * 1000)
        await writer.drain()
        try:
            while await asyncio.wait_for(reader.read(65536), 5):
                pass
            closed = True
        except (asyncio.TimeoutError, ConnectionError):
            closed = False
        writer.close()
        out.check(closed, "serve closes the socket")
        out.check(len(kids) == 1 and not gone(kids, 2.5), "its process ends")
        async with aiohttp.ClientSession() as http:
            async with http.get(srv.url) as r:
                out.check(r.status == 200, f"serve still answers: HTTP {r.status}")
        return _finish(out, srv, t0)


async def slowloris(n: int = 200) -> Outcome:
    """``n`` connections dripping a header byte a second: a normal request still answers at once, and serve
    closes every one of them after its header deadline (spectui.serve.server.HEADER_S; they were held for as
    long as they dripped)."""
    from spectui.serve.server import HEADER_S

    out, t0 = Outcome(f"slowloris ({n} dripping connections)", True), time.monotonic()
    with Serve(*DEMO) as srv:
        socks = []
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", srv.port))
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            s.setblocking(False)
            socks.append(s)
        t1 = time.monotonic()
        async with aiohttp.ClientSession() as http:
            async with http.get(srv.url) as r:
                out.check(r.status == 200 and time.monotonic() - t1 < 2.0,
                          f"a normal GET answers in {time.monotonic() - t1:.2f} s")
        open_ = list(socks)
        while open_ and time.monotonic() - t1 < HEADER_S + 5:
            still = []
            for s in open_:
                try:
                    s.send(b"X")  # one byte of a header that never ends
                    data = s.recv(1)
                    if data == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                still.append(s)
            open_ = still
            await asyncio.sleep(1.0)
        held = time.monotonic() - t1
        for s in open_:
            s.close()
        out.check(not open_, f"all {n} closed by serve after {held:.1f} s ({len(open_)} still open)")
        return _finish(out, srv, t0)


CASES = {f.__name__: f for f in (oversize, foreign_origin, many_sessions, killed_session, serve_killed, malformed,
                                 held_http, huge_frame, slowloris)}


def run(name: str) -> Outcome:
    return asyncio.run(CASES[name]())
