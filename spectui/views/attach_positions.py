"""Acceptance by draft position for each watched engine side by side (no Textual): one column per engine that
speculates, from its counters since attach started (llama-server, vLLM: accepted_per_pos[i] / drafts), or,
for an engine that publishes no per-position metric (SGLang), from the per-request histograms of the requests
attach sent it (``-p``): position i accepted in sum over requests of (verify steps whose draft i was
accepted) / sum of their verify steps, the same definition.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, replace

from ..analysis.attach_stats import BASELINE, ERROR, NO_SPEC, RESET, AttachSnapshot, Window
from ..contract.events import KIND_LLAMA_SERVER, KIND_SGLANG, KIND_VLLM

SHORT = {KIND_LLAMA_SERVER: "llama", KIND_VLLM: "vllm", KIND_SGLANG: "sglang"}
FROM_COUNTERS, FROM_REQUESTS = "counters", "requests"


@dataclass(frozen=True)
class PositionColumn:
    label: str  # short: the engine's kind, with its port (and engine label) where two would read the same
    url: str
    rates: tuple[float, ...] = ()  # acceptance by position (0 = the first drafted token)
    source: str = ""  # FROM_COUNTERS, FROM_REQUESTS, or "" (nothing per position)
    n_requests: int = 0  # FROM_REQUESTS: how many requests' histograms
    note: str = ""  # why there is nothing, in the screen's words


def _port(url: str) -> str:
    try:
        p = urllib.parse.urlsplit(url if "://" in url else "http://" + url)
        return str(p.port or "")
    except ValueError:
        return ""


def position_columns(snap: AttachSnapshot | None) -> list[PositionColumn]:
    """One column per engine that speculates (its session window), in the order attach watches them."""
    if snap is None:
        return []
    shown = [w for w in snap.session if _shown(w)]
    cols = [_column(w, snap) for w in shown]
    labels = [c.label for c in cols]
    return [replace(c, label=f"{c.label}:{_port(w.url)}" + (f"/{w.engine}" if w.engine else ""))
            if labels.count(c.label) > 1 else c for c, w in zip(cols, shown)]


def _shown(w: Window) -> bool:
    """An engine that speculates, with something since its baseline (a gauge engine from its first scrape)."""
    return not (w.status in (ERROR, NO_SPEC) or (w.status in (BASELINE, RESET) and not w.gauges_only))


def _column(w: Window, snap: AttachSnapshot) -> PositionColumn:
    label = SHORT.get(w.kind, w.kind or "?")
    if w.acceptance_by_pos:
        return PositionColumn(label, w.url, tuple(w.acceptance_by_pos), FROM_COUNTERS)
    reqs = [r for r in snap.requests if r.url == w.url and r.accepted_per_pos and r.spec_steps > 0]
    if reqs:
        n = max(len(r.accepted_per_pos) for r in reqs)
        steps = sum(r.spec_steps for r in reqs)
        rates = tuple(sum(r.accepted_per_pos[i] for r in reqs if i < len(r.accepted_per_pos)) / steps
                      for i in range(n))
        return PositionColumn(label, w.url, rates, FROM_REQUESTS, len(reqs))
    if w.gauges_only:
        return PositionColumn(label, w.url, note="no per-position metric; -p: each request's histogram")
    return PositionColumn(label, w.url, note="no drafts yet")
