"""The Textual half of ``spectui cast``: the real SpectuiApp rendered through a capture driver.

``spectui/commands/cast.py`` (no Textual) checks the arguments, plans the frames and writes the asciicast file;
``capture`` runs the replay app on that plan's simulated clock and returns what the app wrote to the
"terminal", stamped with the simulated time. It imports nothing from spectui.commands.cast.
"""

from __future__ import annotations

from typing import Iterable

from ...contract.control import RunControl
from ...contract.events import Event, RunStarted
from ...recording.player import ReplayPlayer
from ...views.state import ScreenState
from ...views.view import InspectCursor
from ..shared.capture import Capture, Casting
from .app import SpectuiApp


class CastApp(Casting, SpectuiApp):
    """The replay app without a worker: the cast loop feeds the state and paints each planned step."""

    def new_state(self) -> ScreenState:
        return ScreenState(keep_events=False)  # the cast never saves nor seeks back: the trace's events stream


def stand_ins(n: int, start: RunStarted | None) -> list[Event | None]:
    """What the cast's player holds for a streamed trace of ``n`` events: their number and the run's start (all
    the replay screen reads of it while casting: the speed, the position, the recording's banner)."""
    return [start] + [None] * (n - 1) if n else []


async def capture(events: Iterable[Event], steps: list[tuple[int, float, str]], cols: int, rows: int,
                  speed: float, theme: str | None, inspect: tuple[int, int, int, float] | None = None,
                  player_events: list | None = None) -> tuple[Iterable[tuple[float, str]], float]:
    """Paint ``steps`` ((event position, time, phase)) of ``events`` (a list, or a stream read once, in order,
    with ``player_events`` its ``stand_ins``); returns the (time, output) chunks (spooled on disk) and the end
    time. ``inspect`` (step, pass index, token slot, hold): after that step, the token inspector on that token
    for ``hold`` seconds (the steps after it were planned that much later)."""
    cap = Capture()
    feed = iter(events)
    player = ReplayPlayer(player_events if player_events is not None else events, speed=speed)  # the status line
    app = CastApp(None, RunControl(), theme=theme, replay=player, freeze_phase="settled")
    cap.attach(app)
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        for n, (i, t, phase) in enumerate(steps):
            while app.state.n_events <= i:  # the events up to step i's, in order
                ev = next(feed, None)
                if ev is None:  # a trace cut shorter since it was planned: paint what there is
                    break
                app.state.feed(ev, index=app.state.n_events)
                player.seek(app.state.n_events)
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
