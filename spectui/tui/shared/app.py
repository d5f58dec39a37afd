"""FaceApp: what every Textual face (the run's SpectuiApp, the attach face's AttachApp, and the faces to
come) shares, written once: the theme variables and themes (``c`` cycles them), SIGINT / SIGTERM / SIGHUP
turned into the face's own quit (a clean stop that flushes a recording; the exit status is then 128 + the
signal, Ctrl+C typed is 130: lifecycle.exit_status), the help key, and the one wake-up
message a worker posts after feeding the state.

The worker thread calls ``wake()`` after each event it fed; ``wake`` posts one ``StateChanged`` unless
one is already on its way, so a burst of events wakes the UI once and the worker never waits for the UI.
The face clears ``_wake_posted`` when it has looked at the state (``state_seen``) and decides in
``on_state_changed`` when to paint. A face implements ``start_face`` / ``stop_face`` (its worker),
``help_screen()``, ``repaint_after_theme()`` and ``action_quit``.
"""

from __future__ import annotations

import signal

from textual.app import App
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen

from .lifecycle import install_quit_signals, next_theme, quit_on_signal, register_themes, remove_signals, watch_terminal
from .terminal import Deadline
from .textual_fixes import fix_textual_leaks
from .themes import VARIABLE_DEFAULTS, check_theme

fix_textual_leaks()  # Textual 8 keeps gone widgets and apps in lru_caches keyed on them


STOP_GRACE_S = 3.0  # a stop asked of a face ends the process within this many seconds, whatever blocks it
# (a terminal that is gone: lifecycle.LOST_TERMINAL_GRACE_S)
_JOB_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTSTP", "SIGCONT") if hasattr(signal, n))


class StateChanged(Message):
    """A worker fed new events into the face's state (posted at most once until the UI has looked)."""


# The keys every face has; a face lists them in its BINDINGS after its own (the footer shows that order).
FACE_BINDINGS = [
    Binding("c", "cycle_theme", "theme"),
    Binding("question_mark,h,f1", "help", "help"),
    Binding("q", "quit", "quit"),
    Binding("ctrl+c", "interrupt", "quit", show=False, priority=True),  # the quit, with status 130
]


def ascii_driver(base):
    """``base`` (a Textual driver class) writing every frame through ``tui.shared.ascii.to_ascii``."""
    from .ascii import to_ascii  # noqa: PLC0415

    class AsciiDriver(base):
        def write(self, data: str) -> None:
            super().write(to_ascii(data))

    AsciiDriver.__name__ = AsciiDriver.__qualname__ = "Ascii" + base.__name__
    return AsciiDriver


class FaceApp(App):

    def __init__(self, theme: str | None = None) -> None:
        self.theme_name = check_theme(theme)  # SpectuiError for an unknown name, before any screen
        super().__init__()
        self._wake_posted = False  # a StateChanged is on its way (set by the worker, cleared by a paint)
        self._signals: dict[int, object] = {}
        self.stop_signal: int | None = None  # the signal (or SIGHUP for a lost terminal) that stopped it
        # a stop asked (a signal, a lost terminal) ends the process within this even if Textual cannot
        # finish it; cancelled when run() returns
        self.deadline = Deadline(self.last_words, grace_s=STOP_GRACE_S)
        self._watch = None

    # ------------------------------------------------------------------ start and stop
    def get_driver_class(self):
        """The platform's driver, writing ASCII only when the ASCII face is wanted (tui.shared.ascii); a
        driver named in TEXTUAL_DRIVER (textual-serve's web driver: the browser has UTF-8) is left as is."""
        base = super().get_driver_class()
        from textual import constants  # noqa: PLC0415

        from .ascii import ascii_wanted  # noqa: PLC0415

        if constants.DRIVER is not None or not ascii_wanted():
            return base
        return ascii_driver(base)

    def get_key_display(self, binding) -> str:
        """The footer's name of a key: Textual's, with an arrow glyph as a word in the ASCII face (an arrow
        drawn in ASCII is ``>`` / ``<``, the keys faster / slower: tui.shared.ascii.key_names)."""
        from .ascii import key_names  # noqa: PLC0415

        shown = super().get_key_display(binding)
        return shown if self._web_driver() else key_names(shown)

    @staticmethod
    def _web_driver() -> bool:
        from textual import constants  # noqa: PLC0415

        return constants.DRIVER is not None  # textual-serve's browser has UTF-8: no ASCII face there

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        register_themes(self, self.theme_name)
        self._signals = install_quit_signals(self)
        self._watch = watch_terminal(self)
        self.start_face()

    def on_unmount(self) -> None:
        if self._watch is not None:
            self._watch.stop()
        self.stop_face()
        remove_signals(self._signals)

    def run(self, *args, **kwargs):
        self.deadline.enabled = True  # a process of its own: a stop that cannot finish ends it
        # Textual's driver installs SIGTSTP / SIGCONT handlers (Ctrl+Z) and never takes them off: a SIGCONT
        # after the app ended (the kernel sends one with the SIGHUP of a terminal that closes; tmux
        # kill-session) would start its input thread again, which then spins on the dead terminal and
        # keeps the process from exiting. They are put back as they were when the app ends.
        self._job_signals = {s: signal.getsignal(s) for s in _JOB_SIGNALS}
        try:
            return super().run(*args, **kwargs)
        finally:
            self.deadline.cancel()  # the app is done: what is left is the command's
            self.end_job_control()

    def exit(self, *args, **kwargs) -> None:
        self.end_job_control()  # on its way out: a SIGCONT from now on resumes nothing
        super().exit(*args, **kwargs)

    def end_job_control(self) -> None:
        """Ctrl+Z's suspend and resume end here: the job-control handlers the driver installed are put back as
        they were before the app (see ``run``), so a SIGCONT no longer restarts the driver."""
        for sig, handler in getattr(self, "_job_signals", {}).items():
            try:
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            except (OSError, RuntimeError, ValueError, TypeError):  # not the main thread; a test's app
                pass

    def last_words(self) -> None:
        """What the deadline does before it ends the process: stop the worker and flush the recording (the
        faces with an engine or a recorder: ``stop_engine``)."""
        stop = getattr(self, "stop_engine", None)
        if stop is not None:
            stop(2.0)

    def start_face(self) -> None:  # pragma: no cover - every face has one
        raise NotImplementedError

    def stop_face(self) -> None:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------------ the wake-up (worker thread)
    def wake(self) -> None:
        """From the worker: tell the UI the state changed, unless it has not looked since the last time."""
        if not self._wake_posted:
            self._wake_posted = True
            self.post_message(StateChanged())

    def state_seen(self) -> None:
        """From the UI, before it reads the state: an event fed after this posts a new wake-up."""
        self._wake_posted = False

    # ------------------------------------------------------------------ keys every face has
    def action_cycle_theme(self) -> None:
        self.theme = next_theme(self.theme)
        self.repaint_after_theme()
        self.notify(f"theme: {self.theme}", timeout=2)

    def repaint_after_theme(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def help_screen(self) -> Screen:  # pragma: no cover
        raise NotImplementedError

    def action_help(self) -> None:
        self.push_screen(self.help_screen())

    def action_interrupt(self) -> None:
        """Ctrl+C typed in the TUI: the clean quit, with SIGINT's exit status (130, spectui.contract.exitcodes)."""
        quit_on_signal(self, signal.SIGINT)
