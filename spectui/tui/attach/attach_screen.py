"""AttachScreen: the attach face's panels and their layout (watch mode, request mode, 80x24 and up),
and the fan-out of each AttachView to them. The keys belong to AttachApp (quit, help, theme)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal

from ...views.attach_state import AttachView
from ..shared.screen import FaceScreen
from .acceptance import AttachAcceptance
from .attach_panel import AttachPanel
from .engines import AttachEngines
from .request import AttachRequest
from .status_line import AttachStatusLine
from .summary import AttachSummary
from .throughput import AttachThroughput


class AttachScreen(FaceScreen):
    FACE_NAME = "spectui attach"

    def __init__(self, request_mode: bool) -> None:
        super().__init__()
        self.request_mode = request_mode

    def compose_face(self) -> ComposeResult:
        yield AttachStatusLine(id="attach-status")
        yield AttachEngines(id="attach-engines")
        if self.request_mode:
            yield AttachRequest(id="attach-request")
        with Horizontal(id="attach-row1"):
            yield AttachAcceptance(id="attach-acceptance")
            yield AttachSummary(id="attach-summary")
        yield AttachThroughput(id="attach-throughput")

    def on_mount(self) -> None:
        self.set_class(self.request_mode, "request-mode")
        self.panels = list(self.query(AttachPanel))
        self.status_line = self.query_one(AttachStatusLine)
        self.apply_layout()

    def lay_out(self, w: int, h: int) -> None:
        self.set_class(w >= 110 and h >= 32, "wide")

    def show(self, view: AttachView) -> None:
        n = len(view.snap.interval) + (1 if view.snap.interval_sum else 0) if view.snap else 1
        engines = self.query_one(AttachEngines)
        height = max(2, min(n, 8) + 1) + (2 if self.has_class("wide") else 0)  # one row per engine, the sum
        if engines.styles.height is None or engines.styles.height.value != height:
            engines.styles.height = height
        for panel in self.panels:
            panel.show(view)
        self.status_line.show(view)
