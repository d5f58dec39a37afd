"""One tmux pane helper for the real-terminal tests (tests/tui/test_tmux.py, tests/tui/test_replay_tui.py).

``Pane`` starts a command in a detached tmux server of its own; the command waits for a start flag
until ``remain-on-exit`` is set, so its last screen stays readable, and the pane's shell writes the
command's exit status to a file (tmux does not always reap it). ``pane_factory`` builds panes and
kills their servers after the test; ``spectui_cmd`` is the command line for ``python -m MODULE ARGS``
from the repository, as a user's terminal would run it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


def spectui_cmd(args: str, module: str = "spectui") -> str:
    return f"cd {REPO} && env TERM=xterm-256color {sys.executable} -m {module} {args}"


class Pane:
    def __init__(self, command: str, tmp: Path, cols: int = 80, rows: int = 24, join: bool = False) -> None:
        self.socket = f"spectui-test-{uuid.uuid4().hex[:12]}"
        self.flag = tmp / f"{self.socket}.go"
        self.status_file = tmp / f"{self.socket}.status"
        self.join = join  # capture with -J: wrapped lines joined, trailing spaces kept
        command = f"{command}; echo $? > {self.status_file}"
        # the command waits until remain-on-exit is set, so its exit status and last screen stay readable
        self.tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows),
                  f"while [ ! -e {self.flag} ]; do sleep 0.05; done; {command}")
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")
        self.flag.touch()

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=10).stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", *(["-J"] if self.join else []), "-t", "t")

    def fmt(self, f: str) -> str:
        return self.tmux("display-message", "-p", "-t", "t", f).strip()

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared on the pane:\n{screen}")

    def settled(self, still_s: float = 1.0, timeout: float = 30.0) -> str:
        """The pane once it has not changed for ``still_s`` (the app's last paints done, however loaded the
        machine: a fixed sleep once caught a replay's final screen half drawn under the whole suite)."""
        deadline = time.monotonic() + timeout
        screen, since = self.capture(), time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.2)
            now = self.capture()
            if now != screen:
                screen, since = now, time.monotonic()
            elif time.monotonic() - since >= still_s:
                return screen
        raise AssertionError(f"the pane never held still for {still_s} s:\n{screen}")

    def app_pid(self) -> int:
        """The app's pid (the pane runs a shell that waits for it and writes its exit status)."""
        import psutil

        kids = psutil.Process(int(self.fmt("#{pane_pid}"))).children()
        assert kids, "the app is not running"
        return kids[0].pid

    def exit_status(self, timeout: float = 20.0) -> int:
        """The command's exit status, once it has exited."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status_file.exists() and self.status_file.read_text().strip():
                time.sleep(0.2)
                return int(self.status_file.read_text().strip())
            time.sleep(0.2)
        raise AssertionError("the app did not exit:\n" + self.capture())

    def kill(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def pane_factory(tmp_path):
    """``make(command, cols=80, rows=24, join=False) -> Pane``; every pane's server is killed afterwards."""
    panes: list[Pane] = []

    def make(command: str, cols: int = 80, rows: int = 24, join: bool = False) -> Pane:
        pane = Pane(command, tmp_path, cols, rows, join)
        panes.append(pane)
        return pane

    yield make
    for p in panes:
        p.kill()
