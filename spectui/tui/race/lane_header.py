"""LaneHeader: a race lane's label (setting, models, machine) and its figures so far: elapsed on the race
clock, tokens, tokens/s, acceptance, TTFT; its place once it finished. The focused lane is marked ▶ (and
bold), so the mark does not rest on colour."""

from __future__ import annotations

from rich.text import Text

from ..panel import Panel
from ...race.view import LaneView


class LaneHeader(Panel):
    DEFAULT_CSS = "LaneHeader { height: 2; }"

    def draw(self, width: int, height: int) -> Text:
        lane: LaneView | None = self.view if isinstance(self.view, LaneView) else None
        st = self.styles_map()
        t = Text()
        if lane is None:
            return Text("waiting…", st["dim"])
        t.append("▶ " if lane.focused else "  ", "bold reverse" if lane.focused else "")
        t.append(lane.label, "bold" if lane.focused else "")
        t.truncate(width, overflow="ellipsis")
        t.append("\n")
        s = lane.stats
        line = Text("  ")
        if lane.finished:
            place = {1: "1st", 2: "2nd", 3: "3rd"}.get(lane.place, "")
            line.append(f"FINISHED {place} ", "bold reverse")
            line.append(f" {lane.finish_s:6.2f} s", "bold")
        else:
            line.append(f"{lane.state:<8}", "bold" if lane.state != "RACING" else st["dim"])
            line.append(f" {lane.elapsed_s:6.2f} s", "bold")
        if s is not None:
            line.append(f"  {s.n_emitted:4d} tokens  ")
            line.append(f"{s.tokens_per_second:6.2f} tok/s", "bold")
            acc = f"{100 * s.acceptance_rate:3.0f}%" if s.n_drafted else "  -"
            line.append(f"  accept {acc}  {s.tokens_per_pass:4.2f} tok/pass")
            if s.ttft_ms > 0:
                line.append(f"  TTFT {s.ttft_ms:.0f} ms", st["dim"])
        if lane.truncated and lane.finished:
            line.append("  (trace cut off)", st["dim"])
        line.truncate(width, overflow="ellipsis")
        t.append_text(line)
        return t
