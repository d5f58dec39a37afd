"""Exit statuses, one table for every subcommand and every face (README, "Exit statuses").

    0    done as asked (also: the context filled up mid-run, the end-of-generation token, q in the TUI)
    1    the run failed: the prompt does not fit the context, an empty prompt, the model failed mid-run,
         attach's -p request failed, a watched URL never answered (or was down when --count/--duration ended),
         a bench --url server never answered (contract.errors.NeverAnswered: down, a certificate not trusted)
    2    bad usage or input: click's usage errors and SpectuiError (missing/non-GGUF model, bad option,
         unreadable trace, an output that would destroy a file, a bad URL, an unknown theme), standard output
         closed (contract.streams: ``>&-``, before any work; with stderr closed too, silently), a trace another
         command is writing now (contract.claim), a trace deleted or replaced while it was written
    128+N  stopped by signal N, after a clean stop (the trace flushed and replayable, partial summaries
         printed): 130 SIGINT / Ctrl+C, 143 SIGTERM, 129 SIGHUP

As curl, llama.cpp's tools and vLLM's CLI do, 2 is a usage error (click's and argparse's convention) and a
signal is reported as the shell would report a death by it (128 + N), although spectui stops cleanly first.

:class:`SignalStop` records which signal asked a run to stop, so a face can return its status. No Textual
here: the engine-side code and the headless faces import it.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from types import CodeType
from typing import Callable, Iterable

OK = 0
FAILED = 1
USAGE = 2
SIGHUP_STATUS = 128 + int(getattr(signal, "SIGHUP", 1))  # 129
SIGINT_STATUS = 128 + int(signal.SIGINT)  # 130
SIGTERM_STATUS = 128 + int(signal.SIGTERM)  # 143

REDELIVER_S = 0.02  # a signal noted inside a callback from C is sent again this often until it lands outside one
STOP_SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def for_signal(signum: int) -> int:
    """128 + the signal's number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP)."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    """"SIGTERM" for 15 (the name a message prints)."""
    try:
        return signal.Signals(int(signum)).name
    except ValueError:
        return f"signal {int(signum)}"


def for_run_end(end) -> int:
    """0 when a run (RunEnded) ended as asked, 1 when it failed (its ``error`` says why; no end: 1)."""
    if end is None:
        return FAILED
    return FAILED if getattr(end, "error", "") else OK


class Interrupted(KeyboardInterrupt):
    """Raised by :class:`SignalStop` without ``on_stop``: a command that has nothing to flush stops where it
    is (a cast or a probe half done writes nothing); ``status`` is 128 + the signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = int(signum)
        self.status = for_signal(signum)


class SignalStop:
    """Turns SIGINT / SIGTERM / SIGHUP into a call of ``on_stop`` (a clean stop) and remembers the first
    signal; ``status(otherwise)`` is 128 + that signal, or ``otherwise``. A second SIGINT raises
    KeyboardInterrupt (interrupt at once). Without ``on_stop`` the first signal raises
    :class:`Interrupted`, except in a frame running one of the ``quiet_in`` code objects (Python called back
    from C, where an exception is printed and dropped): there the signal is noted and sent again every
    ``REDELIVER_S`` until it lands outside such a frame, where it raises (a probe measuring for minutes, whose
    llama.cpp logs as it makes contexts, stops within milliseconds, never at its end); :meth:`raise_if_stopped`
    raises it at once. Installed only from the main thread (else a no-op).

    ``hand_over``: a face that starts under it may install its own quit over it and acts on a signal already
    noted (``tui.shared.lifecycle.install_quit_signals``: the TUI, whose startup follows the loading);
    without it a face leaves these signals to it (``spectui cast`` renders an app under its own).

    ``on_stop`` may be set while installed: a command installs one with none before its models load (a
    signal then ends it with nothing written, as there is nothing to flush yet) and hands it the run's
    clean stop when the run starts, so no signal ever meets the default disposition in between."""

    def __init__(self, on_stop: Callable[[], None] | None = None, signals: Iterable[int] = STOP_SIGNALS,
                 second_sigint_raises: bool = True, quiet_in: Iterable[CodeType] = (),
                 hand_over: bool = False) -> None:
        self.on_stop = on_stop
        self.hand_over = hand_over
        self.signals = tuple(signals)
        self.quiet_in = frozenset(quiet_in)
        self.second_sigint_raises = second_sigint_raises
        self.signum: int | None = None
        self.at = 0.0  # time.monotonic() of the first signal
        self._old: dict[int, object] = {}
        self._again: threading.Timer | None = None  # the noted signal's next delivery
        self._handling = False  # inside _handler: a signal landing in on_stop must not call it again

    def _handler(self, signum, frame) -> None:
        if self._handling:  # a second signal inside this handler (on_stop runs): noted by the first already
            return
        self._handling = True
        try:
            self._handle(signum, frame)
        finally:
            self._handling = False

    def _handle(self, signum, frame) -> None:
        again, self._again = self._again, None
        if again is None and self.signum is not None and signum == signal.SIGINT and self.second_sigint_raises:
            raise KeyboardInterrupt
        if self.signum is None:
            self.signum = int(signum)
            self.at = time.monotonic()
        if self.on_stop is None:
            if frame is not None and frame.f_code in self.quiet_in:
                self._send_again()  # a callback from C (llama.cpp's log): raised once outside it
                return
            raise Interrupted(self.signum)
        self.on_stop()

    def _send_again(self) -> None:
        def send() -> None:
            if self._again is timer and self._old:  # still waited for, and the handler still installed
                os.kill(os.getpid(), self.signum)

        timer = threading.Timer(REDELIVER_S, send)
        timer.daemon = True
        self._again = timer
        timer.start()

    def __enter__(self) -> "SignalStop":
        if threading.current_thread() is threading.main_thread():
            for s in self.signals:
                self._old[s] = signal.signal(s, self._handler)
            _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> bool:
        if self._again is not None:
            self._again.cancel()
            self._again = None
        for s, h in self._old.items():
            signal.signal(s, h)
        self._old.clear()
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        return False

    def status(self, otherwise: int = OK) -> int:
        return for_signal(self.signum) if self.signum is not None else otherwise

    def raise_if_stopped(self) -> None:
        """Raise :class:`Interrupted` if a signal came (for an ``on_stop`` that only noted it). A redelivery
        still pending (the signal landed in a callback from C) is cancelled first: raised here, it would
        land again in the caller's clean-up (a bench's empty --record-dir left behind)."""
        if self.signum is not None:
            if self._again is not None:
                self._again.cancel()
                self._again = None
            raise Interrupted(self.signum)


_ACTIVE: list[SignalStop] = []  # the SignalStops installed now (the main thread's)


def stop_asked() -> tuple[int, float] | None:
    """(signal, seconds since it came) when an installed :class:`SignalStop` caught a stop signal, else None:
    what a wait on an output that nobody reads (a FIFO) checks, so that it gives up and the command ends
    within a second, from any thread."""
    for stop in _ACTIVE:
        if stop.signum is not None:
            return stop.signum, time.monotonic() - stop.at
    return None


__all__ = ["FAILED", "OK", "SIGHUP_STATUS", "SIGINT_STATUS", "SIGTERM_STATUS", "STOP_SIGNALS", "USAGE",
           "Interrupted", "SignalStop", "for_run_end", "for_signal", "signal_name", "stop_asked"]
