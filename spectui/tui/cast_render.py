"""The Textual half of ``spectui cast``: the real SpectuiApp rendered through a capture driver.

``spectui/cast.py`` (no Textual) validates the arguments, reads the trace and plans the frames
(``_frames``); this module runs the app on a simulated clock and writes the asciicast v2 file.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..cast import HOLD_END_S, CastInfo, _frames
from ..errors import SpectuiError
from ..events import Event, PassEvent, RunStarted

async def render(events: list[Event], out: str, cols: int, rows: int, speed: float, theme: str | None,
                  title: str | None) -> CastInfo:
    from rich.console import Console
    from textual.drivers.headless_driver import HeadlessDriver

    from ..control import RunControl
    from ..player import ReplayPlayer
    from .app import SpectuiApp
    from .replay_banner import banner_text

    chunks: list[tuple[float, str]] = []
    clock = [0.0]

    class CaptureDriver(HeadlessDriver):
        """Renders like a terminal driver (not headless), writing into ``chunks`` at the simulated time."""

        @property
        def is_headless(self) -> bool:
            return False

        def write(self, data: str) -> None:
            if data:
                chunks.append((clock[0], data))

    class CastApp(SpectuiApp):
        casting = True

        def _start_run(self) -> None:  # no worker: the cast loop feeds the state itself
            pass

        @property
        def running(self) -> bool:
            return self.casting

    player = ReplayPlayer(events, speed=speed)
    app = CastApp(None, RunControl(), theme=theme, replay=player, freeze_phase="settled")
    app.driver_class = CaptureDriver
    if not os.environ.get("NO_COLOR"):  # a recording is played on someone else's terminal: full colour
        app.console = Console(
            color_system="truecolor", file=app.console.file, markup=True, highlight=False, emoji=False,
            legacy_windows=False, force_terminal=True, safe_box=False, soft_wrap=False,
        )
    start = next((e for e in events if isinstance(e, RunStarted)), None)
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        for i, t, phase in _frames(events, speed):
            if app.state.n_events <= i:
                app.state.feed(events[i], index=i)
                player.seek(i + 1)
            clock[0] = t
            app.freeze_phase = phase
            app.refresh_from_state()
            await pilot.pause()
        app.casting = False  # the status line says the replay ended
        app._status_key = None
        app.refresh_from_state()
        await pilot.pause()
        end_t = clock[0]
    ends_at = end_t + HOLD_END_S
    header: dict[str, Any] = {
        "version": 2,
        "width": cols,
        "height": rows,
        "timestamp": int(start.started_at) if start is not None and start.started_at > 0 else 0,
        "duration": round(ends_at, 6),
        "title": title or ("spectui " + banner_text(start)),
        "env": {"TERM": "xterm-256color", "SHELL": "/bin/sh"},
    }
    n = 0
    try:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(header, ensure_ascii=False) + "\n")
            fh.write(json.dumps([0.0, "o", "\x1b[?25l\x1b[2J\x1b[H"]) + "\n")  # hide cursor, clear
            n += 1
            merged: list[list[Any]] = []
            for t, data in chunks:
                if merged and abs(merged[-1][0] - t) < 1e-9:
                    merged[-1][1] += data
                else:
                    merged.append([t, data])
            for t, data in merged:
                fh.write(json.dumps([round(t, 6), "o", data], ensure_ascii=False) + "\n")
                n += 1
            fh.write(json.dumps([round(ends_at, 6), "o", "\x1b[?25h"]) + "\n")  # cursor back, hold the frame
            n += 1
    except OSError as exc:
        raise SpectuiError(f"cannot write {out}: {exc.strerror or exc}") from None
    return CastInfo(out, cols, rows, n, ends_at, sum(isinstance(e, PassEvent) for e in events))
