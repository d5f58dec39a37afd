"""SGLang's speculative decoding figures, as its source publishes them (sgl-project/sglang, read through the
search tool; no SGLang installs on a CPU-only machine, so the tests serve pages and responses in this format):

- /metrics (``--enable-metrics``; ``SchedulerMetricsCollector`` in python/sglang/srt/metrics/collector.py):
  the gauges ``sglang:spec_accept_length`` ("The average acceptance length of speculative decoding", the
  bonus token included) and ``sglang:spec_accept_rate`` ("accepted tokens / total draft tokens in batch"),
  set at each log interval from the last batches, labels ``model_name``, ``engine_type``, ``tp_rank``,
  ``pp_rank``, ``moe_ep_rank`` and, with data parallelism, ``dp_rank``. No speculative counters and nothing
  per draft position. ``sglang:generation_tokens_total`` and the ``sglang:time_to_first_token_seconds`` /
  ``sglang:inter_token_latency_seconds`` histograms come from the tokenizer's collector.
- per request, in the native ``POST /generate`` response's ``meta_info`` (tokenizer_manager.py
  ``_calculate_spec_decoding_metrics``; streamed chunks carry it too): ``spec_verify_ct`` (verify steps),
  accepted and proposed draft tokens (``spec_num_correct_drafts`` / ``spec_num_proposed_drafts``; before
  that ``spec_accepted_drafts`` / ``spec_proposed_drafts``, first ``spec_accept_token_num`` /
  ``spec_draft_token_num``), ``spec_accept_rate``, ``spec_accept_length`` and the histogram
  ``spec_correct_drafts_histogram`` (first named ``spec_accept_histogram``, still sent as an alias):
  entry n = the verify steps that accepted exactly n drafted tokens.

From the histogram H, draft position i (0 = the first drafted token) was accepted in sum(H[i+1:]) of the
sum(H) verify steps: acceptance by position for one request, the same definition as vLLM's and
llama-server's counters (accepted at position i / drafts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..contract.events import KIND_SGLANG
from .dialect import TOKEN_METRICS, Dialect, count_list, positions_from_histogram

DIALECT = Dialect(
    kind=KIND_SGLANG,
    prefix="sglang:",
    engine_labels=("dp_rank",),
    **TOKEN_METRICS,
    itl=("inter_token_latency_seconds",),
    accept_length=("spec_accept_length",),
    accept_rate=("spec_accept_rate",),
    per_request="meta_info of POST /generate: spec_verify_ct, accepted / proposed drafts, the histogram",
    words="SGLang: accept length and rate gauges only; per position from each request's histogram (-p)",
)

ACCEPTED = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")  # newest first
PROPOSED = ("spec_num_proposed_drafts", "spec_proposed_drafts", "spec_draft_token_num")
HISTOGRAM = ("spec_correct_drafts_histogram", "spec_accept_histogram")


@dataclass(frozen=True)
class RequestSpec:
    """One request's speculative figures from SGLang's ``meta_info`` (-1 / () where it gave none)."""

    verify_steps: int = -1
    drafted: int = -1
    accepted: int = -1
    histogram: tuple[int, ...] = ()  # entry n: verify steps that accepted exactly n drafts
    accepted_per_pos: tuple[int, ...] = ()  # verify steps whose draft at position i was accepted


def _count(v: Any) -> int:
    """A count from the server: a finite, non-negative whole number, else -1 (absent)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or v != int(v):
        return -1
    return int(v)


def _first(meta: dict, names: tuple[str, ...]) -> int:
    for n in names:
        if n in meta:
            return _count(meta[n])
    return -1


def histogram(meta: dict) -> tuple[int, ...]:
    """The acceptance histogram, or () when it is absent or not a list of at most MAX_POSITIONS + 1 counts."""
    for name in HISTOGRAM:
        if meta.get(name) is not None:
            return count_list(meta[name])
    return ()


def request_spec(meta: Any) -> RequestSpec:
    """One response's ``meta_info`` -> RequestSpec. A histogram that disagrees with the verify steps (its
    entries do not add up to ``spec_verify_ct``) is dropped: it cannot be that request's."""
    if not isinstance(meta, dict):
        return RequestSpec()
    steps = _count(meta.get("spec_verify_ct", -1))
    hist = histogram(meta)
    if hist and steps >= 0 and sum(hist) != steps:
        hist = ()
    if hist and steps < 0:
        steps = sum(hist)
    accepted = _first(meta, ACCEPTED)
    if accepted < 0 and hist:
        accepted = sum(n * c for n, c in enumerate(hist))
    drafted = _first(meta, PROPOSED)
    if 0 <= drafted < accepted:
        drafted = accepted = -1  # cannot be true: no acceptance rather than a rate above 100%
    return RequestSpec(steps, drafted, accepted, hist, positions_from_histogram(hist))
