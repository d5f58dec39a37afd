"""RaceBanner: the line that says this is a race of recordings, on which clock, at what speed, and the
race's notes (different prompts; how the runs were recorded: one after the other)."""

from __future__ import annotations

from rich.text import Text

from ...recording.player import speed_label
from ...views.race_view import RaceView
from ..shared.panel import Panel


class RaceBanner(Panel):
    DEFAULT_CSS = """
    RaceBanner { height: 1; background: $warning; color: $background; }
    RaceBanner.with-note { height: 2; }
    """

    def draw(self, width: int, height: int) -> Text:
        race: RaceView | None = self.view if isinstance(self.view, RaceView) else None
        if race is None:
            return Text(" RACE")
        clock = "clock from each run's start" if race.from_start else "clock from each run's first token"
        state = "PAUSED" if race.paused else ("DONE" if race.done else "RACING")
        t = Text(f" RACE of {len(race.lanes)} · {state} · {race.clock_s:.2f} s · {speed_label(race.speed)} · {clock}",
                 "bold")
        if race.any_prompt:
            t.append(" · DIFFERENT PROMPTS (--any-prompt)", "bold")
        t.truncate(width, overflow="ellipsis")
        if race.note and height > 1:
            n = Text("\n " + race.note)
            t.append_text(n)
        return t
