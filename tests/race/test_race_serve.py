"""`spectui serve race A B`: the race in a web browser, for real. The test starts the server (textual-serve)
on 127.0.0.1 by process id, loads the page (the URL it printed, with its token) in a headless Chromium
(Debian's package) over the DevTools protocol, waits until the page has received the app's first bytes,
takes a screenshot, and checks its pixels: the race banner's colour across the top rows, the panes'
accepted-token colour in the right half (lane B, whose drafts were accepted) and none of it in lane A's half
(target alone, no drafts). The terminal is drawn on a canvas (xterm.js), so the text itself is not in the
DOM: what is checked is what the screenshot shows, plus the page's own state. Then, the tab still open, the
server gets SIGTERM (by process id): it ends within 2 s with 143, its session with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import psutil
import pytest
from browser import Chromium, chromium_path, read_png
from race_traces import write_run
from serve_probe import Serve, gone, no_traceback

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BANNER = (0xFF, 0xB4, 0x54)  # themes/dark.toml: warning (the race banner's background)
ACCEPTED = (0x5F, 0xD3, 0x8D)  # themes/dark.toml: spectui-accepted

pytestmark = [pytest.mark.skipif(chromium_path() is None,
                                 reason="chromium is not installed (apt-get install chromium; scripts/install.sh "
                                        "--test installs it)"),
              pytest.mark.slow]  # a real Chromium


def near(px, colour, tol=40) -> bool:
    return all(abs(a - b) <= tol for a, b in zip(px, colour))


def pixels(row: bytes):
    return [tuple(row[i:i + 3]) for i in range(0, len(row), 3)]


def test_a_browser_shows_the_race(tmp_path):
    a = write_run(tmp_path / "a.jsonl", per_pass=1, pass_ms=30.0)
    b = write_run(tmp_path / "b.jsonl.gz", per_pass=3, pass_ms=50.0)
    with Serve("race", a, b) as srv:
        listening = [c.laddr for c in psutil.Process(srv.proc.pid).net_connections()
                     if c.status == psutil.CONN_LISTEN]
        assert listening and all(addr.ip == "127.0.0.1" for addr in listening), listening
        with Chromium(1280, 800) as browser:
            png, facts = browser.screenshot(srv.url, "document.body.classList.contains('-first-byte')",
                                            settle_s=4.0)
            (tmp_path / "browser.png").write_bytes(png)
            assert "-first-byte" in facts["body_class"]  # the app's own output reached the page
            width, height, rows = read_png(png)
            assert width == 1280 and height > 400
            top = pixels(rows[4])  # inside the first terminal row: the race banner
            assert sum(near(p, BANNER) for p in top) > 0.4 * width, "no race banner across the top"
            body = rows[height // 8: height // 2]
            left = sum(near(p, ACCEPTED) for row in body for p in pixels(row[: 3 * width // 2]))
            right = sum(near(p, ACCEPTED) for row in body for p in pixels(row[3 * width // 2:]))
            assert right > 200 and left < right / 10, (left, right)  # B's accepted drafts, none in A's pane
            sessions = srv.children()
            rc, wall = srv.stop(signal.SIGTERM)  # the tab still open
            assert gone(sessions, 0.5) == []
    assert rc == 143 and wall < 2.0, (rc, wall, srv.stderr()[-2000:])
    assert "serving `spectui race" in srv.stderr() and no_traceback(srv.stderr())


def test_serve_refuses_itself_and_bad_ports():
    env = {**os.environ, "PYTHONPATH": REPO}
    for args, says in ((["serve", "serve"], "not itself"), (["serve", "--port", "0", "demo"], "--port")):
        r = subprocess.run([sys.executable, "-m", "spectui", *args], capture_output=True, text=True, env=env,
                           timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert says in r.stderr.strip().splitlines()[-1]
