"""SpectuiApp: the live (or replayed) speculative-decoding screen.

A ``@work(thread=True)`` worker iterates ``source(control, prompt)`` (the engine's run generator, or a
ReplayPlayer) and feeds each event into a ScreenState (no Textual, a lock, O(1) per event). The UI
never hears from the worker directly: a 30 Hz timer pulls a snapshot when the state's version
changed, and drives the pass animation from its own clock, so the UI can never slow the engine.
Keys change settings through RunControl; the engine picks them up at its next pass.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator

from textual import work
from textual.css.query import NoMatches
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import Footer, Static

from ..control import RunControl
from ..errors import SpectuiError
from ..events import DRAFTERS, Event, to_dict
from ..player import ReplayPlayer
from .acceptance_bars import AcceptanceByPosition
from .itl_panel import InterTokenLatency
from .panel import PENDING, SETTLED, VERDICT, Panel
from .pass_ribbon import PassRibbon
from .prediction_panel import PredictionPanel
from .replay_banner import ReplayBanner
from .run_metrics import RunMetrics
from .screens.help import HelpScreen
from .screens.prompt import PromptScreen
from .state import ScreenSnapshot, ScreenState
from .status_line import StatusLine, status_text
from .themes import DEFAULT_THEME, VARIABLE_DEFAULTS, available_themes, check_theme, textual_theme
from .tps_panel import TokensPerSecond
from .token_stream import TokenStream

DEFAULT_PROMPT = "Write a step-by-step explanation of how a hash map handles collisions."
FPS = 30
MIN_WIDTH, MIN_HEIGHT = 60, 20  # below this: "terminal too small"
WIDE_WIDTH, WIDE_HEIGHT = 110, 32  # at least this: bordered grid; else the compact 80x24 layout
PENDING_S = 0.12  # drafts shown as pending this long after a pass arrives (slow passes only)
VERDICT_S = 0.9  # rejected drafts stay struck through this long, then disappear
# The engine thread re-takes the GIL after every ctypes call into llama.cpp; while the UI thread renders,
# each of those waits up to the interpreter's switch interval (5 ms by default). A short interval while
# the app runs keeps the engine from queueing behind repaints.
GIL_SWITCH_INTERVAL_S = 0.0005
STATS_INTERVAL_S = 0.5  # the statistics panels repaint at most twice a second (repaints cost CPU the
# engine needs on small machines); the token stream, pass ribbon and status line follow every pass

Source = Callable[[RunControl, str], Iterable[Event]]


class SpectuiApp(App):
    TITLE = "spectui"
    CSS = """
    Screen { layout: vertical; }
    #banner { display: none; }
    #body { layout: grid; height: 1fr; grid-size: 3 4; grid-columns: 1fr 1fr 1fr; grid-rows: 1fr 1fr 9 5; }
    #body > Panel { border: round $panel-lighten-2; padding: 0 1; height: 1fr; }
    #stream { column-span: 2; row-span: 2; }
    #prediction { column-span: 3; }
    #body.narrow { grid-size: 2 5; grid-rows: 1fr 4 6 4 2; grid-columns: 1fr 1fr; grid-gutter: 0 1; }
    #body.narrow > Panel { border: none; padding: 0; }
    #body.narrow #stream { column-span: 2; row-span: 1; }
    #body.narrow #ribbon { column-span: 2; }
    #body.narrow #prediction { column-span: 2; }
    #too-small { display: none; height: 1fr; content-align: center middle; text-style: bold; }
    .too-small #body { display: none; }
    .too-small #too-small { display: block; }
    """
    BINDINGS = [
        Binding("up,plus,equals_sign", "k_up", "k+"),
        Binding("down,minus", "k_down", "k-"),
        Binding("right,t", "temp_up", "temp+"),
        Binding("left,T", "temp_down", "temp-"),
        Binding("right", "step_forward", "step▶"),
        Binding("left", "step_back", "◀step"),
        Binding("home", "jump_start", "start", show=False),
        Binding("end", "jump_end", "end", show=False),
        Binding("greater_than_sign", "faster", "faster"),
        Binding("less_than_sign", "slower", "slower"),
        Binding("space,p", "pause", "pause"),
        Binding("r", "restart", "restart"),
        Binding("n", "new_prompt", "prompt"),
        Binding("d", "drafter", "drafter"),
        Binding("a", "auto_k", "auto k"),
        Binding("s", "save_trace", "save"),
        Binding("c", "cycle_theme", "theme"),
        Binding("question_mark,h,f1", "help", "help"),
        Binding("q", "quit", "quit"),
        Binding("ctrl+c", "quit", "quit", show=False, priority=True),
    ]
    LIVE_ONLY = {"k_up", "k_down", "temp_up", "temp_down", "new_prompt", "drafter", "auto_k"}
    REPLAY_ONLY = {"step_forward", "step_back", "jump_start", "jump_end", "faster", "slower"}

    def __init__(self, source: Source | None, control: RunControl | None = None, *, theme: str | None = None,
                 replay: ReplayPlayer | None = None, recorder=None, prompt: str | None = None,
                 n_predict: int = 128, title: str = "spectui", freeze_phase: str | None = None,
                 save_dir: str | os.PathLike | None = None) -> None:
        self.theme_name = check_theme(theme)  # SpectuiError for an unknown name, before the screen
        super().__init__()
        if source is None and replay is None:
            raise SpectuiError("SpectuiApp needs a source or a replay player")
        self.source = source
        self.player = replay
        self.control = control or RunControl()
        self.recorder = recorder
        self.prompt = prompt or DEFAULT_PROMPT
        self.n_predict = n_predict
        self.title = title
        self.freeze_phase = freeze_phase
        self.save_dir = Path(save_dir) if save_dir else Path.cwd()
        self.state = ScreenState()
        self.snap: ScreenSnapshot | None = None
        self.saved_paths: list[Path] = []
        self._engine_lock = threading.Lock()
        self._active = 0
        self._active_lock = threading.Lock()
        self.engine_idle = threading.Event()
        self.engine_idle.set()
        self._seen_version = -1
        self._anim_pass: object = None
        self._anim_t0 = 0.0
        self._prev_pass_t = 0.0
        self._phase = SETTLED
        self._status_key: object = None
        self._layout_key: object = None
        self._force = True
        self._stats_t = 0.0
        self._stats_due = False
        self._signals: list[int] = []

    # ------------------------------------------------------------------ setup
    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        yield ReplayBanner(id="banner")
        yield StatusLine(id="status")
        with Container(id="body"):
            yield TokenStream(id="stream")
            yield PassRibbon(id="ribbon")
            yield AcceptanceByPosition(id="acceptance")
            yield RunMetrics(id="metrics")
            yield TokensPerSecond(id="tps")
            yield InterTokenLatency(id="itl")
            yield PredictionPanel(id="prediction")
        yield Static("", id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch_interval, GIL_SWITCH_INTERVAL_S))
        for name in available_themes():
            self.register_theme(textual_theme(name))
        self.theme = self.theme_name
        if self.player is not None:
            self.query_one("#banner").display = True
        self._apply_layout()
        self.set_interval(1 / FPS, self._tick)
        self._install_signals()
        self._start_run()

    def _install_signals(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                loop.add_signal_handler(sig, self._on_signal)
                self._signals.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - not main thread
                pass

    def _on_signal(self) -> None:
        self.action_quit()

    def on_unmount(self) -> None:
        self.control.stop()
        if getattr(self, "_switch_interval", None):
            sys.setswitchinterval(self._switch_interval)
        try:
            loop = asyncio.get_running_loop()
            for sig in self._signals:
                loop.remove_signal_handler(sig)
        except RuntimeError:  # pragma: no cover
            pass

    # ------------------------------------------------------------------ the worker
    def _start_run(self) -> None:
        with self._active_lock:
            self._active += 1
            self.engine_idle.clear()
        self._run_source(self.control, self.prompt, self.state)

    @work(thread=True, group="engine", exit_on_error=False)
    def _run_source(self, control: RunControl, prompt: str, state: ScreenState) -> None:
        try:
            with self._engine_lock:  # one engine, one thread at a time (a restart waits for the old run)
                if control.stopped:
                    return
                if self.player is not None:
                    for i, ev in self.player.iter_indexed(control):
                        state.feed(ev, index=i)
                    return
                rec = self.recorder
                for ev in self.source(control, prompt):
                    state.feed(ev)
                    if rec is not None:
                        rec.write(ev)
        except SpectuiError as exc:
            state.set_error(str(exc))
        except Exception as exc:  # shown on the status line; the UI stays up
            state.set_error(f"{type(exc).__name__}: {exc}")
        finally:
            with self._active_lock:
                self._active -= 1
                if self._active == 0:
                    self.engine_idle.set()

    @property
    def running(self) -> bool:
        return not self.engine_idle.is_set()

    def stop_engine(self, timeout: float = 15.0) -> bool:
        """Stop the run, wait for the worker to leave the engine, flush the recorder. True if it stopped."""
        self.control.stop()
        done = self.engine_idle.wait(timeout)
        rec = self.recorder
        if rec is not None and hasattr(rec, "flush"):
            try:
                rec.flush()
            except (OSError, ValueError):  # closed already
                pass
        return done

    # ------------------------------------------------------------------ the UI clock
    def _tick(self) -> None:
        self.refresh_from_state()

    def refresh_from_state(self) -> None:
        """Pull the latest snapshot (if it changed), advance the animation, repaint what changed."""
        try:
            self._refresh_from_state()
        except NoMatches:  # a tick while the screen is being built or torn down (startup, quit): nothing to paint
            pass

    def _refresh_from_state(self) -> None:
        self._apply_layout()
        changed = False
        if self.state.version != self._seen_version or self._force:
            self.snap = self.state.snapshot()
            self._seen_version = self.snap.version
            changed = True
        snap = self.snap
        lp = snap.last_pass if snap else None
        now = time.monotonic()
        if lp is not None and lp is not self._anim_pass:
            fast = now - self._prev_pass_t < 0.25
            self._prev_pass_t = now
            self._anim_pass = lp
            self._anim_t0 = now - (PENDING_S if fast else 0.0)
        phase = SETTLED
        if lp is not None and lp.drafts:
            age = now - self._anim_t0
            phase = PENDING if age < PENDING_S else VERDICT if age < VERDICT_S else SETTLED
        if self.freeze_phase is not None:
            phase = self.freeze_phase
        phase_changed = phase != self._phase
        self._phase = phase
        force = self._force
        self._force = False
        if changed:
            self._stats_due = True
        with self.batch_update():
            if changed or force or phase_changed:
                for panel in (self.query_one(TokenStream), self.query_one(PassRibbon)):
                    panel.show(snap, phase)
            ended = snap is not None and snap.end is not None
            if self._stats_due and (force or ended or now - self._stats_t >= STATS_INTERVAL_S):
                self._stats_due = False
                self._stats_t = now
                for panel in self.query(Panel):
                    if not isinstance(panel, (TokenStream, PassRibbon)):
                        panel.show(snap, phase)
            if snap is not None and self.player is not None:
                self.query_one(ReplayBanner).set_start(snap.start)
            key = (self._seen_version, self.control.settings, self.run_state(), self.theme,
                   self.player.speed if self.player else None, self.player.cursor if self.player else None)
            if key != self._status_key or force:
                self._status_key = key
                self.query_one(StatusLine).set(status_text(self))

    def _apply_layout(self) -> None:
        w, h = self.size
        key = (w, h)
        if key == self._layout_key:
            return
        self._layout_key = key
        small = w < MIN_WIDTH or h < MIN_HEIGHT
        self.screen.set_class(small, "too-small")
        self.query_one("#body").set_class(w < WIDE_WIDTH or h < WIDE_HEIGHT, "narrow")
        if small:
            self.query_one("#too-small", Static).update(
                f"terminal too small: {w}x{h}\nspectui needs at least {MIN_WIDTH}x{MIN_HEIGHT}\n(q quits)")

    def run_state(self) -> tuple[str, str]:
        snap = self.snap
        if snap is not None and snap.error:
            return f"ERROR: {snap.error}", "red"
        if snap is not None and snap.end is not None and not self.running:
            end = snap.end
            return (f"ENDED: {end.reason}" + (f" ({end.error})" if end.error else "")), "yellow"
        if self.control.stopped:
            return "STOPPING", "yellow"
        if self.control.paused:
            return "PAUSED", "yellow"
        if snap is None or snap.start is None:
            return ("LOADING" if self.running else "IDLE"), "blue"
        if self.player is not None:
            return ("REPLAY" if self.running else "REPLAY END"), "magenta"
        return "RUNNING", "green"

    # ------------------------------------------------------------------ keys
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.LIVE_ONLY:
            return self.player is None
        if action in self.REPLAY_ONLY:
            return self.player is not None
        return True

    def _changed(self, message: str) -> None:
        self._status_key = None  # status line repaints at the next tick (within 1/30 s)
        self.refresh_from_state()

    def action_k_up(self) -> None:
        s = self.control.update(draft_max=self.control.settings.draft_max + 1, auto=None)
        self._changed(f"k={s.draft_max}")

    def action_k_down(self) -> None:
        s = self.control.update(draft_max=self.control.settings.draft_max - 1, auto=None)
        self._changed(f"k={s.draft_max}")

    def action_temp_up(self) -> None:
        s = self.control.update(temperature=round(self.control.settings.temperature + 0.1, 1))
        self._changed(f"temperature={s.temperature}")

    def action_temp_down(self) -> None:
        s = self.control.update(temperature=round(self.control.settings.temperature - 0.1, 1))
        self._changed(f"temperature={s.temperature}")

    def drafter_choices(self) -> tuple[str, ...]:
        start = self.snap.start if self.snap else None
        if start is not None and start.draft is None:
            return tuple(d for d in DRAFTERS if d != "model")
        return DRAFTERS

    def action_drafter(self) -> None:
        choices = self.drafter_choices()
        cur = self.control.settings.drafter
        nxt = choices[(choices.index(cur) + 1) % len(choices)] if cur in choices else choices[0]
        self.control.update(drafter=nxt)
        self._changed(f"drafter={nxt}")

    @property
    def auto_mode(self) -> str | None:
        return self.control.settings.auto

    def action_auto_k(self) -> None:
        s = self.control.update(auto=None if self.control.settings.auto else "cost")
        self._changed(f"auto={s.auto}")
        self.query_one(PredictionPanel).refresh()

    def action_pause(self) -> None:
        if self.control.paused:
            self.control.resume()
            if self.player is not None:
                self._ensure_replay_worker()
        else:
            self.control.pause()
        self._changed("pause")

    def action_restart(self) -> None:
        if self.player is not None:
            self._seek(self.player.jump_start)
            self.control.resume()
            self._ensure_replay_worker()
            return
        old = self.control
        old.stop()
        self.control = RunControl(old.settings)
        self.state = ScreenState()
        self._seen_version = -1
        self._anim_pass = None
        self._force = True
        self._start_run()
        self.notify("restarted with the same prompt", timeout=2)

    def action_new_prompt(self) -> None:
        def done(value: str | None) -> None:
            if value:
                self.prompt = value
                self.action_restart()

        self.push_screen(PromptScreen(self.prompt), done)

    def action_save_trace(self) -> None:
        path = self.save_dir / time.strftime("spectui-trace-%Y%m%d-%H%M%S.jsonl")
        n = 1
        while path.exists():
            path = path.with_name(path.stem.split("~")[0] + f"~{n}.jsonl")
            n += 1
        try:
            save_trace(path, self.recorder, self.state.events_so_far())
        except (OSError, SpectuiError) as exc:
            self.notify(f"could not save the trace: {exc}", severity="error")
            return
        self.saved_paths.append(path)
        self.notify(f"trace saved to {path}", timeout=4)

    def theme_names(self) -> list[str]:
        names = list(available_themes())
        order = [DEFAULT_THEME] + sorted(n for n in names if n != DEFAULT_THEME)
        return [n for n in order if n in names]

    def action_cycle_theme(self) -> None:
        names = self.theme_names()
        cur = self.theme if self.theme in names else names[0]
        self.theme = names[(names.index(cur) + 1) % len(names)]
        self._force = True
        self.notify(f"theme: {self.theme}", timeout=2)

    def action_help(self) -> None:
        self.push_screen(HelpScreen(replay=self.player is not None))

    def action_quit(self) -> None:
        self.control.stop()
        self.exit()

    # replay --------------------------------------------------------------------
    def _seek(self, move: Callable[[], int]) -> None:
        move()
        self.state.rebuild(self.player.prefix())
        self._force = True
        self.refresh_from_state()

    def _ensure_replay_worker(self) -> None:
        if not self.running and not self.player.at_end:
            self.control = RunControl(self.control.settings)
            self._start_run()

    def action_step_forward(self) -> None:
        self.control.pause()
        self._seek(self.player.step_forward)

    def action_step_back(self) -> None:
        self.control.pause()
        self._seek(self.player.step_back)

    def action_jump_start(self) -> None:
        self._seek(self.player.jump_start)
        self._ensure_replay_worker()

    def action_jump_end(self) -> None:
        self._seek(self.player.jump_end)

    def action_faster(self) -> None:
        self.player.faster()
        self._changed("speed")

    def action_slower(self) -> None:
        self.player.slower()
        self._changed("speed")


def save_trace(path: Path, recorder, events: list[Event]) -> None:
    """Save the trace: the recorder's own copy if it can, else spectui.trace.write_trace, else JSON Lines."""
    if recorder is not None and hasattr(recorder, "save_to"):
        recorder.save_to(str(path))
        return
    try:
        from ..trace import write_trace  # the traces engineer's writer, when present
    except ImportError:
        write_trace = None
    if write_trace is not None:
        write_trace(str(path), events)
        return
    with open(path, "w", encoding="utf-8") as f:  # a trace is exactly the events' dicts, one per line
        for ev in events:
            f.write(json.dumps(to_dict(ev), ensure_ascii=False) + "\n")


# ---------------------------------------------------------------------- entry points
def run_app(app: SpectuiApp, stop_timeout: float = 15.0) -> int:
    try:
        app.run()
    finally:
        app.stop_engine(stop_timeout)
    return int(app.return_code or 0)


def run_live(engine, control: RunControl, prompt: str | None, n_predict: int, theme: str | None = None,
             recorder=None, **kwargs) -> int:
    """The live TUI over ``engine.run(prompt, control, n_predict)``. Returns the exit code.

    Stops the engine (control.stop()) and flushes the recorder on every way out (q, Ctrl+C,
    SIGTERM, SIGHUP); closing the recorder and the engine is the caller's job.
    """

    def source(ctl: RunControl, p: str) -> Iterator[Event]:
        return engine.run(p, ctl, n_predict)

    app = SpectuiApp(source, control, theme=theme, recorder=recorder, prompt=prompt, n_predict=n_predict,
                     **kwargs)
    return run_app(app)


def run_replay(events_or_player, theme: str | None = None, speed: float | str = 1.0, **kwargs) -> int:
    """Replay a list of events (or a ReplayPlayer) in the TUI. Returns the exit code."""
    player = events_or_player if isinstance(events_or_player, ReplayPlayer) else ReplayPlayer(
        events_or_player, speed=speed)
    app = SpectuiApp(None, RunControl(), theme=theme, replay=player, **kwargs)
    return run_app(app)
