"""InspectorScreen: one token explained (``spectui.views.inspector_model.explain``): draft q(x), target p(x), the rule
that decided with its numbers, the target's / draft's / residual top-N side by side with the emitted
(*) and drafted (d) tokens marked, the margin and a near-tie flag. ←/→ (h/l) and ↑/↓ (k/j) move to
another token (the ribbon's cursor follows), escape / enter / q close it.

A tree pass (--drafter tree) lists every node of its tree under the token (``views.inspector.tree_text``), the
token's own node chosen; n / b choose the next / previous node, p its parent, c its first child, s its next
sibling, and the chosen node is explained below the list (``views.tree_inspector``)."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ...views.inspector import hint, inspector_text, tree_text
from ...views.inspector_model import InspectorView
from ...views.tree_inspector import chain_node, step_node
from .ascii import key_names
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
        Binding("n", "node('next')", "next node", show=False),
        Binding("b", "node('prev')", "previous node", show=False),
        Binding("p", "node('parent')", "parent node", show=False),
        Binding("c", "node('child')", "child node", show=False),
        Binding("s", "node('sibling')", "sibling node", show=False),
    ]

    def __init__(self, view: InspectorView, step: Step | None = None) -> None:
        super().__init__()
        self.view = view
        self.step = step
        self.node: int | None = None  # a tree pass: the node chosen (None: none)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(id="inspector-text")
            yield Static(key_names(hint(self.view)), id="inspector-hint")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).border_title = "token inspector"
        self.show_view(self.view, self.node_of(self.view))

    def on_resize(self) -> None:
        self.show_view(self.view, self.node)

    def text_width(self) -> int:
        scroll = self.query_one(VerticalScroll)
        width = scroll.content_size.width or min(100, self.app.size.width) - 4
        return max(20, width)

    def text(self) -> Text:
        """What the screen shows (also what the tests read): the token, and a tree pass's nodes under it."""
        width = self.text_width()
        out = inspector_text(self.view, width)
        tree = tree_text(self.view, self.node, width)
        if tree.plain:
            out.append("\n\n")
            out.append_text(tree)
        return out

    @staticmethod
    def node_of(view: InspectorView) -> int | None:
        """A tree pass's node that the token is (None: the target's token, or a chain's pass)."""
        return chain_node(view.event, view.slot.slot) if view.event is not None else None

    def show_view(self, view: InspectorView, node: int | None = None) -> None:
        self.view = view
        self.node = node
        self.query_one("#inspector-text", Static).update(visible_rich(self.text()))  # a trace's words
        self.query_one("#inspector-hint", Static).update(key_names(hint(view)))  # arrows as words in ASCII

    def action_step(self, dx: int, dy: int) -> None:
        if self.step is None:
            return
        view = self.step(dx, dy)
        if view is not None:
            self.show_view(view, self.node_of(view))

    def action_node(self, how: str) -> None:
        """Choose another node of a tree pass (``tree_inspector.step_node``); nothing in a chain's pass."""
        ev = self.view.event
        if ev is not None and ev.tree:
            self.show_view(self.view, step_node(ev, self.node, how))

    def action_close(self) -> None:
        self.dismiss(None)
