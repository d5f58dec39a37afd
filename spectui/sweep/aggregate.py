"""From measured runs to cells: every repeat of one (temperature, k, drafter) combination pooled, with its
spread (standard deviation over repeats) and its speedup over the baseline of the same temperature and
repeat. Every statistic comes from :func:`spectui.analysis.stats.compute` over a run's events.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence

from ..analysis.stats import ConfidenceBucket, StatsSnapshot, pooled_rates
from .plan import BASELINE, run_label


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
    """Mean, standard deviation, count and range of one statistic over repeats."""

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
    # acceptance by draft confidence q, pooled over repeats (judged and accepted drafts summed per bucket)
    confidence: tuple[ConfidenceBucket, ...] = ()

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
        return run_label(self.drafter, self.k)


def baseline_tps(runs: Sequence[SweepRun]) -> dict[tuple[float, int], float]:
    """The baseline's tokens/s by (temperature, repeat): what every speedup is measured against."""
    return {(r.temperature, r.repeat): r.stats.tokens_per_second for r in runs if r.is_baseline}


def speedups(runs: Sequence[SweepRun]) -> list[float]:
    """Each run's tokens/s over the baseline's of the same temperature and repeat (0 without a baseline)."""
    base = baseline_tps(runs)
    out = []
    for r in runs:
        b = base.get((r.temperature, r.repeat), 0.0)
        out.append(r.stats.tokens_per_second / b if b > 0 else 0.0)
    return out


def _verify_ms_of(s: StatsSnapshot, k: int) -> float:
    for kk, ms, n in s.verify_ms_by_k:
        if kk == k and n:
            return ms
    return 0.0


def pool_confidence(snaps: Sequence[StatsSnapshot]) -> tuple[ConfidenceBucket, ...]:
    """The runs' acceptance-by-draft-confidence buckets, judged and accepted drafts summed per bucket."""
    pooled: list[ConfidenceBucket] = []
    for s in snaps:
        if not pooled:
            pooled = list(s.confidence)
            continue
        pooled = [ConfidenceBucket(a.label, a.lo, a.hi, a.judged + b.judged, a.accepted + b.accepted)
                  for a, b in zip(pooled, s.confidence)]
    return tuple(pooled)


def aggregate(runs: Sequence[SweepRun]) -> list[Cell]:
    """Cells in order of first appearance; speedup per repeat against the same temperature's baseline."""
    base = baseline_tps(runs)
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
        pos = pooled_rates(r.stats for r in rs)
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
                ttft_ms=Spread.of([r.stats.ttft_ms for r in rs if r.stats.ttft_ms is not None]),
                tokens_per_pass=Spread.of([r.stats.tokens_per_pass for r in rs]),
                pass_ms=Spread.of([r.pass_ms for r in rs]),
                verify_ms=Spread.of([_verify_ms_of(r.stats, 0 if drafter == BASELINE else k) for r in rs]),
                draft_ms_per_pass=Spread.of(
                    [r.stats.draft_ms_total / r.stats.n_passes if r.stats.n_passes else 0.0 for r in rs]
                ),
                acceptance_by_position=pos,
                n_drafted=sum(r.stats.n_drafted for r in rs),
                confidence=pool_confidence([r.stats for r in rs]),
            )
        )
    return cells

