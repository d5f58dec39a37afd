"""InterTokenLatency: per-pass ITL sparkline (pass wall / tokens it emitted, as in spectui.analysis.stats)
with setting-change markers; p50 / p95 from StatsSnapshot."""

from __future__ import annotations

from ..shared.panel import fmt_ms
from .series_panel import SeriesPanel


class InterTokenLatency(SeriesPanel):
    TITLE = "ITL "
    STYLE = "plain"

    def figures(self, snap) -> list[str]:
        s = snap.stats
        return [f"p50 {fmt_ms(s.itl_ms_p50)}", f"p95 {fmt_ms(s.itl_ms_p95)}"]

    def series(self, snap) -> tuple[list[int], list[float]]:
        return [i for i, n, _ in snap.series if n], [w / n for _, n, w in snap.series if n]
