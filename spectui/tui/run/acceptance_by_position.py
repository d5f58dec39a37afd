"""AcceptanceByPosition: one bar per draft position with its rate and counts (StatsSnapshot); while a chain drafts
(``--spec-type ngram-mod,draft-simple``) and more than one of its drafters has drafted, one line per drafter under
the bars: its passes, acceptance and mean acceptance length (``StatsSnapshot.by_drafter``; the summary and
``--json`` have them for any run); "off N": auto left that member out of N passes (it loses on this machine)."""

from __future__ import annotations

from rich.text import Text

from ...contract.events import CHAIN_SEPARATOR
from ...contract.text import visible_line
from ..shared.panel import Panel
from ..shared.sparkline import bar


class AcceptanceByPosition(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text("acceptance by draft position", st["title"])
        out.truncate(width, overflow="ellipsis")
        stats = self.snap.stats if self.snap else None
        rows = list(stats.acceptance_by_position) if stats else []
        if not rows:
            out.append("\nno drafts yet", st["dim"])
            return out
        chain = self.snap.settings is not None and CHAIN_SEPARATOR in self.snap.settings.drafter
        drafters = stats.by_drafter if chain and len(stats.by_drafter) > 1 else ()
        room = max(1, height - 1 - len(drafters))
        shown = rows if len(rows) <= room else rows[: room - 1]
        bw = max(4, width - 22)
        for p in shown:
            out.append("\n")
            out.append(f"{p.position:>2} ")
            out.append(bar(p.rate, bw), st["bar"])
            out.append(f" {100 * p.rate:5.1f}% {p.accepted}/{p.drafted}")
        if len(shown) < len(rows):
            out.append(f"\n   … {len(rows) - len(shown)} deeper positions", st["dim"])
        for d in drafters[: max(0, height - 1 - len(shown))]:
            line = Text(f"\n{visible_line(d.name)}: {d.passes} passes {100 * d.acceptance_rate:.0f}% "
                        f"len {d.mean_acceptance_length:.2f}" + (f" off {d.left_out}" if d.left_out else ""), st["dim"])
            line.truncate(width + 1, overflow="ellipsis")
            out.append_text(line)
        return out
