"""RaceApp: N recorded runs on one clock, one pane each.

The clock is the replay's: one ``ReplayPlayer`` plays the race's merged events (``Race.player_events``:
race times, a start gun at 0), and a worker thread feeds each event to its lane's ``ScreenState`` (the
run face's state, so every figure is ``spectui.analysis.stats``') and posts one wake-up message unless one is
waiting. The UI paints as the run face does (``spectui.tui.shared.paced_app``: the worker's bookkeeping,
the pace rules, the themes, the signals and the help key are written there once): a lane's new passes at
most ``FRAME_HZ`` times a second, the newest pass's next animation phase on a one-shot timer per lane, the
lane headers' figures at most every ``STATS_INTERVAL_S`` (and at once when a lane finishes), nothing while
nothing changes.
"""

from __future__ import annotations

import time
from pathlib import Path

from textual import work

from ...contract.control import RunControl
from ...views.animation import PassClock
from ...views.race_outcome import outcome
from ...views.race_timeline import Race
from ...views.race_view import LaneView, RaceView
from ...views.state import ScreenSnapshot, ScreenState
from ...views.view import ScreenView
from ..shared.app import FACE_BINDINGS
from ..shared.paced_app import PacedFaceApp, run_face
from .help_screen import RaceHelpScreen
from .screen import RaceScreen


def verdict_lines(race: Race) -> tuple[str, ...]:
    """The finish line's text once every lane has finished (all from the traces)."""
    out = outcome(race)
    names = tuple(r.name for r in out.lanes)
    first = out.verdict() + " · " + out.divergence.text(names)
    return (first, *out.why())


class RaceApp(PacedFaceApp):
    TITLE = "spectui race"
    CSS_PATH = Path(__file__).with_name("race.tcss")
    BINDINGS = FACE_BINDINGS

    def __init__(self, race: Race, *, theme: str | None = None, speed: float | str = 1.0,
                 freeze_phase: str | None = None, title: str = "spectui race") -> None:
        super().__init__(theme, RunControl())
        self.race = race
        self.title = title
        self.player = race.player(speed)
        self.states = [ScreenState(keep_events=False) for _ in race.lanes]
        self.snaps: list[ScreenSnapshot | None] = [None] * len(race.lanes)
        self._seen = [-1] * len(race.lanes)
        self.clocks = [PassClock(freeze_phase) for _ in race.lanes]
        self.verdict = verdict_lines(race)  # known from the traces; shown once every lane finished
        self.race_screen = RaceScreen(len(race.lanes))
        self.view = RaceView()
        self.worker_error = ""  # the worker's error, if it failed
        self.finished_at: dict[int, float] = {}  # lane -> time.monotonic() of the paint that showed it finished
        self.gun_at: float | None = None  # time.monotonic() when the worker delivered the start gun
        self.delivered_at: dict[int, float] = {}  # lane -> time.monotonic() its last event was fed

    # ------------------------------------------------------------------ setup
    def get_default_screen(self) -> RaceScreen:
        return self.race_screen

    def face_screen(self) -> RaceScreen:
        return self.race_screen

    def pass_clocks(self) -> list[PassClock]:
        return self.clocks

    def help_screen(self) -> RaceHelpScreen:
        return RaceHelpScreen()

    # ------------------------------------------------------------------ the worker (the one clock)
    def start_worker(self) -> None:
        self.worker_starts()
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
                    self.wake()
        except Exception as exc:  # noqa: BLE001 - shown in the finish line; the UI stays up
            self.worker_error = f"{type(exc).__name__}: {exc}"
        finally:
            self.worker_done()

    def restart_worker(self) -> None:
        """A new worker from the player's cursor (shared.replay_keys' play_on: there is more to play)."""
        self.control = RunControl()
        self.start_worker()

    def rebuild(self) -> None:
        """After a seek: each lane's state from the events before the cursor."""
        for state, events in zip(self.states, self.race.split(self.player.cursor)):
            state.rebuild(events)
        for clock in self.clocks:
            clock.reset()
        self.repaint_all()

    def lane_snapshot(self, i: int) -> ScreenSnapshot | None:
        return self.snaps[i]

    # ------------------------------------------------------------------ a paint
    def paint(self, now: float, force: bool) -> None:
        screen = self.race_screen
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
        stats = self.stats_turn(now, urgent=force or new_end or done)
        race_changed = force or new_end or (view.speed, view.paused, view.done) != (old.speed, old.paused, old.done) \
            or (any(passes) and view.clock_s != old.clock_s)
        if any(passes) or stats or race_changed:
            self.view = view
            self.painted(now)
            with self.batch_update():
                screen.show(view, passes=passes, headers=stats or force or new_end, race=race_changed)


def run_race(race: Race, theme: str | None = None, speed: float | str = 1.0) -> int:
    return run_face(RaceApp(race, theme=theme, speed=speed))  # 0, or 128 + the signal (Ctrl+C, SIGTERM, SIGHUP)
