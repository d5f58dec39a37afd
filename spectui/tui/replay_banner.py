"""ReplayBanner: the line that says this is a recording, of which models, made when."""

from __future__ import annotations

import datetime as _dt
import os

from rich.text import Text
from textual.widget import Widget

from ..events import RunStarted


def model_name(info) -> str:
    if info is None:
        return "no draft model"
    return info.name or os.path.basename(info.path) or "?"


def banner_text(start: RunStarted | None) -> str:
    if start is None:
        return "REPLAY"
    when = "?"
    if start.started_at:
        when = _dt.datetime.fromtimestamp(start.started_at, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"REPLAY of {model_name(start.target)} / {model_name(start.draft)}, recorded {when}"


class ReplayBanner(Widget):
    DEFAULT_CSS = "ReplayBanner { height: 1; background: $warning; color: $background; text-style: bold; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.start: RunStarted | None = None

    def set_start(self, start: RunStarted | None) -> None:
        if start is not self.start:
            self.start = start
            self.refresh()

    def render(self) -> Text:
        t = Text(" " + banner_text(self.start) + "  ·  space pause  ←/→ step  home/end  </> speed")
        t.truncate(max(1, self.content_size.width), overflow="ellipsis")
        return t
