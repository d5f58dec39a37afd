"""RaceApp: N recorded runs on one clock, one pane each.

The clock is the replay's: one ``ReplayPlayer`` plays the race's merged events (``Race.player_events``:
race times, a start gun at 0), and a worker thread feeds each event to its lane's ``ScreenState`` (the
run face's state, so every figure is ``spectui.stats``') and posts one wake-up message unless one is
waiting. The UI paints as the replay does (``spectui.tui.app``'s pace rules): a lane's new passes at most
``FRAME_HZ`` times a second, the newest pass's next animation phase on a one-shot timer per lane, the lane
headers' figures at most every ``STATS_INTERVAL_S`` (and at once when a lane finishes), nothing while
nothing changes.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from pathlib import Path

from textual import work
from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches

from ...views.animation import PassClock
from ...contract.control import RunControl
from ...views.race_outcome import outcome
from ...views.race_timeline import Race
from ...views.race_view import LaneView, RaceView
from ..run.app import FRAME_HZ, GIL_SWITCH_INTERVAL_S, STATS_INTERVAL_S, StateChanged
from ..shared.lifecycle import (
    exit_status,
    install_quit_signals,
    next_theme,
    quit_on_signal,
    register_themes,
    remove_signals,
)
from ...views.state import ScreenSnapshot, ScreenState
from ..shared.themes import VARIABLE_DEFAULTS, check_theme
from ...views.view import ScreenView
from .screen import RaceScreen


def verdict_lines(race: Race) -> tuple[str, ...]:
    """The finish line's text once every lane has finished (all from the traces)."""
    out = outcome(race)
    names = tuple(r.name for r in out.lanes)
    first = out.verdict() + " · " + out.divergence.text(names)
    return (first, *out.why())


class RaceApp(App):
    TITLE = "spectui race"
    CSS_PATH = Path(__file__).with_name("race.tcss")
    BINDINGS = [
        Binding("c", "cycle_theme", "theme"),
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "interrupt", "quit", show=False, priority=True),  # the quit, with status 130
    ]

    def __init__(self, race: Race, *, theme: str | None = None, speed: float | str = 1.0,
                 freeze_phase: str | None = None, title: str = "spectui race") -> None:
        self.theme_name = check_theme(theme)
        super().__init__()
        self.race = race
        self.title = title
        self.player = race.player(speed)
        self.control = RunControl()
        self.states = [ScreenState(keep_events=False) for _ in race.lanes]
        self.snaps: list[ScreenSnapshot | None] = [None] * len(race.lanes)
        self._seen = [-1] * len(race.lanes)
        self.clocks = [PassClock(freeze_phase) for _ in race.lanes]
        self.verdict = verdict_lines(race)  # known from the traces; shown once every lane finished
        self.race_screen = RaceScreen(len(race.lanes))
        self.view = RaceView()
        self._engine_lock = threading.Lock()
        self._workers_active = 0
        self._workers_lock = threading.Lock()
        self._wake_posted = False
        self._force = True
        self._last_paint = float("-inf")
        self._stats_t = float("-inf")
        self._stats_due = False
        self._frame_timer: asyncio.TimerHandle | None = None
        self._frame_at: float | None = None
        self._signals: list[int] = []
        self.paints = 0
        self.worker_error = ""  # the worker's error, if it failed
        self.finished_at: dict[int, float] = {}  # lane -> time.monotonic() of the paint that showed it finished
        self.gun_at: float | None = None  # time.monotonic() when the worker delivered the start gun
        self.delivered_at: dict[int, float] = {}  # lane -> time.monotonic() its last event was fed

    # ------------------------------------------------------------------ setup
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def get_default_screen(self) -> RaceScreen:
        return self.race_screen

    def on_mount(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL_S))
        register_themes(self, self.theme_name)
        self._signals = install_quit_signals(self)
        self.start_worker()
        self.call_after_refresh(self.repaint_all)

    def on_unmount(self) -> None:
        self.control.stop()
        if self._frame_timer is not None:
            self._frame_timer.cancel()
            self._frame_timer = None
        if getattr(self, "_switch_interval", None):
            sys.setswitchinterval(self._switch_interval)
        remove_signals(self._signals)

    # ------------------------------------------------------------------ the worker (the one clock)
    @property
    def running(self) -> bool:
        return self._workers_active > 0

    def start_worker(self) -> None:
        with self._workers_lock:
            self._workers_active += 1
        self._play(self.control)

    @work(thread=True, group="race", exit_on_error=False)
    def _play(self, control: RunControl) -> None:
        try:
            with self._engine_lock:
                for i, _ev in self.player.iter_indexed(control):
                    loc = self.race.locate(i)
                    if loc is None:
                        self.gun_at = time.monotonic()
                    else:
                        li, j = loc
                        lane = self.race.lanes[li]
                        if self.states[li].feed(lane.events[j], index=j) and j == len(lane.events) - 1:
                            self.delivered_at[li] = time.monotonic()
                    self._wake()
        except Exception as exc:  # noqa: BLE001 - shown in the finish line; the UI stays up
            self.worker_error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._workers_lock:
                self._workers_active -= 1
            self._wake_posted = False
            self._wake()

    def _wake(self) -> None:
        if not self._wake_posted:
            self._wake_posted = True
            self.post_message(StateChanged())

    def on_state_changed(self, message: StateChanged) -> None:
        self._request_paint(self._last_paint + 1 / FRAME_HZ)

    def play_on(self) -> None:
        """A new worker from the cursor (the old one stopped at the end, or at a pause it was told to)."""
        if not self.player.at_end and not self.running:
            self.control = RunControl()
            self.start_worker()
        elif self.running:
            pass

    def rebuild(self) -> None:
        """After a seek: each lane's state from the events before the cursor."""
        for state, events in zip(self.states, self.race.split(self.player.cursor)):
            state.rebuild(events)
        for clock in self.clocks:
            clock.reset()
        self.repaint_all()

    def lane_snapshot(self, i: int) -> ScreenSnapshot | None:
        return self.snaps[i]

    # ------------------------------------------------------------------ the UI clock
    def _request_paint(self, at: float) -> None:
        if self._frame_at is not None and self._frame_at <= at:
            return
        if self._frame_timer is not None:
            self._frame_timer.cancel()
        self._frame_at = at
        self._frame_timer = asyncio.get_running_loop().call_later(
            max(0.001, at - time.monotonic()), self._on_frame_timer)

    def _on_frame_timer(self) -> None:
        self._frame_timer = None
        self._frame_at = None
        self.refresh_from_state()

    def repaint_all(self) -> None:
        self._force = True
        self.refresh_from_state()

    def refresh_from_state(self) -> None:
        try:
            self._paint(time.monotonic())
        except NoMatches:
            pass

    def _paint(self, now: float) -> None:
        self._wake_posted = False
        screen = self.race_screen
        if not screen.is_mounted:  # a wake-up before the screen is up: look again shortly
            self._request_paint(now + 1 / FRAME_HZ)
            return
        screen.apply_layout()
        force, self._force = self._force, False
        race = self.race
        old = self.view
        cursor = self.player.cursor
        clock_s = race.time_at(cursor)
        passes = [force] * len(race.lanes)
        new_end = False
        lanes = []
        places = sorted(self.finished_at, key=lambda i: race.lanes[i].finish_s)
        inspect_lane = screen.focus_lane if screen.cursor is not None else -1
        for i, (lane, state) in enumerate(zip(race.lanes, self.states)):
            if state.version != self._seen[i] or force:
                snap = self.snaps[i] = state.snapshot()
                self._seen[i] = snap.version
                passes[i] = self._stats_due = True
            snap = self.snaps[i]
            lp = snap.last_pass if snap is not None else None
            if lp is not None:
                self.clocks[i].arrive(lp, bool(lp.drafts), now)
            finished = snap is not None and snap.n_events >= len(lane.events)
            if finished and i not in self.finished_at:
                self.finished_at[i] = now
                new_end = True
                places = sorted(self.finished_at, key=lambda j: race.lanes[j].finish_s)
            elif not finished:
                self.finished_at.pop(i, None)
            phase = self.clocks[i].phase(now)
            sv = ScreenView(snap=snap, phase=phase, theme=self.theme,
                            inspect=screen.cursor if i == inspect_lane else None)
            prev = old.lanes[i].screen if i < len(old.lanes) else None
            if prev is None or prev.phase != sv.phase or prev.inspect != sv.inspect:
                passes[i] = True
            state_label = "PAUSED" if self.control.paused else ("RACING" if self.running else "STOPPED")
            lanes.append(LaneView(
                name=lane.name, label=lane.label, screen=sv, elapsed_s=min(clock_s, lane.finish_s),
                finished=finished, finish_s=lane.finish_s,
                place=places.index(i) + 1 if i in places else 0, focused=i == screen.focus_lane,
                state=state_label, truncated=lane.truncated))
        done = all(lv.finished for lv in lanes)
        view = RaceView(lanes=tuple(lanes), clock_s=clock_s, speed=self.player.speed, paused=self.control.paused,
                        done=done, from_start=race.from_start, any_prompt=race.any_prompt, note=race.note,
                        verdict=self.verdict, theme=self.theme, error=self.worker_error)
        stats = self._stats_due and (force or new_end or done or now - self._stats_t >= STATS_INTERVAL_S)
        race_changed = force or new_end or (view.speed, view.paused, view.done) != (old.speed, old.paused, old.done) \
            or (any(passes) and view.clock_s != old.clock_s)
        if any(passes) or stats or race_changed:
            if stats:
                self._stats_due = False
                self._stats_t = now
            self.view = view
            self.paints += 1
            self._last_paint = now
            with self.batch_update():
                screen.show(view, passes=passes, headers=stats or force or new_end, race=race_changed)
        laters = [c.next_change(now) for c in self.clocks]
        laters = [x for x in laters if x is not None]
        if laters:
            self._request_paint(now + min(laters))
        if self._stats_due:
            self._request_paint(self._stats_t + STATS_INTERVAL_S + 1 / FRAME_HZ)

    # ------------------------------------------------------------------ keys
    def action_cycle_theme(self) -> None:
        self.theme = next_theme(self.theme)
        self.repaint_all()
        self.notify(f"theme: {self.theme}", timeout=2)

    def action_quit(self) -> None:
        self.control.stop()
        self.exit()

    def action_interrupt(self) -> None:
        """Ctrl+C typed in the TUI: the clean quit, with SIGINT's exit status (130), as every face."""
        quit_on_signal(self, signal.SIGINT)

    def stop_engine(self, timeout: float = 15.0) -> bool:
        """Stop the replay worker (``spectui.tui.run.app.run_app`` calls this on every way out)."""
        self.control.stop()
        t0 = time.monotonic()
        while self.running and time.monotonic() - t0 < timeout:
            time.sleep(0.01)
        return not self.running


def run_race(race: Race, theme: str | None = None, speed: float | str = 1.0) -> int:
    app = RaceApp(race, theme=theme, speed=speed)
    try:
        app.run()
    finally:
        app.stop_engine()
    return exit_status(app)  # 0, or 128 + the signal (Ctrl+C, SIGTERM, SIGHUP)
