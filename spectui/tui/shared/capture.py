"""Capture: the terminal of a cast (``spectui cast``): what an app writes, stamped with the simulated time."""

from __future__ import annotations

import os

from rich.console import Console
from textual.drivers.headless_driver import HeadlessDriver


class Capture:
    """What a cast's app writes to its "terminal", stamped with the simulated time: ``attach(app)`` makes the
    app render like a terminal driver (not headless) into ``chunks`` and, unless NO_COLOR is set, in full
    colour (a recording is played on someone else's terminal). Used by both casts (run and attach)."""

    def __init__(self) -> None:
        self.chunks: list[tuple[float, str]] = []
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
