"""The token inspector in the TUI: inspect mode's cursor on the ribbon (keys, mouse), the inspector screen
against ``spectui.views.inspector_model.explain`` of the very event (live, replayed from a trace, without data), 80x24
and NO_COLOR; the --draft-p-min keys reaching the engine (tiny llama.cpp models, tests/conftest.py)."""

from __future__ import annotations

import pytest
from synthetic_events import held_source

from spectui.contract.control import RunControl
from spectui.contract.events import DRAFT_STOP_P_MIN, REJECTED, PassEvent, Settings
from spectui.recording.player import ReplayPlayer
from spectui.recording.synthetic import sample_events
from spectui.recording.trace import TraceWriter, read_trace
from spectui.tui.run.app import SpectuiApp
from spectui.tui.run.live_screen import P_MIN_STEPS, next_p_min
from spectui.tui.run.prediction_panel import PredictionPanel
from spectui.tui.run.status_line import StatusLine
from spectui.tui.shared.inspector_screen import InspectorScreen
from spectui.tui.shared.pass_ribbon import P_MIN_MARK, PassRibbon
from spectui.views.animation import VERDICT
from spectui.views.inspector import inspector_text, move
from spectui.views.inspector_model import NO_DATA, explain, render_view, slots
from spectui.views.view import InspectCursor

pytestmark = pytest.mark.slow  # the inspector driven through the real app, key by key, on the engine

PROMPT = "the cat sat on the mat and"


@pytest.fixture(scope="module")
def sampled_run(make_engine, tiny_target, tiny_draft_noisy, tmp_path_factory):
    """A real run at T = 0.8 (u, min(1, p/q), residuals) recorded with a TraceWriter: (events, trace path)."""
    engine = make_engine(tiny_target, tiny_draft_noisy)
    path = tmp_path_factory.mktemp("inspector") / "run.jsonl"
    events = []
    with TraceWriter(path) as writer:
        for ev in engine.run(PROMPT, RunControl(Settings(draft_max=3, temperature=0.8, seed=3)), 40):
            writer.write(ev)
            events.append(ev)
    passes = [e for e in events if isinstance(e, PassEvent)]
    assert passes and all(p.inspect for p in passes), "the engine records inspector data by default"
    assert any(d.verdict == REJECTED for p in passes for d in p.drafts), "the noisy draft gets rejected"
    return events, path


def screen_lines(app) -> list[str]:
    """The terminal as text, one string a row (what a user sees)."""
    strips = app.screen._compositor.render_strips()
    return ["".join(seg.text for seg in strip) for strip in strips]


async def settled(app, pilot, n_passes: int) -> None:
    for _ in range(400):
        app.refresh_from_state()
        if app.snap is not None and app.snap.recent and app.snap.recent[-1].index >= n_passes - 1:
            await pilot.pause()
            return
        await pilot.pause(0.01)
    raise AssertionError("the app never showed the events")


def pass_event(events, index: int) -> PassEvent:
    return next(e for e in events if isinstance(e, PassEvent) and e.index == index)


def inspector(app) -> InspectorScreen:
    assert isinstance(app.screen, InspectorScreen), app.screen
    return app.screen


def expected_text(events, cursor: InspectCursor, width: int) -> str:
    return "\n".join(render_view(explain(pass_event(events, cursor.pass_index), cursor.slot), width))


def n_passes(events) -> int:
    return sum(isinstance(e, PassEvent) for e in events)


# ------------------------------------------------------------------------------------------ keys
async def test_keys_move_the_cursor_and_enter_opens_that_tokens_inspector(sampled_run):
    events, _ = sampled_run
    control = RunControl(Settings(draft_max=3, temperature=0.8))
    app = SpectuiApp(held_source(events), control)
    async with app.run_test(size=(100, 30)) as pilot:
        await settled(app, pilot, n_passes(events))
        screen = app.run_screen
        last = app.snap.recent[-1]
        await pilot.press("i")
        assert control.paused and "PAUSED" in app.query_one(StatusLine).text.plain
        n_last = len(slots(last.event))
        assert screen.cursor == InspectCursor(last.index, n_last - 1)  # the newest pass's last token
        ribbon = app.query_one(PassRibbon)
        assert f"inspect #{last.index} token {n_last}" in ribbon.render().plain and "▸" in ribbon.render().plain

        # the arrows move the cursor now, not k or the temperature
        await pilot.press("down")
        older = app.snap.recent[-2]
        assert screen.cursor.pass_index == older.index
        await pilot.press("up", "left")
        assert screen.cursor == InspectCursor(last.index, max(0, n_last - 2))
        await pilot.press("j", "k", "l", "h")  # the same with h j k l
        assert screen.cursor == InspectCursor(last.index, max(0, n_last - 2))
        assert control.settings.draft_max == 3 and control.settings.temperature == pytest.approx(0.8)

        # a pass with a rejected draft: the cursor on it, enter opens the inspector with its numbers
        target = next(e for e in reversed(events) if isinstance(e, PassEvent) and any(
            d.verdict == REJECTED for d in e.drafts) and e.index > app.snap.recent[0].index)
        rej = next(i for i, d in enumerate(target.drafts) if d.verdict == REJECTED)
        while screen.cursor.pass_index != target.index:
            await pilot.press("down")
        while screen.cursor.slot != rej:
            await pilot.press("left" if screen.cursor.slot > rej else "right")
        await pilot.press("enter")
        modal = inspector(app)
        text = modal.text().plain
        assert text == expected_text(events, screen.cursor, modal.text_width())
        view = explain(target, rej)
        d = target.drafts[rej]
        assert f"draft q(x) {d.prob:.3f}" in text and f"target p(x) {d.target_prob:.3f}" in text
        assert view.rule in text and "min(1, p/q)" in view.rule and "rejected" in text
        assert "target top (p)" in text and "draft top (q)" in text

        # inside the inspector the arrows step through the tokens, and the ribbon's cursor follows
        await pilot.press("right")
        assert screen.cursor == move(app.snap.recent, InspectCursor(target.index, rej), 1)
        assert modal.text().plain == expected_text(events, screen.cursor, modal.text_width())

        await pilot.press("escape")  # closes the inspector: inspect mode goes on
        assert not isinstance(app.screen, InspectorScreen) and screen.inspecting
        await pilot.press("escape")  # leaves inspect mode: the run resumes, arrows are k / temp again
        assert not screen.inspecting and not control.paused
        assert "inspect #" not in ribbon.render().plain
        await pilot.press("up")
        assert control.settings.draft_max == 4
        await pilot.press("q")


async def test_inspect_mode_keeps_a_pause_the_user_asked_for(sampled_run):
    events, _ = sampled_run
    control = RunControl(Settings(draft_max=3, temperature=0.8))
    app = SpectuiApp(held_source(events), control)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(app, pilot, n_passes(events))
        await pilot.press("space")
        assert control.paused
        await pilot.press("i", "escape")
        assert control.paused  # still paused: inspect mode did not pause it
        await pilot.press("q")


# ------------------------------------------------------------------------------------------ mouse
async def test_a_click_on_a_ribbon_token_opens_its_inspector(sampled_run):
    events, _ = sampled_run
    app = SpectuiApp(held_source(events), RunControl(Settings(draft_max=3, temperature=0.8)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(app, pilot, n_passes(events))
        ribbon = app.query_one(PassRibbon)
        # the second line under the title: an older pass, drawn compact (one glyph per token)
        y = 2
        index, spans = ribbon._hits[y]
        x0, _, slot = spans[-1]  # its target token
        assert await pilot.click(PassRibbon, offset=(x0, y))
        await pilot.pause()
        modal = inspector(app)
        assert app.run_screen.cursor == InspectCursor(index, slot)
        assert modal.text().plain == expected_text(events, InspectCursor(index, slot), modal.text_width())
        await pilot.press("escape", "escape")
        assert not app.run_screen.inspecting
        assert await pilot.click(PassRibbon, offset=(0, 0))  # the title: nothing opens
        await pilot.pause()
        assert not isinstance(app.screen, InspectorScreen)
        await pilot.press("q")


# ------------------------------------------------------------------------------------------ size, colour
@pytest.mark.parametrize("no_color", [False, True])
async def test_80x24_shows_every_essential_line_and_marks_survive_no_color(sampled_run, monkeypatch, no_color):
    from textual.filter import Monochrome, NoColor

    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    events, _ = sampled_run
    app = SpectuiApp(held_source(events), RunControl(Settings(draft_max=3, temperature=0.8)))
    # the pass with the most candidates on screen: a T > 0 rejection (target, draft and residual columns)
    target = next(e for e in reversed(events) if isinstance(e, PassEvent) and any(
        d.verdict == REJECTED for d in e.drafts))
    rej = next(i for i, d in enumerate(target.drafts) if d.verdict == REJECTED)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(app, pilot, n_passes(events))
        assert app.no_color == no_color
        if no_color:
            assert any(isinstance(f, (Monochrome, NoColor)) for f in app._filters)
        app.run_screen.enter_inspect(InspectCursor(target.index, rej))
        app.run_screen.action_open_inspector()
        await pilot.pause()
        await pilot.pause()
        modal = inspector(app)
        width = modal.text_width()
        assert width >= 74  # the whole terminal width less the border and padding
        lines = render_view(explain(target, rej), width)
        shown = "\n".join(screen_lines(app))
        head, nums, *_ = lines
        essentials = [head, nums, lines[3]] + [ln for ln in lines if ln.startswith(("target top", "* "))]
        assert explain(target, rej).residual_top, "a T > 0 rejection has a residual column"
        for line in essentials:
            assert line.rstrip() in shown, (line, shown)
        # every candidate row of the side-by-side columns is on screen, each cut nowhere
        start = next(i for i, ln in enumerate(lines) if ln.startswith("target top"))
        for ln in lines[start:start + 1 + len(explain(target, rej).target_top)]:
            assert ln.rstrip() in shown, (ln, shown)
        # the marks are glyphs (* emitted, d drafted) and the styles attributes, not colours only
        text = modal.text()
        assert "emitted" in text.plain and "drafted" in text.plain  # the legend of the marks
        assert any(ln[:1] == "*" for ln in text.plain.splitlines()[start:])  # the emitted candidate's row
        assert "bold" in {str(span.style) for span in text.spans}
        drafted = next((e, i) for e in events if isinstance(e, PassEvent) for i in range(len(slots(e)))
                       if any(m.drafted for m in explain(e, i).target_top))
        marked = inspector_text(explain(*drafted), width)
        assert " d " in marked.plain or "*d " in marked.plain
        assert "underline" in {str(span.style) for span in marked.spans}
        await pilot.press("escape")  # back to the ribbon: its cursor is a glyph (▸) and reverse, not a colour
        await pilot.pause()
        assert any("▸" in ln for ln in screen_lines(app)) and any("inspect #" in ln for ln in screen_lines(app))
        await pilot.press("q")


# ------------------------------------------------------------------------------------------ replay, old traces
@pytest.mark.slow  # a live run and its replay in the TUI
async def test_a_replayed_trace_shows_the_same_inspector_text_as_the_live_run(sampled_run):
    events, path = sampled_run
    replayed = read_trace(path).events
    live_app = SpectuiApp(held_source(events), RunControl(Settings(draft_max=3, temperature=0.8)))
    cursors = []
    texts = []
    async with live_app.run_test(size=(100, 30)) as pilot:
        await settled(live_app, pilot, n_passes(events))
        await pilot.press("i", "down", "left", "enter")
        cursors.append(live_app.run_screen.cursor)
        texts.append(inspector(live_app).text().plain)
        await pilot.press("escape", "escape", "q")

    app = SpectuiApp(None, RunControl(), replay=ReplayPlayer(replayed, speed="max"), freeze_phase=VERDICT)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await settled(app, pilot, n_passes(events))
        n = len(app.player)
        await pilot.press("i")
        assert app.control.paused
        await pilot.press("down", "left")  # the same keys as in the live run: the replay does not step
        assert app.player.cursor == n
        assert app.run_screen.cursor == cursors[0]
        await pilot.press("enter")
        assert inspector(app).text().plain == texts[0]
        await pilot.press("escape", "escape")
        assert not app.run_screen.inspecting
        await pilot.press("left")  # stepping again
        assert app.player.cursor < n
        await pilot.press("q")


async def test_a_pass_without_inspector_data_says_so():
    events = sample_events(38)  # built as a version-2 trace would be read: no PassEvent.inspect
    app = SpectuiApp(held_source(events), RunControl(), freeze_phase=VERDICT)
    async with app.run_test(size=(80, 24)) as pilot:
        await settled(app, pilot, 38)
        await pilot.press("i", "enter")
        text = inspector(app).text().plain
        assert NO_DATA in text.replace("\n", " ") or NO_DATA.split(" (")[0] in text
        assert "pass 38" in text and "draft top" not in text
        assert NO_DATA.split(" (")[0] in "\n".join(screen_lines(app))
        await pilot.press("escape", "escape", "q")


# ------------------------------------------------------------------------------------------ --draft-p-min
def test_p_min_steps():
    assert P_MIN_STEPS[0] == 0.0 and list(P_MIN_STEPS) == sorted(P_MIN_STEPS)
    assert next_p_min(0.0, True) == 0.5 and next_p_min(0.95, True) == 0.95
    assert next_p_min(0.5, False) == 0.0 and next_p_min(0.0, False) == 0.0
    assert next_p_min(0.72, True) == 0.75 and next_p_min(0.72, False) == 0.7


async def test_p_min_keys_reach_the_engine_and_the_ribbon_marks_the_stop(make_engine, tiny_target,
                                                                       tiny_draft_noisy):
    engine = make_engine(tiny_target, tiny_draft_noisy)
    control = RunControl(Settings(draft_max=4, temperature=0.0, drafter="model"))
    control.pause()
    seen = []

    def source(c, p):
        for ev in engine.run(p, c, 60):
            seen.append(ev)
            yield ev

    app = SpectuiApp(source, control, prompt=PROMPT, n_predict=60)
    async with app.run_test(size=(100, 30)) as pilot:
        for _ in range(500):
            app.refresh_from_state()
            if app.snap is not None and app.snap.start is not None:
                break
            await pilot.pause(0.02)
        status = app.query_one(StatusLine)
        assert "p-min" not in status.text.plain
        await pilot.press("right_square_bracket")
        assert control.settings.draft_p_min == 0.5
        assert "p-min 0.5" in status.text.plain
        for _ in range(len(P_MIN_STEPS)):
            await pilot.press("right_square_bracket")
        assert control.settings.draft_p_min == 0.95 and "p-min 0.95" in status.text.plain
        await pilot.press("left_square_bracket")
        assert control.settings.draft_p_min == 0.9
        await pilot.press("right_square_bracket")
        await pilot.press("space")  # resume
        for _ in range(3000):
            app.refresh_from_state()
            if app.snap.end is not None and not app.running:
                break
            await pilot.pause(0.02)
        assert app.snap.end is not None
        passes = [e for e in seen if isinstance(e, PassEvent) and not e.prefill]
        assert passes and all(e.settings.draft_p_min == 0.95 for e in passes)
        stopped = [e for e in passes if e.draft_stop == DRAFT_STOP_P_MIN]
        assert stopped, "the noisy draft is rarely 95% sure"
        for e in stopped:
            assert len(e.drafts) < e.k and 0 <= e.draft_stop_p < 0.95
        # the ribbon marks such a pass
        p_min_views = [p for p in app.snap.recent if p.draft_stop == DRAFT_STOP_P_MIN]
        assert p_min_views
        ribbon = app.query_one(PassRibbon)
        assert P_MIN_MARK in ribbon.pass_line(p_min_views[-1], ribbon.styles_map(), 100, "", False).plain
        # the prediction panel says how many drafts a pass at k = 4 really makes (the cost model's D(4))
        app.refresh_from_state()
        await pilot.pause()
        pred = app.view.prediction
        assert pred is not None and pred.current_k == 4 and pred.stops_early(4)
        panel = app.query_one(PredictionPanel)
        assert f"k=4: {pred.drafted(4):.1f} drafts/pass" in panel.render().plain
        await pilot.press("q")
