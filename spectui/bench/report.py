"""The bench's report, written from its numbers only: per category the winner among every setting and the
target alone, each setting's word and numbers (``bench.winners``), the best setting and why (what a verify
step costs on this machine against a target-only step, hence the tokens per step - and the per-draft
acceptance at that k - needed to break even, against what the category got), equal outputs at temperature 0,
contention, skipped prompts, and where a stopped bench stopped.

Equal outputs: a speculative run at temperature 0 equals its baseline when its tokens are the baseline's, or
part from them at a near tie, a step whose baseline top-two margin is within the kernels' noise (a verify
batch of k + 1 tokens against one-token decodes, measured for the target on this machine:
``analysis.noise``). The report says where each run parts, the two tokens, and the margin against that
noise; a parting above the noise is a real inequality, reported as unequal.

Break-even: a speculative decode step costs ``ratio`` = (its mean pass time) / (the target-only mean pass time)
of the same category, measured in these runs, so it pays when it yields more than ``ratio`` tokens per step
(speedup ~ tokens per step / ratio). With a constant per-draft acceptance a, a k-draft step yields
(1 - a^(k+1)) / (1 - a) tokens (Leviathan et al.; ``costmodel.leviathan``): ``costmodel.break_even_acceptance``
solves it for a (None when even a = 1, k + 1 tokens, is not enough).
"""

from __future__ import annotations

from typing import Sequence

from ..analysis.cost.costmodel import break_even_acceptance
from ..analysis.lossless import UNMEASURED_MARGIN
from .aggregate import OVERALL, Summary
from .plan import TARGET_ONLY
from .winners import winner_lines


def verdict(speedup: float) -> str:
    """"wins" / "loses" / "breaks even" from a speedup (to two decimals, as printed)."""
    s = round(speedup, 2)
    return "wins" if s > 1.0 else "loses" if s < 1.0 else "breaks even"


def _cost_clause(spec: Summary, base: Summary) -> str:
    """Why, from the cost of a step and the tokens it yielded."""
    if base.pass_ms <= 0 or spec.pass_ms <= 0:
        return ""
    ratio = spec.pass_ms / base.pass_ms
    # a deployment's k is its own: the deepest position its counters report
    k = spec.setting.k or len(spec.acceptance_by_position)
    a = break_even_acceptance(ratio, k) if k > 0 else -1.0
    got = spec.tokens_per_pass
    if a == -1.0:
        need = f"so it needs {ratio:.2f} tokens per step to break even"
    elif a is None:
        need = (f"so it needs {ratio:.2f} tokens per step, more than the {k + 1} a k={k} step can yield: "
                f"it cannot break even at this k here")
    elif a == 0.0:
        need = "so any accepted draft pays"
    else:
        need = f"so it needs {ratio:.2f} tokens per step (a per-draft acceptance of {a:.0%} at k={k}) to break even"
    cmp = "more than" if got > ratio else "less than" if got < ratio else "exactly"
    parts = (f": drafting {spec.draft_ms_per_pass:.1f} ms, verify {spec.verify_ms:.1f} ms"
             if spec.draft_ms_per_pass or spec.verify_ms else "")  # a server does not say
    where = "this machine" if spec.source == "engine" else "this deployment"
    return (f"a {spec.label} step costs {ratio:.2f}x a target-only step on {where} ({spec.pass_ms:.1f} vs "
            f"{base.pass_ms:.1f} ms{parts}), "
            f"{need}; it got {got:.2f} ({cmp} that; {spec.acceptance_rate:.0%} of drafts accepted, "
            f"{spec.mean_accepted_tokens:.2f} mean accepted tokens)")


def category_lines(summaries: Sequence[Summary], has_baseline: bool = True) -> list[str]:
    """One sentence per category (and overall) and temperature: the best setting and why."""
    lines: list[str] = []
    cats: list[str] = []
    for s in summaries:
        if s.category not in cats:
            cats.append(s.category)
    temps = sorted({s.setting.temperature for s in summaries})
    for cat in cats:
        for t in temps:
            group = [s for s in summaries if s.category == cat and s.setting.temperature == t and s.runs]
            base = next((s for s in group if s.setting.is_baseline), None)
            spec = [s for s in group if not s.setting.is_baseline]
            if not spec:
                continue
            name = "Overall" if cat == OVERALL else cat
            tl = f" at temp {t:g}" if len(temps) > 1 else ""
            if base is None or not has_baseline or base.tokens_per_second <= 0:
                best = max(spec, key=lambda s: s.mean_accepted_tokens)
                lines.append(
                    f"{name}{tl}: no baseline measured, so no speedup; the most tokens per verify step came from "
                    f"{best.label} ({best.mean_accepted_tokens:.2f} mean accepted tokens, "
                    f"{best.acceptance_rate:.0%} of drafts accepted)."
                )
                continue
            best = max(spec, key=lambda s: s.speedup)
            rng = best.speedup_range
            spread = f"; runs {rng.lo:.2f}-{rng.hi:.2f}x, median {rng.median:.2f}x" if rng.n > 1 else ""
            why = _cost_clause(best, base)
            if round(best.speedup, 2) > 1.0:
                head = (f"{name}{tl}: {best.label} wins, {best.speedup:.2f}x the target alone "
                        f"({best.tokens_per_second:.1f} vs {base.tokens_per_second:.1f} t/s{spread})")
            else:
                head = (f"{name}{tl}: {TARGET_ONLY} is best ({base.tokens_per_second:.1f} t/s); the best speculative "
                        f"setting, {best.label}, {verdict(best.speedup)} at {best.speedup:.2f}x "
                        f"({best.tokens_per_second:.1f} t/s{spread})")
            lines.append(head + (f": {why}." if why else "."))
    return lines


def _noise_text(s: Summary) -> str:
    if s.noise < 0:
        return f"{s.label} not measured ({UNMEASURED_MARGIN:g} assumed)"
    return f"{s.label} {s.noise:.3g}" + (" (bit-identical)" if s.noise == 0 else "")


def equality_lines(overall: Sequence[Summary]) -> list[str]:
    """Equal outputs at temperature 0 (the "overall" summaries of the speculative settings): how many runs equal
    their baseline, token for token or up to a parting at a near tie, against what noise; where each run parts
    and at what margin; and the runs that part above the noise (unequal: speculation changed the output)."""
    judged = [s for s in overall if s.compared]
    compared = sum(s.compared for s in judged)
    equal = sum(s.equal for s in judged)
    near = sum(len(s.near_ties) for s in judged)
    line = (f"Equal outputs (temp 0): {equal} of {compared} speculative runs equal their baseline: {equal - near} "
            f"token for token, {near} up to a parting at a near tie (a step whose baseline top-two margin is within "
            f"the kernels' noise at that k, measured: the largest change a verify batch of k + 1 tokens made to a "
            f"logit's gap to the top token, against one-token decodes; in logits, "
            + ", ".join(_noise_text(s) for s in judged) + ")")
    lines = [line + "."]
    ties = [f"{s.label}: " + "; ".join(s.near_ties) for s in judged if s.near_ties]
    if ties:
        lines.append("Parted at a near tie (numerics, not speculation) - " + " | ".join(ties) + ".")
    bad = [f"{s.label}: " + "; ".join(s.unequal) for s in judged if s.unequal]
    if bad:
        n_bad = sum(len(s.unequal) for s in judged)
        lines.append(f"Unequal: {n_bad} run{'s' if n_bad != 1 else ''} parted from the baseline at a margin above "
                     f"the noise, a real inequality - " + " | ".join(bad) + ".")
    return lines


def report_lines(summaries: Sequence[Summary], *, has_baseline: bool = True, status: str = "done",
                 stopped_at: str = "", skipped: Sequence[tuple[str, str]] = (), repeats: int = 1,
                 notes: Sequence[str] = ()) -> list[str]:
    """The report under the table: who wins each category and why (``bench.winners``), then the best setting's
    costs against its break-even, equal outputs, contention, what was skipped, where a stopped bench stopped."""
    lines = [*winner_lines(summaries, has_baseline), *category_lines(summaries, has_baseline)]
    overall = [s for s in summaries if s.category == OVERALL and not s.setting.is_baseline]
    compared = sum(s.compared for s in overall)
    if compared:
        lines.extend(equality_lines(overall))
    contended = sum(s.contended for s in summaries if s.category == OVERALL)
    if contended:
        lines.append(f"Contention: {contended} runs ran while other processes took their cores (\"cont.\" in the "
                     f"! column); their tokens/s understate this machine.")
    if skipped:
        lines.append("Skipped: " + "; ".join(f"{who} ({why})" for who, why in skipped) + ".")
    if repeats == 1:
        lines.append("One run per prompt and setting (--repeat 3 matches Spec-Bench); the spread is over prompts.")
    lines.extend(notes)
    if status == "interrupted":
        lines.append(f"Interrupted (Ctrl+C) at {stopped_at}: the table holds the runs finished before it.")
    elif status.startswith("failed"):
        lines.append(f"Stopped at {stopped_at}: {status}. The table holds the runs finished before it.")
    return lines
