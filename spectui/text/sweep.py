"""The sweep on screen: the table of cells and a plain-text chart of tokens/s against acceptance rate."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table

from ..sweep.aggregate import Cell
from ..sweep.plan import TARGET_ONLY

TABLE_COLUMNS = ("k", "temp", "acceptance", "mean acc. len", "tokens/s", "speedup", "ITL p50 ms", "TTFT ms")


def table_rows(cells: Sequence[Cell]) -> list[tuple[str, ...]]:
    """One row of text per cell, in TABLE_COLUMNS order."""
    rows = []
    for c in cells:
        rows.append(
            (
                c.label,
                f"{c.temperature:g}",
                "-" if c.is_baseline else c.acceptance_rate.fmt(".1%"),
                "-" if c.is_baseline else c.mean_acceptance_length.fmt(".2f"),
                c.tokens_per_second.fmt(".2f"),
                c.speedup.fmt(".2f", "x"),
                c.itl_ms_p50.fmt(".1f"),
                c.ttft_ms.fmt(".0f") if c.ttft_ms.n else "-",
            )
        )
    return rows


def render_table(cells: Sequence[Cell], repeats: int):
    """The cells as a rich Table."""
    title = "spectui sweep" + (f" ({repeats} repeats: mean ± standard deviation)" if repeats > 1 else "")
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(TABLE_COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    for row in table_rows(cells):
        table.add_row(*row)
    return table


CHART_MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"


def render_chart(cells: Sequence[Cell], width: int = 56, height: int = 12) -> str:
    """Plain-text scatter of tokens/s (y) against acceptance rate (x); baselines as dotted lines."""
    spec = [c for c in cells if not c.is_baseline]
    bases = [c for c in cells if c.is_baseline]
    if not spec and not bases:
        return ""
    ys = [c.tokens_per_second.mean for c in cells]
    y_hi = max(ys) * 1.08 if max(ys) > 0 else 1.0
    y_lo = 0.0
    x_lo, x_hi = 0.0, 1.0
    grid = [[" "] * width for _ in range(height)]

    def row_of(y: float) -> int:
        return min(height - 1, max(0, int(round((y_hi - y) / (y_hi - y_lo) * (height - 1)))))

    def col_of(x: float) -> int:
        return min(width - 1, max(0, int(round((x - x_lo) / (x_hi - x_lo) * (width - 1)))))

    legend = []
    for b in bases:
        r = row_of(b.tokens_per_second.mean)
        for cidx in range(width):
            if grid[r][cidx] == " ":
                grid[r][cidx] = "·"
    if bases:
        legend.append(
            f"··· {TARGET_ONLY}: "
            + ", ".join(f"{b.tokens_per_second.mean:.2f} t/s at temp {b.temperature:g}" for b in bases)
        )
    for i, c in enumerate(spec):
        m = CHART_MARKERS[i % len(CHART_MARKERS)]
        r, col = row_of(c.tokens_per_second.mean), col_of(c.acceptance_rate.mean)
        grid[r][col] = m if grid[r][col] in (" ", "·") else "*"
        legend.append(
            f"{m} k={c.k} temp {c.temperature:g}: {c.acceptance_rate.mean:.0%} accepted, "
            f"{c.tokens_per_second.mean:.2f} t/s"
        )
    lines = ["tokens/s against acceptance rate"]
    label_w = max(len(f"{y_hi:.1f}"), 4)
    for r in range(height):
        y = y_hi - r * (y_hi - y_lo) / (height - 1)
        lab = f"{y:.1f}" if r % 3 == 0 or r == height - 1 else ""
        lines.append(f"{lab:>{label_w}} |" + "".join(grid[r]))
    lines.append(" " * label_w + " +" + "-" * width)
    axis = [" "] * width
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        text = f"{frac:.0%}"
        start = min(width - len(text), max(0, col_of(frac) - len(text) // 2))
        for j, ch in enumerate(text):
            axis[start + j] = ch
    lines.append(" " * label_w + "  " + "".join(axis))
    lines.append(" " * label_w + "  " + "acceptance rate".center(width))
    if any("*" in "".join(row) for row in grid):
        legend.append("* several points overlap")
    lines.extend(legend)
    return "\n".join(lines)

