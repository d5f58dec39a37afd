"""PassRibbon: the newest pass as draft positions 1..k with their verdicts, then recent passes."""

from __future__ import annotations

from rich.text import Text
from textual.strip import Strip

from .panel import GLYPH, PENDING, Panel, clip, fmt_ms
from .state import PassView


class PassRibbon(Panel):
    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._line_cache: dict[tuple, tuple[object, Strip]] = {}

    def pass_line(self, p: PassView, st, width: int, phase: str, detailed: bool) -> Text:
        t = Text()
        t.append(f"#{p.index:<4}", style="bold" if detailed else "dim")
        if p.prefill:
            t.append("prefill ", st["dim"])
        else:
            t.append(f"k={p.k:<2} ", st["dim"])
        cell = max(3, min(10, (width - 30) // max(1, len(p.drafts) + 1))) if detailed else 0
        for i, (txt, verdict) in enumerate(p.drafts):
            shown = "pending" if phase == PENDING else verdict
            t.append(GLYPH[shown], st[shown])
            if detailed:
                t.append(f"{i + 1}:", st["dim"])
                t.append(clip(txt.replace("\n", "⏎"), cell), st[shown])
                t.append(" ")
        if p.target is not None and phase != PENDING:
            txt, kind = p.target
            t.append(" → " if detailed else " ")
            t.append(GLYPH.get(kind, "○"), st.get(kind))
            if detailed:
                t.append(clip(txt.replace("\n", "⏎"), 10), st.get(kind))
                t.append(f" {kind}", st["dim"])
        t.append(f"  +{p.n_emitted} tok {fmt_ms(p.wall_ms)}", st["dim"])
        t.truncate(width, overflow="ellipsis")
        return t

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        out.append("current pass", st["title"])
        snap = self.snap
        if snap is None or snap.last_pass is None:
            out.append("\nwaiting for the first pass…", st["dim"])
            return out
        out.append(f"  (✓ acc ✗ rej · discarded ● correction ★ bonus)", st["dim"])
        out.truncate(width, overflow="ellipsis")
        out.append("\n")
        out.append_text(self.pass_line(snap.last_pass, st, width, self.phase, detailed=True))
        room = height - 2
        if room > 0:
            older = list(snap.recent[:-1])[-room:]
            for p in reversed(older):
                out.append("\n")
                out.append_text(self.pass_line(p, st, width, "", detailed=False))
        return out

    def _build_strips(self, width: int, height: int) -> list[Strip]:
        """What ``draw`` shows; each older pass's line is rendered once (a pass does not change)."""
        snap = self.snap
        if snap is None or snap.last_pass is None or width <= 0 or height < 2:
            return super()._build_strips(width, height)
        st = self.styles_map()
        cache = self._line_cache
        if len(cache) > 512:
            cache.clear()
        base = self.base_style

        def cached(key: tuple, owner: object, make) -> Strip:
            hit = cache.get(key)
            if hit is None or hit[0] is not owner:  # the very object the line was drawn for
                hit = cache[key] = (owner, self.line_strip(make(), width, base))
            return hit[1]

        def title() -> Text:
            t = Text()
            t.append("current pass", st["title"])
            t.append("  (✓ acc ✗ rej · discarded ● correction ★ bonus)", st["dim"])
            t.truncate(width, overflow="ellipsis")
            return t

        theme = self._styles_theme
        strips = [cached(("title", width, base, theme), st, title),
                  self.line_strip(self.pass_line(snap.last_pass, st, width, self.phase, detailed=True), width, base)]
        room = height - 2
        if room > 0:
            for p in reversed(list(snap.recent[:-1])[-room:]):
                strips.append(cached((id(p), width, base, theme), p,
                                     lambda p=p: self.pass_line(p, st, width, "", detailed=False)))
        return strips
