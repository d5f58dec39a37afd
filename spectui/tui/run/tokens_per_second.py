"""TokensPerSecond: per-pass throughput sparkline with setting-change markers; current and average
decode tokens/s from StatsSnapshot (windowed and whole-run)."""

from __future__ import annotations

from rich.text import Text

from ..shared.panel import Panel
from ..shared.sparkline import sparkline


class TokensPerSecond(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        out.append("tokens/s ", st["title"])
        snap = self.snap
        if snap is None:
            return out
        s = snap.stats
        out.append(f"now {s.tokens_per_second_window:.1f}  avg {s.tokens_per_second:.1f}")
        out.truncate(width, overflow="ellipsis")
        if height < 3:
            return out
        ids = [i for i, _, _ in snap.series]
        vals = [1000.0 * n / w if w > 0 else 0.0 for _, n, w in snap.series]  # bar shape only
        out.append("\n")
        out.append_text(sparkline(vals, ids, snap.markers, width, height - 2, style=st["bar"]))
        return out
