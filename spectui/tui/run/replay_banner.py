"""ReplayBanner: the line that says this is a recording, of which models, made when (from the
recording's start event, shown from the first frame and while seeking)."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from ...contract.events import RunStarted
from ...views.view import ScreenView, banner_text
from ..shared.ascii import key_names
from ..shared.visible_text import visible_rich

REPLAY_KEYS = "space pause  ←/→ step  home/end  </> speed"


class ReplayBanner(Widget):
    DEFAULT_CSS = "ReplayBanner { height: 1; background: $warning; color: $background; text-style: bold; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.start: RunStarted | None = None

    def show(self, view: ScreenView) -> None:
        start = view.replay.start if view.replay is not None else None  # the recording's, wherever the cursor is
        if start is not self.start:
            self.start = start
            self.refresh()

    def render(self) -> Text:
        t = visible_rich(Text(" " + banner_text(self.start) + "  ·  " + key_names(REPLAY_KEYS)))
        t.truncate(max(1, self.content_size.width), overflow="ellipsis")
        return t
