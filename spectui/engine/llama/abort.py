"""Ending a llama_decode early: a stop (q, a signal, a restart) takes effect mid-pass, not after the pass.

llama.cpp asks a context's abort callback (``llama_set_abort_callback``) between the nodes of every graph it
computes (the CPU backend, from its first thread, after each node; llama_decode also before each
micro-batch); when it returns true the decode stops and ``llama_decode`` returns 2 ("aborted: processed
ubatches remain in the context's memory", llama.h). The callback must not need Python: a ctypes callback
takes the GIL once per node (about a thousand times a decode on a 1.5B model), and while another Python
thread holds it (the UI painting, the finishing thread, the trace writer) each of those waits up to the
interpreter's switch interval. So the callback is a C function that reads one byte: libc's ``strlen`` over
a two-byte buffer whose second byte is always 0 returns 0 (go on) or 1 (stop), in the register a C ``bool``
is returned in. Setting the byte is the whole abort, safe from any thread and from a signal handler.

``DecodeAbort`` (one per Engine) is attached to the engine's contexts. ``watching(control)`` scopes it to
a RunControl: while the scope is open, ``control.stop()`` aborts the decode in progress and every decode
after it; when the last scope closes the byte is reset. A decode that was aborted raises
``DecodeAborted``; the pass loop ends the run with reason "stopped" (the aborted pass is never an event,
the passes before it are), and the KV cells the aborted decode wrote are past the run's accepted context,
so the next run (which clears the cache) or ``measure_verify_ms`` (which rolls back to it) never sees them.

A headless run decodes on the main thread, where a Python signal handler runs only once the C call in
progress returns; ``aborting_on_signals`` makes the C-level handler's wake-up byte (``signal.set_wakeup_fd``)
trip the abort from a thread of its own, so SIGINT / SIGTERM / SIGHUP end the decode at once too, and the
Python handler then stops the run as before.

No UI imports.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import threading
from typing import Iterator

from ...contract.exitcodes import STOP_SIGNALS


class DecodeAborted(Exception):
    """A llama_decode stopped by the abort (a stop asked mid-pass): the pass it was part of never completed."""

    def __init__(self, role: str) -> None:
        super().__init__(f"the {role} model's decode was stopped")
        self.role = role


_CALLBACK = None  # the C callback (a function pointer to libc's strlen), made once


def _c_callback(L):
    """llama.cpp's ``ggml_abort_callback`` pointing at libc's strlen (see the module docstring); None when
    this platform's C library is not reachable (the abort is then not available, and a stop waits for
    the pass, as before)."""
    global _CALLBACK
    if _CALLBACK is None:
        try:
            libc = ctypes.CDLL(None)
            addr = ctypes.cast(libc.strlen, ctypes.c_void_p).value
        except (OSError, AttributeError):
            addr = None
        _CALLBACK = L.ggml_abort_callback(addr) if addr else False
    return _CALLBACK or None


class DecodeAbort:
    """The abort byte of one engine's contexts (see the module docstring)."""

    def __init__(self) -> None:
        self._flag = ctypes.create_string_buffer(2)  # [0]: 1 = abort; [1]: always 0 (strlen's terminator)
        self._watched: list = []  # the RunControls whose stop aborts (open ``watching`` scopes)
        self.attached = 0  # contexts it is attached to

    def attach(self, L, ctx, again: bool = False) -> bool:
        """Install the abort on a llama_context (``L``: the bindings; ``again``: a context made in place of one
        it was attached to, not counted twice). False where it is not available."""
        cb = _c_callback(L)
        if cb is None or not ctx:
            return False
        L.llama_set_abort_callback(ctx, cb, ctypes.cast(self._flag, ctypes.c_void_p))
        self.attached += 0 if again else 1
        return True

    @property
    def tripped(self) -> bool:
        return self._flag.raw[0] != 0

    def trip(self) -> None:
        """Abort the decode in progress, and every one after it while a scope is open (any thread)."""
        self._flag[0] = 1

    def _control_stopped(self) -> None:
        # a RunControl's on_stop: it may be an old run's control, whose scope is closed (then nothing)
        if any(c.stopped for c in list(self._watched)):
            self.trip()

    @contextlib.contextmanager
    def watching(self, control) -> Iterator[None]:
        """While open, ``control.stop()`` aborts (at once, if it is stopped already)."""
        self._watched.append(control)
        control.on_stop(self._control_stopped)
        try:
            yield
        finally:
            self._watched.remove(control)
            self._flag[0] = 1 if any(c.stopped for c in self._watched) else 0


@contextlib.contextmanager
def aborting_on_signals(abort: DecodeAbort, signals=STOP_SIGNALS) -> Iterator[None]:
    """While open (main thread only; else it does nothing), a stop signal trips ``abort`` at once, even while
    the main thread is inside llama_decode: the C-level handler writes the signal's number to a pipe
    (``signal.set_wakeup_fd``) that a thread of its own reads. The Python-level handlers (the command's
    SignalStop) still run, after the decode returns. Signals must have Python handlers to be seen."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    wanted = {int(s) for s in signals}
    try:
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except (ValueError, OSError):  # pragma: no cover - not the main interpreter
        os.close(r)
        os.close(w)
        yield
        return

    def watch() -> None:
        while True:
            try:
                data = os.read(r, 64)
            except OSError:
                return
            if not data:  # the write end closed: the scope is over
                return
            if any(b in wanted for b in data):
                abort.trip()

    t = threading.Thread(target=watch, name="spectui-signal-abort", daemon=True)
    t.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(old)
        os.close(w)
        t.join(timeout=1.0)
        os.close(r)
