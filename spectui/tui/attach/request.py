"""AttachRequest (request mode, ``-p``): the streamed text as it arrives (the newest chunk highlighted
until the next one lands), the server's per-request acceptance where it gives one (llama-server
``timings``, vLLM ``metrics.speculative_decoding``) and the TTFT / ITL measured on the client."""

from __future__ import annotations

from rich.text import Text

from ...views.numbers import pct, secs
from .attach_panel import AttachPanel

_CONTROL = {c: "\ufffd" for c in range(32) if chr(c) not in "\n\t"}  # a model's stray control bytes


def request_line(v) -> Text:
    """Two lines: what arrived and the server's per-request acceptance; the client's TTFT and ITL."""
    r = v.snap.request if v.snap is not None else None
    t = Text()
    if r is None:
        return t.append("request: not sent yet", "dim")
    state = "streaming" if r.running else (r.error or r.reason or "ended")
    t.append("request ", "bold").append(f"{r.n_tokens} tok in {r.n_chunks} chunks ({state})  ")
    if r.draft_n >= 0:
        t.append("accept ", "bold").append(f"{pct(r.acceptance_rate)} ({r.draft_n_accepted}/{r.draft_n})")
        if r.mean_acceptance_length is not None:
            t.append(f"  len {r.mean_acceptance_length:.2f}")
    else:
        t.append("no per-request figures from the server", "dim")
    t.append("\nclient ", "bold").append("TTFT ", "bold").append(f"{secs(r.ttft_s)}  ")
    t.append("ITL p50/p95 ", "bold").append(f"{secs(r.itl_p50_s)}/{secs(r.itl_p95_s)}")
    return t


MAX_LISTED = 4  # ended requests listed above the text (the newest)


def ended_lines(v) -> list[Text]:
    """With several requests: one line each (the newest MAX_LISTED), its acceptance, and an outlier's flag in
    words (spectui.analysis.attach_stats.outlier)."""
    reqs = list(v.snap.requests) if v.snap is not None else []
    if len(reqs) < 2 and not any(r.flag for r in reqs):
        return []
    out = []
    start = max(0, len(reqs) - MAX_LISTED)
    for i, r in enumerate(reqs[start:], start + 1):
        t = Text(f"#{i} ", "bold")
        if r.draft_n >= 0:
            t.append(f"accept {pct(r.acceptance_rate)} ({r.draft_n_accepted}/{r.draft_n})")
            if r.mean_acceptance_length is not None:
                t.append(f" len {r.mean_acceptance_length:.2f}")
        else:
            t.append("no per-request figures", "dim")
        if r.flag:
            t.append("  " + r.flag_words, "bold yellow" if r.flag == "low" else "bold cyan")
        out.append(t)
    return out


class AttachRequest(AttachPanel):
    def draw(self, width: int, height: int) -> Text:
        st = self.styles_map()
        v = self.attach
        out = Text()
        head = list(request_line(v).split("\n")) + ended_lines(v)
        for i, line in enumerate(head[: max(1, height)]):
            line.truncate(width, overflow="ellipsis")
            out.append("\n" if i else "")
            out.append_text(line)
        body = Text(v.text.translate(_CONTROL))
        if v.newest:
            body.append(v.newest.translate(_CONTROL), st["correction"] + st["accepted"])
            body.append("▌", st["pending"])
        # the tail that fits: wrap, keep the last lines
        lines = body.wrap(self.app.console, max(1, width)) if width > 0 else []
        keep = list(lines)[-max(0, height - len(head)):] if height > len(head) else []
        for line in keep:
            out.append("\n")
            out.append_text(line)
        return out
