"""Whether a Textual face has a terminal to draw on, and what to do when it loses it. No Textual here: the
commands call ``require_terminal`` before they load anything (a model, a trace), and the faces start
``TerminalWatch`` with the app.

A face needs a terminal on stdin (its keys), stdout and stderr (Textual draws on stderr; stdout is where a
user's ``> file`` would silently take the screen's place): without one (``ssh host spectui demo`` without
``-t``, a pipe, cron) it would draw at 80x24 into a pipe and wait for a ``q`` that cannot come, so it
refuses in one line with exit 2. ``TERM=dumb`` (Emacs' shell, some CI consoles) cannot show a full-screen
app either. textual-serve's sessions (``spectui serve``) run the face on pipes with Textual's web driver,
named in ``TEXTUAL_DRIVER``: they have their terminal in the browser.

Losing the terminal mid-run (the SSH link drops, the terminal window closes) shows as a hang-up or an error
on those descriptors: ``TerminalWatch`` polls them from a thread and asks the app to stop as SIGHUP would
(exit 129, spectui.contract.exitcodes). A stop asked (that, or a signal) arms the face's ``Deadline``: if
the app cannot finish its stop in ``grace_s`` (Textual's writes, and its event loop with them, block on a
terminal that is gone or no longer reads), the face's last words run (the run stopped, the recording
flushed) and the process ends with that status.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import threading
import time
from typing import Callable

from ...contract.errors import SpectuiError
from ...contract.exitcodes import SIGHUP_STATUS

NEEDS_TERMINAL = "needs a terminal: use ssh -t, or --headless"
STREAMS = ("stdin", "stdout", "stderr")


def terminal_problem(env=None, streams=None) -> str:
    """Why this process cannot show a full-screen face ("" when it can)."""
    env = os.environ if env is None else env
    if env.get("TEXTUAL_DRIVER"):  # textual-serve's web driver (or another driver that brings its own screen)
        return ""
    streams = streams if streams is not None else (sys.stdin, sys.stdout, sys.stderr)
    for name, stream in zip(STREAMS, streams):
        try:
            tty = stream is not None and os.isatty(stream.fileno())
        except (AttributeError, OSError, ValueError):  # closed, or not a file at all
            tty = False
        if not tty:
            return f"{name} is not a terminal"
    if env.get("TERM", "").strip().lower() == "dumb":
        return "TERM=dumb"
    return ""


def require_terminal(face: str, env=None, streams=None) -> None:
    """Raise the one-line SpectuiError (exit 2) when ``face`` (e.g. "spectui demo") cannot have a screen."""
    why = terminal_problem(env, streams)
    if why:
        raise SpectuiError(f"{face} {NEEDS_TERMINAL} ({why})")


# poll() flags that say a descriptor's other end is gone (a hung-up pty, a closed pipe's reader)
_GONE = select.POLLHUP | select.POLLERR | select.POLLNVAL


def lost_streams(fds=(0, 1, 2)) -> list[int]:
    """The descriptors among ``fds`` whose terminal (or pipe) is gone, now, without waiting."""
    poller = select.poll()
    for fd in fds:
        poller.register(fd, 0)  # no events asked: poll reports only hang-ups and errors
    try:
        return [fd for fd, ev in poller.poll(0) if ev & _GONE]
    except OSError:  # pragma: no cover
        return list(fds)


class TerminalWatch:
    """A daemon thread that looks at stdin, stdout and stderr every ``interval_s`` and, the first time one
    of them is gone, calls ``on_lost()`` once (from this thread: the face's stop, as for SIGHUP, which also
    arms its deadline). ``stop()`` ends the watch. Started only when the three are terminals (``spectui
    serve``'s pipes and the tests' run_test have nothing to watch: ``wanted``)."""

    def __init__(self, on_lost: Callable[[], None], interval_s: float = 0.5, fds=(0, 1, 2)) -> None:
        self.on_lost = on_lost
        self.interval_s = interval_s
        self.fds = tuple(fds)
        self.lost: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="spectui-terminal-watch", daemon=True)

    @staticmethod
    def wanted(env=None) -> bool:
        """Whether there is a terminal to watch (not under textual-serve, not in a test's headless app). The
        descriptors themselves: inside the app, Textual has put its own objects in ``sys.stdout``/``stderr``."""
        env = os.environ if env is None else env
        if env.get("TEXTUAL_DRIVER"):
            return False
        try:
            return all(os.isatty(fd) for fd in (0, 1, 2))
        except OSError:  # pragma: no cover
            return False

    def start(self) -> "TerminalWatch":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            lost = lost_streams(self.fds)
            if lost:
                self.lost = lost
                self.on_lost()
                return


class Deadline:
    """Once armed (a stop was asked: q, a signal, a lost terminal), the process ends within ``grace_s`` (or the
    grace the arming gives: a lost terminal's is short) even if the face cannot finish its stop (Textual's
    writes block on a terminal that is gone, and its event loop with them): ``last_words()`` (stop the run,
    flush the recording), then ``os._exit(status)``. Cancelled when the face's ``run()`` returns (what
    follows, closing the models, is the command's, under its ``ExitGuard``); armed only while ``enabled``
    (the face's ``run()``: an app in a test's ``run_test`` is not a process to end)."""

    def __init__(self, last_words: Callable[[], None] | None = None, grace_s: float = 5.0) -> None:
        self.last_words = last_words
        self.grace_s = grace_s
        self.status: int | None = None
        self.enabled = False  # set while the face runs for real (FaceApp.run): a test's run_test has no exit
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    def arm(self, status: int, grace_s: float | None = None) -> None:
        with self._lock:
            if not self.enabled or self.status is not None or self._cancel.is_set():
                return
            self.status = int(status)
            if grace_s is not None:
                self.grace_s = float(grace_s)
        threading.Thread(target=self._expire, name="spectui-stop-deadline", daemon=True).start()

    def cancel(self) -> None:
        self._cancel.set()

    def _expire(self) -> None:
        if self._cancel.wait(self.grace_s):
            return
        try:
            if self.last_words is not None:
                self.last_words()
        finally:  # whatever the last words raised: the exit is the point
            os._exit(self.status if self.status is not None else SIGHUP_STATUS)


EXIT_WITHIN_S = 2.0  # a face's command ends its process within this many seconds of the app's end
HOLD_MAX_S = 30.0  # ... unless it is still writing a recording (a file, never the terminal): waited for


class ExitGuard:
    """Once a face's app has ended, the process ends within ``within_s`` whatever holds it: a thread that is
    not a daemon (Textual's input thread, restarted by a SIGCONT on a terminal that is gone, spins in
    ``select`` on it and ``threading._shutdown`` waits for it forever), a model that does not close, an
    atexit hook. A daemon thread then calls ``os._exit(status)``; a normal exit comes first and ends it.
    ``hold()`` marks what must not be cut (closing the recording: a file, never the terminal): the guard
    waits for it, up to ``HOLD_MAX_S``. Started only by a command that ran a face in a terminal of its own."""

    def __init__(self, status: int, within_s: float = EXIT_WITHIN_S) -> None:
        self.status = int(status)
        self.within_s = within_s
        self._held = threading.Event()
        self._held.set()  # set = nothing held
        self._thread = threading.Thread(target=self._expire, name="spectui-exit-guard", daemon=True)

    def start(self) -> "ExitGuard":
        self._thread.start()
        return self

    @contextlib.contextmanager
    def hold(self):
        self._held.clear()
        try:
            yield
        finally:
            self._held.set()

    def _expire(self) -> None:
        time.sleep(self.within_s)
        self._held.wait(HOLD_MAX_S)
        os._exit(self.status)
