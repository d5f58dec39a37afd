"""AcceptanceByPosition: one bar per draft position with its rate and counts (StatsSnapshot)."""

from __future__ import annotations

from rich.text import Text

from ..shared.panel import Panel
from ..shared.sparkline import bar


class AcceptanceByPosition(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text("acceptance by draft position", st["title"])
        out.truncate(width, overflow="ellipsis")
        stats = self.snap.stats if self.snap else None
        rows = list(stats.acceptance_by_position) if stats else []
        if not rows:
            out.append("\nno drafts yet", st["dim"])
            return out
        room = max(1, height - 1)
        shown = rows if len(rows) <= room else rows[: room - 1]
        bw = max(4, width - 22)
        for p in shown:
            out.append("\n")
            out.append(f"{p.position:>2} ")
            out.append(bar(p.rate, bw), st["bar"])
            out.append(f" {100 * p.rate:5.1f}% {p.accepted}/{p.drafted}")
        if len(shown) < len(rows):
            out.append(f"\n   … {len(rows) - len(shown)} deeper positions", st["dim"])
        return out
