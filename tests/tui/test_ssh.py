"""SSH is a tested path: a private sshd on 127.0.0.1 (tests/sshd.py: OpenSSH, keys and config in a temporary
folder, stopped by PID) and the real client in a real pty (tests/pty_term.py).

`ssh -tt ... spectui demo` draws the full screen (the alternate screen, the demo's first note), redraws at the
new size when the client's terminal is resized, and q ends it with 0 (ssh returns the remote status); a
killed client (a dropped link) leaves no spectui behind on the server within 5 s; without a tty (`ssh host
spectui demo`) it refuses in one line with 2 instead of drawing into a pipe and waiting for a q that cannot
come.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import sshd as sshd_mod  # noqa: E402
from pty_term import ANSI, PtyProcess  # noqa: E402

from spectui.contract.exitcodes import USAGE  # noqa: E402
from spectui.tui.shared.terminal import NEEDS_TERMINAL  # noqa: E402

pytestmark = pytest.mark.skipif(not sshd_mod.available(), reason="OpenSSH is not installed (apt-get install "
                                "openssh-server openssh-client; scripts/install.sh --test installs them)")
CUP = re.compile(r"\x1b\[(\d+);(\d+)H")  # a cursor move: row;column


@pytest.fixture(scope="module")
def server():
    d = sshd_mod.Sshd().start()
    yield d
    d.stop()


def remote_spectui(mark: str) -> list[psutil.Process]:
    """The server's spectui processes started with MARK in their environment."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if "spectui" in " ".join(p.info["cmdline"] or ()) and p.environ().get("SPECTUI_SSH_TEST") == mark:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def rows_cols(raw: str) -> tuple[int, int]:
    moves = [(int(r), int(c)) for r, c in CUP.findall(raw)]
    assert moves, "no cursor moves"
    return max(r for r, _ in moves), max(c for _, c in moves)


@pytest.mark.slow  # a demo over a real sshd
def test_ssh_tt_demo_full_screen_resize_and_q(server):
    mark = uuid.uuid4().hex
    p = PtyProcess(None, cols=120, rows=36,
                   argv=server.ssh_argv(server.remote("demo", env={"SPECTUI_SSH_TEST": mark})))
    try:
        p.wait_for("spectui demo: a recording", 60)
        assert "\x1b[?1049h" in p.raw()  # the alternate screen: the full-screen app
        time.sleep(2.0)
        rows, cols = rows_cols(p.raw())
        assert rows == 36 and 100 < cols <= 120, (rows, cols)  # drawn at the client's size
        assert len(remote_spectui(mark)) == 1
        seen = len(p.raw())
        p.resize(80, 24)
        time.sleep(3.0)
        rows, cols = rows_cols(p.raw()[seen:])
        assert rows <= 24 and cols <= 80 and rows >= 20, (rows, cols)  # redrawn at the new size
        assert "accepted" in ANSI.sub("", p.raw()[seen:])  # the screen itself, not only a blank
        p.send("q")
        assert p.wait(30) == 0
    finally:
        p.close()
    deadline = time.monotonic() + 5
    while remote_spectui(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert remote_spectui(mark) == []


@pytest.mark.slow  # a demo over a real sshd
def test_a_killed_client_leaves_no_spectui_on_the_server(server):
    mark = uuid.uuid4().hex
    p = PtyProcess(None, cols=120, rows=36,
                   argv=server.ssh_argv(server.remote("demo --speed 8", env={"SPECTUI_SSH_TEST": mark})))
    try:
        p.wait_for("spectui demo: a recording", 60)
        (app,) = remote_spectui(mark)
        p.proc.send_signal(signal.SIGKILL)  # the link drops: no goodbye from the client
        p.proc.wait(10)
        t0 = time.monotonic()
        gone, alive = psutil.wait_procs([app], timeout=5)
        assert not alive, "the remote spectui is still running 5 s after its client died"
        assert time.monotonic() - t0 < 5
    finally:
        p.close()
        for proc in remote_spectui(mark):
            proc.kill()


def test_ssh_without_a_tty_refuses_in_one_line(server):
    r = subprocess.run(server.ssh_argv(server.remote("demo"), tty=False), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == USAGE
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [f"spectui: error: spectui demo {NEEDS_TERMINAL} (stdin is not a terminal)"], r.stderr
    assert r.stdout == ""
