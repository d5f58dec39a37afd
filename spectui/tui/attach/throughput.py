"""AttachThroughput: drafted and accepted tokens/s per round of scrapes as two sparklines on one scale
(the sum over engines, or the one engine), with the latest values: the gap between them is what the
target rejected."""

from __future__ import annotations

from rich.text import Text

from ...views.numbers import rate
from ..shared.sparkline import BLOCKS
from .attach_panel import AttachPanel


def bars(values: list[float], top: float, width: int, rows: int) -> list[str]:
    """The last ``width`` values as ``rows`` text rows (top row first), scaled to ``top``."""
    vals = values[-width:]
    levels = rows * 8
    out = [[" "] * len(vals) for _ in range(rows)]
    for x, v in enumerate(vals):
        h = 0 if top <= 0 or v <= 0 else max(1, round(v / top * levels))
        for r in range(rows):
            out[rows - 1 - r][x] = BLOCKS[min(8, max(0, h - r * 8))]
    return ["".join(row).ljust(width) for row in out]


class AttachThroughput(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        series = self.attach.series
        out = Text("tokens/s ", st["title"])
        last = series[-1] if series else None
        out.append("drafted ", "bold").append(rate(last.drafted if last else None), st["pending"])
        out.append("  accepted ", "bold").append(rate(last.accepted if last else None), st["bar"])
        out.truncate(width, overflow="ellipsis")
        if height < 3 or not series:
            if height >= 2 and not series:
                out.append("\nno interval yet", st["dim"])
            return out
        rows = max(1, (height - 1) // 2)
        top = max(max(p.drafted for p in series), max(p.accepted for p in series))
        plots = (("d ", [p.drafted for p in series], st["pending"]), ("a ", [p.accepted for p in series], st["bar"]))
        for label, vals, style in plots:  # labelled rows: the two read apart without colour too
            for i, row in enumerate(bars(vals, top, max(1, width - 2), rows)):
                out.append("\n")
                out.append(label if i == rows - 1 else "  ", "bold")
                out.append(row, style)
        return out
