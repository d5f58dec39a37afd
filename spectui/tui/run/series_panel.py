"""SeriesPanel: a per-pass sparkline (with the setting-change markers) under a header of figures from
StatsSnapshot; the panels that differ only in their data (tokens/s, inter-token latency) say which
figures and which series."""

from __future__ import annotations

from rich.text import Text

from ...views.state import ScreenSnapshot
from ..shared.panel import Panel
from ..shared.sparkline import sparkline


class SeriesPanel(Panel):
    TITLE = ""
    STYLE = "bar"  # the sparkline's style (a theme variable of styles_map)

    def figures(self, snap: ScreenSnapshot) -> list[str]:  # pragma: no cover - each panel has its own
        """The header's figures; a second one moves under the first when the panel is narrow."""
        raise NotImplementedError

    def series(self, snap: ScreenSnapshot) -> tuple[list[int], list[float]]:  # pragma: no cover
        """(pass ids, values) of the sparkline."""
        raise NotImplementedError

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        out.append(self.TITLE, st["title"])
        snap = self.snap
        if snap is None:
            return out
        figures = self.figures(snap)
        two_lines = (len(figures) > 1 and len(self.TITLE) + len("  ".join(figures)) > width
                     and height >= 5)  # a narrow panel: the second figure under the first
        out.append(figures[0] if two_lines else "  ".join(figures))
        out.truncate(width, overflow="ellipsis")
        if two_lines:
            out.append("\n" + (" " * len(self.TITLE) + figures[1])[:width])
            height -= 1
        if height < 3:
            return out
        ids, vals = self.series(snap)
        out.append("\n")
        out.append_text(sparkline(vals, ids, snap.markers, width, height - 2, style=st[self.STYLE]))
        return out
