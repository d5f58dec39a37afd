"""InspectorScreen: one token explained (``spectui.views.inspector_model.explain``): draft q(x), target p(x), the rule
that decided with its numbers, the target's / draft's / residual top-N side by side with the emitted
(*) and drafted (d) tokens marked, the margin and a near-tie flag. ←/→ (h/l) and ↑/↓ (k/j) move to
another token (the ribbon's cursor follows), escape / enter / q close it."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...views.inspector import HINT, inspector_text
from ...views.inspector_model import InspectorView
from .visible_text import visible_rich

Step = Callable[[int, int], "InspectorView | None"]  # (dx, dy) -> the view at the moved cursor


class InspectorScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    InspectorScreen { align: center middle; }
    InspectorScreen > VerticalScroll { width: 100%; max-width: 100; height: auto; max-height: 100%;
        border: round $primary; background: $surface; padding: 0 1; }
    InspectorScreen #inspector-hint { color: $text-muted; }
    """
    BINDINGS = [
        Binding("escape,enter,q,i", "close", "close"),
        Binding("left,h", "step(-1, 0)", "◀ token"),
        Binding("right,l", "step(1, 0)", "token ▶"),
        Binding("up,k", "step(0, -1)", "newer pass", show=False),
        Binding("down,j", "step(0, 1)", "older pass", show=False),
    ]

    def __init__(self, view: InspectorView, step: Step | None = None) -> None:
        super().__init__()
        self.view = view
        self.step = step

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="inspector-text")
            yield Static(HINT, id="inspector-hint")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).border_title = "token inspector"
        self.show_view(self.view)

    def on_resize(self) -> None:
        self.show_view(self.view)

    def text_width(self) -> int:
        scroll = self.query_one(VerticalScroll)
        width = scroll.content_size.width or min(100, self.app.size.width) - 4
        return max(20, width)

    def text(self) -> Text:
        """What the screen shows (also what the tests read)."""
        return inspector_text(self.view, self.text_width())

    def show_view(self, view: InspectorView) -> None:
        self.view = view
        self.query_one("#inspector-text", Static).update(visible_rich(self.text()))  # a trace's words

    def action_step(self, dx: int, dy: int) -> None:
        if self.step is None:
            return
        view = self.step(dx, dy)
        if view is not None:
            self.show_view(view)

    def action_close(self) -> None:
        self.dismiss(None)
