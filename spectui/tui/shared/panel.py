"""Panel: base widget that draws one ScreenView (snapshot, animation phase, prediction) as Rich text.

Also the token styles, read from the theme's app variables. Meaning never rests on colour alone:
accepted = underline, rejected = strike, target = bold, pending = dim italic, plus glyphs in the ribbon.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from ...views.state import ScreenSnapshot
from ...views.view import ScreenView
from .themes import VARIABLE_DEFAULTS
from .visible_text import visible_rich

GLYPH = {
    "accepted": "✓",
    "rejected": "✗",
    "discarded": "·",
    "pending": "?",
    "correction": "●",
    "bonus": "★",
    "plain": "○",
}


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


class KeepLines:
    """Mixin for a widget that returns its last lines when Textual asks again and nothing changed.

    Textual's compositor re-renders every widget whose clip overlaps the screen's dirty area, and a
    widget's clip is its container: one changed line of the token stream asks every panel of the grid
    (and the status line, footer and screen) for its lines. Each of those then recomputes its styles,
    background and filters although none of its lines is dirty. Here a widget with no dirty line, the
    same crop and size and the very strips Textual's line cache held last time hands back the same list.
    """

    _kept: tuple | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        cache = getattr(self, "_styles_cache", None)
        lines = getattr(cache, "_cache", None)
        dirty = getattr(cache, "_dirty_lines", None)
        if lines is None or dirty is None:  # not the Textual this was written for: no shortcut
            return super().render_lines(crop)  # type: ignore[misc]
        filters = self.app.get_line_filters()  # type: ignore[attr-defined]
        key = (crop, self.size, tuple(map(id, filters)))  # type: ignore[attr-defined]
        kept = self._kept
        if kept is not None and not dirty and kept[0] == key:
            get = lines.get
            if all(get(y) is strip for y, strip in zip(crop.line_range, kept[1])):
                return kept[2]
        strips = super().render_lines(crop)  # type: ignore[misc]
        self._kept = (key, [lines.get(y) for y in crop.line_range], strips)
        return strips


class Panel(KeepLines, Widget):
    """A widget drawn from the view it was last handed; subclasses implement ``draw(width, height)``.

    Uses Textual's line API: the Rich text is rendered to strips once per view / size (``render_line``
    then only indexes them), which keeps repaints cheap for the engine's sake.
    """

    DEFAULT_CSS = "Panel { height: 1fr; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.view = ScreenView()
        self._strips: list[Strip] | None = None
        self._strips_key: object = None
        self._styles: dict[str, Style] | None = None
        self._styles_theme = ""
        self._base: Style | None = None
        self._line_strips: dict[tuple, Strip] = {}

    @property
    def snap(self) -> ScreenSnapshot | None:
        return self.view.snap

    @property
    def phase(self) -> str:
        return self.view.phase

    def show(self, view: ScreenView) -> None:
        """Draw ``view`` now and repaint only the lines that changed (Textual then re-renders just
        those: a new pass usually changes the stream's last line, not the whole panel)."""
        self.view = view
        size = self.content_size
        old = self._strips
        if not self.is_mounted or old is None or self._strips_key != (size.width, size.height):
            self._strips = None  # drawn at the next repaint
            self.refresh()
            return
        new = self._build_strips(size.width, size.height)
        self._strips = new
        if len(new) != len(old):
            self.refresh()
            return
        changed = [y for y, (a, b) in enumerate(zip(old, new)) if a is not b and a != b]  # (kept lines: same object)
        if changed:
            self.refresh(*(Region(0, y, size.width, 1) for y in changed))

    def styles_map(self) -> dict[str, Style]:
        theme = self.app.theme  # Textual's theme name: the colours come from its variables
        if self._styles is None or self._styles_theme != theme:
            self._styles, self._styles_theme = token_styles(self.app), theme
        return self._styles

    def render(self) -> Text:
        """The panel as Rich text (also what tests read)."""
        w, h = self.content_size.width, self.content_size.height
        if w <= 0 or h <= 0:
            return Text("")
        return self.draw(w, h)

    def notify_style_update(self) -> None:  # theme change: colours come from the theme variables
        super().notify_style_update()
        self._strips = None
        self._styles = None
        self._base = None
        self._line_strips = {}

    @property
    def base_style(self) -> Style:
        """The widget's own Rich style (``rich_style`` walks up the DOM: kept until the styles change)."""
        if self._base is None:
            self._base = self.rich_style
        return self._base

    def render_line(self, y: int) -> Strip:
        size = self.content_size
        key = (size.width, size.height)
        if self._strips is None or self._strips_key != key:
            self._strips_key = key
            self._strips = self._build_strips(size.width, size.height)
        if y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size.width, self.base_style)

    def _build_strips(self, width: int, height: int) -> list[Strip]:
        """The drawn text as ``height`` strips of ``width`` cells. A line that fits goes straight to
        segments; only a longer one goes through Rich's wrapping (what ``console.render_lines`` does
        for the whole text, at several times the cost)."""
        if width <= 0 or height <= 0:
            return []
        text = self.draw(width, height)
        console = self.app.console
        base = self.base_style
        strips: list[Strip] = []
        # a line drawn as in the last build reuses its strip (most of a statistics panel stays put)
        last, kept = self._line_strips, {}
        self._line_strips = kept
        for line in text.split("\n", allow_blank=True):
            for part in [line] if line.cell_len <= width else line.wrap(console, width):
                key = (part.plain, tuple(part.spans), str(part.style), width, base)
                strip = last.get(key)
                if strip is None:
                    strip = self.line_strip(part, width, base)
                strips.append(strip)
                kept[key] = strip
                if len(strips) == height:
                    return strips
        return strips

    def line_strip(self, line: Text, width: int, base: Style | None = None) -> Strip:
        """One line of text that fits ``width`` as a strip, on the widget's own style (``base``)."""
        console = self.app.console
        if base is None:
            base = self.base_style
        line = visible_rich(line)  # outside text (a trace's names, a server's labels) never as controls
        # Text.render leaves a line's own style out when it has no spans: apply it here
        style = base + console.get_style(line.style) if line.style else base
        return Strip(Segment.apply_style(line.render(console), style)).adjust_cell_length(width, base)

    def draw(self, width: int, height: int) -> Text:  # pragma: no cover - abstract
        raise NotImplementedError


def append_lines(t: Text, lines: list[Text], width: int) -> Text:
    """``lines`` appended to ``t`` one under the other, each cut to ``width`` cells with an ellipsis."""
    for i, line in enumerate(lines):
        line.truncate(width, overflow="ellipsis")
        if i:
            t.append("\n")
        t.append_text(line)
    return t


def clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: max(0, n - 1)] + "…"


def fmt_ms(ms: float) -> str:
    return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
