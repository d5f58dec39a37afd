"""Pilot tests: every key changes the run's settings (RunControl, what the engine reads) and the screen.

The app is fed the fixed sample events by a source that then idles like a live run until stopped;
tests/tui/test_tui_engine.py drives the real engine.
"""

from __future__ import annotations

import gc
import json
import time

import pytest
from synthetic_events import held_source

from spectui.contract.control import RunControl
from spectui.contract.events import RunEnded, Settings
from spectui.recording.player import ReplayPlayer
from spectui.recording.synthetic import sample_events
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.help_screen import HelpScreen
from spectui.tui.run.prompt_screen import PromptScreen
from spectui.tui.run.status_line import StatusLine
from spectui.tui.shared.paced_app import DECODE_FRAME_HZ, DECODE_STATS_INTERVAL_S, FRAME_HZ, STATS_INTERVAL_S
from spectui.tui.shared.pass_ribbon import PassRibbon
from spectui.tui.shared.token_stream import TokenStream
from spectui.views.animation import PENDING, SETTLED, VERDICT


def status(app) -> str:
    app.refresh_from_state()
    return app.query_one(StatusLine).text.plain


async def started(app, pilot):
    for _ in range(200):
        app.refresh_from_state()
        if app.snap is not None and app.snap.stats.n_passes >= 40:
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never showed the events")


@pytest.mark.slow  # many keys, many paints
async def test_live_keys_change_settings_and_status_line(tmp_path):
    prompts: list[str] = []
    control = RunControl(Settings(draft_max=2, temperature=0.0, drafter="model"))
    app = SpectuiApp(held_source(sample_events(), prompts), control, save_dir=tmp_path, prompt="first prompt")
    async with app.run_test(size=(100, 30)) as pilot:
        await started(app, pilot)
        assert "RUNNING" in status(app) and " k 2" in status(app)

        await pilot.press("up")
        assert app.control.settings.draft_max == 3 and "k 3" in status(app)
        assert "(next pass)" in status(app)  # the engine has not used it yet
        await pilot.press("plus")
        assert app.control.settings.draft_max == 4
        for _ in range(6):
            await pilot.press("down")
        assert app.control.settings.draft_max == 0 and "k 0 (off)" in status(app)
        await pilot.press("minus")
        assert app.control.settings.draft_max == 0

        await pilot.press("right", "t")
        assert app.control.settings.temperature == pytest.approx(0.2) and "temp 0.2" in status(app)
        await pilot.press("left")
        assert app.control.settings.temperature == pytest.approx(0.1)
        await pilot.press("T")
        await pilot.press("T")
        assert app.control.settings.temperature == 0.0 and "temp 0.0" in status(app)
        for _ in range(25):
            await pilot.press("t")
        assert app.control.settings.temperature == 2.0

        assert app.control.settings.drafter == "model"
        await pilot.press("d")  # the same draft model, drafting trees (--drafter tree)
        assert app.control.settings.drafter == "tree" and "drafter tree" in status(app)
        await pilot.press("d")
        assert app.control.settings.drafter == "ngram" and "drafter ngram" in status(app)
        # then llama.cpp's n-gram types and suffix decoding, the chain d offers beside a draft model, none, model
        for want in ("ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache", "suffix",
                     "ngram-mod,model", "none", "model"):
            await pilot.press("d")
            assert app.control.settings.drafter == want

        await pilot.press("a")
        assert app.control.settings.auto == "cost" and "auto cost" in status(app)
        await pilot.press("up")  # a manual k takes over from auto k
        assert app.control.settings.auto is None and app.control.settings.draft_max == 1

        await pilot.press("space")
        assert app.control.paused and "PAUSED" in status(app)
        await pilot.press("p")
        assert not app.control.paused and "RUNNING" in status(app)

        theme0 = app.theme
        await pilot.press("c")
        assert app.theme != theme0 and f"theme {app.theme}" in status(app)

        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)

        await pilot.press("s")
        await pilot.pause()
        assert len(app.saved_paths) == 1
        lines = app.saved_paths[0].read_text().splitlines()
        assert len(lines) >= len(sample_events()) - 1  # all events so far (+ the trace header)
        assert any(json.loads(line).get("type") == "pass" for line in lines)

        old = app.control
        settings = old.settings
        await pilot.press("r")
        assert old.stopped and app.control is not old and app.control.settings == settings
        await started(app, pilot)
        assert prompts == ["first prompt", "first prompt"]

        old = app.control
        await pilot.press("n")
        assert isinstance(app.screen, PromptScreen)
        app.screen.query_one("Input").value = ""
        await pilot.press(*"why")
        await pilot.press("enter")
        await started(app, pilot)
        assert old.stopped and app.prompt == "why" and prompts[-1] == "why"

        last = app.control
        await pilot.press("q")
    assert last.stopped
    assert app.stop_engine(5)


async def test_ctrl_c_quits_and_stops_the_run():
    control = RunControl()
    app = SpectuiApp(held_source(sample_events()), control)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("ctrl+c")
    assert control.stopped and app.stop_engine(5)


async def test_quit_flushes_the_recorder(tmp_path):
    from spectui.recording.trace import TraceWriter, read_trace

    path = tmp_path / "rec.jsonl"
    rec = TraceWriter(str(path))
    app = SpectuiApp(held_source(sample_events()), RunControl(), recorder=rec)
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.press("q")
    assert app.stop_engine(5)
    events = read_trace(str(path)).events
    rec.close()
    assert isinstance(events[-1], RunEnded) and events[-1].reason == "stopped"
    assert len(events) == len(sample_events())  # all but the sample's own end, plus the stop


async def test_replay_keys_step_seek_speed_pause():
    events = sample_events()
    player = ReplayPlayer(events, speed=0.25)
    app = SpectuiApp(None, RunControl(), replay=player)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        assert "REPLAY" in status(app)
        await pilot.press("space")
        assert app.control.paused and "PAUSED" in status(app)
        await pilot.press("end")
        assert player.cursor == len(events) and app.snap.n_events == len(events)
        assert app.snap.stats.n_passes == 40
        await pilot.press("left")
        assert app.snap.stats.n_passes == 39 and f"event {player.cursor}/" in status(app)
        await pilot.press("right")
        assert app.snap.stats.n_passes == 40
        await pilot.press("home")
        assert player.cursor == 0 and app.snap.n_events == 0
        await pilot.press("right")
        assert app.snap.stats.n_passes == 0 and app.snap.last_pass.prefill
        speed = player.speed
        await pilot.press("greater_than_sign")
        assert player.speed == 2 * speed and "0.5x" in status(app)
        await pilot.press("less_than_sign", "less_than_sign")
        assert player.speed == 0.25
        # live-only keys do nothing in a replay
        await pilot.press("up", "d", "a")
        assert app.control.settings == RunControl().settings
        player.speed = "max"
        await pilot.press("r")  # restart from the beginning, playing
        assert not app.control.paused
        for _ in range(200):
            if not app.running:
                break
            await pilot.pause(0.02)
        app.refresh_from_state()
        assert app.snap.n_events == len(events) and "ENDED" in status(app)
        await pilot.press("q")


@pytest.mark.parametrize("size,narrow,small", [((120, 40), False, False), ((80, 24), True, False),
                                               ((50, 15), True, True)])
async def test_layout_follows_the_terminal_size(size, narrow, small):
    app = SpectuiApp(lambda c, p: iter(sample_events()), RunControl())
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        assert app.query_one("#body").has_class("narrow") == narrow
        assert app.screen.has_class("too-small") == small
        if small:
            assert "terminal too small" in str(app.query_one("#too-small").render())
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        app.refresh_from_state()
        assert not app.screen.has_class("too-small") and not app.query_one("#body").has_class("narrow")


async def test_animation_shows_rejected_drafts_then_removes_them():
    events = sample_events()
    last = events[-2]
    rejected = [d.text for d in last.drafts if d.verdict != "accepted"]
    if not rejected:  # pick a run length whose last pass has a rejection
        events = sample_events(38)
        last = events[-2]
        rejected = [d.text for d in last.drafts if d.verdict != "accepted"]
    assert rejected
    app = SpectuiApp(lambda c, p: iter(events), RunControl(), freeze_phase=VERDICT)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        stream = app.query_one(TokenStream)
        styles = stream.styles_map()
        body = stream.body(styles, (10_000, 80))
        assert body.plain.endswith("".join(rejected) + last.target.text)
        struck = [body.plain[s.start:s.end] for s in body.spans if s.style == styles["rejected"]]
        assert struck and struck[0] in rejected
        assert "✗" in app.query_one(PassRibbon).render().plain
        app.freeze_phase = SETTLED
        app.refresh_from_state()
        body = stream.body(styles, (10_000, 80))
        assert "".join(rejected) not in body.plain[-40:]
        assert body.plain.endswith(last.target.text)


async def test_unknown_theme_is_a_one_line_error():
    from spectui.contract.errors import SpectuiError

    with pytest.raises(SpectuiError, match="available themes: .*dark"):
        SpectuiApp(lambda c, p: iter(()), RunControl(), theme="nope")


async def test_source_error_shows_on_the_status_line():
    from spectui.contract.errors import SpectuiError

    def bad(control, prompt):
        raise SpectuiError("model exploded")
        yield  # pragma: no cover

    app = SpectuiApp(bad, RunControl())
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "ERROR: model exploded" in status(app)


async def test_no_color_keeps_meaning_in_text_attributes(monkeypatch):
    from textual.filter import Monochrome, NoColor

    monkeypatch.setenv("NO_COLOR", "1")
    app = SpectuiApp(lambda c, p: iter(sample_events(38)), RunControl(), freeze_phase=VERDICT)
    async with app.run_test(size=(80, 24)) as pilot:
        await app.workers.wait_for_complete()
        app.refresh_from_state()
        await pilot.pause()
        assert app.no_color and any(isinstance(f, (Monochrome, NoColor)) for f in app._filters)
        stream = app.query_one(TokenStream)
        st = stream.styles_map()
        # each token state differs by an attribute that survives without colour
        assert st["accepted"].underline and st["rejected"].strike and st["discarded"].strike
        assert st["correction"].bold and st["bonus"].bold and st["pending"].italic
        body = stream.body(st, (10_000, 80))
        used = {s.style for s in body.spans}
        assert {st["accepted"], st["rejected"], st["correction"]} <= used


async def test_contention_shows_a_badge_and_a_bar_only_while_it_lasts(monkeypatch):
    from spectui.analysis.stats import RunStats
    from spectui.tui.run.contention_bar import ContentionBar

    app = SpectuiApp(held_source(sample_events()), RunControl())
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        bar = app.query_one(ContentionBar)
        assert not bar.display and "⚠" not in status(app)
        busy = "other processes keep 1.4 of this run's 2 cores busy"
        monkeypatch.setattr(RunStats, "contention", lambda self: busy)  # what stats.py says under load
        app.repaint_all()
        await pilot.pause()
        assert bar.display and busy in bar.render().plain
        line = app.query_one(StatusLine).text.plain
        assert "⚠ contention" in line and " k " in line
        monkeypatch.undo()
        app.repaint_all()
        await pilot.pause()
        assert not bar.display
        await pilot.press("q")


def steady_source(events, gap_s: float):
    """A live source that yields a pass every ``gap_s`` seconds, then its end (a decode at a steady pace)."""

    def source(control, prompt):
        for ev in events:
            if control.stopped:
                return
            yield ev
            time.sleep(gap_s)

    return source


@pytest.mark.timing  # paints per wall second while a live run decodes
async def test_a_decoding_run_is_painted_at_the_decode_pace():
    """While the engine decodes on this machine the UI paints at most DECODE_FRAME_HZ times a second (the
    statistics every DECODE_STATS_INTERVAL_S), and passes that arrive several to a frame skip their pending
    phase; the run's end is painted at once, settled, as at any pace."""
    assert DECODE_FRAME_HZ < FRAME_HZ and DECODE_STATS_INTERVAL_S > STATS_INTERVAL_S
    gap = 0.04  # 25 passes a second: several to a frame
    app = SpectuiApp(steady_source(sample_events(), gap), RunControl())
    phases: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await pilot.pause(0.02)
            if app.snap is not None and app.snap.stats.n_passes >= 2:
                break
        assert app.decoding(), "a live run's worker decodes"
        assert app.frame_s() == 1 / DECODE_FRAME_HZ and app.stats_s() == DECODE_STATS_INTERVAL_S
        p0, t0 = app.paints, time.monotonic()
        while app.running:
            await pilot.pause(0.02)
            phases.append(app.view.phase)
        t = time.monotonic() - t0
        assert t > 1.0, "the run was too short to measure its pace"
        n = app.paints - p0
        assert n <= DECODE_FRAME_HZ * t + t / DECODE_STATS_INTERVAL_S + 2, (n, t)  # + the end's paint
        assert PENDING not in phases
        assert not app.decoding() and app.frame_s() == 1 / FRAME_HZ and app.stats_s() == STATS_INTERVAL_S
        await pilot.pause(0.3)
        app.refresh_from_state()
        assert app.snap.end is not None and "ENDED" in status(app)
        await pilot.press("q")
    replay = SpectuiApp(None, RunControl(), replay=ReplayPlayer(sample_events(), speed="max"))
    assert not replay.decoding()  # a replay decodes nothing: its frames keep FRAME_HZ


async def test_the_heap_is_left_out_of_full_collections_while_the_face_runs():
    """When the face starts, the objects alive then are frozen (gc.freeze): a full collection walks only what
    came since, not Textual's tens of thousands of objects, while the engine's thread may be waiting for the
    GIL; the face's stop thaws them."""
    app = SpectuiApp(held_source(sample_events()), RunControl())
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.pause(0.2)
        assert gc.get_freeze_count() > 1000, "the heap was not frozen while the face ran"
        await pilot.press("q")
    assert gc.get_freeze_count() == 0, "the face's stop left objects frozen"


@pytest.mark.timing  # no paint in an idle second
async def test_paints_follow_the_passes_not_a_clock():
    """No frame while nothing changes (the app used to tick 30 times a second); a burst of passes is
    painted a few times, not once per pass."""
    app = SpectuiApp(held_source(sample_events()), RunControl())
    async with app.run_test(size=(80, 24)) as pilot:
        await started(app, pilot)
        await pilot.pause(1.5)  # the last pass's animation (0.9 s) and the statistics (1 s) settle
        idle = app.paints
        await pilot.pause(1.0)
        assert app.paints == idle
        await pilot.press("q")
    player = ReplayPlayer(sample_events(), speed="max")  # 41 passes as fast as the player can go
    app = SpectuiApp(None, RunControl(), replay=player)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if not app.running:
                break
        app.refresh_from_state()
        assert app.snap.stats.n_passes == 40 and app.paints < 20
        await pilot.press("q")
