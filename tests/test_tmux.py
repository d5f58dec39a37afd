"""The TUI in a real terminal: an 80x24 tmux pane replaying a trace; keys, SIGTERM, terminal restored."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from spectui.tui.sample import sample_events

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parent.parent


class Pane:
    def __init__(self, command: str, socket: str, flag: Path) -> None:
        self.socket = socket
        self.flag = flag
        self.status_file = flag.with_suffix(".status")
        command = f"{command}; echo $? > {self.status_file}"
        # the command waits until remain-on-exit is set, so its exit status and last screen stay readable
        self.tmux("new-session", "-d", "-s", "t", "-x", "80", "-y", "24",
                  f"while [ ! -e {self.flag} ]; do sleep 0.05; done; {command}")
        self.tmux("set-option", "-t", "t", "remain-on-exit", "on")
        Path(self.flag).touch()

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True,
                              timeout=10).stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "t")

    def fmt(self, f: str) -> str:
        return self.tmux("display-message", "-p", "-t", "t", f).strip()

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared on the pane:\n{screen}")

    def app_pid(self) -> int:
        """The app's pid (the pane runs a shell that waits for it and writes its exit status)."""
        import psutil

        kids = psutil.Process(int(self.fmt("#{pane_pid}"))).children()
        assert kids, "the app is not running"
        return kids[0].pid

    def wait_dead(self, timeout: float = 15.0) -> int:
        """The app's exit status (written by the pane's shell: tmux does not always reap it)."""
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
def trace_file(tmp_path) -> Path:
    from spectui.trace import write_trace

    path = tmp_path / "sample.jsonl"
    write_trace(str(path), sample_events())
    return path


@pytest.fixture
def pane_factory(tmp_path):
    panes = []

    def make(args: str, module: str = "spectui.tui") -> Pane:
        cmd = f"cd {REPO} && env TERM=xterm-256color {sys.executable} -m {module} {args}"
        p = Pane(cmd, socket=f"spectui-test-{uuid.uuid4().hex[:12]}",
                 flag=tmp_path / f"go{len(panes)}")
        panes.append(p)
        return p

    yield make
    for p in panes:
        p.kill()


def test_tmux_keys_change_the_screen_and_q_restores_the_terminal(pane_factory, trace_file):
    pane = pane_factory(f"{trace_file} --speed 0.25")
    screen = pane.wait_for("REPLAY of qwen2.5-coder-1.5b")
    assert "acceptance by draft position" in screen and "tokens/s" in screen
    pane.tmux("send-keys", "-t", "t", "space")
    pane.wait_for("PAUSED")
    pane.tmux("send-keys", "-t", "t", "?")
    screen = pane.wait_for("spectui keys")
    assert "step one pass" in screen
    pane.tmux("send-keys", "-t", "t", "Escape")
    pane.wait_for("acceptance by draft position")
    assert pane.fmt("#{alternate_on}") == "1"  # full-screen while running
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.wait_dead() == 0
    assert pane.fmt("#{alternate_on}") == "0"  # the terminal is back to normal


@pytest.mark.parametrize("sig", ["TERM", "HUP"])
def test_tmux_signal_stops_cleanly(pane_factory, trace_file, sig):
    pane = pane_factory(f"{trace_file} --speed 0.25")
    pane.wait_for("REPLAY of")
    pid = pane.app_pid()
    os.kill(pid, getattr(__import__("signal"), f"SIG{sig}"))
    status = pane.wait_dead()
    assert status == 0, pane.capture()
    assert pane.fmt("#{alternate_on}") == "0"


def test_tmux_unknown_theme_is_one_line(pane_factory, trace_file):
    pane = pane_factory(f"{trace_file} --theme neon")
    assert pane.wait_dead() == 2
    lines = [line for line in pane.tmux("capture-pane", "-p", "-J", "-S", "-50", "-t", "t").splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Pane is dead")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("spectui: error: unknown theme 'neon'; available themes:")


def test_tmux_live_run_on_the_tiny_models(pane_factory, tiny_target, tiny_draft_noisy, tmp_path):
    """`spectui --target T --draft D` in a real 80x24 terminal: the live TUI, a key, q, a trace on disk."""
    rec = tmp_path / "live.jsonl"
    pane = pane_factory(f"--target {tiny_target} --draft {tiny_draft_noisy} -p 'the cat' -n 60 -k 2 -t 1 "
                        f"--record {rec}", module="spectui")
    screen = pane.wait_for("acceptance by draft position", timeout=60)
    assert "current pass" in screen
    pane.wait_for("ENDED", timeout=60)
    pane.tmux("send-keys", "-t", "t", "Up")
    screen = pane.wait_for(" k 3")
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.wait_dead() == 0
    assert pane.fmt("#{alternate_on}") == "0"
    from spectui.trace import read_trace

    events = read_trace(str(rec)).events
    assert events[0].type == "start" and events[-1].type == "end"
