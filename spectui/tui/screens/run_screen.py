"""RunScreen: the widgets of one run (live or replayed), its layout by terminal size, and the fan-out
of each ScreenView to the widgets that need repainting. LiveScreen and ReplayScreen add their keys."""

from __future__ import annotations

from typing import Iterator

from textual.app import ComposeResult
from textual.containers import Container
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Static

from ...control import RunControl
from ...events import Event
from ..acceptance_by_position import AcceptanceByPosition
from ..contention_bar import ContentionBar
from ..inter_token_latency import InterTokenLatency
from ..panel import KeepLines
from ..pass_ribbon import PassRibbon
from ..prediction_panel import PredictionPanel
from ..run_metrics import RunMetrics
from ..status_line import StatusLine
from ..token_stream import TokenStream
from ..tokens_per_second import TokensPerSecond
from ..view import ReplayPosition, ScreenView

MIN_WIDTH, MIN_HEIGHT = 60, 20  # below this: "terminal too small"
WIDE_WIDTH, WIDE_HEIGHT = 110, 32  # at least this: bordered grid; else the compact 80x24 layout


class Body(KeepLines, Container):
    """The panels' grid (its background under the panels' borders: asked again on every update)."""


class KeyFooter(KeepLines, Footer):
    """Textual's footer; hands back its lines while the keys do not change."""


class RunScreen(KeepLines, Screen):
    """The run's panels; ``show`` repaints only the groups the app says changed."""

    HELP_FOR_REPLAY = False

    def __init__(self) -> None:
        super().__init__()
        self._layout_key: object = None

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield ContentionBar(id="contention")
        with Body(id="body"):
            yield TokenStream(id="stream")
            yield PassRibbon(id="ribbon")
            yield AcceptanceByPosition(id="acceptance")
            yield RunMetrics(id="metrics")
            yield TokensPerSecond(id="tps")
            yield InterTokenLatency(id="itl")
            yield PredictionPanel(id="prediction")
        yield Static("", id="too-small")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.pass_panels = (self.query_one(TokenStream), self.query_one(PassRibbon))  # follow every pass
        self.stats_panels = (self.query_one(AcceptanceByPosition), self.query_one(RunMetrics),
                             self.query_one(TokensPerSecond), self.query_one(InterTokenLatency),
                             self.query_one(PredictionPanel))  # follow the statistics, throttled
        self.status_line = self.query_one(StatusLine)
        self.contention_bar = self.query_one(ContentionBar)
        self.apply_layout()

    def on_resize(self, event: Resize) -> None:
        self.apply_layout()

    def apply_layout(self) -> None:
        w, h = self.app.size
        if (w, h) == self._layout_key:
            return
        self._layout_key = (w, h)
        small = w < MIN_WIDTH or h < MIN_HEIGHT
        self.set_class(small, "too-small")
        self.query_one("#body").set_class(w < WIDE_WIDTH or h < WIDE_HEIGHT, "narrow")
        if small:
            self.query_one("#too-small", Static).update(
                f"terminal too small: {w}x{h}\nspectui needs at least {MIN_WIDTH}x{MIN_HEIGHT}\n(q quits)")

    def show(self, view: ScreenView, *, passes: bool, stats: bool, status: bool) -> None:
        """Hand ``view`` to the widget groups that need it: the pass panels, the statistics, the status."""
        if passes:
            for panel in self.pass_panels:
                panel.show(view)
        if stats:
            for panel in self.stats_panels:
                panel.show(view)
        if status:
            self.status_line.show(view)
            self.contention_bar.show(view)

    # what differs between a live run and a replay ------------------------------------------------
    def events(self, control: RunControl, prompt: str) -> Iterator[tuple[int | None, Event]]:
        """(position or None, event) for the worker thread to feed into the screen state."""
        raise NotImplementedError

    def position(self) -> ReplayPosition | None:
        return None

    def playing_badge(self, running: bool) -> tuple[str, str]:
        return "RUNNING", "green"
