"""InterTokenLatency: per-pass ITL sparkline (pass wall / tokens it emitted, as in spectui.stats) with
setting-change markers; p50 / p95 from StatsSnapshot."""

from __future__ import annotations

from rich.text import Text

from .panel import Panel, fmt_ms
from .sparkline import sparkline


class InterTokenLatency(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        out.append("ITL ", st["title"])
        snap = self.snap
        if snap is None:
            return out
        s = snap.stats
        out.append(f"p50 {fmt_ms(s.itl_ms_p50)}  p95 {fmt_ms(s.itl_ms_p95)}")
        out.truncate(width, overflow="ellipsis")
        if height < 3:
            return out
        ids = [i for i, n, _ in snap.series if n]
        vals = [w / n for _, n, w in snap.series if n]
        out.append("\n")
        out.append_text(sparkline(vals, ids, snap.markers, width, height - 2, style=st["plain"]))
        return out
