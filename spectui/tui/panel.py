"""Panel: base widget that renders one ScreenSnapshot (plus the UI's animation phase) as Rich text.

Also the token styles, read from the theme's app variables. Meaning never rests on colour alone:
accepted = underline, rejected = strike, target = bold, pending = dim italic, plus glyphs in the ribbon.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from .state import ScreenSnapshot
from .themes import VARIABLE_DEFAULTS

GLYPH = {
    "accepted": "✓",
    "rejected": "✗",
    "discarded": "·",
    "pending": "?",
    "correction": "●",
    "bonus": "★",
    "plain": "○",
}

# animation phases of the newest pass
PENDING, VERDICT, SETTLED = "pending", "verdict", "settled"


def token_styles(app) -> dict[str, Style]:
    v = getattr(app, "theme_variables", None) or {}

    def col(name: str) -> str:
        return v.get(name) or VARIABLE_DEFAULTS[name]

    acc, rej, tgt, pen = (col("spectui-accepted"), col("spectui-rejected"), col("spectui-target"),
                          col("spectui-pending"))
    return {
        "accepted": Style.parse(f"underline {acc}"),
        "rejected": Style.parse(f"strike {rej}"),
        "discarded": Style.parse(f"strike dim {rej}"),
        "pending": Style.parse(f"italic dim {pen}"),
        "correction": Style.parse(f"bold {tgt}"),
        "bonus": Style.parse(f"bold {tgt}"),
        "plain": Style.parse(tgt),
        "bar": Style.parse(acc),
        "title": Style.parse("bold"),
        "dim": Style.parse("dim"),
    }


class Panel(Widget):
    """A widget drawn from the latest snapshot; subclasses implement ``draw(width, height)``."""

    DEFAULT_CSS = "Panel { height: 1fr; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.snap: ScreenSnapshot | None = None
        self.phase: str = SETTLED

    def show(self, snap: ScreenSnapshot | None, phase: str = SETTLED) -> None:
        self.snap = snap
        self.phase = phase
        self.refresh()

    def styles_map(self) -> dict[str, Style]:
        return token_styles(self.app)

    def render(self) -> Text:
        w, h = self.content_size.width, self.content_size.height
        if w <= 0 or h <= 0:
            return Text("")
        return self.draw(w, h)

    def draw(self, width: int, height: int) -> Text:  # pragma: no cover - abstract
        raise NotImplementedError


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(0, n - 1)] + "…"


def fmt_ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
