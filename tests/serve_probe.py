"""A real ``spectui serve`` for the tests and benchmarks/serve_hostile.py: started by process id on a free
127.0.0.1 port, its printed URL (the token) read from its stderr, stopped by process id with the signal a
test names; raw websocket clients (aiohttp, textual-serve's own dependency) that send what a browser would,
or what a hostile page would; and a sampler of the peak memory of serve and everything it started.

    with Serve("demo", "--act", "1") as srv:
        ws = await client(srv, width=80, height=24)        # a session (the page's Origin, the token)
        rc, wall_s = srv.stop(signal.SIGTERM)
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
from browser import free_port

REPO = Path(__file__).resolve().parent.parent
URL_RE = re.compile(r"on (http://\S+/\?token=(\S+))")


class Serve:
    """``spectui serve --port P ARGS`` as a child process (by PID), the URL it printed in ``url``."""

    def __init__(self, *args: str, serve_args=(), env=None, cwd=None, timeout: float = 60.0,
                 port_after: bool = False) -> None:
        """``port_after``: ``--port P`` after the command (``spectui serve demo --port P``), not before."""
        self.port = free_port()
        port = ["--port", str(self.port)]
        self.args = [sys.executable, "-m", "spectui", "serve", *([] if port_after else port), *serve_args, *args,
                     *(port if port_after else [])]
        self.env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
        self.env.pop("NO_COLOR", None)
        self.cwd = cwd or REPO
        self.timeout = timeout
        self.proc: subprocess.Popen | None = None
        self.lines: list[str] = []
        self.url = self.token = ""
        self.peak = Peak()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return self.base

    def ws_url(self, token: str | None = None, query: str = "width=80&height=24") -> str:
        path = f"ws://127.0.0.1:{self.port}/ws/{self.token if token is None else token}"
        return path + (f"?{query}" if query else "")

    def __enter__(self) -> "Serve":
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=self.env, cwd=self.cwd)
        ready = threading.Event()

        def read() -> None:
            for line in self.proc.stderr:
                self.lines.append(line)
                m = URL_RE.search(line)
                if m and not self.url:
                    self.url, self.token = m.group(1), m.group(2)
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()
        if not ready.wait(self.timeout) or not self.url:
            self.kill()
            raise AssertionError(f"spectui serve printed no URL: {self.stderr()!r}")
        self.peak.watch(self.proc.pid)
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.stop(signal.SIGTERM)
        self.kill()

    def stderr(self) -> str:
        return "".join(self.lines)

    def children(self) -> list[psutil.Process]:
        try:
            return [p for p in psutil.Process(self.proc.pid).children(recursive=True) if _alive(p)]
        except psutil.NoSuchProcess:
            return []

    def stop(self, signum: int = signal.SIGTERM, limit_s: float = 20.0) -> tuple[int, float]:
        """Send ``signum``; (exit status, seconds until it exited). Its children are checked by the caller
        (``gone``): they were taken before the signal."""
        self.started = self.children()
        t0 = time.monotonic()
        self.proc.send_signal(signum)
        try:
            rc = self.proc.wait(limit_s)
        except subprocess.TimeoutExpired:
            rc = None
        wall = time.monotonic() - t0
        self.peak.stop()
        time.sleep(0.2)  # the reader thread takes serve's last lines
        return rc, wall

    def kill(self) -> None:
        """What a failed test leaves: serve and its children, by PID."""
        procs = self.children()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for p in procs:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass
        self.peak.stop()


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def gone(procs, within_s: float) -> list[int]:
    """The PIDs among ``procs`` still alive after ``within_s`` seconds (empty: all gone)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        alive = [p.pid for p in procs if _alive(p)]
        if not alive:
            return []
        time.sleep(0.05)
    return [p.pid for p in procs if _alive(p)]


class Peak:
    """Samples every 0.1 s the resident memory of a process and its descendants: ``total_mb`` the peak of
    their sum, ``child_mb`` the peak of the largest child, ``children`` the most alive at once."""

    def __init__(self) -> None:
        self.total_mb = self.child_mb = 0.0
        self.children = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, pid: int) -> None:
        def run() -> None:
            try:
                root = psutil.Process(pid)
            except psutil.NoSuchProcess:
                return
            while not self._stop.is_set():
                try:
                    kids = [p for p in root.children(recursive=True) if _alive(p)]
                    rss = [p.memory_info().rss for p in kids]
                    total = root.memory_info().rss + sum(rss)
                except psutil.Error:
                    kids, rss, total = [], [], 0
                self.total_mb = max(self.total_mb, total / 2**20)
                self.child_mb = max([self.child_mb, *(r / 2**20 for r in rss)])
                self.children = max(self.children, len(kids))
                self._stop.wait(0.1)

        self._thread = threading.Thread(target=run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)


async def client(srv: Serve, *, token: str | None = None, origin: str | None = "", query="width=80&height=24",
                 session=None):
    """One websocket as the page opens it (``origin=""``: the page's own; None: no Origin header). Returns
    (aiohttp session, websocket); a refused upgrade raises aiohttp.WSServerHandshakeError (its ``status``)."""
    import aiohttp

    own = session is None
    session = session or aiohttp.ClientSession()
    headers = {} if origin is None else {"Origin": origin or srv.origin}
    try:
        ws = await session.ws_connect(srv.ws_url(token, query), headers=headers, max_msg_size=0)
    except BaseException:
        if own:
            await session.close()
        raise
    return session, ws


async def read_for(ws, seconds: float, until: bytes = b"") -> bytes:
    """What the websocket brings in ``seconds`` (binary frames: the screen), until it closes (or, given
    ``until``, until those bytes have come)."""
    import aiohttp

    got = bytearray()
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        try:
            msg = await asyncio.wait_for(ws.receive(), left)
        except asyncio.TimeoutError:
            break
        if msg.type == aiohttp.WSMsgType.BINARY:
            got += msg.data
            if until and until in got:
                break
        elif msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
            break
    return bytes(got)


def no_traceback(text: str) -> bool:
    return "Traceback" not in text and "Event loop is closed" not in text and "Exception ignored" not in text


__all__ = ["Peak", "Serve", "client", "gone", "no_traceback", "read_for", "signal"]
