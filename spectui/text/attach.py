"""Headless face of attach: windows and requests as text lines or JSON objects (numbers from
spectui.analysis.attach_stats)."""

from __future__ import annotations

import sys
from typing import IO, Any

from ..analysis.attach_stats import (
    BASELINE,
    ERROR,
    IDLE,
    NO_SPEC,
    OK,
    RESET,
    AttachSnapshot,
    AttachStats,
    RequestView,
    Window,
)
from ..contract.events import (
    KIND_LLAMA_SERVER,
    AttachEnded,
    AttachStarted,
    MetricsScraped,
    RequestChunk,
    RequestStarted,
)
from ..contract.text import json_text, visible, visible_line
from ..views.numbers import pct, rate, secs


def window_line(w: Window) -> str:
    """One engine's window in one line."""
    who = "all engines" if w.url == "*" else visible_line(w.label)  # a server's label values
    kind = f" [{visible_line(w.kind)}]" if w.kind else ""
    if w.status == ERROR:
        return f"{who}{kind}: {visible_line(w.error)}"  # may quote what the server sent
    if w.status in (BASELINE, RESET):
        what = "baseline (first scrape)"
        if w.status == RESET:
            what = "reset: counters went back (server restarted?) or another engine answers; new baseline"
        extra = f" accept len {w.accept_length:.2f} (gauge)" if w.accept_length is not None else ""
        return f"{who}{kind}: {what}{extra}"
    lat = ""
    if w.ttft_n or w.itl_n:
        lat = f"  TTFT p50/p95 {secs(w.ttft_p50)}/{secs(w.ttft_p95)}  ITL p50/p95 {secs(w.itl_p50)}/{secs(w.itl_p95)}"
    gen = f"  gen {rate(w.generated_tps)} tok/s" if w.generated_tps is not None else ""
    if w.status == NO_SPEC:
        return f"{who}{kind}: no speculation{gen}{lat}"
    if w.status == IDLE:
        gl = f"  accept len {w.accept_length:.2f} (gauge)" if w.accept_length is not None else ""
        why = f"no drafts in {w.dt:.1f}s"
        if w.gauges_only:
            why, gl = "its gauges at 0: no speculative batch reported yet", ""
        if w.kind == KIND_LLAMA_SERVER:  # its counters move when a request ends, not per token
            why = f"no request ended in {w.dt:.1f}s"
        return f"{who}{kind}: idle ({why}){gl}{gen}{lat}"
    if w.gauges_only:  # SGLang: its gauges, no counters (docs/attach.md)
        return (f"{who}{kind}: accept {pct(w.acceptance_rate)} (gauge)  mean len "
                f"{w.mean_acceptance_length:.2f} (gauge)  by pos: not published{gen}{lat}")
    pos = " ".join(f"{a:.2f}" for a in w.acceptance_by_pos)
    derived = " (drafts derived)" if w.drafts_derived else ""
    return (
        f"{who}{kind}: drafts {w.drafts:.0f}{derived}  accept {pct(w.acceptance_rate)}  "
        f"mean len {w.mean_acceptance_length:.2f}  by pos [{pos}]  "
        f"drafted {rate(w.drafted_tps)} tok/s  accepted {rate(w.accepted_tps)} tok/s  ({w.dt:.1f}s){gen}{lat}"
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


def request_lines(r: RequestView, session_end: str = "stopped") -> list[str]:
    """The request's summary; ``session_end``: the session's AttachEnded reason ("done": --count / --duration
    ended it, so a request cut short was not stopped by the user)."""
    head = f"request to {visible_line(r.url)}: {r.n_tokens} tokens in {r.n_chunks} chunks"
    if r.error:
        head += f"; ended early: {visible_line(r.error)}"
    elif r.reason == "stopped":
        head += ("; cut short: the session ended (--count / --duration)" if session_end == "done"
                 else "; stopped by the user")
    lines = [head]
    lines.append(f"  client TTFT {secs(r.ttft_s)}  ITL p50/p95 {secs(r.itl_p50_s)}/{secs(r.itl_p95_s)}")
    if r.draft_n >= 0:
        ml = f"  mean len {r.mean_acceptance_length:.2f}" if r.mean_acceptance_length is not None else ""
        acc = pct(r.acceptance_rate)
        pos = ("  by pos [" + " ".join(f"{a:.2f}" for a in r.acceptance_by_pos) + "]") if r.acceptance_by_pos else ""
        lines.append(f"  server: drafted {r.draft_n}  accepted {r.draft_n_accepted}  accept {acc}{ml}{pos}")
    else:
        lines.append("  server: no per-request speculation figures")
    if r.flag:
        lines.append(f"  outlier, {r.flag_words}")
    return lines


def requests_lines(snap: AttachSnapshot, session_end: str = "stopped") -> list[str]:
    """Every request that ended (several prompts, or several URLs), each with its outlier flag; one request:
    its summary as before."""
    reqs = list(snap.requests)
    if len(reqs) <= 1:
        return request_lines(reqs[0] if reqs else snap.request, session_end) if (reqs or snap.request) else []
    out = []
    for i, r in enumerate(reqs, 1):
        block = request_lines(r, session_end)
        out += [f"#{i} {block[0]}"] + block[1:]
    return out


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
        obj["requests"] = [r.to_dict() for r in snap.requests]  # every request that ended, outliers flagged
    return json_text(obj)  # strict JSON; a server's words with their controls as \\uXXXX


class HeadlessFace:
    """Consumes attach events (live or from a trace) and prints: after each round of scrapes (the
    scrape of the last target URL) one line per engine, or one JSON object; in request mode the text
    as it streams; at ``AttachEnded`` the request summary and the session windows. A live attach and
    a replayed attach trace print the same thing."""

    def __init__(self, out: IO[str] | None = None, as_json: bool = False) -> None:
        self.out = out or sys.stdout
        self.as_json = as_json
        self.stats = AttachStats()
        self.last_url = ""
        self.request_mode = False
        self.session_end = "stopped"
        self.n_requests = 0

    def __call__(self, ev: Any) -> None:
        self.stats.update(ev)
        if isinstance(ev, AttachStarted):
            self.last_url = ev.targets[-1].url if ev.targets else ""
            self.request_mode = bool(ev.prompt)
        elif isinstance(ev, MetricsScraped) and ev.url == self.last_url:
            self.tick()
        elif isinstance(ev, RequestStarted) and not self.as_json:
            self.n_requests += 1
            if self.n_requests > 1:  # several requests: each one's text under its own line
                self.out.write(f"\n-- request {self.n_requests} to {visible_line(ev.url)}\n")
        elif isinstance(ev, RequestChunk) and not self.as_json:
            self.out.write(visible(ev.text))  # the server's completion text, controls made visible
            self.out.flush()
        elif isinstance(ev, AttachEnded):
            self.session_end = ev.reason
            self.finish()

    def tick(self) -> None:
        snap = self.stats.snapshot()
        if self.as_json:
            print(snapshot_json(snap, "interval"), file=self.out, flush=True)
        elif not self.request_mode:
            for line in interval_lines(snap):
                print(visible(line), file=self.out)
            self.out.flush()

    def finish(self) -> None:
        snap = self.stats.snapshot()
        if self.as_json:
            if snap.request is not None:
                print(snapshot_json(snap, "request"), file=self.out)
            print(snapshot_json(snap, "session"), file=self.out, flush=True)
            return
        if snap.request is not None:
            print("", file=self.out)
            for line in requests_lines(snap, self.session_end):
                print(visible(line), file=self.out)
        for line in session_lines(snap):
            print(visible(line), file=self.out)
        self.out.flush()


__all__ = ["window_line", "interval_lines", "session_lines", "request_lines", "snapshot_json", "HeadlessFace", "OK"]
