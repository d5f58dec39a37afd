"""The race's TUI (spectui/tui/race) on small traces with known timings: faithful clocks (each pane finishes
at its trace's own decode time, on screen within one paint interval), a trace raced against itself is a
tie, the keys of the replay on the one clock (pause, step, speed, restart), tab and the token inspector in
either pane, the finish line."""

from __future__ import annotations

import asyncio
import time

import pytest
from race_traces import write_run

from spectui.contract.events import PassEvent
from spectui.tui.race.app import RaceApp
from spectui.tui.shared.inspector_screen import InspectorScreen
from spectui.tui.shared.paced_app import FRAME_HZ
from spectui.views.inspector_model import explain
from spectui.views.race_timeline import load_race

SLACK_S = 0.25  # one late wake-up of a thread on a loaded 2-core machine (load 10-17 while this was written)


@pytest.fixture
def pair(tmp_path):
    a = write_run(tmp_path / "a.jsonl", per_pass=1, pass_ms=30.0)  # 40 passes: 1.20 s
    b = write_run(tmp_path / "b.jsonl", per_pass=3, pass_ms=50.0)  # 14 passes: 0.70 s
    return a, b


async def wait_until(cond, timeout=15.0):
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError("timed out")
        await asyncio.sleep(0.02)


@pytest.mark.timing  # a race at 1x on the wall clock
async def test_each_pane_finishes_at_its_traces_decode_time(pair):
    race = load_race(list(pair))
    app = RaceApp(race, speed=1)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(lambda: len(app.finished_at) == 2)
        for i, lane in enumerate(race.lanes):
            delivered = app.delivered_at[i] - app.gun_at
            painted = app.finished_at[i] - app.gun_at
            # the clock: the lane's last event is due at its trace's own decode time (lateness does not add up)
            assert lane.finish_s - 0.01 <= delivered <= lane.finish_s + SLACK_S, (i, delivered)
            # the screen: it shows the lane finished within one paint interval of that
            assert 0 <= painted - delivered <= 1 / FRAME_HZ + SLACK_S, (i, painted, delivered)
        await pilot.pause()
        app.refresh_from_state()
        finish = app.race_screen.finish.render().plain
        assert "FINISH  B finished first, 0.50 s sooner (1.71x) · same 41 tokens" in finish
        headers = [h.render().plain for h in app.race_screen.headers]
        assert "FINISHED 2nd 1.20 s" in headers[0] and "FINISHED 1st 0.70 s" in headers[1]
        assert "41 tokens · 33.33 tok/s" in headers[0] and "no drafts" in headers[0] and "accept 100%" in headers[1]
        # each pane's text is its own trace's
        assert app.race_screen.streams[1].render().plain.startswith(" w0 w1 w2")


async def test_a_trace_raced_against_itself_is_a_tie_on_screen(pair):
    race = load_race([pair[0], pair[0]])
    app = RaceApp(race, speed="max")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(lambda: len(app.finished_at) == 2)
        await pilot.pause()
        app.refresh_from_state()
        assert "FINISH  a tie (A and B: 1.20 s)" in app.race_screen.finish.render().plain


@pytest.mark.timing  # a race at 1x on the wall clock
async def test_pause_step_speed_and_restart_move_the_one_clock(pair):
    race = load_race(list(pair))
    app = RaceApp(race, speed=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("space")
        assert app.control.paused
        await pilot.press("right")  # one pass on the race clock
        at = app.player.cursor
        await pilot.press("right")
        assert app.player.cursor > at
        n_a, n_b = app.states[0].n_events, app.states[1].n_events
        assert (n_a, n_b) == tuple(len(x) for x in race.split(app.player.cursor))
        await pilot.press("left")
        assert app.player.cursor == at
        speed = app.player.speed
        await pilot.press("plus")
        assert app.player.speed > speed
        await pilot.press("minus", "minus")
        assert app.player.speed < speed
        await pilot.press("r")
        assert not app.control.paused
        app.player.speed = "max"
        await wait_until(lambda: len(app.finished_at) == 2)
        assert app.player.at_end


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_tab_and_the_inspector_in_either_pane(pair):
    race = load_race(list(pair))
    app = RaceApp(race, speed="max")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(lambda: len(app.finished_at) == 2)
        await pilot.pause()
        screen = app.race_screen
        assert screen.focus_lane == 0
        await pilot.press("tab")
        assert screen.focus_lane == 1
        assert app.view.lanes[1].focused and not app.view.lanes[0].focused
        await pilot.press("i")
        assert screen.cursor is not None
        last_b = app.snaps[1].last_pass
        assert screen.cursor.pass_index == last_b.index  # the focused pane's newest token
        assert app.view.lanes[1].screen.inspect == screen.cursor and app.view.lanes[0].screen.inspect is None
        cursor = screen.cursor
        await pilot.press("left")  # the cursor moves (not the clock): into the pass before, its last token
        assert screen.cursor != cursor and screen.cursor.pass_index == last_b.index - 1
        assert app.player.at_end
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, InspectorScreen)
        # the very event of pane B's pass, explained (spectui.inspect, as in a run)
        event = next(e for e in race.lanes[1].events
                     if isinstance(e, PassEvent) and e.index == screen.cursor.pass_index)
        assert app.screen.view == explain(event, screen.cursor.slot)
        assert app.screen.view.slot.verdict in ("accepted", "bonus")
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen, app.screen_stack
        await pilot.press("tab")  # the cursor follows to pane A's newest token
        assert screen.focus_lane == 0 and screen.cursor.pass_index == app.snaps[0].last_pass.index
        await pilot.press("escape")
        assert screen.cursor is None


@pytest.mark.timing  # a race at 1x on the wall clock
async def test_paints_follow_the_replay_pace(pair):
    """At 1x a lane's passes are painted at most FRAME_HZ times a second (plus animation phases), and a
    finished race paints nothing more."""
    race = load_race(list(pair))
    app = RaceApp(race, speed=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(lambda: len(app.finished_at) == 2)
        t = app.finished_at[0] - app.gun_at
        n = app.paints
        assert n <= (FRAME_HZ + 2 * 2) * (t + 1) + 4, n  # frames + two phase changes per lane per pass shown
        await asyncio.sleep(0.6)
        await pilot.pause()
        assert app.paints <= n + 2  # the statistics' last refresh at most


async def test_ctrl_c_quits_with_sigints_status(pair):
    from spectui.tui.shared.lifecycle import exit_status

    app = RaceApp(load_race(list(pair)), speed=1)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert exit_status(app) == 130


@pytest.mark.slow  # seconds of processes or large inputs: the full suite runs it, the fast lane does not
async def test_help_page_says_what_the_race_shows_and_names_real_keys(pair):
    """? opens the race's help page (the lanes, the clock, the finish line, the keys), escape closes it and
    the race goes on; every key the page names is bound on the race screen or the app."""
    from spectui.tui.race.help_screen import RACE_KEYS, RaceHelpScreen

    app = RaceApp(load_race(list(pair)), speed="max")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, RaceHelpScreen)
        text = app.screen.query_one("#help-text").render().plain
        for words in ("lane header", "race clock", "finish line", "first token", "--from-start", "lossless",
                      "tokens per pass", "tab / shift+tab", "struck through"):
            assert words in text, words
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.race_screen
        await wait_until(lambda: len(app.finished_at) == 2)  # the race went on under the page
    screen_keys = {k for b in app.race_screen.BINDINGS for k in b.key.split(",")}
    aliases = {"space": "space", "p": "p", "→": "right", "←": "left", "+": "plus", "-": "minus",
               ">": "greater_than_sign", "<": "less_than_sign", "home": "home", "end": "end", "r": "r",
               "tab": "tab", "shift+tab": "shift+tab"}
    for key, _what in RACE_KEYS:
        for name in key.replace("(", " ").replace(")", " ").replace("/", " ").split():
            assert aliases[name] in screen_keys, name
