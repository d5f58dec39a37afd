"""`spectui serve` takes its own options wherever they stand: `spectui serve demo --port N` serves on N (it
used to serve `spectui demo --port N` on 8000, a blank page); an option given twice is refused in one line
with the right form. A real server (by PID) on 127.0.0.1 and, where chromium is installed, a real browser
showing each of the demo's three acts (the session's app has a screen: textual-serve's web driver), with no
traceback in the server's log when the tab closes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from browser import Chromium, chromium_path, free_port, stop_server, wait_for_http  # noqa: E402

from spectui.contract.errors import SpectuiError  # noqa: E402
from spectui.commands.serve import own_options  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent


def test_own_options_after_the_command_are_serves():
    assert own_options(("demo", "--port", "8001")) == ({"--port": "8001"}, ("demo",))
    assert own_options(("demo", "--act", "3", "--port=9", "--host", "::")) == (
        {"--port": "9", "--host": "::"}, ("demo", "--act", "3"))
    assert own_options(("race", "a.jsonl", "b.jsonl", "--title", "t")) == ({"--title": "t"}, ("race", "a.jsonl",
                                                                                              "b.jsonl"))
    assert own_options(("cast", "t.jsonl", "--title", "x")) == ({}, ("cast", "t.jsonl", "--title", "x"))  # cast's own
    assert own_options(("demo", "--", "--port", "1")) == ({}, ("demo", "--", "--port", "1"))
    assert own_options(("demo",)) == ({}, ("demo",))
    with pytest.raises(SpectuiError, match="--port needs a value"):
        own_options(("demo", "--port"))
    with pytest.raises(SpectuiError, match="given twice"):
        own_options(("demo", "--port", "1", "--port", "2"))


def _serve(*args):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("NO_COLOR", None)
    return subprocess.Popen([sys.executable, "-m", "spectui", "serve", *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def _stop(proc: subprocess.Popen) -> tuple[int, str]:
    rc = stop_server(proc)
    _out, err = proc.communicate(timeout=10)
    return rc, err


def test_serve_demo_port_n_serves_on_n():
    port = free_port()
    server = _serve("demo", "--act", "2", "--port", port)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/")
        listening = [c.laddr.port for c in psutil.Process(server.pid).net_connections()
                     if c.status == psutil.CONN_LISTEN]
        assert listening == [port], listening
    finally:
        rc, err = _stop(server)
    assert rc in (0, -signal.SIGTERM), err
    assert "serving `spectui demo --act 2`" in err and f":{port}" in err


def test_serve_refuses_an_option_given_twice_in_one_line():
    r = subprocess.run([sys.executable, "-m", "spectui", "serve", "--port", "8001", "demo", "--port", "8002"],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--port is given twice" in lines[0] and "spectui serve --port VALUE COMMAND" in lines[0]
    r = subprocess.run([sys.executable, "-m", "spectui", "serve", "demo", "--port", "x"], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert r.returncode == 2 and "--port takes a number" in r.stderr


@pytest.mark.skipif(chromium_path() is None, reason="chromium is not installed (scripts/install.sh --test)")
@pytest.mark.parametrize("act", [1, 2, 3])
def test_a_browser_gets_each_act_of_the_demo(act):
    port = free_port()
    server = _serve("demo", "--act", act, "--speed", "max", "--port", port)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/")
        with Chromium(1280, 800) as browser:
            png, facts = browser.screenshot(f"http://127.0.0.1:{port}/",
                                            "document.body.classList.contains('-first-byte')", settle_s=3.0)
        assert "-first-byte" in facts["body_class"] and len(png) > 10_000
        time.sleep(2.0)  # the tab is gone: its session's app ends
    finally:
        rc, err = _stop(server)
    assert rc in (0, -signal.SIGTERM), err
    assert "Traceback" not in err and "AttributeError" not in err, err[-3000:]
