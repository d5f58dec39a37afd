"""The bench as data: ``--csv`` (one line per run), ``--json`` (params, every run, every summary, the report) and
``--markdown`` (Spec-Bench's table: one row per method, the speedup per category, the mean accepted tokens and
the overall speedup; then the per-category detail)."""

from __future__ import annotations

import csv
import io
from dataclasses import asdict
from typing import Sequence

from ..views.numbers import ms_or_dash
from .aggregate import OVERALL, BenchRow, Summary, baselines, comparable
from .winners import verdicts

MARKDOWN_MARKER = "<!-- spectui bench report -->"  # the --markdown file's first line (spectui's own file)
CSV_FIELDS = (
    "category", "question_id", "sub_category", "turn", "drafter", "k", "temperature", "pipeline", "repeat", "source",
    "prompt_tokens", "n_emitted", "n_drafted", "n_accepted", "passes_drafted", "n_passes", "mean_accepted_tokens",
    "acceptance_rate", "tokens_per_second", "baseline_tokens_per_second", "speedup", "ttft_ms", "itl_ms_p50",
    "stop_reason", "equal", "contended", "skipped", "trace", "tree_nodes_per_pass",
)


def row_records(rows: Sequence[BenchRow]) -> list[dict]:
    base = baselines(rows)
    checks = comparable(rows)
    out = []
    for r in rows:
        s = r.stats
        b = base.get(r.unit)
        b_tps = b.stats.tokens_per_second if b is not None and not r.setting.is_baseline else 0.0
        c = checks.get(id(r))
        out.append({
            "category": r.category, "question_id": r.prompt.question_id, "sub_category": r.prompt.sub_category,
            "turn": r.turn + 1, "drafter": r.setting.drafter, "k": r.setting.k,
            "temperature": r.setting.temperature, "pipeline": r.setting.pipeline, "repeat": r.repeat + 1,
            "source": r.source,
            "prompt_tokens": r.prompt_tokens,
            "n_emitted": s.n_emitted if s else 0, "n_drafted": s.n_drafted if s else 0,
            "n_accepted": s.n_accepted if s else 0, "passes_drafted": s.passes_drafted if s else 0,
            "n_passes": s.n_passes if s else 0,
            "mean_accepted_tokens": s.mean_acceptance_length if s else 0.0,
            "acceptance_rate": s.acceptance_rate if s else 0.0,
            "tokens_per_second": s.tokens_per_second if s else 0.0,
            "baseline_tokens_per_second": b_tps,
            "speedup": (s.tokens_per_second / b_tps) if s and b_tps > 0 else "",
            "ttft_ms": s.ttft_ms if s else None, "itl_ms_p50": s.itl_ms_p50 if s else 0.0,
            "stop_reason": s.stop_reason if s else "",
            "equal": "" if c is None else c.equal, "contended": r.contended, "skipped": r.skipped, "trace": r.trace,
            "tree_nodes_per_pass": s.tree.nodes_per_pass if s and s.tree else "",  # --drafter tree: nodes verified
        })
    return out


def to_csv(rows: Sequence[BenchRow]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for rec in row_records(rows):
        w.writerow(rec)
    return buf.getvalue()


def summary_record(s: Summary) -> dict:
    d = asdict(s)
    d["setting"] = {"drafter": s.setting.drafter, "k": s.setting.k, "temperature": s.setting.temperature,
                    "pipeline": s.setting.pipeline,
                    "label": s.setting.label}
    d["unequal"] = list(s.unequal)
    d["acceptance_by_position"] = list(s.acceptance_by_position)
    d["tree"] = s.tree.record() if s.tree is not None else None  # nodes per pass, acceptance by depth
    return d


def to_json(rows: Sequence[BenchRow], summaries: Sequence[Summary], report: Sequence[str], params: dict,
            status: dict, has_baseline: bool = True) -> dict:
    """The --json document: params, status, every run (its text, acceptance by position and a tree setting's
    ``tree``: nodes per pass, acceptance by depth), every summary (its ``tree`` pooled), the winner of each
    category with every setting's word (``bench.winners``) and the report's lines."""
    recs = row_records(rows)
    for rec, r in zip(recs, rows):
        rec["acceptance_by_position"] = [
            {"position": p.position, "drafted": p.drafted, "accepted": p.accepted, "rate": p.rate}
            for p in (r.stats.acceptance_by_position if r.stats else ())
        ]
        rec["text"] = r.text
        rec["tree"] = r.stats.tree.record() if r.stats and r.stats.tree else None
    return {"params": params, "status": status, "runs": recs,
            "summaries": [summary_record(s) for s in summaries],
            "winners": [v.record() for v in verdicts(summaries, has_baseline)], "report": list(report)}


def to_markdown(summaries: Sequence[Summary], has_baseline: bool = True, title: str = "") -> str:
    """Spec-Bench's table shape: | Method | <category> ... | #Mean accepted tokens | Overall |, each category cell
    the speedup (or, without a baseline, the mean accepted tokens), then who wins each category and why
    (``bench.winners``), then a detail table per category."""
    cats = [c for c in dict.fromkeys(s.category for s in summaries) if c != OVERALL]
    spec = [s for s in summaries if not s.setting.is_baseline]
    methods = list(dict.fromkeys(s.setting for s in spec))
    lines = [MARKDOWN_MARKER, ""]
    if title:
        lines += [f"**{title}**", ""]
    lines.append("| Method | Temp | " + " | ".join(cats) + " | #Mean accepted tokens | Overall |")
    lines.append("|---|---:|" + "---:|" * len(cats) + "---:|---:|")
    for m in methods:
        cells = []
        for c in cats:
            s = next((x for x in spec if x.setting == m and x.category == c), None)
            if s is None or not s.runs:
                cells.append("-")
            elif has_baseline:
                cells.append(f"{s.speedup:.2f}x")
            else:
                cells.append(f"{s.mean_accepted_tokens:.2f}")
        ov = next((x for x in spec if x.setting == m and x.category == OVERALL), None)
        mat = f"{ov.mean_accepted_tokens:.2f}" if ov else "-"
        osp = f"{ov.speedup:.2f}x" if ov and has_baseline else "-"
        lines.append(f"| {m.label} | {m.temperature:g} | " + " | ".join(cells) + f" | {mat} | {osp} |")
    lines.append("")
    won = verdicts(summaries, has_baseline)
    if won:  # who wins each category, and why
        lines += [f"- {v.sentence}" for v in won] + [""]
    lines.append("| Category | Method | Temp | Prompts | Mean accepted tokens | Acceptance | Baseline t/s | "
                 "Method t/s | Speedup (min / median / max) | TTFT ms | Equal |")
    lines.append("|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for s in summaries:
        if not s.runs:
            continue
        base = s.setting.is_baseline
        rng = s.speedup_range
        sp = "1.00x" if base else (f"{s.speedup:.2f}x ({rng.lo:.2f} / {rng.median:.2f} / {rng.hi:.2f})"
                                    if has_baseline and s.speedup else "-")
        lines.append(
            f"| {s.category} | {s.setting.label} | {s.setting.temperature:g} | {s.prompts} | "
            f"{'' if base else f'{s.mean_accepted_tokens:.2f}'} | {'' if base else f'{s.acceptance_rate:.0%}'} | "
            f"{s.baseline_tokens_per_second:.1f} | {s.tokens_per_second:.1f} | {sp} | {ms_or_dash(s.ttft_ms)} | "
            f"{f'{s.equal}/{s.compared}' if s.compared else ''} |"
        )
    return "\n".join(lines) + "\n"
