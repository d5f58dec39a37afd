"""AttachAcceptance: acceptance by draft position for the watched deployment (the sum over engines, or
the one engine) since attach started: accepted_per_pos[i] / drafts, as vLLM and llama-server define it."""

from __future__ import annotations

from rich.text import Text

from ..shared.sparkline import bar
from .attach_panel import AttachPanel


class AttachAcceptance(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text("acceptance by draft position", st["title"])
        out.append(" (since start)", st["dim"])
        out.truncate(width, overflow="ellipsis")
        w = self.attach.focus_session
        rates = list(w.acceptance_by_pos) if w is not None else []
        if not rates:
            none = w is not None and w.status == "no speculation"
            out.append("\nno speculation" if none else "\nno drafts yet", st["dim"])
            return out
        room = max(1, height - 1)
        shown = rates if len(rates) <= room else rates[: room - 1]
        bw = max(4, width - 22)
        for i, r in enumerate(shown):
            out.append("\n")
            out.append(f"{i:>2} ")
            out.append(bar(r, bw), st["bar"])
            out.append(f" {100 * r:5.1f}% {w.accepted_per_pos[i]:.0f}/{w.drafts:.0f}")
        if len(shown) < len(rates):
            out.append(f"\n   … {len(rates) - len(shown)} deeper positions", st["dim"])
        return out
