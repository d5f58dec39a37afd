"""PredictionPanel: predicted tokens/s by draft length and the advisor line, from spectui.costmodel
when it is importable (``predict(snapshot, k_max) -> Prediction``)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from .panel import Panel

try:  # the cost model is another engineer's module; the slot stays empty without it
    from ..costmodel import predict as _predict
except ImportError:  # pragma: no cover - depends on the checkout
    _predict = None


def _pairs(tps_by_k: Any) -> list[tuple[int, float]]:
    if isinstance(tps_by_k, dict):
        return sorted((int(k), float(v)) for k, v in tps_by_k.items())
    return [(k, float(v)) for k, v in enumerate(tps_by_k or ())]


class PredictionPanel(Panel):
    k_max = 16

    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        out = Text()
        compact = height <= 2
        auto = getattr(self.app, "auto_mode", None)
        if not compact:
            out.append("predicted tokens/s by draft length", st["title"])
            out.append(f"  auto k: {auto or 'off'} (a)  * measured", st["dim"])
            out.truncate(width, overflow="ellipsis")
            out.append("\n")
        if _predict is None:
            out.append("cost model not available (spectui.costmodel missing)", st["dim"])
            return out
        if self.snap is None or self.snap.stats.n_passes == 0:
            out.append("predicted tokens/s by k: waiting for decode passes…", st["dim"])
            return out
        control = getattr(self.app, "control", None)
        current = control.settings.draft_max if control is not None else None
        try:
            pred = _predict(self.snap.stats, k_max=self.k_max, current_k=current)
        except Exception as exc:  # a model error must not take the UI down
            out.append(f"cost model error: {exc}", st["rejected"])
            return out
        if not getattr(pred, "ready", True):
            out.append(str(getattr(pred, "advice", "") or "not enough timings yet"), st["dim"])
            return out
        pairs = _pairs(getattr(pred, "tps_by_k", ()))
        measured = tuple(getattr(pred, "verify_measured_by_k", ()) or ())
        best = getattr(pred, "best_k", None)
        line = Text()
        if compact:
            line.append(f"pred tok/s{' (auto)' if auto else ''} ", "bold")
        for k, v in pairs:
            is_measured = k < len(measured) and bool(measured[k])
            style = "bold reverse" if k == best else ("" if is_measured else "dim")
            line.append(f"{k}:{v:.1f}{'*' if is_measured else ''}", style)
            line.append(" ")
        line.truncate(width, overflow="ellipsis")
        out.append_text(line)
        advice = str(getattr(pred, "advice", "") or "")
        if advice:
            out.append("\n")
            out.append(advice, st["title"])
        return out
