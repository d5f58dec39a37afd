"""AttachAcceptance: acceptance by draft position since attach started, accepted_per_pos[i] / drafts as vLLM
and llama-server define it. One engine speculating (or several replicas: their sum): a bar per position with
its counts. Engines of different kinds: one column per engine side by side (spectui.views.attach_positions),
an SGLang column from the histograms of the requests attach sent it (marked *)."""

from __future__ import annotations

from rich.text import Text

from ...views.attach_positions import FROM_REQUESTS, position_columns
from ..shared.sparkline import bar
from .attach_panel import AttachPanel


class AttachAcceptance(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text("acceptance by draft position", st["title"])
        out.append(" (since start)", st["dim"])
        out.truncate(width, overflow="ellipsis")
        cols = position_columns(self.attach.snap)
        if len(cols) > 1 and len({c.label.split(":")[0] for c in cols}) > 1:
            return self._side_by_side(out, cols, width, height, st)
        w = self.attach.focus_session
        rates = list(w.acceptance_by_pos) if w is not None else []
        if not rates:
            if cols and cols[0].rates:  # one engine whose positions come from its requests' histograms
                return self._side_by_side(out, cols, width, height, st)
            none = w is not None and w.status == "no speculation"
            note = cols[0].note if cols and cols[0].note else ("no speculation" if none else "no drafts yet")
            out.append("\n" + note, st["dim"])
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

    def _side_by_side(self, out: Text, cols, width: int, height: int, st) -> Text:
        """pos | one column per engine; an engine with nothing per position says why below."""
        cw = max(7, min(13, max(len(c.label) + 2 for c in cols)))
        head = Text("pos")
        for c in cols:
            head.append(f"{c.label + ('*' if c.source == FROM_REQUESTS else ''):>{cw}}", "bold")
        head.truncate(width, overflow="ellipsis")
        out.append("\n")
        out.append_text(head)
        notes = [f"{c.label}: {c.note}" for c in cols if c.note]
        notes += [f"* {c.label}: from {c.n_requests} request{'s' * (c.n_requests != 1)}' histograms"
                  for c in cols if c.source == FROM_REQUESTS]
        depth = max((len(c.rates) for c in cols), default=0)
        room = max(0, height - 2 - len(notes))
        for i in range(min(depth, room)):
            line = Text(f"{i:>3}")
            for c in cols:
                line.append(f"{100 * c.rates[i]:>{cw - 1}.1f}%" if i < len(c.rates) else f"{'-':>{cw}}")
            line.truncate(width, overflow="ellipsis")
            out.append("\n")
            out.append_text(line)
        if depth > room and room > 0:
            out.append(f"\n   … {depth - room} deeper positions", st["dim"])
        for n in notes[: max(0, height - 2)]:
            line = Text(n, st["dim"])
            line.truncate(width, overflow="ellipsis")
            out.append("\n")
            out.append_text(line)
        return out
