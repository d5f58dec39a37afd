"""The TUI in a real terminal: an 80x24 tmux pane replaying a trace; keys, SIGTERM, terminal restored."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tmux_pane import needs_tmux, spectui_cmd

from spectui.recording.synthetic import sample_events

pytestmark = needs_tmux


@pytest.fixture
def trace_file(tmp_path) -> Path:
    from spectui.recording.trace import write_trace

    path = tmp_path / "sample.jsonl"
    write_trace(str(path), sample_events())
    return path


@pytest.fixture
def tui_pane(pane_factory):
    def make(args: str, module: str = "spectui.tui"):
        return pane_factory(spectui_cmd(args, module))

    return make


def test_tmux_keys_change_the_screen_and_q_restores_the_terminal(tui_pane, trace_file):
    pane = tui_pane(f"{trace_file} --speed 0.25")
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
    assert pane.exit_status() == 0
    assert pane.fmt("#{alternate_on}") == "0"  # the terminal is back to normal


@pytest.mark.parametrize("sig", ["TERM", "HUP"])
def test_tmux_signal_stops_cleanly(tui_pane, trace_file, sig):
    pane = tui_pane(f"{trace_file} --speed 0.25")
    pane.wait_for("REPLAY of")
    pid = pane.app_pid()
    os.kill(pid, getattr(__import__("signal"), f"SIG{sig}"))
    status = pane.exit_status()
    assert status == {"TERM": 143, "HUP": 129}[sig], pane.capture()  # a clean stop, then 128 + N (issue 17)
    assert pane.fmt("#{alternate_on}") == "0"


def test_tmux_unknown_theme_is_one_line(tui_pane, trace_file):
    pane = tui_pane(f"{trace_file} --theme neon")
    assert pane.exit_status() == 2
    shown = pane.tmux("capture-pane", "-p", "-J", "-S", "-50", "-t", "t")
    lines = [line for line in shown.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("Pane is dead")]
    assert len(lines) == 1, lines
    assert lines[0].startswith("spectui: error: unknown theme 'neon'; available themes:")


def test_tmux_live_run_on_the_tiny_models(tui_pane, tiny_target, tiny_draft_noisy, tmp_path):
    """`spectui --target T --draft D` in a real 80x24 terminal: the live TUI, a key, q, a trace on disk."""
    rec = tmp_path / "live.jsonl"
    pane = tui_pane(f"--target {tiny_target} --draft {tiny_draft_noisy} -p 'the cat' -n 60 -k 2 -t 1 "
                        f"--record {rec}", module="spectui")
    screen = pane.wait_for("acceptance by draft position", timeout=60)
    assert "current pass" in screen
    pane.wait_for("ENDED", timeout=60)
    pane.tmux("send-keys", "-t", "t", "Up")
    screen = pane.wait_for(" k 3")
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.exit_status() == 0
    assert pane.fmt("#{alternate_on}") == "0"
    from spectui.recording.trace import read_trace

    events = read_trace(str(rec)).events
    assert events[0].type == "start" and events[-1].type == "end"
