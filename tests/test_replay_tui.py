"""`spectui replay FILE` and `spectui demo` in a real terminal (a tmux pane): the replay screen, keys, quit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from spectui.trace import synthetic_run, write_trace

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
REPO = Path(__file__).resolve().parent.parent


class Pane:
    def __init__(self, args: str, tmp: Path, cols: int = 120, rows: int = 36) -> None:
        self.socket = f"spectui-replay-{uuid.uuid4().hex[:10]}"
        self.status = tmp / f"{self.socket}.status"
        cmd = f"cd {REPO} && env TERM=xterm-256color {sys.executable} -m spectui {args}; echo $? > {self.status}"
        self.tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows), cmd)

    def tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10).stdout

    def capture(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-t", "t")  # -J: wrapped lines joined

    def wait_for(self, text: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture()
            if text in screen:
                return screen
            time.sleep(0.2)
        raise AssertionError(f"{text!r} never appeared:\n{screen}")

    def exit_status(self, timeout: float = 20.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status.exists() and self.status.read_text().strip():
                return int(self.status.read_text())
            time.sleep(0.2)
        raise AssertionError("did not exit:\n" + self.capture())

    def kill(self) -> None:
        self.tmux("kill-server")


@pytest.fixture
def panes():
    made: list[Pane] = []
    yield made
    for p in made:
        p.kill()


def test_replay_opens_the_tui_marked_as_a_replay_and_plays_to_the_end(tmp_path, panes):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, synthetic_run(30, seed=4))
    pane = Pane(f"replay {trace} --speed 8", tmp_path)
    panes.append(pane)
    screen = pane.wait_for("REPLAY of synthetic target / synthetic draft, recorded 2023-11-14")
    assert "acceptance by draft position" in screen
    screen = pane.wait_for("ENDED: n_predict")  # played through at 8x
    assert "pass 30" in screen
    pane.tmux("send-keys", "-t", "t", "Left")  # step back one pass (and pause)
    pane.wait_for("pass 29 ")
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.exit_status() == 0


def test_demo_shows_the_bundled_recording_and_quits(tmp_path, panes):
    pane = Pane("demo --theme okabe-ito --speed 8", tmp_path)
    panes.append(pane)
    screen = pane.wait_for("REPLAY of Qwen2.5 Coder 1.5B")
    assert "acceptance by draft position" in screen
    pane.wait_for("def is_palindrome")  # the recorded text streams in
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.exit_status() == 0


def test_replay_bad_file_is_one_line_before_the_screen(tmp_path, panes):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "spectui.trace", "version": 99}\n')
    pane = Pane(f"replay {bad}; sleep 5", tmp_path)
    panes.append(pane)
    screen = pane.wait_for("spectui: error:")
    assert "trace version 99 (written by a newer spectui); this spectui reads trace version 1" in screen
