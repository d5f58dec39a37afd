"""PacedFaceApp: a FaceApp whose worker thread feeds pass events into a state and whose UI paints on its own
clock, written once for the run face (SpectuiApp: one run) and the race face (RaceApp: one lane a run).

The worker (``start_worker``, one at a time: a restart waits for the old one) calls ``wake()`` after each
event and ``worker_done()`` on its way out. The UI paints only when something changed: new passes at most
``FRAME_HZ`` times a second, the newest pass's next animation phase (a one-shot timer on the event loop,
only while a pass animates: ``PassClock.next_change``), the statistics at most every ``STATS_INTERVAL_S``
(``stats_turn``), nothing while nothing changes. While the face's worker decodes on this machine
(``decoding()``: a live run's engine, the machine probe after it) the pace is ``DECODE_FRAME_HZ`` and
``DECODE_STATS_INTERVAL_S``: every CPU-millisecond the UI takes on a small machine is taken from the decode
(its OpenMP threads share the cores, and one of them descheduled stalls them all). A key, a restart, the
run's end and a stop still paint at once. A face implements ``start_worker``, ``face_screen()``,
``pass_clocks()`` and ``paint(now, force)`` (and ``decoding()`` when its worker decodes); the screen's
``show`` hands the view to the widgets.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import threading
import time

from textual.css.query import NoMatches

from ...contract.control import RunControl
from ...views.animation import PassClock
from .app import FaceApp, StateChanged
from .lifecycle import exit_status
from .screen import FaceScreen

FRAME_HZ = 4  # at most this many paints a second for new passes: as often as the eye can follow
STATS_INTERVAL_S = 1.0  # the statistics panels (and the cost model) at most once a second
# while this machine decodes (PacedFaceApp.decoding): half the frames (passes then usually arrive several a frame,
# and a pass that arrives with others skips its pending phase: PassClock.arrive), the statistics every 2 s
DECODE_FRAME_HZ = 2
DECODE_STATS_INTERVAL_S = 2.0
# The engine thread re-takes the GIL after every ctypes call into llama.cpp; while the UI thread renders,
# each of those waits up to the interpreter's switch interval (5 ms by default). A short interval while
# the app runs keeps the engine from queueing behind repaints.
GIL_SWITCH_INTERVAL_S = 0.0005


class PacedFaceApp(FaceApp):

    def __init__(self, theme: str | None, control: RunControl) -> None:
        super().__init__(theme)
        self.control = control
        self._engine_lock = threading.Lock()  # one worker in the engine (or the player) at a time
        self._active = 0
        self._active_lock = threading.Lock()
        self.engine_idle = threading.Event()
        self.engine_idle.set()
        self._force = True  # the next paint repaints every widget
        self._last_paint = float("-inf")
        self._stats_t = float("-inf")
        self._stats_due = False  # a new snapshot whose statistics are not on screen yet
        self._frame_timer: asyncio.TimerHandle | None = None
        self._frame_at: float | None = None
        self.paints = 0  # paints done (the overhead benchmark and the pace tests read it)

    # ------------------------------------------------------------------ what a face implements
    def start_worker(self) -> None:  # pragma: no cover - every face has one
        raise NotImplementedError

    def face_screen(self) -> FaceScreen:  # pragma: no cover
        raise NotImplementedError

    def pass_clocks(self) -> list[PassClock]:  # pragma: no cover
        raise NotImplementedError

    def paint(self, now: float, force: bool) -> None:  # pragma: no cover
        """Build the frozen view for ``now`` and hand the screen what changed (``painted`` after a paint)."""
        raise NotImplementedError

    def decoding(self) -> bool:
        """Whether the worker decodes on this machine now (the UI then paints at the decode's pace). A face
        that only replays recordings keeps this answer."""
        return False

    def frame_s(self) -> float:
        """The shortest time between two paints for new passes, now."""
        return 1 / (DECODE_FRAME_HZ if self.decoding() else FRAME_HZ)

    def stats_s(self) -> float:
        """The shortest time between two repaints of the statistics, now."""
        return DECODE_STATS_INTERVAL_S if self.decoding() else STATS_INTERVAL_S

    # ------------------------------------------------------------------ start and stop
    def start_face(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL_S))
        self._freeze_heap()
        self.start_worker()
        self.call_after_refresh(self.repaint_all)

    def _freeze_heap(self) -> None:
        """Before the worker starts: the garbage so far collected (a previous face's, the demo's last act), then
        the objects alive (Textual's, the modules', the loaded engine's: most of the heap, and none of them
        garbage soon) left out of the collector's full passes until the face stops: such a pass walks every
        object holding the GIL, ~100 ms on a small loaded machine, while the engine's thread waits for the GIL
        between two decodes. (``gc.freeze``; ``stop_face`` undoes it.)"""
        if not getattr(self, "_frozen", False):
            gc.collect()
            gc.freeze()
            self._frozen = True

    def stop_face(self) -> None:
        if getattr(self, "_frozen", False):
            gc.unfreeze()
            self._frozen = False
        self.control.stop()
        if self._frame_timer is not None:
            self._frame_timer.cancel()
            self._frame_timer = None
        if getattr(self, "_switch_interval", None):
            sys.setswitchinterval(self._switch_interval)

    def action_quit(self) -> None:
        # q ends the process within the deadline even when the app cannot finish its stop (a signal armed
        # it already, with its own status: the first arming counts)
        self.deadline.arm(exit_status(self, failed=self.run_failed()))
        self.control.stop()
        self.exit()

    def run_failed(self) -> bool:
        """Whether a live run failed (its exit status is then 1). A replayed recording never fails with it:
        the faces that only replay (the race, the demo's acts) keep this answer."""
        return False

    def stop_engine(self, timeout: float = 15.0) -> bool:
        """Stop the worker (``run_app`` calls this on every way out). True if it stopped."""
        return self.stop_worker(timeout)

    # ------------------------------------------------------------------ the worker's bookkeeping
    def worker_starts(self) -> None:
        """Before a worker is started: ``running`` from now until its ``worker_done``."""
        with self._active_lock:
            self._active += 1
            self.engine_idle.clear()

    def worker_done(self) -> None:
        """The worker's last act (in its ``finally``): the run state (ENDED, STOPPED) depends on it."""
        with self._active_lock:
            self._active -= 1
            if self._active == 0:
                self.engine_idle.set()
        self.state_seen()
        self.wake()

    @property
    def running(self) -> bool:
        return not self.engine_idle.is_set()

    def stop_worker(self, timeout: float) -> bool:
        """Stop the run and wait for the worker to leave the engine (or the player). True if it did."""
        self.control.stop()
        return self.engine_idle.wait(timeout)

    def on_state_changed(self, message: StateChanged) -> None:
        # the flag stays set until the paint pulls the state: passes arriving in between post nothing
        self._request_paint(self._last_paint + self.frame_s())

    # ------------------------------------------------------------------ the UI clock
    def _request_paint(self, at: float) -> None:
        """Paint at time ``at`` (time.monotonic) at the latest; one timer holds the earliest request."""
        if self._frame_at is not None and self._frame_at <= at:
            return
        if self._frame_timer is not None:
            self._frame_timer.cancel()
        self._frame_at = at
        # the event loop's own timer: a Textual Timer is a task per request, and there are several a second
        self._frame_timer = asyncio.get_running_loop().call_later(
            max(0.001, at - time.monotonic()), self._on_frame_timer)

    def _on_frame_timer(self) -> None:
        self._frame_timer = None
        self._frame_at = None
        self.refresh_from_state()

    def settings_changed(self) -> None:
        """A key changed the settings, the pause state or the replay speed: repaint what shows it, now."""
        self.refresh_from_state()

    def repaint_all(self) -> None:
        """Repaint every widget from the state now (start, seek, restart, theme)."""
        self._force = True
        self.refresh_from_state()

    def repaint_after_theme(self) -> None:
        self.repaint_all()

    def refresh_from_state(self) -> None:
        """Pull the latest snapshot (if it changed), advance the animation, repaint what changed."""
        try:
            self._paint(time.monotonic())
        except NoMatches:  # a paint while the screen is being built or torn down (startup, quit)
            pass

    def _paint(self, now: float) -> None:
        self.state_seen()  # before the state is read: a pass fed after this posts a new wake-up
        screen = self.face_screen()
        if not screen.is_mounted:  # a wake-up before the screen is up: look again shortly
            self._request_paint(now + self.frame_s())
            return
        screen.apply_layout()  # a no-op unless the terminal size changed
        force, self._force = self._force, False
        self.paint(now, force)
        laters = [x for x in (c.next_change(now) for c in self.pass_clocks()) if x is not None]
        if laters:  # a newest pass is animating: wake for its next phase, not before
            self._request_paint(now + min(laters))
        if self._stats_due:  # statistics held back by the throttle: with the next pass's paint once it
            # allows, or on their own a frame later if no pass comes (so a steady run adds no paints)
            self._request_paint(self._stats_t + self.stats_s() + self.frame_s())

    def stats_turn(self, now: float, urgent: bool) -> bool:
        """Whether this paint repaints the statistics: new ones are due and ``urgent`` (a forced paint, an
        end) or ``stats_s()`` has passed since the last time. True marks them painted."""
        if not (self._stats_due and (urgent or now - self._stats_t >= self.stats_s())):
            return False
        self._stats_due = False
        self._stats_t = now
        return True

    def painted(self, now: float) -> None:
        """Count a paint (the face calls this as it hands the screen a new view)."""
        self.paints += 1
        self._last_paint = now


def run_face(app: PacedFaceApp, stop_timeout: float = 15.0) -> int:
    """Run a paced face (the run's SpectuiApp, the race's RaceApp, the demo's looping acts); stop its worker
    on every way out; its exit status (spectui.contract.exitcodes): 128 + the signal that stopped it (Ctrl+C:
    130), else 1 when a live run failed (RunEnded.error, or an error on the status line), else 0."""
    try:
        app.run()
    finally:
        app.stop_engine(stop_timeout)
    return exit_status(app, failed=app.run_failed())
