"""What ``spectui probe``'s figures mean for speculation (spectui/analysis/measured/probe.py measures them): the
break-even acceptance by k, the best case with every draft accepted, and what makes verification cost
(memory-bound decoding gives a flat curve; small-batch kernels; no idle compute), in one sentence.

No Textual imports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from ..cost.costmodel import break_even_acceptance


class ProbeFigures(Protocol):
    """What the verdict reads of a probe's result (``probe.ProbeResult``): the verify cost by batch size as a
    ratio to one decode, the draft's cost ratio (None: no draft model), and the decode itself."""

    decode_ms: float
    draft: object | None

    @property
    def max_batch(self) -> int: ...

    @property
    def per_token_ms(self) -> float: ...

    @property
    def cost_ratio(self) -> float | None: ...

    def ratio(self, batch: int) -> float: ...

FLAT_MARGINAL = 0.15  # an extra verify token costing at most this share of a decode: memory-bound (flat)
KERNEL_GAIN = 2.0  # a large batch computing this many tokens per decode time: idle compute exists


@dataclass(frozen=True)
class ProbeVerdict:
    """What the figures mean for speculation (computed from a ProbeResult)."""

    limit: str  # "memory" (flat curve), "kernels", "compute", "mixed"
    limit_sentence: str
    example_k: int  # the k the sentence speaks of (the easiest break-even when plausible, else 2)
    break_even_tokens: float  # tokens a pass of example_k must yield to match the target alone
    best_case_k: int  # the k with the highest speedup if every draft were accepted (0: none pays)
    best_case_speedup: float  # that speedup (< 1: even perfect drafts lose)
    acceptance_needed: float | None  # constant per-draft rate needed to break even at example_k (None: impossible)
    min_acceptance: float | None  # the lowest per-draft rate that breaks even at any k (None: none does)
    min_acceptance_k: int  # ... and its k (0: none)
    pays_in_practice: bool  # min_acceptance <= autok.PLAUSIBLE_RATE
    sentence: str



def analyse(r: ProbeFigures) -> ProbeVerdict:
    """The verdict from the figures: break-even acceptance by k, the best case, what limits verification.

    Args:
        r: the probe's result (its verify cost by batch size and the draft's cost ratio).

    Returns:
        The ProbeVerdict, with the one sentence ``spectui probe`` prints.
    """
    from ..cost.draft_policy import PLAUSIBLE_RATE  # noqa: PLC0415

    c = r.cost_ratio if r.cost_ratio is not None else 0.0  # no draft model: prompt lookup (drafts ~free)
    kmax = r.max_batch - 1
    cost = {k: r.ratio(k + 1) + k * c for k in range(1, kmax + 1)}  # a pass of k, in decodes
    speed = {k: (k + 1) / cost[k] for k in cost if cost[k] > 0}
    best_k = max(speed, key=lambda k: (round(speed[k], 9), -k)) if speed else 0
    best = speed.get(best_k, 0.0)
    need_a = {k: break_even_acceptance(cost[k], k) for k in cost}
    possible = {k: a for k, a in need_a.items() if a is not None}
    k_min = min(possible, key=lambda k: (possible[k], k)) if possible else 0
    a_min = possible.get(k_min)
    practical = a_min is not None and a_min <= PLAUSIBLE_RATE
    ex = k_min if practical else min(2, kmax)
    need = cost.get(ex, 0.0)
    a_need = need_a.get(ex)
    limit, limit_sentence = _limit(r)
    who = "a draft token costs " + (f"{c:.2f} decodes" if r.cost_ratio is not None else "nothing (prompt lookup)")
    head = (f"a verify of {ex + 1} tokens costs {r.ratio(ex + 1):.2f} decodes and {who}: a pass at k = {ex} "
            f"must yield {need:.2f} tokens to break even")
    if a_need is None:
        head += f", more than the {ex + 1} it can yield"
    else:
        head += f" of the {ex + 1} it can yield (a per-draft acceptance of {a_need:.0%})"
    if a_min is None:
        tail = "; no k breaks even, not even with every draft accepted, so speculation cannot pay here"
    elif not practical:
        tail = (f"; the easiest break-even is k = {k_min} at {a_min:.1%} per draft, more than drafts reach in "
                f"practice, so speculation {'with this draft ' if r.draft is not None else ''}cannot pay here")
    else:
        tail = (f"; speculation pays here once more than {a_min:.0%} of drafts are accepted (every draft "
                f"accepted: {best:.2f}x at k = {best_k})")
    sentence = head + tail + "; " + limit_sentence + "."
    return ProbeVerdict(limit=limit, limit_sentence=limit_sentence, example_k=ex, break_even_tokens=need,
                   best_case_k=best_k if best > 1.0 else 0, best_case_speedup=best, acceptance_needed=a_need,
                   min_acceptance=a_min, min_acceptance_k=k_min, pays_in_practice=practical,
                   sentence=sentence[0].upper() + sentence[1:])


def _limit(r: ProbeFigures) -> tuple[str, str]:
    """What limits verification, and the sentence that says so: "memory" (the flat line), "kernels",
    "compute" or "mixed"."""
    gain = r.decode_ms / r.per_token_ms if r.per_token_ms > 0 else 0.0  # tokens per decode time, large batch
    small = min(3, r.max_batch)
    marginal = (r.ratio(small) - 1.0) / (small - 1) if small > 1 else 0.0  # decodes per extra small-batch token
    if marginal <= FLAT_MARGINAL:
        limit = "memory"
        limit_sentence = (
            f"decoding is memory-bound here: each extra token in a small verify batch costs only {marginal:.2f} "
            f"of a decode (the flat line), so verification is nearly free, as the lesson assumes")
    elif gain >= KERNEL_GAIN:
        limit = "kernels"
        limit_sentence = (
            f"the cores have idle compute (at batch {r.max_batch} a token costs {r.per_token_ms:.1f} ms, "
            f"{gain:.1f} tokens in one decode's time), yet each extra token in a small verify batch costs "
            f"{marginal:.2f} of a decode: llama.cpp's small-batch kernels, more than a lack of idle compute, "
            f"make verification expensive")
    elif gain < 1.3:
        limit = "compute"
        limit_sentence = (
            f"decoding is compute-bound here: even at batch {r.max_batch} a token costs {r.per_token_ms:.1f} ms "
            f"({1 / gain if gain else 0:.2f} of a decode), so there is no idle compute for verification to use")
    else:
        limit = "mixed"
        limit_sentence = (
            f"verification is partly compute-bound: at batch {r.max_batch} a token costs {r.per_token_ms:.1f} ms "
            f"({gain:.1f} tokens per decode time) and each extra token in a small batch {marginal:.2f} of a decode")
    return limit, limit_sentence
