"""`spectui serve` parses like every other command (issue 33, item 4): serve's own options before or after
the command, each once; then `spectui COMMAND ...` is parsed by spectui's own click commands (without
running it), so a repeated option, an unknown option (`serve demo --bogus`, `serve --act 2 demo`) or a bad
value (`serve demo --act 9`) is refused in one line, exit 2, before anything listens (in the test's process
in the fast lane, as its own process in the full suite: tests/in_process.py). A real server (by
PID) on 127.0.0.1 and, where chromium is installed, a real browser showing each of the demo's three acts,
SIGTERM / SIGINT with the tab still open (serve ends within 2 s, 143 / 130, no traceback, no process left),
and the page showing the command's own error when it cannot start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from browser import Chromium, chromium_path, read_png  # noqa: E402
from in_process import spectui_in_process  # noqa: E402
from serve_probe import Serve, gone, no_traceback  # noqa: E402

from spectui.commands.serve import own_options  # noqa: E402
from spectui.contract.errors import SpectuiError  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
needs_chromium = pytest.mark.skipif(chromium_path() is None,
                                    reason="chromium is not installed (scripts/install.sh --test)")


def test_own_options_after_the_command_are_serves():
    assert own_options(("demo", "--port", "8001")) == ({"--port": "8001"}, ("demo",))
    assert own_options(("demo", "--act", "3", "--port=9", "--host", "::")) == (
        {"--port": "9", "--host": "::"}, ("demo", "--act", "3"))
    assert own_options(("race", "a.jsonl", "b.jsonl", "--title", "t")) == ({"--title": "t"}, ("race", "a.jsonl",
                                                                                              "b.jsonl"))
    assert own_options(("cast", "t.jsonl", "--title", "x")) == ({}, ("cast", "t.jsonl", "--title", "x"))  # cast's own
    assert own_options(("demo", "--", "--port", "1")) == ({}, ("demo", "--", "--port", "1"))
    assert own_options(("demo", "--max-sessions", "2")) == ({"--max-sessions": "2"}, ("demo",))
    assert own_options(("demo",)) == ({}, ("demo",))
    with pytest.raises(SpectuiError, match="--port needs a value"):
        own_options(("demo", "--port"))
    with pytest.raises(SpectuiError, match="given twice"):
        own_options(("demo", "--port", "1", "--port", "2"))


def _refused(*args: str) -> str:
    """Run `spectui serve ARGS` on a free port: it must exit 2 with one line, having listened on nothing."""
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "spectui", "serve", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO)
    listened = False
    while proc.poll() is None and time.monotonic() - t0 < 60:
        try:
            listened |= any(c.status == psutil.CONN_LISTEN for c in psutil.Process(proc.pid).net_connections())
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, (args, err)
    assert not listened and "serving" not in err, (args, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spectui: error: "), (args, err)
    return lines[0]


def _listening() -> set:
    return {c.laddr for c in psutil.Process().net_connections() if c.status == psutil.CONN_LISTEN}


def _refused_in_process(*args: str) -> str:
    """``_refused`` with `spectui serve ARGS` run in this process (tests/in_process.py): exit 2 with one line,
    having listened on nothing, that is no listening socket of this process's that was not there before, looked
    for every 20 ms while the command runs. One that listens is sent SIGTERM (serve's own stop, after which it
    ends this process: the worker's crash names the test) rather than left serving."""
    before = _listening()
    new: set = set()
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.02):
            new.update(_listening() - before)
            if new:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        r = spectui_in_process("serve", *args)
    finally:
        done.set()
        watcher.join()
    new.update(_listening() - before)
    err = r.stderr
    assert r.returncode == 2, (args, err)
    assert not new and "serving" not in err, (args, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("spectui: error: "), (args, err)
    return lines[0]


@pytest.fixture(params=["in_process", pytest.param("process", marks=pytest.mark.slow)])
def refused(request):
    """``_refused`` in this process (the fast lane) or as its own process (the full suite)."""
    return _refused_in_process if request.param == "in_process" else _refused


@pytest.mark.parametrize("args,says", [
    (["--port", "8001", "--port", "8002", "demo"], "--port is given twice"),  # click's last-wins, refused
    (["demo", "--port", "8001", "--port", "8002"], "--port is given twice"),
    (["--title", "a", "demo", "--title", "b"], "--title is given twice"),
    (["demo", "--bogus"], "spectui demo: no such option '--bogus'"),
    (["--act", "2", "demo"], "--act is an option of neither serve nor spectui itself"),
    (["demo", "--act", "9"], "invalid value for '--act': 9 is not in the range"),
    (["demo", "--speed"], "option '--speed' requires an argument"),
    (["nosuch"], "no such command 'nosuch'"),
    (["serve"], "not itself"),
    (["demo", "--port", "x"], "--port takes a number"),
    (["--max-sessions", "0", "demo"], "--max-sessions takes a number from 1 to 64"),
    (["--host", "", "demo"], "--host is empty"),
])
def test_serve_refuses_what_the_command_would_in_one_line_before_listening(args, says, refused):
    line = refused(*args)
    assert says in line, line


def test_serve_demo_port_n_serves_on_n_and_prints_a_url_with_a_token():
    with Serve("demo", "--act", "2") as srv:  # --port before the command (Serve's own)
        listening = [c.laddr for c in psutil.Process(srv.proc.pid).net_connections()
                     if c.status == psutil.CONN_LISTEN]
        assert [(a.ip, a.port) for a in listening] == [("127.0.0.1", srv.port)], listening
        assert srv.url == f"http://127.0.0.1:{srv.port}/?token={srv.token}" and len(srv.token) >= 32
    assert "serving `spectui demo --act 2`" in srv.stderr()
    with Serve("demo", port_after=True) as srv2:  # after the command: still serve's
        assert srv2.args[-3:] == ["demo", "--port", str(srv2.port)] and f":{srv2.port}/?token=" in srv2.url


def _page_until_first_byte(browser, url, settle_s=2.0):
    return browser.screenshot(url, "document.body.classList.contains('-first-byte')", settle_s=settle_s)


@needs_chromium
@pytest.mark.parametrize("act", [1, 2, 3])
@pytest.mark.slow  # a real Chromium
def test_a_browser_gets_each_act_of_the_demo(act):
    with Serve("demo", "--act", str(act), "--speed", "max") as srv:
        with Chromium(1280, 800) as browser:
            png, facts = _page_until_first_byte(browser, srv.url, settle_s=3.0)
        assert "-first-byte" in facts["body_class"] and len(png) > 10_000
        time.sleep(2.0)  # the tab is gone: its session's app ends
        assert gone(srv.children(), 5.0) == []
        rc, _wall = srv.stop(signal.SIGTERM)
    assert rc == 143, srv.stderr()
    assert no_traceback(srv.stderr()), srv.stderr()[-3000:]


@needs_chromium
@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["SIGTERM", "SIGINT"])
@pytest.mark.slow  # a real Chromium
def test_a_signal_with_a_tab_open_ends_serve_within_2_s(sig, status):
    """The tab stays open (its websocket and its session's process) when the signal comes."""
    with Serve("demo", "--act", "1") as srv:
        with Chromium(1280, 800) as browser:
            _png, facts = _page_until_first_byte(browser, srv.url)
            assert "-first-byte" in facts["body_class"]
            sessions = srv.children()
            assert len(sessions) == 1, sessions  # one process a tab (no shell between)
            rc, wall = srv.stop(sig)
            print(f"serve with a tab open: {sig.name} -> exit {rc} in {wall:.2f} s")
            assert gone(sessions, 0.5) == []
    assert rc == status and wall < 2.0, (rc, wall, srv.stderr())
    assert no_traceback(srv.stderr()), srv.stderr()[-3000:]
    assert f"serve stopped by {sig.name}; 1 session ended" in srv.stderr()


@needs_chromium
@pytest.mark.slow  # a real Chromium
def test_the_page_shows_the_commands_error_when_the_face_cannot_start(tmp_path):
    """`spectui replay missing.jsonl` exits 2 before drawing: the page shows its one line (it was a blank
    card), and serve's log names it once."""
    with Serve("replay", "missing.jsonl", cwd=tmp_path) as srv:
        with Chromium(1000, 600) as browser:
            png, facts = _page_until_first_byte(browser, srv.url, settle_s=1.0)
        rc, _wall = srv.stop(signal.SIGTERM)
    shown = facts["received"].decode("utf-8", "replace")
    assert "`spectui replay missing.jsonl` drew no screen (exit status 2)" in shown, shown
    assert "spectui: error:" in shown and "missing.jsonl" in shown
    assert "-closed" not in facts["body_class"]  # the message stays on the page (no "Session ended" card)
    width, height, rows = read_png(png)
    lit = sum(1 for row in rows[: height // 4] for i in range(0, len(row), 3) if sum(row[i:i + 3]) > 400)
    assert lit > 200, lit  # the text is drawn in the terminal's top rows
    assert rc == 143 and no_traceback(srv.stderr())
    assert "drew no screen (exit status 2)" in srv.stderr()


def test_a_session_that_cannot_start_tells_its_page_without_a_browser(tmp_path):
    """The same through a raw websocket (no chromium needed): the text arrives, the socket stays open."""
    import asyncio

    import aiohttp
    from serve_probe import client, read_for

    (tmp_path / "junk.jsonl").write_text("not a trace\n")

    async def go(srv):
        async with aiohttp.ClientSession() as http:
            _s, ws = await client(srv, session=http)
            said = await read_for(ws, 60.0, until=b"Reload the page")
            return said, ws.closed

    with Serve("replay", "junk.jsonl", cwd=tmp_path) as srv:
        said, closed = asyncio.run(go(srv))
        rc, wall = srv.stop(signal.SIGTERM)
    text = said.decode("utf-8", "replace")
    assert "`spectui replay junk.jsonl` drew no screen (exit status 2)" in text and "spectui: error:" in text, text
    assert "\x1b]" not in text.split("drew no screen", 1)[1]  # the process's output is escaped in the page
    assert not closed and rc == 143 and wall < 2.0 and no_traceback(srv.stderr())
