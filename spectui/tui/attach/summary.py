"""AttachSummary: acceptance rate, mean acceptance length and tokens/s of the last interval and since
start, with the TTFT / ITL p50 / p95 from the engines' own histograms (bucket deltas over the window;
llama-server publishes none), for the sum over engines or the one engine."""

from __future__ import annotations

from rich.text import Text

from ...contract.events import KIND_LLAMA_SERVER
from ...views.numbers import pct, rate, secs
from .attach_panel import AttachPanel


def _len(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


class AttachSummary(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        v = self.attach
        out = Text("deployment", st["title"])
        w, s = v.focus, v.focus_session
        if w is None or s is None:
            out.append("  waiting…", st["dim"])
            return out
        out.append(f"  last {w.dt:.1f}s | since start", st["dim"])
        lines = [
            Text.assemble(("accept ", "bold"), f"{pct(w.acceptance_rate)} | {pct(s.acceptance_rate)}",
                          (f"  ({s.accepted:.0f}/{s.draft_tokens:.0f})", "dim")),
            Text.assemble(("mean acc len ", "bold"), f"{_len(w.mean_acceptance_length)} | "
                          f"{_len(s.mean_acceptance_length)}", ("  (1 + accepted/drafts)", "dim")),
            Text.assemble(("drafted ", "bold"), f"{rate(w.drafted_tps)} | {rate(s.drafted_tps)} tok/s"),
            Text.assemble(("accepted ", "bold"), f"{rate(w.accepted_tps)} | {rate(s.accepted_tps)} tok/s"),
        ]
        if w.ttft_n or w.itl_n or s.ttft_n or s.itl_n:
            lines.append(Text.assemble(("TTFT p50/p95 ", "bold"), f"{secs(w.ttft_p50)}/{secs(w.ttft_p95)} | "
                                       f"{secs(s.ttft_p50)}/{secs(s.ttft_p95)}"))
            lines.append(Text.assemble(("ITL p50/p95 ", "bold"), f"{secs(w.itl_p50)}/{secs(w.itl_p95)} | "
                                       f"{secs(s.itl_p50)}/{secs(s.itl_p95)}"))
        elif KIND_LLAMA_SERVER in v.kinds:
            none = "- llama-server publishes no latency histograms"
            lines.append(Text.assemble(("TTFT/ITL ", "bold"), (none, "dim")))
        else:
            lines.append(Text.assemble(("TTFT/ITL ", "bold"), ("- no requests in the window", "dim")))
        for line in lines[: max(0, height - 1)]:
            line.truncate(width, overflow="ellipsis")
            out.append("\n")
            out.append_text(line)
        return out
