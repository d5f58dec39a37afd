"""InterTokenLatency: per-pass ITL sparkline (pass wall / tokens it emitted, as in spectui.stats) with
setting-change markers; p50 / p95 from StatsSnapshot."""

from __future__ import annotations

from rich.text import Text

from ..shared.panel import Panel, fmt_ms
from ..shared.sparkline import sparkline


class InterTokenLatency(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        out.append("ITL ", st["title"])
        snap = self.snap
        if snap is None:
            return out
        s = snap.stats
        p50, p95 = f"p50 {fmt_ms(s.itl_ms_p50)}", f"p95 {fmt_ms(s.itl_ms_p95)}"
        two_lines = 4 + len(p50) + 2 + len(p95) > width and height >= 5  # a narrow panel: p95 under p50
        out.append(p50 if two_lines else f"{p50}  {p95}")
        out.truncate(width, overflow="ellipsis")
        if two_lines:
            out.append("\n" + f"    {p95}"[:width])
            height -= 1
        if height < 3:
            return out
        ids = [i for i, n, _ in snap.series if n]
        vals = [w / n for _, n, w in snap.series if n]
        out.append("\n")
        out.append_text(sparkline(vals, ids, snap.markers, width, height - 2, style=st["plain"]))
        return out
