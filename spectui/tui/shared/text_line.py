"""TextLine: a one-line widget (the faces' status lines) drawn from a view."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from .visible_text import visible_rich


class TextLine(Widget):
    """One line of text made from a view by ``text_of(view)``; repainted only when the text changes, cut
    with an ellipsis to the width. The run's StatusLine and the attach screen's status line are two."""

    placeholder = "starting…"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = Text(self.placeholder)

    def text_of(self, view) -> Text:  # pragma: no cover - abstract
        raise NotImplementedError

    def show(self, view) -> None:
        text = self.text_of(view)
        if text != self.text:
            self.text = text
            self.refresh()

    def render(self) -> Text:
        t = visible_rich(self.text.copy())  # an error or a reason from outside: controls made visible
        t.truncate(max(1, self.content_size.width), overflow="ellipsis")
        return t
