"""AttachEngines: one row per watched engine (URL, vLLM engine label, kind) and the sum over them: its
state in one line (baseline / reset / no speculation / idle / unreachable / not Prometheus) or its window's
acceptance rate, mean acceptance length, drafted and accepted tokens/s (AttachSnapshot.interval)."""

from __future__ import annotations

from rich.text import Text

from ...analysis.attach_stats import BASELINE, ERROR, IDLE, NO_SPEC, OK, RESET, Window
from ...contract.events import KIND_LLAMA_SERVER
from ...views.numbers import pct, rate
from ..shared.panel import clip
from .attach_panel import AttachPanel

STATE_STYLE = {OK: "bold", IDLE: "dim", BASELINE: "dim", RESET: "yellow", NO_SPEC: "yellow", ERROR: "red"}


def state_words(w: Window) -> str:
    if w.status == ERROR:
        return w.error
    if w.status == BASELINE:
        return "baseline (first scrape)"
    if w.status == RESET:
        return "reset: counters went back (restarted?) or another engine answers"
    gen = f"  gen {w.generated_tps:.1f} tok/s" if w.generated_tps is not None else ""
    if w.status == NO_SPEC:
        return "no speculation" + gen
    if w.status == IDLE and w.gauges_only:
        return "idle (its gauges at 0: no speculative batch yet)" + gen
    if w.status == IDLE:
        why = "no request ended" if w.kind == KIND_LLAMA_SERVER else "no drafts"
        return f"idle ({why} in {w.dt:.1f}s)" + gen
    return ""


class AttachEngines(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        v = self.attach
        out = Text("engines ", st["title"])
        snap = v.snap
        rows = list(snap.interval) if snap else []
        if snap is not None and snap.interval_sum is not None:
            rows.append(snap.interval_sum)
        if not rows:
            out.append("waiting for the first scrape…", st["dim"])
            return out
        name_w = max(12, min(38, width - 44))
        out.append(f"{'':<{max(0, name_w - 8)}}  accept  len    drafted/s accepted/s", st["dim"])
        out.truncate(width, overflow="ellipsis")
        room = max(1, height - 1)
        for w in rows[:room]:
            out.append("\n")
            line = Text()
            who = "all engines" if w.url == "*" else w.label + (f" [{w.kind}]" if w.kind else "")
            line.append(f"{clip(who, name_w):<{name_w}}", "bold" if w.url == "*" else "")
            if w.status == OK:
                ml = f"{w.mean_acceptance_length:.2f}" if w.mean_acceptance_length is not None else "-"
                line.append(f" {pct(w.acceptance_rate):>7} {ml:>5} ")
                if w.gauges_only:  # SGLang: its gauges (the last batches), no counters to make rates of
                    line.append("    gauges, no counters", "dim")
                else:
                    line.append(f"{rate(w.drafted_tps):>10} {rate(w.accepted_tps):>10}")
            else:
                line.append(" " + state_words(w), STATE_STYLE.get(w.status, ""))
            line.truncate(width, overflow="ellipsis")
            out.append_text(line)
        if len(rows) > room:
            out.append(f" (+{len(rows) - room})", st["dim"])
        return out
