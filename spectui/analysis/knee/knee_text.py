"""The batch knee in words and pictures, for a terminal: the measured step costs and the predicted speedups
(``table``), the speedup against B (``chart``), the reason from the numbers (``why``), the whole
``spectui probe --batched`` report (``render``) and a face's two lines (``panel_lines``). What they show is
computed in batch_knee.py; text from outside (model and file names, a server's words) goes through the one
escaping rule.

No Textual imports.
"""

from __future__ import annotations

import json
import math

from ...contract.errors import SpectuiError
from ...contract.text import visible_line
from ..cost.costmodel import leviathan
from ..measured.batch_knee import DRAFTER_MODEL, BatchCurve, KneePrediction, predict

CHART_HEIGHT = 12
CHART_COL = 6  # characters per measured B


def table(curve: BatchCurve, pred: KneePrediction | None) -> list[str]:
    """The measured step costs (ms) by B, and the predicted speedups with the knees."""
    head = "     B  plain ms" + "".join(f"  k={k} verify ms" for k in curve.ks) + (
        "  draft ms" if curve.has_draft else "")
    lines = ["batched step cost (one llama_decode of B sequences; plain = 1 token each, k = k + 1 tokens each)",
             head]
    for i, b in enumerate(curve.seqs):
        row = f"{b:>6}  {curve.plain_ms[i]:>8.2f}" + "".join(
            f"  {curve.verify_ms[k][i]:>13.2f}" for k in curve.ks)
        if curve.has_draft:
            row += f"  {curve.draft_ms[i]:>8.2f}"
        lines.append(row)
    if pred is None:
        return lines
    src = f" ({safe_text(pred.acceptance_source, 200)})" if pred.acceptance_source else ""
    lines += ["", f"predicted speedup over plain batched decode at acceptance {pred.acceptance:.2f}{src}, "
              f"{'draft model' if pred.drafter == DRAFTER_MODEL else 'prompt lookup (free drafts)'}:",
              "     B" + "".join(f"   k={k:<3}" for k in pred.ks) + "  best"]
    for i, b in enumerate(pred.seqs):
        lines.append(f"{b:>6}" + "".join(f"  {pred.speedup[k][i]:>5.2f}x" for k in pred.ks)
                     + f"  k={pred.best_k[i]}")
    b_max = pred.seqs[-1]
    for k in pred.ks:
        lines.append(f"k = {k}: {pred.knees[k].words(b_max)}")
    lines.append(f"best k at each B: {pred.best.words(b_max)}")
    lines.append("as vLLM's num_speculative_tokens_per_batch_size ([from B, to B, k]; k = 0: off): "
                 + json.dumps(pred.k_schedule()))
    return lines


def chart(pred: KneePrediction, height: int = CHART_HEIGHT) -> list[str]:
    """Speedup against B (log2 columns, a log scale up the side: 2x above 1.0x is as far as 0.5x below), one
    mark per k (its digit), the 1.0x line marked with '-'."""
    vals = [max(x, 1e-3) for v in pred.speedup.values() for x in v]
    top = math.log(max(max(vals), 1.05) * 1.05)
    bottom = math.log(min(min(vals), 0.95) / 1.05)
    ncol = len(pred.seqs) * CHART_COL
    grid = [[" "] * ncol for _ in range(height)]

    def row_of(v: float) -> int:
        return max(0, min(height - 1, round((top - math.log(max(v, 1e-3))) / (top - bottom) * (height - 1))))

    one = row_of(1.0)
    grid[one] = ["-"] * ncol
    marks = "123456789abcdefg"
    for k in pred.ks:
        ch = marks[k - 1] if k <= len(marks) else "*"
        for i, v in enumerate(pred.speedup[k]):
            grid[row_of(v)][i * CHART_COL + CHART_COL // 2] = ch
    lines = ["speedup against B (each mark is its k; '-' = 1.0x, where speculation stops paying; log scale)"]
    for r in range(height):
        v = math.exp(top - r * (top - bottom) / (height - 1))
        label = " 1.00x" if r == one else (f"{v:>5.2f}x" if r in (0, height - 1) else " " * 6)
        lines.append(f"{label} |" + "".join(grid[r]).rstrip())
    lines.append(" " * 7 + "+" + "-" * ncol)
    lines.append(" " * 8 + "".join(f"{b:^{CHART_COL}}" for b in pred.seqs) + "  B (sequences in one step)")
    return lines


def why(curve: BatchCurve, pred: KneePrediction) -> str:
    """The reason in words, from the numbers: what a pass costs in plain steps (its verify, and its k draft
    steps with a draft model) against the tokens it yields, at the smallest and the largest B."""
    k = pred.best_k[0]
    b0, b1 = curve.seqs[0], curve.seqs[-1]
    drafts = pred.drafter == DRAFTER_MODEL

    def cost(b: int) -> float:  # a pass in plain steps: speedup = tokens a pass / cost
        return (curve.verify(b, k) + (k * curve.draft_step(b) if drafts else 0.0)) / curve.plain(b)

    c0, c1 = cost(b0), cost(b1)
    s0, s1 = pred.speedup[k][0], pred.speedup[k][-1]
    gain = leviathan(pred.acceptance, k)
    what = f"a pass of k = {k} (its verify of {k + 1} tokens a sequence" + (f" and {k} draft steps)" if drafts
                                                                              else ")")
    head = (f"At B = {b0} {what} costs {c0:.2f} plain steps and yields {gain:.2f} tokens; at B = {b1} it costs "
            f"{c1:.2f} plain steps for the same {gain:.2f}")
    if s0 <= 1.0:
        return head + (f": it costs more plain steps than it yields tokens already at B = {b0}, so speculation "
                       f"at k = {k} never pays here ({s0:.2f}x at B = {b0}, {s1:.2f}x at B = {b1}).")
    if c1 > c0 * 1.1:
        tail = f", and speculation at k = {k} loses ({s1:.2f}x)." if s1 <= 1.0 else (
            f", yet at k = {k} it still pays ({s1:.2f}x).")
        return head + ": the step has run out of idle compute, so the extra tokens verified are paid for in full" + tail
    return head + ": a pass did not grow dearer against a plain step here (idle compute left at every B)."


def safe_text(text: str, limit: int = 120) -> str:
    """Text from outside (GGUF names, file names, a server's words) for a terminal, at most ``limit``
    characters of it: the one escaping rule (``contract.text.visible_line``)."""
    return visible_line(str(text)[:limit])


def render(curve: BatchCurve, pred: KneePrediction | None) -> str:
    names = safe_text(curve.target) + (f" + {safe_text(curve.draft)}" if curve.draft else "")
    out = [f"spectui probe --batched: {names}"
           + f", {curve.threads} threads, median of {curve.repeats} rounds at {curve.context_tokens} tokens "
           f"of context a sequence" + (f" (cached: {curve.cache_file})" if curve.cached else
                                       f" (measured now in {curve.wall_s:.1f} s)")]
    out += table(curve, pred)
    if pred is None:
        out.append("(no prediction: give --acceptance A, or --acceptance-from a trace or a bench --json report)")
    else:
        out.append("")
        out += chart(pred)
        out.append("")
        out.append(why(curve, pred))
    if not curve.quiet:
        out.append("warning: the machine was not quiet while measuring the batched curve; run "
                   "`spectui probe --batched --refresh` when it is quiet")
    return "\n".join(out)


def panel_lines(report: dict, acceptance: float | None) -> list[str]:
    """For a face: the knee in two lines from a probe report's ``batched`` object (``spectui probe --json
    --batched``) and the run's acceptance; [] when there is none."""
    b = (report or {}).get("batched")
    if not isinstance(b, dict) or acceptance is None:
        return []
    try:
        curve = BatchCurve.from_dict(b.get("curve") or {})
        pred = predict(curve, max(0.0, min(1.0, acceptance)))
    except SpectuiError:
        return []
    row = " ".join(f"B{bb}:{pred.speedup[pred.best_k[i]][i]:.2f}x" for i, bb in enumerate(pred.seqs))
    return [f"batched (acceptance {acceptance:.2f}): {row}", f"knee: {pred.best.words(pred.seqs[-1])}"]
