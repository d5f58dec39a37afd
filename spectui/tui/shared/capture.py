"""Capture: the terminal of a cast (``spectui cast``): what an app writes, stamped with the simulated time."""

from __future__ import annotations

import os
import struct
import tempfile
from typing import Iterator

from rich.console import Console
from textual.drivers.headless_driver import HeadlessDriver

_HEAD = struct.Struct("<dI")  # a chunk's time and its length in bytes


class Spool:
    """(time, text) chunks in a temporary file, read back in order by iterating: a long cast's output (about
    100 KB a pass at 1000 x 1000, gigabytes for 100,000 passes) is never held in memory."""

    def __init__(self) -> None:
        self._fh = tempfile.TemporaryFile("w+b")  # removed when closed (or when the process ends)
        self.n = 0

    def append(self, chunk: tuple[float, str]) -> None:
        data = chunk[1].encode("utf-8", "surrogatepass")
        self._fh.write(_HEAD.pack(chunk[0], len(data)) + data)
        self.n += 1

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[tuple[float, str]]:
        self._fh.flush()
        self._fh.seek(0)
        for _ in range(self.n):
            t, size = _HEAD.unpack(self._fh.read(_HEAD.size))
            yield t, self._fh.read(size).decode("utf-8", "surrogatepass")
        self._fh.seek(0, os.SEEK_END)


class Capture:
    """What a cast's app writes to its "terminal", stamped with the simulated time: ``attach(app)`` makes the
    app render like a terminal driver (not headless) into ``chunks`` (a ``Spool``: on disk, not in memory) and,
    unless NO_COLOR is set, in full colour (a recording is played on someone else's terminal). Used by every
    cast (run, attach and race)."""

    def __init__(self) -> None:
        self.chunks = Spool()
        self.t = 0.0

    def attach(self, app) -> None:
        capture = self

        class CaptureDriver(HeadlessDriver):
            @property
            def is_headless(self) -> bool:
                return False

            def write(self, data: str) -> None:
                if data:
                    capture.chunks.append((capture.t, data))

        app.driver_class = CaptureDriver
        if not os.environ.get("NO_COLOR"):
            app.console = Console(
                color_system="truecolor", file=app.console.file, markup=True, highlight=False, emoji=False,
                legacy_windows=False, force_terminal=True, safe_box=False, soft_wrap=False,
            )


class Casting:
    """Mixed in before a PacedFaceApp for a cast: no worker runs (the cast loop feeds the state and paints
    each planned step at its simulated time), and the face reads as running until the loop says it is done
    (``casting = False``), so its state badge is the one a live screen shows."""

    casting = True

    def start_worker(self) -> None:
        pass

    @property
    def running(self) -> bool:
        return self.casting
