"""Headless face of attach: windows and requests as text lines or JSON objects (numbers from window.py)."""

from __future__ import annotations

import json
from typing import Any

from .window import BASELINE, ERROR, IDLE, NO_SPEC, OK, RESET, AttachSnapshot, RequestView, Window


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{1000 * x:.0f}ms" if x >= 0.01 else f"{1000 * x:.1f}ms"


def _tps(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def window_line(w: Window) -> str:
    """One engine's window in one line."""
    who = "all engines" if w.url == "*" else w.label
    kind = f" [{w.kind}]" if w.kind else ""
    if w.status == ERROR:
        return f"{who}{kind}: {w.error}"
    if w.status in (BASELINE, RESET):
        what = "baseline (first scrape)" if w.status == BASELINE else "reset: counters went back (server restarted?); new baseline"
        extra = f" accept len {w.accept_length:.2f} (gauge)" if w.accept_length is not None else ""
        return f"{who}{kind}: {what}{extra}"
    lat = ""
    if w.ttft_n or w.itl_n:
        lat = f"  TTFT p50/p95 {_ms(w.ttft_p50)}/{_ms(w.ttft_p95)}  ITL p50/p95 {_ms(w.itl_p50)}/{_ms(w.itl_p95)}"
    gen = f"  gen {_tps(w.generated_tps)} tok/s" if w.generated_tps is not None else ""
    if w.status == NO_SPEC:
        return f"{who}{kind}: no speculation{gen}{lat}"
    if w.status == IDLE:
        gl = f"  accept len {w.accept_length:.2f} (gauge)" if w.accept_length is not None else ""
        return f"{who}{kind}: idle (no drafts in {w.dt:.1f}s){gl}{gen}{lat}"
    assert w.status == OK
    pos = " ".join(f"{a:.2f}" for a in w.acceptance_by_pos)
    derived = " (drafts derived)" if w.drafts_derived else ""
    return (
        f"{who}{kind}: drafts {w.drafts:.0f}{derived}  accept {_pct(w.acceptance_rate)}  "
        f"mean len {w.mean_acceptance_length:.2f}  by pos [{pos}]  "
        f"drafted {_tps(w.drafted_tps)} tok/s  accepted {_tps(w.accepted_tps)} tok/s  ({w.dt:.1f}s){gen}{lat}"
    )


def interval_lines(snap: AttachSnapshot) -> list[str]:
    lines = [f"t={snap.t:7.1f}s  " + window_line(w) for w in snap.interval]
    if snap.interval_sum is not None:
        lines.append(f"t={snap.t:7.1f}s  " + window_line(snap.interval_sum))
    return lines


def session_lines(snap: AttachSnapshot) -> list[str]:
    out = [f"since start ({snap.t:.1f}s):"]
    out += ["  " + window_line(w) for w in snap.session]
    if snap.session_sum is not None:
        out.append("  " + window_line(snap.session_sum))
    return out


def request_lines(r: RequestView) -> list[str]:
    head = f"request to {r.url}: {r.n_tokens} tokens in {r.n_chunks} chunks"
    if r.error:
        head += f"; ended early: {r.error}"
    lines = [head]
    lines.append(f"  client TTFT {_ms(r.ttft_s)}  ITL p50/p95 {_ms(r.itl_p50_s)}/{_ms(r.itl_p95_s)}")
    if r.draft_n >= 0:
        ml = f"  mean len {r.mean_acceptance_length:.2f}" if r.mean_acceptance_length is not None else ""
        lines.append(f"  server: drafted {r.draft_n}  accepted {r.draft_n_accepted}  accept {_pct(r.acceptance_rate)}{ml}")
    else:
        lines.append("  server: no per-request speculation figures")
    return lines


def snapshot_json(snap: AttachSnapshot, what: str = "interval") -> str:
    obj: dict[str, Any] = {"t": round(snap.t, 6), "what": what}
    if what == "interval":
        obj["engines"] = [w.to_dict() for w in snap.interval]
        obj["sum"] = snap.interval_sum.to_dict() if snap.interval_sum else None
    elif what == "session":
        obj["engines"] = [w.to_dict() for w in snap.session]
        obj["sum"] = snap.session_sum.to_dict() if snap.session_sum else None
    elif what == "request" and snap.request is not None:
        obj["request"] = snap.request.to_dict()
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


__all__ = ["window_line", "interval_lines", "session_lines", "request_lines", "snapshot_json", "OK"]
