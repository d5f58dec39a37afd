"""What one draft step costs on a loaded engine with an EAGLE-3 head or MTP layers (``Engine(head=...)``), beside a
separate draft model's step when the engine holds one too, and one target decode: ``spectui probe`` shows them
side by side (``spectui.analysis.measured.head_cost``: the result, its cache and its text).

Each draft step is measured as spectui's own loop drafts: the drafter's ``propose`` of ``k`` tokens at
temperature 0 after the prompt, divided by the drafts made (the head's seed step plus k - 1 steps; the draft
model's catch-up decode plus k - 1 decodes), as benchmarks/bench_spec_heads.py measures the head's own calls.
The head also reads the target's hidden states after every target decode (``target_decoded`` of a verify batch
of k + 1 tokens): that is measured apart. One warm-up round is discarded, then the median of ``repeats``.
The engine's caches are left as a run finds them (every run starts by emptying them). No Textual imports.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from ...contract.errors import SpectuiError
from ..drafters.base import DraftLimits
from ..run.prefill import decode_prompt, single_decode_ms

DEFAULT_HEAD_K = 4


@dataclass(frozen=True)
class HeadPoints:
    """The medians in ms: one head draft step, the head reading a verify batch of k + 1 tokens, one target decode
    of one token, one separate draft model step (None without a draft model)."""

    kind: str
    k: int
    head_step_ms: float
    head_read_ms: float
    target_ms: float
    draft_step_ms: float | None
    context_tokens: int
    repeats: int
    wall_s: float


def _median_ms(fn, repeats: int) -> float:
    fn()  # warm-up, discarded
    times = []
    for _ in range(max(1, repeats)):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times)


def _per_step_ms(drafter, tokens: list[int], k: int, repeats: int) -> tuple[float, list[int]]:
    """Median ms of one draft step of ``drafter`` (a propose of k at temperature 0, divided by its drafts; a block
    drafter's whole propose: one draft pass for the block)."""
    rng = np.random.default_rng(0)
    made: list[list[int]] = []

    def step() -> None:
        made.append(drafter.propose(tokens, DraftLimits(k), 0.0, rng).ids)

    ms = _median_ms(step, repeats)
    n = 1 if getattr(drafter, "block", False) else max(1, len(made[-1]))  # a block drafter's step: its one pass
    return ms / n, made[-1]


def measure_head(engine, prompt: str, k: int = DEFAULT_HEAD_K, repeats: int = 5) -> HeadPoints:
    """Measure the engine's head (and its separate draft model, when loaded) between runs.

    Args:
        engine: a loaded ``Engine`` with a head (``Engine(head=...)``); its parts (``Engine.parts()``) are used
            as a run uses them, and its caches left as a run finds them.
        prompt: the context the draft steps follow.
        k: draft tokens per measured proposal (at least 1).
        repeats: timed rounds after one warm-up round.

    Returns:
        The medians (``HeadPoints``).

    Raises:
        SpectuiError: the engine is closed, has no head, or its context is too small for ``prompt``.
    """
    if engine.target is None:
        raise SpectuiError("the engine is closed")
    parts = engine.parts()
    hd = parts.head
    if hd is None:
        raise SpectuiError("measuring a head needs the engine loaded with one (--drafter eagle3 or mtp)")
    if k < 1:
        raise SpectuiError(f"a head's draft step is measured with k >= 1, not {k}")
    t0 = time.perf_counter()
    parts.reset_for_run()
    tgt = parts.target
    ids = tgt.tokenize(prompt)
    if not ids or len(ids) + k + 2 > parts.n_ctx:
        raise SpectuiError(f"the context (-c {parts.n_ctx}) is too small to measure a head's draft step")
    decode_prompt(tgt, hd, ids)  # the head reads the prompt's hidden states, as at a run's prefill
    n = len(ids)
    tok = int(np.argmax(tgt.logits_last()))
    tokens = ids + [tok]
    target_ms = single_decode_ms(tgt, tok, n, repeats)
    head_ms, drafts = _per_step_ms(hd, tokens, k, repeats)
    draft_ms = None
    model = parts.drafters.get("model")
    if model is not None:
        model.prefill(ids)
        draft_ms, _ = _per_step_ms(model, tokens, k, repeats)
    batch = [tok] + list(drafts)
    reads = []
    for _ in range(max(1, repeats) + 1):  # the target's verify of [tok, drafts], the head reading its states
        tgt.decode(batch, n, "all")
        t = time.perf_counter()
        hd.head.process(list(batch), n)
        reads.append((time.perf_counter() - t) * 1000.0)
        hd.head.rollback(n)
        tgt.rollback(n)
    read_ms = statistics.median(reads[1:])  # the first round warms up
    parts.reset_for_run()
    return HeadPoints(kind=str(hd.name), k=int(k), head_step_ms=head_ms, head_read_ms=read_ms, target_ms=target_ms,
                      draft_step_ms=draft_ms, context_tokens=n, repeats=int(repeats),
                      wall_s=time.perf_counter() - t0)
