"""AttachApp: the attach face in the terminal (``spectui attach URL...`` without ``--headless``, and
``spectui replay`` of an attach trace).

Data flows one way: a ``@work(thread=True)`` worker runs the attach session
(:class:`~spectui.attach.session.AttachSession`: scraper and request threads, events in arrival order) or
replays a recorded session at its recorded pace, and feeds every event to the trace recorder (live,
``--record``) and to :class:`~spectui.views.attach_state.AttachState`; then it posts one ``StateChanged``
unless one is already waiting. The UI paints at most ``FRAME_HZ`` times a second: one frozen AttachView per
paint, handed to the widgets by the screen. Quitting (q, Ctrl+C, SIGTERM, SIGHUP) stops the session; the
worker still writes ``AttachEnded``, so a recording stays readable.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Iterable

from textual import work
from textual.css.query import NoMatches
from textual.timer import Timer

from ...contract.errors import SpectuiError
from ...contract.events import AttachStarted
from ...recording.player import paced
from ...views.attach_state import AttachState, AttachView
from ..shared.app import FACE_BINDINGS, FaceApp, StateChanged
from ..shared.lifecycle import exit_status
from .attach_screen import AttachScreen
from .help_screen import AttachHelpScreen

FRAME_HZ = 10  # at most this many paints a second (chunks of a streamed request arrive faster)


class AttachApp(FaceApp):
    TITLE = "spectui attach"
    CSS_PATH = Path(__file__).parent.parent / "attach.tcss"  # the faces' stylesheets sit in tui/
    BINDINGS = FACE_BINDINGS

    def __init__(self, *, session=None, events: Iterable[Any] | None = None, request_mode: bool = False,
                 speed: float = 1.0, recorder=None, theme: str | None = None) -> None:
        super().__init__(theme)
        if (session is None) == (events is None):
            raise SpectuiError("AttachApp needs a live session or recorded events")
        self.session = session
        self.events = events
        self.replay = events is not None
        self.speed = speed
        self.recorder = recorder
        self.request_mode = request_mode
        self.state = AttachState()
        self.view = AttachView()
        self.stop = threading.Event()
        self.done = threading.Event()
        self._paint_timer: Timer | None = None
        self._last_paint = float("-inf")
        self.paints = 0

    # ------------------------------------------------------------------ setup
    def get_default_screen(self) -> AttachScreen:
        return AttachScreen(self.request_mode)

    def start_face(self) -> None:
        self._run_worker()
        self.call_after_refresh(self.paint)

    def stop_face(self) -> None:
        self.stop_session()

    # ------------------------------------------------------------------ the worker
    @work(thread=True, group="attach", exit_on_error=False)
    def _run_worker(self) -> None:
        try:
            if self.session is not None:
                self.session.run(self._sink)
            else:
                for ev in paced(self.events, self.speed, sleep=self.stop.wait):
                    if self.stop.is_set():
                        break
                    self._sink(ev)
        except SpectuiError as exc:
            self.state.set_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown on the status line; the UI stays up
            self.state.set_error(f"{type(exc).__name__}: {exc}")
        finally:
            self.done.set()
            self.state_seen()
            self.wake()

    def _sink(self, ev: Any) -> None:
        if self.recorder is not None:
            self.recorder.write(ev)
        self.state.feed(ev)
        self.wake()

    def on_state_changed(self, message: StateChanged) -> None:
        self.state_seen()
        due = self._last_paint + 1 / FRAME_HZ - time.monotonic()
        if due <= 0:
            self.paint()
        elif self._paint_timer is None:
            self._paint_timer = self.set_timer(due, self._on_timer)

    def _on_timer(self) -> None:
        self._paint_timer = None
        self.paint()

    def stop_session(self, timeout: float = 10.0) -> bool:
        """Stop the session (or the replay) and wait for the worker to write AttachEnded."""
        self.stop.set()
        if self.session is not None:
            self.session.stop.set()
        return self.done.wait(timeout)

    # ------------------------------------------------------------------ painting
    def run_state(self) -> tuple[str, str]:
        st = self.state
        if st.error:
            return f"ERROR: {st.error}", "red"
        if st.end is not None:
            what = "REPLAY END" if self.replay else "ENDED"
            return f"{what}: {st.end.reason}" + (f" ({st.end.error})" if st.end.error else ""), "yellow"
        if self.stop.is_set():
            return "STOPPING", "yellow"
        if self.replay:
            return "REPLAY", "magenta"
        if st.start is None:
            return "CONNECTING", "blue"
        return ("REQUEST" if self.request_mode else "WATCHING"), "green"

    def paint(self) -> None:
        if not self.screen_stack:  # a timer that fires while the app shuts down (its screens already gone)
            return
        screen = self.screen
        if not isinstance(screen, AttachScreen) or not screen.is_mounted:
            return
        try:
            screen.apply_layout()
            self.view = self.state.view(self.run_state(), self.replay, self.theme)
            self._last_paint = time.monotonic()
            self.paints += 1
            with self.batch_update():
                screen.show(self.view)
        except NoMatches:  # a paint while the screen is built or torn down
            pass

    # ------------------------------------------------------------------ keys
    def repaint_after_theme(self) -> None:
        self.paint()

    def help_screen(self) -> AttachHelpScreen:
        return AttachHelpScreen()

    def action_quit(self) -> None:
        self.stop.set()
        if self.session is not None:
            self.session.stop.set()
        self.exit()

    def last_words(self) -> None:
        """Before the deadline ends the process (FaceApp): the session stopped, the recording flushed."""
        self.stop_session(2.0)
        flush = getattr(self.recorder, "flush", None)
        if flush is not None:
            try:
                flush()
            except (OSError, ValueError):
                pass


# ---------------------------------------------------------------------- entry points
def run_attach_live(session, recorder=None, theme: str | None = None) -> int:
    """The attach TUI over a live AttachSession. Returns the exit code; the recorder is the caller's to close
    (every event, AttachEnded included, has been written when this returns)."""
    app = AttachApp(session=session, request_mode=session.prompt is not None, recorder=recorder, theme=theme)
    try:
        app.run()
    finally:
        app.stop_session()
    return exit_status(app, failed=bool(app.state.error or session.failure()))


def run_attach_replay(events: list[Any], theme: str | None = None, speed: float = 1.0) -> int:
    """A recorded attach session in the attach TUI, at the recorded pace divided by ``speed``."""
    start = events[0] if events and isinstance(events[0], AttachStarted) else None
    app = AttachApp(events=events, request_mode=bool(start and start.prompt), speed=speed, theme=theme)
    try:
        app.run()
    finally:
        app.stop_session()
    return exit_status(app)
