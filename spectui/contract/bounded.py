"""Running a stranger's code under a budget: wall time, memory and output size (docs/untrusted-input.md).

A model's chat template is code (Jinja) that came with the model. The sandbox stops it reaching Python's
internals, but not from running forever (nested loops) or building gigabytes (``'A' * 10**9``, a string
doubled in a loop), and no check inside the interpreter can bound every way of doing that (``*``, ``~``,
``|center``, ``|replace``, ``format``, ...). A Parquet file's footer may lie about what its pages decode to.
:func:`call_bounded` therefore runs such work in a forked child:

- memory: the child's address space may grow by ``Budget.memory_bytes`` past what it inherited
  (``RLIMIT_AS``); an allocation past that fails there (MemoryError), never in this process;
- time: this process waits at most ``Budget.seconds`` of wall time for the answer, then kills the child
  (SIGKILL); the child also has a CPU-time limit and an alarm, so it ends even if nobody waits for it;
- output: at most ``Budget.output_bytes`` come back; a larger answer is refused in the child and never read;
- signals: while it waits, a stop signal (SIGINT, SIGTERM, SIGHUP, see ``exitcodes.SignalStop``) kills the
  child at once and raises :class:`~spectui.contract.exitcodes.Interrupted` (the wait looks every 50 ms),
  and the child itself dies by a signal sent to the process group (Ctrl+C), as it takes the default
  handlers.

The child runs Python only (no llama.cpp call), takes no lock another thread could hold (no print, no
logging), never collects garbage (a finalizer of this process's objects must not run there) and leaves by
``os._exit``. Where ``os.fork`` does not exist the work runs in this process, bounded in output only.
Standard library, errors and exitcodes only.
"""

from __future__ import annotations

import gc
import math
import os
import select
import signal
import time
from dataclasses import dataclass
from typing import Callable

from .errors import SpectuiError
from .exitcodes import STOP_SIGNALS, Interrupted, stop_asked

_POLL_S = 0.05  # a stop signal or the deadline is seen within this
_MAX_ERROR = 2000  # characters of the work's own error message sent back
_OK, _ERROR, _USER, _MEMORY, _OUTPUT = b"O", b"E", b"U", b"M", b"X"


@dataclass(frozen=True)
class Budget:
    """What the work may use: ``seconds`` of wall time, ``memory_bytes`` of address space beyond what the
    child inherited, ``output_bytes`` of answer."""

    seconds: float
    memory_bytes: int
    output_bytes: int


class BudgetExceeded(Exception):
    """The work went past its budget; ``kind`` says which part: "time", "memory" or "output"."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class WorkFailed(Exception):
    """The work raised an exception of its own; the message is ``"<type>: <text>"`` (at most 2000 chars)."""


def call_bounded(work: Callable[[], bytes], budget: Budget) -> bytes:
    """``work()``'s bytes, computed in a forked child under ``budget`` (see the module docstring).

    Args:
        work: what to run; it returns bytes and may raise (its exception becomes :class:`WorkFailed`).
        budget: the wall time, added memory and answer size it may take.

    Returns:
        The bytes ``work`` returned.

    Raises:
        BudgetExceeded: past a limit (``kind``: "time", "memory" or "output").
        WorkFailed: ``work`` raised.
        SpectuiError: ``work`` raised one (its message comes back as it was: a reader's limit, say).
        Interrupted: a stop signal came while it ran (the child is killed first).
    """
    if not hasattr(os, "fork"):  # pragma: no cover - Windows: no child to bound; the output is still checked
        status, payload = _outcome(work, budget)
        return _answer(status + payload, budget)
    r, w = os.pipe()
    # the stop signals are blocked across the fork: the child must never run this process's handlers (they
    # would raise into the command's own code there); it takes the default ones before it unblocks them
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(r)
        os.close(w)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        raise WorkFailed(f"cannot start a process to run it: {exc.strerror or exc}") from None
    if pid == 0:  # the child: never returns
        _child(work, budget, r, w, mask)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    os.close(w)
    try:
        return _answer(_collect(r, budget), budget)
    finally:
        os.close(r)
        _reap(pid)


def _answer(data: bytes, budget: Budget) -> bytes:
    status, payload = data[:1], data[1:]
    if status == _OK:
        if len(payload) > budget.output_bytes:  # pragma: no cover - the child refuses it first
            raise BudgetExceeded("output")
        return payload
    if status == _ERROR:
        raise WorkFailed(payload.decode("utf-8", "replace"))
    if status == _USER:
        raise SpectuiError(payload.decode("utf-8", "replace"))
    if status == _OUTPUT:
        raise BudgetExceeded("output")
    raise BudgetExceeded("memory")  # _MEMORY, or the child died without a word (an allocation that aborted)


def _collect(fd: int, budget: Budget) -> bytes:
    """Everything the child writes, within the deadline and the output size (plus the status byte)."""
    deadline = time.monotonic() + budget.seconds
    chunks: list[bytes] = []
    got = 0
    cap = budget.output_bytes + 1 + _MAX_ERROR * 4
    while True:
        asked = stop_asked()
        if asked is not None:
            raise Interrupted(asked[0])
        left = deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded("time")
        ready, _, _ = select.select([fd], [], [], min(_POLL_S, left))
        if not ready:
            continue
        data = os.read(fd, 1 << 20)
        if not data:
            return b"".join(chunks)
        got += len(data)
        if got > cap:  # pragma: no cover - the child refuses an answer over the budget before sending it
            raise BudgetExceeded("output")
        chunks.append(data)


def _reap(pid: int) -> None:
    """End the child (SIGKILL if it still runs) and collect its status, so no zombie is left."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == 0:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):  # pragma: no cover - already collected
        pass


def _outcome(work: Callable[[], bytes], budget: Budget) -> tuple[bytes, bytes]:
    """(status byte, payload) of running ``work`` here."""
    try:
        out = work()
    except MemoryError:
        return _MEMORY, b""
    except SpectuiError as exc:  # the work's own one-line verdict (already one visible line)
        return _USER, str(exc)[:_MAX_ERROR].encode("utf-8", "replace")
    except Exception as exc:  # noqa: BLE001 - the work is a stranger's code: any failure is its message
        text = f"{type(exc).__name__}: {exc}"
        return _ERROR, text[:_MAX_ERROR].encode("utf-8", "replace")
    if len(out) > budget.output_bytes:
        return _OUTPUT, b""
    return _OK, bytes(out)


def _child(work: Callable[[], bytes], budget: Budget, r: int, fd: int,  # pragma: no cover - runs in the child
           mask) -> None:
    """The forked child: the default stop signals, limits, the work, its answer on ``fd``, ``os._exit``."""
    code = 70
    try:
        os.close(r)
        gc.disable()
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)  # this process's wake-up pipe belongs to the parent's signal watcher
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _limit(budget)
        status, payload = _outcome(work, budget)
        view = memoryview(status + payload)
        while view:
            view = view[os.write(fd, view):]
        code = 0
    finally:
        os._exit(code)


def _limit(budget: Budget) -> None:  # pragma: no cover - runs in the child
    """The child's own limits: CPU time and an alarm past the parent's deadline, and its address space."""
    import resource  # noqa: PLC0415 - POSIX only, where fork exists

    secs = int(math.ceil(budget.seconds)) + 2
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(secs)
    resource.setrlimit(resource.RLIMIT_CPU, (secs, secs + 1))
    try:
        with open("/proc/self/statm") as fh:
            size = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return  # no /proc (macOS, which does not enforce RLIMIT_AS either): time and output are still bounded
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = size + budget.memory_bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
