"""The faces' number formats, one definition for the headless lines (spectui.text: attach, race, bench
tables) and the TUI's panels: a share as a percentage, seconds as ms (s past 10 s), a rate, milliseconds; "-"
when there was nothing to measure."""

from __future__ import annotations


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def secs(x: float | None) -> str:
    """Seconds as ms (or s past 10 s); '-' when there were no observations."""
    if x is None:
        return "-"
    if x >= 10:
        return f"{x:.1f}s"
    return f"{1000 * x:.0f}ms" if x >= 0.01 else f"{1000 * x:.1f}ms"


def rate(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def ms_or_dash(x: float | None, spec: str = ".0f") -> str:
    """Milliseconds without a unit (a table's column), '-' when nothing was measured (a run without a first
    token has no TTFT: never 0, which would read as instant)."""
    return "-" if x is None else f"{x:{spec}}"
