"""AttachPanel: base of the attach screen's panels, drawn from the AttachView they were last handed
(the line-API drawing of :class:`~spectui.tui.shared.panel.Panel`); their number formats are
:mod:`spectui.views.numbers`'."""

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
