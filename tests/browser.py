"""A real headless Chromium (Debian's package) driven over the DevTools protocol, started and stopped by
process id: load a page, wait for a condition in the page, take a PNG screenshot. ``chromium_path()`` is
None when it is not installed (the tests that need it skip, saying why). Plus just enough of a PNG reader
(8-bit RGB/RGBA, the only kind Chromium writes) to look at the screenshot's pixels."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import urllib.request
import zlib


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_http(url: str, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                r.read()
                return
        except OSError:
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(0.2)


class Chromium:
    """``with Chromium(w, h) as c: png = c.screenshot(url, until_js)``: one headless browser, by PID."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        self.width, self.height = width, height
        self.port = free_port()
        self.profile = tempfile.mkdtemp(prefix="spectui-chromium-")
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Chromium":
        exe = chromium_path()
        assert exe, "chromium is not installed"
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--enable-unsafe-swiftshader", f"--remote-debugging-port={self.port}", f"--user-data-dir={self.profile}",
             f"--window-size={self.width},{self.height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        wait_for_http(f"http://127.0.0.1:{self.port}/json/version")
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: the browser and its helpers
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        shutil.rmtree(self.profile, ignore_errors=True)

    def _page_ws(self) -> str:
        t0 = time.monotonic()
        while True:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list", timeout=5) as r:
                pages = [p for p in json.load(r) if p.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            if time.monotonic() - t0 > 20:
                raise AssertionError("chromium opened no page")
            time.sleep(0.2)

    def screenshot(self, url: str, until_js: str, timeout: float = 60.0, settle_s: float = 2.0) -> tuple[bytes, dict]:
        """Load ``url``, wait until the JavaScript expression ``until_js`` is true (then ``settle_s`` more
        seconds), return (PNG bytes, facts) where facts holds the page's title and body classes, and
        ``received``: the bytes the page's websockets received (Network.webSocketFrameReceived), in order.
        The page stays open (its websockets too) until the browser is closed."""
        return asyncio.run(self._screenshot(url, until_js, timeout, settle_s))

    async def _screenshot(self, url, until_js, timeout, settle_s):
        import aiohttp  # textual-serve's own dependency

        n = 0
        received = bytearray()

        def frame(msg: dict) -> None:
            if msg.get("method") == "Network.webSocketFrameReceived":
                response = msg["params"]["response"]
                data = response.get("payloadData", "")
                received.extend(base64.b64decode(data) if response.get("opcode") == 2 else data.encode())

        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(self._page_ws(), max_msg_size=0) as ws:
                async def call(method: str, **params):
                    nonlocal n
                    n += 1
                    await ws.send_json({"id": n, "method": method, "params": params})
                    while True:
                        msg = json.loads((await ws.receive()).data)
                        frame(msg)
                        if msg.get("id") == n:
                            if "error" in msg:
                                raise AssertionError(f"{method}: {msg['error']}")
                            return msg["result"]

                async def js(expr: str):
                    res = await call("Runtime.evaluate", expression=expr, returnByValue=True)
                    return res["result"].get("value")

                await call("Page.enable")
                await call("Network.enable")
                await call("Page.navigate", url=url)
                t0 = time.monotonic()
                while not await js(until_js):
                    if time.monotonic() - t0 > timeout:
                        raise AssertionError(f"the page never made {until_js!r} true")
                    await asyncio.sleep(0.25)
                await asyncio.sleep(settle_s)
                facts = {"title": await js("document.title"), "body_class": await js("document.body.className")}
                shot = await call("Page.captureScreenshot", format="png")
                facts["received"] = bytes(received)
                return base64.b64decode(shot["data"]), facts


def read_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes) of an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        rgb = bytes(line) if bpp == 3 else bytes(v for i, v in enumerate(line) if i % 4 != 3)
        rows.append(rgb)
    return width, height, rows
