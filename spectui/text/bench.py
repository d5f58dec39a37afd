"""The bench in the terminal: the table (rich) and a bar chart of speedup and mean accepted tokens by category."""

from __future__ import annotations

from typing import Sequence

from rich.table import Table
from rich.text import Text

from ..bench.aggregate import OVERALL, Summary
from ..views.numbers import ms_or_dash

TABLE_COLUMNS = (
    "category", "setting", "temp", "prompts", "mean acc.\ntokens", "accept", "by\nposition %",
    "base\nt/s", "t/s", "speedup", "min / med / max\nspeedup", "TTFT\nms", "equal", "!",
)


def _pos(s: Summary, n: int = 4) -> str:
    return " ".join(f"{100 * a:.0f}" for a in s.acceptance_by_position[:n])


TREE_COLUMN = "tree\nnodes"  # after TTFT, when a setting drafted trees: nodes verified per tree pass


def columns(summaries: Sequence[Summary]) -> tuple[str, ...]:
    """The table's headings: ``TABLE_COLUMNS``, and ``TREE_COLUMN`` when a setting drafted trees."""
    if not any(s.tree is not None for s in summaries):
        return TABLE_COLUMNS
    at = TABLE_COLUMNS.index("TTFT\nms") + 1
    return (*TABLE_COLUMNS[:at], TREE_COLUMN, *TABLE_COLUMNS[at:])


def table_rows(summaries: Sequence[Summary], has_baseline: bool = True) -> list[list[str]]:
    """The table's cells as text (the same strings the rich table and tests see), in ``columns``' order."""
    has_tree = TREE_COLUMN in columns(summaries)
    rows = []
    for s in summaries:
        if not s.runs and not s.skipped:
            continue
        base = s.setting.is_baseline
        sp = "-" if not has_baseline else ("1.00x" if base else f"{s.speedup:.2f}x" if s.speedup else "-")
        rng = s.speedup_range
        spread = f"{rng.lo:.2f} / {rng.median:.2f} / {rng.hi:.2f}" if (rng.n and not base) else ""
        eq = f"{s.equal}/{s.compared}" if s.compared else ""
        flags = []
        if s.contended:
            flags.append(f"{s.contended} cont.")
        if s.skipped:
            flags.append(f"{s.skipped} skip")
        rows.append([
            s.category, s.setting.label, f"{s.setting.temperature:g}", str(s.prompts),
            "" if base else f"{s.mean_accepted_tokens:.2f}", "" if base else f"{s.acceptance_rate:.0%}",
            "" if base else _pos(s),
            f"{s.baseline_tokens_per_second:.1f}" if s.baseline_tokens_per_second else ("" if not base else "-"),
            f"{s.tokens_per_second:.1f}", sp, spread, ms_or_dash(s.ttft_ms),
            *([f"{s.tree.nodes_per_pass:.2f}" if s.tree is not None else ""] if has_tree else []),
            eq, ", ".join(flags),
        ])
    return rows


def render_table(summaries: Sequence[Summary], has_baseline: bool = True, title: str = "") -> Table:
    t = Table(title=title or None, show_lines=False, header_style="bold")
    for c in columns(summaries):
        t.add_column(c, justify="left" if c in ("category", "setting", "!") else "right", no_wrap=c != "!")
    prev = None
    for s, cells in zip([s for s in summaries if s.runs or s.skipped], table_rows(summaries, has_baseline)):
        if prev is not None and s.category != prev:
            t.add_section()
        prev = s.category
        style = "bold" if s.category == OVERALL else None
        t.add_row(*cells, style=style)
    return t


def render_chart(summaries: Sequence[Summary], has_baseline: bool = True, width: int = 36) -> Text:
    """Bars by category: speedup (1.00x marked) and mean accepted tokens, one pair of bars per setting."""
    spec = [s for s in summaries if not s.setting.is_baseline and s.runs]
    out = Text()
    if not spec:
        return out
    top_sp = max([s.speedup for s in spec] + [1.0]) * 1.05
    top_mat = max(s.mean_accepted_tokens for s in spec) or 1.0
    label_w = max(len(f"{s.category}  {s.setting.full_label}") for s in spec)
    one = int(round(width * 1.0 / top_sp))
    out.append("speedup over the target alone (| = 1.00x)" if has_baseline else "no baseline: no speedup", "bold")
    out.append("   /   mean accepted tokens per verify step\n", "bold")
    prev = None
    for s in spec:
        if prev is not None and s.category != prev:
            out.append("\n")
        prev = s.category
        name = f"{s.category}  {s.setting.full_label}".ljust(label_w)
        out.append(name + "  ")
        if has_baseline and s.speedup:
            n = int(round(width * s.speedup / top_sp))
            bar = ["█"] * n + [" "] * (width - n)
            if 0 <= one < width and bar[one] == " ":
                bar[one] = "|"
            out.append("".join(bar), "green" if round(s.speedup, 2) > 1 else "red")
            out.append(f" {s.speedup:4.2f}x  ")
        m = int(round(width / 2 * s.mean_accepted_tokens / top_mat))
        out.append("▒" * m + " " * (width // 2 - m), "cyan")
        out.append(f" {s.mean_accepted_tokens:4.2f}\n")
    return out
