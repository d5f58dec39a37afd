"""`spectui replay FILE` and `spectui demo` in a real terminal (a tmux pane): the replay screen, keys, quit."""

from __future__ import annotations

import pytest
from tmux_pane import needs_tmux, spectui_cmd

from spectui.recording.trace import synthetic_run, write_trace

pytestmark = needs_tmux


@pytest.fixture
def spectui_pane(pane_factory):
    """`python -m spectui ARGS` in a 120x36 pane, captured with wrapped lines joined."""

    def make(args: str):
        return pane_factory(spectui_cmd(args), cols=120, rows=36, join=True)

    return make


def test_replay_opens_the_tui_marked_as_a_replay_and_plays_to_the_end(tmp_path, spectui_pane):
    trace = tmp_path / "run.jsonl"
    write_trace(trace, synthetic_run(30, seed=4))
    pane = spectui_pane(f"replay {trace} --speed 8")
    screen = pane.wait_for("REPLAY of synthetic target / synthetic draft, recorded 2023-11-14")
    assert "acceptance by draft position" in screen
    screen = pane.wait_for("ENDED: n_predict")  # played through at 8x
    assert "pass 30" in screen
    pane.tmux("send-keys", "-t", "t", "Left")  # step back one pass (and pause)
    pane.wait_for("pass 29 ")
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.exit_status() == 0


def test_demo_shows_the_bundled_recording_and_quits(spectui_pane):
    pane = spectui_pane("demo --theme okabe-ito --speed 8")
    screen = pane.wait_for("REPLAY of Qwen2.5 Coder 1.5B")
    assert "acceptance by draft position" in screen
    pane.wait_for("def is_palindrome")  # the recorded text streams in
    pane.tmux("send-keys", "-t", "t", "q")
    assert pane.exit_status() == 0


def test_replay_bad_file_is_one_line_before_the_screen(tmp_path, spectui_pane):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"schema": "spectui.trace", "version": 99}\n')
    pane = spectui_pane(f"replay {bad}; sleep 5")
    screen = pane.wait_for("spectui: error:")
    assert "trace version 99 (written by a newer spectui); this spectui reads trace version 1" in screen
