"""``spectui cast FILE -o OUT.cast``: the replay TUI rendered to an asciicast v2 file, no terminal needed.

The real app (``spectui.tui.app.SpectuiApp``, the same widgets as live and replay) runs under Textual's
test harness with a capture driver: a driver that is not "headless" (so the app renders ANSI exactly
as it would to a terminal) but writes into a list instead of a tty. A simulated clock steps over the
trace: each pass arrives at its recorded time (``Timing.t_end``, counted from the first pass as the
TUI's replay does) divided by ``--speed``; its drafts
show as pending, then their verdicts, then settle, as on a live screen. Every write is stamped with
the simulated time, so a 5-minute recording renders in seconds and plays at the recorded pace.

File format (https://docs.asciinema.org/manual/asciicast/v2/): a header line
``{"version": 2, "width": W, "height": H, "timestamp": ..., "title": ..., "env": {...}}`` then one
``[time, "o", data]`` line per terminal write.
"""

from __future__ import annotations

import asyncio
import os
import sys
from dataclasses import dataclass
from typing import Iterable

import click

from .errors import SpectuiError
from .events import Event, PassEvent

DEFAULT_COLS, DEFAULT_ROWS = 120, 36
PENDING_S = 0.12  # drafts shown as pending (capped at a third of the gap to the next pass)
VERDICT_S = 0.9  # rejected drafts shown struck through (capped at two thirds of the gap)
HOLD_END_S = 3.0  # the final screen stays this long before the cast ends
LEAD_IN_S = 0.5  # the start screen (banner, empty panels) shows this long before the first pass


@dataclass
class CastInfo:
    path: str
    width: int
    height: int
    n_events: int  # "o" events written
    duration_s: float
    n_passes: int


def _frames(events: list[Event], speed: float) -> list[tuple[int, float, str | None]]:
    """(event position, time, phase) steps: when each event is shown and in which animation phase.

    As in the TUI's replay (spectui.player), the clock starts at the first pass: the recording's
    time to first token is shown in the TTFT panel, not waited for; after a short lead-in on the
    start screen, pass i arrives at (t_end_i - t_end_0) / speed."""
    from .tui.panel import PENDING, SETTLED, VERDICT

    t0 = next(ev.timing.t_end for ev in events if isinstance(ev, PassEvent))

    def arrival(ev: PassEvent) -> float:
        return LEAD_IN_S + max(0.0, ev.timing.t_end - t0) / speed

    pass_times = [(i, arrival(ev)) for i, ev in enumerate(events) if isinstance(ev, PassEvent)]
    next_time = {}
    for (i, t), nxt in zip(pass_times, pass_times[1:] + [(None, None)]):
        next_time[i] = nxt[1]
    steps: list[tuple[int, float, str | None]] = []
    now = 0.0  # arrival of the latest pass
    last = 0.0  # latest step (time never goes back)
    for i, ev in enumerate(events):
        if isinstance(ev, PassEvent):
            now = max(last, arrival(ev))
            if ev.drafts:
                gap = (next_time[i] - now) if next_time.get(i) is not None else VERDICT_S * 1.5
                gap = max(gap, 0.0)
                steps.append((i, now, PENDING))
                steps.append((i, now + min(PENDING_S, gap / 3), VERDICT))
                steps.append((i, now + min(VERDICT_S, 2 * gap / 3), SETTLED))
            else:
                steps.append((i, now, SETTLED))
        else:
            steps.append((i, last, SETTLED))
        last = steps[-1][1]
    return steps


def render_cast(
    events: Iterable[Event],
    out_path: str | os.PathLike,
    *,
    cols: int = DEFAULT_COLS,
    rows: int = DEFAULT_ROWS,
    speed: float = 1.0,
    theme: str | None = None,
    title: str | None = None,
) -> CastInfo:
    """Render ``events`` (a recorded run) to an asciicast v2 file. Returns what was written."""
    if not (1 <= cols <= 1000 and 1 <= rows <= 1000):
        raise SpectuiError(f"terminal size {cols}x{rows} is out of range (1..1000 each)")
    if not (0 < speed < float("inf")):
        raise SpectuiError("cast speed must be a number between 0.25 and 8")
    evs = list(events)
    if not any(isinstance(e, PassEvent) for e in evs):
        raise SpectuiError("the trace holds no passes to render")
    from .tui.cast_render import render  # the Textual half: the real app through a capture driver

    return asyncio.run(render(evs, os.fspath(out_path), cols, rows, speed, theme, title))


@click.command("cast", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("file", type=str)
@click.option("-o", "--output", "output", type=str, required=True, help="the .cast file to write")
@click.option("--cols", type=int, default=DEFAULT_COLS, show_default=True, help="terminal width")
@click.option("--rows", type=int, default=DEFAULT_ROWS, show_default=True, help="terminal height")
@click.option("--speed", type=str, default="1", show_default=True, help="0.25..8 (1 = recorded speed)")
@click.option("--theme", type=str, default=None, help="TUI theme (see themes/)")
@click.option("--title", type=str, default=None, help="title in the cast header")
def cast_cmd(file: str, output: str, cols: int, rows: int, speed: str, theme: str | None, title: str | None) -> None:
    """Render a trace FILE to an asciicast v2 file (no terminal needed); play it with `asciinema play`."""
    from .cli import fail
    from .player import parse_speed
    from .replay import load_for_tui

    try:
        sp = parse_speed(speed)
        if sp == float("inf"):
            raise SpectuiError("a cast needs a finite --speed (0.25..8)")
        from .tui.themes import check_theme

        check_theme(theme)
        _header, events = load_for_tui(file)
        info = render_cast(events, output, cols=cols, rows=rows, speed=sp, theme=theme, title=title)
    except SpectuiError as exc:
        fail(str(exc))
    print(f"wrote {info.path}: {info.width}x{info.height}, {info.n_passes} passes, "
          f"{info.duration_s:.1f} s, {info.n_events} output events", file=sys.stderr)
