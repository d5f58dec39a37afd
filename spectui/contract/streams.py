"""Standard streams a command was started without (``spectui ... >&-``, ``2>&-``, ``<&-``).

Python sets ``sys.stdout`` to None when file descriptor 1 is closed, and every face writes to it. At start
(:func:`guard_standard_streams`, called once by the entry point) each closed descriptor 0, 1 and 2 is
opened on ``/dev/null``, so no file spectui opens later takes its number (a trace opened as descriptor 1
would receive whatever C code prints to standard output). ``sys.stdout`` then becomes a stand-in whose
``write`` raises :class:`StdoutClosed` (``spectui: error: cannot write to standard output: it is closed``,
exit status 2, as ``cat`` says ``write error``), and a closed standard error is written nowhere (there is
nowhere to say anything: the status alone tells). :func:`closed_stream_named` tells an output path that
names a closed standard stream (``-o /dev/stdout`` under ``>&-``), so it is refused before any work.
Only the standard library and spectui's errors are imported here.
"""

from __future__ import annotations

import io
import os
import re
import sys

from .errors import SpectuiError

CLOSED_STDOUT = "cannot write to standard output: it is closed"
_NAMES = {0: "standard input", 1: "standard output", 2: "standard error"}
_STD_PATH = re.compile(r"^/dev/(?:std(in|out|err)|fd/(\d+))$|^/proc/(self|thread-self|\d+)(?:/task/\d+)?/fd/(\d+)$")
_LINK_HOPS = 40  # a chain of links longer than this is a loop (the kernel's own limit)

_closed: set[int] = set()  # the standard descriptors closed when the command started


class StdoutClosed(SpectuiError):
    """A write to standard output, which was closed when the command started (one line, exit status 2)."""


class _ClosedOutput(io.TextIOBase):
    """``sys.stdout`` when descriptor 1 was closed: every write raises :class:`StdoutClosed`; a flush has
    nothing to do (nothing was ever written)."""

    encoding = "utf-8"
    errors = "strict"

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise StdoutClosed(CLOSED_STDOUT)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False


def _is_closed(fd: int) -> bool:
    try:
        os.fstat(fd)
        return False
    except OSError:
        return True


def guard_standard_streams() -> None:
    """Open every closed standard descriptor on ``/dev/null`` and remember it; ``sys.stdout`` then raises
    :class:`StdoutClosed` on write, and a closed ``sys.stderr`` writes nowhere. Idempotent."""
    for fd in (0, 1, 2):
        if fd in _closed or not _is_closed(fd):
            continue
        _closed.add(fd)
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
    if 1 in _closed and not isinstance(sys.stdout, _ClosedOutput):
        sys.stdout = _ClosedOutput()
    if 2 in _closed and (sys.stderr is None or sys.stderr.closed):
        sys.stderr = open(os.devnull, "w", encoding="utf-8", errors="replace")


def stdout_closed() -> bool:
    """Whether the command started with standard output closed."""
    return 1 in _closed


def closed_stream_named(path: str | os.PathLike) -> str:
    """"standard output is closed" when ``path`` (or a link it is, followed link by link) names a standard
    stream that was closed at start (``/dev/stdout``, ``/dev/fd/1``, ``/proc/self/fd/1``); "" otherwise."""
    p = os.path.abspath(os.fspath(path))
    for _ in range(_LINK_HOPS):
        m = _STD_PATH.match(p)
        if m is not None:
            std, dev_fd, pid, proc_fd = m.groups()
            fd = {"in": 0, "out": 1, "err": 2}[std] if std else int(dev_fd or proc_fd)
            mine = pid in (None, "self", "thread-self") or pid == str(os.getpid())
            return f"{_NAMES.get(fd, f'file descriptor {fd}')} is closed" if mine and fd in _closed else ""
        try:
            p = os.path.join(os.path.dirname(p), os.readlink(p))
        except (OSError, ValueError):  # not a link (or no such file): it names no standard stream
            return ""
        p = os.path.normpath(p)
    return ""


__all__ = ["CLOSED_STDOUT", "StdoutClosed", "closed_stream_named", "guard_standard_streams", "stdout_closed"]
