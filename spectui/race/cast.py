"""``spectui cast --race A B [C] -o race.cast``: the race rendered to asciicast v2 (no terminal needed).

The plan is made here, without Textual: the simulated times at which the race's screen is painted (every
event's race time divided by the speed, after a lead-in, and the animation phase changes of each pass,
``spectui.animation``); ``spectui.tui.race.race_cast.capture_race`` paints the real RaceApp at those times
through the cast's capture driver, and ``spectui.cast.write_asciicast`` writes the file, to a path checked by
``spectui.race.files.output_path`` (never one of the inputs).
"""

from __future__ import annotations

import asyncio
import os

from ..animation import PENDING_S, VERDICT_S
from ..cast import CastInfo, check_cast_args, write_asciicast
from ..errors import SpectuiError
from ..events import PassEvent
from .files import output_path
from .timeline import Race

LEAD_IN_S = 0.5  # the start screen shows this long before the gun


def paint_times(race: Race, speed: float) -> list[tuple[float, int]]:
    """(simulated time, player events delivered by then) per paint, in time order."""
    if not 0 < speed < float("inf"):
        raise SpectuiError("a cast needs a finite --speed (0.25..8)")
    times: dict[float, None] = {0.0: None}
    for t, li, j in race.merged:
        at = LEAD_IN_S + t / speed
        times[at] = None
        ev = race.lanes[li].events[j]
        if isinstance(ev, PassEvent) and ev.drafts:  # its phase changes (the app's PassClock decides which show)
            times[at + PENDING_S + 1e-4] = None
            times[at + VERDICT_S + 1e-4] = None
    arrivals = [LEAD_IN_S + t / speed for t, _, _ in race.merged]
    out = []
    n = 0
    for at in sorted(times):
        while n < len(arrivals) and arrivals[n] <= at + 1e-9:
            n += 1
        out.append((at, n + 1 if at >= LEAD_IN_S else 0))  # + the start gun once the race has begun
    return out


def render_race_cast(race: Race, out_path: str | os.PathLike, *, cols: int = 120, rows: int = 36, speed: float = 1.0,
                     theme: str | None = None, title: str | None = None) -> CastInfo:
    path = output_path(out_path, [lane.path for lane in race.lanes])
    check_cast_args(cols, rows, speed, [ev for lane in race.lanes for ev in lane.events])
    plan = paint_times(race, speed)
    from ..tui.race.race_cast import capture_race  # the Textual half

    chunks, end_t = asyncio.run(capture_race(race, plan, cols, rows, speed, theme))
    names = " vs ".join(lane.setting for lane in race.lanes)
    n, duration = write_asciicast(path, cols, rows, chunks, end_t, race.lanes[0].start,
                                  title or f"spectui race: {names}")
    return CastInfo(path, cols, rows, n, duration, sum(len(lane.passes) for lane in race.lanes))
