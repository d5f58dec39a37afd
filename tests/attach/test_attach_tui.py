"""The attach face in the TUI (spectui/tui/attach/app.py): Pilot tests fed the attach sessions recorded from
the real llama-server (tests/data/attach-*.jsonl, made by tests/attach_recordings.py), snapshots at 80x24
and 120x40, and one test that drives the TUI against a live llama-server on 127.0.0.1 (skipped with the
reason when the binary is absent). Every number on screen is checked against AttachStats, the statistics
the headless face prints."""

from __future__ import annotations

import io
import time

import pytest

pytest.importorskip("prometheus_client")

from attach_recordings import PROMPT, REQUEST, WATCH, server_args
from servers import SKIP_REASON, LlamaServer, StaticServer, free_port, llama_server_binary
from tmux_pane import needs_tmux, spectui_cmd

from spectui.analysis.attach_stats import AttachStats
from spectui.attach.session import AttachSession
from spectui.contract.events import AttachEnded, AttachStarted, RequestChunk, RequestEnded
from spectui.recording.player import load_for_tui
from spectui.recording.trace import TraceWriter, read_trace
from spectui.text.attach import HeadlessFace
from spectui.text.replay import replay_headless
from spectui.tui.attach.acceptance import AttachAcceptance
from spectui.tui.attach.app import AttachApp
from spectui.tui.attach.engines import AttachEngines
from spectui.tui.attach.help_screen import AttachHelpScreen
from spectui.tui.attach.request import AttachRequest, request_line
from spectui.tui.attach.status_line import AttachStatusLine
from spectui.tui.attach.summary import AttachSummary
from spectui.tui.attach.throughput import AttachThroughput
from spectui.views.numbers import pct

INF = float("inf")


def recorded(path):
    return read_trace(path).events


def stats_of(events) -> AttachStats:
    st = AttachStats()
    for ev in events:
        st.update(ev)
    return st


def replay_app(events, theme="dark") -> AttachApp:
    start = events[0]
    assert isinstance(start, AttachStarted)
    return AttachApp(events=events, request_mode=bool(start.prompt), speed=INF, theme=theme)


async def settle(pilot) -> None:
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.paint()
    await pilot.pause()


def text_of(app, cls) -> str:
    return app.screen.query_one(cls).render().plain


# ------------------------------------------------------------------ recorded sessions from the real server


async def test_a_paint_after_the_app_closed_does_nothing():
    """A paint timer that fires while the app shuts down (its screens gone) must not raise ScreenStackError."""
    app = replay_app(recorded(WATCH))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        paints = app.paints
    assert not app.screen_stack
    app.paint()
    assert app.paints == paints


async def test_watch_mode_shows_every_engine_and_the_sum():
    events = recorded(WATCH)
    snap = stats_of(events).snapshot()
    app = replay_app(events)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        engines = text_of(app, AttachEngines)
        spec, plain, dead = [w for w in snap.interval]
        assert spec.status == "ok" and plain.status == "no speculation" and dead.status == "error"
        lines = engines.splitlines()
        row = next(ln for ln in lines if ln.startswith(spec.url))
        assert pct(spec.acceptance_rate) in row and f"{spec.mean_acceptance_length:.2f}" in row
        assert f"{spec.drafted_tps:.1f}" in row and f"{spec.accepted_tps:.1f}" in row
        assert "no speculation" in next(ln for ln in lines if ln.startswith(plain.url))
        assert dead.error in next(ln for ln in lines if ln.startswith(dead.url))  # one line, the others go on
        assert any(ln.startswith("all engines") and pct(snap.interval_sum.acceptance_rate) in ln for ln in lines)
        # acceptance by position: the session window of the sum, as the headless summary prints it
        acc = text_of(app, AttachAcceptance)
        total = snap.session_sum
        for i, r in enumerate(total.acceptance_by_pos):
            assert f"{100 * r:5.1f}% {total.accepted_per_pos[i]:.0f}/{total.drafts:.0f}" in acc
        summary = text_of(app, AttachSummary)
        assert f"{pct(snap.interval_sum.acceptance_rate)} | {pct(total.acceptance_rate)}" in summary
        assert f"{total.mean_acceptance_length:.2f}" in summary
        assert "llama-server publishes no latency histograms" in summary
        tps = text_of(app, AttachThroughput)
        assert f"drafted {snap.interval_sum.drafted_tps:.1f}" in tps and "\nd " in tps and "\na " in tps
        status = app.screen.query_one(AttachStatusLine).text.plain
        assert "REPLAY END: done" in status and "3 URLs (1 down)" in status
        assert "per-request n_max ignored" in status  # no k keys: said, not pretended
        assert app.state.series and len(app.state.series) == 8  # one point per round after the baseline


async def test_request_mode_streams_the_text_and_the_request_figures():
    events = recorded(REQUEST)
    snap = stats_of(events).snapshot()
    req = snap.request
    assert req is not None and req.draft_n > 0
    # mid-stream: the newest chunk is drawn apart (highlighted, with a cursor) while the request runs
    cut = [i for i, ev in enumerate(events) if isinstance(ev, RequestChunk)][10] + 1
    app = replay_app(events[:cut])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.view.newest == events[cut - 1].text and app.view.newest != ""
        panel = text_of(app, AttachRequest)
        assert "streaming" in panel and "▌" in panel
    app = replay_app(events)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        panel = text_of(app, AttachRequest)
        head = panel.splitlines()[0]
        assert f"{req.n_tokens} tok in {req.n_chunks} chunks" in head and "(length)" in head
        assert app.view.text == req.text and app.view.newest == ""
        # the server's per-request acceptance (llama-server timings) and the client's TTFT
        line = request_line(app.view).plain
        assert f"accept {pct(req.acceptance_rate)} ({req.draft_n_accepted}/{req.draft_n})" in line
        assert "TTFT " in line and "ITL p50/p95 " in line


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_keys_help_theme_and_quit():
    app = replay_app(recorded(WATCH))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, AttachHelpScreen)
        help_text = app.screen.query_one("#help-text").render().plain
        assert "speculative.n_max" in help_text and "no k keys" in help_text
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AttachHelpScreen)
        await pilot.press("c")
        await pilot.pause()
        assert app.theme != "dark" and f"theme {app.theme}" in app.screen.query_one(AttachStatusLine).text.plain
        await pilot.press("q")
        await pilot.pause()
    assert app.done.is_set()


async def test_no_color_and_a_small_terminal(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    app = replay_app(recorded(WATCH))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "all engines" in text_of(app, AttachEngines)
        await pilot.resize_terminal(50, 15)
        await pilot.pause()
        app.paint()
        await pilot.pause()
        assert app.screen.has_class("too-small")


def test_replay_routes_an_attach_trace(tmp_path):
    """`spectui replay` on an attach trace: the TUI gets the attach events, --headless prints the live text."""
    header, events = load_for_tui(REQUEST)
    assert header["attach"]["targets"] and isinstance(events[0], AttachStarted)
    buf, live = io.StringIO(), io.StringIO()
    replay_headless(REQUEST, buf)
    face = HeadlessFace(live)
    for ev in recorded(REQUEST):
        face(ev)
    assert buf.getvalue() == live.getvalue() and "server: drafted" in buf.getvalue()


def test_cast_of_an_attach_trace(tmp_path):
    """`spectui cast` on an attach trace renders the attach face at the recorded pace."""
    import json

    from spectui.commands.cast import render_cast

    out = tmp_path / "a.cast"
    info = render_cast(recorded(WATCH), out, cols=80, rows=24, speed=2.0)
    lines = out.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["width"] == 80 and header["title"].startswith("spectui attach http://127.0.0.1")
    frames = [json.loads(ln) for ln in lines[1:]]
    assert info.n_events == len(frames) and frames[-1][0] > 2.0  # 4 s recorded, at 2x, plus the hold
    screen = "".join(f[2] for f in frames)
    assert "all engines" in screen and "connection refused" in screen and "REPLAY END" in screen


# ------------------------------------------------------------------ a real terminal (tmux)


@needs_tmux
@pytest.mark.parametrize("how", ["q", "ctrl+c", "SIGTERM"])
def test_real_terminal_bad_urls_and_a_clean_quit(pane_factory, tmp_path, how):
    """`spectui attach` in a real 80x24 terminal: an HTML page and a refused port are one line each; q,
    Ctrl+C or SIGTERM end it with exit status 0, 130, 143 (issue 17: 128 + the signal; Ctrl+C typed is
    SIGINT's) and a --record trace that ends with attach_end."""
    import os
    import signal

    html = StaticServer("<!DOCTYPE html>\n<html><body>not metrics</body></html>")
    try:
        dead = f"http://127.0.0.1:{free_port()}"
        rec = tmp_path / "t.jsonl"
        pane = pane_factory(spectui_cmd(f"attach {html.url} {dead} --interval 0.2 --record {rec}"))
        screen = pane.wait_for("connection refused", timeout=60)
        assert "HTML" in screen and "WATCHING" in screen and "2 URLs (2 down)" in screen
        if how == "SIGTERM":
            os.kill(pane.app_pid(), signal.SIGTERM)
        else:
            pane.send("q" if how == "q" else "C-c")
        assert pane.exit_status() == {"q": 0, "ctrl+c": 130, "SIGTERM": 143}[how]
        evs = read_trace(rec).events
        assert isinstance(evs[0], AttachStarted) and isinstance(evs[-1], AttachEnded)
        assert evs[-1].reason == "stopped"
    finally:
        html.stop()


# ------------------------------------------------------------------ snapshots


@pytest.mark.parametrize("theme", ["dark", "light", "high-contrast", "okabe-ito"])
def test_snapshot_watch_80x24(snap_compare, theme):
    assert snap_compare(replay_app(recorded(WATCH), theme), terminal_size=(80, 24), run_before=settle)


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
def test_snapshot_help(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(replay_app(recorded(WATCH)), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_watch_120x40(snap_compare):
    assert snap_compare(replay_app(recorded(WATCH)), terminal_size=(120, 40), run_before=settle)


def test_snapshot_request_80x24(snap_compare):
    assert snap_compare(replay_app(recorded(REQUEST)), terminal_size=(80, 24), run_before=settle)


# ------------------------------------------------------------------ a live llama-server on loopback

BINARY = llama_server_binary()


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
@pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)
@pytest.mark.timeout(300)
async def test_tui_against_a_live_llama_server(tiny_target, tiny_draft_noisy, tmp_path):
    """Request mode against the real server: the TUI shows what the session's own statistics say, the
    recording ends with AttachEnded and replays to the same numbers; then watch mode, quit with q."""
    server = LlamaServer(BINARY, server_args(tiny_target, tiny_draft_noisy), tmp_path / "server.log")
    try:
        rec = tmp_path / "live.jsonl"
        writer = TraceWriter(rec)
        session = AttachSession([server.url], interval=0.25, prompt=PROMPT, n_predict=32)
        app = AttachApp(session=session, request_mode=True, recorder=writer)
        async with app.run_test(size=(80, 24)) as pilot:
            deadline = time.monotonic() + 120
            while app.state.end is None and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await settle(pilot)
            assert app.state.end is not None and app.state.end.reason == "done"
            snap = session.stats.snapshot()
            req = snap.request
            assert req.n_tokens == 32 and req.draft_n > 0 and app.view.text == req.text
            assert f"accept {pct(req.acceptance_rate)} ({req.draft_n_accepted}/{req.draft_n})" in text_of(
                app, AttachRequest)
            row = text_of(app, AttachEngines).splitlines()[1]
            assert row.startswith(server.url) and pct(snap.interval[0].acceptance_rate) in row
            await pilot.press("q")
        writer.close()
        evs = read_trace(rec).events
        assert isinstance(evs[0], AttachStarted) and isinstance(evs[-1], AttachEnded)
        assert sum(isinstance(e, RequestEnded) for e in evs) == 1
        assert stats_of(evs).snapshot().request == req

        # watch mode: quit while it runs; the recording stays readable and ends with AttachEnded
        rec2 = tmp_path / "watch.jsonl.gz"
        writer = TraceWriter(rec2)
        dead = f"http://127.0.0.1:{free_port()}"
        session = AttachSession([server.url, dead], interval=0.2)
        app = AttachApp(session=session, recorder=writer)
        async with app.run_test(size=(80, 24)) as pilot:
            deadline = time.monotonic() + 30
            while len(app.state.series) < 2 and time.monotonic() < deadline:
                await pilot.pause(0.1)
            await pilot.pause()
            app.paint()
            assert "connection refused" in text_of(app, AttachEngines)
            await pilot.press("q")
        assert app.done.is_set()
        writer.close()
        evs = read_trace(rec2).events
        assert isinstance(evs[-1], AttachEnded) and evs[-1].reason == "stopped"
    finally:
        server.stop()
