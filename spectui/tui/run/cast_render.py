"""The Textual half of ``spectui cast``: the real SpectuiApp rendered through a capture driver.

``spectui/commands/cast.py`` (no Textual) checks the arguments, plans the frames and writes the asciicast file;
``capture`` runs the replay app on that plan's simulated clock and returns what the app wrote to the
"terminal", stamped with the simulated time. It imports nothing from spectui.commands.cast.
"""

from __future__ import annotations

from ...contract.control import RunControl
from ...contract.events import Event
from ...recording.player import ReplayPlayer
from ...views.view import InspectCursor
from ..shared.capture import Capture, Casting
from .app import SpectuiApp


class CastApp(Casting, SpectuiApp):
    """The replay app without a worker: the cast loop feeds the state and paints each planned step."""


async def capture(events: list[Event], steps: list[tuple[int, float, str]], cols: int, rows: int,
                  speed: float, theme: str | None,
                  inspect: tuple[int, int, int, float] | None = None) -> tuple[list[tuple[float, str]], float]:
    """Paint ``steps`` ((event position, time, phase)); returns the (time, output) chunks and the end time.
    ``inspect`` (step, pass index, token slot, hold): after that step, the token inspector on that token
    for ``hold`` seconds (the steps after it were planned that much later)."""
    cap = Capture()
    player = ReplayPlayer(events, speed=speed)  # the status line shows the speed
    app = CastApp(None, RunControl(), theme=theme, replay=player, freeze_phase="settled")
    cap.attach(app)
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        for n, (i, t, phase) in enumerate(steps):
            if app.state.n_events <= i:
                app.state.feed(events[i], index=i)
                player.seek(i + 1)
            cap.t = t
            app.freeze_phase = phase
            app.refresh_from_state()
            await pilot.pause()
            if inspect is not None and n == inspect[0]:
                screen = app.run_screen
                screen.enter_inspect(InspectCursor(inspect[1], inspect[2]))
                screen.action_open_inspector()
                await pilot.pause()
                cap.t = t + inspect[3]
                app.pop_screen()
                screen.leave_inspect()
                await pilot.pause()
        app.casting = False  # the status line says the replay ended
        app.refresh_from_state()
        await pilot.pause()
    return cap.chunks, cap.t
