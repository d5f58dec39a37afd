"""The Textual half of ``spectui cast --race``: the real RaceApp painted at a plan's simulated times through
the cast's capture driver (``spectui.tui.shared.capture.Capture``). No worker runs: each step feeds the events
due by then to the lanes' states and paints at the simulated time, so the animation clocks and the paint
rules are the app's own."""

from __future__ import annotations

from ...views.race_timeline import Race
from ..shared.capture import Capture, Casting
from .app import RaceApp


class CastRaceApp(Casting, RaceApp):
    """The race app without a worker (shared.capture.Casting); the plan says when to paint."""

    def _request_paint(self, at: float) -> None:  # the plan says when to paint
        pass

    def paint_frame(self, t: float, force: bool = False) -> None:
        """One frame at the plan's time ``t`` (``force``: every widget repainted, as for the last frame)."""
        if force:
            self._force = True
        self._paint(t)


async def capture_race(race: Race, plan: list[tuple[float, int]], cols: int, rows: int, speed: float,
                       theme: str | None) -> tuple[list[tuple[float, str]], float]:
    cap = Capture()
    app = CastRaceApp(race, theme=theme, speed=speed)
    cap.attach(app)
    async with app.run_test(headless=False, size=(cols, rows), notifications=False) as pilot:
        await pilot.pause()
        delivered = 0
        for t, n in plan:
            while delivered < n:
                loc = race.locate(delivered)
                if loc is not None:
                    li, j = loc
                    app.states[li].feed(race.lanes[li].events[j], index=j)
                delivered += 1
            app.player.seek(delivered)
            cap.t = t
            app.paint_frame(t)
            await pilot.pause()
        app.casting = False
        app.paint_frame(cap.t, force=True)
        await pilot.pause()
    return cap.chunks, cap.t
