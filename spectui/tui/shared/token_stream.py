"""TokenStream: the generated text, each token styled by where it came from, newest pass animated.

The newest pass goes through three phases driven by the UI clock (never by the engine): pending
(its drafts shown dim italic), verdict (accepted drafts underlined, rejected and discarded drafts
struck through, the target's token bold) and settled (rejected drafts gone). A legend line
is always visible at the bottom.
"""

from __future__ import annotations

from rich.text import Text
from textual.strip import Strip

from ...contract.text import tame
from ...views.animation import PENDING, SETTLED
from .panel import GLYPH, Panel


def visible_tail(pieces: list[tuple[str, object]], budget: int) -> list[tuple[str, object]]:
    """The pieces' last ``budget`` code points (more than the rows can show: each takes a cell, but the
    zero-width ones, which ``tame`` bounds) made visible for the cells (``contract.text.tame``): a 1 MB token
    costs what its tail costs, not a wrap of all of it."""
    kept: list[tuple[str, object]] = []
    for txt, style in reversed(pieces):
        if budget <= 0:
            break
        if len(txt) > budget:
            txt = txt[-budget:]
        budget -= len(txt)
        kept.append((tame(txt), style))
    kept.reverse()
    return kept


class TokenStream(Panel):
    DEFAULT_CSS = "TokenStream { height: 1fr; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._wrap_cache: dict[tuple, list[Strip]] = {}
        self._para_lines: dict[tuple, Strip] = {}  # the lines of the paragraphs wrapped in the last build
        self._fixed_key: object = None
        self._fixed: tuple[Strip, Strip] = (Strip([]), Strip([]))

    def legend(self, st) -> Text:
        t = Text()
        t.append("accepted", st["accepted"]).append(f" {GLYPH['accepted']} ")
        t.append("rejected", st["rejected"]).append(f" {GLYPH['rejected']} ")
        t.append("target", st["correction"]).append(f" {GLYPH['correction']}/{GLYPH['bonus']} ")
        t.append("pending", st["pending"]).append(f" {GLYPH['pending']} ")
        t.append("k=0", st["plain"]).append(f" {GLYPH['plain']}")
        return t

    def body(self, st, budget: tuple[int, int]) -> Text:
        """The visible tail of the stream; ``budget`` = (rows, width) it must fill."""
        text = Text()
        for txt, style in self.pieces(st, budget):
            text.append(txt, style)
        return text

    def pieces(self, st, budget: tuple[int, int]) -> list[tuple[str, object]]:
        """The visible tail of the stream as (text, style) pieces, in the order ``body`` appends them."""
        snap = self.snap
        out: list[tuple[str, object]] = []
        if snap is None:
            return out
        tokens = snap.tokens
        cut = len(tokens) - snap.last_pass_tokens if self.phase != SETTLED and snap.last_pass else len(tokens)
        # only the tail that can be visible: walk back until it surely fills ``rows`` rows of ``width``
        rows, width = budget
        first, line_chars, n_rows = cut, 0, 0
        while first > 0 and n_rows <= rows + 1:
            first -= 1
            txt = tokens[first][0]
            if "\n" in txt:
                n_rows += txt.count("\n") + line_chars // max(1, width)
                line_chars = 0
            else:
                line_chars += len(txt)
                if line_chars >= width:
                    n_rows += line_chars // width
                    line_chars %= width
        run: list[str] = []  # consecutive tokens of one kind become one span: Rich wraps fewer spans
        run_kind = None
        for txt, kind in tokens[first:cut]:
            if kind != run_kind and run:
                out.append(("".join(run), st.get(run_kind)))
                run = []
            run_kind = kind
            run.append(txt)
        if run:
            out.append(("".join(run), st.get(run_kind)))
        lp = snap.last_pass
        if cut < len(tokens) and lp is not None:
            if self.phase == PENDING:
                for txt, _ in lp.drafts:
                    out.append((txt or "∅", st["pending"]))
            else:  # verdict: accepted, then struck rejected/discarded drafts, then the target token
                tail = tokens[cut:]
                n_acc = min(lp.n_accepted, len(tail))
                for txt, kind in tail[:n_acc]:
                    out.append((txt, st.get(kind)))
                for txt, verdict in lp.drafts[lp.n_accepted:]:
                    out.append((txt or "∅", st["rejected" if verdict == "rejected" else "discarded"]))
                for txt, kind in tail[n_acc:]:
                    out.append((txt, st.get(kind)))
        return visible_tail(out, (rows + 2) * max(1, width))

    def visible_body(self, st, width: int, n_text: int) -> Text:
        """The stream's text for ``n_text`` rows (the prompt while no token has come yet)."""
        if self.snap is not None and not self.snap.tokens and self.snap.start is not None:
            return Text(f"prompt: {self.snap.start.prompt[: width * max(1, n_text - 1)]}", style="dim")
        return self.body(st, budget=(n_text, width))

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        legend = self.legend(st)
        legend.truncate(width, overflow="ellipsis")
        n_text = max(0, height - 1)
        body = self.visible_body(st, width, n_text)
        lines = body.wrap(self.app.console, width) if body.plain else []
        lines = list(lines)[-n_text:] if n_text else []
        out = Text()
        for line in lines:
            out.append_text(line)
            out.append("\n")
        out.append("\n" * max(0, n_text - len(lines)))
        out.append_text(legend)
        return out

    def _build_strips(self, width: int, height: int) -> list[Strip]:
        """What ``draw`` shows, built a paragraph at a time through a cache of wrapped, rendered lines:
        the pieces are split at newlines as plain strings (no Text for the whole body), and a new pass
        re-wraps only the paragraph it extends (wrapping and rendering are most of a repaint)."""
        if width <= 0 or height <= 0:
            return []
        st = self.styles_map()
        n_text = max(0, height - 1)
        base = self.base_style
        fixed_key = (width, base, self._styles_theme)
        if self._fixed_key != fixed_key:  # the blank line and the legend change only with size or theme
            legend = self.legend(st)
            legend.truncate(width, overflow="ellipsis")
            self._fixed = (self.line_strip(Text(), width, base), self.line_strip(legend, width, base))
            self._fixed_key = fixed_key
        blank, legend_strip = self._fixed
        snap = self.snap
        strips: list[Strip] = []
        if n_text and snap is not None and not snap.tokens and snap.start is not None:  # the prompt
            body = self.visible_body(st, width, n_text)
            strips = [self.line_strip(line, width, base) for line in body.wrap(self.app.console, width)][-n_text:]
        elif n_text and snap is not None:
            paragraphs: list[list[tuple[str, object]]] = [[]]
            for txt, style in self.pieces(st, (n_text, width)):
                if "\n" in txt:
                    first, *rest = txt.split("\n")
                    if first:
                        paragraphs[-1].append((first, style))
                    for part in rest:
                        paragraphs.append([(part, style)] if part else [])
                elif txt:
                    paragraphs[-1].append((txt, style))
            if len(paragraphs) > 1 or paragraphs[0]:
                cache = self._wrap_cache
                last_lines, lines = self._para_lines, {}
                for para in paragraphs:
                    key = (tuple(para), fixed_key)
                    wrapped = cache.get(key)
                    if wrapped is None:  # the paragraph a pass extended: its earlier lines are drawn already
                        text = Text()
                        for txt, style in para:
                            text.append(txt, style)
                        wrapped = []
                        for line in text.wrap(self.app.console, width):
                            line_key = (line.plain, tuple(line.spans), fixed_key)
                            strip = last_lines.get(line_key)
                            if strip is None:
                                strip = self.line_strip(line, width, base)
                            lines[line_key] = strip
                            wrapped.append(strip)
                        if len(cache) >= 512:
                            cache.pop(next(iter(cache)))  # the oldest paragraph
                        cache[key] = wrapped
                    strips.extend(wrapped)
                self._para_lines = lines
                strips = strips[-n_text:]
        strips.extend(blank for _ in range(n_text - len(strips)))
        strips.append(legend_strip)
        return strips
