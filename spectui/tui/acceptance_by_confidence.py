"""AcceptanceByConfidence: acceptance rate by the draft's own confidence q(x) (``StatsSnapshot.confidence``):
one bar per bucket with its rate and accepted/judged counts. A well-calibrated draft's bars rise with q;
``--draft-p-min`` stops drafting below a confidence this panel shows to be a poor bet."""

from __future__ import annotations

from rich.text import Text

from .acceptance_by_position import bar
from .panel import Panel

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
        bw = max(4, width - label_w - counts_w - 9)
        for b in rows[: max(1, height - 1)]:
            out.append("\n")
            out.append(f"{b.label:>{label_w}} ")
            if b.judged:
                out.append(bar(b.rate, bw), st["bar"])
                out.append(f" {100 * b.rate:5.1f}% ")
            else:
                out.append("·" * bw, st["dim"])
                out.append("     - ", st["dim"])
            out.append(f"{b.accepted}/{b.judged}", st["dim"] if not b.judged else "")
        return out
