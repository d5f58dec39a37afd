"""TokensPerSecond: per-pass throughput sparkline with setting-change markers; current and average
decode tokens/s from StatsSnapshot (windowed and whole-run)."""

from __future__ import annotations

from .series_panel import SeriesPanel


class TokensPerSecond(SeriesPanel):
    TITLE = "tokens/s "

    def figures(self, snap) -> list[str]:
        s = snap.stats
        return [f"now {s.tokens_per_second_window:.1f}  avg {s.tokens_per_second:.1f}"]

    def series(self, snap) -> tuple[list[int], list[float]]:
        return [i for i, _, _ in snap.series], [1000.0 * n / w if w > 0 else 0.0 for _, n, w in snap.series]
