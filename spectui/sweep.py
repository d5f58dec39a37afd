"""``spectui sweep``: the draft-length x temperature exercise in one command.

Runs every (k, temperature) combination plus the target-only baseline (drafter "none", same prompt,
same seed) at each temperature, ``--repeat`` times, with ONE loaded engine; then prints a table, a
terminal chart of tokens/s against acceptance rate, and a report written from the measured numbers.
``--json`` prints one object (every run and every cell), ``--csv`` one line per run. Every statistic
comes from :func:`spectui.stats.compute` over the run's events; spread is the standard deviation over
repeats. Speedup is a run's tokens/s over the baseline's of the same temperature and repeat.

Order of runs: for each repeat, for each temperature, the baseline then each k, so that slow drifts
of a shared machine hit all cells alike.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Sequence

import click

from .errors import SpectuiError
from .events import PassEvent, RunEnded, Settings
from .stats import StatsSnapshot, compute

BASELINE = "none"


# ---------------------------------------------------------------- parsing


def parse_ks(value: str) -> list[int]:
    out: list[int] = []
    for part in str(value).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            k = int(part)
        except ValueError:
            raise SpectuiError(f"--draft-max takes comma-separated integers 0..32 (e.g. 2,5,10), not {value!r}") from None
        if not 0 <= k <= 32:
            raise SpectuiError(f"--draft-max values must be between 0 and 32, not {k}")
        if k not in out:
            out.append(k)
    if not out:
        raise SpectuiError("--draft-max needs at least one draft length (e.g. 2,5,10)")
    return out


def parse_temps(value: str) -> list[float]:
    out: list[float] = []
    for part in str(value).split(","):
        part = part.strip()
        if not part:
            continue
        try:
            t = float(part)
        except ValueError:
            raise SpectuiError(f"--temp takes comma-separated numbers 0..2 (e.g. 0,0.8), not {value!r}") from None
        if not (0.0 <= t <= 2.0) or math.isnan(t):
            raise SpectuiError(f"--temp values must be between 0 and 2, not {part}")
        if t not in out:
            out.append(t)
    if not out:
        raise SpectuiError("--temp needs at least one temperature (e.g. 0,0.8)")
    return out


# ---------------------------------------------------------------- data


@dataclass(frozen=True)
class SweepRun:
    """One measured run: its settings and the statistics of its events."""

    temperature: float
    k: int
    drafter: str  # "none" for the baseline
    repeat: int
    stats: StatsSnapshot
    trace: str = ""  # path of the recorded trace, if any

    @property
    def is_baseline(self) -> bool:
        return self.drafter == BASELINE

    @property
    def pass_ms(self) -> float:
        s = self.stats
        return s.decode_wall_ms / s.n_passes if s.n_passes else 0.0


@dataclass(frozen=True)
class Spread:
    mean: float
    sd: float
    n: int
    lo: float
    hi: float

    @staticmethod
    def of(values: Sequence[float]) -> "Spread":
        v = [float(x) for x in values]
        if not v:
            return Spread(0.0, 0.0, 0, 0.0, 0.0)
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        return Spread(statistics.fmean(v), sd, len(v), min(v), max(v))

    def fmt(self, spec: str = ".1f", suffix: str = "") -> str:
        s = f"{self.mean:{spec}}{suffix}"
        if self.n > 1:
            s += f" ±{self.sd:{spec}}"
        return s


@dataclass(frozen=True)
class Cell:
    """All repeats of one (temperature, k, drafter) combination."""

    temperature: float
    k: int
    drafter: str
    acceptance_rate: Spread
    mean_acceptance_length: Spread
    tokens_per_second: Spread
    speedup: Spread
    itl_ms_p50: Spread
    ttft_ms: Spread
    tokens_per_pass: Spread
    pass_ms: Spread
    verify_ms: Spread  # mean verify ms of this k's passes
    draft_ms_per_pass: Spread
    acceptance_by_position: tuple[float, ...]  # pooled over repeats (vLLM per-position rate)
    n_drafted: int = 0  # drafts over all repeats

    def acceptance_se(self) -> float:
        """Standard error of the mean acceptance rate: the larger of the spread over repeats and the
        binomial sampling error of the drafts counted (so one run still has an honest error bar)."""
        a = self.acceptance_rate
        rep = a.sd / math.sqrt(a.n) if a.n > 1 else 0.0
        binom = math.sqrt(a.mean * (1 - a.mean) / self.n_drafted) if self.n_drafted else 0.0
        return max(rep, binom)

    @property
    def is_baseline(self) -> bool:
        return self.drafter == BASELINE

    @property
    def label(self) -> str:
        return "target only" if self.is_baseline else f"k={self.k}"


def _verify_ms_of(s: StatsSnapshot, k: int) -> float:
    for kk, ms, n in s.verify_ms_by_k:
        if kk == k and n:
            return ms
    return 0.0


def aggregate(runs: Sequence[SweepRun]) -> list[Cell]:
    """Cells in order of first appearance; speedup per repeat against the same temperature's baseline."""
    base: dict[tuple[float, int], float] = {}
    for r in runs:
        if r.is_baseline:
            base[(r.temperature, r.repeat)] = r.stats.tokens_per_second
    groups: dict[tuple[float, int, str], list[SweepRun]] = {}
    for r in runs:
        groups.setdefault((r.temperature, r.k, r.drafter), []).append(r)
    cells: list[Cell] = []
    for (t, k, drafter), rs in groups.items():
        speed = []
        for r in rs:
            b = base.get((t, r.repeat), 0.0)
            if b > 0:
                speed.append(r.stats.tokens_per_second / b)
        drafted: dict[int, list[int]] = {}
        for r in rs:
            for p in r.stats.acceptance_by_position:
                slot = drafted.setdefault(p.position, [0, 0])
                slot[0] += p.drafted
                slot[1] += p.accepted
        pos = tuple(a / d if d else 0.0 for _, (d, a) in sorted(drafted.items()))
        cells.append(
            Cell(
                temperature=t,
                k=k,
                drafter=drafter,
                acceptance_rate=Spread.of([r.stats.acceptance_rate for r in rs]),
                mean_acceptance_length=Spread.of([r.stats.mean_acceptance_length for r in rs]),
                tokens_per_second=Spread.of([r.stats.tokens_per_second for r in rs]),
                speedup=Spread.of(speed),
                itl_ms_p50=Spread.of([r.stats.itl_ms_p50 for r in rs]),
                ttft_ms=Spread.of([r.stats.ttft_ms for r in rs]),
                tokens_per_pass=Spread.of([r.stats.tokens_per_pass for r in rs]),
                pass_ms=Spread.of([r.pass_ms for r in rs]),
                verify_ms=Spread.of([_verify_ms_of(r.stats, 0 if drafter == BASELINE else k) for r in rs]),
                draft_ms_per_pass=Spread.of(
                    [r.stats.draft_ms_total / r.stats.n_passes if r.stats.n_passes else 0.0 for r in rs]
                ),
                acceptance_by_position=pos,
                n_drafted=sum(r.stats.n_drafted for r in rs),
            )
        )
    return cells


# ---------------------------------------------------------------- rendering


TABLE_COLUMNS = ("k", "temp", "acceptance", "mean acc. len", "tokens/s", "speedup", "ITL p50 ms", "TTFT ms")


def table_rows(cells: Sequence[Cell]) -> list[tuple[str, ...]]:
    rows = []
    for c in cells:
        rows.append(
            (
                c.label,
                f"{c.temperature:g}",
                "-" if c.is_baseline else c.acceptance_rate.fmt(".1%"),
                "-" if c.is_baseline else c.mean_acceptance_length.fmt(".2f"),
                c.tokens_per_second.fmt(".2f"),
                c.speedup.fmt(".2f", "x"),
                c.itl_ms_p50.fmt(".1f"),
                c.ttft_ms.fmt(".0f"),
            )
        )
    return rows


def render_table(cells: Sequence[Cell], repeats: int):
    from rich.table import Table

    title = "spectui sweep" + (f" ({repeats} repeats: mean ± standard deviation)" if repeats > 1 else "")
    table = Table(title=title, title_justify="left")
    for i, col in enumerate(TABLE_COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right", overflow="fold")
    for row in table_rows(cells):
        table.add_row(*row)
    return table


CHART_MARKERS = "123456789abcdefghijklmnopqrstuvwxyz"


def render_chart(cells: Sequence[Cell], width: int = 56, height: int = 12) -> str:
    """Plain-text scatter of tokens/s (y) against acceptance rate (x); baselines as dotted lines."""
    spec = [c for c in cells if not c.is_baseline]
    bases = [c for c in cells if c.is_baseline]
    if not spec and not bases:
        return ""
    ys = [c.tokens_per_second.mean for c in cells]
    y_hi = max(ys) * 1.08 if max(ys) > 0 else 1.0
    y_lo = 0.0
    x_lo, x_hi = 0.0, 1.0
    grid = [[" "] * width for _ in range(height)]

    def row_of(y: float) -> int:
        return min(height - 1, max(0, int(round((y_hi - y) / (y_hi - y_lo) * (height - 1)))))

    def col_of(x: float) -> int:
        return min(width - 1, max(0, int(round((x - x_lo) / (x_hi - x_lo) * (width - 1)))))

    legend = []
    for b in bases:
        r = row_of(b.tokens_per_second.mean)
        for cidx in range(width):
            if grid[r][cidx] == " ":
                grid[r][cidx] = "·"
    if bases:
        legend.append(
            "··· target only: "
            + ", ".join(f"{b.tokens_per_second.mean:.2f} t/s at temp {b.temperature:g}" for b in bases)
        )
    for i, c in enumerate(spec):
        m = CHART_MARKERS[i % len(CHART_MARKERS)]
        r, col = row_of(c.tokens_per_second.mean), col_of(c.acceptance_rate.mean)
        grid[r][col] = m if grid[r][col] in (" ", "·") else "*"
        legend.append(
            f"{m} k={c.k} temp {c.temperature:g}: {c.acceptance_rate.mean:.0%} accepted, "
            f"{c.tokens_per_second.mean:.2f} t/s"
        )
    lines = ["tokens/s against acceptance rate"]
    label_w = max(len(f"{y_hi:.1f}"), 4)
    for r in range(height):
        y = y_hi - r * (y_hi - y_lo) / (height - 1)
        lab = f"{y:.1f}" if r % 3 == 0 or r == height - 1 else ""
        lines.append(f"{lab:>{label_w}} |" + "".join(grid[r]))
    lines.append(" " * label_w + " +" + "-" * width)
    axis = [" "] * width
    for frac in (0.0, 0.25, 0.5, 0.75, 1.0):
        text = f"{frac:.0%}"
        start = min(width - len(text), max(0, col_of(frac) - len(text) // 2))
        for j, ch in enumerate(text):
            axis[start + j] = ch
    lines.append(" " * label_w + "  " + "".join(axis))
    lines.append(" " * label_w + "  " + "acceptance rate".center(width))
    if any("*" in "".join(row) for row in grid):
        legend.append("* several points overlap")
    lines.extend(legend)
    return "\n".join(lines)


# ---------------------------------------------------------------- report


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _ms(x: float) -> str:
    return f"{x:.1f}" if abs(x) < 10 else f"{x:.0f}"


def report_lines(cells: Sequence[Cell], runs: Sequence[SweepRun], prediction=None,
                 on_demand_k: Sequence[int] = ()) -> list[str]:
    """The short report under the table, written from the measured numbers only."""
    lines: list[str] = []
    spec = [c for c in cells if not c.is_baseline]
    bases = {c.temperature: c for c in cells if c.is_baseline}
    temps = sorted({c.temperature for c in cells})
    rep = max((r.repeat for r in runs), default=0) + 1
    sp = f" (± = standard deviation over {rep} repeats)" if rep > 1 else " (one run each: no spread measured; use --repeat)"

    # 1. acceptance at each draft length
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

    # 2. where tokens/s peaked, and why longer drafts stopped paying
    if cells:
        best = max(cells, key=lambda c: c.tokens_per_second.mean)
        if best.is_baseline:
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
            lines.append(msg + ".")
        else:
            lines.append(
                f"Tokens/s peaked at k={best.k}, temp {best.temperature:g}: {best.tokens_per_second.fmt('.2f')} t/s, "
                f"{best.speedup.fmt('.2f', 'x')} the target alone."
            )
        for t in temps:
            cs = sorted((c for c in spec if c.temperature == t), key=lambda c: c.k)
            base = bases.get(t)
            if not cs:
                continue
            peak = max(cs, key=lambda c: c.tokens_per_second.mean)
            longer = [c for c in cs if c.k > peak.k]
            if longer:
                c = longer[-1]
                tr = c.tokens_per_pass.mean / peak.tokens_per_pass.mean - 1 if peak.tokens_per_pass.mean else 0.0
                mr = c.pass_ms.mean / peak.pass_ms.mean - 1 if peak.pass_ms.mean else 0.0
                line = (
                    f"Why longer drafts stopped paying (temp {t:g}): from k={peak.k} to k={c.k} a pass yielded "
                    f"{peak.tokens_per_pass.mean:.2f} -> {c.tokens_per_pass.mean:.2f} tokens ({tr:+.0%}) "
                    f"but took {_ms(peak.pass_ms.mean)} -> {_ms(c.pass_ms.mean)} ms ({mr:+.0%}): verify "
                    f"{_ms(peak.verify_ms.mean)} -> {_ms(c.verify_ms.mean)} ms, drafting "
                    f"{_ms(peak.draft_ms_per_pass.mean)} -> {_ms(c.draft_ms_per_pass.mean)} ms per pass; "
                    f"acceptance fell {peak.acceptance_rate.mean:.0%} -> {c.acceptance_rate.mean:.0%} "
                    f"(the deeper drafts are mostly rejected)."
                )
                if (1 + tr) >= (1 + mr):
                    line += (
                        " (The per-pass averages do not explain the lower tokens/s: the difference is within "
                        "the run-to-run noise.)"
                    )
                lines.append(line)
            pos_k = [c for c in cs if c.k > 0]
            if base is not None and pos_k and peak.tokens_per_second.mean <= base.tokens_per_second.mean:
                k1 = pos_k[0]
                bms = base.pass_ms.mean
                ratio = k1.pass_ms.mean / bms if bms else 0.0
                if ratio >= k1.tokens_per_pass.mean:
                    lines.append(
                        f"Even k={k1.k} lost at temp {t:g}: a target-only pass takes {_ms(bms)} ms, a k={k1.k} pass "
                        f"{_ms(k1.pass_ms.mean)} ms ({ratio:.1f}x: verify {_ms(k1.verify_ms.mean)} ms, drafting "
                        f"{_ms(k1.draft_ms_per_pass.mean)} ms), so it needs {ratio:.2f} tokens per pass to break "
                        f"even and got {k1.tokens_per_pass.mean:.2f}."
                    )
                else:
                    lines.append(
                        f"At temp {t:g} no draft length beat the target alone, although the per-pass averages "
                        f"(k={k1.k}: {k1.tokens_per_pass.mean:.2f} tokens in {ratio:.1f}x a target-only pass) say "
                        f"it should have: the difference is within the run-to-run noise."
                    )

    # 3. TTFT
    if bases and spec:
        b_all = [r.stats.ttft_ms for r in runs if r.is_baseline]
        s_all = [r.stats.ttft_ms for r in runs if not r.is_baseline]
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
            f"TTFT: target only {bs.fmt('.1f')} ms (range {_ms(bs.lo)}-{_ms(bs.hi)}), with speculation "
            f"{ss.fmt('.1f')} ms (range {_ms(ss.lo)}-{_ms(ss.hi)}): {verdict}."
        )

    # 4. temperature
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
            for k, a, b in diffs:
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

    # 5. the cost model's view
    if prediction is not None and getattr(prediction, "advice", ""):
        how = f"from the temp {temps[0]:g} runs"
        if on_demand_k:
            how += "; verify times for k=" + ",".join(str(k) for k in on_demand_k) + " measured on demand after them"
        lines.append(f"Cost model ({how}): {prediction.advice}")
    return lines


def sweep_prediction(runs: Sequence[SweepRun], on_demand: dict[int, float] | None = None):
    """Cost-model prediction from the lowest temperature's deepest run, with the verify times measured in
    the runs at that temperature plus ``on_demand`` ones (batch sizes no run used, measured afterwards)."""
    from .costmodel import predict

    temps = sorted({r.temperature for r in runs})
    spec = [r for r in runs if not r.is_baseline and r.temperature == (temps[0] if temps else 0)]
    if not spec:
        return None
    deepest = max(spec, key=lambda r: (r.k, -r.repeat))
    verify: dict[int, list[float]] = {}
    for r in runs:
        if r.temperature != deepest.temperature:
            continue
        for k, ms, n in r.stats.verify_ms_by_k:
            verify.setdefault(k, []).append(ms)
    pts = {**(on_demand or {}), **{k: statistics.fmean(v) for k, v in verify.items()}}
    return predict(deepest.stats, k_max=16, verify_ms_by_k=pts, current_k=deepest.k)


def measure_missing_verify(engine, runs: Sequence[SweepRun], k_max: int = 16) -> dict[int, float]:
    """Verify times for the batch sizes no run used, measured on demand (between runs, never during)."""
    measure = getattr(engine, "measure_verify_ms", None)
    if measure is None:
        return {}
    seen = {k for r in runs for k, _, n in r.stats.verify_ms_by_k if n}
    out: dict[int, float] = {}
    for k in range(k_max + 1):
        if k in seen:
            continue
        try:
            out[k] = float(measure(k, repeats=2))
        except SpectuiError:
            break
    return out


# ---------------------------------------------------------------- JSON / CSV

CSV_FIELDS = (
    "repeat", "temperature", "k", "drafter", "acceptance_rate", "mean_acceptance_length", "tokens_per_second",
    "speedup", "itl_ms_p50", "itl_ms_p95", "ttft_ms", "n_emitted", "n_drafted", "n_accepted", "n_passes",
    "tokens_per_pass", "stop_reason", "trace",
)


def _speedups(runs: Sequence[SweepRun]) -> list[float]:
    base = {(r.temperature, r.repeat): r.stats.tokens_per_second for r in runs if r.is_baseline}
    out = []
    for r in runs:
        b = base.get((r.temperature, r.repeat), 0.0)
        out.append(r.stats.tokens_per_second / b if b > 0 else 0.0)
    return out


def run_record(r: SweepRun, speedup: float) -> dict:
    s = r.stats
    return {
        "repeat": r.repeat + 1, "temperature": r.temperature, "k": r.k, "drafter": r.drafter,
        "acceptance_rate": s.acceptance_rate, "mean_acceptance_length": s.mean_acceptance_length,
        "tokens_per_second": s.tokens_per_second, "speedup": speedup, "itl_ms_p50": s.itl_ms_p50,
        "itl_ms_p95": s.itl_ms_p95, "ttft_ms": s.ttft_ms, "n_emitted": s.n_emitted, "n_drafted": s.n_drafted,
        "n_accepted": s.n_accepted, "n_passes": s.n_passes, "tokens_per_pass": s.tokens_per_pass,
        "stop_reason": s.stop_reason, "trace": r.trace,
    }


def to_csv(runs: Sequence[SweepRun]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    w.writeheader()
    for r, sp in zip(runs, _speedups(runs)):
        w.writerow(run_record(r, sp))
    return buf.getvalue()


def to_json(runs: Sequence[SweepRun], cells: Sequence[Cell], report: Sequence[str], params: dict, prediction=None) -> dict:
    def cell_dict(c: Cell) -> dict:
        d = asdict(c)
        d["label"] = c.label
        return d

    runs_out = []
    for r, sp in zip(runs, _speedups(runs)):
        rec = run_record(r, sp)
        rec["acceptance_by_position"] = [
            {"position": p.position, "drafted": p.drafted, "accepted": p.accepted, "rate": p.rate}
            for p in r.stats.acceptance_by_position
        ]
        rec["verify_ms_by_k"] = [{"k": k, "mean_ms": ms, "count": n} for k, ms, n in r.stats.verify_ms_by_k]
        runs_out.append(rec)
    out = {"params": params, "runs": runs_out, "cells": [cell_dict(c) for c in cells], "report": list(report)}
    if prediction is not None:
        out["prediction"] = {
            "tps_by_k": list(prediction.tps_by_k),
            "speedup_by_k": list(prediction.speedup_by_k),
            "verify_ms_by_k": list(prediction.verify_ms_by_k),
            "verify_measured_by_k": list(prediction.verify_measured_by_k),
            "best_k": prediction.best_k,
            "advice": prediction.advice,
        }
    return out


# ---------------------------------------------------------------- running


@dataclass(frozen=True)
class Plan:
    temperature: float
    k: int
    drafter: str
    repeat: int


def make_plan(ks: Sequence[int], temps: Sequence[float], repeats: int, drafter: str) -> list[Plan]:
    plan = []
    for rep in range(repeats):
        for t in temps:
            plan.append(Plan(t, 0, BASELINE, rep))
            for k in ks:
                plan.append(Plan(t, k, drafter, rep))
    return plan


def run_sweep(
    engine,
    prompt: str,
    plan: Sequence[Plan],
    n_predict: int,
    seed: int,
    record_dir: Path | None = None,
    on_event: Callable[[Plan, object], None] | None = None,
) -> list[SweepRun]:
    """Run the plan on one loaded engine; each run's statistics come from its own events."""
    from .control import RunControl

    writer_cls = None
    if record_dir is not None:
        try:
            from .trace import TraceWriter as writer_cls  # noqa: N813
        except ImportError as exc:  # pragma: no cover - trace.py is part of the package
            raise SpectuiError(f"--record-dir needs spectui.trace: {exc}") from None
    runs: list[SweepRun] = []
    for i, p in enumerate(plan):
        settings = Settings(draft_max=p.k, temperature=p.temperature, drafter=p.drafter, seed=seed)
        trace_path = ""
        writer = None
        if writer_cls is not None:
            name = f"{i + 1:03d}-{'base' if p.drafter == BASELINE else f'k{p.k}'}-t{p.temperature:g}-r{p.repeat + 1}.jsonl"
            trace_path = str(record_dir / name)
            writer = writer_cls(trace_path, {"sweep": {"run": i + 1, "of": len(plan)}})
        events = []
        try:
            for ev in engine.run(prompt, RunControl(settings), n_predict):
                events.append(ev)
                if writer is not None:
                    writer.write(ev)
                if on_event is not None:
                    on_event(p, ev)
        finally:
            if writer is not None:
                writer.close()
        end = next((e for e in reversed(events) if isinstance(e, RunEnded)), None)
        if end is not None and end.error:
            what = "target only" if p.drafter == BASELINE else f"k={p.k}"
            raise SpectuiError(f"sweep run {what}, temp {p.temperature:g} failed: {end.error}")
        if end is not None and end.reason == "stopped":
            raise KeyboardInterrupt
        runs.append(SweepRun(p.temperature, p.k, p.drafter, p.repeat, compute(events), trace_path))
    return runs


@click.command("sweep", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--target", "-m", "--model", "target", type=str, default=None, help="target model (GGUF)")
@click.option("--draft", "-md", "--model-draft", "draft", type=str, default=None, help="draft model (GGUF)")
@click.option("-p", "--prompt", type=str, default=None, help="prompt text")
@click.option("--prompt-file", "-f", type=click.Path(dir_okay=False), default=None)
@click.option("-n", "--n-predict", "n_predict", type=int, default=256, show_default=True)
@click.option("--draft-max", "--draft-n-max", "-k", "draft_max", type=str, default="2,5,10", show_default=True,
              help="comma-separated draft lengths")
@click.option("--temp", "--temperature", "temp", type=str, default="0,0.8", show_default=True,
              help="comma-separated temperatures")
@click.option("--seed", "-s", type=int, default=0, show_default=True)
@click.option("--drafter", type=click.Choice(["model", "ngram"]), default=None,
              help="default: model when --draft is given, else ngram")
@click.option("-c", "--ctx-size", "ctx_size", type=int, default=4096, show_default=True)
@click.option("-t", "--threads", type=int, default=None, help="default: all cores")
@click.option("--repeat", "-r", type=int, default=1, show_default=True, help="runs per combination (spread)")
@click.option("--json", "as_json", is_flag=True, help="print one JSON object (all runs and cells)")
@click.option("--csv", "as_csv", is_flag=True, help="print CSV, one line per run")
@click.option("--record-dir", type=str, default=None, help="keep each run's trace here")
@click.option("--no-repack", is_flag=True, help="load weights without repacking (AMX workaround)")
def sweep_cmd(target, draft, prompt, prompt_file, n_predict, draft_max, temp, seed, drafter, ctx_size, threads,
              repeat, as_json, as_csv, record_dir, no_repack):
    """Run every draft length x temperature (plus the target alone) and report when speculation pays."""
    from .cli import fail

    try:
        code = sweep_main(target, draft, prompt, prompt_file, n_predict, draft_max, temp, seed, drafter,
                          ctx_size, threads, repeat, as_json, as_csv, record_dir, no_repack)
    except SpectuiError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        click.echo("spectui: sweep interrupted", err=True)
        sys.exit(130)
    sys.exit(code)


def sweep_main(target, draft, prompt, prompt_file, n_predict=256, draft_max="2,5,10", temp="0,0.8", seed=0,
               drafter=None, ctx_size=4096, threads=None, repeat=1, as_json=False, as_csv=False,
               record_dir=None, no_repack=False, out=None) -> int:
    from .run import load_engine, resolve_prompt

    out = out or sys.stdout
    ks = parse_ks(draft_max)
    temps = parse_temps(temp)
    if as_json and as_csv:
        raise SpectuiError("give either --json or --csv, not both")
    if repeat < 1:
        raise SpectuiError(f"--repeat must be at least 1, not {repeat}")
    if n_predict <= 0:
        raise SpectuiError(f"-n/--n-predict must be positive, not {n_predict}")
    if drafter is None:
        drafter = "model" if draft else "ngram"
    if drafter == "model" and not draft:
        raise SpectuiError("--drafter model needs --draft PATH (or use --drafter ngram)")
    text = resolve_prompt(prompt, prompt_file)
    rec = None
    if record_dir is not None:
        rec = Path(record_dir)
        if rec.exists() and not rec.is_dir():
            raise SpectuiError(f"--record-dir {record_dir} exists and is not a directory")
        try:
            rec.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpectuiError(f"cannot create --record-dir {record_dir}: {exc.strerror or exc}") from None
    plan = make_plan(ks, temps, repeat, drafter)
    engine = load_engine(target, draft if drafter == "model" else None, ctx_size, threads, no_repack,
                         quiet=as_json or as_csv)
    try:
        runs = _run_with_progress(engine, text, plan, n_predict, seed, rec)
        on_demand = measure_missing_verify(engine, runs)
    finally:
        close = getattr(engine, "close", None)
        if close is not None:
            close()
    cells = aggregate(runs)
    pred = None
    try:
        pred = sweep_prediction(runs, on_demand)
    except Exception:  # noqa: BLE001 - advice must never break the sweep's results
        pred = None
    report = report_lines(cells, runs, pred, sorted(on_demand))
    params = {
        "target": target, "draft": draft, "drafter": drafter, "prompt": text, "n_predict": n_predict,
        "draft_max": ks, "temperatures": temps, "seed": seed, "repeat": repeat, "threads": threads,
        "ctx_size": ctx_size, "verify_measured_on_demand": {str(k): v for k, v in sorted(on_demand.items())},
    }
    if as_json:
        out.write(json.dumps(to_json(runs, cells, report, params, pred)) + "\n")
    elif as_csv:
        out.write(to_csv(runs))
    else:
        from rich.console import Console

        width = _term_width() if getattr(out, "isatty", lambda: False)() else 160
        console = Console(file=out, width=width)
        console.print(render_table(cells, repeat))
        console.print(render_chart(cells), markup=False, highlight=False)
        console.print()
        for line in report:
            console.print(line, markup=False, highlight=False)
    out.flush()
    return 0


def _term_width() -> int:
    import shutil

    return shutil.get_terminal_size((100, 24)).columns


def _run_with_progress(engine, text, plan, n_predict, seed, rec) -> list[SweepRun]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(file=sys.stderr)
    total = len(plan) * n_predict
    with Progress(
        TextColumn("[bold]sweep[/] {task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=total)
        state = {"i": -1, "plan": None, "done": 0}

        def on_event(p: Plan, ev) -> None:
            if state["plan"] is not p:
                state["plan"] = p
                state["i"] += 1
                state["done"] = state["i"] * n_predict
                what = "target only" if p.drafter == BASELINE else f"k={p.k}"
                progress.update(
                    task, completed=state["done"],
                    description=f"run {state['i'] + 1}/{len(plan)}: {what}, temp {p.temperature:g}, repeat {p.repeat + 1}",
                )
            if isinstance(ev, PassEvent):
                progress.advance(task, len(ev.emitted))
            elif isinstance(ev, RunEnded):
                progress.update(task, completed=(state["i"] + 1) * n_predict)

        return run_sweep(engine, text, plan, n_predict, seed, rec, on_event)
