"""ContentionBar: one line under the status line, shown only while other processes take this run's
cores (``StatsSnapshot.contention``, a one-line explanation); hidden otherwise, so it costs no room."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ...views.view import ScreenView
from ..shared.panel import KeepLines


class ContentionBar(KeepLines, Widget):
    DEFAULT_CSS = ("ContentionBar { height: 1; display: none; background: $warning; color: $background; "
                   "text-style: bold; }")

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.message = ""

    def show(self, view: ScreenView) -> None:
        message = view.snap.stats.contention if view.snap is not None else ""
        if message != self.message:
            self.message = message
            self.display = bool(message)
            self.refresh()

    def render(self) -> Text:
        t = Text(f" ⚠ {self.message}")
        t.truncate(max(1, self.content_size.width), overflow="ellipsis")
        return t
