"""AcceptanceByConfidence: acceptance rate by the draft's own confidence q(x) (``StatsSnapshot.confidence``):
one bar per bucket with its rate and accepted/judged counts. A well-calibrated draft's bars rise with q;
``--draft-p-min`` stops drafting below a confidence this panel shows to be a poor bet."""

from __future__ import annotations

from rich.text import Text

from ..shared.panel import Panel
from ..shared.sparkline import bar

TITLE = "acceptance by confidence q"
SHORT_TITLE = "acceptance by q"  # with the p-min note on a narrow panel


class AcceptanceByConfidence(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        stats = self.snap.stats if self.snap else None
        p_min = self.view.asked.draft_p_min if self.view.asked is not None else 0.0
        note = f"  p-min {p_min:g}" if p_min > 0 else ""
        out = Text(TITLE if len(TITLE) + len(note) <= width or not note else SHORT_TITLE, st["title"])
        out.append(note, st["dim"])
        out.truncate(width, overflow="ellipsis")
        rows = list(stats.confidence) if stats else []
        if not rows or not any(b.judged for b in rows):
            out.append("\nno judged drafts yet", st["dim"])
            return out
        label_w = max(len(b.label) for b in rows)
        counts_w = max(len(f"{b.accepted}/{b.judged}") for b in rows)
        rate_fmt, rate_w = "{:5.1f}%", 6  # "100.0%"
        bw = width - label_w - counts_w - rate_w - 3
        if bw < 4:  # a narrow panel: whole percents buy two columns of bar
            rate_fmt, rate_w = "{:3.0f}%", 4
            bw = max(1, width - label_w - counts_w - rate_w - 3)
        for b in rows[: max(1, height - 1)]:
            line = Text(f"{b.label:>{label_w}} ")
            if b.judged:
                line.append(bar(b.rate, bw), st["bar"])
                line.append(" " + rate_fmt.format(100 * b.rate) + " ")
            else:
                line.append("·" * bw, st["dim"])
                line.append(" " + "-".rjust(rate_w) + " ", st["dim"])
            line.append(f"{b.accepted}/{b.judged}", st["dim"] if not b.judged else "")
            line.truncate(width, overflow="ellipsis")  # never wrap a bucket onto two lines
            out.append("\n")
            out.append(line)
        return out
