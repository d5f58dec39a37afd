"""TokenStream: the generated text, each token styled by where it came from, newest pass animated.

The newest pass goes through three phases driven by the UI clock (never by the engine): pending
(its drafts shown dim italic), verdict (accepted drafts underlined, rejected and discarded drafts
struck through, the target's token bold) and settled (rejected drafts gone). A legend line
is always visible at the bottom.
"""

from __future__ import annotations

from rich.text import Text

from .panel import GLYPH, PENDING, SETTLED, Panel


class TokenStream(Panel):
    DEFAULT_CSS = "TokenStream { height: 1fr; }"

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
        snap = self.snap
        text = Text()
        if snap is None:
            return text
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
        for txt, kind in tokens[first:cut]:
            text.append(txt, st.get(kind))
        lp = snap.last_pass
        if cut < len(tokens) and lp is not None:
            if self.phase == PENDING:
                for txt, _ in lp.drafts:
                    text.append(txt or "∅", st["pending"])
            else:  # verdict: accepted, then struck rejected/discarded drafts, then the target token
                tail = tokens[cut:]
                n_acc = min(lp.n_accepted, len(tail))
                for txt, kind in tail[:n_acc]:
                    text.append(txt, st.get(kind))
                for txt, verdict in lp.drafts[lp.n_accepted:]:
                    text.append(txt or "∅", st["rejected" if verdict == "rejected" else "discarded"])
                for txt, kind in tail[n_acc:]:
                    text.append(txt, st.get(kind))
        return text

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        legend = self.legend(st)
        legend.truncate(width, overflow="ellipsis")
        n_text = max(0, height - 1)
        body = self.body(st, budget=(n_text, width))
        if self.snap is not None and not self.snap.tokens and self.snap.start is not None:
            body = Text(f"prompt: {self.snap.start.prompt[: width * max(1, n_text - 1)]}", style="dim")
        lines = body.wrap(self.app.console, width) if body.plain else []
        lines = list(lines)[-n_text:] if n_text else []
        out = Text()
        for line in lines:
            out.append_text(line)
            out.append("\n")
        out.append("\n" * max(0, n_text - len(lines)))
        out.append_text(legend)
        return out
