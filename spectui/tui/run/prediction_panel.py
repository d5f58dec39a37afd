"""PredictionPanel: predicted tokens/s by draft length (``spectui.analysis.cost.costmodel.Prediction``, computed once
per statistics refresh and handed over in the view, along this machine's probed verify curve when one
was measured), the advisor line and, where there is room, this machine's own figures (``spectui probe``).
When drafting stops early (--draft-p-min), the title says how many drafts a pass at the current k makes."""

from __future__ import annotations

from rich.text import Text

from ..shared.panel import Panel


class PredictionPanel(Panel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        view = self.view
        out = Text()
        compact = height <= 2
        auto = view.auto
        pred = view.prediction
        ck = pred.current_k if pred is not None and pred.ready else None
        # --draft-p-min (or short n-gram matches) cut the drafts: what a pass at the current k really drafts
        drafted = f"k={ck}: {pred.drafted(ck):.1f} drafts/pass" if ck and pred.stops_early(ck) else ""
        if not compact:
            out.append("predicted tokens/s by draft length", st["title"])
            out.append(f"  auto k: {auto or 'off'} (a)  * measured", st["dim"])
            if drafted:
                out.append("  " + drafted, st["title"])
            out.truncate(width, overflow="ellipsis")
            out.append("\n")
        if pred is None:
            out.append(view.prediction_note, st["rejected"] if view.prediction_error else st["dim"])
            return out
        if not pred.ready:
            out.append(pred.advice or "not enough timings yet", st["dim"])
            return out
        measured = pred.verify_measured_by_k
        line = Text()
        if compact:
            line.append(f"pred tok/s{' (auto)' if auto else ''} ", "bold")
            if drafted:
                line.append(f"({drafted}) ", "bold")
        for k, v in enumerate(pred.tps_by_k):
            is_measured = k < len(measured) and measured[k]
            style = "bold reverse" if k == pred.best_k else ("" if is_measured else "dim")
            line.append(f"{k}:{v:.1f}{'*' if is_measured else ''}", style)
            line.append(" ")
        line.truncate(width, overflow="ellipsis")
        out.append_text(line)
        if pred.advice:
            out.append("\n")
            out.append(pred.advice, st["title"])
        figures = view.machine
        if figures and height >= 4:
            out.append("\n")
            out.append(figures, st["dim"])
        for ln in (_knee_lines(view) if height >= 6 else []):  # the batched knee (docs/batch-knee.md)
            out.append("\n")
            out.append(ln if len(ln) <= width else ln[: max(0, width - 1)] + "\u2026", st["dim"])
        return out


def _knee_lines(view) -> list[str]:
    """Where speculation stops paying as the batch grows, for the run on screen: the probed batched curve recorded
    with the run (``spectui probe --batched`` cached) and the run's own acceptance at its k."""
    from ...analysis.knee.knee_text import panel_lines  # noqa: PLC0415
    from ...analysis.measured.batch_knee import acceptance_from_tokens_per_pass  # noqa: PLC0415
    from ...analysis.rates import mean_acceptance_length  # noqa: PLC0415

    snap = view.snap
    probe = snap.start.probe if snap is not None and snap.start is not None else None
    if probe is None or '"batched"' not in (probe.report_json or ""):
        return []
    s = snap.stats
    k = snap.start.settings.draft_max if snap.start.settings is not None else 0
    if s.passes_drafted <= 0 or k < 1:
        return []
    import json  # noqa: PLC0415

    a = acceptance_from_tokens_per_pass(mean_acceptance_length(s.n_accepted, s.passes_drafted), k)
    return panel_lines(json.loads(probe.report_json), a)
