"""What one frame of the race shows, per lane and for the race, computed once per paint and handed to the
widgets (no Textual). A lane's ``screen`` is the run face's own ScreenView, so the token stream and the
pass ribbon draw it as they draw a run."""

from __future__ import annotations

from dataclasses import dataclass

from ..analysis.stats import StatsSnapshot
from .view import ScreenView


@dataclass(frozen=True)
class LaneView:
    name: str
    label: str
    screen: ScreenView  # the lane's snapshot, animation phase, inspect cursor: for TokenStream / PassRibbon
    elapsed_s: float  # race time the lane has run (its finish time once it finished)
    finished: bool
    finish_s: float  # the trace's own time to its last token on the race clock
    place: int = 0  # 1 = first to finish (0 while racing)
    focused: bool = False
    state: str = "RACING"
    truncated: bool = False

    @property
    def snap(self):
        return self.screen.snap

    @property
    def stats(self) -> StatsSnapshot | None:
        return self.screen.snap.stats if self.screen.snap is not None else None


@dataclass(frozen=True)
class RaceView:
    lanes: tuple[LaneView, ...] = ()
    clock_s: float = 0.0  # the race clock: race time of the latest delivered event
    speed: float = 1.0
    paused: bool = False
    done: bool = False  # every lane finished
    from_start: bool = False
    any_prompt: bool = False
    note: str = ""
    verdict: tuple[str, ...] = ()  # the finish line once every lane finished (winner, tokens, why)
    theme: str = ""
    error: str = ""  # the replay worker failed (shown on the finish line)
