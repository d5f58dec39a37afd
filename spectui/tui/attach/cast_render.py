"""The Textual half of ``spectui cast`` for an attach trace: the real AttachApp through a capture driver.

Like :mod:`spectui.tui.run.cast_render` for a run: no worker; a simulated clock steps over the recorded
events (each at its recorded ``t`` divided by the speed, after a short lead-in), feeds them into the app's
state and paints at most ``FRAME_HZ`` times a simulated second; every terminal write is stamped with the
simulated time. ``spectui/commands/cast.py`` writes the asciicast file.
"""

from __future__ import annotations

from typing import Any

from ...contract.events import AttachStarted
from ..shared.capture import Capture
from .app import FRAME_HZ, AttachApp

LEAD_IN_S = 0.5


class CastAttachApp(AttachApp):
    """The attach replay app without a worker: the cast loop feeds the state and paints each step."""

    def _run_worker(self) -> None:  # type: ignore[override]
        pass


def attach_steps(events: list[Any], speed: float) -> list[tuple[int, float]]:
    """(index of the last event shown, simulated time) per frame: events closer than a frame share one."""
    steps: list[tuple[int, float]] = []
    for i, ev in enumerate(events):
        t = LEAD_IN_S + max(0.0, getattr(ev, "t", 0.0)) / speed
        if steps and t - steps[-1][1] < 1 / FRAME_HZ:
            steps[-1] = (i, steps[-1][1])
        else:
            steps.append((i, max(t, steps[-1][1] if steps else 0.0)))
    return steps


async def capture_attach(events: list[Any], cols: int, rows: int, speed: float,
                         theme: str | None) -> tuple[list[tuple[float, str]], float]:
    """Paint the recorded attach session; returns the (time, output) chunks and the end time."""
    cap = Capture()
    start = events[0] if events and isinstance(events[0], AttachStarted) else None
    app = CastAttachApp(events=events, request_mode=bool(start and start.prompt), theme=theme)
    cap.attach(app)
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        fed = 0
        for last, t in attach_steps(events, speed):
            while fed <= last:
                app.state.feed(events[fed])
                fed += 1
            cap.t = t
            app.paint()
            await pilot.pause()
        app.done.set()
    return cap.chunks, cap.t
