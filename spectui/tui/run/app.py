"""SpectuiApp: one App that owns the run's worker and lifecycle, over a LiveScreen or a ReplayScreen.

A ``@work(thread=True)`` worker iterates the screen's events (the engine's run generator, or a
ReplayPlayer) and feeds each into a ScreenState (no Textual, a lock, O(1) per event), then posts one
``StateChanged`` message unless one is already waiting: a burst of passes wakes the UI once, and the
engine never waits for the UI. The UI paints on its own clock, and only when something changed: a new
snapshot (at most ``FRAME_HZ`` times a second), the newest pass's next animation phase (a one-shot
timer, only while a pass is animating) or the statistics (at most every ``STATS_INTERVAL_S``); while the live
run decodes (``decoding``) at the slower ``DECODE_FRAME_HZ`` / ``DECODE_STATS_INTERVAL_S``. Each
paint builds one frozen ScreenView (the cost-model prediction included) and the screen hands it to the
widgets that need it. Keys belong to the screens and change settings through RunControl; the engine
picks them up at its next pass. The worker's bookkeeping and the paint clock are
``spectui.tui.shared.paced_app``'s (the race face's too); this module builds the run's view.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from textual import work
from textual.binding import Binding

from ...contract.control import RunControl
from ...contract.errors import SpectuiError
from ...contract.events import Event, MachineProbe
from ...contract.options import RunOptions
from ...contract.prompt import DEFAULT_PROMPT
from ...contract.text import visible_line
from ...recording.player import ReplayPlayer
from ...recording.trace import write_trace
from ...views.animation import PassClock
from ...views.state import ScreenSnapshot, ScreenState
from ...views.view import ScreenView, prediction_for
from ..shared.app import FACE_BINDINGS
from ..shared.paced_app import PacedFaceApp, run_face
from .help_screen import HelpScreen
from .live_screen import LiveScreen
from .replay_screen import ReplayScreen
from .run_screen import RunScreen

Source = Callable[[RunControl, str], Iterable[Event]]


class SpectuiApp(PacedFaceApp):
    TITLE = "spectui"
    CSS_PATH = Path(__file__).parent.parent / "spectui.tcss"  # absolute: subclasses live in other folders
    BINDINGS = [Binding("s", "save_trace", "save"), *FACE_BINDINGS]

    def __init__(self, source: Source | None, control: RunControl | None = None, *, theme: str | None = None,
                 replay: ReplayPlayer | None = None, recorder=None, prompt: str | None = None,
                 n_predict: int = 128, title: str = "spectui", freeze_phase: str | None = None,
                 save_dir: str | os.PathLike | None = None) -> None:
        if source is None and replay is None:
            raise SpectuiError("SpectuiApp needs a source or a replay player")
        super().__init__(theme, control or RunControl())
        self.run_screen: RunScreen = ReplayScreen(replay) if replay is not None else LiveScreen(source, recorder)
        self.player = replay
        self.recorder = recorder
        self.prompt = prompt or DEFAULT_PROMPT
        self.n_predict = n_predict
        self.title = title
        self.save_dir = Path(save_dir) if save_dir else Path.cwd()
        self.state = self.new_state()
        self.snap: ScreenSnapshot | None = None
        self.view = ScreenView()
        self.saved_paths: list[Path] = []
        self.clock = PassClock(freeze_phase)
        self._seen_version = -1
        self.measuring: str | None = None  # the machine probe's progress while it measures (after a run)
        # the worker's idle-time job once a run has ended by itself (run_live: the machine probe), or None
        self.after_run: Callable[[RunControl], None] | None = None

    def new_state(self) -> ScreenState:
        """The screen's state; it keeps every event for ``s`` (save) unless a recorder keeps its own copy (a
        live run with --record: the history in memory is then only the screen's bounded tails)."""
        return ScreenState(keep_events=not hasattr(self.recorder, "save_to"))

    @property
    def freeze_phase(self) -> str | None:
        """Pin the animation to one phase (snapshots, casts); None lets the clock run."""
        return self.clock.freeze

    @freeze_phase.setter
    def freeze_phase(self, phase: str | None) -> None:
        self.clock.freeze = phase

    @property
    def _phase(self) -> str:
        return self.view.phase

    # ------------------------------------------------------------------ setup
    def get_default_screen(self) -> RunScreen:
        return self.run_screen

    def face_screen(self) -> RunScreen:
        return self.run_screen

    def pass_clocks(self) -> list[PassClock]:
        return [self.clock]

    def decoding(self) -> bool:
        """A live run's worker decodes on this machine (the run, then the machine probe); a replay does not."""
        return self.player is None and self.running

    # ------------------------------------------------------------------ the worker
    def start_worker(self) -> None:
        self.worker_starts()
        self._run_source(self.control, self.prompt, self.state)

    @work(thread=True, group="engine", exit_on_error=False)
    def _run_source(self, control: RunControl, prompt: str, state: ScreenState) -> None:
        try:
            with self._engine_lock:  # one engine, one thread at a time (a restart waits for the old run)
                if control.stopped:
                    return
                for i, ev in self.run_screen.events(control, prompt):
                    state.feed(ev, index=i)
                    self.wake()
                end = state.end
                if self.after_run is not None and not control.stopped and end is not None and not end.error:
                    self.after_run(control)  # idle time: the run ended by itself and the screen is up
        except SpectuiError as exc:
            state.set_error(str(exc))
        except Exception as exc:  # noqa: BLE001 - shown on the status line; the UI stays up
            state.set_error(f"{type(exc).__name__}: {exc}")
        finally:
            self.worker_done()

    def stop_engine(self, timeout: float = 15.0) -> bool:
        """Stop the run, wait for the worker to leave the engine, flush the recorder. True if it stopped."""
        done = self.stop_worker(timeout)
        rec = self.recorder
        if rec is not None and hasattr(rec, "flush"):
            try:
                rec.flush()
            except (OSError, ValueError):  # closed already
                pass
        return done

    def restart_worker(self) -> None:
        """A new worker with a fresh RunControl (same settings) over the same state."""
        self.control = RunControl(self.control.settings)
        self.start_worker()

    def rebuild(self) -> None:
        """After a seek in a replay: the state from the events before the player's cursor."""
        self.state.rebuild(self.player.prefix())
        self.repaint_all()

    def restart_run(self) -> None:
        """Stop the run and start it again from scratch (same prompt and settings)."""
        self.control.stop()
        self.state = self.new_state()
        self.clock.reset()
        self.restart_worker()
        self.repaint_all()

    # ------------------------------------------------------------------ a paint
    def paint(self, now: float, force: bool) -> None:
        screen = self.run_screen
        new_snap = False
        old_passes = self.snap.stats.n_passes if self.snap is not None else 0
        if self.state.version != self._seen_version or force:
            self.snap = self.state.snapshot()
            self._seen_version = self.snap.version
            new_snap = self._stats_due = True
        snap = self.snap
        lp = snap.last_pass if snap is not None else None
        if lp is not None:  # more than one new pass: passes come faster than frames (no pending phase)
            self.clock.arrive(lp, bool(lp.drafts), now, skipped=snap.stats.n_passes - old_passes > 1)
        old = self.view
        ended = snap is not None and snap.end is not None
        stats = self.stats_turn(now, urgent=force or ended)
        view = ScreenView(
            snap=snap, phase=self.clock.phase(now), asked=self.settings_in_force(snap), run_state=self.run_state(),
            replay=screen.position(), theme=self.theme, prediction=old.prediction,
            prediction_note=old.prediction_note, prediction_error=old.prediction_error, inspect=screen.cursor)
        if stats:
            pred, note, error = prediction_for(snap, view.asked.draft_max)
            view = dataclasses.replace(view, prediction=pred, prediction_note=note, prediction_error=error)
        passes = force or new_snap or view.phase != old.phase or view.inspect != old.inspect
        # the status line's progress figures (pass, tokens, elapsed) follow the statistics' pace; a key,
        # the run state or the replay position repaint it at once
        status = force or stats or (view.asked, view.run_state, view.replay, view.theme) != (
            old.asked, old.run_state, old.replay, old.theme)
        if passes or stats or status:
            self.view = view
            self.painted(now)
            with self.batch_update():
                screen.show(view, passes=passes, stats=stats or view.auto != old.auto, status=status)

    def settings_in_force(self, snap: ScreenSnapshot | None):
        """The settings every panel reads: live, what the keys asked (RunControl; the next pass uses them); in
        a replay, the recording's own at this point of the trace (its latest pass or settings change; before
        its first event, at event 0 after Home, its header's: RunStarted's settings), never the RunControl's
        defaults: the replay's keys move through the recording, they do not set k."""
        if self.player is not None:
            if snap is not None and snap.settings is not None:
                return snap.settings
            start = getattr(self.run_screen, "recording", None)  # the recording's RunStarted (None: attach)
            if start is not None:
                return start.settings
        return self.control.settings

    def run_state(self) -> tuple[str, str]:
        snap = self.snap
        if snap is not None and snap.error:
            return f"ERROR: {snap.error}", "red"
        if self.measuring is not None and not self.control.stopped:
            return f"MEASURING THIS MACHINE for the next run: {self.measuring}", "blue"
        if snap is not None and snap.end is not None and not self.running:
            end = snap.end
            return (f"ENDED: {end.reason}" + (f" ({end.error})" if end.error else "")), "yellow"
        if self.control.stopped:
            return "STOPPING", "yellow"
        if self.control.paused:
            return "PAUSED", "yellow"
        if snap is None or snap.start is None:
            return ("STARTING" if self.running else "IDLE"), "blue"
        return self.run_screen.playing_badge(self.running)

    # ------------------------------------------------------------------ keys every screen has
    def action_save_trace(self) -> None:
        path = self.save_dir / time.strftime("spectui-trace-%Y%m%d-%H%M%S.jsonl")
        n = 1
        while path.exists():
            path = path.with_name(path.stem.split("~")[0] + f"~{n}.jsonl")
            n += 1
        try:
            save_trace(path, self.recorder, self.state.events_so_far())
        except (OSError, SpectuiError) as exc:
            self.notify(visible_line(f"could not save the trace: {exc}"), severity="error", markup=False)
            return
        self.saved_paths.append(path)
        self.notify(visible_line(f"trace saved to {path}"), timeout=4, markup=False)  # a path: the one rule

    def help_screen(self) -> HelpScreen:
        return HelpScreen(replay=self.run_screen.HELP_FOR_REPLAY)

    def measure_machine(self, measure, control: RunControl) -> MachineProbe | None:
        """From the worker, once a run has ended by itself: the machine probe (``measure(say, progress, stop)``),
        its progress on the status line (MEASURING ... for the next run) and what it is for in a note. ``control``
        (the ended run's) stops it mid-decode: q, a signal, a restart (None then: nothing measured)."""
        def progress(msg: str) -> None:
            if self.measuring is None or self.measuring == MEASURING_FIRST:
                self.notify_soon(MEASURING_WHY, title="the run has ended: measuring this machine", timeout=20)
            self.measuring = msg
            self.wake()

        self.measuring = MEASURING_FIRST
        self.wake()
        try:
            res = measure(lambda msg: self.notify_soon(msg, timeout=8), progress, control)
        finally:
            self.measuring = None
            self.wake()
        if res is not None and not control.stopped:
            self.notify_soon(f"cached for the next run (r, n): {res.summary}", title="this machine measured",
                             timeout=12)
        return res

    def notify_soon(self, message: str, **kwargs) -> None:
        """A note from the worker, handed to the event loop without waiting for it (a worker never blocks
        on a UI that may be on its way out)."""
        loop = getattr(self, "_loop", None)
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(lambda: self.notify(message, **kwargs))
        except RuntimeError:  # the loop has closed: the app is gone
            pass

    def run_failed(self) -> bool:
        """Whether the live run failed (a replay shows a recording: it does not fail with it)."""
        if self.player is not None:
            return False
        end = self.state.end
        return bool(self.state.error or (end is not None and end.error))


def save_trace(path: Path, recorder, events: list[Event]) -> None:
    """Save the trace: the recorder's own copy if it has one, else the events so far."""
    if recorder is not None and hasattr(recorder, "save_to"):
        recorder.save_to(str(path))
        return
    write_trace(str(path), events)


# ---------------------------------------------------------------------- entry points
def run_app(app: PacedFaceApp, stop_timeout: float = 15.0) -> int:
    """Run a paced face and return its exit status (``spectui.tui.shared.paced_app.run_face``)."""
    return run_face(app, stop_timeout)


MEASURING_FIRST = "starting"
MEASURING_WHY = ("measuring this machine's verify cost by batch size now that nothing decodes, for the next run's "
                 "cost model and auto k (this run's came from its own passes); once per model pair and machine, "
                 "cached; q quits at once; spectui probe explains it")


def run_live(engine, control: RunControl, opts: RunOptions, recorder=None, probe: MachineProbe | None = None,
             measure=None, **kwargs) -> int:
    """The live TUI over ``engine.run(opts.prompt, control, opts.n_predict, probe)``, in ``opts.theme``. Returns
    the exit code.

    ``probe``: this machine's probe as cached (every run records it in ``RunStarted.probe``: auto k and the
    prediction start from it), or None: the runs' own passes feed them from the first. ``measure(say,
    progress, stop)``: the probe, measured in idle time (on the worker, once a run has ended by itself while
    the screen is up, never while a run decodes: it would measure the run's own contention) and cached: none
    was cached, or it was measured busy and the machine is quiet now; the next run (r, n) starts from it;
    q, a signal or a restart stop it mid-decode, nothing is cached, and it is tried after the next run.
    Stops the engine (control.stop()) and flushes the recorder on every way out (q, Ctrl+C, SIGTERM,
    SIGHUP); closing the recorder and the engine is the caller's job.
    """
    machine: list[MachineProbe | None] = [probe]
    pending = [measure]  # measured once; a measurement cut short is tried again after the next run
    app: SpectuiApp

    def source(ctl: RunControl, p: str) -> Iterator[Event]:
        return engine.run(p, ctl, opts.n_predict, probe=machine[0], overlap=True)  # keys act between passes

    def after_run(ctl: RunControl) -> None:
        if pending[0] is not None:
            res = app.measure_machine(pending[0], ctl)
            if res is not None:
                machine[0], pending[0] = res, None

    app = SpectuiApp(source, control, theme=opts.theme, recorder=recorder, prompt=opts.prompt,
                     n_predict=opts.n_predict, **kwargs)
    app.after_run = after_run
    return run_app(app)


def run_replay(events_or_player, theme: str | None = None, speed: float | str = 1.0, **kwargs) -> int:
    """Replay a list of events (or a ReplayPlayer) in the TUI. Returns the exit code."""
    player = events_or_player if isinstance(events_or_player, ReplayPlayer) else ReplayPlayer(
        events_or_player, speed=speed)
    app = SpectuiApp(None, RunControl(), theme=theme, replay=player, **kwargs)
    return run_app(app)
