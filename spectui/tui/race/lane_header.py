"""LaneHeader: a race lane's label (setting, models, machine) and its figures so far: elapsed on the race
clock, tokens, tokens/s, acceptance, tokens per pass (a tree lane: ⑂ nodes verified per pass), TTFT; its place
once it finished. The focused lane is marked ▶ (and bold), so the mark does not rest on colour."""

from __future__ import annotations

from rich.text import Text

from ...views.race_view import LaneView
from ...views.tree import TREE
from ..shared.panel import Panel, append_lines


class LaneHeader(Panel):
    DEFAULT_CSS = "LaneHeader { height: 2; }"  # 3 when side by side (race.tcss)

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
        pieces: list[Text] = []
        if lane.finished:
            place = {1: "1st", 2: "2nd", 3: "3rd"}.get(lane.place, "")
            pieces.append(Text.assemble((f"FINISHED {place}", "bold reverse"), (f" {lane.finish_s:.2f} s", "bold")))
        else:
            pieces.append(Text.assemble((lane.state, "bold" if lane.state != "RACING" else st["dim"]),
                                        (f" {lane.elapsed_s:.2f} s", "bold")))
        if s is not None:
            pieces.append(Text(f"{s.n_emitted} tokens"))
            pieces.append(Text(f"{s.tokens_per_second:.2f} tok/s", "bold"))
            pieces.append(Text(f"accept {100 * s.acceptance_rate:.0f}%" if s.n_drafted else "no drafts"))
            pieces.append(Text(f"{s.tokens_per_pass:.2f} tok/pass"))
            if s.tree is not None:  # --drafter tree: nodes verified per pass (views.tree's mark)
                pieces.append(Text(f"{TREE} {s.tree.nodes_per_pass:.1f} nodes/pass"))
            if s.ttft_ms is not None:
                pieces.append(Text(f"TTFT {s.ttft_ms:.0f} ms", st["dim"]))
        if lane.truncated and lane.finished:
            pieces.append(Text("trace cut off", st["dim"]))
        lines = [Text("  ")]
        for piece in pieces:  # flow the figures over the rows the header has
            sep = " · " if lines[-1].cell_len > 2 else ""
            if lines[-1].cell_len + len(sep) + piece.cell_len > width and len(lines) < height - 1 \
                    and lines[-1].cell_len > 2:
                lines.append(Text("  "))
                sep = ""
            lines[-1].append(sep)
            lines[-1].append_text(piece)
        return append_lines(t, lines, width)
