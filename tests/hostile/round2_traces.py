"""Traces the round-2 hostile cases read (../shared/reports/bad-input-2026-12-02.md), written by the tests in
the trace format: a small well-formed run (``synthetic_run``) whose pass 1 carries one hostile text as every
token of the pass (each draft, the target's token, what it emitted, every inspector candidate), with
inspector data, so every face (headless text, --json, --explain, a cast, --inspect, the TUI and its ribbon)
meets it.

``LONG_TEXTS``: the report's long tokens (its ``t/*.jsonl`` names), each about ``n`` code points."""

from __future__ import annotations

import dataclasses
import json
import os

from spectui.contract import events as ev
from spectui.recording.trace import synthetic_run, write_trace


def long_texts(n: int) -> dict[str, str]:
    """The report's long tokens, each about ``n`` code points: plain, zero-width flood, combining flood,
    CJK/emoji/ZWJ/flags."""
    wide = "中文字" + "👨‍👩‍👧‍👦" + "🇺🇸🇯🇵" + "❤️" + "🏴󠁧󠁢󠁥󠁮󠁧󠁿"
    return {
        "one_long_token": "A" * n,
        "tok_long10k": "x" * n,
        "tok_zw": "a" + "\u200b\u200c\u200d\u2060\ufeff" * (n // 5),
        "tok_comb": "e" + "\u0301" * n,
        "tok_wide": (wide * (n // len(wide) + 1))[:n],
    }


WIDE_TOKENS = ["中文", "👨‍👩‍👧‍👦", "🇺🇸", "🇯🇵🇫🇷", "❤️", "👍🏽", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "e\u0301", "ﷺ", "\u200d"]


def poisoned_pass(e: ev.PassEvent, text: str, everywhere: bool = True) -> ev.PassEvent:
    """Pass ``e`` with ``text`` as every token's text and every candidate's (``everywhere``), or only as its
    first draft's (accepted, so emitted too) and the target's top candidate there: one long token."""
    n = len(e.drafts)
    if everywhere:
        drafts = tuple(dataclasses.replace(d, text=text) for d in e.drafts)
        target = dataclasses.replace(e.target, text=text) if e.target is not None else None
        emitted = tuple(dataclasses.replace(t, text=text) for t in e.emitted)
        cands = tuple(ev.Candidate(100 + i, text, 0.5 / (i + 1)) for i in range(3))
        inspect = tuple(ev.Inspection(position=i, target_top=cands, draft_top=cands if i < n else (), margin=0.5)
                        for i in range(n + 1))
    else:
        d0 = dataclasses.replace(e.drafts[0], text=text, verdict=ev.ACCEPTED)
        drafts = (d0, *e.drafts[1:])
        target, emitted = e.target, (ev.Token(d0.id, text, d0.prob), *e.emitted[1:])
        n_acc = max(e.n_accepted, 1)
        e = dataclasses.replace(e, n_accepted=n_acc)
        plain = (ev.Candidate(900, "x", 0.2), ev.Candidate(901, "y", 0.1))
        inspect = tuple(ev.Inspection(position=i, target_top=((ev.Candidate(d0.id, text, 0.6),) if i == 0 else ())
                                      + plain, draft_top=plain if i < n else (), margin=0.5) for i in range(n + 1))
    return dataclasses.replace(e, drafts=drafts, target=target, inspect=inspect, emitted=emitted)


def text_trace(path: str | os.PathLike, text: str | list[str], n_passes: int = 6, passes: tuple[int, ...] = (1,),
               everywhere: bool = True) -> str:
    """A trace whose passes ``passes`` carry ``text`` (``poisoned_pass``); a list: one text per pass, cycled
    over every pass."""
    out = []
    texts = text if isinstance(text, list) else None
    for e in synthetic_run(n_passes, seed=3):
        if isinstance(e, ev.RunStarted):
            e = dataclasses.replace(e, inspect_top=3)
        if isinstance(e, ev.PassEvent) and e.index > 0:
            if texts is not None:
                e = poisoned_pass(e, texts[(e.index - 1) % len(texts)])
            elif e.index in passes and e.drafts:
                e = poisoned_pass(e, text, everywhere)
        out.append(e)
    write_trace(path, out)
    return os.fspath(path)


def with_pass_field(src: str | os.PathLike, dst: str | os.PathLike, field: str, raw: str, index: int = 2) -> str:
    """``src`` rewritten with pass ``index``'s ``field`` (dotted: ``timing.wall_ms``) set to the raw JSON text
    ``raw`` (``1e400``, a 5,000-digit integer: what ``json.dumps`` would never write)."""
    marker = "__SPECTUI_RAW__"
    lines = []
    with open(src, encoding="utf-8") as fh:
        for line in fh:
            obj = json.loads(line)
            if obj.get("type") == "pass" and obj.get("index") == index:
                *parents, last = field.split(".")
                d = obj
                for p in parents:
                    d = d[p]
                d[last] = marker
                line = json.dumps(obj).replace(f'"{marker}"', raw) + "\n"
            lines.append(line)
    with open(dst, "w", encoding="utf-8") as fh:
        fh.writelines(lines)
    return os.fspath(dst)
