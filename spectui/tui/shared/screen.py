"""FaceScreen: the layout helpers every face's main screen shares. It re-lays itself out only when the
terminal size changed (on mount and on resize), and below ``MIN_WIDTH`` x ``MIN_HEIGHT`` it shows the
"terminal too small" page (a ``Static`` with id ``too-small``, composed here after the face's own widgets,
``compose_face``, and before its footer; its stylesheet shows it under the ``too-small`` class). A face adds its
own size classes in ``lay_out(w, h)``."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Footer, Static

MIN_WIDTH, MIN_HEIGHT = 60, 20  # below this: "terminal too small"


class FaceScreen(Screen):
    FACE_NAME = "spectui"  # as the too-small page names the face
    FOOTER = Footer  # the footer's class

    def __init__(self) -> None:
        super().__init__()
        self._layout_key: object = None

    def compose(self) -> ComposeResult:
        yield from self.compose_face()
        yield Static("", id="too-small")
        yield self.FOOTER()

    def compose_face(self) -> ComposeResult:
        """The face's own widgets, above the too-small page and the footer."""
        yield from ()

    def on_resize(self, event: Resize) -> None:
        self.apply_layout()

    def apply_layout(self) -> None:
        w, h = self.app.size
        if (w, h) == self._layout_key:
            return
        self._layout_key = (w, h)
        small = w < MIN_WIDTH or h < MIN_HEIGHT
        self.set_class(small, "too-small")
        self.lay_out(w, h)
        if small:
            self.query_one("#too-small", Static).update(
                f"terminal too small: {w}x{h}\n{self.FACE_NAME} needs at least {MIN_WIDTH}x{MIN_HEIGHT}\n(q quits)")

    def lay_out(self, w: int, h: int) -> None:
        """The face's own classes for this size (wide, narrow...)."""
