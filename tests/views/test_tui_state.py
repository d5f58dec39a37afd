"""ScreenState and ReplayPlayer: no Textual, fed with the fixed sample events."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from spectui.analysis.stats import compute
from spectui.contract.control import RunControl
from spectui.contract.errors import SpectuiError
from spectui.contract.events import PassEvent, RunEnded, SettingsChanged
from spectui.recording.player import ReplayPlayer, parse_speed
from spectui.recording.synthetic import sample_events
from spectui.tui.shared.themes import available_themes, check_theme, load_theme_data
from spectui.views.state import K_ACCEPTED, K_BONUS, K_CORRECTION, K_PLAIN, ScreenState, clean_text


def test_state_numbers_are_the_stats_numbers():
    events = sample_events()
    st = ScreenState()
    for ev in events:
        st.feed(ev)
    snap = st.snapshot()
    assert snap.stats == compute(events)
    assert snap.end is not None and snap.start is not None
    text = "".join(t for t, _ in snap.tokens)
    assert text == "".join(tok.text for ev in events if isinstance(ev, PassEvent) for tok in ev.emitted)
    kinds = {k for _, k in snap.tokens}
    assert kinds == {K_ACCEPTED, K_BONUS, K_CORRECTION, K_PLAIN}
    assert [p for p, _ in snap.markers] == [ev.before_pass for ev in events if isinstance(ev, SettingsChanged)]
    assert snap.last_pass.index == 40 and snap.last_pass_tokens == len(events[-2].emitted)
    # the series has one entry per decode pass, prefill excluded
    assert len(snap.series) == 40


def test_state_token_kinds_follow_the_pass():
    events = sample_events()
    st = ScreenState()
    for ev in events:
        st.feed(ev)
        if isinstance(ev, PassEvent) and not ev.prefill and ev.k:
            tail = st.snapshot().tokens[-len(ev.emitted):]
            assert [k for _, k in tail[: ev.n_accepted]] == [K_ACCEPTED] * ev.n_accepted
            assert tail[-1][1] == ev.target.kind


def test_state_feed_index_drops_out_of_sequence_and_version_moves():
    events = sample_events(5)
    st = ScreenState()
    v0 = st.version
    assert st.feed(events[0], index=0)
    assert not st.feed(events[1], index=5)  # stale event after a seek is ignored
    assert st.feed(events[1], index=1)
    assert st.version > v0
    st.rebuild(events[:1])
    assert st.snapshot().n_events == 1


def test_clean_text_keeps_newlines_and_escapes_controls():
    assert clean_text("a\nb") == "a\nb"
    assert clean_text("a\x1b[31mb") == "a\\x1b[31mb"
    assert clean_text("\t") == "    "


def test_player_paces_by_recorded_delays_scaled_by_speed():
    events = sample_events(6)
    span = events[-2].timing.t_end - events[1].timing.t_end  # first pass to last pass
    player = ReplayPlayer(events, speed=8)
    t0 = time.monotonic()
    out = list(player.iter(RunControl()))
    took = time.monotonic() - t0
    assert out == events
    assert took >= span / 8 * 0.9
    fast = ReplayPlayer(events, speed="max")
    t0 = time.monotonic()
    assert list(fast.iter(RunControl())) == events
    assert time.monotonic() - t0 < took


def test_player_steps_prefix_and_speeds():
    events = sample_events(6)
    p = ReplayPlayer(events)
    assert p.step_forward() == 2  # RunStarted + prefill pass
    assert isinstance(p.prefix()[-1], PassEvent)
    assert p.step_forward() == 3
    assert p.step_back() == 2
    assert p.jump_end() == len(events)
    assert p.jump_start() == 0 and p.prefix() == []
    p.speed = 1
    assert p.faster() == 2 and p.slower() == 1
    for _ in range(10):
        p.faster()
    assert p.speed == float("inf")
    for _ in range(10):
        p.slower()
    assert p.speed == 0.25


def test_player_pause_stop_and_seek_from_another_thread():
    events = sample_events(10)
    p = ReplayPlayer(events, speed=0.25)
    ctl = RunControl()
    got = []
    th = threading.Thread(target=lambda: got.extend(p.iter(ctl)))
    th.start()
    time.sleep(0.3)
    ctl.pause()
    n = len(got)
    time.sleep(0.3)
    assert len(got) == n  # nothing delivered while paused
    p.seek(len(events) - 1)  # jump: next delivered event is the last one, no delay across the jump
    ctl.resume()
    th.join(5)
    assert not th.is_alive()
    assert isinstance(got[-1], RunEnded)
    ctl2 = RunControl()
    ctl2.stop()
    assert list(ReplayPlayer(events).iter(ctl2)) == []


def test_player_bad_input():
    with pytest.raises(SpectuiError):
        ReplayPlayer([])
    for bad in ("fast", "0.1", "9", 100.0):
        with pytest.raises(SpectuiError):
            parse_speed(bad)
    assert parse_speed("max") == float("inf") and parse_speed("2x") == 2.0


def test_themes_found_and_unknown_name_lists_them():
    names = set(available_themes())
    assert {"dark", "light", "high-contrast", "okabe-ito"} <= names
    for n in names:
        data = load_theme_data(n)
        assert {"spectui-accepted", "spectui-rejected", "spectui-target", "spectui-pending"} <= set(data["variables"])
    assert check_theme(None) == "dark"
    with pytest.raises(SpectuiError) as e:
        check_theme("neon")
    msg = str(e.value)
    assert "neon" in msg and "okabe-ito" in msg and "\n" not in msg


def test_state_and_player_do_not_import_textual():
    code = ("import sys, spectui.views.state, spectui.recording.player, spectui.tui.shared.themes, "
            "spectui.recording.synthetic; "
            "print('textual' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
