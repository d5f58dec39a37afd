"""From measured turns to the report's numbers: one :class:`BenchRow` per (prompt, turn, setting, repeat),
pooled per category and setting into a :class:`Summary` (and overall).

Definitions (Spec-Bench's and vLLM's; every per-run number comes from :func:`spectui.analysis.stats.compute`):

- mean accepted tokens = tokens one verify step yields on average, the bonus/correction token included:
  1 + (accepted drafts) / (passes that drafted), pooled over the category's runs (vLLM's mean acceptance
  length, Spec-Bench's "#Mean accepted tokens").
- acceptance rate = accepted / drafted, pooled; acceptance by position pooled the same way (vLLM).
- tokens/s: each run's decode tokens/s (llama.cpp's "decoded t/s": tokens after the first over the time of
  the passes after prefill; TTFT is reported apart), averaged over the category's runs.
- speedup = mean speculative tokens/s / mean baseline tokens/s (Spec-Bench's definition), baseline of the same
  temperature over the same prompts; its spread (min / median / max) is over each run's own ratio to the
  baseline run of the same prompt, turn, temperature and repeat.
- equal outputs (temperature 0 only): a speculative run's tokens equal its baseline's, or part from them at a
  near tie: a step whose baseline top-two margin is within the kernels' noise measured for this target and
  machine at the run's k (:mod:`spectui.analysis.lossless` and :mod:`spectui.analysis.measured.noise`, the rule the
  tests use); a parting above the noise is a real inequality (``Summary.unequal``).
- contended: other processes took this run's cores (``StatsSnapshot.contended_passes`` > 0).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Sequence

from ..analysis.lossless import UNMEASURED_MARGIN, GreedyCheck, check
from ..analysis.rates import mean_acceptance_length
from ..analysis.stats import StatsSnapshot, pooled_rates
from ..analysis.tree_stats import TreeStats, pooled
from .datasets import Prompt
from .plan import Setting

OVERALL = "overall"


@dataclass(frozen=True)
class BenchRow:
    """One turn of one prompt under one setting, one repeat: its statistics and what it generated."""

    prompt: Prompt
    turn: int  # 0-based
    setting: Setting
    repeat: int
    stats: StatsSnapshot | None  # None when skipped
    token_ids: tuple[int, ...] = ()
    text: str = ""
    margins: tuple[float, ...] | None = None  # the deciding top-two margin per token (baseline, T = 0)
    prompt_tokens: int = 0
    trace: str = ""
    skipped: str = ""  # why this turn was not run ("" when it ran)
    source: str = "engine"  # "engine" or the server URL it came from
    near_tie: float | None = None  # the near-tie threshold (measured noise at this k; None: not measured)
    pieces: tuple[str, ...] = ()  # the text of each emitted token (where outputs part, the report names them)

    @property
    def category(self) -> str:
        return self.prompt.category

    @property
    def contended(self) -> bool:
        return bool(self.stats is not None and self.stats.contended_passes > 0)

    @property
    def unit(self) -> tuple:
        """What a baseline and a speculative row have in common: prompt, turn, temperature, repeat."""
        return (self.prompt.category, self.prompt.question_id, self.turn, self.setting.temperature, self.repeat)


@dataclass(frozen=True)
class Range:
    """min / median / max of a list (n = 0: all zero)."""

    lo: float = 0.0
    median: float = 0.0
    hi: float = 0.0
    n: int = 0

    @staticmethod
    def of(values: Sequence[float]) -> "Range":
        v = [float(x) for x in values]
        if not v:
            return Range()
        return Range(min(v), statistics.median(v), max(v), len(v))


@dataclass(frozen=True)
class Summary:
    """One category (or "overall") under one setting."""

    category: str
    setting: Setting
    runs: int  # runs measured (prompts x turns x repeats)
    prompts: int  # distinct prompts
    mean_accepted_tokens: float  # 0 for the baseline (it never drafts)
    acceptance_rate: float
    acceptance_by_position: tuple[float, ...]
    n_drafted: int
    n_accepted: int
    passes_drafted: int
    tokens_per_second: float  # mean over runs
    baseline_tokens_per_second: float  # mean over the same units' baseline runs (0 without)
    speedup: float  # tokens_per_second / baseline_tokens_per_second (0 without a baseline)
    speedup_range: Range
    ttft_ms: float | None  # mean over the runs that had a first token (None: none had)
    tokens_per_pass: float  # emitted per decode pass, pooled
    pass_ms: float  # decode wall per pass, pooled
    draft_ms_per_pass: float
    verify_ms: float  # mean verify ms per pass, pooled
    compared: int = 0  # speculative runs checked against their baseline (T = 0, comparable)
    equal: int = 0
    contended: int = 0  # runs with contention
    skipped: int = 0  # turns not run (did not fit the context)
    unequal: tuple[str, ...] = field(default_factory=tuple)  # per run parted above the noise: where, at what margin
    source: str = "engine"  # "engine" or "server"
    near_ties: tuple[str, ...] = field(default_factory=tuple)  # per run parted at a near tie: where, at what margin
    noise: float = -1.0  # the near-tie threshold its runs were judged against (-1: none compared or not measured)
    n_passes: int = 0  # decode passes (after the prefill), pooled: passes_drafted / n_passes of them drafted
    tree: TreeStats | None = None  # --drafter tree: the tree passes' nodes and acceptance by depth, pooled

    @property
    def label(self) -> str:
        return self.setting.label


def _mean(xs: Sequence[float]) -> float:
    return statistics.fmean(xs) if xs else 0.0


def _mean_known(xs: Sequence[float | None]) -> float | None:
    """The mean of the values that exist (a run without a first token has no TTFT); None if none does."""
    known = [x for x in xs if x is not None]
    return statistics.fmean(known) if known else None


def baselines(rows: Sequence[BenchRow]) -> dict[tuple, BenchRow]:
    """The baseline row of each unit (prompt, turn, temperature, repeat)."""
    return {r.unit: r for r in rows if r.setting.is_baseline and r.stats is not None}


def greedy_check(row: BenchRow, base: BenchRow | None) -> GreedyCheck | None:
    """The lossless check of a speculative T = 0 row against its baseline; None when not comparable (T > 0,
    no baseline, no margins, or an earlier turn already differed so the prompts differ)."""
    if row.setting.is_baseline or row.setting.temperature != 0 or row.stats is None:
        return None
    if base is None or base.margins is None:
        return None
    return check(row.token_ids, base.token_ids, base.margins,
                 row.near_tie if row.near_tie is not None else UNMEASURED_MARGIN)


def _piece(row: BenchRow, i: int) -> str:
    """Token i's text, quoted with its control characters escaped (it comes from the model's vocabulary)."""
    return repr(row.pieces[i]) if 0 <= i < len(row.pieces) else "?"


def parting(row: BenchRow, base: BenchRow, c: GreedyCheck) -> str:
    """Where a run parts from its baseline, the two tokens, and the margin against the noise."""
    i = c.first_difference
    m = "unknown" if c.margin is None else f"{c.margin:.3g}"
    rel = "within" if c.equal else "above"
    return (f"q{row.prompt.question_id} turn {row.turn + 1} rep {row.repeat + 1}: parts at token {i + 1} "
            f"({_piece(base, i)} / {_piece(row, i)}), baseline margin {m} {rel} the noise {c.threshold:.3g}")


def comparable(rows: Sequence[BenchRow]) -> dict[int, GreedyCheck]:
    """id(row) -> its check, for rows whose prompt equals the baseline's (turn 1, or every earlier turn equal
    in full: a multi-turn prompt carries the model's own earlier answers)."""
    base = baselines(rows)
    out: dict[int, GreedyCheck] = {}
    texts_equal: dict[tuple, bool] = {}
    for r in sorted(rows, key=lambda r: r.turn):
        if r.setting.is_baseline or r.stats is None:
            continue
        b = base.get(r.unit)
        key = (r.prompt.category, r.prompt.question_id, r.setting, r.repeat)
        if r.turn > 0 and not texts_equal.get(key, False):
            continue
        c = greedy_check(r, b)
        if c is not None:
            out[id(r)] = c
        texts_equal[key] = b is not None and b.token_ids == r.token_ids
    return out


def summarize(rows: Sequence[BenchRow], category: str, setting: Setting,
              checks: dict[int, GreedyCheck] | None = None) -> Summary:
    """Pool one category's rows (``OVERALL``: every category) of one setting."""
    mine = [r for r in rows if r.setting == setting and (category == OVERALL or r.category == category)]
    ran = [r for r in mine if r.stats is not None]
    base = baselines(rows)
    checks = comparable(rows) if checks is None else checks
    n_drafted = sum(r.stats.n_drafted for r in ran)
    n_accepted = sum(r.stats.n_accepted for r in ran)
    passes_drafted = sum(r.stats.passes_drafted for r in ran)
    by_pos = pooled_rates(r.stats for r in ran)
    tps = _mean([r.stats.tokens_per_second for r in ran])
    base_rows = [base[r.unit] for r in ran if r.unit in base]
    b_tps = _mean([b.stats.tokens_per_second for b in base_rows]) if len(base_rows) == len(ran) else 0.0
    ratios = [r.stats.tokens_per_second / base[r.unit].stats.tokens_per_second
              for r in ran if r.unit in base and base[r.unit].stats.tokens_per_second > 0]
    n_pass = sum(r.stats.n_passes for r in ran)
    emitted_decode = sum(max(0, r.stats.n_emitted - 1) for r in ran)
    cs = [(r, checks[id(r)]) for r in ran if id(r) in checks]
    unequal = tuple(parting(r, base[r.unit], c) for r, c in cs if not c.equal)
    near_ties = tuple(parting(r, base[r.unit], c) for r, c in cs if c.at_near_tie)
    measured = [c.threshold for r, c in cs if r.near_tie is not None]
    return Summary(
        category=category,
        setting=setting,
        runs=len(ran),
        prompts=len({(r.prompt.category, r.prompt.question_id) for r in ran}),
        mean_accepted_tokens=mean_acceptance_length(n_accepted, passes_drafted),
        acceptance_rate=n_accepted / n_drafted if n_drafted else 0.0,
        acceptance_by_position=by_pos,
        n_drafted=n_drafted,
        n_accepted=n_accepted,
        passes_drafted=passes_drafted,
        tokens_per_second=tps,
        baseline_tokens_per_second=b_tps,
        speedup=tps / b_tps if b_tps > 0 and not setting.is_baseline else (1.0 if setting.is_baseline and ran else 0.0),
        speedup_range=Range.of(ratios) if not setting.is_baseline else Range(),
        ttft_ms=_mean_known([r.stats.ttft_ms for r in ran]),
        tokens_per_pass=emitted_decode / n_pass if n_pass else 0.0,
        pass_ms=sum(r.stats.decode_wall_ms for r in ran) / n_pass if n_pass else 0.0,
        draft_ms_per_pass=sum(r.stats.draft_ms_total for r in ran) / n_pass if n_pass else 0.0,
        verify_ms=sum(r.stats.verify_ms_total for r in ran) / n_pass if n_pass else 0.0,
        compared=len(cs),
        equal=sum(1 for _, c in cs if c.equal),
        contended=sum(1 for r in ran if r.contended),
        skipped=sum(1 for r in mine if r.stats is None),
        unequal=unequal,
        source="engine" if all(r.source == "engine" for r in mine) else "server",
        near_ties=near_ties,
        noise=max(measured) if measured else -1.0,
        n_passes=n_pass,
        tree=pooled(r.stats.tree for r in ran),
    )


def categories_of(rows: Sequence[BenchRow]) -> list[str]:
    out: list[str] = []
    for r in rows:
        if r.category not in out:
            out.append(r.category)
    return out


def settings_of(rows: Sequence[BenchRow]) -> list[Setting]:
    out: list[Setting] = []
    for r in rows:
        if r.setting not in out:
            out.append(r.setting)
    return sorted(out, key=lambda s: (s.temperature, not s.is_baseline))  # stable: baseline first per temp


def aggregate(rows: Sequence[BenchRow]) -> list[Summary]:
    """Every (category, setting) in first-appearance order, then "overall" per setting."""
    checks = comparable(rows)
    out = []
    settings = settings_of(rows)
    for cat in [*categories_of(rows), OVERALL]:
        for s in settings:
            out.append(summarize(rows, cat, s, checks))
    return out
