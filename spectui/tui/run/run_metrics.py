"""RunMetrics: TTFT (with why speculation cannot change it), acceptance rate, mean acceptance length,
tokens per pass, the draft / verify / other time split, the context used (all from StatsSnapshot) and
where each model runs (RunStarted's ModelInfo: "target CPU · draft CUDA 24/24 layers") and, for an EAGLE-3 head or
MTP layers, a draft step's cost beside a target decode, and with --pipeline its hit rate, waste and hidden
drafting (views.pipeline), where there is room."""

from __future__ import annotations

from rich.text import Text

from ...views.heads import step_cost
from ...views.pipeline import pct as share
from ...views.placement import models_where
from ..shared.panel import Panel, fmt_ms


class RunMetrics(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text("run", st["title"])
        snap = self.snap
        if snap is None:
            return out
        s = snap.stats
        out.append(f"  {s.n_passes} passes, {s.n_emitted} tokens", st["dim"])
        lines: list[Text] = []
        note = " (prompt eval: speculation can't change it)" if width >= 56 else " speculation can't help"
        lines.append(Text.assemble(("TTFT ", "bold"), fmt_ms(s.ttft_ms) if s.ttft_ms is not None else "-",
                                   (note, "dim")))
        lines.append(Text.assemble(("accept ", "bold"), f"{100 * s.acceptance_rate:.1f}% ",
                                   (f"({s.n_accepted}/{s.n_drafted})", "dim")))
        lines.append(Text.assemble(("mean acc len ", "bold"), f"{s.mean_acceptance_length:.2f}  ",
                                   ("tok/pass ", "bold"), f"{s.tokens_per_pass:.2f}"))
        total = s.draft_ms_total + s.verify_ms_total + s.other_ms_total
        if total > 0:
            d, v = s.draft_ms_total / total, s.verify_ms_total / total
            o = max(0.0, 1.0 - d - v)
            words = (f" draft {100 * d:.0f}% verify {100 * v:.0f}% other {100 * o:.0f}%" if width >= 56
                     else f" d{100 * d:.0f}% v{100 * v:.0f}% o{100 * o:.0f}%")
            bw = max(4, min(30, width - 5 - len(words)))
            nd, nv = round(d * bw), round(v * bw)
            split = Text.assemble(("time ", "bold"), ("▓" * nd, st["pending"]), ("█" * nv, st["bar"]),
                                  ("░" * max(0, bw - nd - nv), "dim"), words)
        else:
            split = Text.assemble(("time ", "bold"), ("no decode passes yet", "dim"))
        lines.append(split)
        ctx = Text.assemble(("context ", "bold"), f"{s.n_ctx_used}/{s.n_ctx or '?'}")
        pct = Text(f" ({100 * s.n_ctx_used / s.n_ctx:.1f}%)", "dim") if s.n_ctx else Text("")
        lines.append(ctx)
        placed = models_where(snap.start)
        if placed and len(lines) < height - 1:  # a line of its own when there is room (wide layout)
            ctx.append_text(pct)
            lines.append(Text.assemble(("runs on ", "bold"), placed))
        elif placed:  # 80x24: after the context figures, "context 123/4096 (3.0%) · CPU + CPU"
            short = models_where(snap.start, short=True)
            if len(ctx) + len(pct) + 3 + len(short) <= width:
                ctx.append_text(pct)
            ctx.append(f" · {short}")
        else:
            ctx.append_text(pct)
        p = s.pipeline
        if p is not None and len(lines) < height - 1:  # --pipeline: hits, waste, the drafting hidden
            lines.append(Text.assemble(("pipeline ", "bold"), f"hit {share(p.hit_rate)} waste {share(p.waste)} "
                                       f"hidden {share(p.hidden_share)}"))
        head = snap.start.head if snap.start is not None else None
        # the step's cost beside a target decode, named by what drafts now (a head loaded beside a draft model
        # does not make the model's steps the head's)
        drafter = snap.settings.drafter if snap.settings is not None else (head.kind if head is not None else "")
        if head is not None and drafter in (head.kind, "model") and s.n_drafted and s.target_decode_ms:
            per_pass = s.draft_ms_total / max(1, s.passes_drafted)  # a block drafter's step: its one draft pass
            lines.append(Text.assemble(("step ", "bold"), step_cost(s.draft_ms_per_token, s.target_decode_ms, drafter,
                                                                    per_pass_ms=per_pass)))
        for line in lines[: max(0, height - 1)]:
            line.truncate(width, overflow="ellipsis")
            out.append("\n")
            out.append_text(line)
        return out
