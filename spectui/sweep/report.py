"""The short report under the sweep's table, written from the measured numbers only: acceptance by draft
length and position, where tokens/s peaked and why longer drafts stopped paying, TTFT, the effect of
temperature, and the cost model's advice."""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from ..analysis.cost.costmodel import predict
from ..analysis.cost.wording import FALL, moved, trend
from ..contract.draft_length import K_MAX
from .aggregate import Cell, Spread, SweepRun
from .plan import TARGET_ONLY


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 10 else f"{x:.0f}"


def confidence_lines(cells: Sequence[Cell], repeats: int = 1) -> list[str]:
    """The section "acceptance by draft confidence": per speculative cell (temperature, k), the drafts the
    target judged grouped by the draft's probability q, "label rate (accepted/judged)" for non-empty buckets."""
    rows = []
    for c in sorted(cells, key=lambda c: (c.temperature, c.k)):
        parts = [f"{b.label} {_pct(b.rate)} ({b.accepted}/{b.judged})" for b in c.confidence if b.judged]
        if parts:
            rows.append(f"  temp {c.temperature:g}, {c.label}: " + ", ".join(parts))
    if not rows:
        return []
    pooled = f", pooled over {repeats} repeats" if repeats > 1 else ""
    return ["Acceptance by draft confidence (drafts the target judged, by the draft's probability q: "
            f"accepted/judged{pooled}) -", *rows]


def acceptance_change(a: Cell, b: Cell) -> str:
    """How acceptance moved from cell ``a`` to cell ``b``, worded from the two rates (analysis.wording): a change
    counts when it exceeds the standard error of the difference and one printed point; "the deeper drafts
    are mostly rejected" only when b's drafts beyond a's k were accepted less than half the time."""
    tol = max(0.01, math.hypot(a.acceptance_se(), b.acceptance_se()))
    phrase = moved("acceptance", a.acceptance_rate.mean, b.acceptance_rate.mean, ".0%", tol,
                   f"±{tol:.0%}, the noise")
    deeper = b.acceptance_by_position[a.k:] if b.k > a.k else ()
    if deeper and trend(a.acceptance_rate.mean, b.acceptance_rate.mean, tol) == FALL and max(deeper) < 0.5:
        shown = ", ".join(f"{a.k + 1 + i}:{_pct(x)}" for i, x in enumerate(deeper[:8]))
        phrase += f" (the deeper drafts are mostly rejected: by position {shown})"
    return phrase


def report_lines(cells: Sequence[Cell], runs: Sequence[SweepRun], prediction=None,
                 on_demand_k: Sequence[int] = ()) -> list[str]:
    """The short report under the table, written from the measured numbers only."""
    spec = [c for c in cells if not c.is_baseline]
    bases = {c.temperature: c for c in cells if c.is_baseline}
    temps = sorted({c.temperature for c in cells})
    rep = max((r.repeat for r in runs), default=0) + 1
    if rep > 1:
        sp = f" (± = standard deviation over {rep} repeats)"
    else:
        sp = " (one run each: no spread measured; use --repeat)"

    return (_acceptance_lines(spec, temps, rep, sp) + _peak_lines(cells, spec, bases, temps)
            + _ttft_lines(runs, bases, spec) + _temperature_lines(spec, temps)
            + _cost_model_lines(prediction, temps, on_demand_k))


def _acceptance_lines(spec: list[Cell], temps: list[float], rep: int, sp: str) -> list[str]:
    """1. Acceptance at each draft length, by draft position, by draft confidence."""
    lines: list[str] = []
    if spec:
        parts = []
        for t in temps:
            cs = sorted((c for c in spec if c.temperature == t), key=lambda c: c.k)
            if cs:
                parts.append(f"temp {t:g}: " + ", ".join(f"k={c.k} {c.acceptance_rate.fmt('.0%')}" for c in cs))
        lines.append("Acceptance rate by draft length - " + "; ".join(parts) + sp + ".")
        deep = []
        for t in temps:
            cs = [c for c in spec if c.temperature == t and len(c.acceptance_by_position) >= 2]
            if cs:
                c = max(cs, key=lambda c: c.k)
                pos = c.acceptance_by_position
                shown = ", ".join(f"{i + 1}:{_pct(a)}" for i, a in enumerate(pos[:10]))
                deep.append(f"temp {t:g}, k={c.k}: {shown}")
        if deep:
            lines.append(
                "Acceptance by draft position (share of passes whose draft i was accepted) - "
                + "; ".join(deep) + "."
            )

        lines.extend(confidence_lines(spec, rep))
    return lines


def _peak_lines(cells: Sequence[Cell], spec: list[Cell], bases: dict, temps: list[float]) -> list[str]:
    """2. Where tokens/s peaked, and why longer drafts stopped paying."""
    if not cells:
        return []
    lines = [_best_line(cells, spec)]
    for t in temps:
        cs = sorted((c for c in spec if c.temperature == t), key=lambda c: c.k)
        if not cs:
            continue
        peak = max(cs, key=lambda c: c.tokens_per_second.mean)
        longer = [c for c in cs if c.k > peak.k]
        if longer:
            lines.append(_longer_line(t, peak, longer[-1]))
        pos_k = [c for c in cs if c.k > 0]
        base = bases.get(t)
        if base is not None and pos_k and peak.tokens_per_second.mean <= base.tokens_per_second.mean:
            lines.append(_no_gain_line(t, base, pos_k[0]))
    return lines


def _best_line(cells: Sequence[Cell], spec: list[Cell]) -> str:
    """The cell with the most tokens/s: a draft length and its speedup, or the target alone (and the best
    speculative setting beside it)."""
    best = max(cells, key=lambda c: c.tokens_per_second.mean)
    if not best.is_baseline:
        return (f"Tokens/s peaked at k={best.k}, temp {best.temperature:g}: {best.tokens_per_second.fmt('.2f')} t/s, "
                f"{best.speedup.fmt('.2f', 'x')} the target alone.")
    best_spec = max(spec, key=lambda c: c.tokens_per_second.mean) if spec else None
    msg = (
        f"Tokens/s peaked with the target alone ({best.tokens_per_second.fmt('.2f')} t/s at temp "
        f"{best.temperature:g}): no draft length paid on this machine"
    )
    if best_spec is not None:
        msg += (
            f"; the best speculative setting, k={best_spec.k} at temp {best_spec.temperature:g}, reached "
            f"{best_spec.tokens_per_second.fmt('.2f')} t/s ({best_spec.speedup.fmt('.2f', 'x')} the baseline)"
        )
    return msg + "."


def _longer_line(t: float, peak: Cell, c: Cell) -> str:
    """Why the longest draft past the peak paid less: tokens per pass against the pass's time, and its parts."""
    tr = c.tokens_per_pass.mean / peak.tokens_per_pass.mean - 1 if peak.tokens_per_pass.mean else 0.0
    mr = c.pass_ms.mean / peak.pass_ms.mean - 1 if peak.pass_ms.mean else 0.0
    line = (
        f"Why longer drafts stopped paying (temp {t:g}): from k={peak.k} to k={c.k} a pass yielded "
        f"{peak.tokens_per_pass.mean:.2f} -> {c.tokens_per_pass.mean:.2f} tokens ({tr:+.0%}) "
        f"but took {_ms(peak.pass_ms.mean)} -> {_ms(c.pass_ms.mean)} ms ({mr:+.0%}): verify "
        f"{_ms(peak.verify_ms.mean)} -> {_ms(c.verify_ms.mean)} ms, drafting "
        f"{_ms(peak.draft_ms_per_pass.mean)} -> {_ms(c.draft_ms_per_pass.mean)} ms per pass; "
        f"{acceptance_change(peak, c)}."
    )
    if (1 + tr) >= (1 + mr):
        line += (
            " (The per-pass averages do not explain the lower tokens/s: the difference is within "
            "the run-to-run noise.)"
        )
    return line


def _no_gain_line(t: float, base: Cell, k1: Cell) -> str:
    """No draft length beat the target alone at temperature t: the shortest one's break-even, or noise."""
    bms = base.pass_ms.mean
    ratio = k1.pass_ms.mean / bms if bms else 0.0
    if ratio >= k1.tokens_per_pass.mean:
        return (
            f"Even k={k1.k} lost at temp {t:g}: a target-only pass takes {_ms(bms)} ms, a k={k1.k} pass "
            f"{_ms(k1.pass_ms.mean)} ms ({ratio:.1f}x: verify {_ms(k1.verify_ms.mean)} ms, drafting "
            f"{_ms(k1.draft_ms_per_pass.mean)} ms), so it needs {ratio:.2f} tokens per pass to break "
            f"even and got {k1.tokens_per_pass.mean:.2f}."
        )
    return (
        f"At temp {t:g} no draft length beat the target alone, although the per-pass averages "
        f"(k={k1.k}: {k1.tokens_per_pass.mean:.2f} tokens in {ratio:.1f}x a target-only pass) say "
        f"it should have: the difference is within the run-to-run noise."
    )


def _ttft_lines(runs: Sequence[SweepRun], bases: dict, spec: list[Cell]) -> list[str]:
    """3. TTFT with and without speculation."""
    lines: list[str] = []
    if bases and spec:
        b_all = [r.stats.ttft_ms for r in runs if r.is_baseline and r.stats.ttft_ms is not None]
        s_all = [r.stats.ttft_ms for r in runs if not r.is_baseline and r.stats.ttft_ms is not None]
        bs, ss = Spread.of(b_all), Spread.of(s_all)
        diff = ss.mean - bs.mean
        noise = max(bs.sd, ss.sd, 0.05 * bs.mean)
        if abs(diff) <= noise:
            verdict = "unchanged within the noise, as expected: speculation cannot shorten prompt evaluation"
        elif diff > 0:
            verdict = (
                f"{diff:.0f} ms ({diff / bs.mean if bs.mean else 0:+.0%}) longer with a drafter: the first token still "
                f"comes from the target's prompt evaluation, and the draft model has its prompt to evaluate too"
            )
        else:
            verdict = (
                f"{-diff:.0f} ms ({diff / bs.mean if bs.mean else 0:+.0%}) shorter with a drafter, which speculation "
                f"cannot cause (prefill is the target alone): machine noise or caching between runs"
            )
        lines.append(
            f"TTFT: {TARGET_ONLY} {bs.fmt('.1f')} ms (range {_ms(bs.lo)}-{_ms(bs.hi)}), with speculation "
            f"{ss.fmt('.1f')} ms (range {_ms(ss.lo)}-{_ms(ss.hi)}): {verdict}."
        )
    return lines


def _temperature_lines(spec: list[Cell], temps: list[float]) -> list[str]:
    """4. What temperature did to acceptance."""
    lines: list[str] = []
    if len(temps) >= 2 and spec:
        t0, t1 = temps[0], temps[-1]
        diffs = []
        for k in sorted({c.k for c in spec}):
            a = next((c for c in spec if c.k == k and c.temperature == t0), None)
            b = next((c for c in spec if c.k == k and c.temperature == t1), None)
            if a and b:
                diffs.append((k, a, b))
        if diffs:
            # a change counts when it exceeds the standard error of the difference
            kinds = []
            for _k, a, b in diffs:
                d = b.acceptance_rate.mean - a.acceptance_rate.mean
                se = math.hypot(a.acceptance_se(), b.acceptance_se())
                kinds.append("lower" if d < -se else "higher" if d > se else "same")
            parts = ", ".join(
                f"k={k} {a.acceptance_rate.mean:.0%} -> {b.acceptance_rate.mean:.0%}"
                f" (±{math.hypot(a.acceptance_se(), b.acceptance_se()):.0%})"
                for k, a, b in diffs
            )
            if all(x == "lower" for x in kinds):
                verdict = "lowered acceptance at every draft length, as the textbook expects"
            elif all(x == "higher" for x in kinds):
                verdict = (
                    "raised acceptance at every draft length, against the textbook expectation "
                    "(a plausible reason: sampling spreads both models' probability over the same likely "
                    "tokens, while at temp 0 a single argmax disagreement rejects)"
                )
            elif all(x == "same" for x in kinds):
                verdict = "left acceptance unchanged within the noise"
            else:
                by = {"lower": [], "higher": [], "same": []}
                for (k, _, _), x in zip(diffs, kinds):
                    by[x].append(f"k={k}")
                said = []
                if by["lower"]:
                    said.append("lowered acceptance at " + ", ".join(by["lower"]))
                if by["higher"]:
                    said.append("raised it at " + ", ".join(by["higher"]))
                if by["same"]:
                    said.append("left it unchanged within the noise at " + ", ".join(by["same"]))
                verdict = "; ".join(said)
            lines.append(
                f"Temperature {t0:g} -> {t1:g} {verdict}: {parts}; ± is the standard error of the difference."
            )
    return lines


def _cost_model_lines(prediction, temps: list[float], on_demand_k: Sequence[int]) -> list[str]:
    """5. The cost model's view."""
    lines: list[str] = []
    if prediction is not None and getattr(prediction, "advice", ""):
        how = f"from the temp {temps[0]:g} runs"
        if on_demand_k:
            how += "; verify times for k=" + ",".join(str(k) for k in on_demand_k) + " measured on demand after them"
        lines.append(f"Cost model ({how}): {prediction.advice}")
    return lines


def sweep_prediction(runs: Sequence[SweepRun], on_demand: dict[int, float] | None = None):
    """Cost-model prediction from the lowest temperature's deepest run, with the verify times measured in
    the runs at that temperature plus ``on_demand`` ones (batch sizes no run used, measured afterwards)."""
    temps = sorted({r.temperature for r in runs})
    spec = [r for r in runs if not r.is_baseline and r.temperature == (temps[0] if temps else 0)]
    if not spec:
        return None
    deepest = max(spec, key=lambda r: (r.k, -r.repeat))
    verify: dict[int, list[float]] = {}
    for r in runs:
        if r.temperature != deepest.temperature:
            continue
        for k, ms, _n in r.stats.verify_ms_by_k:
            verify.setdefault(k, []).append(ms)
    pts = {**(on_demand or {}), **{k: statistics.fmean(v) for k, v in verify.items()}}
    return predict(deepest.stats, k_max=K_MAX, verify_ms_by_k=pts, current_k=deepest.k)
