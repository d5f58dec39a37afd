"""AttachPanel: base of the attach screen's panels, drawn from the AttachView they were last handed
(the line-API drawing of :class:`~spectui.tui.panel.Panel`), plus the number formats they share."""

from __future__ import annotations

from ...views.attach_state import AttachView
from ..shared.panel import Panel


class AttachPanel(Panel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view = AttachView()

    @property
    def attach(self) -> AttachView:
        return self.view  # type: ignore[return-value] - set by show(AttachView)


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
