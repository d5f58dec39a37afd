"""Drawing helpers (not widgets), as Rich text: a multi-row sparkline with setting-change markers, a bar."""

from __future__ import annotations

from rich.text import Text

BLOCKS = " ▁▂▃▄▅▆▇█"


def sparkline(values: list[float], pass_ids: list[int], markers: tuple[tuple[int, str], ...], width: int,
              rows: int, style: str = "") -> Text:
    """The last ``width`` values as ``rows`` rows of bars, then one row marking setting changes (▲ label)."""
    rows = max(1, rows)
    vals = values[-width:]
    ids = pass_ids[-width:]
    top = max(vals) if vals else 0.0
    levels = rows * 8
    lines = [[" "] * len(vals) for _ in range(rows)]
    for x, v in enumerate(vals):
        h = 0 if top <= 0 else max(1, round(v / top * levels)) if v > 0 else 0
        for r in range(rows):  # r = 0 is the bottom row
            fill = min(8, max(0, h - r * 8))
            lines[rows - 1 - r][x] = BLOCKS[fill]
    out = Text()
    for line in lines:
        out.append("".join(line).ljust(width), style=style)
        out.append("\n")
    marks = [" "] * width
    col = {pid: x for x, pid in enumerate(ids)}
    xs = sorted((col[pid], label) for pid, label in markers if pid in col)
    for n, (x, label) in enumerate(xs):
        marks[x] = "▲"
        stop = xs[n + 1][0] - 1 if n + 1 < len(xs) else width  # a label never runs into the next marker
        for j, ch in enumerate(label):
            if x + 1 + j >= min(stop, width):
                break
            marks[x + 1 + j] = ch
    out.append("".join(marks), style="bold")
    return out


def bar(frac: float, width: int) -> str:
    eighths = " ▏▎▍▌▋▊▉█"
    n = max(0.0, min(1.0, frac)) * width
    full = int(n)
    part = int((n - full) * 8)
    s = "█" * full + (eighths[part] if full < width and part else "")
    return s.ljust(width, "░" if width else " ")
