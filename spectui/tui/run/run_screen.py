"""RunScreen: the widgets of one run (live or replayed), its layout by terminal size, and the fan-out
of each ScreenView to the widgets that need repainting. LiveScreen and ReplayScreen add their keys.

Also the token inspector, the same on both (and in each race pane): ``spectui.tui.shared.inspect_mode``."""

from __future__ import annotations

from typing import Iterator

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.widgets import Footer

from ...contract.control import RunControl
from ...contract.events import Event
from ...views.view import InspectCursor, ReplayPosition, ScreenView
from ..shared.inspect_mode import INSPECT_BINDINGS as SHARED_INSPECT_BINDINGS
from ..shared.inspect_mode import InspectMode
from ..shared.panel import KeepLines
from ..shared.pass_ribbon import PassRibbon
from ..shared.screen import FaceScreen
from ..shared.token_stream import TokenStream
from .acceptance_by_confidence import AcceptanceByConfidence
from .acceptance_by_position import AcceptanceByPosition
from .contention_bar import ContentionBar
from .inter_token_latency import InterTokenLatency
from .prediction_panel import PredictionPanel
from .run_metrics import RunMetrics
from .status_line import StatusLine
from .tokens_per_second import TokensPerSecond

WIDE_WIDTH, WIDE_HEIGHT = 110, 32  # at least this: bordered grid; else the compact 80x24 layout

# Inspect mode's keys (shared.inspect_mode), then the run's b; each screen lists them after its own.
INSPECT_BINDINGS = [*SHARED_INSPECT_BINDINGS, Binding("b", "acceptance_view", "by q", show=False)]


class Body(KeepLines, Container):
    """The panels' grid (its background under the panels' borders: asked again on every update)."""


class KeyFooter(KeepLines, Footer):
    """Textual's footer; hands back its lines while the keys do not change."""


class RunScreen(InspectMode, KeepLines, FaceScreen):
    """The run's panels; ``show`` repaints only the groups the app says changed."""

    HELP_FOR_REPLAY = False
    FOOTER = KeyFooter

    def __init__(self) -> None:
        super().__init__()
        self.cursor: InspectCursor | None = None  # inspect mode's cursor (None: not inspecting)
        self._paused_for_inspect = False

    def compose_face(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield ContentionBar(id="contention")
        with Body(id="body"):
            yield TokenStream(id="stream")
            yield PassRibbon(id="ribbon")
            yield AcceptanceByPosition(id="acceptance")
            yield AcceptanceByConfidence(id="confidence")
            yield RunMetrics(id="metrics")
            yield TokensPerSecond(id="tps")
            yield InterTokenLatency(id="itl")
            yield PredictionPanel(id="prediction")

    def on_mount(self) -> None:
        self.pass_panels = (self.query_one(TokenStream), self.query_one(PassRibbon))  # follow every pass
        self.confidence = self.query_one(AcceptanceByConfidence)
        self.stats_panels = (self.query_one(AcceptanceByPosition), self.confidence, self.query_one(RunMetrics),
                             self.query_one(TokensPerSecond), self.query_one(InterTokenLatency),
                             self.query_one(PredictionPanel))  # follow the statistics, throttled
        self.status_line = self.query_one(StatusLine)
        self.contention_bar = self.query_one(ContentionBar)
        self.apply_layout()

    def lay_out(self, w: int, h: int) -> None:
        self.query_one("#body").set_class(w < WIDE_WIDTH or h < WIDE_HEIGHT, "narrow")

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
            if not stats:  # its title shows the p-min asked for
                self.confidence.show(view)

    # the token inspector (shared.inspect_mode) --------------------------------------------------------
    def _recent(self) -> tuple:
        snap = self.app.snap
        return snap.recent if snap is not None else ()

    def action_acceptance_view(self) -> None:
        """``b``: in the 80x24 layout, acceptance by draft position <-> by draft confidence (the wide
        layout shows both)."""
        body = self.query_one("#body")
        if not body.has_class("narrow"):
            self.notify("both acceptance panels are on screen (b switches them at 80x24)", timeout=2)
            return
        body.toggle_class("by-confidence")

    # what differs between a live run and a replay ------------------------------------------------
    def events(self, control: RunControl, prompt: str) -> Iterator[tuple[int | None, Event]]:
        """(position or None, event) for the worker thread to feed into the screen state."""
        raise NotImplementedError

    def position(self) -> ReplayPosition | None:
        return None

    def playing_badge(self, running: bool) -> tuple[str, str]:
        return "RUNNING", "green"
